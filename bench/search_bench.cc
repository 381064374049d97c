// Strategy search throughput on the default space (calisim search's defaults):
//   Llama-3-70B on 1024 H100s, global batch 1024, seq 8192 — target ≥ 200,000 candidates/s on 2 cores;
//   Llama-3-405B on 16,384 H100s, global batch 2048, seq 8192 — the full space in under 10 s;
//   DeepSeek-V3 on 1024 H100s, global batch 4096, seq 4096 — a MoE default space (ep 1..256).
// Reported as items/s (candidates per second) with every core in use.
#include <benchmark/benchmark.h>

#include <thread>

#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/search.h"

namespace {

using namespace calisim;

struct Setup {
  ModelConfig model;
  SystemConfig system;
  StrategyConfig base;
  SearchSpace space;
  Setup(const char* model_name, int world, long long gbs, const char* orders = "tp_first", long long seq = 8192) {
    const std::string root = CALISIM_CONFIG_DIR;
    model = parse_model(read_json_file(root + "/models/" + model_name + ".json"), model_name, nullptr);
    system = parse_system(read_json_file(root + "/systems/h100-sxm.json"), "h100-sxm");
    base = parse_strategy(nlohmann::json{{"seq_len", seq}, {"global_batch_size", gbs}}, "base");
    space.world_size = world;
    space.global_batch_size = gbs;
    space.orders = rank_order_list(orders);
    fill_default_lists(space, model, system.scale_up_domain_size);
  }
};

void run(benchmark::State& state, const Setup& s) {
  const DefaultEfficiencyModel eff(s.system);
  SearchOptions o;
  o.threads = static_cast<int>(std::thread::hardware_concurrency());
  std::uint64_t candidates = 0;
  SearchResult last;
  for (auto _ : state) {
    last = run_search(s.model, s.base, s.system, eff, s.space, o);
    candidates += last.space_size;
  }
  state.SetItemsProcessed(static_cast<std::int64_t>(candidates));
  state.counters["candidates"] = static_cast<double>(last.space_size);
  state.counters["feasible"] = static_cast<double>(last.feasible_count);
  state.counters["simulated"] = static_cast<double>(last.simulated);
}

void BM_SearchLlama3_70B_1024Gpus(benchmark::State& state) {
  static const Setup s("llama3-70b", 1024, 1024);
  run(state, s);
}
BENCHMARK(BM_SearchLlama3_70B_1024Gpus)->Unit(benchmark::kMillisecond)->UseRealTime();

// The same space with Megatron's rank order alone (no placement search).
void BM_SearchLlama3_70B_1024Gpus_MegatronOrder(benchmark::State& state) {
  static const Setup s("llama3-70b", 1024, 1024, "megatron");
  run(state, s);
}
BENCHMARK(BM_SearchLlama3_70B_1024Gpus_MegatronOrder)->Unit(benchmark::kMillisecond)->UseRealTime();

// All 120 rank orders (the opt-in `--orders all`).
void BM_SearchLlama3_70B_1024Gpus_AllOrders(benchmark::State& state) {
  static const Setup s("llama3-70b", 1024, 1024, "all");
  run(state, s);
}
BENCHMARK(BM_SearchLlama3_70B_1024Gpus_AllOrders)->Unit(benchmark::kMillisecond)->UseRealTime();

void BM_SearchLlama3_405B_16384Gpus(benchmark::State& state) {
  static const Setup s("llama3-405b", 16384, 2048);
  run(state, s);
}
BENCHMARK(BM_SearchLlama3_405B_16384Gpus)->Unit(benchmark::kMillisecond)->UseRealTime()->Iterations(1);

// A MoE model's default space also walks expert parallelism (every power of two dividing the 256
// experts): 414,720 candidates.
void BM_SearchDeepSeekV3_1024Gpus(benchmark::State& state) {
  static const Setup s("deepseek-v3", 1024, 4096, "tp_first", 4096);
  run(state, s);
}
BENCHMARK(BM_SearchDeepSeekV3_1024Gpus)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
