// The flex (DeepEP / HybridEP) token dispatcher (simulator/flex_dispatch.h): the distinct-group
// expectation against enumeration, the bytes per fabric, the exchange time, the SM-share overlap
// slowdown, the MoE layer's op list, the config fields and their errors, and end to end against
// the all-to-all dispatcher.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "simulator/flex_dispatch.h"
#include "simulator/host_dispatch.h"
#include "simulator/layer_ops.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::find_op;
using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

// Exact expectation by enumerating every k-subset of E experts (E/groups consecutive experts per group).
double enumerate_groups_hit(int E, int k, int groups) {
  const int per = E / groups;
  double total = 0;
  long long subsets = 0;
  std::vector<int> pick(k);
  for (int i = 0; i < k; ++i) pick[i] = i;
  while (true) {
    std::set<int> hit;
    for (int e : pick) hit.insert(e / per);
    total += static_cast<double>(hit.size());
    ++subsets;
    int i = k - 1;
    while (i >= 0 && pick[i] == E - k + i) --i;
    if (i < 0) break;
    ++pick[i];
    for (int j = i + 1; j < k; ++j) pick[j] = pick[j - 1] + 1;
  }
  return total / static_cast<double>(subsets);
}

TEST(FlexDispatch, DistinctGroupsMatchEnumeration) {
  for (const auto& [E, k, g] : std::vector<std::array<int, 3>>{{8, 2, 4}, {16, 4, 4}, {16, 3, 8}, {12, 5, 3}, {20, 6, 5}}) {
    EXPECT_NEAR(expected_groups_hit(E, k, g), enumerate_groups_hit(E, k, g), 1e-9) << E << " " << k << " " << g;
  }
  EXPECT_DOUBLE_EQ(expected_groups_hit(256, 8, 1), 1.0);
  EXPECT_NEAR(expected_groups_hit(8, 8, 4), 4.0, 1e-12) << "every group holds one of all the experts";
  EXPECT_NEAR(expected_groups_hit(64, 1, 8), 1.0, 1e-12);
  // Qwen3-30B-A3B at ep 8: 128 experts, top 8, 16 per rank -> 8 (1 - C(112,8)/C(128,8)) = 5.34
  // ranks per token, not 8 copies.
  EXPECT_NEAR(expected_groups_hit(128, 8, 8), 5.34, 0.005);
}

TEST(FlexDispatch, BytesPerFabric) {
  const double T = 4096, b = 2048 * 2.0;
  // One NVLink domain of 8: no RDMA; each token reaches D_r ranks, 7/8 of them remote.
  const FlexExchange in = flex_exchange(T, b, 128, 8, 8, 8, 1.0);
  const double dr = expected_groups_hit(128, 8, 8);
  EXPECT_DOUBLE_EQ(in.rdma_bytes, 0);
  EXPECT_DOUBLE_EQ(in.nvlink_bytes, T * b * dr * 7 / 8);
  EXPECT_DOUBLE_EQ(in.received_tokens, T * dr);
  // 64 ranks over 8 domains of 8, 256 experts top 8 (DeepSeek-V3 shape): one RDMA copy per remote
  // domain, NVLink fan-out inside each domain; the busiest rank's load scales both.
  const FlexExchange out = flex_exchange(T, b, 256, 8, 64, 8, 1.25);
  const double dn = expected_groups_hit(256, 8, 8), dr64 = expected_groups_hit(256, 8, 64);
  EXPECT_DOUBLE_EQ(out.rdma_bytes, T * b * dn * 7 / 8 * 1.25);
  EXPECT_DOUBLE_EQ(out.nvlink_bytes, T * b * dr64 * 7 / 8 * 1.25);
  EXPECT_DOUBLE_EQ(out.received_tokens, T * dr64 * 1.25);
  EXPECT_LT(dn, 8.0);
}

