// One full simulation of Llama-3-70B on 1024 H100s (tp 8, pp 8, vpp 5, gbs 1024, seq 8192):
// op construction, costing through the EfficiencyModel, the event-driven interleaved schedule
// and memory. Target: < 50 µs on a 2-core machine.
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
  Fixture() {
    const std::string root = CALISIM_CONFIG_DIR;
    model = parse_model(read_json_file(root + "/models/llama3-70b.json"), "llama3-70b", nullptr);
    strategy = parse_strategy(read_json_file(root + "/strategies/llama3-70b-1024gpu-vpp5.json"), "strategy");
    system = parse_system(read_json_file(root + "/systems/h100-sxm.json"), "h100-sxm");
    validate_layout(model, strategy, "strategy", "model");
  }
};

void BM_SimulateLlama3_70B_1024Gpus(benchmark::State& state) {
  static const Fixture f;
  const DefaultEfficiencyModel eff(f.system);
  SimulateOptions opt;
  opt.details = false;
  for (auto _ : state) {
    SimulationResult r = simulate(f.model, f.strategy, f.system, eff, opt);
    benchmark::DoNotOptimize(r.duration_time_per_iter_s);
  }
}
BENCHMARK(BM_SimulateLlama3_70B_1024Gpus)->Unit(benchmark::kMicrosecond);

void BM_SimulateWithDetails(benchmark::State& state) {
  static const Fixture f;
  const DefaultEfficiencyModel eff(f.system);
  for (auto _ : state) {
    SimulationResult r = simulate(f.model, f.strategy, f.system, eff);
    benchmark::DoNotOptimize(r.duration_time_per_iter_s);
  }
}
BENCHMARK(BM_SimulateWithDetails)->Unit(benchmark::kMicrosecond);

}  // namespace
