#!/usr/bin/env bash
# `npm run setup`: installs what the suite needs on this machine, then its npm packages.
#
#   1. The Debian packages of operator/debian-packages.txt (the services' engines, pip for the
#      model store, the compiler npm needs), but the test-only ones (`--test` adds those: .ci/run
#      uses it). Only the missing ones: on a machine that has them all this step costs nothing.
#      As root it runs apt-get; otherwise through sudo when sudo is there; otherwise it prints the
#      one `apt-get install` line to run and goes on (the services that need them say so).
#   2. npm install.
#   3. whisper.cpp's addon for this CPU (services/stt/scripts/build-whisper-node.sh: the package's
#      prebuilt binary has no SIMD kernels and runs the speech service's Whisper many times slower);
#      a few minutes the first time, nothing after. Without it the service runs the prebuilt one.
#   4. With --test, the test tools that come from PyPI: schemathesis, the OpenAPI fuzzer
#      (test/fuzz/install.sh: pinned, in a virtualenv under $CLINICALSUITE_HOME; nothing when
#      installed). Python is a test tool here only: no service runs it.
#
# Then `npm start` runs the suite (README, "Quick start").
set -euo pipefail
cd "$(dirname "$0")/.."

with_test=false
for arg in "$@"; do
  case "$arg" in
    --test) with_test=true ;;
    -h | --help)
      sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "setup: unknown argument $arg (usage: npm run setup [-- --test])" >&2
      exit 2
      ;;
  esac
done

# Each line: a package, then who needs it (comments dropped).
wanted=()
while read -r pkg users; do
  [ -n "$pkg" ] || continue
  if [ "$with_test" = false ] && [ "$users" = test ]; then continue; fi
  wanted+=("$pkg")
done < <(sed -e 's/#.*//' operator/debian-packages.txt)

echo "== system packages (operator/debian-packages.txt): ${#wanted[@]}"
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "   not a Debian or Ubuntu system: install the equivalents of ${wanted[*]}"
else
  missing=()
  for pkg in "${wanted[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
  done
  if [ "${#missing[@]}" -eq 0 ]; then
    echo "   all present"
  else
    line="apt-get install -y --no-install-recommends ${missing[*]}"
    # Runs apt-get behind "$@" (nothing, or sudo); `env` carries DEBIAN_FRONTEND through sudo.
    install_missing() {
      echo "   ${*:+$* }$line"
      "$@" env DEBIAN_FRONTEND=noninteractive apt-get update -qq
      "$@" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        "${missing[@]}" >/dev/null
    }
    if [ "$(id -u)" -eq 0 ]; then
      install_missing
    elif command -v sudo >/dev/null 2>&1; then
      install_missing sudo
    else
      echo "   missing: ${missing[*]}"
      echo "   not root and no sudo: run as root \`apt-get update && $line\`; going on without them"
    fi
  fi
fi

echo "== npm install"
npm install --no-audit --no-fund --loglevel=error

echo "== whisper.cpp addon for this CPU (services/stt/scripts/build-whisper-node.sh)"
if addon=$(nice bash services/stt/scripts/build-whisper-node.sh); then
  echo "   $addon"
else
  echo "   not built (above: why); the stt service runs whisper.cpp's slower prebuilt binary"
fi

if [ "$with_test" = true ]; then
  echo "== test tools from PyPI: schemathesis (test/fuzz/install.sh)"
  schemathesis=$(bash test/fuzz/install.sh)
  echo "   $schemathesis"
fi
