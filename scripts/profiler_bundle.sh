#!/usr/bin/env bash
# Packs a CUDA build of calisim for a GPU machine that has the CUDA driver and PyTorch's CUDA
# libraries but no compiler toolchain for calisim's dependencies (docs/profiling.md).
#
#   scripts/profiler_bundle.sh [BUILD_DIR] [BUNDLE_DIR]     (defaults: build-prof, .prof-bundle)
#
# The bundle holds the calisim executable, the GPU test executable, scripts/profiler_device_run.sh,
# and every shared library they need except glibc's and the large CUDA libraries (cuBLASLt,
# cuDNN, NCCL, cudart), which the device run script takes from the GPU machine. libcupti is
# carried: the kernel-record struct is fixed at compile time (CUPTI 13.0 here), so the run-time
# CUPTI must match the headers built against.
set -euo pipefail
build=${1:-build-prof}
bundle=${2:-.prof-bundle}
exe="$build/cli/calisim"
gpu_test="$build/tests/profiler/profiler_gpu_test"
for f in "$exe" "$gpu_test"; do
  [[ -x "$f" ]] || { echo "missing $f: build first (cmake --build $build)" >&2; exit 1; }
done
rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib"
cp "$exe" "$gpu_test" "$bundle/bin/"
cp scripts/profiler_device_run.sh "$bundle/"
# Libraries provided on the GPU machine (driver, glibc, the big CUDA libraries) stay behind.
skip='^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|libutil\.|libgcc_s\.|libcuda\.|libcudart\.|libcublas|libcudnn|libnccl|libnvidia)'
for f in "$exe" "$gpu_test"; do
  ldd "$f" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}'
done | sort -u | while read -r name path; do
  if [[ ! "$name" =~ $skip ]]; then cp -L "$path" "$bundle/lib/$name"; fi
done
# Ignored by git wherever the bundle lives inside the checkout (the device tool carries it).
if git rev-parse --git-dir >/dev/null 2>&1; then
  exclude="$(git rev-parse --git-dir)/info/exclude"
  mkdir -p "$(dirname "$exclude")"
  grep -qx "/$bundle/" "$exclude" 2>/dev/null || echo "/$bundle/" >>"$exclude"
fi
du -sh "$bundle"
ls "$bundle/lib"
