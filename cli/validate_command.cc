// `calisim validate`: simulate published measured runs and report the error per row, per source
// and per GPU (calibration/). Rows that cannot be simulated are listed with the reason.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <optional>

#include "calibration/measured_runs.h"
#include "calibration/run_fit.h"
#include "calibration/run_mapping.h"
#include "calibration/validation.h"
#include "cli/commands.h"
#include "cli/config_catalog.h"
#include "cli/efficiency_source.h"
#include "cli/mapped_run_inputs.h"
#include "cli/validate_command.h"
#include "cli/validate_components.h"
#include "cli/validate_fit.h"
#include "cli/table.h"
#include "core/error.h"
#include "db/efficiency_db.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace calisim::cli {
namespace {

using namespace calisim::calibration;

struct SystemEntry {
  SystemConfig config;
  std::shared_ptr<const EfficiencyModel> efficiency;
  std::string database, note;
};

std::string pct(double f) { return fmt::format("{:+.1f}%", 100 * f); }

// The efficiency database cannot be read (missing, not SQLite, newer schema): bad input for the
// whole run, not a row's reason, so evaluate() lets it through its per-row catch.
class DatabaseError : public InputError {
 public:
  explicit DatabaseError(const InputError& e) : InputError(e.file(), e.where(), e.problem()) {}
};

// Creates `dir` (and its parents) for an option that writes files into it. A path through a
// regular file, or one without permission, is the user's to fix: InputError, not a filesystem
// exception (which would read as an internal error).
void ensure_directory(const std::string& dir, const char* option) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec || !std::filesystem::is_directory(dir)) {
    throw InputError(dir, option,
                     fmt::format("cannot create the directory ({})", ec ? ec.message() : "a file of that name exists"));
  }
}

// Writes the row's mapped inputs as DIR/<run>.{model,strategy,system}.json, so that
// `calisim simulate --model DIR/S03.model.json ...` reproduces the row with the per-op table
// (overrides included). validate_runs() has created DIR.
void dump_inputs(const std::string& run_id, const MappedRun& m, const std::vector<std::string>& overrides,
                 const std::string& dir) {
  const nlohmann::json system = mapped_system_doc(m, overrides);
  const std::pair<const char*, const nlohmann::json*> docs[] = {
      {"model", &m.model}, {"strategy", &m.strategy}, {"system", &system}};
  for (const auto& [kind, doc] : docs) {
    const std::string path = fmt::format("{}/{}.{}.json", dir, run_id, kind);
    std::ofstream out(path);
    if (!out || !(out << doc->dump(2) << "\n")) throw InputError(path, "--dump-inputs", "cannot write the file");
  }
}

// True when `path` opens as an efficiency database that has no device or alias `device`: the one
// failure of make_efficiency_source that is about a row's GPU rather than the database.
bool database_lacks_device(const std::string& path, const std::string& device) {
  try {
    auto db = calisim::db::EfficiencyDb::open(path, calisim::db::OpenMode::read_only);
    return !db.find_device(device);
  } catch (const InputError&) {
    return false;
  }
}

// The document a row cites without its table / column detail: sources citing one document are one
// cross-validation fold (--fit-system, --components).
std::string cited_document(const MeasuredRun& run) {
  const std::string ref = run.text("source_ref");
  return ref.substr(0, ref.find(" ("));
}

