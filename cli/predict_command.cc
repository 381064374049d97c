// `calisim predict`: efficiency tables for a GPU that was never measured, scaled from measured
// devices, and the predictor's accuracy report.
//
//   calisim predict --from DEVICE[,DEVICE] --to SYSTEM[,SYSTEM] --db FILE [--out FILE] [--json] [--op-dispatch-us US]
//     reads the source devices' rows from FILE, writes rows of source `predicted` under each
//     target system file's device.name into --out (default: FILE), one run per target, so that
//     `calisim simulate --system SYSTEM --db FILE` finds them. The sources are fitted as --evaluate
//     fits them (the eager-loop rule of predictor/source_fit.h, with the same dispatch times). Every
//     target system is read before anything is written; --json prints one document for one
//     target, an array of them for several.
//   calisim predict --evaluate --db FILE [--rows] [--json] [--op-dispatch-us US]
//     leave-one-out error per family on each device, and cross-device error for every ordered pair
//     (--rows: every scored row, leave-one-out and cross-device; --json always carries them). Published figures timed as an
//     eager loop are compared with max(kernel, host dispatch) (predictor/evaluate.h); the dispatch
//     time is each device's shipped system's host.op_dispatch_us, or US for every device (to see
//     how much the assumption matters).
// Source devices get the achievable efficiencies and links of the shipped system whose
// device.name equals theirs (when there is one), so that both sides of every ratio come from the
// same kind of figure. Problems the user can fix are InputErrors (exit 2).
#include <fmt/format.h>

#include <array>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>

#include "calibration/system_profile.h"
#include "cli/commands.h"
#include "cli/predict_command.h"
#include "cli/config_catalog.h"
#include "cli/table.h"
#include "core/error.h"
#include "db/efficiency_db.h"
#include "db/sqlite_handle.h"
#include "predictor/evaluate.h"
#include "predictor/prediction_rows.h"
#include "simulator/config_loader.h"

