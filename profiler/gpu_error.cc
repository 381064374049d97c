#include "profiler/gpu_error.h"

#include <fmt/format.h>

namespace calisim::profiler {

void check_cuda(cudaError_t status, const char* what) {
  if (status == cudaSuccess) return;
  const auto kind = status == cudaErrorMemoryAllocation ? GpuError::Kind::out_of_memory
                    : status == cudaErrorNotSupported   ? GpuError::Kind::not_supported
                                                        : GpuError::Kind::other;
  // Clear a non-sticky error so the next call does not report it again.
  cudaGetLastError();
  throw GpuError(fmt::format("{}: {} ({})", what, cudaGetErrorString(status), static_cast<int>(status)), kind);
}

void check_cublas(cublasStatus_t status, const char* what) {
  if (status == CUBLAS_STATUS_SUCCESS) return;
  const auto kind = status == CUBLAS_STATUS_ALLOC_FAILED ? GpuError::Kind::out_of_memory
                    : status == CUBLAS_STATUS_NOT_SUPPORTED || status == CUBLAS_STATUS_ARCH_MISMATCH
                        ? GpuError::Kind::not_supported
                        : GpuError::Kind::other;
  throw GpuError(fmt::format("{}: cuBLAS status {}", what, static_cast<int>(status)), kind);
}

std::size_t free_device_bytes() {
  std::size_t free_b = 0, total_b = 0;
  check_cuda(cudaMemGetInfo(&free_b, &total_b), "cudaMemGetInfo");
  return free_b;
}

}  // namespace calisim::profiler