TEST(FlexDispatch, ExchangeTimeIsTheSlowerFabricPlusLatencies) {
  const SystemConfig h100 = shipped_system("h100-sxm");
  FlexExchange x;
  x.ep = 64, x.ep_per_domain = 8;
  x.nvlink_bytes = 100e6;
  x.rdma_bytes = 40e6;
  const double nvl = 100e6 / (h100.scale_up.gpu_gb_s * 1e9 * kFlexNvlinkEfficiency);
  const double rdma = 40e6 / (h100.scale_out.gpu_gb_s * 1e9 * kFlexRdmaEfficiency);
  const double lat = (h100.scale_up.latency_us + h100.scale_out.latency_us) * 1e-6;
  EXPECT_DOUBLE_EQ(flex_exchange_s(x, h100), std::max(nvl, rdma) + lat);
  EXPECT_GT(rdma, nvl) << "50 GB/s NICs bound this exchange";
  x.ep = x.ep_per_domain = 8;
  x.rdma_bytes = 0;
  EXPECT_DOUBLE_EQ(flex_exchange_s(x, h100), nvl + h100.scale_up.latency_us * 1e-6);
  x.ep = x.ep_per_domain = 1;
  EXPECT_DOUBLE_EQ(flex_exchange_s(x, h100), 0);
}

TEST(FlexDispatch, OverlapSlowdownIsTheShareOfSms) {
  const ModelConfig m = testing_support::small_moe();
  const SystemConfig h100 = shipped_system("h100-sxm");
  const std::string base = R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 4, )";
  const StrategyConfig deepep = strategy_from_json(base + R"("moe_token_dispatcher_type": "flex"})", m);
  EXPECT_EQ(deepep.flex_num_sms, 20) << "Megatron --moe-deepep-num-sms default";
  EXPECT_DOUBLE_EQ(flex_overlap_slowdown(deepep, h100), 20.0 / h100.device.sm_count);
  const StrategyConfig hybrid = strategy_from_json(
      base + R"("moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep"})", m);
  EXPECT_EQ(hybrid.flex_backend, FlexBackend::hybridep);
  EXPECT_EQ(hybrid.flex_num_sms, 16) << "Megatron --moe-hybridep-num-sms default";
  const StrategyConfig sms = strategy_from_json(
      base + R"("moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "hybridep",
                "moe_hybridep_num_sms": 32})", m);
  EXPECT_DOUBLE_EQ(flex_overlap_slowdown(sms, h100), 32.0 / h100.device.sm_count);
  const StrategyConfig a2a = strategy_from_json(base + R"("moe_token_dispatcher_type": "alltoall"})", m);
  EXPECT_DOUBLE_EQ(flex_overlap_slowdown(a2a, h100), h100.comm_compute_slowdown);
}

TEST(FlexDispatch, ConfigFieldsAndErrors) {
  const ModelConfig m = testing_support::small_moe();
  const std::string base = R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 4, )";
  EXPECT_EQ(strategy_from_json(base + R"("moe_dispatcher_policy": "flex"})", m).moe_dispatcher, MoeDispatcher::flex);
  EXPECT_EQ(strategy_from_json(base + R"("moe_enable_deepep": true})", m).moe_dispatcher, MoeDispatcher::flex);
  auto problem = [&](const std::string& fields) {
    try {
      strategy_from_json(base + fields + "}", m);
    } catch (const InputError& e) {
      return std::string(e.where()) + ": " + e.problem();
    }
    return std::string("no error");
  };
  EXPECT_NE(problem(R"("moe_flex_dispatcher_backend": "hybridep")").find("applies to the flex dispatcher only"),
            std::string::npos);
  EXPECT_NE(problem(R"("moe_token_dispatcher_type": "flex", "moe_flex_dispatcher_backend": "nccl")")
                .find(R"(expected "deepep" or "hybridep")"),
            std::string::npos);
  EXPECT_NE(problem(R"("moe_token_dispatcher_type": "flex", "moe_hybridep_num_sms": 24)")
                .find("other flex backend"),
            std::string::npos);
  EXPECT_NE(problem(R"("moe_token_dispatcher_type": "flex", "moe_deepep_num_sms": 2.5)").find("whole number"),
            std::string::npos);
  EXPECT_NE(problem(R"("moe_token_dispatcher_type": "alltoall", "moe_enable_deepep": true)")
                .find("needs the flex dispatcher"),
            std::string::npos);
  EXPECT_NE(problem(R"("moe_token_dispatcher_type": "flex", "etp_size": 2)").find("etp_size: the flex"),
            std::string::npos);
  EXPECT_NE(problem(R"("moe_token_dispatcher_type": "allgather", "moe_shared_expert_overlap": true)")
                .find("alltoall (or flex) token dispatcher only"),
            std::string::npos);
  EXPECT_EQ(problem(R"("moe_token_dispatcher_type": "flex", "moe_shared_expert_overlap": true)"), "no error");
}

