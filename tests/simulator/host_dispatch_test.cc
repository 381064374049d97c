// Host dispatch (simulator/host_dispatch.h): hand-computed issue times and the one-stream
// recurrence after a sync, grouped vs sequential expert GEMMs, CUDA-graph scopes, the loader's
// checks of the new fields, and end-to-end effects (a fine-grained MoE layer at a small micro-batch
// becomes host-bound; drop-and-pad and full-iteration graphs remove the sync; a dense 70B step barely moves).
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>
#include <vector>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/host_dispatch.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

LayerOp mem_op(const char* name, OpUnit unit) {
  LayerOp op;
  op.name = name;
  op.kind = OpKind::memory;
  op.unit = unit;
  op.mem_fwd.bytes = 1000;
  op.mem_bwd.bytes = 1000;
  return op;
}

HostDispatchSettings settings_us(double op_us, double expert_gemm_us, double sync_us) {
  HostDispatchSettings s;
  s.op_dispatch_s = op_us * 1e-6;
  s.expert_gemm_s = expert_gemm_us * 1e-6;
  s.sync_s = sync_us * 1e-6;
  return s;
}

TEST(HostDispatch, NoSyncExposesOnlyAHostSlowerThanTheGpu) {
  const std::vector<LayerOp> ops{mem_op("a", OpUnit::other), mem_op("b", OpUnit::other), mem_op("c", OpUnit::other)};
  const HostDispatchSettings s = settings_us(10, 2, 7);
  // GPU 5 µs per op: host 30 µs against GPU 15 µs.
  HostBlockTiming t = host_block_timing(ops, {5e-6, 5e-6, 5e-6}, {5e-6, 5e-6, 5e-6}, s, false, -1);
  EXPECT_NEAR(t.host_fwd_s, 30e-6, 1e-12);
  EXPECT_NEAR(t.exposed_fwd_s, 15e-6, 1e-12);
  EXPECT_NEAR(t.exposed_bwd_s, 15e-6, 1e-12);
  EXPECT_EQ(t.syncs_fwd, 0);
  // GPU 20 µs per op: the host runs ahead, nothing exposed.
  t = host_block_timing(ops, {20e-6, 20e-6, 20e-6}, {20e-6, 20e-6, 20e-6}, s, false, -1);
  EXPECT_EQ(t.exposed_fwd_s, 0.0);
  EXPECT_EQ(t.exposed_bwd_s, 0.0);
}

TEST(HostDispatch, SyncStartsTheGpuIdleBehindTheHost) {
  const std::vector<LayerOp> ops{mem_op("a", OpUnit::other), mem_op("b", OpUnit::other), mem_op("c", OpUnit::other)};
  const HostDispatchSettings s = settings_us(10, 2, 7);
  // Sync before op 1: issue order b, c, a; host done at 10, 20, 30 µs; GPU ends 15, 25, 35 µs.
  // Exposed = 35 − 15 (GPU work) + 7 (the sync) = 27 µs.
  const HostBlockTiming t = host_block_timing(ops, {5e-6, 5e-6, 5e-6}, {5e-6, 5e-6, 5e-6}, s, true, 1);
  EXPECT_NEAR(t.exposed_fwd_s, 27e-6, 1e-12);
  EXPECT_EQ(t.syncs_fwd, 1);
  // Long GPU ops: only the first op's issue and the sync are exposed (10 + 7 µs).
  const HostBlockTiming g = host_block_timing(ops, {50e-6, 50e-6, 50e-6}, {1e-3, 1e-3, 1e-3}, s, true, 1);
  EXPECT_NEAR(g.exposed_fwd_s, 17e-6, 1e-12);
  EXPECT_EQ(g.exposed_bwd_s, 0.0);
}