// Simulates one row; when `fit` is given, also keeps what fitting needs (its mapped system, parsed
// configs and measured step).
RowResult evaluate(const MeasuredRun& run, const ValidateArgs& a, std::map<std::string, SystemEntry>& systems,
                   std::vector<std::pair<std::string, FitRow>>* fit) {
  MappedRun m;
  try {
    m = map_with_overrides(run, a.overrides);
  } catch (const std::exception& e) {
    return not_simulated(run, m, e.what());
  }
  if (!m.ok) return not_simulated(run, m, m.reason);
  if (!a.dump_dir.empty()) dump_inputs(run.run_id, m, a.overrides, a.dump_dir);
  const std::string with_set = a.overrides.empty() ? "" : " with --set overrides";
  try {
    const std::string key = m.system + "|" + m.system_patch.dump();
    auto it = systems.find(key);
    if (it == systems.end()) {
      SystemEntry e;
      const std::string file = resolve_config(ConfigKind::system, m.system);
      e.config = parse_system(mapped_system_doc(m, a.overrides), file + with_set);
      try {
        const EfficiencyChoice c = make_efficiency_source(e.config, file, a.db);
        e.efficiency = c.model;
        e.database = c.database;
        for (const auto& n : c.notes) e.note += (e.note.empty() ? "" : "; ") + n;
      } catch (const InputError& err) {
        // A database for another device: this GPU falls back to the system file's roofline. Any
        // other failure (the file cannot be opened or is no database) stops the validation.
        if (!database_lacks_device(err.file(), e.config.device.name)) throw DatabaseError(err);
        e.efficiency = std::make_shared<const DefaultEfficiencyModel>(e.config);
        e.note = std::string("database not used: ") + err.what();
      }
      it = systems.emplace(key, std::move(e)).first;
    }
    const SystemEntry& sys = it->second;
    const std::string where = "row " + run.run_id + with_set;
    std::vector<std::string> not_modeled;
    const ModelConfig model = parse_model(m.model, where + " (model)", &not_modeled);
    StrategyConfig strategy = parse_strategy(m.strategy, where + " (strategy)");
    validate_layout(model, strategy, where + " (strategy)", where + " (model)");
    SimulateOptions opt;
    opt.details = false;
    const SimulationResult res = simulate(model, strategy, sys.config, *sys.efficiency, opt);
    RowResult r = score_run(run, m, res);
    r.cls = run_class(model, strategy, sys.config.name);
    if (!sys.note.empty()) r.warnings.push_back(sys.note);
    if (fit) {
      fit->emplace_back(m.system, FitRow{run.run_id, run.source, cited_document(run), model, strategy,
                                         sys.config, r.measured_step_s});
    }
    return r;
  } catch (const DatabaseError&) {
    throw;
  } catch (const std::exception& e) {
    return not_simulated(run, m, e.what());
  }
}