namespace calisim::cli {
namespace {

using nlohmann::ordered_json;
using predictor::DeviceData;
using predictor::DeviceProfile;

std::string pct(double v) { return fmt::format("{:.1f}", v); }
std::string num(double v) { return fmt::format("{:.4g}", v); }

SystemConfig load_system(const std::string& name_or_path) {
  const std::string file = resolve_config(ConfigKind::system, name_or_path);
  return parse_system(read_json_file(file), file);
}

// The shipped system describing this GPU model, if any (matched on device.name).
std::optional<DeviceProfile> shipped_profile(const std::string& device_name) {
  for (const auto& name : list_configs(ConfigKind::system)) {
    const SystemConfig s = load_system(name);
    if (s.device.name == device_name) return calibration::profile_of_system(s);
  }
  return std::nullopt;
}

// Host time of one eager op on the shipped system describing this GPU model (0: none, or none given).
double shipped_op_dispatch_s(const std::string& device_name) {
  for (const auto& name : list_configs(ConfigKind::system)) {
    const SystemConfig s = load_system(name);
    if (s.device.name == device_name) return s.host_op_dispatch_us * 1e-6;
  }
  return 0;
}

// GEMM and attention efficiencies are fractions of the device's dense peak for the row's dtype:
// a device whose record lacks that peak (a database filled from a CSV export, which carries no
// device specs) cannot be fitted or scaled. Refused here, naming the device, instead of surfacing
// as the spec's "no bf16 peak in its system file" from deep inside the fits.
void require_peaks(const db::DeviceRecord& record, const std::vector<db::RunBatch>& runs, const std::string& db_path) {
  std::array<bool, kDTypeCount> used{};
  for (const auto& b : runs) {
    for (const auto& r : b.rows.gemm) used[static_cast<int>(r.key.dtype)] = true;
    for (const auto& r : b.rows.attention) used[static_cast<int>(r.key.dtype)] = true;
  }
  std::string missing;
  for (int t = 0; t < kDTypeCount; ++t) {
    if (used[t] && !(record.peak_tflops[t] > 0)) missing += (missing.empty() ? "" : ", ") + std::string(to_string(static_cast<DType>(t)));
  }
  if (missing.empty()) return;
  throw InputError(db_path, fmt::format("device '{}'", record.name),
                   fmt::format("its specs are missing: it has GEMM / attention rows in {} but no dense peak for {} "
                               "(a database imported from a CSV export has device names only; CSV carries no "
                               "specs). Import the device's specs, e.g. `calisim db import {} --from EXPORT.json` "
                               "with a JSON export of the database the rows came from, or --from "
                               "tests/data/predictor/published_devices.json for the A100 SXM4 / H100 SXM5",
                               missing, missing, db_path));
}

DeviceData device_data(db::EfficiencyDb& file, const std::string& name_or_alias) {
  DeviceData d;
  d.record = file.device(name_or_alias);
  d.runs = file.load_runs(d.record.name);
  require_peaks(d.record, d.runs, file.path());
  d.profile = predictor::profile_from_record(d.record);
  if (auto system = shipped_profile(d.record.name)) d.profile = predictor::enrich_profile(d.profile, *system);
  return d;
}

// A comma-separated list, items trimmed, empty items and repeats dropped; `none` is the error
// when nothing is left.
std::vector<std::string> split_list(const std::string& list, const char* option, const char* none) {
  std::vector<std::string> out;
  std::stringstream ss(list);
  for (std::string item; std::getline(ss, item, ',');) {
    const auto b = item.find_first_not_of(' ');
    const auto e = item.find_last_not_of(' ');
    if (b == std::string::npos) continue;
    std::string name = item.substr(b, e - b + 1);
    if (std::find(out.begin(), out.end(), name) == out.end()) out.push_back(std::move(name));
  }
  if (out.empty()) throw InputError(option, "", none);
  return out;
}

// Host time of one eager op per device (the eager-loop rule of predictor/source_fit.h): --op-dispatch-us
// for every device, else each one's shipped system's host.op_dispatch_us.
std::map<std::string, double> op_dispatch_s(const PredictArgs& a, const std::vector<DeviceData>& devices) {
  if (a.op_dispatch_us && !(*a.op_dispatch_us >= 0)) {
    throw InputError("--op-dispatch-us", "", fmt::format("expected a time >= 0 in microseconds, got {}", *a.op_dispatch_us));
  }
  std::map<std::string, double> out;
  for (const auto& d : devices) {
    out[d.record.name] = a.op_dispatch_us ? *a.op_dispatch_us * 1e-6 : shipped_op_dispatch_s(d.record.name);
  }
  return out;
}

// One prediction as `predict --json` prints it for one target.
ordered_json prediction_json(const predictor::Prediction& p, const DeviceProfile& target, const std::string& out_path,
                             std::int64_t run_id) {
  ordered_json families = ordered_json::array();
  for (const auto& f : p.families) {
    if (f.rows == 0) continue;
    families.push_back({{"family", f.family},
                        {"rows", f.rows},
                        {"mean_source_efficiency", f.mean_source_efficiency},
                        {"mean_efficiency", f.mean_efficiency}});
  }
  return {{"target", target.spec.name}, {"database", out_path}, {"run", run_id},
          {"rows", p.batch.rows.size()}, {"notes", p.batch.run.notes},
          {"families", families},       {"warnings", p.warnings}};
}

// One prediction's document (prediction_json) as the table `predict` prints for one target.
std::string prediction_text(const ordered_json& doc) {
  Table t({"family", "rows", "mean source eff", "mean predicted eff"});
  for (const auto& f : doc["families"]) {
    t.add_row({f["family"].get<std::string>(), std::to_string(f["rows"].get<std::size_t>()),
               num(f["mean_source_efficiency"].get<double>()), num(f["mean_efficiency"].get<double>())});
  }
  std::string text = fmt::format("predicted {} rows for {} into {} (run {})\n{}\n", doc["rows"].get<std::size_t>(),
                                 doc["target"].get<std::string>(), doc["database"].get<std::string>(),
                                 doc["run"].get<std::int64_t>(), doc["notes"].get<std::string>());
  text += t.render("  ");
  for (const auto& w : doc["warnings"]) text += "warning: " + w.get<std::string>() + "\n";
  return text;
}

void run_predict(const PredictArgs& a) {
  const ordered_json docs = predict_targets(a);
  if (a.json) {
    fmt::print("{}\n", (docs.size() == 1 ? docs.front() : docs).dump(2));
    return;
  }
  std::string text;
  for (const auto& doc : docs) text += (text.empty() ? "" : "\n") + prediction_text(doc);
  fmt::print("{}", text);
}

}  // namespace

ordered_json predict_targets(const PredictArgs& a) {
  if (a.from.empty() || a.to.empty()) {
    throw InputError("calisim predict", "", "give --from DEVICE[,DEVICE] and --to SYSTEM[,SYSTEM], or --evaluate");
  }
  if (!a.out.empty()) {
    // Before the prediction's work, the check the database layer makes when it writes.
    try {
      db::check_database_path(a.out, db::OpenMode::create);
    } catch (const InputError& e) {
      throw InputError(e.file(), "--out", e.problem());
    }
  }
  std::vector<DeviceData> sources;
  {
    auto file = db::EfficiencyDb::open(a.db, db::OpenMode::read_only);
    for (const auto& name : split_list(a.from, "--from", "name at least one measured device (comma-separated)")) {
      sources.push_back(device_data(file, name));
    }
  }
  // Every target read before any prediction is written: a misspelt last target leaves the
  // database as it was.
  std::vector<DeviceProfile> targets;
  for (const auto& name : split_list(a.to, "--to", "name at least one target system (comma-separated)")) {
    try {
      targets.push_back(calibration::profile_of_system(load_system(name)));
    } catch (const InputError& e) {
      // A name that resolves to no system file is a --to problem; a system file's own errors
      // already name that file and field.
      if (e.file() == "--system") throw InputError("--to", "", e.problem());
      throw;
    }
  }
  // Every prediction made before the first is written, so that a failing target writes nothing
  // either; each run is then one transaction.
  const std::map<std::string, double> dispatch_s = op_dispatch_s(a, sources);
  std::vector<predictor::Prediction> predictions;
  for (const DeviceProfile& target : targets) predictions.push_back(predictor::predict_target(sources, target, dispatch_s));
  const std::string out_path = a.out.empty() ? a.db : a.out;
  auto out = db::EfficiencyDb::open(out_path, db::OpenMode::create);
  ordered_json docs = ordered_json::array();
  for (std::size_t i = 0; i < targets.size(); ++i) {
    out.add_device_if_missing(predictions[i].device);
    const std::int64_t run_id = out.insert_run(predictions[i].batch);
    docs.push_back(prediction_json(predictions[i], targets[i], out_path, run_id));
  }
  return docs;
}

namespace {

void add_errors(Table& t, ordered_json& doc, const std::vector<predictor::ErrorSummary>& rows, bool cross) {
  // Leave-one-out rows carry a note only for the eager-loop rule; cross rows always have the column.
  for (const auto& e : rows) {
    std::vector<std::string> cells;
    if (cross) cells.push_back(e.from);
    for (std::string c : {e.device, e.family, std::to_string(e.n), pct(e.mape_pct), pct(e.max_ape_pct)}) {
      cells.push_back(std::move(c));
    }
    cells.push_back(e.note);
    t.add_row(cells);
    ordered_json j;
    if (cross) j["from"] = e.from;
    j["device"] = e.device;
    j["family"] = e.family;
    j["n"] = e.n;
    j["mape_pct"] = e.mape_pct;
    j["max_ape_pct"] = e.max_ape_pct;
    j["note"] = e.note;
    ordered_json scored = ordered_json::array();
    for (const auto& r : e.rows) scored.push_back({{"key", r.key}, {"actual", r.actual}, {"predicted", r.predicted}});
    j["rows"] = scored;
    doc.push_back(j);
  }
}

// Every scored row (--rows): key, stored and predicted efficiency, signed error; leave-one-out
// groups first, then the cross-device pairs.
std::string scored_rows(const std::vector<predictor::ErrorSummary>& groups) {
  std::string text;
  for (const auto& e : groups) {
    Table t({"key", "actual", "predicted", "error %"});
    for (const auto& r : e.rows) {
      t.add_row({r.key, num(r.actual), num(r.predicted), fmt::format("{:+.1f}", 100.0 * (r.predicted / r.actual - 1))});
    }
    text += (e.from.empty() ? fmt::format("\nleave-one-out on {}, {}: every row\n", e.device, e.family)
                            : fmt::format("\n{} -> {}, {}: every row\n", e.from, e.device, e.family)) +
            t.render("  ");
  }
  return text;
}

void run_evaluate(const PredictArgs& a) {
  std::vector<DeviceData> devices;
  {
    auto file = db::EfficiencyDb::open(a.db, db::OpenMode::read_only);
    for (const auto& d : file.devices()) devices.push_back(device_data(file, d.name));
  }
  const std::map<std::string, double> dispatch_s = op_dispatch_s(a, devices);
  const predictor::Evaluation e = predictor::evaluate(devices, dispatch_s);
  Table loo({"device", "family", "n", "MAPE %", "max %", "how (eager-loop figures)"});
  Table cross({"from", "to", "family", "n", "MAPE %", "max %",
               "how (overhead t0; attention kernel generation; eager-loop figures)"});
  ordered_json jloo = ordered_json::array(), jcross = ordered_json::array();
  add_errors(loo, jloo, e.leave_one_out, false);
  add_errors(cross, jcross, e.cross_device, true);
  if (a.json) {
    ordered_json host = ordered_json::object();
    for (const auto& [name, s] : dispatch_s) host[name] = s * 1e6;
    fmt::print("{}\n", ordered_json{{"database", a.db}, {"op_dispatch_us", host}, {"leave_one_out", jloo},
                                    {"cross_device", jcross}}.dump(2));
    return;
  }
  std::string text = "leave-one-out (each row predicted from the fit of the other rows of its group)\n";
  text += jloo.empty() ? "  no group has enough rows\n" : loo.render("  ");
  text += "\ncross-device (each row of `to` predicted from `from` alone)\n";
  text += jcross.empty() ? "  needs two devices with rows of a common family\n" : cross.render("  ");
  text += fmt::format("\nhost dispatch per eager op ({}):", a.op_dispatch_us ? "--op-dispatch-us" : "system files' host.op_dispatch_us");
  for (const auto& [name, s] : dispatch_s) text += fmt::format(" {} {:.1f} us;", name, s * 1e6);
  text += "\n";
  if (a.rows) text += scored_rows(e.leave_one_out) + scored_rows(e.cross_device);
  fmt::print("{}", text);
}

}  // namespace

void register_predict(CLI::App& app) {
  auto args = std::make_shared<PredictArgs>();
  CLI::App* sub = app.add_subcommand(
      "predict", "Predict a GPU's efficiency tables from measured devices, or report the predictor's accuracy");
  sub->add_option("--db", args->db, "efficiency database (SQLite) holding the measured devices")->required();
  sub->add_option("--from", args->from, "measured device(s), comma-separated names or aliases");
  sub->add_option("--to", args->to,
                  "target system(s): shipped names or paths to system .json files, comma-separated (one run per target)");
  sub->add_option("--out", args->out, "database to write the predicted rows into (default: --db)");
  sub->add_flag("--evaluate", args->evaluate, "report leave-one-out and cross-device error instead");
  sub->add_flag("--json", args->json, "print one JSON document");
  sub->add_option("--op-dispatch-us", args->op_dispatch_us,
                  "host time of one eager op for every device, instead of each system's host.op_dispatch_us "
                  "(eager-loop figures are compared with max(kernel, this); source fits skip those it bounds)");
  sub->add_flag("--rows", args->rows, "with --evaluate: also list every scored row, leave-one-out and cross-device (key, actual, predicted)");
  sub->callback([args] { args->evaluate ? run_evaluate(*args) : run_predict(*args); });
}

}  // namespace calisim::cli
