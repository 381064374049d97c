#include "profiler/nccl_common.h"

#include <fmt/format.h>

#include "profiler/gpu_error.h"

namespace calisim::profiler {

void check_nccl(ncclResult_t r, const char* what) {
  if (r == ncclSuccess) return;
  throw GpuError(fmt::format("{}: {} ({})", what, ncclGetErrorString(r), static_cast<int>(r)), GpuError::Kind::other);
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::fp32:
    case DType::tf32: return ncclFloat32;
    case DType::bf16: return ncclBfloat16;
    case DType::fp16: return ncclFloat16;
    case DType::fp8_e4m3: return ncclFloat8e4m3;
    case DType::fp8_e5m2: return ncclFloat8e5m2;
  }
  return ncclBfloat16;
}

void nccl_all_to_all(const void* send, void* recv, std::size_t count, ncclDataType_t type, std::size_t element_bytes,
                     ncclComm_t comm, cudaStream_t stream) {
  int ranks = 0;
  check_nccl(ncclCommCount(comm, &ranks), "ncclCommCount");
  const std::size_t share = count * element_bytes;
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (int peer = 0; peer < ranks; ++peer) {
    const std::size_t offset = static_cast<std::size_t>(peer) * share;
    check_nccl(ncclSend(static_cast<const char*>(send) + offset, count, type, peer, comm, stream), "ncclSend");
    check_nccl(ncclRecv(static_cast<char*>(recv) + offset, count, type, peer, comm, stream), "ncclRecv");
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
}

}  // namespace calisim::profiler
