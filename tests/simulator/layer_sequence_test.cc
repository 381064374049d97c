// simulator/layer_sequence: the kernels `calisim profile sequence` runs, in the simulator's order,
// each with the time the simulator charges for it.
#include "simulator/layer_sequence.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>

#include "core/error.h"
#include "simulator/default_efficiency.h"
#include "simulator/kernel_plan.h"
#include "simulator/layer_ops.h"
#include "simulator/op_cost.h"
#include "tests/simulator/test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::small_moe;
using testing_support::strategy_from_json;

const char* kTp2 = R"({"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64, "dtype": "bf16",
  "world_size": 16, "tp_size": 2, "pp_size": 2, "enable_sequence_parallel": true, "zero_state": 1,
  "use_flash_sdp": true, "enable_recompute": false})";

// The sum of the layer's compute, as op_cost charges it op by op (communication left out).
double layer_compute_s(const std::vector<LayerOp>& ops, const SystemConfig& sys, const EfficiencyModel& eff) {
  const OpCoster coster(sys, eff);
  double s = 0;
  for (const LayerOp& op : ops) {
    const OpTiming t = coster.cost(op, nullptr);
    s += t.fwd_compute_s + t.bwd_compute_s;
  }
  return s;
}

TEST(LayerSequence, ForwardInOpOrderThenBackwardReversedWithTheSimulatorsTimes) {
  const ModelConfig model = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const StrategyConfig st = strategy_from_json(kTp2, model);
  const DefaultEfficiencyModel eff(sys);
  const LayerSequence seq = layer_sequence(model, st, sys, eff, SequenceLayer::dense, "test");
  const ModelOps ops = build_model_ops(model, st, sys.scale_up_domain_size);

  ASSERT_GT(seq.forward_kernels, 0u);
  ASSERT_GT(seq.kernels.size(), seq.forward_kernels);
  // Forward: the ops in order, one kernel each (every op of this layer does work forward).
  ASSERT_EQ(seq.forward_kernels, ops.layer.size());
  for (std::size_t i = 0; i < ops.layer.size(); ++i) {
    EXPECT_EQ(seq.kernels[i].op, ops.layer[i].name);
    EXPECT_EQ(seq.kernels[i].role, "fwd");
  }
  // Backward starts at the last op with work and ends at the first; a GEMM gives dgrad then wgrad.
  EXPECT_EQ(seq.kernels.back().op, ops.layer.front().name);
  for (std::size_t i = seq.forward_kernels; i + 1 < seq.kernels.size(); ++i) {
    if (seq.kernels[i].role == "dgrad" && seq.kernels[i + 1].op == seq.kernels[i].op) {
      EXPECT_EQ(seq.kernels[i + 1].role, "wgrad") << seq.kernels[i].op;
    }
    EXPECT_NE(seq.kernels[i].role, "fwd");
  }
  // The SP collectives of a tp 2 layer are left out, counted.
  EXPECT_GT(seq.collectives_left_out, 0);
  // Each kernel's simulated time is the simulator's, and the sequence is the layer's whole compute.
  EXPECT_NEAR(seq.simulated_s(), layer_compute_s(ops.layer, sys, eff), 1e-12);
  double fwd_flops = 0;
  for (std::size_t i = 0; i < seq.forward_kernels; ++i) fwd_flops += seq.kernels[i].flops;
  double op_fwd_flops = 0;
  for (const LayerOp& op : ops.layer) op_fwd_flops += op.fwd_flops();
  EXPECT_NEAR(fwd_flops, op_fwd_flops, 1e-6 * op_fwd_flops);
  // Every key is one the simulation asks about (so `profile plan` rows price it).
  const KernelPlan plan = plan_kernels(model, st, sys);
  std::set<std::string> planned;
  for (const auto& k : plan.gemm) planned.insert(to_string(k));
  for (const auto& k : plan.attention) planned.insert(to_string(k));
  for (const auto& k : plan.memory) planned.insert(to_string(k));
  for (const auto& k : seq.kernels) EXPECT_TRUE(planned.count(k.key)) << k.key;
}

TEST(LayerSequence, UnfusedGradientAccumulationAddsTheMainGradientKernelAfterEachWgrad) {
  const ModelConfig model = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  std::string json = kTp2;
  json.insert(json.rfind('}'), R"(, "use_fused_grad_accumulation": false)");
  const StrategyConfig st = strategy_from_json(json, model);
  const DefaultEfficiencyModel eff(sys);
  const LayerSequence seq = layer_sequence(model, st, sys, eff, SequenceLayer::dense, "test");
  int wgrads = 0, accums = 0;
  for (std::size_t i = 0; i < seq.kernels.size(); ++i) {
    if (seq.kernels[i].role != "wgrad") continue;
    ++wgrads;
    ASSERT_LT(i + 1, seq.kernels.size());
    EXPECT_EQ(seq.kernels[i + 1].role, "grad_accum") << seq.kernels[i].op;
    EXPECT_EQ(seq.kernels[i + 1].op, seq.kernels[i].op);
    accums += seq.kernels[i + 1].role == "grad_accum";
    EXPECT_NE(seq.kernels[i].key.find("acc=0"), std::string::npos) << seq.kernels[i].key;
  }
  EXPECT_GT(wgrads, 0);
  EXPECT_EQ(accums, wgrads);
  EXPECT_NEAR(seq.simulated_s(), layer_compute_s(build_model_ops(model, st, 8).layer, sys, eff), 1e-12);
}

