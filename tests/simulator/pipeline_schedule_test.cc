#include "simulator/pipeline_schedule.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

namespace calisim {
namespace {

PipelineResult run(int p, int v, int m, double F, double B, double p2p = 0) {
  static std::vector<double> f, b, a;
  f.assign(p * v, F / v);
  b.assign(p * v, B / v);
  a.assign(p * v, 1.0);
  PipelineSpec s{p, v, m, f, b, a, p2p};
  return simulate_pipeline(s, false);
}

TEST(PipelineSchedule, OneFOneBBubbleIsPMinusOneTimesFPlusB) {
  for (int p : {1, 2, 4, 8}) {
    for (int m : {p, 2 * p, 3 * p + 1}) {
      const PipelineResult r = run(p, 1, m, 1.0, 2.0);
      EXPECT_DOUBLE_EQ(r.makespan_s, (m + p - 1) * 3.0) << "p " << p << " m " << m;
      EXPECT_DOUBLE_EQ(r.rank_finish_s[0] - r.rank_busy_s[0], (p - 1) * 3.0);
      EXPECT_EQ(r.max_in_flight[0], std::min(p, m));
      EXPECT_EQ(r.max_in_flight[p - 1], 1);
    }
  }
}

TEST(PipelineSchedule, InterleavedBubbleShrinksByV) {
  for (int p : {2, 4, 8}) {
    for (int v : {2, 3, 5}) {
      const int m = 4 * p;
      const PipelineResult r = run(p, v, m, 1.0, 2.0);
      EXPECT_NEAR(r.makespan_s, m * 3.0 + (p - 1) * 3.0 / v, 1e-9) << "p " << p << " v " << v;
    }
  }
}

TEST(PipelineSchedule, InterleavedKeepsMoreChunksInFlight) {
  const int p = 4, v = 2, m = 8;
  const PipelineResult r = run(p, v, m, 1.0, 2.0);
  // Megatron's warm-up on rank 0: (p-1)*2 + (v-1)*p forwards before the first backward, plus one.
  EXPECT_EQ(r.max_in_flight[0], (p - 1) * 2 + (v - 1) * p + 1);
}

TEST(PipelineSchedule, P2pLatencySitsOnTheCriticalPath) {
  // Warm-up and cool-down each cross p-1 hops; in steady 1F1B every forward a rank runs after a
  // backward waits for the round trip too, so the extra time lies between 2(p-1) hops and one
  // hop per unit on the critical rank.
  for (int m : {4, 8, 16}) {
    const PipelineResult a = run(4, 1, m, 1.0, 2.0, 0.0);
    const PipelineResult b = run(4, 1, m, 1.0, 2.0, 0.1);
    const double extra = b.makespan_s - a.makespan_s;
    EXPECT_GE(extra, 2 * 3 * 0.1 - 1e-9) << m;
    EXPECT_LE(extra, 2 * (m + 3) * 0.1 + 1e-9) << m;
    EXPECT_GT(b.rank_p2p_wait_s[0], 0.0);
    EXPECT_EQ(a.rank_p2p_wait_s[0], 0.0);
  }
}

TEST(PipelineSchedule, EveryUnitRunsExactlyOnce) {
  const int p = 4, v = 3, m = 8;
  for (int r = 0; r < p; ++r) {
    std::set<std::tuple<int, int, bool>> seen;
    for (const ScheduleUnit& u : schedule_order(r, p, v, m)) {
      EXPECT_TRUE(seen.insert({u.chunk, u.micro_batch, u.forward}).second);
    }
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(2 * v * m));
  }
}

TEST(PipelineSchedule, UnevenStagesPaceTheSlowest) {
  std::vector<double> f{1.0, 2.0}, b{2.0, 4.0}, a{1.0, 1.0};
  PipelineSpec s{2, 1, 4, f, b, a, 0.0};
  const PipelineResult r = simulate_pipeline(s, true);
  // The slow stage runs back to back after its first input arrives: 1 + 4·(2+4) + its wait for
  // nothing else; rank 0 finishes after the last backward returns.
  EXPECT_DOUBLE_EQ(r.rank_finish_s[1], 1.0 + 4 * 6.0);
  EXPECT_DOUBLE_EQ(r.makespan_s, 1.0 + 4 * 6.0 + 2.0);
  EXPECT_EQ(r.events.size(), 16u);
}

}  // namespace
}  // namespace calisim
