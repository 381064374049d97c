// What a sustained run of `calisim profile sequence` says, reduced from its raw samples: pure
// functions, no GPU needed (profiler/sequence_bench.h produces the samples).
//
// Pass times: median, 10th and 90th percentile, and the drift — the median of the last tenth of
// the run over the median of its first tenth (at least one sample each), which shows a GPU
// settling at its power or thermal limit as the run goes on. NVML states: how many were valid,
// median and minimum SM clock, median and maximum power, maximum temperature, the union of the
// slowdown reasons NVML reported (gpu_state.h kNvmlSlowdownReasons), and the board's maximum SM
// clock. Throws std::invalid_argument for no pass times or a non-positive one.
#pragma once

#include <cstdint>
#include <vector>

#include "profiler/gpu_state.h"

namespace calisim::profiler {

struct PassStats {
  std::int64_t n = 0;
  double median_s = 0, p10_s = 0, p90_s = 0;
  double first_tenth_s = 0, last_tenth_s = 0;  // medians of the first and last tenth of the run
  double drift() const { return first_tenth_s > 0 ? last_tenth_s / first_tenth_s : 0.0; }
};

PassStats summarize_passes(const std::vector<double>& pass_s);

struct ClockStats {
  int samples = 0;  // valid NVML reads
  double sm_clock_median_mhz = 0, sm_clock_min_mhz = 0, max_sm_clock_mhz = 0;
  double power_median_w = 0, power_max_w = 0, temperature_max_c = 0;
  std::uint64_t slowdown_reasons = 0;
};

ClockStats summarize_states(const std::vector<GpuState>& states);

}  // namespace calisim::profiler
