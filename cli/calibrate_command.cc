// `calisim calibrate`: one command from a configuration and a database to a calibrated system
// file (docs/calibration.md).
//
//   calisim calibrate --system SYSTEM --model MODEL --strategy STRATEGY --db FILE
//                     [--out SYSTEM.json] [--plan-out PLAN.json] [--sequence REPORT.json] [--set ...] [--json]
// Steps: plan the kernel shapes the configuration needs (simulator/kernel_plan.h); in a CUDA
// build on a machine whose GPU is the system's device, measure the ones the database lacks with
// the profiler (resume semantics: what the database holds is not measured again), otherwise list
// them and say why; fit the predictor and the α-β bandwidth fits on the device's rows; write the
// calibrated system (calibration/calibrated_system.h); print fit quality, fitted defaults and the
// coverage of the planned kernels. The library half is calibration/calibrate.h.
#include <fmt/format.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "calibration/calibrate.h"
#include "calibration/calibrated_system.h"
#include "calibration/sequence_setting.h"
#include "cli/commands.h"
#include "cli/megatron_configs.h"
#include "cli/config_catalog.h"
#include "cli/progress_bar.h"
#include "cli/table.h"
#include "core/error.h"
#include "db/records.h"
#include "simulator/config_loader.h"
#include "simulator/kernel_plan.h"

#include "profiler/device_match.h"
#include "profiler/gpu_runtime.h"
#include "profiler/runner.h"

