#!/usr/bin/env bash
# Builds the suite's image from operator/Dockerfile without Docker or a registry, then runs a
# service from it. For machines like CI's, which reach Debian's mirror and the npm registry but not
# Docker Hub: the base images are made here (debootstrap for Debian; this machine's own Node on top
# of it for the node image) and passed to the Dockerfile as build args. With Docker, the README's
# `docker build` is the way; this script checks the same Dockerfile.
#
#   bash test/image/build.sh            # build localhost/clinicalsuite:dev and smoke-test it
#
# The first build compiles llama-server for medllm (the Dockerfile's llama-server stage, CPU variant
# haswell): 10-20 min on 2 cores; it is cached with the layers until the lockfile changes.
#
# Needs root, buildah and debootstrap (apt-get install buildah debootstrap). Uses buildah's chroot
# isolation and vfs storage, which work inside an unprivileged container; the base images are kept
# in buildah's store, so a second run only rebuilds what changed.
set -euo pipefail
cd "$(dirname "$0")/../.."

export STORAGE_DRIVER="${STORAGE_DRIVER:-vfs}"
export BUILDAH_ISOLATION="${BUILDAH_ISOLATION:-chroot}"
IMAGE="${IMAGE:-localhost/clinicalsuite:dev}"
DEBIAN_IMAGE=localhost/debian:bookworm-slim
NODE_IMAGE="localhost/node:$(node --version | sed 's/^v//')-bookworm-slim"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"

have_image() { buildah images --quiet "$1" >/dev/null 2>&1; }

# Commits the directory $2 as image $1 (a single layer).
commit_dir() {
  local c mnt
  c=$(buildah from scratch)
  mnt=$(buildah mount "$c")
  cp -a "$2/." "$mnt/"
  buildah umount "$c" >/dev/null
  buildah config --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin --cmd bash "$c"
  buildah commit --quiet "$c" "$1" >/dev/null
  buildah rm "$c" >/dev/null
}

work=$(mktemp -d /var/tmp/clinicalsuite-image.XXXXXX)
trap 'rm -rf "$work"' EXIT

if ! have_image "$DEBIAN_IMAGE"; then
  echo "== base: debootstrap bookworm (minbase) from $MIRROR"
  debootstrap --variant=minbase bookworm "$work/rootfs" "$MIRROR" >"$work/debootstrap.log" 2>&1 \
    || { tail -20 "$work/debootstrap.log"; exit 1; }
  # Like Docker Hub's slim images: apt lists and caches are not part of the image.
  rm -rf "$work/rootfs/var/lib/apt/lists/"* "$work/rootfs/var/cache/apt/"*.bin
  commit_dir "$DEBIAN_IMAGE" "$work/rootfs"
fi

if [ "${1:-}" = --base-only ]; then
  exit 0
fi