std::string render(const std::vector<RowResult>& rows, const ValidationSummary& s, const std::string& file) {
  std::string out = fmt::format("calisim validate: {} ({} rows)\n\n", file, rows.size());
  Table t({"run", "model", "GPUs", "system", "layout", "measured s", "simulated s", "error", "mem err", "from"});
  int skipped = 0;
  for (const auto& r : rows) {
    if (!r.simulated) {
      ++skipped;
      continue;
    }
    t.add_row({r.run_id, r.model, std::to_string(r.gpus), r.system, r.layout, fmt::format("{:.4g}", r.measured_step_s),
               fmt::format("{:.4g}", r.simulated_step_s), pct(r.step_error), r.mem_error ? pct(*r.mem_error) : "-",
               r.measured_from.substr(0, r.measured_from.find(' '))});
  }
  out += t.render() + "\n";
  out += "inferred settings (not stated by the source):\n";
  for (const auto& r : rows) {
    if (r.inferred.empty()) continue;
    std::string line;
    for (const auto& i : r.inferred) line += (line.empty() ? "" : "; ") + i;
    out += fmt::format("  {}: {}\n", r.run_id, line);
  }
  // Rows whose own columns disagree, and what the simulation warned about (memory, recompute).
  bool any_warning = false;
  for (const auto& r : rows) {
    if (r.warnings.empty()) continue;
    if (!any_warning) out += "\nwarnings:\n";
    any_warning = true;
    for (const auto& w : r.warnings) out += fmt::format("  {}: {}\n", r.run_id, w);
  }
  if (skipped > 0) {
    out += fmt::format("\nnot simulated ({} rows):\n", skipped);
    for (const auto& r : rows) {
      if (!r.simulated) out += fmt::format("  {} (line {}, {}): {}\n", r.run_id, r.line, r.model, r.reason);
    }
  }
  const auto stats_table = [](const char* title, const std::vector<ErrorStats>& v) {
    Table st({title, "rows", "MAPE", "median", "worst", "bias"});
    for (const auto& e : v) {
      st.add_row({e.group.substr(0, 70), std::to_string(e.count), fmt::format("{:.1f}%", 100 * e.mape),
                  fmt::format("{:.1f}%", 100 * e.median), fmt::format("{} ({})", pct(e.worst), e.worst_run),
                  fmt::format("{} ({})", pct(e.bias), bias_label(e))});
    }
    return st.render();
  };
  out += "\nstep-time error = (simulated - measured) / measured\n";
  out += stats_table("per source", s.by_source) + "\n";
  out += stats_table("per GPU (system)", s.by_gpu) + "\n";
  if (!s.by_class.empty()) {
    // Signed percentiles: the envelope `simulate --accuracy` gives a run of the class.
    Table ct({"per class (system, model, precision)", "rows", "MAPE", "p10", "median", "p90", "bias"});
    for (const auto& e : s.by_class) {
      ct.add_row({e.group, std::to_string(e.count), fmt::format("{:.1f}%", 100 * e.mape), pct(e.p10), pct(e.p50),
                  pct(e.p90), fmt::format("{} ({})", pct(e.bias), bias_label(e))});
    }
    out += ct.render() + "  (signed step-time errors; p10 / median / p90 of the class's rows)\n\n";
  }
  out += stats_table("overall", {s.all, s.all_throughput, s.memory}) + "\n";
  Table w({"10 worst rows", "model", "layout", "error", "measured from"});
  for (const RowResult* r : s.worst) w.add_row({r->run_id, r->model, r->layout, pct(r->step_error), r->measured_from});
  out += w.render();
  if (s.all.count > 0) {
    // Every measured run ran: a row the simulation says does not fit is a false negative.
    std::string ids;
    for (const RowResult* r : s.not_fitting) ids += (ids.empty() ? "" : " ") + r->run_id;
    out += fmt::format("\nmemory fit check: {} of {} simulated rows do not fit their GPU's memory in the simulation, "
                       "although every measured run ran{}{}\n",
                       s.not_fitting.size(), s.all.count, s.not_fitting.empty() ? "" : ": ", ids);
    // Where the efficiencies came from: with --db, how much of each system the database priced.
    out += fmt::format("kernel lookups of the simulated rows: {}\n", kernel_sources_text(s.kernels_per_source));
    if (s.kernels_per_source_by_gpu.size() > 1) {
      for (const auto& [system, counts] : s.kernels_per_source_by_gpu) {
        out += fmt::format("  {}: {}\n", system, kernel_sources_text(counts));
      }
    }
  }
  out += "\nFLOP convention: calisim's MFU counts 6·N + non-causal attention per token against the dense peak of the\n"
         "training dtype (bf16/fp16, also for FP8 runs); measured MFU is recomputed from the measured step time with\n"
         "that convention (--json: mfu.measured_pct, mfu.measured_causal_pct). See docs/validation.md.\n";
  return out;
}

// One validation: every row simulated and scored, the summary, the optional fit.
struct ValidationRun {
  std::vector<RowResult> rows;
  ValidationSummary summary;
  std::map<std::string, SystemEntry> systems;
  FitArgs fit_args;
  std::optional<FitReport> fit;
  std::optional<std::vector<SystemComponents>> components;
  std::vector<std::pair<std::string, std::string>> components_written;  // system -> --components-out file
};

