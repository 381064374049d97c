#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the bundle made by
# scripts/profiler_bundle.sh. Everything it writes goes under OUT_DIR (default $OUT, else
# ./profile-out).
#
#   .prof-bundle/profiler_device_run.sh selftest        one tiny case per benchmark, PASS/FAIL each (~1 min)
#   .prof-bundle/profiler_device_run.sh rows [ARGS]     every kernel the H100 rows of the shipped measured
#                                                       runs need (plans/h100-sxm_rows.plan.json, made by
#                                                       `calisim profile plan --runs ... --system h100-sxm`),
#                                                       into rows.db and its text export: the data
#                                                       `calisim validate --db` prices those rows from
#   .prof-bundle/profiler_device_run.sh [SWEEP] [ARGS]  GPU tests, trace smoke test, the sweep into a
#                                                       database, the text export
#   SWEEP: all (default; gemm, attention, memory, collective), gemm, attention, memory, collective;
#   ARGS: extra `calisim profile run` options (e.g. --budget-s 1).
#
# Start a GPU session with `selftest`: a benchmark that fails there is worth fixing before the
# sweep spends the device time.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT_DIR:-${OUT:-profile-out}}
mkdir -p "$out"
mode=${1:-all}
shift || true

# CUDA libraries of the GPU machine: its toolkit, then PyTorch's wheels (cuBLASLt, cuDNN, NCCL).
libdirs="$here/lib"
for d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/nvidia/lib64 /usr/local/nvidia/lib; do
  [[ -d "$d" ]] && libdirs="$libdirs:$d"
done
for lib in libcublasLt.so.13 libcudnn.so.9 libnccl.so.2 libcudart.so.13; do
  found=$(find /opt /usr/local /usr/lib -name "$lib" 2>/dev/null | head -1)
  [[ -n "$found" ]] && libdirs="$libdirs:$(dirname "$found")"
done
export LD_LIBRARY_PATH="$libdirs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export CALISIM_CONFIG_DIR=${CALISIM_CONFIG_DIR:-$(pwd)/configs}
bin="$here/bin"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu,persistence_mode \
    --format=csv 2>&1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$bin/calisim" | grep -E "cublas|cudnn|nccl|cupti|cudart|mpi|not found"
} | tee "$out/conditions.txt"

# One line per check: PASS/FAIL/SKIP name (seconds), the command's output in $out/selftest/NAME.log.
check() {
  local name=$1
  shift
  mkdir -p "$out/selftest"
  local t0=$SECONDS
  if timeout 300 "$@" >"$out/selftest/$name.log" 2>&1; then
    if grep -q "\[  SKIPPED \]" "$out/selftest/$name.log" && ! grep -q "\[       OK \]" "$out/selftest/$name.log"; then
      echo "SKIP $name ($((SECONDS - t0)) s): $(grep -m1 -A1 'Skipped' "$out/selftest/$name.log" | tail -1)"
    else
      echo "PASS $name ($((SECONDS - t0)) s)"
    fi
  else
    echo "FAIL $name ($((SECONDS - t0)) s): see selftest/$name.log; last lines:"
    tail -5 "$out/selftest/$name.log" | sed 's/^/    /'
  fi
}

# The smallest end-to-end run through `calisim profile run`: one key of each kind.
tiny_plan() {
  cat >"$out/selftest_plan.json" <<'JSON'
{"calisim_profile_plan": 1, "description": "selftest: one tiny key per benchmark",
 "gemm": ["gemm m=1024 n=1024 k=1024 batch=1 dtype=bf16 layout=TN acc=0"],
 "attention": ["attn b=1 hq=8 hkv=8 sq=1024 skv=1024 dqk=128 dv=128 causal=1 dtype=bf16 dir=fwd",
               "attn b=1 hq=8 hkv=8 sq=1024 skv=1024 dqk=128 dv=128 causal=1 dtype=bf16 dir=bwd"],
 "memory": ["mem kind=copy bytes=67108864"]}
JSON
}

if [[ "$mode" == selftest ]]; then
  tiny_plan
  {
    check cuda_host "$bin/profiler_cuda_host_test"
    check gemm "$bin/profiler_gpu_test" --gtest_filter='GpuGemm.Bf16AndFp32MatchCpuReference:GpuGemm.Fp8TnMatchesCpuReferenceWhereSupported'
    check attention_fwd "$bin/profiler_gpu_test" --gtest_filter='GpuAttention.SdpaForwardMatchesReferenceKernel'
    check attention_bwd "$bin/profiler_gpu_test" --gtest_filter='GpuAttention.SdpaBackwardMatchesCpuReference'
    check attention_fp8 "$bin/profiler_gpu_test" --gtest_filter='GpuAttention.Fp8ForwardMatchesCpuReferenceOnHopper:GpuAttention.Fp8BackwardMatchesCpuReferenceOnHopper'
    check memory "$bin/profiler_gpu_test" --gtest_filter='GpuMemory.*'
    check cupti_vs_events "$bin/profiler_gpu_test" --gtest_filter='GpuTimers.*'
    check collective "$bin/profiler_gpu_test" --gtest_filter='GpuNccl.*'
    check trace "$bin/profiler_trace_gpu_test"
    rm -f "$out/selftest.db"
    check profile_run "$bin/calisim" profile run --plan "$out/selftest_plan.json" --db "$out/selftest.db" --budget-s 0.5
    echo "profile run summary:"; sed -n '/planned:/,$p' "$out/selftest/profile_run.log" | sed 's/^/    /'
  } 2>&1 | tee "$out/selftest.txt"
  exit 0
fi

if [[ "$mode" == rows ]]; then
  db="$out/rows.db"
  "$bin/calisim" profile run --plan "$here/plans/h100-sxm_rows.plan.json" --db "$db" --csv "$out/rows_details.csv" "$@" \
    2>&1 | tee "$out/rows_run.log"
  "$bin/calisim" db export "$db" "$out/rows.json" 2>&1 | tee -a "$out/rows_run.log"
  "$bin/calisim" db export "$db" "$out/rows.csv" --skip-profile-log 2>&1 | tee -a "$out/rows_run.log"
  "$bin/calisim" db list "$db" 2>&1 | tee -a "$out/rows_run.log"
  exit 0
fi

"$bin/profiler_cuda_host_test" 2>&1 | tee "$out/cuda_host_test.log"
"$bin/profiler_gpu_test" 2>&1 | tee "$out/gpu_test.log"
"$bin/profiler_trace_gpu_test" 2>&1 | tee "$out/trace_test.log"
# Trace smoke test: the tiny CUDA program under the injection library, summarised by class.
rm -f "$out/trace.db"
CUDA_INJECTION64_PATH="$here/lib/libcalisim_trace.so" CALISIM_TRACE_DB="$out/trace.db" "$bin/calisim_trace_target" \
  2>&1 | tee "$out/trace.log"
gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
"$bin/calisim" db show "$out/trace.db" "$gpu_name" 2>&1 | tee -a "$out/trace.log"
db="$out/calibration.db"
"$bin/calisim" profile run --sweep "$mode" --db "$db" --csv "$out/details.csv" "$@" 2>&1 | tee "$out/run.log"
# JSON carries the session log (skipped shapes and why, timers, throttling): commit that one.
"$bin/calisim" db export "$db" "$out/calibration.json" 2>&1 | tee -a "$out/run.log"
"$bin/calisim" db export "$db" "$out/calibration.csv" --skip-profile-log 2>&1 | tee -a "$out/run.log"
"$bin/calisim" db list "$db" 2>&1 | tee -a "$out/run.log"
