// MLA attention, context parallelism and FP8: hand-derived FLOPs, bytes and collectives.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/model_stats.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::find_op;
using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

// With tp 1, the attention GEMMs of one token do 2 FLOPs per attention weight: the forward
// FLOPs of the MLA projections sum to 2·T·(attention matmul parameters).
TEST(Mla, ProjectionFlopsMatchParameterCountAndHeadDims) {
  const ModelConfig m = shipped_model("deepseek-v3");
  const StrategyConfig st = strategy_from_json(R"({"seq_len": 4096, "micro_batch_num": 4, "world_size": 8, "ep_size": 8})", m);
  const ModelOps ops = build_model_ops(m, st, 8);
  double flops = 0;
  for (const LayerOp& op : ops.layer) {
    if (op.kind == OpKind::gemm && (op.unit == OpUnit::qkv_down || op.unit == OpUnit::qkv || op.unit == OpUnit::out_proj)) {
      flops += op.fwd_flops();
    }
  }
  const double h = 7168, a = 128, ql = 1536, kvl = 512, r = 64, dqk = 128 + 64, dv = 128;
  const double matmul = h * ql + ql * a * dqk + h * (kvl + r) + kvl * a * (128 + dv) + a * dv * h;
  EXPECT_DOUBLE_EQ(flops, 2.0 * 4096 * matmul);
  const LayerOp* core = find_op(ops.layer, "core_attention");
  ASSERT_NE(core, nullptr);
  EXPECT_EQ(core->attn_fwd.head_dim_qk, 192);
  EXPECT_EQ(core->attn_fwd.head_dim_v, 128);
  // Causal forward: 2·s²·a·(d_qk + d_v)/2.
  EXPECT_DOUBLE_EQ(core->fwd_flops(), 2.0 * 4096 * 4096 * a * (dqk + dv) / 2);
}

TEST(Mla, TensorParallelGathersOnlyTheCompressedTensor) {
  const ModelConfig m = shipped_model("deepseek-v3");
  const StrategyConfig st = strategy_from_json(
      R"({"seq_len": 4096, "micro_batch_num": 4, "world_size": 8, "tp_size": 4, "ep_size": 2})", m);
  const ModelOps ops = build_model_ops(m, st, 8);
  const LayerOp* q_up = find_op(ops.layer, "q_up_proj");
  ASSERT_NE(q_up, nullptr);
  ASSERT_TRUE(q_up->fwd_comm);
  EXPECT_EQ(q_up->fwd_comm->op, CollectiveOp::all_gather);
  EXPECT_EQ(q_up->fwd_comm->bytes, 4096LL * (1536 + 512 + 64) * 2);
  // Down projections run on the SP shard with the full (replicated) weight.
  EXPECT_EQ(find_op(ops.layer, "q_down_proj")->gemm_fwd.m, 1024);
  EXPECT_EQ(find_op(ops.layer, "q_down_proj")->gemm_fwd.n, 1536);
  EXPECT_FALSE(find_op(ops.layer, "q_down_proj")->fwd_comm);
}

