// efficiency.matmul_by_dtype: the loader reads and validates it, the roofline model prices each
// GEMM at the figure of its input dtype, and only FP8 runs change. Also the roofline GEMM's
// tile/wave utilization factor.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

#include "core/error.h"
#include "core/tile_quantization.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

// A minimal valid system document; `efficiency` is spliced in (no fp8 peak unless `fp8_tflops` > 0).
nlohmann::json system_doc(const nlohmann::json& efficiency, double fp8_tflops = 1979) {
  nlohmann::json peaks = {{"bf16", 989}, {"fp16", 989}};
  if (fp8_tflops > 0) peaks["fp8"] = fp8_tflops;
  return {{"name", "test-gpu"},
          {"device", {{"name", "Test GPU"}, {"peak_tflops", peaks}, {"memory_gb", 80}, {"hbm_gb_s", 3350}}},
          {"efficiency", efficiency},
          {"network",
           {{"scale_up", {{"domain_size", 8}, {"gpu_gb_s", 450}, {"latency_us", 3}}},
            {"scale_out", {{"gpus_per_node", 8}, {"nics_per_node", 8}, {"nic_gb_s", 50}, {"latency_us", 14}}}}}};
}

// The InputError's field path and message for a document that must be rejected.
std::string rejection(const nlohmann::json& doc) {
  try {
    parse_system(doc, "test.json");
  } catch (const InputError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(MatmulByDtype, ShippedH100UsesTheFp8MamfForFp8GemmsOnly) {
  const SystemConfig s = shipped_system("h100-sxm");
  EXPECT_DOUBLE_EQ(s.matmul_efficiency, 0.72);  // 0.9 x BF16 MAMF 80.3 %
  EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::bf16), 0.72);
  EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::fp8_e4m3), 0.638);  // 0.9 x FP8 MAMF 70.9 %
  EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::fp8_e5m2), 0.638);  // "fp8" covers both formats

  // The roofline model: an FP8 GEMM of the FP8 recipe gets the FP8 figure, the bf16 LM head matmul.
  const ModelConfig m = shipped_model("llama3-8b");
  const StrategyConfig fp8 = strategy_from_json(
      R"({"seq_len": 4096, "micro_batch_num": 8, "world_size": 8, "fp8": true, "fp8_recipe": "tensorwise"})", m);
  const ModelOps ops = build_model_ops(m, fp8, 8);
  const DefaultEfficiencyModel eff(s);
  const LayerOp* fc1 = nullptr;
  for (const LayerOp& op : ops.layer) {
    if (std::string_view(op.name) == "fc1") fc1 = &op;
  }
  ASSERT_NE(fc1, nullptr);
  // Each at its dtype's figure times the GEMM's tile/wave utilization on 132 SMs.
  const auto q = [&](const GemmKey& k) { return gemm_quantization(k.m, k.n, k.batch, s.device.sm_count); };
  EXPECT_DOUBLE_EQ(eff.gemm(fc1->gemm_fwd).value, 0.638 * q(fc1->gemm_fwd));      // e4m3
  EXPECT_DOUBLE_EQ(eff.gemm(fc1->gemm_dgrad).value, 0.638 * q(fc1->gemm_dgrad));  // e5m2 gradient
  int heads = 0;
  for (const LayerOp& op : ops.head) {
    if (std::string_view(op.name) != "lm_head") continue;
    ++heads;
    EXPECT_EQ(op.gemm_fwd.dtype, DType::bf16);
    EXPECT_DOUBLE_EQ(eff.gemm(op.gemm_fwd).value, 0.72 * q(op.gemm_fwd));
  }
  EXPECT_EQ(heads, 1);
}