TEST(LayerSequence, RingContextParallelAttentionRunsItsSteps) {
  const ModelConfig model = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const StrategyConfig st = strategy_from_json(
      R"({"seq_len": 16384, "micro_batch_size": 1, "global_batch_size": 8, "world_size": 8, "cp_size": 4,
          "tp_size": 2, "use_flash_sdp": true})",
      model);
  const DefaultEfficiencyModel eff(sys);
  const LayerSequence seq = layer_sequence(model, st, sys, eff, SequenceLayer::dense, "test");
  int fwd_steps = 0, bwd_steps = 0;
  for (const auto& k : seq.kernels) {
    if (k.kind != SequenceKernelKind::attention) continue;
    (k.role.rfind("fwd step", 0) == 0 ? fwd_steps : bwd_steps) += 1;
    // Step 0 is causal on the rank's own chunks; the others are non-causal chunk pairs.
    EXPECT_EQ(k.key.find("causal=1") != std::string::npos, k.role.find("step 0") != std::string::npos) << k.role;
  }
  EXPECT_EQ(fwd_steps, 4);
  EXPECT_EQ(bwd_steps, 4);
  EXPECT_NEAR(seq.simulated_s(), layer_compute_s(build_model_ops(model, st, 8).layer, sys, eff), 1e-12);
}

TEST(LayerSequence, MoeModelsRunTheirMoeLayerAndRefuseALayerKindTheyLack) {
  const ModelConfig moe = small_moe();  // the first 3 of 8 layers dense
  const SystemConfig sys = shipped_system("h100-sxm");
  const StrategyConfig st = strategy_from_json(
      R"({"seq_len": 1024, "micro_batch_num": 4, "world_size": 8, "ep_size": 4, "etp_size": 1})", moe);
  const DefaultEfficiencyModel eff(sys);
  EXPECT_EQ(default_sequence_layer(moe), SequenceLayer::moe);
  const LayerSequence m = layer_sequence(moe, st, sys, eff, SequenceLayer::moe, "test");
  const bool grouped = std::any_of(m.kernels.begin(), m.kernels.end(), [](const SequenceKernel& k) {
    return k.kind == SequenceKernelKind::gemm && k.key.find("batch=1 ") == std::string::npos;
  });
  EXPECT_TRUE(grouped) << "the experts' grouped GEMMs";
  EXPECT_GT(m.collectives_left_out, 0) << "the EP dispatch and combine";
  const LayerSequence d = layer_sequence(moe, st, sys, eff, SequenceLayer::dense, "test");
  EXPECT_LT(d.kernels.size(), m.kernels.size());

  ModelConfig all_moe = moe;
  all_moe.dense_layers = 0;
  EXPECT_THROW(layer_sequence(all_moe, st, sys, eff, SequenceLayer::dense, "test"), InputError);
  const ModelConfig dense = shipped_model("llama3-8b");
  EXPECT_EQ(default_sequence_layer(dense), SequenceLayer::dense);
  EXPECT_THROW(layer_sequence(dense, strategy_from_json(kTp2, dense), sys, eff, SequenceLayer::moe, "test"),
               InputError);
}

// The system's sustained_kernel_speed divides every compute kernel's time (not the launch
// latency, not the collectives): the sequence's simulated times follow it exactly.
TEST(LayerSequence, SustainedKernelSpeedDividesEveryComputeKernelsTime) {
  const ModelConfig model = shipped_model("llama3-8b");
  SystemConfig sys = shipped_system("h100-sxm");
  const StrategyConfig st = strategy_from_json(kTp2, model);
  const DefaultEfficiencyModel eff(sys);
  const LayerSequence base = layer_sequence(model, st, sys, eff, SequenceLayer::dense, "test");
  SystemConfig slow = sys;
  slow.sustained_kernel_speed = 0.8;
  const DefaultEfficiencyModel slow_eff(slow);
  const LayerSequence s = layer_sequence(model, st, slow, slow_eff, SequenceLayer::dense, "test");
  ASSERT_EQ(s.kernels.size(), base.kernels.size());
  const double launch_s = sys.kernel_launch_us * 1e-6, gemm_fixed_s = sys.gemm_fixed_us * 1e-6;
  ASSERT_GT(gemm_fixed_s, 0.0);  // the shipped H100 prices a GEMM kernel's fixed part
  for (std::size_t i = 0; i < s.kernels.size(); ++i) {
    // Fixed parts (a launch, a GEMM kernel's prologue and epilogue) are not kernel throughput.
    const double fixed = s.kernels[i].kind == SequenceKernelKind::memory ? launch_s
                         : s.kernels[i].kind == SequenceKernelKind::gemm ? gemm_fixed_s
                                                                         : 0.0;
    EXPECT_NEAR(s.kernels[i].simulated_s - fixed, (base.kernels[i].simulated_s - fixed) / 0.8,
                1e-12 * base.kernels[i].simulated_s)
        << s.kernels[i].key;
  }
  const OpCoster a(sys, eff), b(slow, slow_eff);
  const CollectiveKey ar{CollectiveOp::all_reduce, 1 << 26, 8, 8, DType::bf16};
  EXPECT_DOUBLE_EQ(a.collective_s(ar, nullptr), b.collective_s(ar, nullptr));
}

}  // namespace
}  // namespace calisim
