#include "profiler/measure_loop.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>

#include "profiler/gpu_error.h"
#include "profiler/statistics.h"

namespace calisim::profiler {

Measurement MeasureLoop::measure(const StreamOp& op, const StreamOp& prepare) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  for (int i = 0; i < options_.warmup_runs; ++i) {
    if (prepare) prepare(stream_);
    op(stream_);
  }
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
  int kernels = 0, taken = 0, dropped = 0;
  StopReason stop = StopReason::running;
  while (stop == StopReason::running) {
    const int left = options_.rule.max_samples - static_cast<int>(spans.size());
    const int batch = std::max(1, std::min(options_.batch, left));
    for (const OpTiming& t : timed_batch(op, batch, prepare)) {
      ++taken;
      if (t.incomplete_kernels > 0) {  // a kernel without its end: the span is unknown
        ++dropped;
        continue;
      }
      spans.push_back(t.span_s);
      sums.push_back(t.kernel_sum_s);
      kernels = std::max(kernels, t.kernels);
      criterion.add(t.span_s);
    }
    // Dropped samples do not count towards the rule, so a timer that only delivers incomplete
    // records would loop for ever: give up once they are a batch's worth and outnumber the rest.
    if (dropped >= std::max(options_.batch, static_cast<int>(spans.size()))) {
      throw GpuError(fmt::format("{} of {} samples had kernel records without a valid end timestamp (end <= start); "
                                 "the timer cannot time this op",
                                 dropped, taken),
                     GpuError::Kind::other);
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
  if (dropped > 0) {
    m.timer_note = fmt::format("{} of {} samples dropped: kernel records without a valid end timestamp", dropped,
                               taken);
  }
  return m;
}

std::vector<OpTiming> MeasureLoop::timed_batch(const StreamOp& op, int count, const StreamOp& prepare) {
  bool open = false;  // a begin() without its end()
  try {
    for (int i = 0; i < count; ++i) {
      if (prepare) prepare(stream_);
      if (options_.cold_l2) flush_.flush(stream_);
      timer_.begin(stream_);
      open = true;
      op(stream_);
      open = false;  // cleared first: an end() that throws must not be retried below
      timer_.end(stream_);
    }
    check_cuda(cudaGetLastError(), "timed launch");
  } catch (...) {
    // Leave the timer as a fresh one: an unmatched begin() would shift every later event pair
    // (CudaEventTimer) or keep a CUPTI external id pushed, and the batch's pairs are never read.
    if (open) {
      try {
        timer_.end(stream_);
      } catch (...) {
        // The op's exception is the one worth reporting; this one (a failed event record or
        // CUPTI pop after the same fault) would only hide it.
      }
    }
    timer_.discard();
    throw;
  }
  return timer_.harvest(stream_);
}

double MeasureLoop::quick_median_s(const StreamOp& op, int samples, const StreamOp& prepare) {
  std::vector<double> spans;
  for (const OpTiming& t : timed_batch(op, samples, prepare)) {
    if (t.incomplete_kernels == 0) spans.push_back(t.span_s);
  }
  if (spans.empty()) {
    throw GpuError(fmt::format("none of {} samples had complete kernel records (end > start)", samples),
                   GpuError::Kind::other);
  }
  return summarize(spans).median_s;
}

}  // namespace calisim::profiler
