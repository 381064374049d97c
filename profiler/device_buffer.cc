#include "profiler/device_buffer.h"

#include <cuda_runtime.h>
#include <fmt/format.h>

#include "profiler/gpu_error.h"

namespace calisim::profiler {

DeviceBuffer::DeviceBuffer(std::size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t st = cudaMalloc(&ptr_, bytes);
  if (st != cudaSuccess) {
    cudaGetLastError();
    std::size_t free_b = 0, total_b = 0;
    cudaMemGetInfo(&free_b, &total_b);
    ptr_ = nullptr;
    throw GpuError(fmt::format("out of memory: {:.2f} GB requested, {:.2f} GB free of {:.2f} GB", bytes / 1e9,
                               free_b / 1e9, total_b / 1e9),
                   st == cudaErrorMemoryAllocation ? GpuError::Kind::out_of_memory : GpuError::Kind::other);
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (ptr_) cudaFree(ptr_);
}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) cudaFree(ptr_);
    ptr_ = std::exchange(o.ptr_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
  }
  return *this;
}

}  // namespace calisim::profiler
