// What `calisim profile sequence` measures (profiler/sequence_bench.h fills these on a GPU), and
// what a sustained run says, reduced from its raw samples: plain data and pure functions.
//
// Pass times: median, 10th and 90th percentile, and the drift — the median of the last tenth of
// the run over the median of its first tenth (at least one sample each), which shows a GPU
// settling at its power or thermal limit as the run goes on. NVML states: how many were valid,
// median and minimum SM clock, median and maximum power, maximum temperature, the union of the
// slowdown reasons NVML reported (gpu_state.h kNvmlSlowdownReasons), and the board's maximum SM
// clock. Throws std::invalid_argument for no pass times or a non-positive one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "profiler/gpu_state.h"
#include "profiler/measurement.h"

namespace calisim::profiler {

struct PassStats {
  std::int64_t n = 0;
  double median_s = 0, p10_s = 0, p90_s = 0;
  double first_tenth_s = 0, last_tenth_s = 0;  // medians of the first and last tenth of the run
  double drift() const { return first_tenth_s > 0 ? last_tenth_s / first_tenth_s : 0.0; }
};

struct SustainedRun {
  int background_ctas = 0;          // 0: the sequence alone
  std::vector<double> pass_s;       // one entry per group: its time over its passes
  int passes_per_group = 1;
  std::vector<GpuState> states;     // NVML while the passes ran
  double background_bytes = 0;      // moved by the copy kernel (reads + writes)
  double background_s = 0;          // how long the copy kernel ran
  bool background_hit_cap = false;  // it ended on its sweep cap before the passes did
};

struct SequenceMeasurement {
  std::vector<std::string> distinct_keys;  // first-use order
  std::vector<Measurement> isolated;       // one per distinct key
  std::vector<SustainedRun> runs;          // alone first, then one per background_ctas entry
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
