#include "simulator/comm_model.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "simulator/data_parallel.h"
#include "simulator/default_efficiency.h"
#include "simulator/model_costs.h"
#include "simulator/overlap.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

TEST(CommModel, WireBytesFollowNcclTestsConventions) {
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::all_reduce, 800, 8), 2.0 * 7 / 8 * 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::all_gather, 800, 8), 7.0 / 8 * 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::reduce_scatter, 800, 8), 7.0 / 8 * 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::all_to_all, 800, 8), 7.0 / 8 * 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::send_recv, 800, 2), 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::all_reduce, 800, 1), 0);
}

TEST(CommModel, RanksPerDomainFromStride) {
  EXPECT_EQ(ranks_per_domain(8, 1, 8), 8);    // TP 8 inside an HGX node
  EXPECT_EQ(ranks_per_domain(16, 1, 8), 8);   // TP 16 spans two
  EXPECT_EQ(ranks_per_domain(64, 8, 8), 1);   // DP with TP 8: one rank per node
  EXPECT_EQ(ranks_per_domain(64, 2, 8), 4);   // DP with TP 2: four ranks per node
  EXPECT_EQ(ranks_per_domain(64, 8, 72), 9);  // NVL72
}

TEST(CommModel, RingSimpleIsNcclsAlphaBeta) {
  const SystemConfig sys = testing_support::shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const double S = 256e6;
  CollectiveChoiceMask ring_simple;
  ring_simple.algos = 1u << static_cast<int>(CollAlgo::ring);
  ring_simple.protos = 1u << static_cast<int>(CollProto::simple);
  // Inside the NVLink domain: NCCL's ring base latency 8.4 us + 2(n-1) hops of the tier latency,
  // bytes at the ring's algorithm bandwidth busbw · n / 2(n-1).
  CollectiveKey k{CollectiveOp::all_reduce, static_cast<std::int64_t>(S), 8, 8, DType::bf16};
  const double e_up = sys.scale_up.efficiency[0];
  const double expected =
      (8.4 + 14 * sys.scale_up.latency_us) * 1e-6 + 2.0 * 7 / 8 * S / (sys.scale_up.gpu_gb_s * 1e9 * e_up);
  const CollectiveCost c = collective_cost(k, sys, eff, ring_simple);
  EXPECT_NEAR(c.time_s, expected, expected * 1e-12);
  EXPECT_EQ(c.algo, CollAlgo::ring);
  EXPECT_EQ(c.proto, CollProto::simple);
  EXPECT_EQ(c.tier, CommTier::scale_up);
  EXPECT_NEAR(c.busbw_gb_s, S / expected * 1.75 / 1e9, 1e-9);
  // Across nodes with one rank per node: one NIC share per GPU, every step over the network.
  CollectiveKey x{CollectiveOp::reduce_scatter, static_cast<std::int64_t>(S), 16, 1, DType::bf16};
  const double nic = sys.nics_per_node * sys.nic_gb_s / sys.gpus_per_node;
  const double e_out = sys.scale_out.efficiency[static_cast<int>(CollectiveOp::reduce_scatter)];
  const double expected_x = (8.4 + 15 * sys.scale_out.latency_us) * 1e-6 + 15.0 / 16 * S / (nic * 1e9 * e_out);
  EXPECT_NEAR(collective_time_s(x, sys, eff, nullptr, ring_simple), expected_x, expected_x * 1e-12);
  // More ranks of the group per node get more NIC bandwidth (NCCL rails), capped by NVLink.
  CollectiveKey y = x;
  y.ranks_per_node = 8;
  EXPECT_LT(collective_time_s(y, sys, eff), collective_time_s(x, sys, eff));
  EXPECT_DOUBLE_EQ(collective_time_s({CollectiveOp::all_reduce, 1000, 1, 1, DType::bf16}, sys, eff), 0.0);
}

