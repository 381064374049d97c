// Helpers shared by the single-process and the MPI NCCL benchmarks (CUDA builds only).
#pragma once

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstddef>

#include "core/dtype.h"

namespace calisim::profiler {

// Throws GpuError naming the call and NCCL's error text unless r is ncclSuccess.
void check_nccl(ncclResult_t r, const char* what);

// NCCL's element type for a calisim dtype (tf32 travels as fp32).
ncclDataType_t nccl_type(DType t);

// All-to-all as nccl-tests' alltoall runs it: one group of ncclSend / ncclRecv to and from every
// rank of `comm` (this one included), `count` elements of `element_bytes` each per peer, peer j's
// share at byte offset j * count * element_bytes of send and of recv. ncclSend / ncclRecv exist
// from NCCL 2.7; ncclAlltoAll only from 2.28.3, and calling it against an older libnccl.so.2
// (PyTorch's wheels) ends the process with a symbol lookup error, so it is not used. The group
// nests: inside an outer ncclGroupStart / ncclGroupEnd (one process driving several ranks) the
// sends and receives join the outer group.
void nccl_all_to_all(const void* send, void* recv, std::size_t count, ncclDataType_t type, std::size_t element_bytes,
                     ncclComm_t comm, cudaStream_t stream);

}  // namespace calisim::profiler
