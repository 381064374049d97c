// Rank placement: domain occupancy per rank order against hand-worked rank layouts, and the
// strategy's `order` field (parsing, Megatron's pipeline-group rule).
#include "simulator/rank_placement.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <set>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/search_space.h"
#include "test_support.h"

namespace calisim {
namespace {

RankOrder order(const std::string& text) {
  std::string why;
  const auto o = parse_rank_order(text, &why);
  EXPECT_TRUE(o.has_value()) << why;
  return o.value_or(kMegatronRankOrder);
}

// A strategy with the given sizes (dp and edp derived as validate_layout would).
StrategyConfig sized(int world, int tp, int cp, int pp, int ep, int etp, const std::string& ord) {
  StrategyConfig s;
  s.world_size = world;
  s.tp_size = tp, s.cp_size = cp, s.pp_size = pp, s.ep_size = ep, s.etp_size = etp;
  s.dp_size = world / (tp * cp * pp);
  s.edp_size = world / (ep * etp * pp);
  s.rank_order = order(ord);
  return s;
}

// Counts, by listing every rank, how many members of rank 0's group lie in ranks [0, block):
// the mixed-radix numbering written out, independent of ranks_per_block's capacity walk.
int enumerate(const RankOrder& o, const std::array<int, kParallelDimCount>& sizes, unsigned mask, int block) {
  int world = 1;
  for (int n : sizes) world *= n;
  int count = 0;
  for (int r = 0; r < std::min(block, world); ++r) {
    int rest = r;
    bool in_group = true;
    for (ParallelDim d : o) {
      const int n = sizes[static_cast<int>(d)];
      const int coord = rest % n;
      rest /= n;
      if (!(mask & (1u << static_cast<int>(d))) && coord != 0) in_group = false;
    }
    count += in_group;
  }
  return count;
}

TEST(RankPlacement, ParsesAndPrintsMegatronOrders) {
  EXPECT_EQ(to_string(kMegatronRankOrder), "tp-cp-ep-dp-pp");
  EXPECT_EQ(to_string(order("tp-cp-ep-pp-dp")), "tp-cp-ep-pp-dp");
  std::string why;
  EXPECT_FALSE(parse_rank_order("tp-cp-ep-dp", &why));
  EXPECT_NE(why.find("lacks pp"), std::string::npos) << why;
  EXPECT_FALSE(parse_rank_order("tp-cp-ep-dp-tp", &why));
  EXPECT_NE(why.find("'tp' appears twice"), std::string::npos) << why;
  EXPECT_FALSE(parse_rank_order("tp-cp-ep-dp-xx", &why));
  EXPECT_NE(why.find("unknown dimension 'xx'"), std::string::npos) << why;
  EXPECT_FALSE(parse_rank_order("", &why));
  const auto all = all_rank_orders();
  EXPECT_EQ(all.size(), 120u);
  EXPECT_EQ(all.front(), kMegatronRankOrder);
  EXPECT_EQ(std::set<RankOrder>(all.begin(), all.end()).size(), 120u);
  EXPECT_EQ(rank_order_list("tp_first").size(), 24u);
  EXPECT_EQ(rank_order_list("megatron").size(), 1u);
  EXPECT_THROW(rank_order_list("bogus"), std::invalid_argument);
}

// Hand-worked: 64 GPUs in HGX nodes of 8 (domain 8).
TEST(RankPlacement, HandWorkedHgxLayouts) {
  // tp 2, cp 2, dp 4, pp 4 in Megatron's order: ranks 0..7 = tp×cp×(dp 0,1). TP and CP pairs sit
  // in one node, the dp·cp group (8 ranks: cp 2 × dp 4, stride 2) has 4 in the node: cp 2 × dp 2;
  // pipeline neighbours are tp·cp·dp = 16 ranks apart: different nodes.
  StrategyConfig s = sized(64, 2, 2, 4, 1, 1, "tp-cp-ep-dp-pp");
  RankPlacement p = place_ranks(s, 8);
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.cp, 2);
  EXPECT_EQ(p.dense_dp, 4);
  EXPECT_EQ(p.pp, 1);
  EXPECT_EQ(p.pp_next, 1);
  EXPECT_EQ(pipeline_stride(s), 16);
  EXPECT_EQ(domain_summary(p, s.rank_order), "tp2+cp2+dp2");
  // DP before CP: ranks 0..7 = tp × dp 0..3; CP partners are 8 apart (other node).
  s.rank_order = order("tp-dp-cp-ep-pp");
  p = place_ranks(s, 8);
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.cp, 1);
  EXPECT_EQ(p.dense_dp, 4);
  EXPECT_EQ(domain_summary(p, s.rank_order), "tp2+dp4");
  // PP right after TP: stages 2 apart, four stages per node; CP and DP leave the node.
  s.rank_order = order("tp-pp-cp-ep-dp");
  p = place_ranks(s, 8);
  EXPECT_EQ(p.pp, 4);
  EXPECT_EQ(p.pp_next, 2);
  EXPECT_EQ(p.pp_ends, 2);  // first and last stage 6 ranks apart
  EXPECT_EQ(p.cp, 1);
  EXPECT_EQ(p.dense_dp, 1);
  // TP not fastest: with dp 4 fastest, TP partners are 4 apart (same node), CP partners 8 apart.
  s.rank_order = order("dp-tp-cp-ep-pp");
  p = place_ranks(s, 8);
  EXPECT_EQ(p.tp, 2);
  EXPECT_EQ(p.dense_dp, 4);
  EXPECT_EQ(p.cp, 1);
}