// The layer-cost cache (search.cc) reuses ModelCosts across strategies with equal LayerCostKey;
// the NCCL override changes every collective's cost, so it must be part of the key. A cache of
// the same shape (look up by key, else cost_model) must give each override its own, exact costs.
TEST(CommModel, NcclOverrideIsPartOfTheLayerCostKey) {
  const ModelConfig model = testing_support::shipped_model("llama3-8b");
  const SystemConfig sys = testing_support::shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const std::string base = R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8,
                               "tp_size": 8, "enable_sequence_parallel": true, "nccl_algo": "ring", )";
  const StrategyConfig simple = testing_support::strategy_from_json(base + R"("nccl_proto": "Simple"})", model);
  const StrategyConfig ll = testing_support::strategy_from_json(base + R"("nccl_proto": "LL"})", model);
  EXPECT_FALSE(layer_cost_key(simple) == layer_cost_key(ll));
  StrategyConfig same = simple;
  EXPECT_TRUE(layer_cost_key(simple) == layer_cost_key(same));

  std::vector<std::pair<LayerCostKey, ModelCosts>> cache;
  auto cached = [&](const StrategyConfig& st) -> const ModelCosts& {
    for (const auto& [k, c] : cache) {
      if (k == layer_cost_key(st)) return c;
    }
    cache.emplace_back(layer_cost_key(st), cost_model(model, st, sys, eff, false));
    return cache.back().second;
  };
  SimulateOptions opt;
  opt.details = false;
  const double t_simple = assemble(model, simple, sys, eff, cached(simple), opt).duration_time_per_iter_s;
  const double t_ll = assemble(model, ll, sys, eff, cached(ll), opt).duration_time_per_iter_s;
  EXPECT_EQ(cache.size(), 2u);
  EXPECT_DOUBLE_EQ(t_simple, simulate(model, simple, sys, eff, opt).duration_time_per_iter_s);
  EXPECT_DOUBLE_EQ(t_ll, simulate(model, ll, sys, eff, opt).duration_time_per_iter_s);
  // LL moves half its bytes as flags: MB-sized TP all-gathers and reduce-scatters are slower.
  EXPECT_GT(cached(ll).layer.tp_comm_fwd_s, 1.5 * cached(simple).layer.tp_comm_fwd_s);
  EXPECT_GT(t_ll, t_simple);
}

// Contention at simulation level (contention.h): the DP gradient reduction of a MoE model crosses
// the NICs and overlaps the backward. With the EP group spread over two scale-up domains its
// backward all-to-all shares those NICs, and the overlapped reduction is charged
// comm + min(comm, EP backward NIC time) before the bucketed overlap; with EP inside one domain
// nothing competes. c0, the reduction alone, is the exposed DP time without overlap.
TEST(CommModel, DpReductionContendsWithCrossDomainExpertAllToAll) {
  const ModelConfig m = testing_support::small_moe();
  SystemConfig sys = testing_support::shipped_system("h100-sxm");
  sys.scale_up_domain_size = 4;  // EP 8 spans two domains, EP 4 fits in one; DP 16 crosses either way
  DefaultEfficiencyModel eff(sys);
  double added[2] = {0, 0};
  for (int ep : {4, 8}) {
    const std::string base = R"({"seq_len": 2048, "micro_batch_num": 4, "world_size": 16, "etp_size": 1,
                                 "zero_state": 0, "ep_size": )" +
                             std::to_string(ep) + R"(, "overlap_grad_reduce": )";
    const StrategyConfig on = testing_support::strategy_from_json(base + "true}", m);
    const StrategyConfig off = testing_support::strategy_from_json(base + "false}", m);
    const SimulationResult r_off = simulate(m, off, sys, eff);
    const SimulationResult r_on = simulate(m, on, sys, eff);
    ASSERT_EQ(r_on.stages.size(), 1u);
    const StageReport& sr = r_on.stages[0];
    const double c0 = r_off.stages[0].dp_comm_s;
    ASSERT_GT(c0, 0);
    const double nic_s = ep == 8 ? sr.moe_layers * cost_model(m, on, sys, eff, false).moe_layer.ep_comm_bwd_s : 0.0;
    const double buckets = std::max(1.0, std::ceil(sr.params / bucket_params(on)));
    const double alone = bucketed_overlap_s(c0, sr.bwd_s_per_micro_batch, buckets, sys.comm_compute_slowdown);
    const double expected =
        bucketed_overlap_s(c0 + std::min(c0, nic_s), sr.bwd_s_per_micro_batch, buckets, sys.comm_compute_slowdown);
    EXPECT_NEAR(sr.dp_comm_s, expected, expected * 1e-12) << "ep " << ep;
    added[ep == 8] = sr.dp_comm_s - alone;
  }
  EXPECT_DOUBLE_EQ(added[0], 0.0);  // EP inside the domain: no NIC contention
  EXPECT_GT(added[1], 0.0);         // EP across domains: the DP reduction slows
}

