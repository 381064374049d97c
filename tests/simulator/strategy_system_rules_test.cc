// Rules that need the strategy and the system together, and settings that change the cost of a
// run in ways a user would not see from the layout line: unfused gradient accumulation, MXFP8
// on a GPU without block-scaled tensor cores, a device without the training dtype's peak,
// recompute settings that recompute nothing, and MFU beyond 100 % under the non-causal count.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "core/error.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/op_cost.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::find_op;
using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::simulate_roofline;
using testing_support::strategy_from_json;

const std::string kOneGpu =
    R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 1, "tp_size": 1, "pp_size": 1)";

bool has_warning(const SimulationResult& r, const std::string& text) {
  return std::any_of(r.warnings.begin(), r.warnings.end(),
                     [&](const std::string& w) { return w.find(text) != std::string::npos; });
}

// Without fusion Megatron's backward adds each weight gradient into the main gradient in its own
// kernel: read the gradient (2 bytes), read and write the fp32 main gradient (4 + 4).
TEST(StrategySystemRules, UnfusedGradientAccumulationAddsTheMainGradientKernel) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const StrategyConfig fused = strategy_from_json(kOneGpu + "}", m);
  const StrategyConfig unfused = strategy_from_json(kOneGpu + R"(, "use_fused_grad_accumulation": false})", m);
  const ModelOps ops_f = build_model_ops(m, fused, sys.scale_up_domain_size);
  const ModelOps ops_u = build_model_ops(m, unfused, sys.scale_up_domain_size);
  const LayerOp* fc1_f = find_op(ops_f.layer, "fc1");
  const LayerOp* fc1_u = find_op(ops_u.layer, "fc1");
  ASSERT_NE(fc1_f, nullptr);
  ASSERT_NE(fc1_u, nullptr);
  EXPECT_EQ(fc1_f->wgrad_accum_bytes, 0.0);
  const double weights = static_cast<double>(m.hidden_size) * 2 * m.intermediate_size;  // SwiGLU fc1
  EXPECT_DOUBLE_EQ(fc1_u->wgrad_accum_bytes, weights * (2 + 4 + 4));
  // Without fp32 main gradients the main gradient is bf16.
  const StrategyConfig bf16_main =
      strategy_from_json(kOneGpu + R"(, "use_fused_grad_accumulation": false, "use_fp32_accum_grad": false})", m);
  EXPECT_DOUBLE_EQ(find_op(build_model_ops(m, bf16_main, 8).layer, "fc1")->wgrad_accum_bytes, weights * 6);

  // Its cost is a memory-bound kernel beside the wgrad, in backward only.
  const DefaultEfficiencyModel eff(sys);
  const OpCoster coster(sys, eff, fused.nccl);
  const OpTiming tf = coster.cost(*fc1_f, nullptr), tu = coster.cost(*fc1_u, nullptr);
  EXPECT_DOUBLE_EQ(tu.fwd_compute_s, tf.fwd_compute_s);
  const double expected = fc1_u->wgrad_accum_bytes / (sys.device.hbm_bytes_per_s() * sys.memory_efficiency) +
                          sys.kernel_launch_us * 1e-6;
  EXPECT_NEAR(tu.bwd_compute_s - tf.bwd_compute_s, expected, 1e-12);
  // And the whole step is slower.
  EXPECT_GT(simulate_roofline(m, kOneGpu + R"(, "use_fused_grad_accumulation": false})", sys).duration_time_per_iter_s,
            simulate_roofline(m, kOneGpu + "}", sys).duration_time_per_iter_s);
}

TEST(StrategySystemRules, MxFp8NeedsBlackwell) {
  const ModelConfig m = shipped_model("llama3-8b");
  const std::string mx = kOneGpu + R"(, "fp8": true, "fp8_recipe": "mxfp8"})";
  try {
    simulate_roofline(m, mx, shipped_system("h100-sxm"));
    ADD_FAILURE() << "MXFP8 on Hopper was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(e.file().find("h100-sxm.json"), std::string::npos) << e.file();
    EXPECT_EQ(e.where(), "network.nccl_arch");
    EXPECT_NE(e.problem().find("blockwise"), std::string::npos) << e.problem();
  }
  EXPECT_GT(simulate_roofline(m, mx, shipped_system("b200")).duration_time_per_iter_s, 0);
  EXPECT_GT(simulate_roofline(m, kOneGpu + R"(, "fp8": true, "fp8_recipe": "blockwise"})", shipped_system("h100-sxm"))
                .duration_time_per_iter_s,
            0);
}

