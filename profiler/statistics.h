// Sample statistics of one measurement: median, min, p90, mean, standard deviation, n.
//
// Contract: summarize() takes the per-sample times in seconds (any order) and never modifies the
// caller's vector; it throws std::invalid_argument when there are no samples or one is negative
// or not finite. Percentiles interpolate linearly between order statistics (numpy's default), so
// p90 of {1..10} is 9.1. stddev is the sample standard deviation (n - 1), 0 for one sample.
#pragma once

#include <cstdint>
#include <vector>

#include "db/records.h"

namespace calisim::profiler {

struct SampleSummary {
  double median_s = 0, min_s = 0, max_s = 0, mean_s = 0, p90_s = 0, stddev_s = 0;
  std::int64_t n = 0;
  // stddev / mean: the spread the stopping rule compares with its threshold.
  double rel_stddev() const { return mean_s > 0 ? stddev_s / mean_s : 0.0; }
  db::SampleStats to_stats() const { return db::SampleStats{median_s, min_s, p90_s, stddev_s, n}; }
};

SampleSummary summarize(const std::vector<double>& samples_s);

// The q-quantile (0 <= q <= 1) of sorted values by linear interpolation; requires non-empty input.
double quantile_sorted(const std::vector<double>& sorted, double q);

}  // namespace calisim::profiler
