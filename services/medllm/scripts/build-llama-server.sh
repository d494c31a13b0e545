#!/usr/bin/env bash
# Builds llama.cpp's own `llama-server` (Release, with its multimodal `mtmd` library: `--mmproj`
# image input) from the llama.cpp source that node-llama-cpp bundles
# (node_modules/node-llama-cpp/llama/gitRelease.bundle: a git bundle of the exact llama.cpp it was
# built against). The medical multimodal LLM service runs it as its backend; the text LLM
# benchmark (test/bench/llm/bench.js) compares against it. No network: the source comes from the
# npm package, the web UI is left out.
#
# Usage: build-llama-server.sh          build if needed; the binary's path is the last stdout line
#        build-llama-server.sh --check  print the path and exit 0 if built, else exit 3 (no build)
#        build-llama-server.sh --path   print the path the binary has (or will have) and exit 0
#
# Output: $LLAMA_SERVER_CACHE (default ${CLINICALSUITE_HOME:-~/.cache/clinicalsuite}/llama-server)
#   /<node-llama-cpp version>-<llama.cpp commit>/bin-<variant>/llama-server
# where <variant> is the CPU variant (below), or cuda-<arch>-<CPU variant> for a CUDA build.
# Skips the build when that binary exists. CPU: ~10-20 min cold on 2 cores (JOBS, default 2; only
# the server target and what it links). Run it with `nice` on a shared machine.
#
# GPU: LLAMA_SERVER_GPU=cuda builds with ggml's CUDA backend (needs nvcc; the CUDA toolkit's
# libraries at run time). One architecture keeps the build short: CMAKE_CUDA_ARCHITECTURES
# (default `native`: the GPU of the building machine; e.g. 90 for H100/H200, 89 for L4/L40, 80
# for A100); a `;`-separated list (`80;89;90`) builds for each, as an image for any GPU needs. Then start llama-server with `-ngl 99` (the service's flags are in
# services/medllm/docs/backend.md). LLAMA_SERVER_GPU=cpu (or unset) builds the CPU binary.
#
# CPU kernels: node-llama-cpp's prebuilt binary (GGML_CPU_ALL_VARIANTS, GGML_BACKEND_DL, no
# OpenMP) loads, at run time, the best of ggml's x86 CPU variants that this CPU supports. Building
# all 13 would take an hour here, so only that best variant is compiled, with the same feature flags
# (GGML_NATIVE=OFF; tools/ggml/cpu-variant.sh lists them). Not GGML_NATIVE=ON:
# -march=native with gcc 12 on this Xeon crashed in ggml's AMX kernel (SIGSEGV at ldtilecfg) while
# the prebuilt sapphirerapids variant runs the same kernel fine. OpenMP off: the prebuilt uses
# ggml's own thread pool, not libgomp. Set GGML_CPU_VARIANT=native to build with -march=native.
set -euo pipefail

mode=build
case "${1:-}" in
  "") ;;
  --check) mode=check ;;
  --path) mode=path ;;
  *) echo "usage: $0 [--check|--path]" >&2; exit 2 ;;
esac

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
pkg="$root/node_modules/node-llama-cpp"
bundle="$pkg/llama/gitRelease.bundle"
[[ -f "$bundle" ]] || { echo "no llama.cpp source bundle at $bundle (npm install first)" >&2; exit 1; }

# ggml's CPU variant (GGML_CPU_VARIANT, else the best this CPU runs) and its cmake flags.
# shellcheck source=../../../tools/ggml/cpu-variant.sh
source "$root/tools/ggml/cpu-variant.sh"
ggml_cpu_variant

