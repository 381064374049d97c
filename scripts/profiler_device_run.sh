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
#   .prof-bundle/profiler_device_run.sh sequence         `calisim profile sequence` on the flagship's layer
#                                                       (Llama-3-70B, tp 8) and Llama-3-8B's (tp 1):
#                                                       each kernel alone, then back to back for 20 s,
#                                                       alone and beside a copy kernel on 16 and 32 SMs,
#                                                       into sequence_*.json (docs/profiling.md)
#   .prof-bundle/profiler_device_run.sh torch            a real PyTorch training step (scripts/torch_step_trace.py:
#                                                       Llama-3-8B's shapes, 4 layers, seq 8192) profiled with
#                                                       record_shapes, SDPA on cuDNN and on FlashAttention-2,
#                                                       into torch_cudnn/ and torch_flash/ (trace, configs,
#                                                       step times) for `db import --kineto`
#   .prof-bundle/profiler_device_run.sh [SWEEP] [ARGS]  GPU tests, trace smoke test, the sweep into a
#                                                       database, the text export
#   .prof-bundle/profiler_device_run.sh lease [SECONDS]  a whole GPU lease in one call (default 540 s):
#                                                       selftest, the two sequences, the two PyTorch
#                                                       steps, then the gemm sweep, the rows plan,
#                                                       the attention and memory sweeps, each cut off
#                                                       (SIGINT: the kernel in flight finishes, every
#                                                       finished one is kept) so that all of it, with
#                                                       the exports, ends inside SECONDS; a rerun with
#                                                       OUT_DIR holding the returned databases resumes
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
# The trace test runs the bundle's copies, not the build paths compiled into it.
export CALISIM_TRACE_LIB="$here/lib/libcalisim_trace.so" CALISIM_TRACE_TARGET="$bin/calisim_trace_target"

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu,persistence_mode \
    --format=csv 2>&1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  # calisim loads its CUDA half, libcalisim_cuda.so, from beside it (profiler/gpu_runtime.h).
  ldd "$bin/libcalisim_cuda.so" | grep -E "cublas|cudnn|nccl|cupti|cudart|mpi|not found"
  "$bin/calisim" profile check 2>&1
} | tee "$out/conditions.txt"

# One line per check: PASS/FAIL/SKIP name (seconds), the command's output in $out/selftest/NAME.log.
check_timeout_s=300
checks_until=''
check() {
  local name=$1
  shift
  mkdir -p "$out/selftest"
  local t0=$SECONDS cap=$check_timeout_s
  if [[ -n "$checks_until" ]]; then
    ((cap > checks_until - SECONDS)) && cap=$((checks_until - SECONDS))
    if ((cap < 5)); then echo "SKIP $name: the selftest's time is used up"; return; fi
  fi
  if timeout -k 5 "$cap" "$@" >"$out/selftest/$name.log" 2>&1; then
    if grep -q "\[  SKIPPED \]" "$out/selftest/$name.log" && ! grep -q "\[       OK \]" "$out/selftest/$name.log"; then
      echo "SKIP $name ($((SECONDS - t0)) s): $(grep -m1 -A1 'Skipped' "$out/selftest/$name.log" | tail -1)"
    else
      echo "PASS $name ($((SECONDS - t0)) s)"
      grep -h "^CUPTI kernel time" "$out/selftest/$name.log" | head -1 | sed 's/^/    /'
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

selftest() {
  tiny_plan
  {
    check cuda_host "$bin/profiler_cuda_host_test"
    check gemm "$bin/profiler_gpu_test" --gtest_filter='GpuGemm.Bf16AndFp32MatchCpuReference:GpuGemm.Fp8TnMatchesCpuReferenceWhereSupported'
    check attention_fwd "$bin/profiler_gpu_test" --gtest_filter='GpuAttention.SdpaForwardMatchesReferenceKernel'
    check attention_bwd "$bin/profiler_gpu_test" --gtest_filter='GpuAttention.SdpaBackwardMatchesCpuReference'
    check attention_fp8 "$bin/profiler_gpu_test" --gtest_filter='GpuAttention.Fp8ForwardMatchesCpuReferenceOnHopper:GpuAttention.Fp8BackwardMatchesCpuReferenceOnHopper'
    check memory "$bin/profiler_gpu_test" --gtest_filter='GpuMemory.*'
    check cupti_vs_events "$bin/profiler_gpu_test" --gtest_filter='GpuTimers.*'
    check sequence "$bin/profiler_gpu_test" --gtest_filter='GpuSequence.*'
    check collective "$bin/profiler_gpu_test" --gtest_filter='GpuNccl.*'
    check trace "$bin/profiler_trace_gpu_test"
    rm -f "$out/selftest.db"
    check profile_run "$bin/calisim" profile run --plan "$out/selftest_plan.json" --db "$out/selftest.db" --budget-s 0.5
    echo "profile run summary:"; sed -n '/planned:/,$p' "$out/selftest/profile_run.log" | sed 's/^/    /'
  } 2>&1 | tee "$out/selftest.txt"
}

if [[ "$mode" == selftest ]]; then
  selftest
  exit 0
fi

# The layer sequences: NAME MODEL STRATEGY. The system is the GPU's (its peaks for the simulated
# column): h200 on an H200, h100-sxm on an H100.
sequences=("llama70b_tp8 llama3-70b llama3-70b-64gpu" "llama8b_tp1 llama3-8b llama3-8b-8gpu")
sequence_system() {
  case "$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)" in
    *H200*) echo h200 ;;
    *) echo h100-sxm ;;
  esac
}
run_sequence() {  # run_sequence NAME MODEL STRATEGY DIR [ARGS]: one sequence, its report DIR/sequence_NAME.json
  local name=$1 model=$2 strategy=$3 dir=$4
  shift 4
  "$bin/calisim" profile sequence --model "$model" --strategy "$strategy" --system "$(sequence_system)" \
    -o "$dir/sequence_$name.json" "$@"
}

