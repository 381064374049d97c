// SampleTimer: times one operation per begin()/end() pair on a stream (nvbench's cupti_timer /
// cuda_timer split).
//
// Usage: for each sample, begin(stream); launch the op's work on `stream`; end(stream). Then
// harvest(stream) synchronises and returns one OpTiming per pair, in order, and forgets them
// (also when it throws: the next pair starts a fresh harvest). Work enqueued outside a pair (an
// L2 flush, input refills) is never counted. When an op throws inside a pair, the caller closes
// the pair with end() and calls discard(), which forgets every pair since the last harvest, so
// the timer stays aligned for the next batch (MeasureLoop does this).
#pragma once

#include <cuda_runtime.h>

#include <string>
#include <vector>

#include "profiler/measurement.h"

namespace calisim::profiler {

struct OpTiming {
  double span_s = 0;        // first kernel start to last kernel end (events: start to stop event)
  double kernel_sum_s = 0;  // sum of the op's kernel durations (events: equals span_s)
  int kernels = 0;          // kernels attributed to the op (events: 0, unknown)
  // CUPTI: the op's kernel records that came without a valid end (end <= start; such records
  // are left out of span_s and kernel_sum_s). A sample with any is unusable; MeasureLoop drops it.
  int incomplete_kernels = 0;
};

class SampleTimer {
 public:
  virtual ~SampleTimer() = default;
  virtual TimerKind kind() const = 0;
  virtual void begin(cudaStream_t stream) = 0;
  virtual void end(cudaStream_t stream) = 0;
  virtual std::vector<OpTiming> harvest(cudaStream_t stream) = 0;
  // Forgets every pair since the last harvest without reading it; no pair may be open. Host
  // state only (work already enqueued still runs), so it cannot fail.
  virtual void discard() noexcept = 0;
  // Distinct kernel names seen by the last harvest (empty for timers that cannot see them).
  virtual std::vector<std::string> kernel_names() const { return {}; }
};

}  // namespace calisim::profiler
