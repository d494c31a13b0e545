#!/usr/bin/env bash
# Builds llama.cpp's own `llama-server` (CPU only, Release) from the llama.cpp source that
# node-llama-cpp bundles (node_modules/node-llama-cpp/llama/gitRelease.bundle: a git bundle of the
# exact llama.cpp it was built against), so the benchmark compares the service with the same
# llama.cpp. No network: the source comes from the npm package, the web UI is left out.
#
# Output: ~/.cache/clinicalsuite/llama-server/<node-llama-cpp version>-<llama.cpp commit>/bin-<CPU variant>/llama-server
# (override the root with LLAMA_SERVER_CACHE). Skips the build when that binary already exists.
# Prints the binary's path as the last line. ~10-20 min on 2 cores (make -j2, only the server target).
#
# CPU kernels: node-llama-cpp's prebuilt binary (GGML_CPU_ALL_VARIANTS, GGML_BACKEND_DL, no
# OpenMP) loads, at run time, the best of ggml's x86 CPU variants that this CPU supports. Building
# all 13 would take an hour here, so only that best variant is compiled, with the same feature flags
# (GGML_NATIVE=OFF; the list below is ggml/src/CMakeLists.txt's, best last). Not GGML_NATIVE=ON:
# -march=native with gcc 12 on this Xeon crashed in ggml's AMX kernel (SIGSEGV at ldtilecfg) while
# the prebuilt sapphirerapids variant runs the same kernel fine. OpenMP off: the prebuilt uses
# ggml's own thread pool, not libgomp. Set GGML_CPU_VARIANT=native to build with -march=native.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../../.." && pwd)"
pkg="$root/node_modules/node-llama-cpp"
bundle="$pkg/llama/gitRelease.bundle"
[[ -f "$bundle" ]] || { echo "no llama.cpp source bundle at $bundle (npm install first)" >&2; exit 1; }

# ggml variant name, then its features (ggml's names, and /proc/cpuinfo's flag for each).
variants=(
  "haswell SSE42 AVX F16C FMA AVX2 BMI2"
  "skylakex SSE42 AVX F16C FMA AVX2 BMI2 AVX512"
  "icelake SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI"
  "zen4 SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16"
  "sapphirerapids SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8"
)
declare -A cpuflag=(
  [SSE42]=sse4_2 [AVX]=avx [F16C]=f16c [FMA]=fma [AVX2]=avx2 [BMI2]=bmi2 [AVX512]=avx512f
  [AVX512_VBMI]=avx512vbmi [AVX512_VNNI]=avx512_vnni [AVX512_BF16]=avx512_bf16
  [AMX_TILE]=amx_tile [AMX_INT8]=amx_int8
)
have=" $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2) "
variant="${GGML_CPU_VARIANT:-}"
cpu_opts=(-DGGML_NATIVE=ON)
for v in "${variants[@]}"; do
  read -r name features <<<"$v"
  ok=1
  for f in $features; do [[ "$have" == *" ${cpuflag[$f]} "* ]] || ok=0; done
  if [[ -z "${GGML_CPU_VARIANT:-}" && $ok == 1 ]] || [[ "${GGML_CPU_VARIANT:-}" == "$name" ]]; then
    variant="$name"
    # Every feature named (ON or OFF), so a switch of variant does not inherit cached flags.
    cpu_opts=(-DGGML_NATIVE=OFF)
    for f in "${!cpuflag[@]}"; do
      if [[ " $features " == *" $f "* ]]; then cpu_opts+=("-DGGML_$f=ON"); else cpu_opts+=("-DGGML_$f=OFF"); fi
    done
  fi
done
echo "llama-server: CPU variant ${variant:-native} (${cpu_opts[*]})" >&2

nlc_version="$(node -p "require('$pkg/package.json').version")"
commit="$(git bundle list-heads "$bundle" | awk 'NR==1 { print substr($1, 1, 10) }')"
cache="${LLAMA_SERVER_CACHE:-$HOME/.cache/clinicalsuite/llama-server}"
dir="$cache/$nlc_version-$commit"
# One source and build tree per llama.cpp; one binary per CPU variant.
bin="$dir/bin-${variant:-native}/llama-server"

if [[ -x "$bin" ]]; then
  echo "llama-server already built: $bin" >&2
  echo "$bin"
  exit 0
fi

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
cmake -S "$dir/src" -B "$dir/build" \
  -DCMAKE_BUILD_TYPE=Release \
  -DBUILD_SHARED_LIBS=OFF \
  "${cpu_opts[@]}" \
  -DGGML_CUDA=OFF -DGGML_VULKAN=OFF -DGGML_METAL=OFF -DGGML_OPENMP=OFF \
  -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON \
  -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF \
  >"$dir/cmake.log" 2>&1 || { tail -40 "$dir/cmake.log" >&2; exit 1; }
make -C "$dir/build" -j"$jobs" llama-server >"$dir/make.log" 2>&1 || { tail -40 "$dir/make.log" >&2; exit 1; }

mkdir -p "$(dirname "$bin")"
cp "$dir/build/bin/llama-server" "$bin"
echo "built $bin" >&2
echo "$bin"
