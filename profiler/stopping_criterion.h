// When to stop taking samples of one kernel (nvbench's "stdrel" criterion, simplified).
//
// A measurement stops as soon as one of these holds, checked after each sample:
//   converged    - at least min_samples and the relative standard deviation of the samples
//                  (stddev / mean) is below max_rel_stddev;
//   sample_cap   - max_samples taken;
//   time_budget  - the wall time spent on this kernel (warm-up, flushes and timing included)
//                  reached time_budget_s with at least min_samples taken, or reached
//                  4 x time_budget_s with at least 3 (kernels so slow that min_samples would
//                  overrun the sweep's budget).
// A measurement that stops on the budget is still valid; its row says so (not converged).
// Pure: the caller feeds samples and the elapsed wall time; no clocks are read here.
#pragma once

#include <cstdint>
#include <string_view>

namespace calisim::profiler {

struct StoppingRule {
  int min_samples = 10;
  int max_samples = 2000;
  double max_rel_stddev = 0.01;  // 1 %
  double time_budget_s = 2.0;    // per kernel
};

enum class StopReason : std::uint8_t { running, converged, sample_cap, time_budget };
std::string_view to_string(StopReason r);

class StdRelCriterion {
 public:
  explicit StdRelCriterion(const StoppingRule& rule) : rule_(rule) {}

  // Adds one sample (seconds); Welford's update keeps mean and variance without storing samples.
  void add(double sample_s);
  // Whether to stop now, given the wall time spent so far on this kernel.
  StopReason check(double elapsed_wall_s) const;

  std::int64_t n() const { return n_; }
  double mean_s() const { return mean_; }
  double rel_stddev() const;

 private:
  StoppingRule rule_;
  std::int64_t n_ = 0;
  double mean_ = 0, m2_ = 0;
};

}  // namespace calisim::profiler
