// MeasureLoop: the one harness every single-GPU benchmark times through.
//
// measure(op): `warmup_runs` untimed runs (module load, heuristics, first-touch), an NVML read,
// then batches of samples: per sample an L2 flush when cold (outside the timed pair), then
// timer.begin / op / timer.end; after each batch the timer is harvested and every sample fed to
// the stopping rule (stopping_criterion.h); finally a second NVML read and the throttling verdict.
// Batches amortise CUPTI's forced flush and keep the GPU busy; a batch never exceeds what is
// left of max_samples.
// quick_median_s(op, n): n timed samples without warm-up bookkeeping, for choosing among
// candidate algorithms before the real measurement.
#pragma once

#include <cuda_runtime.h>

#include <functional>

#include "profiler/l2flush.h"
#include "profiler/measurement.h"
#include "profiler/nvml_monitor.h"
#include "profiler/sample_timer.h"
#include "profiler/stopping_criterion.h"

namespace calisim::profiler {

struct LoopOptions {
  StoppingRule rule;
  bool cold_l2 = true;
  int warmup_runs = 3;
  int batch = 10;
};

using StreamOp = std::function<void(cudaStream_t)>;

class MeasureLoop {
 public:
  // Everything passed must outlive the loop; nvml may be unavailable (states then invalid).
  MeasureLoop(cudaStream_t stream, SampleTimer& timer, const NvmlMonitor& nvml, L2Flush& flush, LoopOptions options)
      : stream_(stream), timer_(timer), nvml_(nvml), flush_(flush), options_(options) {}

  Measurement measure(const StreamOp& op);
  double quick_median_s(const StreamOp& op, int samples);

  SampleTimer& timer() { return timer_; }
  const LoopOptions& options() const { return options_; }

 private:
  cudaStream_t stream_;
  SampleTimer& timer_;
  const NvmlMonitor& nvml_;
  L2Flush& flush_;
  LoopOptions options_;

  // Enqueues `count` flushed, timed runs of op and harvests their timings.
  std::vector<OpTiming> timed_batch(const StreamOp& op, int count);
};

}  // namespace calisim::profiler