ValidationRun validate_runs(const ValidateArgs& a) {
  // A malformed --set is the user's error, not a row's: refuse it before reading any row.
  for (const auto& o : a.overrides) {
    nlohmann::json m = nlohmann::json::object(), s = nlohmann::json::object(), y = nlohmann::json::object();
    apply_override(o, m, s, y);
  }
  // An unknown part is refused before any row runs.
  const std::array<bool, calibration::kStepComponents> parts = component_mask(a.component_parts);
  constexpr int kCompute = static_cast<int>(calibration::StepComponent::compute);
  constexpr int kAttention = static_cast<int>(calibration::StepComponent::attention);
  if (!a.components_out.empty()) {
    // The in-situ file carries kernel speeds only: compute, and attention when fitted apart.
    bool kernels_only = parts[kCompute];
    for (int k = 0; k < calibration::kStepComponents; ++k) {
      if (parts[k] && k != kCompute && k != kAttention) kernels_only = false;
    }
    if (!a.components || !kernels_only) {
      throw InputError("<command line>", "--components-out",
                       "writes the kernel multipliers as efficiency.sustained_kernel_speed (and "
                       "sustained_attention_speed): it needs --components compute, or --components compute attention");
    }
  }
  if (a.select_parts && !a.components) {
    throw InputError("<command line>", "--select-parts", "chooses among the parts of --components: give --components");
  }
  if (!a.fit_system.empty() && !a.db.empty()) {
    throw InputError("<command line>", "--fit-system",
                     "fits the system file's roofline defaults; it cannot be combined with --db (measured efficiencies)");
  }
  if (a.fit_system.empty() && (!a.fit_out.empty() || a.fit_groups != std::vector<std::string>{"compute"})) {
    throw InputError("<command line>", "--fit/--fit-out", "need --fit-system SYSTEM");
  }
  // The database and output directories before any row is simulated: a --db that cannot be read
  // would otherwise price every row from the roofline and exit 0.
  if (!a.db.empty()) {
    try {
      calisim::db::EfficiencyDb::open(a.db, calisim::db::OpenMode::read_only);
    } catch (const InputError& e) {
      throw InputError(e.file(), e.where().empty() ? "--db" : "--db, " + e.where(), e.problem());
    }
  }
  if (!a.dump_dir.empty()) ensure_directory(a.dump_dir, "--dump-inputs");
  if (a.fit_system == "all" && !a.fit_out.empty()) ensure_directory(a.fit_out, "--fit-out");
  if (!a.components_out.empty()) ensure_directory(a.components_out, "--components-out");
  std::vector<MeasuredRun> runs = read_measured_runs(a.runs);
  if (runs.empty()) {
    throw InputError(fmt::format("{}", fmt::join(a.runs, ", ")), "", "no data rows (only a header): nothing to validate");
  }
  if (!a.source.empty()) {
    std::erase_if(runs, [&](const MeasuredRun& r) { return r.source.find(a.source) == std::string::npos; });
    if (runs.empty()) {
      throw InputError(fmt::format("{}", fmt::join(a.runs, ", ")), "--source",
                       "no row's source contains '" + a.source + "'");
    }
  }
  ValidationRun v;
  v.rows.reserve(runs.size());
  std::vector<std::pair<std::string, FitRow>> fit_rows;
  for (const auto& r : runs) v.rows.push_back(evaluate(r, a, v.systems, a.fit_system.empty() ? nullptr : &fit_rows));
  // Nothing simulated is no validation: say why instead of printing empty statistics with exit 0.
  // With --set overrides the usual cause is the override itself (a field no config has).
  if (std::none_of(v.rows.begin(), v.rows.end(), [](const RowResult& r) { return r.simulated; })) {
    const RowResult& first = v.rows.front();
    const std::string why = fmt::format("{} (line {}): {}", first.run_id, first.line, first.reason);
    if (!a.overrides.empty()) {
      throw InputError("<command line>", fmt::format("--set {}", fmt::join(a.overrides, " --set ")),
                       fmt::format("no row of {} could be simulated with these overrides; the first row fails with: "
                                   "{}",
                                   fmt::join(a.runs, ", "), why));
    }
    throw InputError(fmt::format("{}", fmt::join(a.runs, ", ")), "",
                     fmt::format("none of the {} rows could be simulated; the first: {}", v.rows.size(), why));
  }
  v.summary = summarize(v.rows);
  v.fit_args = FitArgs{a.runs, a.source, a.fit_system, a.fit_out, a.fit_groups};
  if (!a.fit_system.empty()) v.fit = run_fits(v.fit_args, fit_rows);
  if (a.components) {
    std::vector<std::string> documents;
    for (const auto& r : runs) documents.push_back(cited_document(r));
    v.components = step_components(v.rows, documents, a.component_parts, a.select_parts);
    if (!a.components_out.empty()) {
      v.components_written = write_insitu_systems(
          {a.runs, a.db, a.source, a.components_out, parts[kAttention]},
          *v.components);
    }
  }
  if (!a.report.empty()) {
    std::ofstream out(a.report);
    if (!out) throw InputError(a.report, "--report", "cannot write the report");
    std::string title = "calisim validate: " + runs_files_label(a.runs);
    if (!a.overrides.empty()) title += fmt::format(" (--set {})", fmt::join(a.overrides, " "));
    const std::string appendix = (v.fit ? fit_html(v.fit_args, *v.fit) : std::string()) +
                                 (v.components ? components_html(*v.components) : std::string());
    out << html_report(v.rows, v.summary, title, appendix);
  }
  return v;
}

