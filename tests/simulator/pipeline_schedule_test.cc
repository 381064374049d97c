#include "simulator/pipeline_schedule.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>

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

// Megatron-Core's own example of its schedule table (schedules.py, get_schedule_table): pp 2,
// vpp 2, 5 micro-batches in groups of 3 run forwards as micro-batch 0 1 2 0 1 2 3 4 3 4 on model
// chunk 0 0 0 1 1 1 0 0 1 1; backwards take the same entries with the chunks reversed.
TEST(PipelineSchedule, MicroBatchGroupsFollowMegatronsTable) {
  const std::vector<int> mb{0, 1, 2, 0, 1, 2, 3, 4, 3, 4}, chunk{0, 0, 0, 1, 1, 1, 0, 0, 1, 1};
  std::vector<int> fwd_mb, fwd_chunk, bwd_mb, bwd_chunk;
  for (const ScheduleUnit& u : schedule_order(0, 2, 2, 5, 3)) {
    (u.forward ? fwd_mb : bwd_mb).push_back(u.micro_batch);
    (u.forward ? fwd_chunk : bwd_chunk).push_back(u.chunk);
  }
  EXPECT_EQ(fwd_mb, mb);
  EXPECT_EQ(fwd_chunk, chunk);
  EXPECT_EQ(bwd_mb, mb);
  std::vector<int> reversed;
  for (int c : chunk) reversed.push_back(1 - c);
  EXPECT_EQ(bwd_chunk, reversed);
  // Rank 0's warm-up, (p - 1)·2 + (v - 1)·g forwards, then the steady state's first forward come
  // before its first backward.
  const std::vector<ScheduleUnit> order = schedule_order(0, 2, 2, 5, 3);
  const auto first_bwd = std::find_if(order.begin(), order.end(), [](const ScheduleUnit& u) { return !u.forward; });
  EXPECT_EQ(first_bwd - order.begin(), 2 + 3 + 1);
}

// Every schedule Megatron accepts (p ≤ g ≤ m; m % g is 0 or at least p) runs to the end, each unit
// once, no faster than the work bound and no slower than plain 1F1B; the extra warm-up forward of
// the EP all-to-all overlap keeps one more micro-batch in flight.
TEST(PipelineSchedule, EveryLegalGroupSizeAndExtraWarmupRuns) {
  std::vector<double> f, b, a;
  int checked = 0;
  for (int p : {2, 3, 4, 6}) {
    for (int v : {2, 3}) {
      for (int m = p; m <= 3 * p + 2; ++m) {
        for (int g = p; g <= m; ++g) {
          if (m % g != 0 && m % g < p) continue;
          for (int extra : {0, 1}) {
            SCOPED_TRACE(fmt::format("p {} v {} m {} g {} extra {}", p, v, m, g, extra));
            f.assign(p * v, 1.0 / v);
            b.assign(p * v, 2.0 / v);
            a.assign(p * v, 1.0);
            PipelineSpec s{p, v, m, f, b, a, 0.01};
            s.group = g;
            s.extra_warmup = extra;
            const PipelineResult r = simulate_pipeline(s, false);
            EXPECT_GE(r.makespan_s, pipeline_lower_bound_s(s) - 1e-9);
            EXPECT_LE(r.makespan_s, (m + p - 1) * (3.0 + 2 * 0.01) + 1e-9);
            const int warmup = std::min(2 * (p - 1) + (v - 1) * g + extra, m * v);
            EXPECT_EQ(r.max_in_flight[0], warmup == m * v ? warmup : warmup + 1);
            for (int rank = 0; rank < p; ++rank) {
              std::set<std::tuple<int, int, bool>> seen;
              for (const ScheduleUnit& u : schedule_order(rank, p, v, m, g, extra)) {
                EXPECT_TRUE(seen.insert({u.chunk, u.micro_batch, u.forward}).second);
              }
              EXPECT_EQ(seen.size(), static_cast<std::size_t>(2 * v * m));
            }
            ++checked;
          }
        }
      }
    }
  }
  EXPECT_GT(checked, 200);
}