namespace calisim::cli {
namespace {

namespace cal = calisim::calibration;
using nlohmann::ordered_json;

struct CalibrateArgs {
  ConfigChoice configs;  // --model / --strategy, or --megatron
  std::string system, db, out, plan_out;
  std::string sequence;  // --sequence REPORT: a `profile sequence` report's sustained kernel speed
  std::vector<std::string> overrides;
  bool json = false;
};

struct ProfilingOutcome {
  bool ran = false;
  std::string reason;  // why it did not run, or what it did
  std::size_t measured = 0, skipped = 0, already = 0;
};

// Measures `missing` on this machine's GPU into the database, as `calisim profile run --plan`
// does (same runner, store and resume rules, default measuring options). Without the CUDA plugin
// (a build without CUDA, or its libraries missing here) it measures nothing and says why.
ProfilingOutcome profile_missing(const profiler::ProfilePlan& missing, const RunConfigs& rc, const std::string& db_path,
                                 bool quiet) {
  ProfilingOutcome o;
  std::string why;
  const profiler::GpuRuntime* gpu = profiler::load_gpu_runtime(&why);
  if (gpu == nullptr) {
    o.reason = why;
    return o;
  }
  const int gpus = gpu->device_count(&why);
  if (gpus == 0) {
    o.reason = "no CUDA device on this machine (" + why + ")";
    return o;
  }
  const profiler::CudaEnvironment env = gpu->describe(0);
  // Rows are stored under the system's device name: measuring another GPU would mislabel them.
  const std::string matching = profiler::system_for_cuda_device(env.name);
  const std::string gpu_device =
      matching.empty() ? std::string()
                       : parse_system(read_json_file(resolve_config(ConfigKind::system, matching)), matching).device.name;
  if (gpu_device != rc.system.device.name) {
    o.reason = fmt::format("this machine's GPU '{}' is not the system's device '{}'; profile on a machine with it",
                           env.name, rc.system.device.name);
    return o;
  }
  if (missing.kernels.empty()) {
    o.ran = true;
    o.reason = "nothing to measure: the database has a row for every planned kernel";
    return o;
  }
  const std::unique_ptr<profiler::GpuBench> bench = gpu->open_bench(profiler::CudaBenchOptions{});
  const SystemConfig& sys = rc.system;
  db::DeviceRecord dev = db::DeviceRecord::from_spec(sys.device);
  dev.sm_count = env.sm_count;
  dev.l2_mb = env.l2_mb;
  dev.driver_version = env.driver_version;
  dev.cuda_version = env.cuda_version;
  dev.library_versions = env.library_versions;
  const profiler::LinkBandwidth links{sys.scale_up.gpu_gb_s, sys.scale_out.gpu_gb_s};
  profiler::StoreOptions so;
  so.notes = fmt::format("calisim calibrate ({}); GPU '{}' ({} GPU(s)), sm_{}; timer {}; cold L2; driver {}, CUDA {}, {}",
                         missing.description, env.name, gpus, env.compute_capability, bench->timer_description(),
                         env.driver_version, env.cuda_version, env.library_versions);
  profiler::ProfileStore store(db_path, dev, env.name, so);
  profiler::ProgressPrinter progress(stderr, !quiet && isatty(fileno(stderr)) != 0);
  profiler::RunnerOptions ro;
  ro.progress = &progress;
  const profiler::RunReport r = profiler::run_plan(missing, *bench, store, sys.device, links, ro);
  o.ran = true;
  o.measured = r.measured;
  o.skipped = r.skipped;
  o.already = r.already_done;
  o.reason = fmt::format("measured {} of {} missing kernels on '{}' in {} ({} skipped, {} recorded as done earlier)",
                         r.measured, r.planned, env.name, profiler::format_duration(r.elapsed_s), r.skipped,
                         r.already_done);
  return o;
}

// The base system file as written (key order kept), with the --set system.… overrides applied.
ordered_json base_system_doc(const std::string& file, const std::vector<std::string>& overrides) {
  const nlohmann::json plain = read_json_file(file);
  ordered_json doc;
  {
    std::ifstream in(file, std::ios::binary);
    doc = ordered_json::parse(in);  // read_json_file above has already reported syntax errors
  }
  nlohmann::json model, strategy, system = plain;
  bool any = false;
  for (const auto& o : overrides) {
    if (o.rfind("system.", 0) != 0) continue;
    apply_override(o, model, strategy, system);
    any = true;
  }
  if (any) doc = doc.patch(ordered_json::parse(nlohmann::json::diff(plain, system).dump()));
  return doc;
}

std::string num(double v) { return fmt::format("{:.4g}", v); }

// The device's GEMM and attention rows are fractions of its dense peak per dtype: a record without
// the peak (a database imported from a CSV export, which has device names only) cannot be fitted.
// Refused naming the device (as `calisim predict` does) rather than calibrating from what is left.
void require_peaks(const cal::DeviceRows& rows, const std::string& db_path) {
  std::array<bool, kDTypeCount> used{};
  for (const auto& b : rows.runs) {
    for (const auto& r : b.rows.gemm) used[static_cast<int>(r.key.dtype)] = true;
    for (const auto& r : b.rows.attention) used[static_cast<int>(r.key.dtype)] = true;
  }
  std::string missing;
  for (int t = 0; t < kDTypeCount; ++t) {
    if (used[t] && !(rows.record.peak_tflops[t] > 0)) {
      missing += (missing.empty() ? "" : ", ") + std::string(to_string(static_cast<DType>(t)));
    }
  }
  if (missing.empty()) return;
  throw InputError(db_path, fmt::format("device '{}'", rows.record.name),
                   fmt::format("its specs are missing: it has GEMM / attention rows in {} but no dense peak for {} "
                               "(a database imported from a CSV export has device names only; CSV carries no "
                               "specs). Import the device's specs, e.g. `calisim db import {} --from EXPORT.json` "
                               "with a JSON export of the database the rows came from",
                               missing, missing, db_path));
}

// `s` in single quotes (a quote inside written '\''): one shell word, so the printed command can
// be pasted whatever the value holds (JSON lists, spaces).
std::string single_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// `s` as one shell word: unchanged when it holds only characters no shell treats specially,
// else single-quoted.
std::string shell_quote(const std::string& s) {
  const bool plain = !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                       "0123456789_-.,/:=+@%") == std::string::npos;
  return plain ? s : single_quoted(s);
}

// The --set options the follow-up `calisim simulate` needs to reproduce this configuration: the
// model.* and strategy.* ones. system.* overrides are already in the calibrated file (written
// from the overridden system), and repeating them would replace the calibrated values.
std::string simulate_overrides(const std::vector<std::string>& overrides) {
  std::string out;
  for (const auto& o : overrides) {
    if (o.rfind("system.", 0) == 0) continue;
    out += " --set " + single_quoted(o);
  }
  return out;
}

ordered_json to_json(const cal::Calibration& c) {
  ordered_json j;
  j["device"] = c.device;
  j["rows_used"] = c.rows_used;
  ordered_json fq = ordered_json::array();
  for (const auto& f : c.fit_quality) {
    fq.push_back({{"family", f.family}, {"n", f.n}, {"loo_mape_pct", f.loo_mape_pct}, {"max_ape_pct", f.max_ape_pct}});
  }
  j["fit_quality"] = fq;
  ordered_json bw = ordered_json::array();
  for (const auto& b : c.bandwidth_fits) {
    bw.push_back({{"what", b.what}, {"basis", b.basis}, {"alpha_us", b.alpha_us}, {"beta_gb_s", b.beta_gb_s},
                  {"efficiency", b.efficiency}});
  }
  j["bandwidth_fits"] = bw;
  ordered_json d = ordered_json::array();
  for (const auto& v : c.defaults) {
    d.push_back({{"field", v.field}, {"datasheet", v.datasheet}, {"fitted", v.fitted ? ordered_json(*v.fitted) : ordered_json()},
                 {"basis", v.basis}});
  }
  j["defaults"] = d;
  ordered_json cov = ordered_json::array();
  for (const auto& r : c.coverage) {
    cov.push_back({{"family", r.family}, {"planned", r.planned}, {"measured", r.measured},
                   {"interpolated", r.interpolated}, {"scaled", r.scaled}, {"roofline", r.roofline},
                   {"roofline_predictor_covers", r.roofline_predictor_covers}});
  }
  j["coverage"] = cov;
  return j;
}

std::string render(const cal::Calibration& c, const std::vector<cal::MissingFamily>& missing,
                   const ProfilingOutcome& prof) {
  std::string out;
  std::size_t n_missing = 0;
  for (const auto& m : missing) n_missing += m.count;
  out += prof.ran ? "profiling: " + prof.reason + "\n" : "profiling: not run: " + prof.reason + "\n";
  if (n_missing == 0) {
    out += "missing: none (every planned kernel has a row of this device)\n\n";
  } else {
    out += fmt::format("missing: {} planned kernels have no row of this device{}\n", n_missing,
                       prof.ran ? "" : "; carrying on with what the database holds");
    Table t({"family", "missing", "first keys"});
    for (const auto& m : missing) {
      std::string keys;
      for (const auto& k : m.first_keys) keys += (keys.empty() ? "" : " | ") + k;
      if (m.count > m.first_keys.size()) keys += " | ...";
      t.add_row({m.family, std::to_string(m.count), keys});
    }
    out += t.render() + "\n";
  }
  out += fmt::format("predictor fit on {} rows of '{}' (leave-one-out: each row predicted from the others)\n",
                     c.rows_used, c.device);
  if (c.fit_quality.empty()) {
    out += "  no family has enough rows for leave-one-out\n";
  } else {
    Table t({"family", "rows", "LOO MAPE %", "max %"});
    for (const auto& f : c.fit_quality) {
      t.add_row({f.family, std::to_string(f.n), fmt::format("{:.1f}", f.loo_mape_pct), fmt::format("{:.1f}", f.max_ape_pct)});
    }
    out += t.render();
  }
  out += "\nbandwidth fits (time = alpha + bytes / beta; collectives on wire bytes)\n";
  if (c.bandwidth_fits.empty()) {
    out += "  no collective or memory rows or stored fits\n";
  } else {
    Table t({"fit", "from", "alpha us", "beta GB/s", "efficiency"});
    for (const auto& b : c.bandwidth_fits) {
      t.add_row({b.what, b.basis, fmt::format("{:.2f}", b.alpha_us), fmt::format("{:.1f}", b.beta_gb_s),
                 fmt::format("{:.3f}", b.efficiency)});
    }
    out += t.render();
  }
  out += "\nsystem defaults\n";
  Table d({"field", "datasheet", "calibrated", "basis"});
  for (const auto& v : c.defaults) {
    d.add_row({v.field, num(v.datasheet), v.fitted ? num(*v.fitted) : "(kept)", v.basis});
  }
  out += d.render();
  out += "\ncoverage of the planned kernels (answers `calisim simulate` gets with the calibrated system)\n";
  Table cov({"family", "planned", "measured", "interpolated", "scaled", "roofline", "of which predictor fit covers"});
  for (const auto& r : c.coverage) {
    cov.add_row({r.family, std::to_string(r.planned), std::to_string(r.measured), std::to_string(r.interpolated),
                 std::to_string(r.scaled), std::to_string(r.roofline), std::to_string(r.roofline_predictor_covers)});
  }
  out += cov.render();
  out += "  (roofline kernels are priced with the calibrated defaults above, which the predictor's fit enters)\n";
  return out;
}

void run(const CalibrateArgs& a) {
  const RunConfigs rc = load_chosen_configs(a.configs, a.system, a.overrides);
  // A bad --sequence report is refused before any profiling or fitting.
  std::optional<cal::SequenceSetting> sequence;
  if (!a.sequence.empty()) sequence = cal::read_sequence_report(read_json_file(a.sequence), a.sequence);
  const KernelPlan plan = plan_kernels(rc.model, rc.strategy, rc.system);

  // What the database lacks before any profiling (the device may not be in it yet).
  profiler::ProfilePlan missing_before;
  {
    cal::DeviceRows none;
    none.record.name = rc.system.device.name;
    cal::DeviceRows rows = none;
    if (std::filesystem::exists(a.db)) {
      try {
        rows = cal::load_device_rows(a.db, rc.system.device.name);
      } catch (const InputError&) {
        rows = none;  // no such device yet: everything is missing (reported below if profiling cannot run)
      }
    }
    missing_before = cal::missing_kernels(plan, rows);
  }
  missing_before.description =
      fmt::format("kernels of {} on system {} missing from {}", a.configs.describe(), a.system, a.db);
  ProfilingOutcome prof;
  prof = profile_missing(missing_before, rc, a.db, a.json);

  cal::DeviceRows rows;
  try {
    rows = cal::load_device_rows(a.db, rc.system.device.name);
  } catch (const InputError& e) {
    // Nothing of this device in the database and nothing measured here: there is nothing to fit.
    // The plan of what to measure is still what the user needs, so it is written before stopping.
    const std::size_t planned_missing = missing_before.kernels.size();
    std::string next = "add the device's rows (calisim db import, or calisim profile run on a machine with that GPU)";
    if (!a.plan_out.empty()) {
      profiler::write_plan_file(missing_before, a.plan_out);
      next = fmt::format("the {} planned kernels were written to {}: run `calisim profile run --plan {} --db {}` on "
                         "a machine with that GPU, then calibrate again",
                         planned_missing, a.plan_out, a.plan_out, a.db);
    } else {
      next += fmt::format("; --plan-out FILE writes the {} planned kernels as a profile plan", planned_missing);
    }
    throw InputError(e.file(), e.where(),
                     fmt::format("{}; nothing was measured ({}); {}", e.problem(),
                                 prof.reason.empty() ? "profiling did not run" : prof.reason, next));
  }
  require_peaks(rows, a.db);
  const profiler::ProfilePlan missing = cal::missing_kernels(plan, rows);
  if (!a.plan_out.empty()) {
    profiler::ProfilePlan p = missing;
    p.description = missing_before.description;
    profiler::write_plan_file(p, a.plan_out);
  }

  ProgressBar bar("calibrate: fitting");
  auto on_step = [](void* user, int done, int total) {
    static_cast<ProgressBar*>(user)->update(static_cast<std::uint64_t>(done), static_cast<std::uint64_t>(total));
  };
  const cal::Calibration c = cal::calibrate(plan, rc.system, rows, on_step, &bar);
  bar.finish();

  const std::string out_path =
      a.out.empty() ? rc.system.name + "-calibrated.json" : a.out;
  cal::CalibratedSystemOptions so{rc.system_file, a.db, out_path, db::now_utc_iso8601()};
  ordered_json doc = cal::calibrated_system(base_system_doc(rc.system_file, a.overrides), c, so);
  if (sequence) {
    cal::apply_sequence_setting(doc, *sequence, a.sequence);
    parse_system(nlohmann::json(doc), out_path);  // still a system (the setting is in range)
  }
  cal::write_system_file(doc, out_path);

  const auto missing_summary = cal::summarize_missing(missing);
  if (a.json) {
    ordered_json j;
    j["system"] = rc.system_file;
    j["database"] = a.db;
    j["out"] = out_path;
    j["efficiency_db"] = doc["efficiency_db"];
    j["planned"] = {{"gemm", plan.gemm.size()}, {"attention", plan.attention.size()},
                    {"memory", plan.memory.size()}, {"collective", plan.collective.size()}};
    j["profiling"] = {{"ran", prof.ran}, {"note", prof.reason}, {"measured", prof.measured}, {"skipped", prof.skipped}};
    ordered_json m = ordered_json::array();
    for (const auto& f : missing_summary) m.push_back({{"family", f.family}, {"count", f.count}, {"first_keys", f.first_keys}});
    j["missing"] = m;
    if (!a.plan_out.empty()) j["missing_plan"] = a.plan_out;
    if (sequence) {
      j["sequence"] = {{"report", a.sequence},
                       {"sustained_kernel_speed", sequence->sustained_kernel_speed},
                       {"device", sequence->device},
                       {"layer", sequence->description}};
    }
    j["calibration"] = to_json(c);
    j["warnings"] = rc.warnings;
    fmt::print("{}\n", j.dump(2));
    return;
  }
  std::string text = fmt::format("calisim calibrate: {} / {} on {} (device '{}'), database {}\n", rc.model_file,
                                 rc.strategy_file, rc.system_file, rc.system.device.name, a.db);
  text += fmt::format("planned {} kernels: {} GEMM, {} attention, {} memory, {} collective\n", plan.size(),
                      plan.gemm.size(), plan.attention.size(), plan.memory.size(), plan.collective.size());
  text += render(c, missing_summary, prof);
  text += fmt::format("\nwrote {} (efficiency_db {}; {} of {} defaults calibrated)\n", out_path,
                      doc["efficiency_db"].get<std::string>(), c.fitted_count(), c.defaults.size());
  if (sequence) {
    text += fmt::format("efficiency.sustained_kernel_speed {:.3f} from {} ({} on {})\n", sequence->sustained_kernel_speed,
                        a.sequence, sequence->description.empty() ? "a layer" : sequence->description,
                        sequence->device);
  }
  if (!a.plan_out.empty()) {
    text += fmt::format("missing kernels written to {} (measure them: calisim profile run --plan {} --db {})\n",
                        a.plan_out, a.plan_out, a.db);
  }
  std::string configs;
  if (a.configs.megatron.empty()) {
    configs = "--model " + shell_quote(a.configs.model) + " --strategy " + shell_quote(a.configs.strategy);
  } else {
    configs = "--megatron " + shell_quote(a.configs.megatron);
    for (const auto& v : a.configs.vars) configs += " --var " + shell_quote(v);
  }
  text += fmt::format("simulate with it: calisim simulate {} --system {}{}\n", configs, shell_quote(out_path),
                      simulate_overrides(a.overrides));
  for (const auto& w : rc.warnings) text += "warning: " + w + "\n";
  fmt::print("{}", text);
}

}  // namespace

void register_calibrate(CLI::App& app) {
  auto args = std::make_shared<CalibrateArgs>();
  CLI::App* sub = app.add_subcommand(
      "calibrate", "Fit a system's efficiencies to a database (profiling what is missing when a GPU is here)");
  sub->add_option("--system", args->system, "system to calibrate: shipped name or path")->required();
  add_config_choice_options(sub, args->configs);
  sub->add_option("--db", args->db, "efficiency database (SQLite) with the device's rows")->required();
  sub->add_option("--out", args->out, "calibrated system file to write (default: <system name>-calibrated.json)");
  sub->add_option("--plan-out", args->plan_out, "also write the missing kernels as a profile plan");
  sub->add_option("--sequence", args->sequence,
                  "a `calisim profile sequence` report (JSON) measured on this system's GPU: its sustained kernel "
                  "speed goes into the calibrated file (efficiency.sustained_kernel_speed)");
  sub->add_option("--set", args->overrides,
                  "override a config field: section.key=value (section model|strategy|system), repeatable")
      ->take_all();
  sub->add_flag("--json", args->json, "print one JSON document instead of tables");
  sub->callback([args] { run(*args); });
}

}  // namespace calisim::cli
