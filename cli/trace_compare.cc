#include "cli/trace_compare.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <utility>

#include "cli/table.h"
#include "cli/trace_import.h"
#include "calibration/trace_comparison.h"
#include "simulator/config_loader.h"
#include "core/error.h"
#include "db/efficiency_db.h"
#include "db/trace_store.h"
#include "profiler/device_match.h"
#include "simulator/op_cost.h"
#include "simulator/rank_placement.h"

namespace calisim::cli {
namespace {


// "rank R of W" in a trace run's notes (what `db import --kineto` writes from distributedInfo).
std::optional<std::pair<int, int>> rank_in_notes(const std::string& notes) {
  const auto at = notes.find("rank ");
  if (at == std::string::npos) return std::nullopt;
  int rank = -1, world = 0;
  if (std::sscanf(notes.c_str() + at, "rank %d of %d", &rank, &world) != 2 || rank < 0 || world <= 0) {
    return std::nullopt;
  }
  return std::pair{rank, world};
}

}  // namespace

namespace {

// A database's trace runs: the file opened once, its runs with trace records and every run's
// record. InputError for a missing file or one without trace runs (saying how to get one).
struct TraceFile {
  db::EfficiencyDb store;
  std::vector<std::int64_t> runs;     // runs with trace records, ascending
  std::vector<db::RunRecord> all_runs;
  // The runs of source trace that hold efficiency rows (trace imports' operator shapes), loaded
  // when the first comparison asks for shapes and kept for the others (--trace-run all).
  std::optional<std::vector<db::RunBatch>> shape_runs;
};

TraceFile open_trace_file(const std::string& path) {
  if (!std::filesystem::exists(path)) throw InputError(path, "--compare-trace", "no such database file");
  TraceFile f{db::EfficiencyDb::open(path, db::OpenMode::read_only), {}, {}, std::nullopt};
  f.runs = db::runs_with_trace_kernels(f.store);
  if (f.runs.empty()) {
    throw InputError(path, "--compare-trace",
                     fmt::format("holds no trace run: import one (calisim db import {} --kineto trace.json, or "
                                 "--nsys report.sqlite) or record one with libcalisim_trace.so (docs/profiling.md)",
                                 path));
  }
  f.all_runs = f.store.runs();
  return f;
}

// The efficiency (busbw over the row's link) a collective of the row's key reaches in time t.
double busbw_over_link(const db::CollectiveRow& row, double t) {
  return row.link_gb_s > 0 ? row.busbw_gb_s * (row.stats.median_s / t) / row.link_gb_s : 0.0;
}

// The operator shapes of trace run c.run beside the simulation's time for each (TraceCompareRequest).
void compare_shapes(TraceFile& f, TraceComparison& c, const SystemConfig& system, const EfficiencyModel& eff) {
  const std::string link = import_fingerprint(c.notes);
  if (link.empty()) return;
  if (!f.shape_runs) {
    f.shape_runs.emplace();
    for (db::RunBatch& b : f.store.load_runs()) {
      if (b.run.source == db::Source::trace && b.rows.size() > 0) f.shape_runs->push_back(std::move(b));
    }
  }
  for (const db::RunBatch& b : *f.shape_runs) {
    if (b.run.device != c.device || b.run.notes.find(link) == std::string::npos) continue;
    c.shapes_run = b.run.id;
    const OpCoster coster(system, eff);
    auto add = [&](const std::string& key, const db::SampleStats& stats, double traced_eff, double simulated_s,
                   const Efficiency& used) {
      c.shapes.push_back(ShapeComparison{key, stats.n, stats.median_s, simulated_s, used.source, used.value, traced_eff});
    };
    for (const db::GemmRow& row : b.rows.gemm) {
      Efficiency used;
      const double t = coster.gemm_s(row.key, nullptr, &used);
      add(to_string(row.key), row.stats, row.efficiency, t, used);
    }
    for (const db::AttentionRow& row : b.rows.attention) {
      Efficiency used;
      const double t = coster.attention_s(row.key, nullptr, &used);
      add(to_string(row.key), row.stats, row.efficiency, t, used);
    }
    for (const db::CollectiveRow& row : b.rows.collective) {
      // The NCCL model's time for the key; its efficiency source from the lookup it made.
      SourceTally tally;
      const double t = coster.collective_s(row.key, &tally);
      Efficiency used;
      used.source = static_cast<EfficiencySource>(
          std::max_element(tally.kernels.begin(), tally.kernels.end()) - tally.kernels.begin());
      used.value = t > 0 ? busbw_over_link(row, t) : 0.0;
      add(to_string(row.key), row.stats, row.efficiency, t, used);
    }
    break;  // one rows run per trace run and device
  }
  std::stable_sort(c.shapes.begin(), c.shapes.end(), [](const ShapeComparison& a, const ShapeComparison& b) {
    return static_cast<double>(a.calls) * a.traced_s > static_cast<double>(b.calls) * b.traced_s;
  });
}

// Trace run `run` of `f` (chosen as `run_why` says) beside the simulated stage: the stage as given,
// else the traced rank's (given, or from the notes when the trace's world is this layout's), else
// the first.
TraceComparison compare_run(TraceFile& f, std::int64_t run, std::string run_why, const TraceCompareRequest& a,
                            const SimulationResult& r) {
  if (std::find(f.runs.begin(), f.runs.end(), run) == f.runs.end()) {
    throw InputError(a.db, "--trace-run",
                     fmt::format("run {} holds no trace records; trace runs: {}", run, fmt::join(f.runs, ", ")));
  }
  TraceComparison c;
  c.db = a.db;
  c.run = run;
  c.run_why = std::move(run_why);
  for (std::int64_t id : f.runs) {
    if (id != c.run) c.other_runs.push_back(id);
  }
  for (const db::RunRecord& rec : f.all_runs) {
    if (rec.id == c.run) c.device = rec.device, c.notes = rec.notes;
  }
  // A trace of another GPU than the simulated one compares (and would calibrate) two GPUs: say so,
  // when both names map to known GPUs (custom system names with the same device do not warn).
  const std::string traced_gpu = profiler::system_for_cuda_device(c.device);
  const std::string simulated_gpu = profiler::system_for_cuda_device(r.device_name);
  if (!traced_gpu.empty() && !simulated_gpu.empty() && traced_gpu != simulated_gpu) {
    c.warnings.push_back(fmt::format("the trace ran on '{}' ({}), this simulation is of '{}' ({}): the comparison "
                                     "sets two different GPUs side by side",
                                     c.device, traced_gpu, r.device_name, simulated_gpu));
  }
  const std::vector<db::TraceKernel> records = db::load_trace_kernels(f.store, c.run);
  c.traced = calibration::trace_step_stats(records, a.steps);
  c.top = calibration::top_kernels(records, c.traced, 10);
  // A step count given for a trace that has its own step ranges is not used: say so.
  if (a.steps > 0 && c.traced.from_step_ranges) {
    c.warnings.push_back(fmt::format("--trace-steps {} not used: the trace has its own ProfilerStep ranges ({})",
                                     a.steps, c.traced.steps_text));
  }
  const auto noted = rank_in_notes(c.notes);
  if (noted && a.rank >= 0 && noted->first != a.rank) {
    c.warnings.push_back(fmt::format("trace run {} is of rank {}, not the --trace-rank {} simulated here", c.run,
                                     noted->first, a.rank));
  }
  if (noted && noted->second != r.world_size) {
    c.warnings.push_back(fmt::format("the trace is of a {}-GPU run; this simulation has {} GPUs", noted->second,
                                     r.world_size));
  }
  int stage = 0;
  if (a.stage >= 0) {
    stage = a.stage;
    c.stage_why = "--trace-stage";
  } else if (a.rank >= 0) {
    stage = calibration::pipeline_stage_of_rank(r, a.rank);
    c.stage_why = fmt::format("--trace-rank {}, order {}", a.rank, to_string(r.rank_order));
  } else if (noted && noted->second == r.world_size) {
    stage = calibration::pipeline_stage_of_rank(r, noted->first);
    c.stage_why = fmt::format("the trace's rank {} of {}, order {}", noted->first, noted->second,
                              to_string(r.rank_order));
  } else {
    c.stage_why = r.pp > 1 ? "the first: the traced rank is not known (--trace-rank R or --trace-stage S)"
                           : "the only one";
  }
  c.simulated = calibration::simulated_step_classes(r, stage);
  c.rows = calibration::compare_trace(c.traced, c.simulated);
  if (a.system && a.model) compare_shapes(f, c, *a.system, *a.model);
  return c;
}

}  // namespace

TraceComparison compare_with_trace(const TraceCompareRequest& a, const SimulationResult& r) {
  TraceFile f = open_trace_file(a.db);
  if (a.run > 0) return compare_run(f, a.run, "--trace-run", a, r);
  // --trace-rank without --trace-run: that rank's trace when the file holds one (a directory of
  // per-rank traces imported together), the latest of them; else the latest.
  if (a.rank >= 0) {
    std::int64_t of_rank = 0;
    for (const db::RunRecord& rec : f.all_runs) {
      const auto noted = rank_in_notes(rec.notes);
      if (noted && noted->first == a.rank && std::find(f.runs.begin(), f.runs.end(), rec.id) != f.runs.end()) {
        of_rank = std::max(of_rank, rec.id);
      }
    }
    if (of_rank > 0) return compare_run(f, of_rank, fmt::format("the latest of rank {}", a.rank), a, r);
  }
  return compare_run(f, f.runs.back(), "the latest", a, r);
}

namespace {

double shapes_ratio(const std::vector<ShapeComparison>& shapes);

// The shapes table (empty without a rows run): the ten keys with the most traced time.
std::string shapes_text(const TraceComparison& c) {
  if (c.shapes_run == 0) return "";
  std::string out = fmt::format(
      "\n  operator shapes of the trace (rows run {}: median call, kernels alone), against this simulation's time "
      "for the same key; all {} keys, weighted by calls: simulated / traced {:.3f}\n",
      c.shapes_run, c.shapes.size(), shapes_ratio(c.shapes));
  Table t({"key", "calls", "traced us", "simulated us", "simulated / traced", "simulated from"});
  const std::size_t shown = std::min<std::size_t>(c.shapes.size(), 10);
  for (std::size_t i = 0; i < shown; ++i) {
    const ShapeComparison& s = c.shapes[i];
    t.add_row({s.key, std::to_string(s.calls), fmt::format("{:.1f}", s.traced_s * 1e6),
               fmt::format("{:.1f}", s.simulated_s * 1e6),
               s.traced_s > 0 ? fmt::format("{:.3f}", s.simulated_s / s.traced_s) : "-",
               std::string(to_string(s.source))});
  }
  out += t.render();
  if (c.shapes.size() > shown) out += fmt::format("  ... {} more (--json lists all)\n", c.shapes.size() - shown);
  return out;
}

nlohmann::json shapes_json(const TraceComparison& c) {
  if (c.shapes_run == 0) return nullptr;
  nlohmann::json keys = nlohmann::json::array();
  for (const ShapeComparison& s : c.shapes) {
    keys.push_back({{"key", s.key}, {"calls", s.calls}, {"traced_s", s.traced_s}, {"simulated_s", s.simulated_s},
                    {"traced_efficiency", s.traced_efficiency}, {"simulated_efficiency", s.simulated_efficiency},
                    {"simulated_from", to_string(s.source)}});
  }
  return {{"run", c.shapes_run}, {"simulated_over_traced", shapes_ratio(c.shapes)}, {"keys", keys}};
}

}  // namespace

std::string trace_comparison_text(const TraceComparison& c) {
  std::string out = fmt::format("trace comparison: trace run {} ({}) of '{}' in {}, {}; simulated stage {} ({})\n",
                                c.run, c.run_why, c.device, c.db, c.traced.steps_text, c.simulated.stage,
                                c.stage_why);
  for (const auto& w : c.warnings) out += "  warning: " + w + "\n";
  if (!c.notes.empty()) out += "  trace: " + c.notes + "\n";
  if (c.traced.from_step_ranges && c.traced.steps > 1) {
    out += fmt::format("  traced step spans: {:.3f} .. {:.3f} ms over {} steps (mean {:.3f})\n",
                       c.traced.span_min_s * 1e3, c.traced.span_max_s * 1e3, c.traced.steps, c.traced.span_s * 1e3);
  }
  Table t({"per step", "traced ms", "simulated ms", "simulated / traced"});
  for (const calibration::ComparisonRow& row : c.rows) {
    t.add_row({row.quantity, fmt::format("{:.3f}", row.traced_s * 1e3),
               row.has_simulated ? fmt::format("{:.3f}", row.simulated_s * 1e3) : "-",
               row.ratio() > 0 ? fmt::format("{:.3f}", row.ratio()) : "-"});
  }
  out += t.render();
  out += "  (traced: summed kernel time per class, unions for busy / exposed / idle; simulated: the stage's ops, "
         "optimizer and exposed communication; docs/profiling.md \"Comparing a trace with its simulation\")\n";
  if (std::abs(c.simulated.class_split_scale - 1) > 0.01) {
    out += fmt::format("  simulated classes: the op table's split scaled by {:.3f} to the stage's compute (its "
                       "instance counts differ from the stage's: MoE, windowed attention, MTP or full recompute)\n",
                       c.simulated.class_split_scale);
  }
  if (c.traced.outside_steps > 0) {
    out += fmt::format("  {} trace record(s) outside the steps were left out\n", c.traced.outside_steps);
  }
  if (!c.other_runs.empty()) {
    out += fmt::format("  other trace runs in the file (--trace-run): {}\n", fmt::join(c.other_runs, ", "));
  }
  out += shapes_text(c);
  if (!c.top.empty()) {
    Table k({"traced kernels with the most time per step", "class", "calls", "ms"});
    for (const calibration::TopKernel& t : c.top) {
      const std::string name = t.name.size() > 72 ? t.name.substr(0, 69) + "..." : t.name;
      k.add_row({name, t.kernel_class, fmt::format("{:.4g}", t.calls_per_step),
                 fmt::format("{:.3f}", t.per_step_s * 1e3)});
    }
    out += "\n" + k.render();
  }
  return out;
}



namespace {

// Calls-weighted simulated / traced time over every compared shape (0 without shapes).
double shapes_ratio(const std::vector<ShapeComparison>& shapes) {
  double traced = 0, simulated = 0;
  for (const auto& s : shapes) {
    traced += static_cast<double>(s.calls) * s.traced_s;
    simulated += static_cast<double>(s.calls) * s.simulated_s;
  }
  return traced > 0 ? simulated / traced : 0.0;
}

}  // namespace

nlohmann::json trace_comparison_json(const TraceComparison& c) {
  nlohmann::json rows = nlohmann::json::array();
  for (const calibration::ComparisonRow& row : c.rows) {
    nlohmann::json j = {{"quantity", row.quantity}, {"traced_s", row.traced_s}};
    j["simulated_s"] = row.has_simulated ? nlohmann::json(row.simulated_s) : nlohmann::json(nullptr);
    j["simulated_over_traced"] = row.ratio() > 0 ? nlohmann::json(row.ratio()) : nlohmann::json(nullptr);
    rows.push_back(j);
  }
  nlohmann::json top = nlohmann::json::array();
  for (const calibration::TopKernel& t : c.top) {
    top.push_back({{"name", t.name}, {"class", t.kernel_class}, {"calls_per_step", t.calls_per_step},
                   {"per_step_s", t.per_step_s}});
  }
  return {{"database", c.db},       {"run", c.run},
          {"stage_from", c.stage_why}, {"run_from", c.run_why}, {"warnings", c.warnings}, {"top_kernels", top},
          {"device", c.device},     {"notes", c.notes},
          {"steps", c.traced.steps}, {"steps_text", c.traced.steps_text},
          {"step_span_min_s", c.traced.span_min_s}, {"step_span_max_s", c.traced.span_max_s},
          {"outside_steps", c.traced.outside_steps}, {"stage", c.simulated.stage},
          {"class_split_scale", c.simulated.class_split_scale},
          {"other_runs", c.other_runs}, {"rows", rows}, {"shapes", shapes_json(c)}};
}


}  // namespace calisim::cli