// PCIe switches (docs/comm.md "PCIe switches"): a group crossing the switches gets at most
// pcie_bridge_gb_s / (node GPUs / its ranks in the node) of busbw; groups inside a switch, and
// systems without switches, are unchanged.
SystemConfig without_switches(SystemConfig sys) {
  sys.topology.pcie_switch_gpus = 0;
  sys.topology.pcie_bridge_gb_s = 0;
  return sys;
}

TEST(CommPcieSwitch, CrossingGroupsShareTheBridge) {
  const SystemConfig sys = testing_support::shipped_system("a100-pcie-80g");
  ASSERT_EQ(sys.topology.pcie_switch_gpus, 4);
  const double bridge = sys.topology.pcie_bridge_gb_s * 1e9;
  DefaultEfficiencyModel eff(sys);
  const double S = 1e9;
  // TP 4, DP 2: a 2-rank group with one rank per switch; 4 such groups cross at once.
  const CollectiveKey two{CollectiveOp::reduce_scatter, static_cast<std::int64_t>(S), 2, 2, DType::bf16};
  const CollectiveCost c2 = collective_cost(two, sys, eff, {}, 1);
  EXPECT_NEAR(c2.time_s, 0.5 * S / (bridge / 4), 1e-12);
  EXPECT_NEAR(c2.busbw_gb_s, sys.topology.pcie_bridge_gb_s / 4, 1e-9);
  // TP 2, DP 4: 2 ranks per switch, 2 groups cross.
  const CollectiveKey four{CollectiveOp::all_gather, static_cast<std::int64_t>(S), 4, 4, DType::bf16};
  const CollectiveCost c4 = collective_cost(four, sys, eff, {}, 2);
  EXPECT_NEAR(c4.time_s, 0.75 * S / (bridge / 2), 1e-12);
  EXPECT_NEAR(c4.busbw_gb_s, sys.topology.pcie_bridge_gb_s / 2, 1e-9);
  // The same groups inside one switch, with the placement unknown, or on a one-level system: the
  // model's own (faster) answer.
  const double free2 = collective_time_s(two, without_switches(sys), eff);
  EXPECT_LT(free2, c2.time_s);
  EXPECT_DOUBLE_EQ(collective_time_s(two, sys, eff, nullptr, {}, 2), free2);
  EXPECT_DOUBLE_EQ(collective_time_s(two, sys, eff, nullptr, {}, 0), free2);
  EXPECT_DOUBLE_EQ(collective_time_s(two, without_switches(sys), eff, nullptr, {}, 1), free2);
  EXPECT_DOUBLE_EQ(collective_time_s(four, sys, eff, nullptr, {}, 4), collective_time_s(four, without_switches(sys), eff));
  // One 8-rank group crosses alone: the whole bridge, above the model's 8-GPU PCIe busbw.
  const CollectiveKey eight{CollectiveOp::all_reduce, static_cast<std::int64_t>(S), 8, 8, DType::bf16};
  EXPECT_DOUBLE_EQ(collective_time_s(eight, sys, eff, nullptr, {}, 4), collective_time_s(eight, without_switches(sys), eff));
}

// A database answer is keyed without the switch placement: the bridge share caps it when it is
// faster, and leaves it when it is slower.
class FixedCollectiveModel final : public EfficiencyModel {
 public:
  FixedCollectiveModel(const SystemConfig& sys, double value) : base_(sys), value_(value) {}
  Efficiency gemm(const GemmKey& k) const override { return base_.gemm(k); }
  Efficiency attention(const AttentionKey& k) const override { return base_.attention(k); }
  Efficiency memory_op(const MemoryOpKey& k) const override { return base_.memory_op(k); }
  Efficiency collective(const CollectiveKey&) const override { return {value_, EfficiencySource::measured}; }

 private:
  DefaultEfficiencyModel base_;
  double value_;
};

