// Buffer sizes and bandwidths of NCCL collectives, exactly as nccl-tests defines them
// (../shared/reference/profiling_notes.md §2.1), so our rows compare with nccl-tests output.
//
// A CollectiveKey's `bytes` is the size nccl-tests prints: the full buffer S (all_reduce: the
// buffer each rank reduces; all_gather: the total output; reduce_scatter: the total input;
// all_to_all: each rank's whole send buffer; send_recv: what each rank sends). For the
// gather/scatter family the per-rank share is rounded down to a multiple of 16 bytes, as
// nccl-tests does; `effective_bytes` is S after that rounding and is what algbw divides.
#pragma once

#include <cstdint>

#include "core/kernel_keys.h"

namespace calisim::profiler {

struct CollectiveBuffers {
  std::int64_t send_bytes = 0;       // per rank
  std::int64_t recv_bytes = 0;       // per rank
  std::int64_t count = 0;            // elements passed to the NCCL call (per rank, per peer for all_to_all)
  std::int64_t effective_bytes = 0;  // the S that algbw uses
};

// Throws std::invalid_argument for ranks < 1 or a buffer smaller than one element per rank.
CollectiveBuffers collective_buffers(const CollectiveKey& key);

// algbw = effective_bytes / time (GB/s, 1e9); busbw = algbw x nccl-tests' bus factor.
double algbw_gb_s(const CollectiveKey& key, double time_s);
double busbw_gb_s(const CollectiveKey& key, double time_s);

}  // namespace calisim::profiler
