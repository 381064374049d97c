// MemoryBench: bandwidth of bandwidth-bound ops (MemoryOpKey) as streaming kernels.
//
// A key of kind K and B bytes runs memory_pattern(K): `reads` input arrays and `writes` output
// arrays of N = elements_per_array elements each (memory_patterns.h), one grid-stride kernel
// with 16-byte vector loads and stores, moving (reads + writes) x N x element_bytes <= B bytes.
// Inputs are random; outputs depend on every input, so nothing can be skipped. Time comes from
// the MeasureLoop (cold L2 by default: every sample reads from HBM).
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

#include "core/kernel_keys.h"
#include "profiler/measure_loop.h"
#include "profiler/memory_patterns.h"
#include "profiler/prepared_kernel.h"

namespace calisim::profiler {

class MemoryBench {
 public:
  explicit MemoryBench(MeasureLoop& loop) : loop_(loop) {}
  // Skipped (with the reason) when the buffers do not fit in free device memory.
  Measurement measure(const MemoryOpKey& key);
  // The key's arrays allocated and filled, kept alive to run again (skip_reason when they do not fit).
  Prepared prepare(const MemoryOpKey& key);
  // For tests: runs the pattern once on small random arrays and returns the largest relative
  // error of the outputs against a CPU recomputation.
  static double check_against_cpu(const MemoryOpKey& key, cudaStream_t stream);

 private:
  MeasureLoop& loop_;
};

}  // namespace calisim::profiler
