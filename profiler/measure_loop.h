// MeasureLoop: the one harness every single-GPU benchmark times through.
//
// measure(op, prepare): `warmup_runs` untimed runs (module load, heuristics, first-touch), an
// NVML read, then batches of samples: per sample `prepare` when given (work the op needs before
// every run that is not part of its time, e.g. zeroing an accumulator), an L2 flush when cold
// (after prepare, so prepare's writes do not warm the cache), both outside the timed pair, then
// timer.begin / op / timer.end; after each batch the timer is harvested and every sample fed to
// the stopping rule (stopping_criterion.h); finally a second NVML read and the throttling verdict.
// Batches amortise CUPTI's forced flush and keep the GPU busy; a batch never exceeds what is
// left of max_samples. Samples whose CUPTI records came without a valid end
// (OpTiming::incomplete_kernels) are dropped and counted in the row's timer_note; when they
// are a batch's worth and at least as many as the usable ones, measure() throws GpuError.
// quick_median_s(op, n, prepare): n timed samples without warm-up bookkeeping, for choosing
// among candidate algorithms before the real measurement (GpuError when none is usable).
// stream(): the measuring stream; untimed trial runs of a candidate go there too, so they
// finish before its first timed sample (a cudaStreamNonBlocking stream does not wait for the
// legacy default stream).
// Exceptions: when prepare, the flush, the op or the timer throws inside a batch, the open pair
// is closed, the batch's pairs are discarded (SampleTimer::discard) and the exception rethrown,
// so the timer stays aligned for the next measurement.
#pragma once

#include <cuda_runtime.h>

#include <functional>

#include "profiler/gpu_runtime.h"
#include "profiler/l2flush.h"
#include "profiler/measurement.h"
#include "profiler/nvml_monitor.h"
#include "profiler/sample_timer.h"
#include "profiler/stopping_criterion.h"

namespace calisim::profiler {

using StreamOp = std::function<void(cudaStream_t)>;

class MeasureLoop {
 public:
  // Everything passed must outlive the loop; nvml may be unavailable (states then invalid).
  MeasureLoop(cudaStream_t stream, SampleTimer& timer, const NvmlMonitor& nvml, L2Flush& flush, LoopOptions options)
      : stream_(stream), timer_(timer), nvml_(nvml), flush_(flush), options_(options) {}

  Measurement measure(const StreamOp& op, const StreamOp& prepare = {});
  double quick_median_s(const StreamOp& op, int samples, const StreamOp& prepare = {});

  cudaStream_t stream() const { return stream_; }
  SampleTimer& timer() { return timer_; }
  const LoopOptions& options() const { return options_; }

 private:
  cudaStream_t stream_;
  SampleTimer& timer_;
  const NvmlMonitor& nvml_;
  L2Flush& flush_;
  LoopOptions options_;

  // Enqueues `count` prepared, flushed, timed runs of op and harvests their timings.
  std::vector<OpTiming> timed_batch(const StreamOp& op, int count, const StreamOp& prepare);
};

}  // namespace calisim::profiler
