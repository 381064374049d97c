#include "cli/profile_sequence.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli/config_catalog.h"
#include "cli/efficiency_source.h"
#include "cli/megatron_configs.h"
#include "cli/table.h"
#include "core/error.h"
#include "db/key_text.h"
#include "profiler/profile_plan.h"
#include "profiler/sequence_stats.h"
#include "simulator/layer_sequence.h"

#ifdef CALISIM_HAVE_CUDA_PROFILER
#include "profiler/cuda_bench.h"
#include "profiler/sequence_bench.h"
#endif

namespace calisim::cli {
namespace {

namespace prof = calisim::profiler;
using Json = nlohmann::ordered_json;

struct SequenceArgs {
  ConfigChoice configs;
  std::string system = "h100-sxm", db, layer = "auto", out, timer = "cupti";
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

std::string layer_name(SequenceLayer l) { return l == SequenceLayer::moe ? "moe" : "dense"; }

std::string describe(const RunConfigs& rc, SequenceLayer layer) {
  const StrategyConfig& st = rc.strategy;
  return fmt::format("{} {} layer, tp {} cp {} ep {} etp {}, one micro-batch of {} x {} tokens, {}",
                     rc.model.model_name.empty() ? "model" : rc.model.model_name, layer_name(layer), st.tp_size,
                     st.cp_size, st.ep_size, st.etp_size, st.micro_batch_size, st.seq_len,
                     st.enable_sequence_parallel && st.tp_size > 1 ? "sequence parallel" : "no sequence parallel");
}

// The per-kernel table and JSON: simulated time, and with measurements the time alone.
struct KernelRow {
  const SequenceKernel* k;
  double alone_s = 0;  // 0 = not measured
  std::string algorithm;
};

double sum_alone(const std::vector<KernelRow>& rows) {
  double s = 0;
  for (const auto& r : rows) s += r.alone_s;
  return s;
}

std::string ms(double s) { return fmt::format("{:.3f}", s * 1e3); }

void print_kernels(const std::vector<KernelRow>& rows, bool measured) {
  std::vector<std::string> header{"#", "op", "role", "kind", "simulated ms"};
  if (measured) header.insert(header.end(), {"alone ms", "alone / simulated"});
  header.push_back("key");
  Table t(header);
  double sim = 0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const SequenceKernel& k = *rows[i].k;
    sim += k.simulated_s;
    std::vector<std::string> row{std::to_string(i + 1), k.op, k.role, std::string(to_string(k.kind)), ms(k.simulated_s)};
    if (measured) {
      row.push_back(ms(rows[i].alone_s));
      row.push_back(k.simulated_s > 0 ? fmt::format("{:.3f}", rows[i].alone_s / k.simulated_s) : "-");
    }
    row.push_back(k.key);
    t.add_row(row);
  }
  std::vector<std::string> total{"", "sum", "", "", ms(sim)};
  if (measured) {
    total.push_back(ms(sum_alone(rows)));
    total.push_back(sim > 0 ? fmt::format("{:.3f}", sum_alone(rows) / sim) : "-");
  }
  total.push_back("");
  t.add_row(total);
  fmt::print("{}", t.render());
}

Json kernels_json(const std::vector<KernelRow>& rows, bool measured) {
  Json a = Json::array();
  for (const auto& r : rows) {
    Json j{{"op", r.k->op},       {"role", r.k->role},   {"kind", std::string(to_string(r.k->kind))},
           {"key", r.k->key},     {"flops", r.k->flops}, {"bytes", r.k->bytes},
           {"simulated_s", r.k->simulated_s}};
    if (measured) {
      j["alone_s"] = r.alone_s;
      j["algorithm"] = r.algorithm;
    }
    a.push_back(j);
  }
  return a;
}

Json header_json(const SequenceArgs& a, const RunConfigs& rc, const LayerSequence& seq, const EfficiencyChoice& eff) {
  return Json{{"calisim_sequence", 1},
              {"description", describe(rc, seq.layer)},
              {"model", rc.model_file},
              {"strategy", rc.strategy_file},
              {"system", a.system},
              {"efficiency_source", eff.database.empty() ? "roofline defaults of the system file" : eff.database},
              {"layer", layer_name(seq.layer)},
              {"forward_kernels", seq.forward_kernels},
              {"backward_kernels", seq.kernels.size() - seq.forward_kernels},
              {"collectives_left_out", seq.collectives_left_out}};
}

void write_or_print(const SequenceArgs& a, const Json& j) {
  if (!a.out.empty()) {
    std::ofstream f(a.out);
    if (!f) throw InputError(a.out, "--out", "cannot write the report here");
    f << j.dump(2) << "\n";
    if (!f) throw InputError(a.out, "--out", "writing the report failed");
  }
  if (a.json) fmt::print("{}\n", j.dump(2));
}

#ifdef CALISIM_HAVE_CUDA_PROFILER

Json run_json(const prof::SustainedRun& r, double alone_median_s) {
  const prof::PassStats p = prof::summarize_passes(r.pass_s);
  const prof::ClockStats c = prof::summarize_states(r.states);
  Json j{{"background_ctas", r.background_ctas},
         {"groups", p.n},
         {"passes_per_group", r.passes_per_group},
         {"pass_median_s", p.median_s},
         {"pass_p10_s", p.p10_s},
         {"pass_p90_s", p.p90_s},
         {"first_tenth_s", p.first_tenth_s},
         {"last_tenth_s", p.last_tenth_s},
         {"drift", p.drift()},
         {"nvml_samples", c.samples},
         {"sm_clock_median_mhz", c.sm_clock_median_mhz},
         {"sm_clock_min_mhz", c.sm_clock_min_mhz},
         {"max_sm_clock_mhz", c.max_sm_clock_mhz},
         {"power_median_w", c.power_median_w},
         {"power_max_w", c.power_max_w},
         {"temperature_max_c", c.temperature_max_c},
         {"slowdown_reasons", prof::describe_reasons(c.slowdown_reasons)}};
  if (r.background_ctas > 0) {
    j["background_gb_s"] = r.background_s > 0 ? r.background_bytes / r.background_s / 1e9 : 0.0;
    j["background_hit_cap"] = r.background_hit_cap;
    j["slowdown"] = alone_median_s > 0 ? p.median_s / alone_median_s - 1 : 0.0;
  }
  return j;
}

void run_measured(const SequenceArgs& a, const RunConfigs& rc, const LayerSequence& seq, const EfficiencyChoice& eff) {
  if (a.timer != "cupti" && a.timer != "events") {
    throw InputError("<command line>", "--timer", "expected cupti or events, got '" + a.timer + "'");
  }
  if (!(a.sustain_s > 0)) throw InputError("<command line>", "--sustain-s", "expected a positive number of seconds");
  std::string why;
  const int gpus = prof::cuda_device_count(&why);
  if (gpus == 0) {
    throw InputError("<this machine>", "", "no CUDA device to run the sequence on: " + why +
                                               " (--dry-run lists the sequence without one)");
  }
  if (a.device < 0 || a.device >= gpus) {
    throw InputError("<command line>", "--device", fmt::format("this machine has CUDA devices 0..{}", gpus - 1));
  }
  prof::CudaBenchOptions bo;
  bo.device = a.device;
  bo.allow_cupti = a.timer == "cupti";
  bo.loop.warmup_runs = a.warmup;
  bo.loop.rule.time_budget_s = a.budget_s;
  prof::CudaBench bench(bo);
  const prof::CudaEnvironment env = prof::describe_cuda(a.device);
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
  fmt::print(stderr, "sequence of {} kernels on {} (CUDA device {}), timer {}\n", kernels.size(), env.name, a.device,
             bench.timer_description());
  const prof::SequenceMeasurement m = prof::measure_sequence(bench, kernels, so);

  std::map<std::string, std::size_t> index;
  for (std::size_t i = 0; i < m.distinct_keys.size(); ++i) index[m.distinct_keys[i]] = i;
  std::vector<KernelRow> rows;
  for (const SequenceKernel& k : seq.kernels) {
    const prof::Measurement& iso = m.isolated[index.at(k.key)];
    rows.push_back({&k, iso.summary.median_s, iso.algorithm});
  }
  const double alone_sum = sum_alone(rows), simulated = seq.simulated_s();
  const double alone_median = prof::summarize_passes(m.runs.front().pass_s).median_s;

  Json j = header_json(a, rc, seq, eff);
  j["device"] = {{"name", env.name},
                 {"sm_count", env.sm_count},
                 {"driver", env.driver_version},
                 {"cuda", env.cuda_version},
                 {"libraries", env.library_versions},
                 {"timer", bench.timer_description()}};
  j["sustain_s"] = a.sustain_s;
  j["kernels"] = kernels_json(rows, true);
  j["simulated_s"] = simulated;
  j["alone_sum_s"] = alone_sum;
  j["runs"] = Json::array();
  for (const auto& r : m.runs) j["runs"].push_back(run_json(r, alone_median));
  // alone / sustained: above 1 when back-to-back kernels run faster than their sum alone (warm
  // caches), below 1 when the sustained step is slower (power, clocks, gaps between kernels).
  j["alone_sum_over_sustained"] = alone_sum / alone_median;
  j["simulated_over_sustained"] = simulated / alone_median;
  write_or_print(a, j);
  if (a.json) return;

  fmt::print("calisim profile sequence: {}\n", describe(rc, seq.layer));
  fmt::print("  on {} (system {}); simulated with {}\n", env.name, a.system,
             eff.database.empty() ? "the system file's roofline defaults" : eff.database);
  fmt::print("  {} kernels ({} forward, {} backward); {} collective(s) left out (one GPU)\n\n", seq.kernels.size(),
             seq.forward_kernels, seq.kernels.size() - seq.forward_kernels, seq.collectives_left_out);
  print_kernels(rows, true);
  fmt::print("\n");
  Table t({"run", "pass ms", "p10 - p90 ms", "drift", "alone sum / pass", "simulated / pass", "SM MHz", "power W",
           "slowdown reasons", "background GB/s", "slowdown"});
  for (const auto& r : m.runs) {
    const prof::PassStats p = prof::summarize_passes(r.pass_s);
    const prof::ClockStats c = prof::summarize_states(r.states);
    t.add_row({r.background_ctas == 0 ? "alone" : fmt::format("beside a copy on {} SMs", r.background_ctas),
               ms(p.median_s), fmt::format("{} - {}", ms(p.p10_s), ms(p.p90_s)), fmt::format("{:.3f}", p.drift()),
               fmt::format("{:.3f}", alone_sum / p.median_s), fmt::format("{:.3f}", simulated / p.median_s),
               c.samples ? fmt::format("{:.0f} (min {:.0f})", c.sm_clock_median_mhz, c.sm_clock_min_mhz) : "-",
               c.samples ? fmt::format("{:.0f}", c.power_median_w) : "-",
               c.slowdown_reasons ? prof::describe_reasons(c.slowdown_reasons) : "none",
               r.background_ctas ? fmt::format("{:.0f}", r.background_s > 0 ? r.background_bytes / r.background_s / 1e9
                                                                              : 0.0)
                                 : "-",
               r.background_ctas ? fmt::format("{:+.1f} %", 100 * (p.median_s / alone_median - 1)) : "-"});
  }
  fmt::print("{}", t.render());
  fmt::print("\nalone sum / pass below 1: the sustained layer is slower than its kernels alone (clocks, power, gaps);\n"
             "slowdown: what holding SMs and HBM beside the layer costs it (the system's comm_compute_slowdown "
             "is {:.2f})\n",
             rc.system.comm_compute_slowdown);
  if (!a.out.empty()) fmt::print("wrote {}\n", a.out);
}

#else

void run_measured(const SequenceArgs&, const RunConfigs&, const LayerSequence&, const EfficiencyChoice&) {
  throw InputError("<this build>", "profile sequence",
                   "this calisim was built without CUDA, so it cannot run kernels; `--dry-run` lists the sequence "
                   "and its simulated times in every build (docs/profiling.md)");
}

#endif

void run_sequence_command(const SequenceArgs& a) {
  if (a.configs.empty()) throw InputError("<command line>", "profile sequence", "give --model and --strategy (or --megatron)");
  const RunConfigs rc = load_chosen_configs(a.configs, a.system, a.overrides);
  const EfficiencyChoice eff = make_efficiency_source(rc.system, rc.system_file, a.db);
  for (const auto& n : eff.notes) fmt::print(stderr, "note: {}\n", n);
  const SequenceLayer layer = parse_layer(a.layer, rc.model);
  const LayerSequence seq = layer_sequence(rc.model, rc.strategy, rc.system, *eff.model, layer, rc.model_file);
  if (!a.dry_run) {
    run_measured(a, rc, seq, eff);
    return;
  }
  std::vector<KernelRow> rows;
  for (const SequenceKernel& k : seq.kernels) rows.push_back({&k, 0, ""});
  Json j = header_json(a, rc, seq, eff);
  j["kernels"] = kernels_json(rows, false);
  j["simulated_s"] = seq.simulated_s();
  write_or_print(a, j);
  if (a.json) return;
  fmt::print("calisim profile sequence --dry-run: {}\n", describe(rc, seq.layer));
  fmt::print("  {} kernels ({} forward, {} backward); {} collective(s) left out (one GPU); simulated with {}\n\n",
             seq.kernels.size(), seq.forward_kernels, seq.kernels.size() - seq.forward_kernels,
             seq.collectives_left_out, eff.database.empty() ? "the system file's roofline defaults" : eff.database);
  print_kernels(rows, false);
  if (!a.out.empty()) fmt::print("wrote {}\n", a.out);
}

}  // namespace

void register_profile_sequence(CLI::App* profile) {
  auto a = std::make_shared<SequenceArgs>();
  CLI::App* cmd = profile->add_subcommand(
      "sequence",
      "Run one layer's kernels alone and back to back for a sustained while on this GPU, beside the simulation");
  add_config_choice_options(cmd, a->configs);
  cmd->add_option("--system", a->system, "system config name or path (default h100-sxm)");
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
