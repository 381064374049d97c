// The outcome of measuring one planned kernel: what a benchmark hands the runner.
//
// A measurement is either `measured` (statistics valid) or `skipped` with a reason a person can
// act on ("out of memory: needs 6.4 GB, 3.1 GB free", "cuBLASLt has no algorithm for fp8 NN on
// sm_90", "needs 8 GPUs, this node has 1"). Times are seconds per operation: for GEMM,
// attention and memory ops the per-sample time is the span of the op's kernels (first start to
// last end) as CUPTI saw them, or the CUDA-event time around the op when CUPTI was unavailable;
// for collectives it is the host wall time per iteration over a synchronised loop (nccl-tests'
// method).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "profiler/gpu_state.h"
#include "profiler/statistics.h"
#include "profiler/stopping_criterion.h"

namespace calisim::profiler {

enum class MeasurementStatus : std::uint8_t { measured, skipped };
std::string_view to_string(MeasurementStatus s);

// Which clock timed the samples.
enum class TimerKind : std::uint8_t { cupti, cuda_events, host_wall };
std::string_view to_string(TimerKind t);

struct Measurement {
  MeasurementStatus status = MeasurementStatus::skipped;
  std::string reason;                 // why skipped; empty when measured

  SampleSummary summary;              // per-op span statistics
  StopReason stop = StopReason::running;
  TimerKind timer = TimerKind::cupti;
  std::string timer_note;             // e.g. why CUPTI was not used
  bool cold_l2 = true;                // L2 flushed before every sample
  int warmup_runs = 0;

  // CUPTI only: kernels per op and the median of their summed durations (<= span: gaps excluded).
  int kernels_per_op = 0;
  double kernel_sum_median_s = 0;
  std::vector<std::string> kernel_names;  // distinct names of the op's kernels

  std::string algorithm;              // e.g. cuBLASLt algo id / tile / stages, cuDNN engine
  std::string library;                // e.g. "cublasLt 130100"

  GpuState before, after;
  ThrottleVerdict throttle;

  static Measurement skipped_because(std::string why) {
    Measurement m;
    m.status = MeasurementStatus::skipped;
    m.reason = std::move(why);
    return m;
  }
};

}  // namespace calisim::profiler
