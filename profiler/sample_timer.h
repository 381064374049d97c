// SampleTimer: times one operation per begin()/end() pair on a stream (nvbench's cupti_timer /
// cuda_timer split).
//
// Usage: for each sample, begin(stream); launch the op's work on `stream`; end(stream). Then
// harvest(stream) synchronises and returns one OpTiming per pair, in order, and forgets them.
// Work enqueued outside a pair (an L2 flush, input refills) is never counted.
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
};

class SampleTimer {
 public:
  virtual ~SampleTimer() = default;
  virtual TimerKind kind() const = 0;
  virtual void begin(cudaStream_t stream) = 0;
  virtual void end(cudaStream_t stream) = 0;
  virtual std::vector<OpTiming> harvest(cudaStream_t stream) = 0;
  // Distinct kernel names seen by the last harvest (empty for timers that cannot see them).
  virtual std::vector<std::string> kernel_names() const { return {}; }
};

}  // namespace calisim::profiler
