// L2Flush: evicts the L2 cache between samples, so cold measurements read inputs from HBM
// (nvbench's detail/l2flush). It writes a buffer of twice the device's L2 size with
// cudaMemsetAsync on the measuring stream, outside the timed region.
#pragma once

#include <cuda_runtime.h>

#include "profiler/device_buffer.h"

namespace calisim::profiler {

class L2Flush {
 public:
  explicit L2Flush(int device);
  // No buffer: flush() does nothing. For loops that never flush (cold_l2 = false) where no
  // device may be present (the CPU-side MeasureLoop tests).
  L2Flush() = default;
  void flush(cudaStream_t stream);
  std::size_t bytes() const { return buffer_.bytes(); }

 private:
  DeviceBuffer buffer_;
};

}  // namespace calisim::profiler
