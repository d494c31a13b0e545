#!/usr/bin/env bash
# localhost/prometheus:e2e for the real-node tests: Prometheus (built from the Go module proxy by
# test/cluster/build.sh: Debian's is built without Kubernetes service discovery) on the Debian
# base of test/image/build.sh, run as a pod that discovers the suite's pods through the API server.
# Remade when the binary changes. Needs buildah.
# Usage: test/node/prometheus-image.sh <prometheus binary>
set -euo pipefail
export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
image=localhost/prometheus:e2e
bin=${1:?usage: prometheus-image.sh <prometheus binary>}
sum=$(sha256sum "$bin" | cut -c1-64)
if [[ $(buildah inspect --type image --format '{{index .ImageAnnotations "clinicalsuite.ai/prometheus-sha256"}}' "$image" 2>/dev/null || true) == "$sum" ]]; then
  exit 0
fi
c=$(buildah from localhost/debian:bookworm-slim)
trap 'buildah rm "$c" >/dev/null 2>&1 || true' EXIT
buildah copy --quiet "$c" "$bin" /usr/bin/prometheus >/dev/null
buildah config --entrypoint '["/usr/bin/prometheus"]' --cmd '[]' --user 65534:65534 \
  --annotation "clinicalsuite.ai/prometheus-sha256=$sum" "$c"
buildah commit --quiet "$c" "$image" >/dev/null
echo "prometheus-image.sh: made $image" >&2