TEST(HostDispatch, GroupedGemmIssuesOneOpAndOneSubmissionPerExpert) {
  LayerOp fc1;
  fc1.name = "expert_fc1";
  fc1.kind = OpKind::gemm;
  fc1.unit = OpUnit::expert;
  fc1.has_wgrad = true;
  LayerOp cast = mem_op("expert_fc1_fp8_cast", OpUnit::expert);
  HostDispatchSettings s = settings_us(10, 2, 0);
  s.expert_gemm_s = 20e-6;  // the library submission of one expert GEMM
  s.local_experts = 4;
  s.grouped_gemm = true;
  HostOpCost c = host_op_cost(fc1, s);
  EXPECT_NEAR(c.fwd_s, (10 + 4 * 20) * 1e-6, 1e-12);
  EXPECT_NEAR(c.bwd_s, 2 * (10 + 4 * 20) * 1e-6, 1e-12);  // dgrad and wgrad
  HostOpCost q = host_op_cost(cast, s);  // multi-quantize: per expert, two allocations (~one op)
  EXPECT_NEAR(q.fwd_s, (10 + 4 * 10) * 1e-6, 1e-12);
  const HostOpCost grouped = c;
  s.grouped_gemm = false;  // SequentialMLP: one Python op per expert, each GEMM submitted as well
  c = host_op_cost(fc1, s);
  EXPECT_NEAR(c.fwd_s, 4 * (10 + 20) * 1e-6, 1e-12);
  EXPECT_NEAR(c.bwd_s, 8 * (10 + 20) * 1e-6, 1e-12);
  EXPECT_GE(c.fwd_s, grouped.fwd_s);  // a Python loop never issues faster than the C++ one
  q = host_op_cost(cast, s);
  EXPECT_NEAR(q.fwd_s, 4 * 10e-6, 1e-12);
}

TEST(HostDispatch, GraphScopeChargesOneLaunchPerCapturedRun) {
  const std::vector<LayerOp> ops{mem_op("norm", OpUnit::input_norm), mem_op("rope", OpUnit::qkv),
                                 mem_op("residual", OpUnit::post_attn), mem_op("mlp_norm", OpUnit::post_norm)};
  HostDispatchSettings s = settings_us(10, 2, 0);
  s.cuda_graph = kGraphAttn;
  const std::vector<double> gpu(4, 1e-3);
  const HostBlockTiming t = host_block_timing(ops, gpu, gpu, s, false, -1);
  EXPECT_NEAR(t.host_fwd_s, 20e-6, 1e-12);  // one graph launch + the uncaptured norm
  EXPECT_NEAR(t.host_bwd_s, 20e-6, 1e-12);
  EXPECT_TRUE(graph_captured(ops[3], kGraphMoeRouter, true));   // a MoE layer's pre-MLP norm
  EXPECT_FALSE(graph_captured(ops[3], kGraphMoeRouter, false));
  EXPECT_TRUE(graph_captured(ops[3], kGraphFullIteration, false));
}

// Grace hosts issue ops 2.75x slower than the x86 hosts (37.08 / 13.48 us per torch Linear
// forward, NVIDIA/TransformerEngine#2053); every x86-hosted system keeps the 10 us base.
TEST(HostDispatchConfig, GraceHostsCarryTheMeasuredRatio) {
  const double x86 = testing_support::shipped_system("h100-sxm").host_op_dispatch_us;
  EXPECT_DOUBLE_EQ(x86, 10.0);
  for (const char* name : {"a100-sxm-80g", "a100-pcie-80g", "h100-pcie", "h200", "b200", "b300"}) {
    EXPECT_DOUBLE_EQ(testing_support::shipped_system(name).host_op_dispatch_us, x86) << name;
  }
  EXPECT_NEAR(testing_support::shipped_system("gb200-nvl72").host_op_dispatch_us, x86 * 37.08 / 13.48, 0.01);
}

// The per-expert GEMM submission: TransformerEngine PR #3134's 33 us per expert on an SM100 GPU of
// unstated host, centred between the hosts by sqrt(2.75); Grace keeps op dispatch's ratio to x86.
TEST(HostDispatchConfig, ExpertGemmSubmissionIsCentredBetweenTheHosts) {
  const double published_us = 33.0, ratio = 2.75;
  const double x86 = testing_support::shipped_system("b200").host_grouped_gemm_expert_us;
  EXPECT_NEAR(x86, published_us / std::sqrt(ratio), 0.5);
  for (const char* name : {"a100-sxm-80g", "a100-pcie-80g", "h100-sxm", "h100-pcie", "h200", "b300", "mi300x"}) {
    EXPECT_DOUBLE_EQ(testing_support::shipped_system(name).host_grouped_gemm_expert_us, x86) << name;
  }
  for (const char* name : {"gb200-nvl72", "gb300-nvl72"}) {
    const SystemConfig grace = testing_support::shipped_system(name);
    EXPECT_NEAR(grace.host_grouped_gemm_expert_us, published_us * std::sqrt(ratio), 0.5) << name;
    EXPECT_NEAR(grace.host_grouped_gemm_expert_us / x86,
                grace.host_op_dispatch_us / testing_support::shipped_system("b200").host_op_dispatch_us, 1e-9)
        << name;
  }
}

