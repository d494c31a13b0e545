#!/usr/bin/env bash
# Builds the test control plane from the Go module proxy: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl, kwok and helm, at the versions pinned in
# versions.env (plus kwok's own default stages, taken from the same kwok module), into
#
#   ${CLINICALSUITE_HOME:-$HOME/.cache/clinicalsuite}/cluster/bin/<component>-<version>
#
# Idempotent: a binary already in the cache is not rebuilt, so a warm run costs nothing. Builds run
# in a temporary directory outside the repository and land in the cache by an atomic rename; a
# lock keeps two concurrent runs (the cluster CLI, jest, CI) from building the same thing twice.
#
# Usage: test/cluster/build.sh [--check] [--node] [component ...]
#   no component   build the control plane's binaries that are missing
#   --node         also the real node's: kubelet, kube-proxy, CoreDNS, local-path-provisioner,
#                  kube-router (network policies) and the pod sandbox's pause (pause.c, gcc)
#   prometheus     only when named: for the real-node tests (test/node)
#   --check        build nothing; exit 0 when every named (or every) binary is cached, 1 otherwise
#
# A cold build takes roughly half an hour on 2 cores (see the build-times log in the cache);
# Kubernetes is by far the largest part. Go's module and build caches are Go's defaults unless
# GOMODCACHE / GOCACHE are set, so a rebuild after a version bump reuses most of the work.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=versions.env
source "$here/versions.env"

cs_home=${CLINICALSUITE_HOME:-$HOME/.cache/clinicalsuite}
bin_dir=$cs_home/cluster/bin
times_log=$bin_dir/build-times.log

all_components=(etcd kube-apiserver kube-controller-manager kube-scheduler kubectl kwok kwok-stages helm)
# The real node's components (`cluster up --node`): built only when named or with --node.
node_components=(kubelet kube-proxy coredns local-path-provisioner kube-router pause)

version_of() {
  case $1 in
    etcd) echo "$ETCD_VERSION" ;;
    kube-apiserver | kube-controller-manager | kube-scheduler | kubectl | kubelet | kube-proxy) echo "$KUBERNETES_VERSION" ;;
    kwok | kwok-stages) echo "$KWOK_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    coredns) echo "$COREDNS_VERSION" ;;
    local-path-provisioner) echo "$LOCAL_PATH_PROVISIONER_VERSION" ;;
    kube-router) echo "$KUBE_ROUTER_VERSION" ;;
    prometheus) echo "$PROMETHEUS_VERSION" ;;
    # The pause binary is ours (pause.c): its version is its source's hash.
    pause) sha256sum "$here/pause.c" | cut -c1-12 ;;
    *)
      echo "build.sh: unknown component '$1' (known: ${all_components[*]} ${node_components[*]} prometheus)" >&2
      exit 2
      ;;
  esac
}

target_of() {
  case $1 in
    kwok-stages) echo "$bin_dir/kwok-stages-$(version_of "$1").yaml" ;;
    *) echo "$bin_dir/$1-$(version_of "$1")" ;;
  esac
}
is_built() { [[ -s $(target_of "$1") ]]; }

check_only=false
components=()
for arg in "$@"; do
  case $arg in
    --check) check_only=true ;;
    --node) components+=("${all_components[@]}" "${node_components[@]}") ;;
    -h | --help)
      sed -n '2,18p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'
      exit 0
      ;;
    *) components+=("$arg") ;;
  esac
