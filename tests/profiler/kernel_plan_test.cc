// simulator/kernel_plan: the keys `calisim profile plan` lists are exactly what simulate() asks.
#include "simulator/kernel_plan.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <unordered_set>

#include "../simulator/test_support.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

// Answers `measured` for the planned keys and roofline for anything else.
class PlanOnlyModel final : public EfficiencyModel {
 public:
  PlanOnlyModel(const KernelPlan& p, const SystemConfig& s) : roofline_(s) {
    for (const auto& k : p.gemm) gemm_.insert(k);
    for (const auto& k : p.attention) attention_.insert(k);
    for (const auto& k : p.memory) memory_.insert(k);
    for (const auto& k : p.collective) collective_.insert(k);
  }
  Efficiency gemm(const GemmKey& k) const override { return pick(gemm_.count(k), roofline_.gemm(k)); }
  Efficiency attention(const AttentionKey& k) const override {
    return pick(attention_.count(k), roofline_.attention(k));
  }
  Efficiency memory_op(const MemoryOpKey& k) const override { return pick(memory_.count(k), roofline_.memory_op(k)); }
  Efficiency collective(const CollectiveKey& k) const override {
    return pick(collective_.count(k), roofline_.collective(k));
  }

 private:
  static Efficiency pick(bool planned, Efficiency e) {
    if (planned) e.source = EfficiencySource::measured;
    return e;
  }
  DefaultEfficiencyModel roofline_;
  std::unordered_set<GemmKey> gemm_;
  std::unordered_set<AttentionKey> attention_;
  std::unordered_set<MemoryOpKey> memory_;
  std::unordered_set<CollectiveKey> collective_;
};

const char* kTp2Pp2 = R"({"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 64, "dtype": "bf16",
  "world_size": 16, "tp_size": 2, "pp_size": 2, "enable_sequence_parallel": true, "zero_state": 1,
  "use_flash_sdp": true, "enable_recompute": false})";

TEST(KernelPlan, CoversEverythingTheSimulationAsksAbout) {
  const ModelConfig model = shipped_model("llama3-8b");
  const SystemConfig system = shipped_system("h100-sxm");
  const StrategyConfig st = strategy_from_json(kTp2Pp2, model);
  const KernelPlan plan = plan_kernels(model, st, system);
  ASSERT_GT(plan.size(), 0u);

  const PlanOnlyModel eff(plan, system);
  const SimulationResult r = simulate(model, st, system, eff);
  EXPECT_EQ(r.kernels_per_source[static_cast<int>(EfficiencySource::roofline)], 0)
      << "a planned key is missing";
  EXPECT_GT(r.kernels_per_source[static_cast<int>(EfficiencySource::measured)], 0);
}

TEST(KernelPlan, Fp8GemmsAreTnInEveryPass) {
  // TransformerEngine runs FP8 data- and weight-gradient GEMMs as TN on transposed FP8 copies
  // (Hopper's cuBLASLt FP8 kernels take no other layout), so the plan asks the profiler for TN;
  // the bf16 LM head and attention's batched GEMMs keep their NN / NT keys.
  const ModelConfig model = shipped_model("llama3-8b");
  const SystemConfig system = shipped_system("h100-sxm");
  std::string fp8 = kTp2Pp2;
  fp8.insert(fp8.rfind('}'), R"(, "fp8": true, "fp8_recipe": "delayed")");
  const StrategyConfig st = strategy_from_json(fp8, model);
  const KernelPlan plan = plan_kernels(model, st, system);
  int fp8_keys = 0, bf16_nn = 0;
  for (const GemmKey& k : plan.gemm) {
    if (k.dtype == DType::fp8_e4m3 || k.dtype == DType::fp8_e5m2) {
      ++fp8_keys;
      EXPECT_EQ(k.layout, GemmLayout::TN) << to_string(k);
    } else if (k.layout == GemmLayout::NN) {
      ++bf16_nn;
    }
  }
  EXPECT_GT(fp8_keys, 0);
  EXPECT_GT(bf16_nn, 0);
  const std::int64_t tokens = 4096, h = model.hidden_size;
  const std::int64_t qkv = (model.head_num + 2 * model.kv_head_num) * model.head_size / 2;
  auto has = [&](const GemmKey& k) { return std::find(plan.gemm.begin(), plan.gemm.end(), k) != plan.gemm.end(); };
  EXPECT_TRUE(has({tokens, h, qkv, 1, DType::fp8_e5m2, GemmLayout::TN, false}));  // dgrad: e5m2 gradients
}