TEST(HostDispatchConfig, LoaderChecksFieldsWithTheirPath) {
  nlohmann::json sys = nlohmann::json::parse(R"({"name": "x", "device": {"name": "d", "peak_tflops": {"bf16": 1000},
      "memory_gb": 80, "hbm_gb_s": 3000}, "efficiency": {}, "network": {"scale_up": {"domain_size": 8, "gpu_gb_s": 450,
      "latency_us": 3}, "scale_out": {"gpus_per_node": 8, "nics_per_node": 8, "nic_gb_s": 50, "latency_us": 10}},
      "host": {"op_dispatch_us": -1}})");
  const std::string negative_dispatch = testing_support::system_refusal(sys);
  EXPECT_NE(negative_dispatch, "(accepted)") << "negative op_dispatch_us accepted";
  EXPECT_NE(negative_dispatch.find("host.op_dispatch_us"), std::string::npos) << negative_dispatch;
  sys["host"] = {{"op_dispatch_us", 8}, {"sync_us", 0}};
  const SystemConfig ok = parse_system(sys, "sys.json");
  EXPECT_EQ(ok.host_op_dispatch_us, 8);
  EXPECT_EQ(ok.host_sync_us, 0);
  // The grouped GEMM's per-expert host cost: efficiency.kernel_launch_us when absent (the GPU-side
  // launch gap), its own figure when given; negative values are refused with the path.
  const ModelConfig moe = testing_support::small_moe();
  const StrategyConfig grouped = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 4, "moe_grouped_gemm": true})", moe);
  sys["efficiency"] = {{"kernel_launch_us", 2}};
  EXPECT_NEAR(host_dispatch_settings(parse_system(sys, "sys.json"), grouped, moe).expert_gemm_s, 2e-6, 1e-15);
  sys["host"]["grouped_gemm_expert_us"] = 30;
  const SystemConfig per_expert = parse_system(sys, "sys.json");
  EXPECT_NEAR(host_dispatch_settings(per_expert, grouped, moe).expert_gemm_s, 30e-6, 1e-15);
  EXPECT_EQ(per_expert.kernel_launch_us, 2);  // the GPU-side gap of bandwidth-bound kernels stays
  sys["host"]["grouped_gemm_expert_us"] = -1;
  const std::string refusal = testing_support::system_refusal(sys);
  EXPECT_NE(refusal, "(accepted)") << "negative grouped_gemm_expert_us accepted";
  EXPECT_NE(refusal.find("host.grouped_gemm_expert_us"), std::string::npos) << refusal;
  sys["host"].erase("grouped_gemm_expert_us");

  const ModelConfig m = testing_support::small_moe();
  const std::string base = R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 4, )";
  EXPECT_THROW(strategy_from_json(base + R"("cuda_graph_scope": ["attn", "everything"]})", m), InputError);
  EXPECT_THROW(strategy_from_json(base + R"("cuda_graph_scope": "partial"})", m), InputError);
  EXPECT_THROW(strategy_from_json(base + R"("moe_token_dispatcher_type": "deepep"})", m), InputError);
  EXPECT_THROW(strategy_from_json(base + R"("moe_token_dispatcher_type": "allgather",
                                           "moe_dispatcher_policy": "all2all"})", m), InputError);
  const StrategyConfig st =
      strategy_from_json(base + R"("cuda_graph_scope": ["attn", "moe_router"], "moe_grouped_gemm": true,
                                   "moe_token_dispatcher_type": "allgather"})", m);
  EXPECT_EQ(st.cuda_graph_scope, kGraphAttn | kGraphMoeRouter);
  EXPECT_TRUE(st.moe_grouped_gemm);
  EXPECT_EQ(st.moe_dispatcher, MoeDispatcher::all_gather);
  EXPECT_EQ(strategy_from_json(base + R"("cuda_graph_scope": "full_iteration"})", m).cuda_graph_scope,
            kGraphFullIteration);
  EXPECT_EQ(strategy_from_json(base + R"("cuda_graph_scope": "none"})", m).cuda_graph_scope, 0);
}

