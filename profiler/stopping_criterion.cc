#include "profiler/stopping_criterion.h"

#include <cmath>

namespace calisim::profiler {

std::string_view to_string(StopReason r) {
  switch (r) {
    case StopReason::running: return "running";
    case StopReason::converged: return "converged";
    case StopReason::sample_cap: return "sample_cap";
    case StopReason::time_budget: return "time_budget";
  }
  return "running";
}

void StdRelCriterion::add(double sample_s) {
  ++n_;
  const double delta = sample_s - mean_;
  mean_ += delta / static_cast<double>(n_);
  m2_ += delta * (sample_s - mean_);
}

double StdRelCriterion::rel_stddev() const {
  if (n_ < 2 || mean_ <= 0) return INFINITY;
  return std::sqrt(m2_ / static_cast<double>(n_ - 1)) / mean_;
}

StopReason StdRelCriterion::check(double elapsed_wall_s) const {
  if (n_ >= rule_.max_samples) return StopReason::sample_cap;
  if (n_ >= 3 && elapsed_wall_s >= 4 * rule_.time_budget_s) return StopReason::time_budget;
  if (n_ < rule_.min_samples) return StopReason::running;
  if (rel_stddev() < rule_.max_rel_stddev) return StopReason::converged;
  if (elapsed_wall_s >= rule_.time_budget_s) return StopReason::time_budget;
  return StopReason::running;
}

}  // namespace calisim::profiler