nlohmann::json to_document(const ValidateArgs& a, const ValidationRun& v) {
  const ValidationSummary& s = v.summary;
  nlohmann::json j;
  // runs_files: every --runs file in order; runs_file (the one file) is kept for single-file runs.
  j["runs_files"] = a.runs;
  if (a.runs.size() == 1) j["runs_file"] = a.runs.front();
  j["overrides"] = a.overrides;
  j["database"] = a.db.empty() ? nlohmann::json() : nlohmann::json(a.db);
  j["error_convention"] = "(simulated - measured) / measured, on step time";
  j["flop_convention"] = "6*N (active matmul params) + non-causal attention per token; MFU against the dense peak "
                         "of the training dtype; measured MFU recomputed from the measured step time";
  j["rows"] = nlohmann::json::array();
  for (const auto& r : v.rows) j["rows"].push_back(to_json(r));
  j["summary"] = {{"all", to_json(s.all)}, {"throughput", to_json(s.all_throughput)}, {"memory", to_json(s.memory)}};
  for (const auto& e : s.by_source) j["summary"]["by_source"].push_back(to_json(e));
  for (const auto& e : s.by_gpu) j["summary"]["by_gpu"].push_back(to_json(e));
  for (const auto& e : s.by_class) j["summary"]["by_class"].push_back(to_json(e));
  j["summary"]["worst"] = nlohmann::json::array();
  for (const RowResult* r : s.worst) j["summary"]["worst"].push_back(r->run_id);
  nlohmann::json nf = nlohmann::json::array();
  for (const RowResult* r : s.not_fitting) nf.push_back(r->run_id);
  j["summary"]["fit_check"] = {{"simulated", s.all.count}, {"predicted_not_to_fit", nf.size()}, {"runs", nf}};
  j["summary"]["kernels_per_source"] = kernel_sources_json(s.kernels_per_source);
  for (const auto& [system, counts] : s.kernels_per_source_by_gpu) {
    j["summary"]["kernels_per_source_by_gpu"][system] = kernel_sources_json(counts);
  }
  std::vector<std::string> notes;
  for (const auto& [k, e] : v.systems)
    if (!e.note.empty()) notes.push_back(k.substr(0, k.find('|')) + ": " + e.note);
  j["efficiency_notes"] = notes;
  if (v.fit) j["fit"] = fit_json(v.fit_args, *v.fit);
  if (v.components) {
    j["components"] = components_json(*v.components);
    for (const auto& [system, path] : v.components_written) j["components"]["written"][system] = path;
  }
  return j;
}

