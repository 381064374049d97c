#!/usr/bin/env bash
# Runs on the GPU machine, from the repository root, with the bundle made by
# scripts/profiler_bundle.sh: the GPU tests, then the calibration sweep into a database, then
# the text export. Everything it writes goes under OUT_DIR (default $OUT, else ./profile-out).
#
#   .prof-bundle/profiler_device_run.sh [SWEEP] [EXTRA calisim profile run ARGS...]
#   (SWEEP: all (default), gemm, attention, memory, collective)
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${OUT_DIR:-${OUT:-profile-out}}
mkdir -p "$out"
sweep=${1:-all}
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

{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu,persistence_mode \
    --format=csv 2>&1
  echo "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
  ldd "$here/bin/calisim" | grep -E "cublas|cudnn|nccl|cupti|cudart|not found"
} | tee "$out/conditions.txt"

"$here/bin/profiler_gpu_test" 2>&1 | tee "$out/gpu_test.log"
db="$out/calibration.db"
"$here/bin/calisim" profile run --sweep "$sweep" --db "$db" --csv "$out/details.csv" "$@" 2>&1 | tee "$out/run.log"
"$here/bin/calisim" db export "$db" "$out/calibration.csv" 2>&1 | tee -a "$out/run.log"
"$here/bin/calisim" db list "$db" 2>&1 | tee -a "$out/run.log"
