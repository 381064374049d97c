// NcclBench: collective bandwidth with NCCL in one process over all local GPUs.
//
// Timing follows nccl-tests (profiling_notes.md §2.2): host wall clock around `iters`
// back-to-back asynchronous collectives on every rank, until every stream has finished,
// divided by `iters`; one sample per such loop, sampled until the stopping rule is met. NCCL
// kernel durations include waiting for the slowest peer, so CUPTI is not used here (CudaBench
// also turns CUPTI's activity collection off around measure(): it would slow the launch loop).
// Buffers and byte counts follow collective_sizes.h; send_recv sends to rank + 1 and receives
// from rank - 1, as nccl-tests' sendrecv does; all_to_all is nccl-tests' grouped send / recv to
// every peer (nccl_all_to_all, nccl_common.h), not ncclAlltoAll, which needs NCCL 2.28.3.
// A key whose `ranks` differs from the local GPU count, or that spans nodes (ranks_per_node <
// ranks), is skipped with the reason: one process can only form groups of its own GPUs.
#pragma once

#include <nccl.h>

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "core/kernel_keys.h"
#include "profiler/measurement.h"
#include "profiler/nvml_monitor.h"
#include "profiler/stopping_criterion.h"

namespace calisim::profiler {

class NcclBench {
 public:
  // Communicators over `devices` (ncclCommInitAll); throws GpuError when NCCL cannot start.
  NcclBench(std::vector<int> devices, StoppingRule rule, const NvmlMonitor& nvml);
  ~NcclBench();
  NcclBench(const NcclBench&) = delete;
  NcclBench& operator=(const NcclBench&) = delete;

  int ranks() const { return static_cast<int>(devices_.size()); }
  Measurement measure(const CollectiveKey& key);
  // For tests: one all_reduce (sum) of random bf16 data; the largest relative error against the
  // CPU sum of every rank's input.
  double check_all_reduce(std::int64_t bytes);
  // For tests: one all_to_all of `count_per_peer` bf16 elements per peer through the same call
  // the measurement makes; the number of received elements that differ from what the sending
  // rank held at that place (0 when every share arrived where it belongs).
  std::int64_t check_all_to_all(std::int64_t count_per_peer);

  static std::string library_version();

 private:
  std::vector<int> devices_;
  std::vector<ncclComm_t> comms_;
  std::vector<cudaStream_t> streams_;
  StoppingRule rule_;
  const NvmlMonitor& nvml_;
};

}  // namespace calisim::profiler
