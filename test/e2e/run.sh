#!/usr/bin/env bash
# The operator's integration tests (test/cluster/operator.test.ts) on a kind cluster, for machines
# with Docker: creates the cluster from kind-config.yaml, builds the suite's image
# (operator/Dockerfile) and loads it into kind, gives one worker fake GPUs, installs the Helm chart
# with that image, runs the tests in e2e mode against the chart's operator, and deletes the cluster.
# See test/e2e/README.md.
#
#   npm run e2e                       # everything, then delete the cluster
#   npm run e2e -- --keep             # keep the cluster (and print how to use and delete it)
#   npm run e2e -- --reuse --skip-build -- -t 'rejects bad specs'   # again, on the kept cluster
#
# Exit status: 0 tests passed, 1 tests failed, 2 bad arguments, 3 a prerequisite is missing
# (Docker, kind, kubectl, helm, Node), 4 a setup step failed (cluster, image, chart).
set -euo pipefail

EX_USAGE=2
EX_PREREQ=3
EX_SETUP=4

case "${BASH_SOURCE[0]}" in
  */*) here="${BASH_SOURCE[0]%/*}" ;;
  *) here=. ;;
esac
REPO="$(cd "$here/../.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=versions.env
source "$REPO/test/e2e/versions.env"

# Builtins only (read, printf): --help works even where PATH holds nothing.
read -r -d '' USAGE <<EOF || true
Usage: test/e2e/run.sh [options] [-- jest arguments]
       npm run e2e -- [options] [-- jest arguments]

Runs the operator's integration tests on a kind cluster (test/e2e/README.md).

Options:
  --name NAME          kind cluster name (default: clinicalsuite-e2e)
  --image REF          image to build, load and run, <registry>/<repository>:<tag>
                       (default: localhost/clinicalsuite:e2e)
  --node-image REF     kind node image (default: $KIND_NODE_IMAGE)
  --models-dir DIR     host directory mounted at /models on the workers (default:
                       /var/lib/clinicalsuite/models when it exists, else an empty one)
  --timeout-scale N    multiply the tests' waits by N (default: 3; raise on a slow machine)
  --keep               keep the cluster at the end (default: delete it)
  --reuse              use the existing kind cluster NAME instead of creating one (never deleted)
  --skip-build         do not build the image; it must already be in Docker
  -h, --help           this text

Everything after -- goes to jest (e.g. -t 'elects one leader').
Exit status: 0 passed, 1 tests failed, 2 bad arguments, 3 prerequisite missing, 4 setup failed.
EOF
usage() { printf '%s\n' "$USAGE"; }

die_usage() {
  echo "run.sh: $1" >&2
  echo "Try 'test/e2e/run.sh --help'." >&2
  exit "$EX_USAGE"
}

NAME=clinicalsuite-e2e
IMAGE=localhost/clinicalsuite:e2e
NODE_IMAGE="$KIND_NODE_IMAGE"
MODELS_DIR=""
TIMEOUT_SCALE=3
KEEP=0
REUSE=0
BUILD=1
JEST_ARGS=()

need_value() {
  if [ "$#" -lt 2 ] || [ -z "$2" ]; then die_usage "$1 needs a value"; fi
}

while [ "$#" -gt 0 ]; do
  case "$1" in
    --name) need_value "$@"; NAME="$2"; shift 2 ;;
    --image) need_value "$@"; IMAGE="$2"; shift 2 ;;
    --node-image) need_value "$@"; NODE_IMAGE="$2"; shift 2 ;;
    --models-dir) need_value "$@"; MODELS_DIR="$2"; shift 2 ;;
    --timeout-scale) need_value "$@"; TIMEOUT_SCALE="$2"; shift 2 ;;
    --keep) KEEP=1; shift ;;
    --reuse) REUSE=1; shift ;;
    --skip-build) BUILD=0; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; JEST_ARGS=("$@"); break ;;
    *) die_usage "unknown option: $1" ;;
  esac
done

# kind names its node containers <name>-control-plane, <name>-worker2 …: a DNS label, kept short.
[[ "$NAME" =~ ^[a-z0-9]([-a-z0-9]{0,30}[a-z0-9])?$ ]] \
  || die_usage "--name '$NAME' must be lowercase letters, digits and '-' (at most 32), starting and ending alphanumeric"
# The tests split the reference into the ClinicalSuite's image.registry, repository and tag.
[[ "$IMAGE" =~ ^([^/[:space:]]+)/([a-z0-9][a-z0-9._/-]*):([A-Za-z0-9_][A-Za-z0-9_.-]{0,127})$ ]] \
  || die_usage "--image '$IMAGE' must be <registry>/<repository>:<tag>, e.g. localhost/clinicalsuite:e2e"
IMAGE_REGISTRY="${BASH_REMATCH[1]}"
IMAGE_REPOSITORY="${BASH_REMATCH[2]}"
IMAGE_TAG="${BASH_REMATCH[3]}"
[[ "$TIMEOUT_SCALE" =~ ^([1-9]|1[0-9]|20)$ ]] || die_usage "--timeout-scale must be a whole number from 1 to 20"
if [ -n "$MODELS_DIR" ] && [ ! -d "$MODELS_DIR" ]; then
  die_usage "--models-dir $MODELS_DIR is not a directory"
fi

# ---------------------------------------------------------------------------------- prerequisites
missing=()
hint() {
  case "$1" in
    docker) echo "Docker Engine or Docker Desktop: https://docs.docker.com/get-docker/" ;;
    kind) echo "kind $KIND_VERSION: go install sigs.k8s.io/kind@$KIND_VERSION, or https://kind.sigs.k8s.io/docs/user/quick-start/#installation" ;;
    kubectl) echo "kubectl >= $KUBECTL_MIN_VERSION: https://kubernetes.io/docs/tasks/tools/" ;;
    helm) echo "helm >= $HELM_MIN_VERSION: https://helm.sh/docs/intro/install/" ;;
    node | npm) echo "Node.js 20 with npm, then npm install in the repository" ;;
  esac
}
for tool in docker kind kubectl helm node npm; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool: not found on PATH; install $(hint "$tool")")
done
if command -v docker >/dev/null 2>&1; then
  if ! docker_err=$(docker info --format '{{.ServerVersion}}' 2>&1 >/dev/null); then
    missing+=("docker: the CLI is here but the Docker daemon does not answer (docker info: ${docker_err//$'\n'/ }); start Docker, or point DOCKER_HOST at it")
  fi
fi
if [ "${#missing[@]}" -gt 0 ]; then
  {
    echo "run.sh: cannot run the kind end-to-end tests, missing prerequisites:"
    printf '  - %s\n' "${missing[@]}"
    echo "Without Docker, the same tests run on the local test control plane: see test/cluster/README.md."
  } >&2
  exit "$EX_PREREQ"
fi
kind_version=$(kind version 2>/dev/null | awk '{print $2}')
if [ "$kind_version" != "$KIND_VERSION" ]; then
  echo "run.sh: warning: kind is ${kind_version:-unknown}, the tested version is $KIND_VERSION" >&2
fi
if [ ! -e "$REPO/node_modules/jest/bin/jest.js" ]; then
  echo "run.sh: node_modules is not installed: run npm install in $REPO first" >&2
  exit "$EX_PREREQ"
fi

# -------------------------------------------------------------------------------------- the run
cd "$REPO"
STATE_DIR="${CLINICALSUITE_HOME:-$HOME/.cache/clinicalsuite}/e2e/$NAME"
KUBECONFIG_FILE="$STATE_DIR/kubeconfig"
DIAGNOSTICS="$STATE_DIR/diagnostics.txt"
OPERATOR_NAMESPACE=clinicalsuite-system
RELEASE=cs
GPU_NODE="$NAME-worker2"
CREATED=0 # this run created the cluster (deleted at the end unless --keep)
REUSED=0  # an existing cluster was found and used (never deleted)
mkdir -p "$STATE_DIR"

step() { printf '\n== %s\n' "$*"; }
setup_failed() {
  echo "run.sh: $1" >&2
  diagnostics
  exit "$EX_SETUP"
}
k() { kubectl --kubeconfig "$KUBECONFIG_FILE" "$@"; }

diagnostics() {
  [ -s "$KUBECONFIG_FILE" ] || return 0
  {
    echo "# $(date -u +%FT%TZ) cluster $NAME"
    k get nodes -o wide 2>&1
    k get pods -A -o wide 2>&1
    k get clinicalsuites -A 2>&1
    k get events -A --sort-by=.lastTimestamp 2>&1 | tail -100
    echo "# operator logs"
    k logs -n "$OPERATOR_NAMESPACE" -l app.kubernetes.io/component=operator --tail=200 --prefix 2>&1
  } >"$DIAGNOSTICS" 2>&1 || true
  echo "run.sh: cluster state written to $DIAGNOSTICS" >&2
}

cleanup() {
  local status=$?
  if [ "$CREATED" = 1 ] && [ "$KEEP" = 0 ]; then
    step "kind delete cluster --name $NAME"
    kind delete cluster --name "$NAME" --kubeconfig "$KUBECONFIG_FILE" || true
  elif [ "$CREATED" = 1 ] || [ "$REUSED" = 1 ]; then
    cat <<EOF

The cluster $NAME is kept. Use it with:
  export KUBECONFIG=$KUBECONFIG_FILE
Run the tests again (no rebuild):  npm run e2e -- --name $NAME --reuse --skip-build
Delete it:                         kind delete cluster --name $NAME
EOF
  fi
  exit "$status"
}
trap cleanup EXIT

if [ "$REUSE" = 1 ]; then
  step "reusing kind cluster $NAME"
  kind get clusters 2>/dev/null | grep -qx "$NAME" \
    || setup_failed "--reuse: there is no kind cluster named $NAME (kind get clusters)"
  kind get kubeconfig --name "$NAME" >"$KUBECONFIG_FILE" || setup_failed "kind get kubeconfig --name $NAME failed"
  REUSED=1
else
  if kind get clusters 2>/dev/null | grep -qx "$NAME"; then
    setup_failed "a kind cluster named $NAME exists already: add --reuse, or delete it (kind delete cluster --name $NAME)"
  fi
  if [ -z "$MODELS_DIR" ]; then
    MODELS_DIR=/var/lib/clinicalsuite/models
    [ -d "$MODELS_DIR" ] || { MODELS_DIR="$STATE_DIR/models"; mkdir -p "$MODELS_DIR"; }
  fi
  MODELS_DIR="$(cd "$MODELS_DIR" && pwd)"
  # kind-config.yaml with the name and models directory filled in, without the host port mapping.
  node test/e2e/kind-config.js kind-config.yaml "$STATE_DIR/kind-config.yaml" "$NAME" "$MODELS_DIR" \
    || setup_failed "could not write $STATE_DIR/kind-config.yaml from kind-config.yaml"
  step "kind create cluster --name $NAME (node image $NODE_IMAGE, models from $MODELS_DIR)"
  CREATED=1
  kind create cluster --name "$NAME" --config "$STATE_DIR/kind-config.yaml" --image "$NODE_IMAGE" \
    --kubeconfig "$KUBECONFIG_FILE" --wait 180s || setup_failed "kind create cluster failed"
fi

if [ "$BUILD" = 1 ]; then
  step "docker build -f operator/Dockerfile -t $IMAGE . (the first build compiles llama-server: 10-20 min)"
  docker build -f operator/Dockerfile -t "$IMAGE" . || setup_failed "docker build failed"
else
  docker image inspect "$IMAGE" >/dev/null 2>&1 \
    || setup_failed "--skip-build: Docker has no image $IMAGE (build it, or drop --skip-build)"
fi
step "kind load docker-image $IMAGE --name $NAME"
kind load docker-image "$IMAGE" --name "$NAME" || setup_failed "kind load docker-image failed"

# kind's nodes have no GPUs. The second worker advertises four, as NVIDIA's device plugin and GPU
# feature discovery would (extended resources are set on the node's status subresource; the kubelet
# keeps capacity it does not manage), and carries the GPU taint: pods asking for nvidia.com/gpu are
# scheduled there for real, and then run on its CPU.
step "fake GPUs on $GPU_NODE: nvidia.com/gpu=4, GPU labels and taint"
k label node "$GPU_NODE" --overwrite nvidia.com/gpu.present=true nvidia.com/gpu.count=4 \
  nvidia.com/gpu.product=NVIDIA-L4 >/dev/null || setup_failed "could not label node $GPU_NODE"
k taint node "$GPU_NODE" --overwrite nvidia.com/gpu=present:NoSchedule >/dev/null \
  || setup_failed "could not taint node $GPU_NODE"
k patch node "$GPU_NODE" --subresource=status --type=merge \
  -p '{"status":{"capacity":{"nvidia.com/gpu":"4"},"allocatable":{"nvidia.com/gpu":"4"}}}' >/dev/null \
  || setup_failed "could not patch the status of node $GPU_NODE"
for _ in $(seq 1 30); do
  [ "$(k get node "$GPU_NODE" -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}')" = 4 ] && break
  sleep 1
done
[ "$(k get node "$GPU_NODE" -o 'jsonpath={.status.allocatable.nvidia\.com/gpu}')" = 4 ] \
  || setup_failed "node $GPU_NODE does not keep nvidia.com/gpu: 4 in its allocatable"

step "helm upgrade --install $RELEASE helm/clinical-suite -n $OPERATOR_NAMESPACE (image $IMAGE)"
helm upgrade --install "$RELEASE" helm/clinical-suite --kubeconfig "$KUBECONFIG_FILE" \
  --namespace "$OPERATOR_NAMESPACE" --create-namespace -f test/e2e/values-kind.yaml \
  --set-string "image.registry=$IMAGE_REGISTRY,image.repository=$IMAGE_REPOSITORY,image.tag=$IMAGE_TAG" \
  --set image.pullPolicy=IfNotPresent --wait --timeout 5m || setup_failed "helm install failed"
if [ "$REUSE" = 1 ] && [ "$BUILD" = 1 ]; then
  # Same image reference, new content: the chart's pods would keep running the old one.
  step "restarting the operator on the rebuilt image"
  operator=(deployment -n "$OPERATOR_NAMESPACE" -l app.kubernetes.io/component=operator)
  if ! k rollout restart "${operator[@]}" >/dev/null || ! k rollout status "${operator[@]}" --timeout 5m; then
    setup_failed "the operator did not restart on the rebuilt image"
  fi
fi

step "npm run build"
npm run build --silent || setup_failed "npm run build failed"

step "jest -c test/e2e/jest.config.js ${JEST_ARGS[*]:-}"
status=0
CLINICALSUITE_E2E_KUBECONFIG="$KUBECONFIG_FILE" \
  CLINICALSUITE_E2E_OPERATOR="$OPERATOR_NAMESPACE/$RELEASE" \
  CLINICALSUITE_E2E_IMAGE="$IMAGE" \
  CLINICALSUITE_E2E_STORAGE_CLASS=standard \
  CLINICALSUITE_E2E_KUBECTL="$(command -v kubectl)" \
  CLINICALSUITE_E2E_HELM="$(command -v helm)" \
  CLINICALSUITE_E2E_TIMEOUT_SCALE="$TIMEOUT_SCALE" \
  node --experimental-vm-modules node_modules/jest/bin/jest.js -c test/e2e/jest.config.js \
  ${JEST_ARGS[@]+"${JEST_ARGS[@]}"} || status=$?
if [ "$status" != 0 ]; then
  diagnostics
  exit 1
fi
