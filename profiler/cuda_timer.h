// CudaEventTimer: CUDA events around each op. Includes launch gaps between the op's kernels and
// cannot attribute kernels; the fallback when CUPTI is unavailable, and the reference the GPU
// tests compare CUPTI against.
#pragma once

#include <vector>

#include "profiler/sample_timer.h"

namespace calisim::profiler {

class CudaEventTimer final : public SampleTimer {
 public:
  CudaEventTimer() = default;
  ~CudaEventTimer() override;
  CudaEventTimer(const CudaEventTimer&) = delete;
  CudaEventTimer& operator=(const CudaEventTimer&) = delete;

  TimerKind kind() const override { return TimerKind::cuda_events; }
  void begin(cudaStream_t stream) override;
  void end(cudaStream_t stream) override;
  std::vector<OpTiming> harvest(cudaStream_t stream) override;
  void discard() noexcept override { used_ = 0; }

 private:
  cudaEvent_t event_at(std::size_t i);
  std::vector<cudaEvent_t> pool_;  // reused across harvests; 2 per pair
  std::size_t used_ = 0;
};

}  // namespace calisim::profiler
