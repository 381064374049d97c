#include "profiler/l2flush.h"

#include "profiler/gpu_error.h"

namespace calisim::profiler {
namespace {

std::size_t l2_bytes(int device) {
  int l2 = 0;
  check_cuda(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, device), "cudaDeviceGetAttribute(L2)");
  return static_cast<std::size_t>(l2);
}

}  // namespace

L2Flush::L2Flush(int device) : buffer_(2 * l2_bytes(device)) {}

void L2Flush::flush(cudaStream_t stream) {
  if (buffer_.bytes() == 0) return;
  check_cuda(cudaMemsetAsync(buffer_.get(), 0, buffer_.bytes(), stream), "cudaMemsetAsync(L2 flush)");
}

}  // namespace calisim::profiler