TEST(ContextParallel, RingSplitsAttentionWorkAndExchangesKv) {
  const ModelConfig m = shipped_model("llama3-8b");  // 32 heads, 8 KV heads, d 128
  const char* base = R"({"seq_len": 8192, "micro_batch_num": 4, "world_size": 8)";
  const ModelOps one = build_model_ops(m, strategy_from_json(std::string(base) + "}", m), 8);
  const ModelOps cp4 = build_model_ops(m, strategy_from_json(std::string(base) + R"(, "cp_size": 4})", m), 8);
  const LayerOp* a1 = find_op(one.layer, "core_attention");
  const LayerOp* a4 = find_op(cp4.layer, "core_attention");
  EXPECT_DOUBLE_EQ(a4->fwd_flops(), a1->fwd_flops() / 4);  // causal load balancing
  EXPECT_DOUBLE_EQ(find_op(cp4.layer, "qkv_proj")->fwd_flops(), find_op(one.layer, "qkv_proj")->fwd_flops() / 4);
  ASSERT_TRUE(a4->fwd_comm);
  EXPECT_TRUE(a4->fwd_comm_overlapped);
  EXPECT_EQ(a4->comm_group, CommGroup::cp);
  // Ring steps (Megatron/TE p2p): each of the 4 steps sends the local K, V to the neighbour,
  // 8192/4 tokens × 8 heads × (128 + 128) × 2 bytes; backward sends dK, dV of the same size.
  EXPECT_EQ(a4->cp_ring_steps, 4);
  EXPECT_EQ(a4->fwd_comm->op, CollectiveOp::send_recv);
  EXPECT_EQ(a4->fwd_comm->bytes, 2048LL * 8 * 256 * 2);
  EXPECT_EQ(a4->fwd_comm->ranks, 2);
  ASSERT_TRUE(a4->bwd_comm_with_wgrad);
  EXPECT_EQ(a4->bwd_comm_with_wgrad->bytes, a4->fwd_comm->bytes);
  EXPECT_DOUBLE_EQ(cp4.p2p_bytes, one.p2p_bytes / 4);

  // Ulysses: all-to-all of Q, K, V and the output, attention over the full sequence with a/c heads.
  const ModelOps u = build_model_ops(
      m, strategy_from_json(std::string(base) + R"(, "cp_size": 4, "cp_comm_type": "a2a"})", m), 8);
  const LayerOp* au = find_op(u.layer, "core_attention");
  EXPECT_EQ(au->attn_fwd.heads_q, 8);
  EXPECT_EQ(au->attn_fwd.seq_q, 8192);
  EXPECT_DOUBLE_EQ(au->fwd_flops(), a1->fwd_flops() / 4);
  EXPECT_EQ(au->fwd_comm->op, CollectiveOp::all_to_all);
  EXPECT_EQ(au->fwd_comm->bytes, 2048LL * (32 * 256 + 8 * 256) * 2);

  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const SimulationResult r =
      simulate(m, strategy_from_json(std::string(base) + R"(, "cp_size": 4})", m), sys, eff);
  EXPECT_EQ(r.dp * r.cp, 8);
  EXPECT_GE(r.cp_comm_exposed_s, 0);
}

// All-gather CP (TE's AttnFuncWithCPAndKVAllGather): the same load-balanced 1/c of the causal
// work as the ring, K, V all-gathered in front (exposed) and again in backward, dK, dV
// reduce-scattered by the reorder op in front of the attention, which also holds the gathered
// K, V; Megatron's name "allgather" and TE's "all_gather" are both accepted.
TEST(ContextParallel, AllGatherGathersKvExposedAndReduceScattersItsGradient) {
  const ModelConfig m = shipped_model("llama3-8b");  // 32 heads, 8 KV heads, d 128
  const char* base = R"({"seq_len": 8192, "micro_batch_num": 4, "world_size": 8, "cp_size": 4)";
  const ModelOps ring = build_model_ops(m, strategy_from_json(std::string(base) + "}", m), 8);
  for (const char* name : {"allgather", "all_gather"}) {
    const StrategyConfig st =
        strategy_from_json(std::string(base) + R"(, "cp_comm_type": ")" + name + R"("})", m);
    EXPECT_EQ(st.cp_comm_type, CpCommType::all_gather) << name;
  }
  const ModelOps ag =
      build_model_ops(m, strategy_from_json(std::string(base) + R"(, "cp_comm_type": "allgather"})", m), 8);
  const LayerOp* core = find_op(ag.layer, "core_attention");
  ASSERT_NE(core, nullptr);
  EXPECT_DOUBLE_EQ(core->fwd_flops(), find_op(ring.layer, "core_attention")->fwd_flops());
  EXPECT_EQ(core->cp_ring_steps, 0);
  EXPECT_FALSE(core->fwd_comm_overlapped);
  const double kv_all = 2048.0 * 8 * 256 * 2 * 4;  // 4 ranks' K, V of 2,048 tokens, bf16
  ASSERT_TRUE(core->fwd_comm && core->bwd_comm);
  EXPECT_EQ(core->fwd_comm->op, CollectiveOp::all_gather);
  EXPECT_EQ(core->fwd_comm->bytes, static_cast<std::int64_t>(kv_all));
  EXPECT_EQ(core->fwd_comm->ranks, 4);
  EXPECT_EQ(core->bwd_comm->op, CollectiveOp::all_gather);
  // The reorder op comes right before the attention: its backward (after the attention's) is the
  // dK, dV reduce-scatter; it holds the gathered and the reordered K, V.
  const auto it = std::find_if(ag.layer.begin(), ag.layer.end(),
                               [](const LayerOp& op) { return std::string(op.name) == "core_attention"; });
  ASSERT_NE(it, ag.layer.begin());
  const LayerOp& reorder = *(it - 1);
  EXPECT_EQ(reorder.name, "cp_all_gather_reorder");
  EXPECT_EQ(reorder.comm_group, CommGroup::cp);
  EXPECT_FALSE(reorder.fwd_comm);
  ASSERT_TRUE(reorder.bwd_comm);
  EXPECT_EQ(reorder.bwd_comm->op, CollectiveOp::reduce_scatter);
  EXPECT_EQ(reorder.bwd_comm->bytes, static_cast<std::int64_t>(kv_all));
  EXPECT_DOUBLE_EQ(reorder.transient_bytes, 2 * kv_all);
  EXPECT_EQ(find_op(ring.layer, "cp_all_gather_reorder"), nullptr);

  // End to end: the same compute, CP communication exposed where the ring hides it.
  const SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const SimulationResult r_ring = simulate(m, strategy_from_json(std::string(base) + "}", m), sys, eff);
  const SimulationResult r_ag =
      simulate(m, strategy_from_json(std::string(base) + R"(, "cp_comm_type": "allgather"})", m), sys, eff);
  EXPECT_GT(r_ag.cp_comm_exposed_s, r_ring.cp_comm_exposed_s);
  EXPECT_GT(r_ag.duration_time_per_iter_s, r_ring.duration_time_per_iter_s);
  // The sequence is cut into 2·cp load-balanced chunks, as for the ring.
  EXPECT_THROW(strategy_from_json(R"({"seq_len": 8196, "micro_batch_num": 4, "world_size": 8, "cp_size": 4,
                                      "cp_comm_type": "allgather"})",
                                  m),
               InputError);
}

