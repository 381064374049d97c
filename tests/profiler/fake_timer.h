// A scripted SampleTimer and a MeasureLoop around it, for testing the loop's bookkeeping without
// timing anything (cuda_host_test.cc without a GPU, gpu_test.cc where the loop must synchronise).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "profiler/gpu_error.h"
#include "profiler/l2flush.h"
#include "profiler/measure_loop.h"
#include "profiler/nvml_monitor.h"
#include "profiler/sample_timer.h"

namespace calisim::profiler::fake {

// Checks the begin / end discipline as it goes and logs every call; harvest returns one 1 ms
// timing per closed pair, every `incomplete_every`-th of them (counting from the first) marked
// as having a kernel record without a valid end.
class FakeTimer final : public SampleTimer {
 public:
  TimerKind kind() const override { return TimerKind::cupti; }
  void begin(cudaStream_t) override {
    log.push_back("begin");
    if (++begins == fail_begin_at) throw GpuError("begin failed", GpuError::Kind::other);
    EXPECT_FALSE(open) << "begin() inside an open pair";
    open = true;
  }
  void end(cudaStream_t) override {
    log.push_back("end");
    ++ends;
    EXPECT_TRUE(open) << "end() without begin()";
    open = false;
    ++pairs;
    if (fail_end) throw GpuError("end failed", GpuError::Kind::other);
  }
  std::vector<OpTiming> harvest(cudaStream_t) override {
    ++harvests;
    EXPECT_FALSE(open) << "harvest() with a pair open";
    std::vector<OpTiming> out(static_cast<std::size_t>(pairs));
    for (OpTiming& t : out) {
      t.span_s = t.kernel_sum_s = 1e-3;
      t.kernels = 1;
      if (incomplete_every > 0 && sample_++ % incomplete_every == 0) t.incomplete_kernels = 1;
    }
    pairs = 0;
    return out;
  }
  void discard() noexcept override {
    log.push_back("discard");
    ++discards;
    pairs = 0;
  }

  std::vector<std::string> log;
  int begins = 0, ends = 0, harvests = 0, discards = 0, pairs = 0;
  bool open = false;
  int fail_begin_at = 0;  // 1-based begin() call that throws; 0 = none
  bool fail_end = false;
  int incomplete_every = 0;

 private:
  int sample_ = 0;
};

// A loop with the fake timer that never flushes (no device buffer needed) and no warm-up.
struct FakeRig {
  FakeTimer timer;
  NvmlMonitor nvml{0};  // unavailable without a GPU: read() then reports invalid states
  L2Flush no_flush;
  LoopOptions options = [] {
    LoopOptions o;
    o.cold_l2 = false;
    o.warmup_runs = 0;
    o.rule.min_samples = 10;
    o.rule.max_samples = 40;
    o.rule.time_budget_s = 5;
    return o;
  }();
  MeasureLoop loop{nullptr, timer, nvml, no_flush, options};
};

}  // namespace calisim::profiler::fake
