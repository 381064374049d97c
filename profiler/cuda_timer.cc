#include "profiler/cuda_timer.h"

#include <utility>

#include "profiler/gpu_error.h"

namespace calisim::profiler {

CudaEventTimer::~CudaEventTimer() {
  for (cudaEvent_t e : pool_) cudaEventDestroy(e);
}

cudaEvent_t CudaEventTimer::event_at(std::size_t i) {
  while (pool_.size() <= i) {
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    pool_.push_back(e);
  }
  return pool_[i];
}

void CudaEventTimer::begin(cudaStream_t stream) {
  check_cuda(cudaEventRecord(event_at(used_++), stream), "cudaEventRecord(start)");
}

void CudaEventTimer::end(cudaStream_t stream) {
  check_cuda(cudaEventRecord(event_at(used_++), stream), "cudaEventRecord(stop)");
}

std::vector<OpTiming> CudaEventTimer::harvest(cudaStream_t stream) {
  // Forget the pairs first: a throw below must not leave them to misalign the next harvest.
  const std::size_t used = std::exchange(used_, 0);
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  std::vector<OpTiming> out;
  for (std::size_t i = 0; i + 1 < used; i += 2) {
    float ms = 0;
    check_cuda(cudaEventElapsedTime(&ms, pool_[i], pool_[i + 1]), "cudaEventElapsedTime");
    OpTiming t;
    t.span_s = t.kernel_sum_s = ms * 1e-3;
    out.push_back(t);
  }
  return out;
}

}  // namespace calisim::profiler