TEST(Fp8, GemmsRunInFp8WithCastsAndUseTheFp8Peak) {
  const ModelConfig m = shipped_model("llama3-8b");
  const char* base = R"({"seq_len": 4096, "micro_batch_num": 8, "world_size": 8)";
  const StrategyConfig bf16 = strategy_from_json(std::string(base) + "}", m);
  const StrategyConfig fp8 = strategy_from_json(std::string(base) + R"(, "fp8": true, "fp8_recipe": "tensorwise"})", m);
  const ModelOps ops = build_model_ops(m, fp8, 8);
  const LayerOp* fc1 = find_op(ops.layer, "fc1");
  EXPECT_EQ(fc1->gemm_fwd.dtype, DType::fp8_e4m3);
  EXPECT_EQ(fc1->gemm_dgrad.dtype, DType::fp8_e5m2);
  EXPECT_DOUBLE_EQ(fc1->act_bytes, 4096.0 * 4096 * 1);  // FP8 input kept: one byte per element
  const LayerOp* cast = find_op(ops.layer, "fc1_fp8_cast");
  ASSERT_NE(cast, nullptr);
  // Per-tensor current scaling: amax pass (read e) + cast (read e, write row- and column-wise FP8).
  EXPECT_EQ(cast->mem_fwd.bytes, static_cast<std::int64_t>(4096.0 * 4096 * (2 * 2 + 2)));
  EXPECT_EQ(find_op(ops.head, "lm_head")->gemm_fwd.dtype, DType::bf16);  // the LM head stays bf16

  SystemConfig sys = shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const SimulationResult a = simulate(m, bf16, sys, eff), b = simulate(m, fp8, sys, eff);
  EXPECT_LT(b.duration_time_per_iter_s, a.duration_time_per_iter_s);
  EXPECT_GT(b.stages[0].weight_bytes, a.stages[0].weight_bytes);  // cached FP8 weight copies
  sys.device.peak_tflops[static_cast<int>(DType::fp8_e4m3)] = 0;
  DefaultEfficiencyModel eff2(sys);
  EXPECT_THROW(simulate(m, fp8, sys, eff2), InputError);
}

}  // namespace
}  // namespace calisim
