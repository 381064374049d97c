// Reading a Megatron-LM launch script into calisim configs: the shell reader (assignments, arrays,
// expansions, branches) and the flag mapping with Megatron's defaults, then the config parse and
// layout check that simulate does next. The flagship's script (examples/megatron). It runs once
// per command, so microseconds are plenty; this keeps it from becoming the slow step of a
// simulation (tens of microseconds).
#include <benchmark/benchmark.h>

#include <fstream>
#include <sstream>

#include "simulator/config_loader.h"
#include "simulator/launch_script.h"
#include "simulator/megatron_import.h"

namespace {

using namespace calisim;

const std::string& script_text() {
  static const std::string text = [] {
    std::ifstream f(std::string(CALISIM_SOURCE_DIR) + "/examples/megatron/llama3_70b_64gpu.sh");
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }();
  return text;
}

void BM_ReadLaunchScript(benchmark::State& state) {
  for (auto _ : state) {
    LaunchScript s = read_launch_script(script_text());
    benchmark::DoNotOptimize(s.options.size());
  }
}
BENCHMARK(BM_ReadLaunchScript)->Unit(benchmark::kMicrosecond);

void BM_ImportFlags(benchmark::State& state) {
  MegatronImportOptions opt;
  opt.vocab_size = 128256;
  const LaunchScript s = read_launch_script(script_text());
  for (auto _ : state) {
    const MegatronImport imp = import_megatron(s, "llama3_70b_64gpu.sh", opt);
    benchmark::DoNotOptimize(imp.settings.size());
  }
}
BENCHMARK(BM_ImportFlags)->Unit(benchmark::kMicrosecond);

void BM_ImportAndValidate(benchmark::State& state) {
  MegatronImportOptions opt;
  opt.vocab_size = 128256;
  for (auto _ : state) {
    const MegatronImport imp = import_megatron(read_launch_script(script_text()), "llama3_70b_64gpu.sh", opt);
    ModelConfig model = parse_model(imp.model, "script", nullptr);
    StrategyConfig strategy = parse_strategy(imp.strategy, "script");
    validate_layout(model, strategy, "script", "script");
    benchmark::DoNotOptimize(strategy.dp_size);
  }
}
BENCHMARK(BM_ImportAndValidate)->Unit(benchmark::kMicrosecond);

}  // namespace
