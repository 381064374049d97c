#!/usr/bin/env bash
# Packs a CUDA build of calisim for a GPU machine that has the CUDA driver and PyTorch's CUDA
# libraries but no compiler toolchain for calisim's dependencies (docs/profiling.md).
#
#   scripts/profiler_bundle.sh [BUILD_DIR] [BUNDLE_DIR]     (defaults: build-prof, .prof-bundle)
#
# The bundle holds the calisim executable and its CUDA plugin, the GPU test executables (and the CUDA library's
# host-side tests, whose stream-synchronising cases skip without a GPU), libcalisim_trace.so and the
# small CUDA program its test traces, scripts/profiler_device_run.sh, the plan of the kernels the
# shipped measured runs need on an H100 (plans/, for the run script's `rows` mode), and every shared library
# they need except glibc's and the large CUDA libraries (cuBLASLt, cuDNN, NCCL, cudart), which
# the device run script takes from the GPU machine. libcupti is carried: the kernel-record
# struct is fixed at compile time (CUPTI 13.0 here), so the run-time CUPTI must match the
# headers built against. Open MPI's libraries are carried too (calisim links libmpi for
# `calisim search` and the mpirun collectives); nothing calls MPI_Init without mpirun, so a
# machine without an MPI runtime runs the single-node path. At the end every bundled binary is
# checked with ldd against the bundle plus the libraries the GPU machine provides, and
# scripts/profiler_bundle_check.sh checks the bundle against the run script it carries (every
# file it calls present, every selftest filter matching a test, every CUDA library left to the
# GPU machine one the run script searches for).
set -euo pipefail
build=${1:-build-prof}
bundle=${2:-.prof-bundle}
# libcalisim_cuda.so goes beside calisim, where calisim looks for its CUDA half (profiler/gpu_runtime.h).
bins=("$build/cli/calisim" "$build/cli/libcalisim_cuda.so" "$build/tests/profiler/profiler_gpu_test" "$build/tests/profiler/profiler_trace_gpu_test"
      "$build/tests/profiler/profiler_cuda_host_test" "$build/tests/profiler/calisim_trace_target")
trace_lib="$build/profiler/libcalisim_trace.so"
for f in "${bins[@]}" "$trace_lib"; do
  [[ -e "$f" ]] || { echo "missing $f: build first (cmake --build $build --target calisim profiler_gpu_test profiler_trace_gpu_test profiler_cuda_host_test calisim_trace calisim_trace_target)" >&2; exit 1; }
done
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
cp "${bins[@]}" "$bundle/bin/"
cp "$trace_lib" "$bundle/lib/"
cp scripts/profiler_device_run.sh "$bundle/"
# The kernels the shipped measured runs need on an H100 (the device script's `rows` mode).
mkdir -p "$bundle/plans"
"$build/cli/calisim" profile plan --runs calibration/data/measured_runs.csv \
  --runs calibration/data/nemo_long_sequence_b200.csv --runs calibration/data/megatron_bridge_archive.csv \
  --system h100-sxm -o "$bundle/plans/h100-sxm_rows.plan.json"
# Libraries provided on the GPU machine (driver, glibc, the big CUDA libraries) stay behind.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libutil\.|libgcc_s\.|libcuda\.|libcudart\.|libcublas|libcudnn|libnccl|libnvidia)'
for f in "${bins[@]}" "$trace_lib"; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ ! "$name" =~ $skip ]]; then cp -L "$path" "$bundle/lib/$name"; fi
done
# Ignored by git wherever the bundle lives inside the checkout (the device tool carries it); an
# absolute path is outside the checkout's relative namespace and needs no entry.
if [[ "$bundle" != /* ]] && git rev-parse --git-dir >/dev/null 2>&1; then
  exclude="$(git rev-parse --git-dir)/info/exclude"
  mkdir -p "$(dirname "$exclude")"
  grep -qx "/$bundle/" "$exclude" 2>/dev/null || echo "/$bundle/" >>"$exclude"
fi
# Every library a bundled binary needs must come from the bundle or be one the GPU machine has.
missing=0
for f in "$bundle"/bin/* "$bundle/lib/libcalisim_trace.so"; do
  while read -r name path; do
    [[ "$name" =~ $skip ]] && continue
    if [[ "$path" != "$(cd "$bundle/lib" && pwd)/$name" ]]; then
      echo "ldd check: $(basename "$f") needs $name from $path, not from the bundle" >&2
      missing=1
    fi
  done < <(LD_LIBRARY_PATH="$(cd "$bundle/lib" && pwd)" ldd "$f" | awk '$2 == "=>" {print $1, $3}')
done
[[ $missing == 0 ]] || { echo "bundle incomplete" >&2; exit 1; }
echo "ldd check: every bundled binary resolves its non-CUDA, non-glibc libraries inside $bundle/lib"
"$(dirname "$0")/profiler_bundle_check.sh" "$bundle"
du -sh "$bundle"
ls "$bundle/lib"
