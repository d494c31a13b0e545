#!/usr/bin/env bash
# The images the test cluster's real node runs without a registry, made in buildah's store:
#
#   localhost/pause:3.10              the pod sandbox: the pause binary (pause.c, built by build.sh)
#   localhost/debian:bookworm-slim    the local-path provisioner's helper pods (test/image/build.sh)
#
# `npm run cluster -- up --node` loads them into the node's containerd. Idempotent.
# Usage: test/cluster/node-images.sh <pause binary>
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
pause_bin=${1:?usage: node-images.sh <pause binary>}
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"

have_image() { buildah images --quiet "$1" >/dev/null 2>&1; }

if ! have_image localhost/debian:bookworm-slim; then
  bash "$here/../image/build.sh" --base-only
fi

# The pause image is remade when the binary changes (its label records the binary's sha256).
sum=$(sha256sum "$pause_bin" | cut -c1-64)
if [[ $(buildah inspect --type image --format '{{index .ImageAnnotations "clinicalsuite.ai/pause-sha256"}}' localhost/pause:3.10 2>/dev/null || true) != "$sum" ]]; then
  c=$(buildah from scratch)
  trap 'buildah rm "$c" >/dev/null 2>&1 || true' EXIT
  buildah copy --quiet "$c" "$pause_bin" /pause >/dev/null
  buildah config --entrypoint '["/pause"]' --user 65535:65535 \
    --annotation "clinicalsuite.ai/pause-sha256=$sum" "$c"
  buildah commit --quiet "$c" localhost/pause:3.10 >/dev/null
  echo "node-images.sh: made localhost/pause:3.10" >&2
fi
