// The network model's hot path: collective_time_s (NCCL algorithm/protocol selection) per
// collective, over the distinct collectives of the DeepSeek-V3 1024-GPU simulation (plan_kernels)
// and over a grid of ops × rank counts × sizes on H100 SXM. Reported per collective.
#include <benchmark/benchmark.h>

#include <vector>

#include "simulator/comm_model.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/kernel_plan.h"

namespace {

using namespace calisim;

SystemConfig h100() {
  const std::string root = CALISIM_CONFIG_DIR;
  return parse_system(read_json_file(root + "/systems/h100-sxm.json"), "h100-sxm");
}

void run(benchmark::State& state, const std::vector<CollectiveKey>& keys, const SystemConfig& sys) {
  const DefaultEfficiencyModel eff(sys);
  for (auto _ : state) {
    double t = 0;
    for (const CollectiveKey& k : keys) t += collective_time_s(k, sys, eff);
    benchmark::DoNotOptimize(t);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(keys.size()));
}

void BM_CollectiveTimeDeepSeekV3Keys(benchmark::State& state) {
  static const SystemConfig sys = h100();
  static const std::vector<CollectiveKey> keys = [] {
    const std::string root = CALISIM_CONFIG_DIR;
    const ModelConfig model = parse_model(read_json_file(root + "/models/deepseek-v3.json"), "deepseek-v3", nullptr);
    StrategyConfig st = parse_strategy(read_json_file(root + "/strategies/deepseek-v3-1024gpu.json"), "s");
    validate_layout(model, st, "strategy", "model");
    return plan_kernels(model, st, sys).collective;
  }();
  run(state, keys, sys);
}
BENCHMARK(BM_CollectiveTimeDeepSeekV3Keys);

void BM_CollectiveTimeGrid(benchmark::State& state) {
  static const SystemConfig sys = h100();
  static const std::vector<CollectiveKey> keys = [] {
    std::vector<CollectiveKey> k;
    for (int op = 0; op < 5; ++op) {
      for (int n : {2, 8, 16, 64, 1024}) {
        for (std::int64_t b = 1024; b < (std::int64_t{1} << 33); b *= 4) {
          k.push_back({static_cast<CollectiveOp>(op), b, n, n < 8 ? n : 8, DType::bf16});
        }
      }
    }
    return k;
  }();
  run(state, keys, sys);
}
BENCHMARK(BM_CollectiveTimeGrid);

}  // namespace
