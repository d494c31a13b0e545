# Sourced by the scripts that compile ggml (services/medllm/scripts/build-llama-server.sh,
# services/stt/scripts/build-whisper-node.sh): picks ggml's x86 CPU variant and its cmake flags.
#
#   ggml_cpu_variant [NAME]   sets `variant` (the variant's name) and `cpu_opts` (cmake flags).
#
# NAME (or $GGML_CPU_VARIANT) names one of the variants below, or `native` (-march=native);
# without one, the best variant whose features this CPU has (/proc/cpuinfo), as ggml's own
# GGML_CPU_ALL_VARIANTS build would load at run time. The list is ggml/src/CMakeLists.txt's, best
# last. A binary built for a named variant runs on every CPU that has its features; `haswell`
# (AVX2, FMA, F16C) runs on every x86-64 server since 2013. Every feature is named ON or OFF, so a
# switch of variant does not inherit a build tree's cached flags. `cpu_features` lists the
# /proc/cpuinfo flags the chosen variant needs (empty for native).

ggml_cpu_variants=(
  "haswell SSE42 AVX F16C FMA AVX2 BMI2"
  "skylakex SSE42 AVX F16C FMA AVX2 BMI2 AVX512"
  "icelake SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI"
  "zen4 SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16"
  "sapphirerapids SSE42 AVX F16C FMA AVX2 BMI2 AVX512 AVX512_VBMI AVX512_VNNI AVX512_BF16 AMX_TILE AMX_INT8"
)
declare -A ggml_cpuflag=(
  [SSE42]=sse4_2 [AVX]=avx [F16C]=f16c [FMA]=fma [AVX2]=avx2 [BMI2]=bmi2 [AVX512]=avx512f
  [AVX512_VBMI]=avx512vbmi [AVX512_VNNI]=avx512_vnni [AVX512_BF16]=avx512_bf16
  [AMX_TILE]=amx_tile [AMX_INT8]=amx_int8
)

ggml_cpu_variant() {
  local wanted="${1:-${GGML_CPU_VARIANT:-}}" have v name features f ok
  have=" $(grep -m1 '^flags' /proc/cpuinfo 2>/dev/null | cut -d: -f2) "
  variant=""
  cpu_opts=(-DGGML_NATIVE=ON)
  cpu_features=()
  for v in "${ggml_cpu_variants[@]}"; do
    read -r name features <<<"$v"
    ok=1
    for f in $features; do [[ "$have" == *" ${ggml_cpuflag[$f]} "* ]] || ok=0; done
    if [[ -z "$wanted" && $ok == 1 ]] || [[ "$wanted" == "$name" ]]; then
      variant="$name"
      cpu_opts=(-DGGML_NATIVE=OFF)
      cpu_features=()
      for f in "${!ggml_cpuflag[@]}"; do
        if [[ " $features " == *" $f "* ]]; then
          cpu_opts+=("-DGGML_$f=ON")
          cpu_features+=("${ggml_cpuflag[$f]}")
        else
          cpu_opts+=("-DGGML_$f=OFF")
        fi
      done
    fi
  done
  if [[ -n "$wanted" && "$wanted" != native && -z "$variant" ]]; then
    echo "unknown GGML_CPU_VARIANT '$wanted' (native, or one of: $(printf '%s ' "${ggml_cpu_variants[@]%% *}"))" >&2
    return 2
  fi
  variant="${variant:-native}"
}
