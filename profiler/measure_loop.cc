#include "profiler/measure_loop.h"

#include <algorithm>
#include <chrono>

#include "profiler/gpu_error.h"
#include "profiler/statistics.h"

namespace calisim::profiler {

Measurement MeasureLoop::measure(const StreamOp& op) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (int i = 0; i < options_.warmup_runs; ++i) op(stream_);
  check_cuda(cudaStreamSynchronize(stream_), "warm-up");
  check_cuda(cudaGetLastError(), "warm-up launch");

  Measurement m;
  m.status = MeasurementStatus::measured;
  m.timer = timer_.kind();
  m.cold_l2 = options_.cold_l2;
  m.warmup_runs = options_.warmup_runs;
  m.before = nvml_.read();

  StdRelCriterion criterion(options_.rule);
  std::vector<double> spans, sums;
  int kernels = 0;
  StopReason stop = StopReason::running;
  while (stop == StopReason::running) {
    const int left = options_.rule.max_samples - static_cast<int>(spans.size());
    const int batch = std::max(1, std::min(options_.batch, left));
    for (const OpTiming& t : timed_batch(op, batch)) {
      spans.push_back(t.span_s);
      sums.push_back(t.kernel_sum_s);
      kernels = std::max(kernels, t.kernels);
      criterion.add(t.span_s);
    }
    stop = criterion.check(std::chrono::duration<double>(Clock::now() - t0).count());
  }
  m.after = nvml_.read();
  m.throttle = judge_throttling(m.after);
  m.stop = stop;
  m.summary = summarize(spans);
  m.kernels_per_op = kernels;
  if (kernels > 0) m.kernel_sum_median_s = summarize(sums).median_s;
  m.kernel_names = timer_.kernel_names();
  return m;
}

std::vector<OpTiming> MeasureLoop::timed_batch(const StreamOp& op, int count) {
  for (int i = 0; i < count; ++i) {
    if (options_.cold_l2) flush_.flush(stream_);
    timer_.begin(stream_);
    op(stream_);
    timer_.end(stream_);
  }
  check_cuda(cudaGetLastError(), "timed launch");
  return timer_.harvest(stream_);
}

double MeasureLoop::quick_median_s(const StreamOp& op, int samples) {
  std::vector<double> spans;
  for (const OpTiming& t : timed_batch(op, samples)) spans.push_back(t.span_s);
  return summarize(spans).median_s;
}

}  // namespace calisim::profiler