// A larger group only moves micro-batches earlier into the warm-up: with the default group (p) the
// schedule is unchanged, and the time with equal stages stays within the interleaved bubble.
TEST(PipelineSchedule, DefaultGroupIsPipelineSize) {
  std::vector<double> f(8, 0.5), b(8, 1.0), a(8, 1.0);
  PipelineSpec dflt{4, 2, 8, f, b, a, 0.0};
  PipelineSpec explicit_p = dflt;
  explicit_p.group = 4;
  EXPECT_DOUBLE_EQ(simulate_pipeline(dflt, false).makespan_s, simulate_pipeline(explicit_p, false).makespan_s);
  EXPECT_NEAR(simulate_pipeline(dflt, false).makespan_s, 8 * 3.0 + 3 * 3.0 / 2, 1e-9);
  PipelineSpec wide = dflt;
  wide.group = 8;
  const PipelineResult r = simulate_pipeline(wide, false);
  EXPECT_EQ(r.max_in_flight[0], 2 * 3 + 8 + 1);
  EXPECT_GT(r.max_in_flight[0], simulate_pipeline(dflt, false).max_in_flight[0]);
}

// Megatron's EP all-to-all overlap pairs each steady-state forward with a backward of another
// micro-batch; warm-up forwards and cool-down backwards run alone and pay the hidden all-to-all.
// Without a pipeline its combined schedule runs the first forward and the last backward alone
// (and holds two micro-batches); interleaved, each rank runs `warm-up` of each.
TEST(PipelineSchedule, UnpairedUnitsPayTheirExtra) {
  {
    std::vector<double> f{1.0}, b{2.0}, a{1.0}, fx{0.25}, bx{0.5};
    PipelineSpec s{1, 1, 6, f, b, a, 0.0};
    s.extra_warmup = 1;
    s.fwd_unpaired_extra_s = fx;
    s.bwd_unpaired_extra_s = bx;
    const PipelineResult r = simulate_pipeline(s, false);
    EXPECT_DOUBLE_EQ(r.makespan_s, 6 * 3.0 + 0.25 + 0.5);
    EXPECT_DOUBLE_EQ(r.rank_unpaired_extra_s[0], 0.75);
    EXPECT_EQ(r.max_in_flight[0], 2);
    s.extra_warmup = 0;  // without the overlap's warm-up forward every unit is paired
    s.fwd_unpaired_extra_s = {};
    s.bwd_unpaired_extra_s = {};
    EXPECT_DOUBLE_EQ(simulate_pipeline(s, false).makespan_s, 18.0);
    EXPECT_EQ(simulate_pipeline(s, false).max_in_flight[0], 1);
  }
  const int p = 4, v = 2, m = 8;
  std::vector<double> f(p * v, 0.5), b(p * v, 1.0), a(p * v, 1.0), fx(p * v, 0.125), bx(p * v, 0.25);
  PipelineSpec s{p, v, m, f, b, a, 0.0};
  s.extra_warmup = 1;
  s.fwd_unpaired_extra_s = fx;
  s.bwd_unpaired_extra_s = bx;
  const PipelineResult with = simulate_pipeline(s, false);
  for (int rank = 0; rank < p; ++rank) {
    const int warmup = std::min(2 * (p - 1 - rank) + (v - 1) * p + 1, m * v);
    EXPECT_DOUBLE_EQ(with.rank_unpaired_extra_s[rank], warmup * (0.125 + 0.25)) << rank;
    EXPECT_DOUBLE_EQ(with.rank_busy_s[rank], m * v * 1.5 + warmup * 0.375) << rank;
  }
  s.fwd_unpaired_extra_s = {};
  s.bwd_unpaired_extra_s = {};
  EXPECT_GT(with.makespan_s, simulate_pipeline(s, false).makespan_s);
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