done
[[ ${#components[@]} -gt 0 ]] || components=("${all_components[@]}")

missing=()
for c in "${components[@]}"; do
  is_built "$c" || missing+=("$c")
done

if $check_only; then
  for c in "${missing[@]}"; do echo "missing: $(target_of "$c")"; done
  [[ ${#missing[@]} -eq 0 ]]
  exit
fi
if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

command -v go >/dev/null || {
  echo "build.sh: Go is not installed; it is needed once to build ${missing[*]}" >&2
  exit 1
}
mkdir -p "$bin_dir"

# One build at a time; whoever waited re-checks what is still missing.
exec 9>"$bin_dir/.build.lock"
if ! flock -n 9; then
  echo "build.sh: another build is running; waiting for it" >&2
  flock 9
fi

export GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS="-p=2 -buildvcs=false"
# Keep the wrapper modules from ever being taken for part of some enclosing workspace.
export GOWORK=off

work=$(mktemp -d "${TMPDIR:-/tmp}/clinicalsuite-cluster-build.XXXXXX")
trap 'rm -rf "$work"' EXIT

log() { echo "build.sh: $*" >&2; }

# install_binary COMPONENT BUILT_FILE START_SECONDS: atomic move into the cache + timing record.
install_binary() {
  local component=$1 built=$2 started=$3 target
  target=$(target_of "$component")
  cp "$built" "$target.tmp.$$"
  chmod 0755 "$target.tmp.$$"
  mv -f "$target.tmp.$$" "$target"
  local took=$((SECONDS - started))
  printf '%s\t%s\t%ss\t%s\n' "$(date -u +%FT%TZ)" "$(basename "$target")" "$took" "$(go env GOVERSION)" >>"$times_log"
  log "built $(basename "$target") in ${took}s"
}

go_build() { nice -n 10 go build -trimpath "$@"; }

# The Kubernetes wrapper module: requires k8s.io/kubernetes and replaces every staging module
# (which the release's go.mod points at ./staging/src/...) with its published v0.X.Y twin. The
# list, and the go/godebug lines, come from that release's own go.mod.
prepare_kubernetes_module() {
  local dir=$work/kubernetes gomod staging_version=v0.${KUBERNETES_VERSION#v1.}
  [[ -f $dir/go.mod ]] && return
  mkdir -p "$dir"
  gomod=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  [[ -f $gomod ]] || {
    log "could not download k8s.io/kubernetes@$KUBERNETES_VERSION's go.mod"
    exit 1
  }
  {
    echo "module clinicalsuite.local/kubernetes-build"
    echo
    grep -E '^go [0-9]' "$gomod"
    awk '/^godebug \($/ {block=1} block {print} block && /^\)/ {block=0; next} /^godebug [^(]/ {print}' "$gomod"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    echo "replace ("
    awk -v v="$staging_version" '/=> \.\/staging\/src\// {
        for (i = 1; i <= NF; i++) if ($i == "=>") { printf "\t%s => %s %s\n", $(i-1), $(i-1), v }
      }' "$gomod"
    echo ")"
  } >"$dir/go.mod"
  if ! grep -q "k8s.io/api => k8s.io/api $staging_version" "$dir/go.mod"; then
    log "unexpected go.mod layout in k8s.io/kubernetes@$KUBERNETES_VERSION:"
    cat "$dir/go.mod" >&2
    exit 1
  fi
}

build_kubernetes_component() {
  local component=$1 started=$SECONDS v=$KUBERNETES_VERSION
  prepare_kubernetes_module
  local minor=${v#v1.}
  minor=${minor%%.*}
  local ldflags="-s -w"
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldflags+=" -X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor"
    ldflags+=" -X $pkg.gitTreeState=clean -X $pkg.buildDate=1970-01-01T00:00:00Z"
  done
  log "building $component $v (k8s.io/kubernetes wrapper module)"
  (cd "$work/kubernetes" && go_build -mod=mod -ldflags "$ldflags" -o "$work/out/$component" "k8s.io/kubernetes/cmd/$component")
  install_binary "$component" "$work/out/$component" "$started"
}

build_etcd() {
  local started=$SECONDS dir=$work/etcd
  mkdir -p "$dir"
  # go.etcd.io/etcd/server/v3 is itself package main, but its go.mod replaces its sibling modules
  # with ../ paths, so `go install ...@version` refuses it; a wrapper module requiring it does not.
  printf 'module clinicalsuite.local/etcd-build\n\ngo 1.26.0\n\nrequire go.etcd.io/etcd/server/v3 %s\n' "$ETCD_VERSION" >"$dir/go.mod"
  log "building etcd $ETCD_VERSION (go.etcd.io/etcd/server/v3 wrapper module)"
  (cd "$dir" && go_build -mod=mod -ldflags "-s -w" -o "$work/out/etcd" go.etcd.io/etcd/server/v3)
  install_binary etcd "$work/out/etcd" "$started"
}

build_kwok() {
  local started=$SECONDS
  log "building kwok $KWOK_VERSION (go install)"
  (cd "$work" && GOBIN=$work/kwok-bin nice -n 10 go install -trimpath \
    -ldflags "-s -w -X sigs.k8s.io/kwok/pkg/consts.Version=${KWOK_VERSION#v}" \
    "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION")
  install_binary kwok "$work/kwok-bin/kwok" "$started"
}

# kwok alone (unlike kwokctl) starts with no stages, so nodes and pods would never change state.
# These are the stages kwokctl loads by default (node-initialize, node heartbeat with leases,
# pod ready/complete/delete) plus kwok's volume stages (a PVC of the `kwok-volume` storage class
# gets a PV and binds), copied from the pinned kwok module so they always match the binary.
build_kwok_stages() {
  local started=$SECONDS dir out=$work/out/kwok-stages.yaml f
  dir=$(cd "$work" && go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  : >"$out"
  for f in node/fast/node-initialize.yaml node/heartbeat-with-lease/node-heartbeat-with-lease.yaml \
    pod/fast/pod-ready.yaml pod/fast/pod-complete.yaml pod/fast/pod-delete.yaml \
    volume/fast/pvc-provision.yaml volume/fast/pv-bind.yaml volume/fast/pvc-delete.yaml volume/fast/pv-delete.yaml; do
    [[ -f $dir/kustomize/stage/$f ]] || {
      log "kwok $KWOK_VERSION has no kustomize/stage/$f"
      exit 1
    }
    printf -- '---\n# sigs.k8s.io/kwok@%s kustomize/stage/%s\n' "$KWOK_VERSION" "$f" >>"$out"
    cat "$dir/kustomize/stage/$f" >>"$out"
  done
  cp "$out" "$(target_of kwok-stages).tmp.$$"
  mv -f "$(target_of kwok-stages).tmp.$$" "$(target_of kwok-stages)"
  log "wrote $(basename "$(target_of kwok-stages)") in $((SECONDS - started))s"
}

# Plain `go install module/cmd@version` of a single-binary component.
build_go_install() {
  local component=$1 package=$2 started=$SECONDS
  log "building $component $(version_of "$component") (go install)"
  (cd "$work" && GOBIN=$work/$component-bin nice -n 10 go install -trimpath -ldflags "-s -w" \
    "$package@$(version_of "$component")")
  install_binary "$component" "$work/$component-bin/$(basename "$package")" "$started"
}

# kube-router's only served version pins golang.org/x modules with known advisories: a wrapper
# module takes their current versions (minimal version selection keeps kube-router's own code).
build_kube_router() {
  local started=$SECONDS dir=$work/kube-router
  mkdir -p "$dir"
  printf 'module clinicalsuite.local/kube-router-build\n\ngo 1.26.0\n\nrequire github.com/cloudnativelabs/kube-router/v2 %s\n' \
    "$KUBE_ROUTER_VERSION" >"$dir/go.mod"
  log "building kube-router $KUBE_ROUTER_VERSION (wrapper module, current golang.org/x)"
  (cd "$dir" && go get golang.org/x/net@latest golang.org/x/crypto@latest golang.org/x/sys@latest \
    golang.org/x/text@latest >/dev/null &&
    go_build -mod=mod -ldflags "-s -w" -o "$work/out/kube-router" github.com/cloudnativelabs/kube-router/v2/cmd/kube-router)
  install_binary kube-router "$work/out/kube-router" "$started"
}

# The pod sandbox's process, statically linked so the pause image needs nothing else.
build_pause() {
  local started=$SECONDS
  command -v gcc >/dev/null || {
    log "gcc is needed to build the pause binary (apt-get install gcc libc6-dev)"
    exit 1
  }
  log "building pause from pause.c (gcc -static)"
  gcc -static -Os -s -o "$work/out/pause" "$here/pause.c"
  install_binary pause "$work/out/pause" "$started"
}

build_helm() {
  local started=$SECONDS gomod k8s_minor ldflags
  gomod=$(cd "$work" && go mod download -json "helm.sh/helm/v3@$HELM_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  # The Kubernetes version helm assumes without a cluster (helm template/lint), as its Makefile sets.
  k8s_minor=$(sed -n 's/^[[:space:]]*k8s.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod" | head -n1)
  ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION -X helm.sh/helm/v3/internal/version.gitTreeState=clean"
  if [[ -n $k8s_minor ]]; then
    for pkg in helm.sh/helm/v3/pkg/lint/rules helm.sh/helm/v3/pkg/chartutil; do
      ldflags+=" -X $pkg.k8sVersionMajor=1 -X $pkg.k8sVersionMinor=$k8s_minor"
    done
  fi
  log "building helm $HELM_VERSION (go install)"
  (cd "$work" && GOBIN=$work/helm-bin nice -n 10 go install -trimpath -ldflags "$ldflags" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION")
  install_binary helm "$work/helm-bin/helm" "$started"
}

mkdir -p "$work/out"
total_started=$SECONDS
for c in "${missing[@]}"; do
  is_built "$c" && continue # built by the run we waited for
  case $c in
    etcd) build_etcd ;;
    kube-apiserver | kube-controller-manager | kube-scheduler | kubectl | kubelet | kube-proxy) build_kubernetes_component "$c" ;;
    coredns) build_go_install coredns github.com/coredns/coredns ;;
    local-path-provisioner) build_go_install local-path-provisioner github.com/rancher/local-path-provisioner ;;
    kube-router) build_kube_router ;;
    prometheus) build_go_install prometheus github.com/prometheus/prometheus/cmd/prometheus ;;
    pause) build_pause ;;
    kwok) build_kwok ;;
    kwok-stages) build_kwok_stages ;;
    helm) build_helm ;;
  esac
done
log "done in $((SECONDS - total_started))s; binaries in $bin_dir"
