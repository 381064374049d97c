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

}  // namespace calisim::profiler
