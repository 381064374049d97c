// The attention core's share of a simulated step (SimulationResult::attention_kernel_s: the
// kernels of OpUnit::attention_core — fused or unfused attention, PyTorch's CP ring merge —
// forward, backward and recomputed forward, on the critical stage) and the system's
// efficiency.sustained_attention_speed, which prices those kernels at their own in-situ speed.
#include <gtest/gtest.h>

#include <string>

#include "simulator/default_efficiency.h"
#include "simulator/layer_sequence.h"
#include "simulator/op_cost.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

std::string strategy(const std::string& extra) {
  return R"({"seq_len": 8192, "micro_batch_size": 1, "global_batch_size": 32, "dtype": "bf16",
    "world_size": 8, "tp_size": 2, "enable_sequence_parallel": true, "zero_state": 1, "use_flash_sdp": true)" +
         extra + "}";
}

SimulationResult run(const ModelConfig& m, const std::string& st_json, const SystemConfig& sys) {
  const StrategyConfig st = strategy_from_json(st_json, m);
  const DefaultEfficiencyModel eff(sys);
  return simulate(m, st, sys, eff);
}

// Forward + backward (+ the recomputed forward) of the ops named in `names`, one micro-batch of
// one layer, from the per-op report.
double per_layer_s(const SimulationResult& r, std::initializer_list<const char*> names, bool recomputed) {
  double s = 0;
  for (const OpReport& op : r.ops) {
    if (op.scope != "layer") continue;
    for (const char* n : names) {
      if (op.name == n) s += op.fwd_s + op.bwd_s + (recomputed && op.recomputed ? op.fwd_s : 0.0);
    }
  }
  return s;
}

TEST(AttentionSplit, IsTheAttentionCoreKernelsOfTheCriticalStage) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult r = run(m, strategy(R"(, "enable_recompute": false)"), sys);
  const double micro_batches = static_cast<double>(r.micro_batch_num);
  ASSERT_GT(r.attention_kernel_s, 0.0);
  EXPECT_NEAR(r.attention_kernel_s, micro_batches * m.layer_num * per_layer_s(r, {"core_attention"}, false),
              1e-9 * r.attention_kernel_s);
  EXPECT_LT(r.attention_kernel_s, r.compute_s + r.recompute_s);
  EXPECT_NEAR(r.stages[0].attention_s_per_micro_batch * micro_batches, r.attention_kernel_s, 1e-12);

  // Full recompute reruns the attention forward before its backward: it is attention time too.
  const SimulationResult rc =
      run(m, strategy(R"(, "enable_recompute": true, "recompute_granularity": "full_block", "recompute_layer_num": 32)"),
          sys);
  ASSERT_GT(rc.recompute_s, 0.0);
  EXPECT_NEAR(rc.attention_kernel_s, micro_batches * m.layer_num * per_layer_s(rc, {"core_attention"}, true),
              1e-9 * rc.attention_kernel_s);
  EXPECT_GT(rc.attention_kernel_s, r.attention_kernel_s);
}

// PyTorch's ring (cp_implementation pytorch) merges each step's partial output in memory-bound
// kernels: part of the attention core, so part of its time.
TEST(AttentionSplit, PyTorchRingMergeCountsAsAttention) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult r = run(
      m, strategy(R"(, "cp_size": 2, "cp_implementation": "pytorch", "enable_recompute": false)"), sys);
  const double merge = per_layer_s(r, {"cp_ring_merge"}, false);
  ASSERT_GT(merge, 0.0);
  EXPECT_NEAR(r.attention_kernel_s,
              static_cast<double>(r.micro_batch_num) * m.layer_num * per_layer_s(r, {"core_attention", "cp_ring_merge"}, false),
              1e-9 * r.attention_kernel_s);
}

// sustained_attention_speed divides the attention core's kernel times and nothing else; absent
// (0), the attention core runs at sustained_kernel_speed like every other kernel.
TEST(AttentionSplit, SustainedAttentionSpeedSlowsOnlyTheAttentionCore) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  ASSERT_EQ(sys.sustained_attention_speed, 0.0);  // no shipped file sets it
  EXPECT_EQ(sys.attention_kernel_speed(), sys.sustained_kernel_speed);
  SystemConfig slow = sys;
  slow.sustained_attention_speed = 0.5;
  const std::string st = strategy(R"(, "enable_recompute": false)");
  const SimulationResult base = run(m, st, sys), r = run(m, st, slow);
  EXPECT_NEAR(r.attention_kernel_s, 2 * base.attention_kernel_s, 1e-9 * base.attention_kernel_s);
  const double other_base = base.compute_s + base.recompute_s - base.attention_kernel_s;
  const double other = r.compute_s + r.recompute_s - r.attention_kernel_s;
  EXPECT_NEAR(other, other_base, 1e-6 * other_base) << "GEMMs and memory-bound kernels keep their speed";
  ASSERT_EQ(r.ops.size(), base.ops.size());
  for (std::size_t i = 0; i < r.ops.size(); ++i) {
    const double factor = r.ops[i].name == "core_attention" ? 2.0 : 1.0;
    EXPECT_NEAR(r.ops[i].fwd_s, factor * base.ops[i].fwd_s, 1e-12 + 1e-9 * base.ops[i].fwd_s) << r.ops[i].name;
  }
  // The same kernels in `calisim profile sequence`'s layer.
  const StrategyConfig s = strategy_from_json(st, m);
  const DefaultEfficiencyModel eff(sys), slow_eff(slow);
  const LayerSequence a = layer_sequence(m, s, sys, eff, SequenceLayer::dense, "test");
  const LayerSequence b = layer_sequence(m, s, slow, slow_eff, SequenceLayer::dense, "test");
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  int attention_kernels = 0;
  for (std::size_t i = 0; i < a.kernels.size(); ++i) {
    const bool attention = a.kernels[i].kind == SequenceKernelKind::attention;
    attention_kernels += attention;
    EXPECT_NEAR(b.kernels[i].simulated_s, (attention ? 2.0 : 1.0) * a.kernels[i].simulated_s,
                1e-12 * a.kernels[i].simulated_s)
        << a.kernels[i].key;
  }
  EXPECT_EQ(attention_kernels, 2);  // forward and backward
}

}  // namespace
}  // namespace calisim