namespace calisim::cli {

std::vector<TraceComparison> compare_all_trace_runs(const TraceCompareRequest& a, const SimulationResult& r) {
  if (a.rank >= 0) {
    throw InputError("<command line>", "--trace-rank",
                     "not with --trace-run all: each run is compared with the stage of its own rank");
  }
  TraceFile f = open_trace_file(a.db);
  std::vector<TraceComparison> out;
  for (std::int64_t id : f.runs) out.push_back(compare_run(f, id, "--trace-run all", a, r));
  return out;
}

std::string trace_comparisons_text(const std::vector<TraceComparison>& cs) {
  if (cs.empty()) return "";
  std::string out = fmt::format("trace comparison of every trace run in {} ({} runs), per step, traced / simulated ms:\n",
                                cs.front().db, cs.size());
  auto pair = [](double traced, double simulated) { return fmt::format("{:.1f} / {:.1f}", traced * 1e3, simulated * 1e3); };
  // Runs with operator shapes (traces recorded with record_shapes) add the calls-weighted
  // simulated / traced time of their shapes: a rank whose kernels run slower than its peers'
  // (a hot or power-capped GPU) shows as a lower ratio than the others'.
  const bool shapes = std::any_of(cs.begin(), cs.end(), [](const TraceComparison& c) { return c.shapes_run > 0; });
  std::vector<std::string> header{"run", "rank", "stage", "steps", "step span", "compute busy", "exposed comm", "idle"};
  if (shapes) header.push_back("shapes sim / traced");
  Table t(header);
  std::vector<std::string> warnings;
  for (const TraceComparison& c : cs) {
    const auto rank = rank_in_notes(c.notes);
    std::vector<std::string> row{
        std::to_string(c.run), rank ? fmt::format("{} of {}", rank->first, rank->second) : "-",
        std::to_string(c.simulated.stage), std::to_string(c.traced.steps), pair(c.traced.span_s, c.simulated.step_s),
        pair(c.traced.compute_busy_s, c.simulated.compute_busy_s), pair(c.traced.comm_only_s, c.simulated.comm_exposed_s),
        pair(c.traced.idle_s, c.simulated.idle_s)};
    if (shapes) row.push_back(c.shapes_run > 0 ? fmt::format("{:.3f}", shapes_ratio(c.shapes)) : "-");
    t.add_row(row);
    for (const auto& w : c.warnings) warnings.push_back(fmt::format("run {}: {}", c.run, w));
  }
  out += t.render();
  for (const auto& w : warnings) out += "  warning: " + w + "\n";
  out += "  (stage: each run's own rank, as --trace-rank would give it; one run in full: --trace-run N)\n";
  return out;
}

nlohmann::json trace_comparisons_json(const std::vector<TraceComparison>& cs) {
  nlohmann::json runs = nlohmann::json::array();
  for (const TraceComparison& c : cs) runs.push_back(trace_comparison_json(c));
  return {{"database", cs.empty() ? std::string() : cs.front().db}, {"runs", runs}};
}

void parse_trace_run(const std::string& text, TraceCompareRequest& request) {
  if (text == "all") {
    request.all_runs = true;
    return;
  }
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 1) {
    throw InputError("<command line>", "--trace-run", fmt::format("expected a trace run id >= 1 or all, got '{}'", text));
  }
  request.run = v;
}

