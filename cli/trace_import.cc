#include "cli/trace_import.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <initializer_list>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <vector>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "core/error.h"
#include "db/efficiency_db.h"
#include "db/trace_store.h"
#include "cli/system_device.h"
#include "cli/table.h"
#include "profiler/kineto_trace.h"
#include "profiler/collective_matching.h"
#include "profiler/operator_rows.h"
#include "profiler/nsys_trace.h"
#include "profiler/trace_writer.h"

namespace calisim::cli {

std::string import_fingerprint(const std::string& notes) {
  const auto at = notes.find(kFingerprintPrefix);
  if (at == std::string::npos || notes.size() < at + kFingerprintPrefix.size() + 16) return {};
  return notes.substr(at, kFingerprintPrefix.size() + 16);
}

namespace {
using ordered_json = nlohmann::ordered_json;
constexpr const char* kKinetoTool = "calisim db import --kineto";
constexpr const char* kNsysTool = "calisim db import --nsys";

// Announces a large input on stderr (reading runs at about 25-35 MB/s of JSON). A gzip file
// holds some 10-20 times its size in JSON (Kineto traces are repetitive), so 4 MB of it is large.
bool announce_large(const std::string& file) {
  std::error_code ec;
  const auto bytes = std::filesystem::file_size(file, ec);
  const bool gz = file.ends_with(".gz");
  const bool large = !ec && bytes > (gz ? (4u << 20) : (64u << 20));
  if (large) {
    fmt::print(stderr, "reading {} ({:.0f} MB{}) ...\n", file, static_cast<double>(bytes) / 1e6,
               gz ? " compressed" : "");
  }
  return large;
}

// Stores imported records as trace runs, once: `notes` gets a fingerprint of the records (FNV-1a
// over names and times), and a trace run of the same tool with that fingerprint in the database
// refuses the import (its kernels would count twice in every summary and comparison). The trace
// carries no wall-clock dates calisim relies on, and no host. Returns the runs as JSON and text.
// With `skip_imported`, a trace already imported is not refused: nothing is stored and its run id
// is returned (a directory imported again after a rank's file was added); 0 when stored.
std::int64_t store_once(const std::string& db_path, const std::string& file, const char* tool, std::string notes,
                        const std::vector<db::TraceKernel>& records, const std::map<int, std::string>& device_names,
                        ordered_json& runs, std::string& text, std::vector<std::string>& warnings,
                        bool skip_imported, const profiler::TraceExtras& extras = {},
                        profiler::TraceWriteResult* written = nullptr) {
  std::uint64_t fp = 1469598103934665603ull;
  auto mix = [&fp](std::string_view bytes) {
    for (unsigned char c : bytes) fp = (fp ^ c) * 1099511628211ull;
  };
  for (const db::TraceKernel& k : records) {
    mix(k.name);
    mix(fmt::format("{}:{}:{}", k.device, k.start_ns, k.end_ns));
  }
  const std::string fingerprint = fmt::format("{}{:016x}", kFingerprintPrefix, fp);
  notes += "; " + fingerprint;
  // The rows of the trace's operators carry the same fingerprint: the link `simulate
  // --compare-trace` follows from a trace run to its rows, which survives export and merge (run
  // ids do not).
  profiler::TraceExtras with_link = extras;
  for (auto& [ordinal, rows] : with_link.rows) rows.notes += "; " + fingerprint;
  if (std::filesystem::exists(db_path)) {
    auto existing = db::EfficiencyDb::open(db_path, db::OpenMode::read_only);
    for (const db::RunRecord& run : existing.runs()) {
      if (run.source == db::Source::trace && run.tool_version == tool &&
          run.notes.find(fingerprint) != std::string::npos) {
        if (skip_imported) return run.id;
        throw InputError(file, tool, fmt::format("already imported into {} as trace run {}", db_path, run.id));
      }
    }
  }
  profiler::TraceRunInfo info(notes, "");
  info.ended_at = std::string();
  info.tool = tool;
  info.host = "unknown";
  const profiler::TraceWriteResult w = profiler::store_trace(db_path, records, device_names, info, with_link);
  if (written) *written = w;
  runs = ordered_json::array();
  for (const auto& [ordinal, run] : w.run_by_device) {
    const std::string& name = device_names.at(ordinal);
    text += fmt::format("  CUDA device {} ({}): trace run {} in {}\n", ordinal, name, run, db_path);
    runs.push_back({{"device_ordinal", ordinal}, {"device", name}, {"run", run}});
  }
  for (const auto& warning : w.warnings) text += "  warning: " + warning + "\n";
  warnings = w.warnings;
  return 0;
}

// The efficiency rows a Kineto trace's keyed operators give (profiler/operator_rows.h), per device,
// and the specs each device is stored with: the database's record when it has peaks, else the
// shipped system's whose GPU CUDA calls by that name (which also gives the simulator's name for it,
// so `simulate --system S --db` finds the rows).
struct KernelRowsPlan {
  profiler::TraceExtras extras;
  std::map<int, profiler::OperatorRows> rows;
  std::map<int, std::string> specs_from;  // ordinal -> shipped system the specs came from
  bool stored = true;                     // false: --no-kernel-rows (rows computed and reported only)
};

KernelRowsPlan plan_kernel_rows(const std::string& db_path, const std::string& file,
                                const std::vector<db::TraceKernel>& records, const std::map<int, std::string>& names,
                                const std::vector<profiler::TracedOperator>& operators, const std::string& notes,
                                const std::string& collective_timing = "waits for peers included") {
  KernelRowsPlan plan;
  std::optional<db::EfficiencyDb> existing;
  if (std::filesystem::exists(db_path)) existing.emplace(db::EfficiencyDb::open(db_path, db::OpenMode::read_only));
  std::set<int> ordinals;
  for (const db::TraceKernel& k : records) ordinals.insert(k.device);
  for (const int ordinal : ordinals) {
    const std::string& cuda_name = names.at(ordinal);
    std::optional<db::DeviceRecord> known = existing ? existing->find_device(cuda_name) : std::nullopt;
    const auto shipped = shipped_device_for(cuda_name);
    db::DeviceRecord record;
    if (known && known->has_peaks()) {
      record = *known;
    } else if (shipped) {
      record = shipped->record;
      plan.extras.device_specs[ordinal] = record;
      plan.specs_from[ordinal] = shipped->system;
      if (known) record.name = known->name;  // the database keeps its name; the specs are filled in
    } else {
      record.name = known ? known->name : cuda_name;
    }
    if (operators.empty()) continue;
    profiler::OperatorRows rows =
        profiler::operator_rows(operators, ordinal, record, shipped ? shipped->network : profiler::TraceNetwork{});
    if (rows.rows.size() == 0) {
      plan.rows[ordinal] = std::move(rows);
      continue;
    }
    db::validate_rows(rows.rows, file);
    const std::string rows_notes = fmt::format(
        "GEMM, attention and collective operators (record_shapes) of {}; {} GEMM, {} attention and {} collective "
        "key(s) from {} call(s), each GEMM / attention key the median of its calls without overlapping "
        "communication ({} key(s) overlapped in every call and are timed with it), each collective the median "
        "of its calls, {}",
        notes, rows.rows.gemm.size(), rows.rows.attention.size(), rows.rows.collective.size(), rows.calls,
        rows.overlapped_keys, collective_timing);
    plan.extras.rows[ordinal] = profiler::TraceRowsRun{rows_notes, rows.rows};
    plan.rows[ordinal] = std::move(rows);
  }
  return plan;
}

// Devices stored with a shipped system's specs, named in the text.
void report_device_specs(const KernelRowsPlan& plan, const profiler::TraceWriteResult& written, std::string& text) {
  for (const auto& [ordinal, system] : plan.specs_from) {
    const auto name = written.device_by_ordinal.find(ordinal);
    text += fmt::format("  CUDA device {}: device '{}' has the specs of shipped system {}\n", ordinal,
                        name != written.device_by_ordinal.end() ? name->second : "", system);
  }
}

std::string us(double s) { return fmt::format("{:.1f}", s * 1e6); }

// What the keyed operators gave, as text (appended) and JSON.
ordered_json report_kernel_rows(const profiler::KinetoTrace& t, const KernelRowsPlan& plan,
                                const profiler::TraceWriteResult& written, std::string& text) {
  ordered_json doc = {{"record_shapes", t.record_shapes}, {"operator_events", t.operator_events},
                      {"stored", plan.stored}};
  ordered_json unkeyed = ordered_json::object();
  for (const auto& [cls, u] : t.unkeyed) unkeyed[cls] = {{"kernels", u.count}, {"total_s", u.total_s}};
  doc["kernels_outside_operators"] = unkeyed;
  report_device_specs(plan, written, text);
  ordered_json devices = ordered_json::array();
  for (const auto& [ordinal, rows] : plan.rows) {
    const auto run = written.rows_run_by_device.find(ordinal);
    ordered_json d = {{"device_ordinal", ordinal},
                      {"device", written.device_by_ordinal.count(ordinal) ? written.device_by_ordinal.at(ordinal) : ""},
                      {"run", run != written.rows_run_by_device.end() ? ordered_json(run->second) : ordered_json()},
                      {"calls", rows.calls},
                      {"gemm_rows", rows.rows.gemm.size()},
                      {"attention_rows", rows.rows.attention.size()},
                      {"collective_rows", rows.rows.collective.size()},
                      {"overlapped_keys", rows.overlapped_keys},
                      {"keyed_s", rows.keyed_s}};
    ordered_json keys = ordered_json::array();
    for (const auto& i : rows.info) {
      keys.push_back({{"key", i.key}, {"operators", i.operators}, {"calls", i.calls}, {"used", i.used},
                      {"total_s", i.total_s}, {"median_s", i.median_s}, {"efficiency", i.efficiency}});
    }
    d["keys"] = keys;
    ordered_json reasons = ordered_json::object();
    for (const auto& [reason, n] : rows.not_keyed) reasons[reason] = n;
    d["not_keyed"] = reasons;
    devices.push_back(d);

    if (run != written.rows_run_by_device.end()) {
      text += fmt::format(
          "  efficiency rows (run {}): {} GEMM, {} attention and {} collective key(s) from {} operator call(s), "
          "{} s of GPU time{}\n",
          run->second, rows.rows.gemm.size(), rows.rows.attention.size(), rows.rows.collective.size(), rows.calls,
          fmt::format("{:.4g}", rows.keyed_s),
          rows.overlapped_keys > 0
              ? fmt::format("; {} key(s) ran only beside communication and are timed with it", rows.overlapped_keys)
              : std::string());
      Table tab({"key", "calls", "median_us", "efficiency"});
      const std::size_t shown = std::min<std::size_t>(rows.info.size(), 10);
      for (std::size_t i = 0; i < shown; ++i) {
        const auto& r = rows.info[i];
        tab.add_row({r.key, std::to_string(r.calls), us(r.median_s), fmt::format("{:.3f}", r.efficiency)});
      }
      text += tab.render("    ");
      if (rows.info.size() > shown) text += fmt::format("    ... {} more key(s) (--json lists all)\n", rows.info.size() - shown);
    } else if (!plan.stored && rows.rows.size() > 0) {
      text += fmt::format("  efficiency rows not stored (--no-kernel-rows): {} GEMM, {} attention and {} collective "
                          "key(s) from {} operator call(s)\n",
                          rows.rows.gemm.size(), rows.rows.attention.size(), rows.rows.collective.size(), rows.calls);
    } else {
      text += fmt::format("  no efficiency rows for CUDA device {} ({} keyed operator call(s))\n", ordinal, rows.calls);
    }
    for (const auto& [reason, n] : rows.not_keyed) text += fmt::format("    not keyed: {} call(s): {}\n", n, reason);
  }
  doc["devices"] = devices;
  if (t.operators.empty()) {
    const std::string why =
        !t.record_shapes && t.operator_events == 0
            ? "the trace was recorded without record_shapes=True: no operator shapes, so no efficiency rows"
            : "no keyed operator (PyTorch's matrix multiplies, scaled_dot_product_attention, c10d collectives: "
              "docs/profiling.md) launched a kernel: no efficiency rows";
    text += "  " + why + "\n";
    doc["why_no_rows"] = why;
  }
  for (const auto& [cls, u] : t.unkeyed) {
    text += fmt::format("  {} {} kernel(s), {:.4g} s, ran outside the keyed operators (TransformerEngine, flash-attn, "
                        "CUDA graphs: no shapes in the trace)\n",
                        u.count, cls, u.total_s);
  }
  return doc;
}

TraceImportReport skipped_report(const std::string& db_path, const std::string& file, std::int64_t run) {
  return {ordered_json{{"file", file}, {"already_imported_as_run", run}},
          fmt::format("skipped {}: already imported into {} as trace run {}\n", file, db_path, run)};
}

// One PyTorch profiler trace file, read whole before the database is touched; with
// `skip_imported` a trace already in the database is reported as such instead of refused.
// `matched`: collective calls' times matched across the directory's ranks (operator index -> time,
// profiler/collective_matching.h); nullptr: each call's own time, peer waits included.
TraceImportReport import_kineto_file(const std::string& db_path, const std::string& file, const std::string& device,
                                     bool skip_imported, bool kernel_rows,
                                     const std::map<std::size_t, double>* matched = nullptr) {
  const bool large = announce_large(file);
  profiler::KinetoTrace t = profiler::read_kineto_trace(file, device);
  double wait_removed_s = 0;
  if (matched) {
    for (const auto& [index, s] : *matched) {
      if (index >= t.operators.size()) continue;  // the file changed since it was first read
      wait_removed_s += t.operators[index].gpu_s - s;
      t.operators[index].gpu_s = s;
    }
  }
  if (large) fmt::print(stderr, "read {} GPU records; storing ...\n", t.records.size());
  std::string notes =
      fmt::format("PyTorch profiler (Kineto) trace {}", std::filesystem::path(file).filename().string());
  if (t.rank >= 0) notes += fmt::format("; rank {} of {}", t.rank, t.world_size);
  if (!t.steps.empty()) {
    notes += fmt::format("; {} step(s) {} .. {} ({})", t.steps.size(), t.steps.front(), t.steps.back(), t.step_source);
  } else {
    notes += "; no ProfilerStep ranges";
  }
  if (t.outside_steps > 0) notes += fmt::format("; {} record(s) outside the steps", t.outside_steps);
  std::string text = fmt::format("imported {}: {} kernels, {} copies / memsets", file, t.kernels, t.copies);
  text += t.steps.empty() ? "; no ProfilerStep ranges (compare with --trace-steps N)\n"
                          : fmt::format("; {} step(s) {} .. {} by {}{}\n", t.steps.size(), t.steps.front(),
                                        t.steps.back(), t.step_source,
                                        t.outside_steps > 0
                                            ? fmt::format(", {} record(s) outside them", t.outside_steps)
                                            : std::string());
  ordered_json runs;
  std::vector<std::string> warnings;
  const std::string timing =
      matched && !matched->empty()
          ? fmt::format("{} call(s) timed as the fastest rank's call of the same collective in the directory's "
                        "traces (peer waits removed: {:.4g} s)",
                        matched->size(), wait_removed_s)
          : std::string("waits for peers included");
  KernelRowsPlan plan = plan_kernel_rows(db_path, file, t.records, t.device_names, t.operators, notes, timing);
  plan.stored = kernel_rows;
  if (!kernel_rows) plan.extras.rows.clear();
  profiler::TraceWriteResult written;
  if (const std::int64_t run = store_once(db_path, file, kKinetoTool, notes, t.records, t.device_names, runs, text,
                                          warnings, skip_imported, plan.extras, &written)) {
    return skipped_report(db_path, file, run);
  }
  ordered_json doc = {{"file", file},         {"kernels", t.kernels},
                      {"copies", t.copies},       {"steps", t.steps},
                      {"step_source", t.step_source}, {"outside_steps", t.outside_steps},
                      {"rank", t.rank},           {"world_size", t.world_size},
                      {"runs", runs},             {"warnings", warnings}};
  doc["kernel_rows"] = report_kernel_rows(t, plan, written, text);
  if (matched) {
    doc["collectives_matched"] = {{"calls", matched->size()}, {"wait_removed_s", wait_removed_s}};
    if (!matched->empty()) {
      text += fmt::format("  {} collective call(s) timed as the fastest rank's call of the same collective "
                          "({:.4g} s of peer waits removed)\n",
                          matched->size(), wait_removed_s);
    }
  }
  return {doc, text};
}

// One Nsight Systems SQLite export, read whole before the database is touched; `skip_imported` as
// for Kineto files.
TraceImportReport import_nsys_file(const std::string& db_path, const std::string& file, const std::string& device,
                                   const std::string& nvtx_step_prefix, bool skip_imported) {
  const bool large = announce_large(file);
  const profiler::NsysTrace t = profiler::read_nsys_sqlite(file, device, nvtx_step_prefix);
  if (large) fmt::print(stderr, "read {} GPU records; storing ...\n", t.records.size());
  std::string notes = fmt::format("Nsight Systems report {}", std::filesystem::path(file).filename().string());
  std::string steps_text;
  if (t.steps.empty()) {
    notes += "; no ProfilerStep ranges";
    steps_text = "no ProfilerStep ranges (compare with --trace-steps N: the steps the capture holds)";
  } else {
    steps_text = fmt::format("{} step(s) by NVTX ranges '{}' .. '{}' (stored as ProfilerStep#1 .. #{}){}",
                             t.steps.size(), t.steps.front(), t.steps.back(), t.steps.size(),
                             t.outside_steps > 0 ? fmt::format(", {} record(s) outside them", t.outside_steps) : "");
    notes += "; " + steps_text;
  }
  if (t.untimed > 0) notes += fmt::format("; {} untimed record(s) left out", t.untimed);
  std::string text = fmt::format("imported {}: {} kernels, {} copies / memsets{}; {}\n", file, t.kernels, t.copies,
                                 t.untimed > 0 ? fmt::format(" ({} untimed left out)", t.untimed) : "", steps_text);
  ordered_json runs;
  std::vector<std::string> warnings;
  const KernelRowsPlan plan = plan_kernel_rows(db_path, file, t.records, t.device_names, {}, notes);
  profiler::TraceWriteResult written;
  if (const std::int64_t run = store_once(db_path, file, kNsysTool, notes, t.records, t.device_names, runs, text,
                                          warnings, skip_imported, plan.extras, &written)) {
    return skipped_report(db_path, file, run);
  }
  report_device_specs(plan, written, text);
  ordered_json doc = {{"file", file},   {"kernels", t.kernels}, {"copies", t.copies}, {"untimed", t.untimed},
                      {"steps", t.steps}, {"outside_steps", t.outside_steps},
                      {"runs", runs},   {"warnings", warnings}};
  return {doc, text};
}

// The files of `dir` whose names end with one of `suffixes`, in name order.
std::vector<std::string> files_in(const std::string& dir, std::initializer_list<std::string_view> suffixes) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() &&
        std::any_of(suffixes.begin(), suffixes.end(), [&](std::string_view s) { return name.ends_with(s); })) {
      files.push_back(entry.path().string());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

// A directory of traces: each file in name order, one transaction each, progress on stderr, files
// already stored skipped; an error stops at its file after saying what was stored before it.
TraceImportReport import_directory(const std::string& db_path, const std::string& dir, const char* option,
                                   std::initializer_list<std::string_view> suffixes, const char* kinds,
                                   const std::function<TraceImportReport(const std::string&)>& import_one) {
  const std::vector<std::string> files = files_in(dir, suffixes);
  if (files.empty()) {
    // torchtitan writes one subdirectory per profiled iteration: point at the one that is meant.
    std::vector<std::string> subdirs;
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      if (entry.is_directory()) subdirs.push_back(entry.path().filename().string());
    }
    std::sort(subdirs.begin(), subdirs.end());
    if (subdirs.size() > 4) subdirs.resize(4), subdirs.push_back("...");
    throw InputError(dir, option,
                     fmt::format("the directory holds no trace file ({}){}", kinds,
                                 subdirs.empty() ? std::string()
                                                 : fmt::format("; it has subdirectories ({}): import one of them",
                                                               fmt::join(subdirs, ", "))));
  }
  ordered_json imports = ordered_json::array(), skipped = ordered_json::array();
  std::string text;
  for (std::size_t i = 0; i < files.size(); ++i) {
    fmt::print(stderr, "[{}/{}] {}\n", i + 1, files.size(), files[i]);
    try {
      TraceImportReport r = import_one(files[i]);
      (r.doc.contains("already_imported_as_run") ? skipped : imports).push_back(std::move(r.doc));
      text += r.text;
    } catch (const InputError&) {
      if (!text.empty()) fmt::print(stderr, "before the error below:\n{}", text);
      throw;
    }
  }
  text += fmt::format("{} trace file(s) of {}: {} imported, {} already in {}\n", files.size(), dir, imports.size(),
                      skipped.size(), db_path);
  return {ordered_json{{"directory", dir}, {"imports", imports}, {"skipped", skipped}}, text};
}

bool is_directory(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_directory(path, ec);
}

}  // namespace

