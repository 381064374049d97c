// profiler/collective_matching.h: collective calls of several ranks' traces matched call by call,
// each timed as the fastest rank's (the last to arrive waits least).
#include "profiler/collective_matching.h"

#include <gtest/gtest.h>

namespace calisim::profiler {
namespace {

TracedOperator collective(CollectiveOp op, std::int64_t bytes, std::vector<std::int64_t> group, double s) {
  TracedOperator t;
  t.name = "record_param_comms";
  t.key.kind = OperatorKey::Kind::collective;
  t.key.collective.op = op;
  t.key.collective.bytes = bytes;
  t.key.collective.ranks = static_cast<int>(group.size());
  t.key.group_ranks = std::move(group);
  t.gpu_s = s;
  return t;
}

TracedOperator gemm(double s) {
  TracedOperator t;
  t.name = "aten::mm";
  t.key.kind = OperatorKey::Kind::gemm;
  t.gpu_s = s;
  return t;
}

// Two ranks, each: a GEMM, then two all-reduces of one group and key (occurrences 0 and 1), an
// all-gather, and (rank 0 only) a reduce-scatter nobody else ran. The k-th all-reduce of each rank
// is the same collective; each is timed as the faster rank's call.
TEST(CollectiveMatching, EachInstanceTakesTheFastestRanksTime) {
  const std::vector<std::int64_t> g{1, 0};  // the group's order does not matter
  const std::vector<TracedOperator> r0{gemm(1e-3), collective(CollectiveOp::all_reduce, 1 << 20, {0, 1}, 500e-6),
                                       collective(CollectiveOp::all_reduce, 1 << 20, {0, 1}, 120e-6),
                                       collective(CollectiveOp::all_gather, 1 << 22, {0, 1}, 300e-6),
                                       collective(CollectiveOp::reduce_scatter, 1 << 22, {0, 1}, 900e-6)};
  const std::vector<TracedOperator> r1{collective(CollectiveOp::all_reduce, 1 << 20, g, 100e-6),
                                       gemm(2e-3), collective(CollectiveOp::all_reduce, 1 << 20, g, 110e-6),
                                       collective(CollectiveOp::all_gather, 1 << 22, g, 320e-6)};
  const CollectiveMatching m = match_collectives({{0, &r0}, {1, &r1}});
  EXPECT_TRUE(m.refused.empty()) << m.refused;
  EXPECT_EQ(m.ranks, 2);
  EXPECT_EQ(m.calls, 7);
  EXPECT_EQ(m.matched_calls, 6);
  ASSERT_EQ(m.matched_s.size(), 2u);
  // Rank 0: operator 1 (first all-reduce) 500 -> 100 us, operator 2 (second) 120 -> 110, the
  // all-gather keeps its own 300 (the faster), the unmatched reduce-scatter is not listed.
  EXPECT_DOUBLE_EQ(m.matched_s[0].at(1), 100e-6);
  EXPECT_DOUBLE_EQ(m.matched_s[0].at(2), 110e-6);
  EXPECT_DOUBLE_EQ(m.matched_s[0].at(3), 300e-6);
  EXPECT_EQ(m.matched_s[0].count(4), 0u);
  EXPECT_EQ(m.matched_s[0].count(0), 0u) << "GEMMs are not collectives";
  EXPECT_DOUBLE_EQ(m.matched_s[1].at(0), 100e-6);
  EXPECT_DOUBLE_EQ(m.matched_s[1].at(2), 110e-6);
  EXPECT_DOUBLE_EQ(m.matched_s[1].at(3), 300e-6);
  EXPECT_NEAR(m.wait_removed_s, (500 - 100) * 1e-6 + (120 - 110) * 1e-6 + (320 - 300) * 1e-6, 1e-12);
}

TEST(CollectiveMatching, NothingIsMatchedWithoutDistinctRanks) {
  const std::vector<TracedOperator> a{collective(CollectiveOp::all_reduce, 1 << 20, {0, 1}, 500e-6)};
  const std::vector<TracedOperator> b{collective(CollectiveOp::all_reduce, 1 << 20, {0, 1}, 100e-6)};
  const CollectiveMatching same = match_collectives({{0, &a}, {0, &b}});
  EXPECT_NE(same.refused.find("two traces of rank 0"), std::string::npos) << same.refused;
  EXPECT_EQ(same.matched_calls, 0);
  EXPECT_TRUE(same.matched_s[0].empty() && same.matched_s[1].empty());
  const CollectiveMatching unnamed = match_collectives({{-1, &a}, {1, &b}});
  EXPECT_NE(unnamed.refused.find("names no rank"), std::string::npos) << unnamed.refused;
  const CollectiveMatching one = match_collectives({{0, &a}});
  EXPECT_NE(one.refused.find("fewer than two ranks"), std::string::npos) << one.refused;
  // A collective without its group's ranks cannot be placed in an instance: it takes no part.
  std::vector<TracedOperator> ungrouped{collective(CollectiveOp::all_reduce, 1 << 20, {}, 100e-6)};
  const CollectiveMatching none = match_collectives({{0, &a}, {1, &ungrouped}});
  EXPECT_EQ(none.calls, 1);
  EXPECT_NE(none.refused.find("fewer than two ranks"), std::string::npos) << none.refused;
}

}  // namespace
}  // namespace calisim::profiler