TEST(CommPcieSwitch, BridgeShareIsTheMinWithADatabaseAnswer) {
  const SystemConfig sys = testing_support::shipped_system("a100-pcie-80g");
  const double S = 1e9, link = sys.scale_up.gpu_gb_s * 1e9;
  const CollectiveKey two{CollectiveOp::reduce_scatter, static_cast<std::int64_t>(S), 2, 2, DType::bf16};
  const FixedCollectiveModel fast(sys, 0.9);  // 28.8 GB/s measured: above a quarter of the bridge
  EXPECT_NEAR(collective_time_s(two, sys, fast, nullptr, {}, 1), 0.5 * S / (sys.topology.pcie_bridge_gb_s * 1e9 / 4),
              1e-12);
  EXPECT_NEAR(collective_time_s(two, sys, fast, nullptr, {}, 2), 0.5 * S / (link * 0.9), 1e-12);
  const FixedCollectiveModel slow(sys, 0.05);  // 1.6 GB/s measured: below the bridge share
  EXPECT_NEAR(collective_time_s(two, sys, slow, nullptr, {}, 1), 0.5 * S / (link * 0.05), 1e-12);
}

// Simulation: TP 4, DP 2 on the 8-GPU box. Megatron's order puts the two DP ranks in different
// switches (stride 4); dp first puts them in one switch (stride 1), which prices as a one-level box.
TEST(CommPcieSwitch, DpAcrossSwitchesIsSlowerThanInside) {
  const ModelConfig model = testing_support::shipped_model("llama3-8b");
  const SystemConfig sys = testing_support::shipped_system("a100-pcie-80g");
  DefaultEfficiencyModel eff(sys);
  const std::string base =
      R"("seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8, "tp_size": 4)";
  const StrategyConfig across = testing_support::strategy_from_json("{" + base + "}", model);
  const StrategyConfig inside =
      testing_support::strategy_from_json("{" + base + R"(, "order": "dp-tp-cp-ep-pp"})", model);
  const SimulationResult a = simulate(model, across, sys, eff);
  const SimulationResult b = simulate(model, inside, sys, eff);
  EXPECT_GT(a.dp_comm_exposed_s, 1.5 * b.dp_comm_exposed_s);
  const SystemConfig one_level = without_switches(sys);
  DefaultEfficiencyModel eff1(one_level);
  EXPECT_DOUBLE_EQ(b.dp_comm_exposed_s, simulate(model, inside, one_level, eff1).dp_comm_exposed_s);
  EXPECT_GT(a.dp_comm_exposed_s, simulate(model, across, one_level, eff1).dp_comm_exposed_s);
}

// Pipeline send/recv: TP 1, PP 2, DP 4 in Megatron's order puts stage 0 on GPUs 0-3 and stage 1 on
// 4-7, so all four stage pairs cross the bridge at once: each transfer gets a quarter of it.
TEST(CommPcieSwitch, PipelinePairsAcrossSwitchesShareTheBridge) {
  const ModelConfig model = testing_support::shipped_model("llama3-8b");
  const SystemConfig sys = testing_support::shipped_system("a100-pcie-80g");
  DefaultEfficiencyModel eff(sys);
  const StrategyConfig st = testing_support::strategy_from_json(
      R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8, "pp_size": 2,
          "overlap_p2p_comm": false})",
      model);
  const SimulationResult a = simulate(model, st, sys, eff);
  const SystemConfig one_level = without_switches(sys);
  DefaultEfficiencyModel eff1(one_level);
  const SimulationResult b = simulate(model, st, one_level, eff1);
  ASSERT_EQ(a.stages.size(), 2u);
  // Blocking send/recv: stage 0 waits for its activation send once per micro-batch.
  const double send_s = a.stages[0].p2p_blocking_s_per_micro_batch;
  const double bytes = 4096.0 * model.hidden_size * 2;  // one bf16 activation of the micro-batch
  const double bridge_share = sys.topology.pcie_bridge_gb_s * 1e9 / 4;
  EXPECT_NEAR(send_s, std::max(b.stages[0].p2p_blocking_s_per_micro_batch, bytes / bridge_share), 1e-12);
  EXPECT_GT(send_s, 2 * b.stages[0].p2p_blocking_s_per_micro_batch);
  EXPECT_GT(a.duration_time_per_iter_s, b.duration_time_per_iter_s);
}

}  // namespace
}  // namespace calisim