// A PyTorch profiler trace becomes one trace run per GPU it shows (normally one: a trace is one
// rank's); a directory, each of its traces (tensorboard_trace_handler's
// "<worker>.<time>.pt.trace.json[.gz]", one per rank and profiling cycle).
TraceImportReport import_kineto_trace(const std::string& db_path, const std::string& path,
                                      const std::string& device, bool kernel_rows) {
  if (!is_directory(path)) return import_kineto_file(db_path, path, device, false, kernel_rows);
  // Several ranks' traces: their collective calls are matched first (each file read once for its
  // calls, then again to be stored), so that a collective row times the transfer, not the waits.
  const std::vector<std::string> files = files_in(path, {".json", ".json.gz"});
  std::map<std::string, std::map<std::size_t, double>> matched_by_file;
  ordered_json matching;
  if (files.size() > 1) {
    std::vector<int> ranks;
    std::vector<std::vector<profiler::TracedOperator>> calls;
    for (std::size_t i = 0; i < files.size(); ++i) {
      fmt::print(stderr, "[{}/{}] {}: its collective calls, to match them across ranks\n", i + 1, files.size(), files[i]);
      try {
        profiler::KinetoTrace t = profiler::read_kineto_trace(files[i], device);
        ranks.push_back(t.rank);
        calls.push_back(std::move(t.operators));
      } catch (const InputError&) {
        // The import below stops at this file with its error, after storing the files before it;
        // here it only takes no part in the matching.
        ranks.push_back(-1);
        calls.emplace_back();
      }
    }
    std::vector<profiler::RankOperators> traces;
    for (std::size_t i = 0; i < files.size(); ++i) traces.push_back({ranks[i], &calls[i]});
    const profiler::CollectiveMatching m = profiler::match_collectives(traces);
    matching = {{"ranks", m.ranks},
                {"collective_calls", m.calls},
                {"matched_calls", m.matched_calls},
                {"wait_removed_s", m.wait_removed_s},
                {"not_matched_because", m.refused.empty() ? ordered_json() : ordered_json(m.refused)}};
    for (std::size_t i = 0; i < files.size(); ++i) matched_by_file[files[i]] = m.matched_s[i];
  }
  TraceImportReport r = import_directory(
      db_path, path, "--kineto", {".json", ".json.gz"}, "*.json or *.json.gz", [&](const std::string& f) {
        const auto it = matched_by_file.find(f);
        return import_kineto_file(db_path, f, device, true, kernel_rows,
                                  it == matched_by_file.end() ? nullptr : &it->second);
      });
  if (!matching.is_null() && matching["collective_calls"].get<std::int64_t>() > 0) {
    r.doc["collective_matching"] = matching;
    r.text += matching["not_matched_because"].is_null()
                  ? fmt::format("collectives matched across {} ranks: {} of {} call(s), {:.4g} s of peer waits removed\n",
                                matching["ranks"].get<int>(), matching["matched_calls"].get<std::int64_t>(),
                                matching["collective_calls"].get<std::int64_t>(),
                                matching["wait_removed_s"].get<double>())
                  : fmt::format("collectives not matched across ranks: {}\n",
                                matching["not_matched_because"].get<std::string>());
  }
  return r;
}

// An Nsight Systems report becomes one trace run per GPU it shows: one for a rank's report,
// several for a node's; a directory, each of its *.sqlite exports (one per node).
TraceImportReport import_nsys_trace(const std::string& db_path, const std::string& path, const std::string& device,
                                    const std::string& nvtx_step_prefix) {
  if (!is_directory(path)) return import_nsys_file(db_path, path, device, nvtx_step_prefix, false);
  return import_directory(db_path, path, "--nsys", {".sqlite"}, "*.sqlite, from nsys export --type sqlite",
                          [&](const std::string& f) {
                            return import_nsys_file(db_path, f, device, nvtx_step_prefix, true);
                          });
}


}  // namespace calisim::cli
