// One full simulation of Llama-3-70B on 1024 H100s (tp 8, pp 8, vpp 5, gbs 1024, seq 8192):
// op construction, costing through the EfficiencyModel, the event-driven interleaved schedule
// and memory. Target: < 50 µs on a 2-core machine. Plus a MoE case (DeepSeek-V3).
#include <benchmark/benchmark.h>

#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace {

using namespace calisim;

struct Fixture {
  ModelConfig model;
  StrategyConfig strategy;
  SystemConfig system;
  Fixture(const std::string& model_name, const std::string& strategy_name) {
    const std::string root = CALISIM_CONFIG_DIR;
    model = parse_model(read_json_file(root + "/models/" + model_name + ".json"), model_name, nullptr);
    strategy = parse_strategy(read_json_file(root + "/strategies/" + strategy_name + ".json"), strategy_name);
    system = parse_system(read_json_file(root + "/systems/h100-sxm.json"), "h100-sxm");
    validate_layout(model, strategy, "strategy", "model");
  }
};

const Fixture& llama() {
  static const Fixture f("llama3-70b", "llama3-70b-1024gpu-vpp5");
  return f;
}

void run_simulations(benchmark::State& state, const Fixture& f, bool details) {
  const DefaultEfficiencyModel eff(f.system);
  SimulateOptions opt;
  opt.details = details;
  for (auto _ : state) {
    SimulationResult r = simulate(f.model, f.strategy, f.system, eff, opt);
    benchmark::DoNotOptimize(r.duration_time_per_iter_s);
  }
}

void BM_SimulateLlama3_70B_1024Gpus(benchmark::State& state) { run_simulations(state, llama(), false); }
BENCHMARK(BM_SimulateLlama3_70B_1024Gpus)->Unit(benchmark::kMicrosecond);

void BM_SimulateWithDetails(benchmark::State& state) { run_simulations(state, llama(), true); }
BENCHMARK(BM_SimulateWithDetails)->Unit(benchmark::kMicrosecond);

// DeepSeek-V3 (MLA, 3 dense + 58 MoE layers) on 1024 H100s: tp 2, pp 16 (uneven), ep 64, 64
// micro-batches, with DP / TP / EP overlap and Megatron recompute modules.
void BM_SimulateDeepSeekV3_1024Gpus(benchmark::State& state) {
  static const Fixture f("deepseek-v3", "deepseek-v3-1024gpu");
  run_simulations(state, f, false);
}
BENCHMARK(BM_SimulateDeepSeekV3_1024Gpus)->Unit(benchmark::kMicrosecond);

// GPT-OSS 120B (alternating sliding-window / full attention: two layer variants costed and mixed)
// on 64 H100s: pp 4, ep 8, 32 micro-batches.
void BM_SimulateGptOss120B_64Gpus(benchmark::State& state) {
  static const Fixture f("gpt-oss-120b", "gpt-oss-120b-64gpu");
  run_simulations(state, f, false);
}
BENCHMARK(BM_SimulateGptOss120B_64Gpus)->Unit(benchmark::kMicrosecond);

}  // namespace