# A PyTorch training step on this GPU (the image's python3 holds PyTorch): run_torch BACKEND DIR.
run_torch() {
  python3 scripts/torch_step_trace.py --model configs/models/llama3-8b.json --layers 4 --seq 8192 --mbs 1 \
    --attention "$1" --out "$2/torch_$1"
}

if [[ "$mode" == torch ]]; then
  for b in cudnn flash; do run_torch "$b" "$out" 2>&1 | tee "$out/torch_$b.log"; done
  exit 0
fi

if [[ "$mode" == sequence ]]; then
  for s in "${sequences[@]}"; do
    # shellcheck disable=SC2086  # the entry is three words on purpose
    run_sequence $s "$out" "$@" 2>&1 | tee "$out/sequence_${s%% *}.log"
  done
  exit 0
fi

if [[ "$mode" == lease ]]; then
  # Everything in one call, inside a deadline: the device time of a lease is short and a fresh
  # machine costs minutes to start, so the stages run in order of value and each is cut off
  # (SIGINT, then a kill 20 s later) where its share ends. Databases go to $out (resumable), the
  # logs into one archive (the device tool returns at most 8 files).
  deadline=$((SECONDS + ${1:-540}))
  reserve_s=25  # exports and the archive
  check_timeout_s=60
  checks_until=$((SECONDS + 180))  # the whole selftest, however many checks hang
  stage() {  # stage NAME CAP_S DB ARGS...: calisim profile run for at most CAP_S (and the deadline)
    local name=$1 cap=$2 db=$3
    shift 3
    local left=$((deadline - reserve_s - SECONDS))
    ((cap > left)) && cap=$left
    if ((cap < 15)); then
      echo "stage $name: not run, ${left} s left before the deadline" | tee -a "$out/lease.txt"
      return
    fi
    local t0=$SECONDS
    # --foreground: the SIGINT goes to calisim alone. Without it timeout also signals its process
    # group, calisim can see two SIGINTs, and the second (Ctrl-C twice) kills it before its
    # summary: the first lease lost its WAL that way (the rows were kept, the output was not).
    timeout --foreground -s INT -k 20 "$cap" "$bin/calisim" profile run --db "$out/$db" --csv "$out/logs/$name.csv" "$@" \
      >"$out/logs/$name.log" 2>&1
    local summary
    summary=$(grep -m1 ' planned: ' "$out/logs/$name.log" || tail -2 "$out/logs/$name.log" | tr '\n' ' ')
    echo "stage $name ($((SECONDS - t0)) s of $cap): $summary" | tee -a "$out/lease.txt"
    grep -E '^(skipped|throttled)' "$out/logs/$name.log" | head -20 | sed 's/^/    /' | tee -a "$out/lease.txt"
  }
  mkdir -p "$out/logs"
  if [[ -n "${LEASE_SKIP_SELFTEST:-}" ]]; then
    echo "PASS profile_run (selftest skipped: LEASE_SKIP_SELFTEST)" >"$out/logs/selftest.txt"
  else
    ( out="$out/logs"; selftest ) | tee -a "$out/lease.txt"
  fi
  if ! grep -q "^PASS profile_run" "$out/logs/selftest.txt"; then
    echo "lease: calisim profile run failed its selftest; stopping here (see logs)" | tee -a "$out/lease.txt"
  else
    for s in "${sequences[@]}"; do  # about 80 s each: ~20 kernels alone, then three 15 s runs
      left=$((deadline - reserve_s - SECONDS))
      if ((left < 150)); then echo "sequence ${s%% *}: not run, ${left} s left" | tee -a "$out/lease.txt"; continue; fi
      t0=$SECONDS
      # The report goes into the logs archive (the device tool returns at most 8 files).
      # shellcheck disable=SC2086
      timeout -k 10 140 bash -c "$(declare -f run_sequence sequence_system); bin='$bin'; run_sequence $s '$out/logs' --sustain-s 15" \
        >"$out/logs/sequence_${s%% *}.log" 2>&1
      echo "sequence ${s%% *} ($((SECONDS - t0)) s): $(tail -12 "$out/logs/sequence_${s%% *}.log" | grep -E '^  (alone|beside)' | tr -s ' ' | tr '\n' ';')" |
        tee -a "$out/lease.txt"
    done
    for b in cudnn flash; do  # well under a minute each; trace and configs into the logs archive
      left=$((deadline - reserve_s - SECONDS))
      if ((left < 90)); then echo "torch $b: not run, ${left} s left" | tee -a "$out/lease.txt"; continue; fi
      t0=$SECONDS
      timeout -k 10 120 bash -c "$(declare -f run_torch); run_torch $b '$out/logs'" >"$out/logs/torch_$b.log" 2>&1
      echo "torch $b ($((SECONDS - t0)) s): $(grep -m1 ' step ' "$out/logs/torch_$b.log" || tail -1 "$out/logs/torch_$b.log")" |
        tee -a "$out/lease.txt"
    done
    stage gemm_sweep 110 calibration.db --sweep gemm
    stage rows 170 rows.db --plan "$here/plans/h100-sxm_rows.plan.json" --budget-s 0.3
    stage attention_sweep 70 calibration.db --sweep attention
    stage memory_sweep 60 calibration.db --sweep memory
    stage rows_rest 600 rows.db --plan "$here/plans/h100-sxm_rows.plan.json" --budget-s 0.3
    stage gemm_fp8_sweep 600 calibration.db --sweep gemm --dtype fp8
  fi
  for db in calibration rows; do
    [[ -f "$out/$db.db" ]] || continue
    # One file per database (the device tool returns at most 8 files): a writer's open and close
    # folds the write-ahead log back in and removes it, also after a killed stage.
    "$bin/calisim" db vacuum "$out/$db.db" >>"$out/logs/export.log" 2>&1
    "$bin/calisim" db export "$out/$db.db" "$out/$db.json" >>"$out/logs/export.log" 2>&1
    "$bin/calisim" db list "$out/$db.db" >>"$out/logs/export.log" 2>&1
  done
  cp "$out/conditions.txt" "$out/logs/" 2>/dev/null
  tar -czf "$out/logs.tgz" -C "$out" logs && rm -rf "$out/logs" "$out/conditions.txt"
  echo "lease: done, $((deadline - SECONDS)) s before the deadline" | tee -a "$out/lease.txt"
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
