#!/usr/bin/env bash
# Installs schemathesis (the OpenAPI fuzzer of test/fuzz/schemathesis.test.ts) from PyPI, at the
# versions pinned in requirements.txt beside this script, into a virtualenv outside the clone:
#
#   ${CLINICALSUITE_HOME:-$HOME/.cache/clinicalsuite}/schemathesis/<version>-<requirements hash>/
#
# Python is a test tool here only: no service runs it. Idempotent: an install whose requirements
# are unchanged is kept, so a warm run costs nothing; a half-made one (no `.complete` marker) is
# made again. A lock keeps two runs (setup, CI, a developer) from installing at once.
#
# Usage: test/fuzz/install.sh           install if needed; the schemathesis binary is the last line
#        test/fuzz/install.sh --check   print the binary and exit 0 when installed, else exit 3
# PYTHON picks the interpreter (default python3; Debian's needs python3-venv, which
# `operator/setup.sh --test` installs).
set -euo pipefail

mode=install
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *)
    echo "usage: $0 [--check]" >&2
    exit 2
    ;;
esac

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
requirements=$here/requirements.txt
version=$(sed -n 's/^schemathesis==//p' "$requirements")
hash=$(sha256sum "$requirements" | cut -c1-12)
cs_home=${CLINICALSUITE_HOME:-$HOME/.cache/clinicalsuite}
venv=$cs_home/schemathesis/$version-$hash
binary=$venv/bin/schemathesis

if [ -f "$venv/.complete" ] && [ -x "$binary" ]; then
  echo "$binary"
  exit 0
fi
if [ "$mode" = check ]; then
  echo "schemathesis $version is not installed at $venv (run test/fuzz/install.sh)" >&2
  exit 3
fi

python=${PYTHON:-python3}
command -v "$python" >/dev/null 2>&1 || {
  echo "install.sh: $python not found (Debian: apt-get install python3 python3-venv)" >&2
  exit 1
}
mkdir -p "$cs_home/schemathesis"
exec 9>"$cs_home/schemathesis/.lock"
flock 9
if [ ! -f "$venv/.complete" ]; then
  # A virtualenv holds its own path in its scripts, so it is made where it stays; the marker,
  # written last, says it is whole.
  rm -rf "$venv"
  echo "installing schemathesis $version into $venv" >&2
  "$python" -m venv "$venv" >&2 || {
    rm -rf "$venv"
    echo "install.sh: '$python -m venv' failed (Debian: apt-get install python3-venv)" >&2
    exit 1
  }
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
    --requirement "$requirements" >&2
  "$binary" --version >&2
  touch "$venv/.complete"
fi
echo "$binary"
