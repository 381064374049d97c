#include "profiler/statistics.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace calisim::profiler {

double quantile_sorted(const std::vector<double>& sorted, double q) {
  if (sorted.empty()) throw std::invalid_argument("quantile of no samples");
  const double pos = std::clamp(q, 0.0, 1.0) * static_cast<double>(sorted.size() - 1);
  const auto lo = static_cast<std::size_t>(std::floor(pos));
  const std::size_t hi = std::min(lo + 1, sorted.size() - 1);
  const double frac = pos - static_cast<double>(lo);
  return sorted[lo] + (sorted[hi] - sorted[lo]) * frac;
}

SampleSummary summarize(const std::vector<double>& samples_s) {
  if (samples_s.empty()) throw std::invalid_argument("no samples to summarize");
  for (double v : samples_s) {
    if (!std::isfinite(v) || v < 0) throw std::invalid_argument("sample time is negative or not finite");
  }
  std::vector<double> s = samples_s;
  std::sort(s.begin(), s.end());
  SampleSummary r;
  r.n = static_cast<std::int64_t>(s.size());
  r.min_s = s.front();
  r.max_s = s.back();
  r.median_s = quantile_sorted(s, 0.5);
  r.p90_s = quantile_sorted(s, 0.9);
  double sum = 0;
  for (double v : s) sum += v;
  r.mean_s = sum / static_cast<double>(s.size());
  if (s.size() > 1) {
    double ss = 0;
    for (double v : s) ss += (v - r.mean_s) * (v - r.mean_s);
    r.stddev_s = std::sqrt(ss / static_cast<double>(s.size() - 1));
  }
  return r;
}

}  // namespace calisim::profiler
