#include "cli/profile_sequence.h"

#include <fmt/format.h>

#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/config_catalog.h"
#include "cli/efficiency_source.h"
#include "cli/megatron_configs.h"
#include "cli/sequence_report.h"
#include "core/error.h"
#include "db/key_text.h"
#include "profiler/profile_plan.h"
#include "simulator/layer_sequence.h"

#include "profiler/device_match.h"
#include "profiler/gpu_runtime.h"

namespace calisim::cli {
namespace {

namespace prof = calisim::profiler;
using Json = nlohmann::ordered_json;

struct SequenceArgs {
  ConfigChoice configs;
  std::string system, db, layer = "auto", out, timer = "cupti";  // system: from the GPU, or h100-sxm for a dry run
  std::vector<std::string> overrides;
  std::vector<int> background_ctas{16, 32};
  double sustain_s = 20, budget_s = 1.0;
  int device = 0, warmup = 3;
  bool json = false, dry_run = false;
};

SequenceLayer parse_layer(const std::string& s, const ModelConfig& model) {
  if (s == "auto") return default_sequence_layer(model);
  if (s == "dense") return SequenceLayer::dense;
  if (s == "moe") return SequenceLayer::moe;
  throw InputError("<command line>", "--layer", "expected auto, dense or moe, got '" + s + "'");
}

std::string describe(const RunConfigs& rc, SequenceLayer layer) {
  const StrategyConfig& st = rc.strategy;
  return fmt::format("{} {} layer, tp {} cp {} ep {} etp {}, one micro-batch of {} x {} tokens, {}",
                     rc.model.model_name.empty() ? "model" : rc.model.model_name, to_string(layer), st.tp_size,
                     st.cp_size, st.ep_size, st.etp_size, st.micro_batch_size, st.seq_len,
                     st.enable_sequence_parallel && st.tp_size > 1 ? "sequence parallel" : "no sequence parallel");
}

// The report to --out (JSON), and to stdout as JSON (--json) or text.
void emit(const SequenceArgs& a, const Json& j, const std::string& text) {
  if (!a.out.empty()) {
    std::ofstream f(a.out);
    if (!f) throw InputError(a.out, "--out", "cannot write the report here");
    f << j.dump(2) << "\n";
    if (!f) throw InputError(a.out, "--out", "writing the report failed");
  }
  if (a.json) {
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("{}", text);
  if (!a.out.empty()) fmt::print("wrote {}\n", a.out);
}

// The CUDA plugin, and the device to run on, checked; InputError when the plugin cannot be loaded,
// there is no device or --device is out of range.
const prof::GpuRuntime& check_device(const SequenceArgs& a) {
  std::string why;
  const prof::GpuRuntime* gpu = prof::load_gpu_runtime(&why);
  if (gpu == nullptr) {
    throw InputError("<this build>", "profile sequence",
                     why + "; `--dry-run` lists the sequence and its simulated times in every build "
                           "(docs/profiling.md)");
  }
  const int gpus = gpu->device_count(&why);
  if (gpus == 0) {
    throw InputError("<this machine>", "", "no CUDA device to run the sequence on: " + why +
                                               " (--dry-run lists the sequence without one)");
  }
  if (a.device < 0 || a.device >= gpus) {
    throw InputError("<command line>", "--device", fmt::format("this machine has CUDA devices 0..{}", gpus - 1));
  }
  return *gpu;
}

// The shipped system of the GPU the sequence runs on (its peaks price the simulated column).
std::string system_of_gpu(const SequenceArgs& a) {
  const prof::CudaEnvironment env = check_device(a).describe(a.device);
  const std::string system = prof::system_for_cuda_device(env.name);
  if (system.empty()) {
    throw InputError("<command line>", "--system",
                     fmt::format("no shipped system matches '{}'; name one (`calisim configs list`)", env.name));
  }
  return system;
}

void run_measured(const SequenceArgs& a, const SequenceContext& ctx, const LayerSequence& seq) {
  if (a.timer != "cupti" && a.timer != "events") {
    throw InputError("<command line>", "--timer", "expected cupti or events, got '" + a.timer + "'");
  }
  if (!(a.sustain_s > 0)) throw InputError("<command line>", "--sustain-s", "expected a positive number of seconds");
  const prof::GpuRuntime& gpu = check_device(a);
  prof::CudaBenchOptions bo;
  bo.device = a.device;
  bo.allow_cupti = a.timer == "cupti";
  bo.loop.warmup_runs = a.warmup;
  bo.loop.rule.time_budget_s = a.budget_s;
  const std::unique_ptr<prof::GpuBench> bench = gpu.open_bench(bo);
  const prof::CudaEnvironment env = gpu.describe(a.device);
  std::vector<int> backgrounds;
  for (int c : a.background_ctas) {
    if (c == 0) continue;  // 0: no run beside a copy kernel
    if (c < 0 || c > env.sm_count) {
      throw InputError("<command line>", "--background-ctas",
                       fmt::format("each entry must be 0 (none) or 1..{} (the SM count), got {}", env.sm_count, c));
    }
    backgrounds.push_back(c);
  }
  std::vector<prof::PlannedKernel> kernels;
  for (const SequenceKernel& k : seq.kernels) kernels.push_back({db::key_kind(k.key), k.key});
  prof::SequenceOptions so;
  so.sustain_s = a.sustain_s;
  so.warmup_passes = a.warmup;
  so.background_ctas = backgrounds;
  so.progress = [](const std::string& line) { fmt::print(stderr, "{}\n", line); };
  const SequenceDevice device{env.name, env.driver_version, env.cuda_version, env.library_versions,
                              bench->timer_description(), env.sm_count, a.sustain_s};
  fmt::print(stderr, "sequence of {} kernels on {} (CUDA device {}), timer {}\n", kernels.size(), env.name, a.device,
             device.timer);
  const prof::SequenceMeasurement m = bench->measure_sequence(kernels, so);
  emit(a, sequence_report_json(ctx, seq, &device, &m), sequence_report_text(ctx, seq, &device, &m));
}

void run_sequence_command(const SequenceArgs& a) {
  if (a.configs.empty()) throw InputError("<command line>", "profile sequence", "give --model and --strategy (or --megatron)");
  const std::string system = !a.system.empty() ? a.system : a.dry_run ? "h100-sxm" : system_of_gpu(a);
  const RunConfigs rc = load_chosen_configs(a.configs, system, a.overrides);
  const EfficiencyChoice eff = make_efficiency_source(rc.system, rc.system_file, a.db);
  for (const auto& n : eff.notes) fmt::print(stderr, "note: {}\n", n);
  const SequenceLayer layer = parse_layer(a.layer, rc.model);
  const LayerSequence seq = layer_sequence(rc.model, rc.strategy, rc.system, *eff.model, layer, rc.model_file);
  const SequenceContext ctx{describe(rc, layer), rc.model_file, rc.strategy_file, system, eff.database,
                            rc.system.comm_compute_slowdown};
  if (a.dry_run) {
    emit(a, sequence_report_json(ctx, seq), sequence_report_text(ctx, seq));
  } else {
    run_measured(a, ctx, seq);
  }
}

}  // namespace

void register_profile_sequence(CLI::App* profile) {
  auto a = std::make_shared<SequenceArgs>();
  CLI::App* cmd = profile->add_subcommand(
      "sequence",
      "Run one layer's kernels alone and back to back for a sustained while on this GPU, beside the simulation");
  add_config_choice_options(cmd, a->configs);
  cmd->add_option("--system", a->system,
                  "system config name or path (default: the GPU's shipped system; h100-sxm for --dry-run)");
  cmd->add_option("--set", a->overrides, "override a config field, e.g. strategy.tp_size=4");
  cmd->add_option("--db", a->db, "efficiency database for the simulated column (default: the system's roofline)");
  cmd->add_option("--layer", a->layer, "auto (default: the model's typical layer), dense or moe");
  cmd->add_option("--sustain-s", a->sustain_s, "seconds of back-to-back passes per run (default 20)");
  cmd->add_option("--background-ctas", a->background_ctas,
                  "an extra run beside a copy kernel holding this many SMs, per entry (default 16,32; 0: none)")
      ->delimiter(',');
  cmd->add_option("--budget-s", a->budget_s, "time budget per kernel measured alone, seconds (default 1)");
  cmd->add_option("--warmup", a->warmup, "untimed runs before timing (default 3)");
  cmd->add_option("--device", a->device, "CUDA device (default 0)");
  cmd->add_option("--timer", a->timer, "cupti (default) or events, for the kernels alone");
  cmd->add_option("--out,-o", a->out, "write the report as JSON here");
  cmd->add_flag("--json", a->json, "print the report as JSON");
  cmd->add_flag("--dry-run", a->dry_run, "list the sequence and its simulated times; run nothing (any build)");
  cmd->callback([a] { run_sequence_command(*a); });
}

}  // namespace calisim::cli
