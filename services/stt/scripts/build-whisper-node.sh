#!/usr/bin/env bash
# Builds whisper.cpp's Node addon for this machine's CPU: @fugood/whisper.node's own N-API and
# whisper.cpp sources, compiled with SIMD kernels (services/stt/README.md, "Engines").
#
# Why: the package's prebuilt linux-x64 binary is compiled without AVX, FMA or F16C, so it runs
# Whisper many times slower than a build for the CPU's variant (the README's "Speed" measures
# both). The npm package carries whisper.cpp's sources and
# ggml's CPU backend but not ggml's core, so ggml comes whole from the llama.cpp source that
# node-llama-cpp bundles (node_modules/node-llama-cpp/llama/gitRelease.bundle). No network.
#
# Usage: build-whisper-node.sh          build if needed, install it, print the addon's path
#        build-whisper-node.sh --check  print the installed addon's path, exit 3 when absent
#
# Built once per (package version, llama.cpp commit, CPU variant) under $WHISPER_NODE_CACHE
# (default ${CLINICALSUITE_HOME:-~/.cache/clinicalsuite}/whisper-node), then installed as
# node_modules/@fugood/whisper.node/build/Release/index.node with build.json beside it (the variant
# and the /proc/cpuinfo flags it needs): the stt service loads it from there when this CPU has
# those flags, else the package's prebuilt binary. A few minutes cold on 2 cores (JOBS, default 2).
# GGML_CPU_VARIANT picks the variant (tools/ggml/cpu-variant.sh): an image built on one machine
# for others names one (haswell runs on every x86-64 server since 2013). OpenMP threads (libgomp,
# as the prebuilt binary): ggml's own thread pool spins while it waits, which made transcriptions
# several times slower on cores shared with other work.
set -euo pipefail

mode=build
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  *) echo "usage: $0 [--check]" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
pkg="$root/node_modules/@fugood/whisper.node"
installed="$pkg/build/Release"
if [[ $mode == check ]]; then
  if [[ -f "$installed/index.node" && -f "$installed/build.json" ]]; then
    echo "$installed/index.node"
    exit 0
  fi
  echo "whisper.cpp's addon is not built ($installed/index.node absent): run $0" >&2
  exit 3
fi

[[ "$(uname -m)" == x86_64 ]] || { echo "builds for x86-64 only; other machines use the package's prebuilt binary" >&2; exit 0; }
[[ -f "$pkg/package.json" ]] || { echo "no $pkg (npm install first)" >&2; exit 1; }
bundle="$root/node_modules/node-llama-cpp/llama/gitRelease.bundle"
[[ -f "$bundle" ]] || { echo "no llama.cpp source bundle at $bundle (npm install first)" >&2; exit 1; }
for tool in cmake make g++ git; do
  command -v "$tool" >/dev/null || { echo "$tool is missing (npm run setup installs it)" >&2; exit 1; }
done

# shellcheck source=../../../tools/ggml/cpu-variant.sh
source "$root/tools/ggml/cpu-variant.sh"
ggml_cpu_variant

version="$(node -p "require('$pkg/package.json').version")"
whisper_version="$(sed -n 's/^set(WHISPER_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\))/\2/p' "$pkg/whisper.cpp/CMakeLists.txt" | paste -sd.)"
commit="$(git bundle list-heads "$bundle" | awk 'NR==1 { print substr($1, 1, 10) }')"
cache="${WHISPER_NODE_CACHE:-${CLINICALSUITE_HOME:-$HOME/.cache/clinicalsuite}/whisper-node}"
dir="$cache/$version-$commit"
out="$dir/bin-$variant"
node_include="$(dirname "$(dirname "$(command -v node)")")/include/node"
[[ -f "$node_include/node_api.h" ]] || node_include="$(node -p "require('path').resolve(process.execPath, '../../include/node')")"
[[ -f "$node_include/node_api.h" ]] || { echo "Node's headers (node_api.h) are not at $node_include" >&2; exit 1; }
addon_include="$(node -p "require('path').dirname(require.resolve('node-addon-api/package.json', { paths: ['$root'] }))")"

if [[ ! -f "$out/index.node" ]]; then
  echo "whisper.cpp addon: @fugood/whisper.node $version (whisper.cpp $whisper_version), ggml of llama.cpp $commit, CPU variant $variant" >&2
  mkdir -p "$dir"
  if [[ ! -d "$dir/llama.cpp/ggml" ]]; then
    rm -rf "$dir/llama.cpp"
    git -c advice.detachedHead=false clone --quiet --no-checkout "$bundle" "$dir/llama.cpp"
    git -C "$dir/llama.cpp" -c advice.detachedHead=false checkout --quiet HEAD -- ggml
  fi
  build="$dir/build-$variant"
  cmake -S "$root/services/stt/native" -B "$build" \
    -DCMAKE_BUILD_TYPE=Release \
    "-DWHISPER_NODE_DIR=$pkg" "-DGGML_SOURCE_DIR=$dir/llama.cpp/ggml" \
    "-DNODE_INCLUDE_DIRS=$node_include;$addon_include" "-DWHISPER_VERSION=$whisper_version" \
    "${cpu_opts[@]}" \
    -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_OPENMP=ON \
    >"$build-cmake.log" 2>&1 || { tail -40 "$build-cmake.log" >&2; exit 1; }
  make -C "$build" -j"${JOBS:-2}" index >"$build-make.log" 2>&1 || { tail -40 "$build-make.log" >&2; exit 1; }
  mkdir -p "$out"
  features_json=""
  ((${#cpu_features[@]} == 0)) || features_json="$(printf '"%s",' "${cpu_features[@]}")"
  printf '{"package":"%s","whisperCpp":"%s","llamaCpp":"%s","variant":"%s","cpuFlags":[%s]}\n' \
    "$version" "$whisper_version" "$commit" "$variant" "${features_json%,}" >"$out/build.json.tmp"
  cp "$build/index.node" "$out/index.node.tmp"
  mv "$out/build.json.tmp" "$out/build.json"
  mv "$out/index.node.tmp" "$out/index.node"
fi

mkdir -p "$installed"
cp "$out/build.json" "$installed/build.json.tmp"
cp "$out/index.node" "$installed/index.node.tmp"
mv "$installed/index.node.tmp" "$installed/index.node"
mv "$installed/build.json.tmp" "$installed/build.json"
echo "$installed/index.node"