TEST(RooflineGemm, ATailWaveTakesAsLongAsAFullOne) {
  const SystemConfig s = shipped_system("h100-sxm");  // 132 SMs
  const DefaultEfficiencyModel eff(s);
  // 12 x 11 tiles of 128 x 128 = 132: one full wave, no padding, so the best-shape figure itself.
  const GemmKey full{128 * 12, 128 * 11, 8192, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_DOUBLE_EQ(eff.gemm(full).value, 0.72);
  // One more output column: every tile shape of the set now needs a partly empty extra wave or a
  // padded extra tile column; the best (64 x 128: 288 tiles, three waves of 132, 1409/1536 of the
  // last column used) keeps 288/396 x 1409/1536 of it.
  GemmKey wider = full;
  wider.n += 1;
  EXPECT_NEAR(eff.gemm(wider).value, 0.72 * (288.0 / 396.0) * (1409.0 / 1536.0), 1e-12);
  const auto time_s = [&](const GemmKey& k) { return k.flops() / (s.device.peak_flops_per_s(k.dtype) * eff.gemm(k).value); };
  EXPECT_GT(time_s(wider), 1.4 * time_s(full));
  // Large training GEMMs lose little: 8192 x 8192 stays within 3 % of the figure.
  const GemmKey big{8192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_GT(eff.gemm(big).value, 0.97 * 0.72);
  EXPECT_LE(eff.gemm(big).value, 0.72);
}

TEST(MatmulByDtype, SystemsWithoutAnFp8FigureKeepMatmul) {
  const SystemConfig pcie = shipped_system("h100-pcie");  // no published FP8 MAMF for H100 PCIe
  EXPECT_DOUBLE_EQ(pcie.matmul_efficiency_for(DType::fp8_e4m3), pcie.matmul_efficiency);
  const SystemConfig a100 = shipped_system("a100-sxm-80g");  // no FP8 at all
  for (int t = 0; t < kDTypeCount; ++t) EXPECT_EQ(a100.matmul_efficiency_by_dtype[t], 0.0);
}

TEST(MatmulByDtype, SpecificFp8FormatOverridesFp8) {
  const SystemConfig s = parse_system(
      system_doc({{"matmul", 0.7}, {"matmul_by_dtype", {{"fp8_e5m2", 0.5}, {"fp8", 0.6}, {"fp16", 0.65}}}}),
      "test.json");
  EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::fp8_e4m3), 0.6);
  EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::fp8_e5m2), 0.5);
  EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::fp16), 0.65);
  EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::bf16), 0.7);
}

TEST(MatmulByDtype, BadValuesNameTheFieldAndWhatWasExpected) {
  auto with = [](const nlohmann::json& by, double fp8_tflops = 1979) {
    return rejection(system_doc({{"matmul", 0.7}, {"matmul_by_dtype", by}}, fp8_tflops));
  };
  const std::string zero = with({{"fp8", 0.0}});
  EXPECT_NE(zero.find("efficiency.matmul_by_dtype.fp8"), std::string::npos) << zero;
  EXPECT_NE(zero.find("(0, 1]"), std::string::npos) << zero;
  EXPECT_NE(with({{"fp8", 1.2}}).find("(0, 1]"), std::string::npos);
  const std::string unknown = with({{"int8", 0.5}});
  EXPECT_NE(unknown.find("efficiency.matmul_by_dtype.int8"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown field"), std::string::npos) << unknown;
  EXPECT_NE(with({{"fp8", "fast"}}).find("efficiency.matmul_by_dtype.fp8"), std::string::npos);
  const std::string no_peak = with({{"fp8", 0.6}}, 0);
  EXPECT_NE(no_peak.find("no fp8 peak"), std::string::npos) << no_peak;
  EXPECT_NE(rejection(system_doc({{"matmul", 0.7}, {"matmul_by_dtype", 0.6}})).find("efficiency.matmul_by_dtype"),
            std::string::npos);
  EXPECT_EQ(rejection(system_doc({{"matmul", 0.7}, {"matmul_by_dtype", {{"fp8", 1.0}}}})), "accepted");
}

TEST(MatmulByDtype, LowerFp8FigureSlowsFp8RunsAndLeavesBf16RunsAlone) {
  const ModelConfig m = shipped_model("llama3-8b");
  const char* base = R"({"seq_len": 4096, "micro_batch_num": 8, "world_size": 8)";
  const StrategyConfig bf16 = strategy_from_json(std::string(base) + "}", m);
  const StrategyConfig fp8 = strategy_from_json(std::string(base) + R"(, "fp8": true, "fp8_recipe": "tensorwise"})", m);
  const SystemConfig with = shipped_system("h100-sxm");
  SystemConfig without = with;
  without.matmul_efficiency_by_dtype = {};  // every dtype at matmul (the old behaviour)
  const DefaultEfficiencyModel e_with(with), e_without(without);
  EXPECT_DOUBLE_EQ(simulate(m, bf16, with, e_with).duration_time_per_iter_s,
                   simulate(m, bf16, without, e_without).duration_time_per_iter_s);
  const SimulationResult slow = simulate(m, fp8, with, e_with), fast = simulate(m, fp8, without, e_without);
  EXPECT_GT(slow.compute_s, fast.compute_s);
  // Only the FP8 GEMMs slow down (by 0.72 / 0.638 = 1.129), so compute grows by less than that.
  EXPECT_LT(slow.compute_s, fast.compute_s * 0.72 / 0.638);
  EXPECT_LT(slow.mfu, fast.mfu);
}

}  // namespace
}  // namespace calisim