if ! have_image "$NODE_IMAGE"; then
  echo "== base: $NODE_IMAGE (this machine's Node and npm, laid out as in the official node image)"
  c=$(buildah from "$DEBIAN_IMAGE")
  mnt=$(buildah mount "$c")
  node_bin=$(readlink -f "$(command -v node)")
  npm_dir=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  install -D -m 0755 "$node_bin" "$mnt/usr/local/bin/node"
  mkdir -p "$mnt/usr/local/lib/node_modules" "$mnt/usr/local/include"
  cp -a "$npm_dir" "$mnt/usr/local/lib/node_modules/npm"
  ln -sf ../lib/node_modules/npm/bin/npm-cli.js "$mnt/usr/local/bin/npm"
  ln -sf ../lib/node_modules/npm/bin/npx-cli.js "$mnt/usr/local/bin/npx"
  cp -a "$(dirname "$node_bin")/../include/node" "$mnt/usr/local/include/node"
  # A machine behind a TLS-inspecting proxy trusts its CA through NODE_EXTRA_CA_CERTS; the local
  # node image trusts the same bundle so npm can reach the registry from the build.
  extra_ca=""
  if [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && [ -f "$NODE_EXTRA_CA_CERTS" ]; then
    install -D -m 0644 "$NODE_EXTRA_CA_CERTS" "$mnt/usr/local/share/clinicalsuite/extra-ca.crt"
    extra_ca=/usr/local/share/clinicalsuite/extra-ca.crt
  fi
  buildah umount "$c" >/dev/null
  [ -z "$extra_ca" ] || buildah config --env NODE_EXTRA_CA_CERTS="$extra_ca" "$c"
  buildah run "$c" -- node -e 'process.exit(0)'
  buildah commit --quiet "$c" "$NODE_IMAGE" >/dev/null
  buildah rm "$c" >/dev/null
fi

echo "== build $IMAGE from operator/Dockerfile"
start=$(date +%s)
buildah bud --quiet --layers \
  --build-arg NODE_IMAGE="$NODE_IMAGE" \
  --build-arg LLAMA_BUILD_IMAGE="$NODE_IMAGE" \
  --build-arg RUNTIME_IMAGE="$DEBIAN_IMAGE" \
  -f operator/Dockerfile -t "$IMAGE" . >"$work/build.log" 2>&1 || { tail -40 "$work/build.log"; exit 1; }
echo "   built in $(($(date +%s) - start)) s"
buildah images "$IMAGE"

# Smoke test: the image's user, its engines, and a service answering over HTTP from the image.
echo "== smoke test"
c=$(buildah from "$IMAGE")
cleanup_container() { buildah rm "$c" >/dev/null 2>&1 || true; rm -rf "$work"; }
trap cleanup_container EXIT
run() { buildah run --user 10001:10001 --env HOME=/tmp "$c" -- "$@"; }
# A service from the image, in the background on port $1, and how to stop it. `buildah run` does
# not pass a signal on to what it runs, so the service runs under `setpriv --pdeathsig KILL` (it
# dies with buildah's chroot helper, its parent), and stopping kills buildah and the helper, whose
# command lines name the port.
start_service() {
  local port=$1
  shift
  run setpriv --pdeathsig KILL -- env PORT="$port" HOST=127.0.0.1 DATA_DIR=/tmp/data MODELS_DIR=/tmp/models "$@"
}
stop_service() { pkill -KILL -f -- "PORT=$1 HOST=" || true; }
run id -u | grep -x 10001 >/dev/null
run node --version
run tesseract --list-langs 2>&1 | grep -x vie >/dev/null
run espeak-ng --version
run ffmpeg -version | sed -n 1p
# medllm's backend, where LLAMA_SERVER_PATH says, and the setpriv it runs under.
run sh -c '"$LLAMA_SERVER_PATH" --version' 2>&1 | grep 'version:' >/dev/null
run setpriv --pdeathsig KILL -- true
# The speech service's whisper.cpp addon, built for the image's CPU variant, loads.
run cat node_modules/@fugood/whisper.node/build/Release/build.json | grep '"variant":"haswell"' >/dev/null
run node -e 'require("./node_modules/@fugood/whisper.node/build/Release/index.node")'
port=$((20000 + RANDOM % 20000))
start_service "$port" FACE_API_TOKEN=smoke-test-token-0123456789 node services/face/dist/main.js \
  >"$work/service.log" 2>&1 &
pid=$!
ok=0
for _ in $(seq 1 60); do
  if curl -fsS -H 'authorization: Bearer smoke-test-token-0123456789' "http://127.0.0.1:$port/" \
    >"$work/root.json" 2>/dev/null; then ok=1; break; fi
  sleep 1
done
health=$(curl -sS -o "$work/health.json" -w '%{http_code}' "http://127.0.0.1:$port/health" || true)
stop_service "$port"
wait "$pid" 2>/dev/null || true
if [ "$ok" != 1 ]; then
  echo "the face service did not answer from the image:"
  tail -20 "$work/service.log"
  exit 1
fi
echo "   face service from the image: GET / -> $(cat "$work/root.json")"
echo "   GET /health -> $health $(cat "$work/health.json") (503 until its models are fetched)"
# A service whose engine is in the image (espeak-ng), answering a real request.
port=$((20000 + RANDOM % 20000))
start_service "$port" TTS_API_TOKEN=smoke-test-token-0123456789 node services/tts/dist/main.js \
  >"$work/tts.log" 2>&1 &
pid=$!
code=000
for _ in $(seq 1 60); do
  code=$(curl -sS -o "$work/speech.wav" -w '%{http_code}' -H 'content-type: application/json' \
    -H 'authorization: Bearer smoke-test-token-0123456789' \
    -d '{"text":"Xin chào, bệnh nhân đã hết sốt.","language":"vi"}' "http://127.0.0.1:$port/tts" 2>/dev/null || true)
  [ "$code" = 200 ] && break
  sleep 1
done
stop_service "$port"
wait "$pid" 2>/dev/null || true
if [ "$code" != 200 ] || [ "$(head -c 4 "$work/speech.wav")" != RIFF ]; then
  echo "the tts service in the image did not speak (HTTP $code):"
  tail -20 "$work/tts.log"
  exit 1
fi
echo "   tts service from the image: POST /tts (vi) -> 200, WAV of $(wc -c <"$work/speech.wav") bytes"
echo "== image OK: $IMAGE"