// Flex: the tokens travel unpermuted (no permute before the dispatch, no chunk sort), the local
// permute reads the deduplicated received tokens, and the exchanges carry no NCCL key.
TEST(FlexDispatch, MoeLayerOps) {
  const ModelConfig m = shipped_model("qwen3-30b-a3b");
  const StrategyConfig st = strategy_from_json(
      R"({"seq_len": 4096, "micro_batch_num": 4, "world_size": 8, "ep_size": 8, "moe_token_dispatcher_type": "flex"})",
      m);
  const ModelOps ops = build_model_ops(m, st, 8);
  std::vector<std::string> names;
  for (const LayerOp& op : ops.moe_layer) names.emplace_back(op.name);
  const auto at = [&](const char* n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  EXPECT_EQ(std::count(names.begin(), names.end(), "sort_chunks"), 0);
  EXPECT_LT(at("ep_dispatch"), at("permute"));
  EXPECT_LT(at("unpermute"), at("ep_combine"));
  const LayerOp* dispatch = find_op(ops.moe_layer, "ep_dispatch");
  ASSERT_TRUE(dispatch && dispatch->flex);
  EXPECT_FALSE(dispatch->fwd_comm.has_value());
  EXPECT_EQ(dispatch->comm_group, CommGroup::ep);
  const double T = 4096, b = m.hidden_size * 2.0, dr = expected_groups_hit(m.expert_num, m.topk, 8);
  EXPECT_DOUBLE_EQ(dispatch->flex->nvlink_bytes, T * b * dr * 7 / 8);
  // DeepEP's normal dispatch waits on the host for the received count: the layer's sync point is
  // the dispatch, as the all-to-all dispatcher's routing-count copy; none when padded to capacity.
  EXPECT_EQ(moe_sync_index(ops.moe_layer, st, true, false), at("ep_dispatch"));
  EXPECT_EQ(moe_sync_index(ops.moe_layer, st, true, true), -1);
  const LayerOp* permute = find_op(ops.moe_layer, "permute");
  ASSERT_TRUE(permute);
  EXPECT_DOUBLE_EQ(static_cast<double>(permute->mem_fwd.bytes), std::floor(T * dr * b + T * m.topk * b));
}

// Qwen3-30B-A3B on 8 H100 at ep 8 (one NVLink domain): the flex exchange moves ~5.3 copies of a
// token instead of 8 at 0.95 of NVLink against NCCL all-to-all's 0.70, so its exposed EP time is
// lower, and its layout copies are fewer (no chunk sort, the local permute reads the deduplicated
// tokens).
TEST(FlexDispatch, FasterThanAllToAllWithinOneDomain) {
  const ModelConfig m = shipped_model("qwen3-30b-a3b");
  const SystemConfig h100 = shipped_system("h100-sxm");
  const std::string base =
      R"({"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64, "world_size": 8, "ep_size": 8, )";
  const SimulationResult a2a =
      testing_support::simulate_roofline(m, base + R"("moe_token_dispatcher_type": "alltoall"})", h100);
  const SimulationResult flex =
      testing_support::simulate_roofline(m, base + R"("moe_token_dispatcher_type": "flex"})", h100);
  EXPECT_GT(a2a.ep_comm_exposed_s, 0);
  EXPECT_LT(flex.ep_comm_exposed_s, 0.75 * a2a.ep_comm_exposed_s);
  EXPECT_LT(flex.duration_time_per_iter_s, a2a.duration_time_per_iter_s);
  EXPECT_LT(flex.compute_s, a2a.compute_s) << "no chunk sort, and a permute of fewer tokens";
}

}  // namespace
}  // namespace calisim
