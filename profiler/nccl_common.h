// Helpers shared by the single-process and the MPI NCCL benchmarks (CUDA builds only).
#pragma once

#include <nccl.h>

#include "core/dtype.h"

namespace calisim::profiler {

// Throws GpuError naming the call and NCCL's error text unless r is ncclSuccess.
void check_nccl(ncclResult_t r, const char* what);

// NCCL's element type for a calisim dtype (tf32 travels as fp32).
ncclDataType_t nccl_type(DType t);

}  // namespace calisim::profiler