TEST(RankPlacement, HandWorkedNvl72AndMoe) {
  // NVL72, tp 8, dp 16 (Megatron's order): 72 / 8 = 9 DP replicas per domain (the first domain).
  StrategyConfig s = sized(128, 8, 1, 1, 1, 1, "tp-cp-ep-dp-pp");
  EXPECT_EQ(place_ranks(s, 72).dense_dp, 9);
  EXPECT_EQ(place_ranks(s, 72).tp, 8);
  // MoE, 64 GPUs, tp 2, pp 2, ep 8, etp 1: expert view (etp 1, ep 8, edp 4, pp 2). Megatron's
  // order puts all 8 EP ranks in one node; ordering dp before ep puts the 4 EDP ranks there and
  // only 2 EP ranks.
  s = sized(64, 2, 1, 2, 8, 1, "tp-cp-ep-dp-pp");
  RankPlacement p = place_ranks(s, 8);
  EXPECT_EQ(p.ep, 8);
  EXPECT_EQ(p.expert_dp, 1);
  EXPECT_EQ(p.etp, 1);
  s.rank_order = order("tp-cp-dp-ep-pp");
  p = place_ranks(s, 8);
  EXPECT_EQ(p.expert_dp, 4);
  EXPECT_EQ(p.ep, 2);
  EXPECT_EQ(pipeline_stride(s), expert_pipeline_stride(s));  // both 32
  // pp before ep in the expert view but after dp in the dense view: different pipeline groups.
  s.rank_order = order("tp-cp-dp-pp-ep");
  EXPECT_NE(pipeline_stride(s), expert_pipeline_stride(s));
}

// The capacity walk equals counting the ranks for every order, group and block size on
// power-of-two layouts (where every domain holds the same share of a group).
TEST(RankPlacement, CapacityWalkEqualsEnumerationOnPowerOfTwoLayouts) {
  const std::array<std::array<int, kParallelDimCount>, 4> layouts{{{2, 2, 1, 4, 2}, {4, 1, 2, 2, 2}, {8, 2, 1, 2, 1},
                                                                   {1, 4, 4, 2, 2}}};
  int checked = 0;
  for (const auto& sizes : layouts) {
    for (const RankOrder& o : all_rank_orders()) {
      for (unsigned mask = 1; mask < (1u << kParallelDimCount); ++mask) {
        for (int block : {1, 2, 4, 8, 16, 64}) {
          ASSERT_EQ(ranks_per_block(o, sizes, mask, block), enumerate(o, sizes, mask, block))
              << to_string(o) << " mask " << mask << " block " << block;
          ++checked;
        }
      }
    }
  }
  EXPECT_EQ(checked, 4 * 120 * 31 * 6);
}

TEST(RankPlacement, StrategyOrderFieldIsValidated) {
  const ModelConfig dense = testing_support::shipped_model("llama3-8b");
  const StrategyConfig s = testing_support::strategy_from_json(
      R"({"seq_len": 4096, "world_size": 16, "tp_size": 2, "pp_size": 2, "global_batch_size": 8, "order": "tp-dp-cp-ep-pp"})",
      dense);
  EXPECT_EQ(to_string(s.rank_order), "tp-dp-cp-ep-pp");
  try {
    parse_strategy(nlohmann::json::parse(R"({"seq_len": 4096, "global_batch_size": 8, "order": "tp-dp-cp-pp"})"),
                   "s.json");
    FAIL() << "expected an InputError";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("order"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("lacks ep"), std::string::npos) << e.what();
  }
  // MoE: an order giving dense and expert layers different pipeline groups is rejected.
  const ModelConfig moe = testing_support::small_moe();
  EXPECT_NO_THROW(testing_support::strategy_from_json(
      R"({"seq_len": 4096, "world_size": 16, "tp_size": 2, "pp_size": 2, "ep_size": 4,
          "global_batch_size": 8, "order": "tp-cp-dp-ep-pp"})",
      moe));
  EXPECT_THROW(testing_support::strategy_from_json(
                   R"({"seq_len": 4096, "world_size": 16, "tp_size": 2, "pp_size": 2, "ep_size": 4,
                       "global_batch_size": 8, "order": "tp-cp-dp-pp-ep"})",
                   moe),
               InputError);
}

}  // namespace
}  // namespace calisim