// Qwen3-30B-A3B (128 experts, top-8) on 8 B200s, ep 8 (16 local experts), mbs 1: the layout of
// the Megatron-Bridge row R0146.
StrategyConfig qwen_ep8(const ModelConfig& m, const std::string& extra) {
  return strategy_from_json(R"({"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64, "world_size": 8,
      "ep_size": 8, "etp_size": 1, "moe_grouped_gemm": true)" + extra + "}", m);
}

TEST(HostDispatchSimulate, FineGrainedMoeLayerWaitsOnItsSync) {
  const ModelConfig m = shipped_model("qwen3-30b-a3b");
  const SystemConfig sys = shipped_system("b200");
  const DefaultEfficiencyModel eff(sys);
  const StrategyConfig st = qwen_ep8(m, "");
  const SimulationResult on = simulate(m, st, sys, eff);
  ASSERT_TRUE(on.host_dispatch_modeled);
  const HostBlockReport* moe = nullptr;
  for (const auto& b : on.host_blocks) moe = b.block == "moe_layer" ? &b : moe;
  ASSERT_NE(moe, nullptr);
  EXPECT_EQ(moe->syncs_fwd, 1);
  EXPECT_GT(moe->exposed_fwd_s, sys.host_sync_us * 1e-6);
  EXPECT_GT(on.host_exposed_s, 0.0);

  SystemConfig off_sys = sys;
  off_sys.host_op_dispatch_us = 0;
  off_sys.host_sync_us = 0;
  const SimulationResult off = simulate(m, st, off_sys, eff);
  EXPECT_FALSE(off.host_dispatch_modeled);
  EXPECT_EQ(off.host_exposed_s, 0.0);
  EXPECT_TRUE(off.host_blocks.empty());
  // The host's wait lands on the step and in its own breakdown line, not in compute.
  EXPECT_NEAR(on.duration_time_per_iter_s - off.duration_time_per_iter_s, on.host_exposed_s,
              0.02 * on.host_exposed_s + 1e-9);
  EXPECT_NEAR(on.compute_s, off.compute_s, 1e-9 + 1e-6 * off.compute_s);

  // Sequential experts (Megatron's default, moe_grouped_gemm off) issue one op per local expert.
  const SimulationResult seq = simulate(m, strategy_from_json(R"({"seq_len": 4096, "micro_batch_size": 1,
      "global_batch_size": 64, "world_size": 8, "ep_size": 8, "etp_size": 1})", m), sys, eff);
  EXPECT_GT(seq.host_exposed_s, on.host_exposed_s);

  // A full-iteration graph removes both the dispatch and the sync.
  const SimulationResult graph = simulate(m, qwen_ep8(m, R"(, "cuda_graph_scope": "full_iteration")"), sys, eff);
  EXPECT_NEAR(graph.host_exposed_s, 0.0, 1e-12);
  EXPECT_NEAR(graph.duration_time_per_iter_s, off.duration_time_per_iter_s, 1e-9);
}

TEST(HostDispatchSimulate, DropAndPadHasNoSync) {
  ModelConfig m = shipped_model("qwen3-30b-a3b");
  m.moe_pad_expert_input_to_capacity = true;
  m.capacity = 1.0;
  const SystemConfig sys = shipped_system("b200");
  const SimulationResult r = simulate(m, qwen_ep8(m, ""), sys, DefaultEfficiencyModel(sys));
  for (const auto& b : r.host_blocks) EXPECT_EQ(b.syncs_fwd, 0) << b.block;
}

TEST(HostDispatchSimulate, DenseLargeLayersStayGpuBound) {
  const ModelConfig m = shipped_model("llama3-70b");
  const SystemConfig sys = shipped_system("h100-sxm");
  SystemConfig off_sys = sys;
  off_sys.host_op_dispatch_us = 0;
  off_sys.host_sync_us = 0;
  const StrategyConfig st = strategy_from_json(R"({"seq_len": 8192, "micro_batch_size": 1, "global_batch_size": 32,
      "world_size": 64, "tp_size": 8, "pp_size": 4, "interleaving_size": 5})", m);
  const DefaultEfficiencyModel eff(sys);
  const SimulationResult on = simulate(m, st, sys, eff), off = simulate(m, st, off_sys, eff);
  EXPECT_LT(on.duration_time_per_iter_s / off.duration_time_per_iter_s - 1, 0.01);
  for (const auto& b : on.host_blocks) {
    if (b.block == "layer") {
      EXPECT_EQ(b.bound, "gpu");
    }
  }
}

}  // namespace
}  // namespace calisim