void run(const ValidateArgs& a) {
  const ValidationRun v = validate_runs(a);
  if (a.json) {
    fmt::print("{}\n", to_document(a, v).dump(2));
    return;
  }
  fmt::print("{}", render(v.rows, v.summary, fmt::format("{}", fmt::join(a.runs, " + "))));
  if (!a.overrides.empty()) fmt::print("overrides applied to every row (--set): {}\n", fmt::join(a.overrides, " "));
  for (const auto& [k, e] : v.systems) {
    if (!e.note.empty()) fmt::print("note: {}: {}\n", k.substr(0, k.find('|')), e.note);
    else if (!e.database.empty()) fmt::print("efficiencies for {}: database {}\n", k.substr(0, k.find('|')), e.database);
  }
  if (!a.report.empty()) fmt::print("report written to {}\n", a.report);
  if (v.fit) fmt::print("{}", fit_text(v.fit_args, *v.fit));
  if (v.components) fmt::print("{}", components_text(*v.components));
  for (const auto& [system, path] : v.components_written) {
    fmt::print("in-situ system for {} written to {} (efficiency.sustained_kernel_speed = 1 / its compute multiplier; "
               "sustained_attention_speed = 1 / its attention one where fitted apart)\n",
               system, path);
  }
}

}  // namespace

std::vector<calibration::RowResult> validated_rows(const ValidateArgs& a) { return validate_runs(a).rows; }

nlohmann::json validate_document(const ValidateArgs& a) {
  const ValidationRun v = validate_runs(a);
  return to_document(a, v);
}

void register_validate(CLI::App& app) {
  auto args = std::make_shared<ValidateArgs>();
  CLI::App* sub = app.add_subcommand("validate", "Simulate published measured runs and report the error");
  sub->add_option("--runs", args->runs,
                  "CSV of measured runs (calibration/data/measured_runs.csv format, or simumax_a100_pcie.csv); "
                  "repeatable (--runs A --runs B): the files' rows together, run ids unique across them")
      ->required()
      ->take_all();
  sub->add_option("--db", args->db, "efficiency database to take measured efficiencies from (devices it lacks use "
                                    "the roofline defaults)");
  sub->add_flag("--json", args->json, "print one JSON document instead of tables");
  sub->add_option("--report", args->report, "write a self-contained HTML report (inline SVG) to FILE");
  sub->add_option("--source", args->source, "only rows whose source contains SUBSTRING");
  sub->add_option("--set", args->overrides,
                  "override a field of every mapped row: section.key=value (section model|strategy|system), "
                  "repeatable; e.g. system.efficiency.attention_implementation=flash2 for a what-if over a source");
  sub->add_option("--dump-inputs", args->dump_dir,
                  "write each mapped row's model, strategy and system JSON to DIR (for calisim simulate)");
  sub->add_option("--fit-system", args->fit_system,
                  "fit this shipped system's default efficiencies to the step times of its rows, cross-validated "
                  "by source, or 'all': every system on its own rows (docs/validation.md, 'Fitting a system to "
                  "measured runs')");
  sub->add_option("--fit", args->fit_groups, "efficiency groups to fit: compute, comm, memory, fp8 (FP8 GEMMs relative to compute) (default compute)")
      ->delimiter(',');
  CLI::Option* components = sub->add_option("--components", args->component_parts,
                  "per system, the multiplier of each part of the simulated step that the measured step times want, "
                  "held out by source; optionally only these parts (compute, attention, model_parallel_comm, "
                  "data_parallel_comm, bubble, other; the rest kept as simulated; attention follows compute unless "
                  "named) (docs/validation.md, 'Which part of the step is mispriced')")
      ->expected(0, -1)
      ->delimiter(',');
  sub->add_flag("--select-parts", args->select_parts,
                "with --components: per system, fit only the subset of those parts that cross-validation keeps "
                "(nested: a held-out source's parts are chosen without its rows)");
  sub->add_option("--components-out", args->components_out,
                  "with --components compute [attention]: write DIR/<system>-insitu.json, the shipped system with "
                  "efficiency.sustained_kernel_speed = 1 / the fitted compute multiplier (sustained_attention_speed "
                  "= 1 / the attention one, when fitted apart; efficiency_db = --db)");
  sub->add_option("--fit-out", args->fit_out,
                  "write the fitted system file to FILE (with --fit-system all: DIR/<system>-fit.json)");
  sub->callback([args, components] {
    args->components = components->count() > 0;
    // A bare --components (every part) reaches here as one empty value.
    std::erase_if(args->component_parts, [](const std::string& p) { return p.empty(); });
    run(*args);
  });
}

}  // namespace calisim::cli
