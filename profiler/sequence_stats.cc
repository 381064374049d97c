#include "profiler/sequence_stats.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "profiler/statistics.h"

namespace calisim::profiler {
namespace {

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return quantile_sorted(v, 0.5);
}

}  // namespace

PassStats summarize_passes(const std::vector<double>& pass_s) {
  if (pass_s.empty()) throw std::invalid_argument("no pass times");
  for (double t : pass_s) {
    if (!(t > 0) || !std::isfinite(t)) throw std::invalid_argument("a pass time is not a positive number");
  }
  PassStats s;
  s.n = static_cast<std::int64_t>(pass_s.size());
  std::vector<double> sorted = pass_s;
  std::sort(sorted.begin(), sorted.end());
  s.median_s = quantile_sorted(sorted, 0.5);
  s.p10_s = quantile_sorted(sorted, 0.1);
  s.p90_s = quantile_sorted(sorted, 0.9);
  const std::size_t tenth = std::max<std::size_t>(1, pass_s.size() / 10);
  s.first_tenth_s = median_of({pass_s.begin(), pass_s.begin() + static_cast<std::ptrdiff_t>(tenth)});
  s.last_tenth_s = median_of({pass_s.end() - static_cast<std::ptrdiff_t>(tenth), pass_s.end()});
  return s;
}

ClockStats summarize_states(const std::vector<GpuState>& states) {
  ClockStats c;
  std::vector<double> clocks, power;
  for (const GpuState& g : states) {
    if (!g.valid) continue;
    ++c.samples;
    clocks.push_back(g.sm_clock_mhz);
    power.push_back(g.power_w);
    c.max_sm_clock_mhz = std::max(c.max_sm_clock_mhz, g.max_sm_clock_mhz);
    c.temperature_max_c = std::max(c.temperature_max_c, g.temperature_c);
    c.slowdown_reasons |= g.event_reasons & kNvmlSlowdownReasons;
  }
  if (c.samples == 0) return c;
  c.sm_clock_median_mhz = median_of(clocks);
  c.sm_clock_min_mhz = *std::min_element(clocks.begin(), clocks.end());
  c.power_median_w = median_of(power);
  c.power_max_w = *std::max_element(power.begin(), power.end());
  return c;
}

}  // namespace calisim::profiler