TEST(KernelPlan, MegatronGemmConventionAndCollectives) {
  const ModelConfig model = shipped_model("llama3-8b");
  const SystemConfig system = shipped_system("h100-sxm");
  const StrategyConfig st = strategy_from_json(kTp2Pp2, model);
  const KernelPlan plan = plan_kernels(model, st, system);
  const std::int64_t tokens = 4096, h = model.hidden_size, t = 2;
  const std::int64_t qkv = (model.head_num + 2 * model.kv_head_num) * model.head_size / t;
  auto has = [&](const GemmKey& k) { return std::find(plan.gemm.begin(), plan.gemm.end(), k) != plan.gemm.end(); };
  EXPECT_TRUE(has({tokens, qkv, h, 1, DType::bf16, GemmLayout::TN, false}));  // forward: m=tokens k=in n=out
  EXPECT_TRUE(has({tokens, h, qkv, 1, DType::bf16, GemmLayout::NN, false}));  // dgrad: m=tokens k=out n=in
  // wgrad NT: m=out k=tokens n=in (accumulating into fp32 main grads or not, as the strategy says).
  EXPECT_TRUE(has({qkv, h, tokens, 1, DType::bf16, GemmLayout::NT, true}) ||
              has({qkv, h, tokens, 1, DType::bf16, GemmLayout::NT, false}));

  ASSERT_FALSE(plan.attention.empty());
  EXPECT_TRUE(std::any_of(plan.attention.begin(), plan.attention.end(), [](const AttentionKey& a) {
    return a.direction == AttentionDirection::backward && a.heads_q == 16 && a.heads_kv == 4;
  }));
  // TP 2 with sequence parallelism: all-gather and reduce-scatter over 2 ranks; PP: send/recv.
  auto has_coll = [&](CollectiveOp op, int ranks) {
    return std::any_of(plan.collective.begin(), plan.collective.end(),
                       [&](const CollectiveKey& c) { return c.op == op && c.ranks == ranks; });
  };
  EXPECT_TRUE(has_coll(CollectiveOp::all_gather, 2));
  EXPECT_TRUE(has_coll(CollectiveOp::reduce_scatter, 2));
  EXPECT_TRUE(has_coll(CollectiveOp::send_recv, 2));
  EXPECT_TRUE(has_coll(CollectiveOp::reduce_scatter, 4));  // data parallel (16 / 2 / 2) gradients
  EXPECT_TRUE(std::any_of(plan.memory.begin(), plan.memory.end(), [](const MemoryOpKey& m) { return m.kind == "adam_step"; }));
}

TEST(KernelPlan, SortedWithoutRepeatsAndDeterministic) {
  const ModelConfig model = shipped_model("llama3-8b");
  const SystemConfig system = shipped_system("h100-sxm");
  const StrategyConfig st = strategy_from_json(kTp2Pp2, model);
  const KernelPlan a = plan_kernels(model, st, system);
  const KernelPlan b = plan_kernels(model, st, system);
  EXPECT_EQ(a.gemm, b.gemm);
  EXPECT_EQ(a.memory, b.memory);
  for (std::size_t i = 1; i < a.gemm.size(); ++i) EXPECT_LT(to_string(a.gemm[i - 1]), to_string(a.gemm[i]));
  for (std::size_t i = 1; i < a.collective.size(); ++i) {
    EXPECT_LT(to_string(a.collective[i - 1]), to_string(a.collective[i]));
  }
}

TEST(KernelPlan, SingleRankGroupsPlanNoCollectives) {
  const ModelConfig model = shipped_model("llama3-8b");
  const SystemConfig system = shipped_system("h100-sxm");
  const StrategyConfig st = strategy_from_json(R"({"seq_len": 2048, "micro_batch_size": 1, "global_batch_size": 8,
    "dtype": "bf16", "world_size": 1, "tp_size": 1, "pp_size": 1, "zero_state": 1})", model);
  EXPECT_TRUE(plan_kernels(model, st, system).collective.empty());
}

}  // namespace
}  // namespace calisim
