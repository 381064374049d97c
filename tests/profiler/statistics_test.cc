#include "profiler/statistics.h"
#include "profiler/stopping_criterion.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace calisim::profiler {
namespace {

TEST(Statistics, MatchesHandComputedValues) {
  // 10 samples 1..10 in shuffled order: median 5.5, p90 9.1 (linear interpolation), min 1,
  // mean 5.5, sample stddev sqrt(82.5 / 9).
  const SampleSummary s = summarize({7, 3, 10, 1, 5, 9, 2, 8, 4, 6});
  EXPECT_EQ(s.n, 10);
  EXPECT_DOUBLE_EQ(s.median_s, 5.5);
  EXPECT_DOUBLE_EQ(s.min_s, 1);
  EXPECT_DOUBLE_EQ(s.max_s, 10);
  EXPECT_NEAR(s.p90_s, 9.1, 1e-12);
  EXPECT_DOUBLE_EQ(s.mean_s, 5.5);
  EXPECT_NEAR(s.stddev_s, std::sqrt(82.5 / 9), 1e-12);
  EXPECT_NEAR(s.rel_stddev(), std::sqrt(82.5 / 9) / 5.5, 1e-12);
  const db::SampleStats st = s.to_stats();
  EXPECT_EQ(st.n, 10);
  EXPECT_DOUBLE_EQ(st.p90_s, s.p90_s);
}

TEST(Statistics, OddCountMedianIsTheMiddleSample) {
  const SampleSummary s = summarize({3e-6, 1e-6, 2e-6});
  EXPECT_DOUBLE_EQ(s.median_s, 2e-6);
  EXPECT_DOUBLE_EQ(s.stddev_s, 1e-6);
}

TEST(Statistics, OneSampleHasNoSpread) {
  const SampleSummary s = summarize({4.0});
  EXPECT_EQ(s.n, 1);
  EXPECT_DOUBLE_EQ(s.p90_s, 4.0);
  EXPECT_DOUBLE_EQ(s.stddev_s, 0.0);
}

TEST(Statistics, RejectsEmptyNegativeAndNaN) {
  EXPECT_THROW(summarize({}), std::invalid_argument);
  EXPECT_THROW(summarize({1.0, -1.0}), std::invalid_argument);
  EXPECT_THROW(summarize({1.0, NAN}), std::invalid_argument);
}

TEST(StoppingRule, SteadySamplesConvergeAtTheMinimumCount) {
  StoppingRule rule;
  rule.min_samples = 10;
  StdRelCriterion c(rule);
  for (int i = 0; i < 9; ++i) {
    c.add(1e-3 * (1 + 0.001 * (i % 2)));
    EXPECT_EQ(c.check(0.0), StopReason::running) << i;
  }
  c.add(1e-3);
  EXPECT_EQ(c.check(0.0), StopReason::converged);
  EXPECT_LT(c.rel_stddev(), 0.01);
}

TEST(StoppingRule, NoisySamplesRunUntilTheBudget) {
  StoppingRule rule;
  rule.min_samples = 10;
  rule.time_budget_s = 1.0;
  StdRelCriterion c(rule);
  for (int i = 0; i < 50; ++i) c.add(i % 2 ? 1.0 : 1.5);  // ~20 % spread
  EXPECT_GT(c.rel_stddev(), 0.1);
  EXPECT_EQ(c.check(0.5), StopReason::running);
  EXPECT_EQ(c.check(1.0), StopReason::time_budget);
}

TEST(StoppingRule, SampleCapStopsEvenWhenNoisy) {
  StoppingRule rule;
  rule.min_samples = 2;
  rule.max_samples = 5;
  StdRelCriterion c(rule);
  for (int i = 0; i < 5; ++i) c.add(i % 2 ? 1.0 : 2.0);
  EXPECT_EQ(c.check(0.0), StopReason::sample_cap);
}

TEST(StoppingRule, SlowKernelsStopAfterThreeSamplesPastFourBudgets) {
  StoppingRule rule;
  rule.min_samples = 10;
  rule.time_budget_s = 1.0;
  StdRelCriterion c(rule);
  c.add(2.0);
  c.add(1.0);
  EXPECT_EQ(c.check(5.0), StopReason::running);  // two samples are not enough for any statistic
  c.add(3.0);
  EXPECT_EQ(c.check(3.9), StopReason::running);
  EXPECT_EQ(c.check(4.0), StopReason::time_budget);
}

}  // namespace
}  // namespace calisim::profiler