gpu="${LLAMA_SERVER_GPU:-cpu}"
case "$gpu" in
  cpu)
    gpu_opts=(-DGGML_CUDA=OFF)
    build_name=build
    bin_name="bin-$variant"
    ;;
  cuda)
    arch="${CMAKE_CUDA_ARCHITECTURES:-native}"
    [[ "$arch" =~ ^[0-9A-Za-z_-]+(;[0-9A-Za-z_-]+)*$ ]] || { echo "CMAKE_CUDA_ARCHITECTURES must be architectures separated by ';' (e.g. 90 or 80;89;90), got '$arch'" >&2; exit 2; }
    gpu_opts=(-DGGML_CUDA=ON "-DCMAKE_CUDA_ARCHITECTURES=$arch")
    build_name="build-cuda-${arch//;/-}"
    bin_name="bin-cuda-${arch//;/-}-$variant"
    ;;
  *) echo "LLAMA_SERVER_GPU must be cpu or cuda, got '$gpu'" >&2; exit 2 ;;
esac

nlc_version="$(node -p "require('$pkg/package.json').version")"
commit="$(git bundle list-heads "$bundle" | awk 'NR==1 { print substr($1, 1, 10) }')"
cache="${LLAMA_SERVER_CACHE:-${CLINICALSUITE_HOME:-$HOME/.cache/clinicalsuite}/llama-server}"
dir="$cache/$nlc_version-$commit"
# One source tree per llama.cpp; one build tree per GPU backend; one binary per variant.
bin="$dir/$bin_name/llama-server"

if [[ $mode == path ]]; then
  echo "$bin"
  exit 0
fi
if [[ -x "$bin" ]]; then
  [[ $mode == check ]] || echo "llama-server already built: $bin" >&2
  echo "$bin"
  exit 0
fi
if [[ $mode == check ]]; then
  echo "llama-server is not built ($bin absent): run $0 (10-20 min cold on 2 cores)" >&2
  exit 3
fi

if [[ $gpu == cuda ]]; then
  command -v nvcc >/dev/null || { echo "LLAMA_SERVER_GPU=cuda needs nvcc (the CUDA toolkit) on PATH" >&2; exit 1; }
fi
echo "llama-server: $gpu, CPU variant $variant (${cpu_opts[*]})" >&2

mkdir -p "$dir"
if [[ ! -d "$dir/src/.git" ]]; then
  rm -rf "$dir/src"
  git -c advice.detachedHead=false clone --quiet "$bundle" "$dir/src"
fi

# gcc 12's _tile_loadconfig is an asm statement that does not say it reads its operand, so gcc
# drops the stores that fill ggml's AMX tile config (only palette_id survives) and the first tile
# instruction faults (SIGSEGV/SIGILL in ggml_backend_amx_mul_mat at warm-up). A compiler barrier
# before it keeps the stores; it changes nothing where the compiler was right already.
mmq="$dir/src/ggml/src/ggml-cpu/amx/mmq.cpp"
if [[ -f "$mmq" ]] && ! grep -q 'keep the tile config stores' "$mmq"; then
  sed -i 's|^\( *\)_tile_loadconfig(&tc);|\1__asm__ __volatile__("" : : "r"(\&tc) : "memory"); // keep the tile config stores (gcc 12)\n\1_tile_loadconfig(\&tc);|' "$mmq"
  grep -q 'keep the tile config stores' "$mmq" || { echo "could not patch $mmq" >&2; exit 1; }
fi

jobs="${JOBS:-2}"
build="$dir/$build_name"
log="$dir/$build_name"
cmake -S "$dir/src" -B "$build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF \
  "${cpu_opts[@]}" \
  "${gpu_opts[@]}" \
  -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_OPENMP=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  >"$log-cmake.log" 2>&1 || { tail -40 "$log-cmake.log" >&2; exit 1; }
# llama-server links mtmd (tools/mtmd) for --mmproj; the target builds it.
make -C "$build" -j"$jobs" llama-server >"$log-make.log" 2>&1 || { tail -40 "$log-make.log" >&2; exit 1; }

mkdir -p "$(dirname "$bin")"
cp "$build/bin/llama-server" "$bin.tmp"
mv "$bin.tmp" "$bin"
echo "built $bin" >&2
echo "$bin"
