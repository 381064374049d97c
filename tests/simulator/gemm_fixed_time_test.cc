// efficiency.gemm_fixed_us: the fixed part of one GEMM kernel in the roofline path (launch,
// prologue, epilogue, pipeline fill). The loader reads and checks it; OpCoster adds it once per
// GEMM kernel in series (LayerOp::gemm_serial_kernels) and only to roofline-priced GEMMs; routed
// experts run one kernel per local expert, over TransformerEngine's 4 compute streams with grouped
// GEMM and one after another in SequentialMLP.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <string>

#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/layer_ops.h"
#include "simulator/op_cost.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_system;
using testing_support::strategy_from_json;

// A roofline model whose GEMMs claim to be measured (a database row): the fixed part is inside.
class MeasuredGemms final : public EfficiencyModel {
 public:
  explicit MeasuredGemms(const SystemConfig& s) : roofline_(s) {}
  Efficiency gemm(const GemmKey& k) const override { return {roofline_.gemm(k).value, EfficiencySource::measured}; }
  Efficiency attention(const AttentionKey& k) const override { return roofline_.attention(k); }
  Efficiency memory_op(const MemoryOpKey& k) const override { return roofline_.memory_op(k); }
  Efficiency collective(const CollectiveKey& k) const override { return roofline_.collective(k); }

 private:
  DefaultEfficiencyModel roofline_;
};

TEST(GemmFixedTime, AddedOncePerRooflineKernelInSeries) {
  SystemConfig sys = shipped_system("h100-sxm");
  ASSERT_EQ(sys.gemm_fixed_us, 4.0);
  SystemConfig none = sys;
  none.gemm_fixed_us = 0;
  const DefaultEfficiencyModel eff(sys), eff_none(none);
  const OpCoster with(sys, eff), without(none, eff_none);
  const GemmKey k{4096, 4096, 4096, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_NEAR(with.gemm_s(k, nullptr) - without.gemm_s(k, nullptr), 4e-6, 1e-12);
  EXPECT_NEAR(with.gemm_s(k, nullptr, nullptr, 4) - without.gemm_s(k, nullptr, nullptr, 4), 16e-6, 1e-12);
  // A strided batch is one kernel: its fixed part is paid once.
  const GemmKey batched{2048, 2048, 128, 32, DType::bf16, GemmLayout::TN, false};
  EXPECT_NEAR(with.gemm_s(batched, nullptr) - without.gemm_s(batched, nullptr), 4e-6, 1e-12);
  // A measured (database) time already contains it.
  const MeasuredGemms measured(sys), measured_none(none);
  EXPECT_DOUBLE_EQ(OpCoster(sys, measured).gemm_s(k, nullptr), OpCoster(none, measured_none).gemm_s(k, nullptr));
}

TEST(GemmFixedTime, RoutedExpertsRunOneKernelPerExpert) {
  const ModelConfig m = testing_support::shipped_model("qwen3-30b-a3b");  // 128 experts
  const SystemConfig sys = shipped_system("h100-sxm");
  auto expert_fc1 = [&](bool grouped) {
    const StrategyConfig st = strategy_from_json(
        std::string(R"({"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64, "world_size": 8,
            "ep_size": 8, "moe_grouped_gemm": )") + (grouped ? "true" : "false") + "}",
        m);
    const ModelOps ops = build_model_ops(m, st, 8);
    const LayerOp* fc1 = testing_support::find_op(ops.moe_layer, "expert_fc1");
    EXPECT_NE(fc1, nullptr);
    return fc1 ? *fc1 : LayerOp{};
  };
  const LayerOp grouped = expert_fc1(true), sequential = expert_fc1(false);
  EXPECT_EQ(grouped.gemm_fwd.batch, 16);  // 128 experts over ep 8
  EXPECT_EQ(grouped.gemm_serial_kernels, 4);  // 16 kernels over TransformerEngine's 4 streams
  EXPECT_EQ(sequential.gemm_serial_kernels, 16);
  SystemConfig none = sys;
  none.gemm_fixed_us = 0;
  const DefaultEfficiencyModel eff(sys), eff_none(none);
  const OpCoster with(sys, eff), without(none, eff_none);
  const OpTiming a = with.cost(grouped, nullptr), b = without.cost(grouped, nullptr);
  EXPECT_NEAR(a.fwd_compute_s - b.fwd_compute_s, 4 * 4e-6, 1e-12);
  EXPECT_NEAR(a.bwd_compute_s - b.bwd_compute_s, 2 * 4 * 4e-6, 1e-12);  // dgrad and wgrad
  EXPECT_NEAR(with.cost(sequential, nullptr).fwd_compute_s - without.cost(sequential, nullptr).fwd_compute_s,
              16 * 4e-6, 1e-12);
}

TEST(GemmFixedTime, LoaderChecksTheField) {
  nlohmann::json doc = read_json_file(std::string(CALISIM_CONFIG_DIR) + "/systems/h100-sxm.json");
  doc["efficiency"]["gemm_fixed_us"] = -1;
  const std::string refusal = testing_support::system_refusal(doc);
  EXPECT_NE(refusal, "(accepted)") << "negative gemm_fixed_us accepted";
  EXPECT_NE(refusal.find("efficiency.gemm_fixed_us"), std::string::npos) << refusal;
  EXPECT_NE(refusal.find("non-negative"), std::string::npos) << refusal;
  doc["efficiency"].erase("gemm_fixed_us");
  EXPECT_EQ(parse_system(doc, "h100-sxm.json").gemm_fixed_us, 0.0);  // absent: none
  // Shipped where a GEMM kernel was measured (Hopper) or assumed alike (Blackwell); not on the
  // A100s or the MI300X, which no measurement covers.
  for (const char* name : {"h100-sxm", "h100-pcie", "h200", "b200", "b300", "gb200-nvl72", "gb300-nvl72"}) {
    EXPECT_EQ(shipped_system(name).gemm_fixed_us, 4.0) << name;
  }
  for (const char* name : {"a100-sxm-80g", "a100-pcie-80g", "mi300x"}) {
    EXPECT_EQ(shipped_system(name).gemm_fixed_us, 0.0) << name;
  }
}

}  // namespace
}  // namespace calisim