nlohmann::json write_trace_fit(const std::string& out_path, nlohmann::ordered_json doc,
                               const std::vector<std::string>& overrides, const SimulationResult& r,
                               const TraceComparison& c) {
  if (!r.efficiency_db.empty()) {
    throw InputError("<command line>", "--trace-fit-out",
                     fmt::format("this simulation took kernel efficiencies from the database {}; --trace-fit-out "
                                 "scales the system file's own efficiencies (run it without a database)",
                                 r.efficiency_db));
  }
  bool system_set = false;
  for (const auto& o : overrides) system_set = system_set || o.rfind("system.", 0) == 0;
  if (system_set) {  // the overrides act on a plain document (field order is not kept then)
    nlohmann::json plain = nlohmann::json::parse(doc.dump()), model = nlohmann::json::object(),
                   strategy = nlohmann::json::object();
    for (const auto& o : overrides) {
      if (o.rfind("system.", 0) == 0) apply_override(o, model, strategy, plain);
    }
    doc = nlohmann::ordered_json::parse(plain.dump());
  }
  const calibration::TraceFit f = calibration::fit_to_trace(c.traced, c.simulated);
  std::vector<std::string> capped;
  doc = calibration::apply_trace_fit(std::move(doc), f, &capped);
  auto ms = [](double s) { return fmt::format("{:.3f}", s * 1e3); };
  const std::string how = fmt::format(
      " Kernel efficiencies scaled to a trace by calisim simulate --compare-trace {} (trace run {} of '{}', {}; "
      "simulated stage {} of {}, {}): matmul x{:.4f} (GEMM {} ms traced, {} ms simulated per step), attention x{:.4f} "
      "({} / {} ms), memory_bound x{:.4f} ({} / {} ms){}.",
      c.db, c.run, c.device, c.traced.steps_text, c.simulated.stage, r.model_name, r.strategy_name, f.matmul,
      ms(c.traced.gemm_s), ms(c.simulated.gemm_s), f.attention, ms(c.traced.attention_s), ms(c.simulated.attention_s),
      f.memory, ms(c.traced.elementwise_s + c.traced.other_s), ms(c.simulated.memory_s + c.simulated.optimizer_s),
      f.unfitted.empty() ? std::string()
                         : fmt::format("; not fitted (no time in the trace or the simulation): {}",
                                       fmt::join(f.unfitted, ", ")));
  doc["description"] = doc.value("description", std::string()) + how;
  std::ofstream out(out_path);
  if (!out || !(out << doc.dump(2) << "\n")) throw InputError(out_path, "--trace-fit-out", "cannot write the file");
  return {{"file", out_path},      {"matmul", f.matmul},     {"attention", f.attention},
          {"memory_bound", f.memory}, {"unfitted", f.unfitted}, {"capped", capped}};
}

std::string trace_fit_text(const nlohmann::json& j) {
  return fmt::format("system file calibrated to the trace written to {}: matmul x{:.3f}, attention x{:.3f}, "
                     "memory_bound x{:.3f}{}{}\n",
                     j["file"].get<std::string>(), j["matmul"].get<double>(), j["attention"].get<double>(),
                     j["memory_bound"].get<double>(),
                     j["unfitted"].empty() ? "" : fmt::format("; not fitted: {}", fmt::join(j["unfitted"], ", ")),
                     j["capped"].empty() ? "" : fmt::format("; capped at 1.0 of peak: {}", fmt::join(j["capped"], ", ")));
}

}  // namespace calisim::cli