// A system file with an fp16 peak but none for bf16 passes parse_system (some training dtype is
// possible) and must fail as an input error naming the file when the run trains in bf16.
TEST(StrategySystemRules, MissingPeakOfTheTrainingDtypeNamesTheSystemFile) {
  const ModelConfig m = shipped_model("llama3-8b");
  SystemConfig sys = shipped_system("h100-sxm");
  sys.device.peak_tflops[static_cast<int>(DType::bf16)] = 0;
  try {
    simulate_roofline(m, kOneGpu + "}", sys);
    ADD_FAILURE() << "no bf16 peak was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), sys.source_file);
    EXPECT_EQ(e.where(), "device.peak_tflops.bf16");
  }
  EXPECT_GT(simulate_roofline(m, kOneGpu + R"(, "dtype": "fp16"})", sys).duration_time_per_iter_s, 0);
}

TEST(StrategySystemRules, RecomputeSettingsThatRecomputeNothingWarn) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const double none = simulate_roofline(m, kOneGpu + "}", sys).duration_time_per_iter_s;
  struct Case {
    std::string fields, warning;
  };
  for (const Case& c : {
           Case{R"("enable_recompute": false, "recompute_granularity": "full_block", "recompute_layer_num": 32)",
                "enable_recompute is false"},
           Case{R"("recompute_granularity": "full_block")", "recompute_layer_num is 0"},
           Case{R"("recompute_layer_num": 8)", "no recompute_granularity"},
           Case{R"("enable_recompute": false, "recompute_layer_num": 8)", "(and enable_recompute is false)"},
           Case{R"("recompute_granularity": "selective_recompute", "recompute_layer_num": 8)",
                "with none of attn_recompute"},
       }) {
    const SimulationResult r = simulate_roofline(m, kOneGpu + ", " + c.fields + "}", sys);
    EXPECT_TRUE(has_warning(r, c.warning)) << c.fields;
    EXPECT_TRUE(has_warning(r, "nothing is recomputed")) << c.fields;
    EXPECT_DOUBLE_EQ(r.duration_time_per_iter_s, none) << c.fields;
  }
  // A run that recomputes says nothing of the kind.
  EXPECT_FALSE(has_warning(
      simulate_roofline(m, kOneGpu + R"(, "recompute_granularity": "full_block", "recompute_layer_num": 4})", sys),
      "nothing is recomputed"));
  // A plan switched off marks no op as recomputed (the per-op report's '*').
  const StrategyConfig off = strategy_from_json(
      kOneGpu + R"(, "enable_recompute": false, "recompute_granularity": "full_block", "recompute_layer_num": 32})", m);
  const RecomputePlan plan = recompute_plan(build_model_ops(m, off, 8).layer, off);
  EXPECT_TRUE(std::none_of(plan.recomputed.begin(), plan.recomputed.end(), [](bool b) { return b; }));
}

// At a million tokens attention is nearly all of the counted FLOPs, counted as non-causal: with a
// generous attention efficiency the conventional MFU passes 100 % and the result says why.
TEST(StrategySystemRules, MfuAboveOneIsExplained) {
  const ModelConfig m = shipped_model("llama3-8b");
  SystemConfig sys = shipped_system("h100-sxm");
  sys.attention_efficiency = 0.8;
  const SimulationResult r = simulate_roofline(
      m,
      R"({"seq_len": 1048576, "micro_batch_size": 1, "global_batch_size": 1, "world_size": 64, "tp_size": 1,
          "pp_size": 1, "cp_size": 64, "recompute_granularity": "full_block", "recompute_layer_num": 32})",
      sys);
  ASSERT_GT(r.mfu, 1.0);
  EXPECT_LT(r.mfu_causal, 1.0);
  EXPECT_TRUE(has_warning(r, "exceed 100 %"));
  EXPECT_FALSE(has_warning(simulate_roofline(m, kOneGpu + "}", shipped_system("h100-sxm")), "exceed 100 %"));
}

}  // namespace
}  // namespace calisim
