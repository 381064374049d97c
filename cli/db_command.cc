// `calisim db init|list|show|query|import|export|merge|vacuum|delete-run`: the efficiency
// database from the command line. Every subcommand prints a table by default and one JSON
// document with --json; problems the user can fix are InputErrors (exit 2).
#include <fmt/format.h>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/trace_import.h"
#include "cli/table.h"
#include "core/error.h"
#include "db/efficiency_db.h"
#include "db/merge.h"
#include "db/nearest.h"
#include "db/published_import.h"
#include "db/row_text.h"
#include "db/schema.h"
#include "db/simumax_import.h"
#include "db/text_dump.h"
#include "db/trace_store.h"

namespace calisim::cli {
namespace {

using nlohmann::ordered_json;
namespace cdb = calisim::db;

struct DbArgs {
  std::string db;
  std::string device;
  std::string key;
  std::string simumax, published, from, kineto, nsys, nvtx_steps;
  bool no_kernel_rows = false;
  std::string out, format;
  std::vector<std::string> inputs;
  std::size_t nearest = 0;
  std::int64_t run_id = 0;
  bool json = false;
  bool skip_traces = false;
  bool skip_profile_log = false;
};

std::string num(double v) { return fmt::format("{:.4g}", v); }

void print(const DbArgs& a, const ordered_json& doc, const std::string& text) {
  if (a.json) {
    fmt::print("{}\n", doc.dump(2));
  } else {
    fmt::print("{}", text);
  }
}

ordered_json summary_json(const cdb::DeviceSummary& s) {
  ordered_json by_source = ordered_json::object();
  for (int i = 0; i < cdb::kSourceCount; ++i) {
    if (s.rows_by_source[i]) by_source[std::string(to_string(static_cast<cdb::Source>(i)))] = s.rows_by_source[i];
  }
  return {{"runs", s.runs},         {"gemm", s.gemm},
          {"attention", s.attention}, {"collective", s.collective},
          {"memory", s.memory},     {"memory_fits", s.memory_fits},
          {"collective_fits", s.collective_fits}, {"rows_by_source", by_source}};
}

std::string report_text(const cdb::MergeReport& r) {
  std::string text = fmt::format("added {} device(s), {} run(s), {} row(s); {} duplicate(s) skipped, {} conflict(s)\n",
                                 r.devices_added, r.runs_added, r.rows_added, r.duplicates, r.conflicts);
  if (r.device_specs_filled > 0) {
    text += fmt::format("  specs filled in for {} device(s) the database knew by name only\n", r.device_specs_filled);
  }
  if (r.trace_kernels_added > 0 || r.trace_kernel_duplicates > 0) {
    text += fmt::format("  trace records: {} added, {} already there\n", r.trace_kernels_added,
                        r.trace_kernel_duplicates);
  }
  if (r.profile_log_added > 0 || r.profile_log_duplicates > 0) {
    text += fmt::format("  profile log entries: {} added, {} already there\n", r.profile_log_added,
                        r.profile_log_duplicates);
  }
  for (const auto& m : r.messages) text += "  " + m + "\n";
  return text;
}

ordered_json report_json(const cdb::MergeReport& r) {
  return {{"devices_added", r.devices_added}, {"device_specs_filled", r.device_specs_filled},
          {"runs_added", r.runs_added}, {"rows_added", r.rows_added},
          {"duplicates", r.duplicates},       {"conflicts", r.conflicts},
          {"trace_kernels_added", r.trace_kernels_added}, {"trace_kernel_duplicates", r.trace_kernel_duplicates},
          {"profile_log_added", r.profile_log_added}, {"profile_log_duplicates", r.profile_log_duplicates},
          {"messages", r.messages}};
}

void run_init(const DbArgs& a) {
  auto db = cdb::EfficiencyDb::open(a.db, cdb::OpenMode::create);
  const int v = cdb::schema_version(db.connection());
  print(a, {{"path", a.db}, {"schema_version", v}}, fmt::format("{}: efficiency database, schema version {}\n", a.db, v));
}

void run_list(const DbArgs& a) {
  auto db = cdb::EfficiencyDb::open(a.db, cdb::OpenMode::read_only);
  Table t({"device", "aliases", "runs", "gemm", "attn", "coll", "mem", "fits"});
  ordered_json doc = ordered_json::array();
  for (const auto& d : db.devices()) {
    const auto s = db.summary(d.name);
    const auto aliases = db.aliases(d.name);
    t.add_row({d.name, fmt::format("{}", fmt::join(aliases, ", ")), std::to_string(s.runs), std::to_string(s.gemm),
               std::to_string(s.attention), std::to_string(s.collective), std::to_string(s.memory),
               std::to_string(s.memory_fits + s.collective_fits)});
    ordered_json j = {{"device", d.name}, {"aliases", aliases}};
    j.update(summary_json(s));
    doc.push_back(j);
  }
  print(a, doc, doc.empty() ? a.db + ": no devices\n" : t.render(""));
}

// Trace runs (libcalisim_trace.so, trace imports) hold kernels: summarise each by kernel class.
void add_trace_summaries(cdb::EfficiencyDb& db, const std::vector<cdb::RunBatch>& runs, std::string& text,
                         ordered_json& doc) {
  ordered_json traces = ordered_json::array();
  for (const auto& b : runs) {
    if (b.run.source != cdb::Source::trace) continue;
    const cdb::TraceSummary s = cdb::summarize_trace(db, b.run.id);
    // A trace import's efficiency rows (db import --kineto with record_shapes) are a run of their own.
    if (s.kernels == 0 && b.rows.size() > 0) continue;
    std::int64_t copies = 0;
    for (const auto& c : s.copies) copies += c.count;
    text += fmt::format("\ntrace run {}: {} kernels{}, {} s of GPU time over {} s wall\n", b.run.id,
                        s.kernels - copies, copies ? fmt::format(", {} copies / memsets", copies) : "",
                        num(s.total_s), num(s.wall_s));
    Table t({"class", "kernels", "total_s", "share"});
    ordered_json classes = ordered_json::array();
    for (const auto& c : s.classes) {
      t.add_row({c.kernel_class, std::to_string(c.count), num(c.total_s), fmt::format("{:.1f}%", 100 * c.share)});
      classes.push_back({{"class", c.kernel_class}, {"kernels", c.count}, {"total_s", c.total_s}, {"bytes", c.bytes},
                         {"share", c.share}});
    }
    if (!s.classes.empty()) text += t.render("");
    // Copies and memsets by direction / memory kind, with the bandwidth they reached.
    Table ct({"copies", "kind", "count", "bytes", "total_s", "GB/s"});
    ordered_json copies_json = ordered_json::array();
    for (const auto& c : s.copies) {
      ct.add_row({c.kernel_class, c.copy_kind.empty() ? "-" : c.copy_kind, std::to_string(c.count),
                  std::to_string(c.bytes), num(c.total_s), num(c.gb_s())});
      copies_json.push_back({{"class", c.kernel_class}, {"kind", c.copy_kind}, {"count", c.count}, {"bytes", c.bytes},
                        {"total_s", c.total_s}, {"gb_s", c.gb_s()}});
    }
    if (!s.copies.empty()) text += ct.render("");
    traces.push_back({{"run", b.run.id}, {"kernels", s.kernels - copies}, {"copies", copies},
                      {"total_s", s.total_s}, {"wall_s", s.wall_s},
                      {"classes", classes}, {"copy_kinds", copies_json}});
  }
  if (!traces.empty()) doc["traces"] = traces;
}

void run_show(const DbArgs& a) {
  auto db = cdb::EfficiencyDb::open(a.db, cdb::OpenMode::read_only);
  const cdb::DeviceRecord d = db.device(a.device);
  const auto runs = db.load_runs(d.name);
  std::string text = fmt::format("{} ({})\n", d.name, d.architecture.empty() ? "architecture unknown" : d.architecture);
  std::string peaks;
  for (int i = 0; i < kDTypeCount; ++i) {
    if (d.peak_tflops[i] > 0) peaks += fmt::format(" {} {}", to_string(static_cast<DType>(i)), num(d.peak_tflops[i]));
  }
  text += fmt::format("  dense peak TFLOP/s:{}\n  HBM {} GB/s, memory {} GB, {} SMs\n", peaks.empty() ? " none" : peaks,
                      num(d.hbm_gb_s), num(d.memory_gb), d.sm_count);
  if (!d.driver_version.empty() || !d.cuda_version.empty() || !d.library_versions.empty()) {
    text += fmt::format("  driver {}, CUDA {}, {}\n", d.driver_version, d.cuda_version, d.library_versions);
  }
  Table t({"run", "source", "host", "started_at", "tool", "rows", "notes"});
  ordered_json jruns = ordered_json::array();
  for (const auto& b : runs) {
    t.add_row({std::to_string(b.run.id), std::string(to_string(b.run.source)), b.run.host, b.run.started_at,
               b.run.tool_version, std::to_string(b.rows.size()), b.run.notes});
    ordered_json j = {{"id", b.run.id}};
    j.update(cdb::run_to_json(b.run));
    j["rows"] = b.rows.size();
    jruns.push_back(j);
  }
  text += "\n" + t.render("");
  ordered_json doc = {{"device", cdb::device_to_json(d)}, {"aliases", db.aliases(d.name)},
                      {"summary", summary_json(db.summary(d.name))}, {"runs", jruns}};
  add_trace_summaries(db, runs, text, doc);
  print(a, doc, text);
}

// One hit or neighbour as a table row / JSON object.
void add_hit(Table& t, ordered_json& doc, const cdb::RunRecord& run, const cdb::MeasurementSet& row,
             const double* distance) {
  cdb::for_each_row_text(row, [&](const std::string& key, const ordered_json& numbers) {
    const double rate = numbers.contains("tflops")       ? numbers["tflops"].get<double>()
                        : numbers.contains("busbw_gb_s") ? numbers["busbw_gb_s"].get<double>()
                        : numbers.contains("gb_s")       ? numbers["gb_s"].get<double>()
                                                         : 0.0;
    std::vector<std::string> cells;
    if (distance) cells.push_back(num(*distance));
    for (const std::string& c : {key, num(numbers["efficiency"].get<double>()), num(rate),
                                 std::string(to_string(run.source)), std::to_string(run.id), run.host}) {
      cells.push_back(c);
    }
    t.add_row(cells);
    ordered_json j = numbers;
    if (distance) j["distance"] = *distance;
    j["run"] = run.id;
    j["source"] = to_string(run.source);
    j["host"] = run.host;
    doc.push_back(j);
  });
}

void run_query(const DbArgs& a) {
  auto db = cdb::EfficiencyDb::open(a.db, cdb::OpenMode::read_only);
  const std::string device = db.device(a.device).name;
  ordered_json doc = ordered_json::array();
  std::vector<std::string> header = {"key", "efficiency", "rate", "source", "run", "host"};
  try {
    if (a.nearest > 0) {
      header.insert(header.begin(), "distance");
      Table t(header);
      for (const auto& n : cdb::nearest(db.load_runs(device), a.key, a.nearest)) {
        add_hit(t, doc, n.run, n.row, &n.distance);
      }
      print(a, doc, doc.empty() ? "no rows of that kind and category\n" : t.render(""));
      return;
    }
    Table t(header);
    for (const auto& h : db.lookup(device, a.key)) add_hit(t, doc, h.run, h.row, nullptr);
    print(a, doc, doc.empty() ? "no exact match (try --nearest 5)\n" : t.render(""));
  } catch (const std::invalid_argument& e) {
    throw InputError("<command line>", "db query KEY", e.what());
  }
}

// The import itself; `dump` is the --from input, already read (empty for --simumax / --published,
// which read their file against the open database).
void import_into(const DbArgs& a, const cdb::Dump* dump) {
  auto db = cdb::EfficiencyDb::open(a.db, cdb::OpenMode::create);
  if (!a.simumax.empty()) {
    const auto imp = cdb::import_simumax_system(db, a.simumax, a.device);
    const auto& r = imp.batch.rows;
    ordered_json doc = {{"run", imp.batch.run.id},          {"device", imp.batch.run.device},
                        {"alias", imp.alias},               {"gemm", r.gemm.size()},
                        {"attention", r.attention.size()},  {"memory_fits", r.memory_fits.size()},
                        {"collective_fits", r.collective_fits.size()}, {"warnings", imp.warnings}};
    std::string text = fmt::format(
        "imported {} as run {} of '{}' (alias '{}'): {} GEMM, {} attention, {} memory fits, {} collective fits\n",
        a.simumax, imp.batch.run.id, imp.batch.run.device, imp.alias, r.gemm.size(), r.attention.size(),
        r.memory_fits.size(), r.collective_fits.size());
    for (const auto& w : imp.warnings) text += "  warning: " + w + "\n";
    print(a, doc, text);
    return;
  }
  cdb::Dump published;
  if (!a.published.empty()) published.runs = cdb::read_published_csv(a.published, db);
  const cdb::MergeReport r = cdb::merge_into(db, a.published.empty() ? *dump : published);
  print(a, report_json(r), report_text(r));
}

// The files of a database: `path` itself, SQLite's write-ahead log and shared-memory index, and
// its rollback journal.
std::vector<std::string> database_files(const std::string& path) {
  return {path, path + "-wal", path + "-shm", path + "-journal"};
}

// A PyTorch profiler trace or an Nsight Systems report as trace runs (cli/trace_import.h).
void import_trace(const DbArgs& a) {
  const TraceImportReport r =
      a.kineto.empty() ? import_nsys_trace(a.db, a.nsys, a.device, a.nvtx_steps)
                       : import_kineto_trace(a.db, a.kineto, a.device, !a.no_kernel_rows);
  print(a, r.doc, r.text);
}

void run_import(const DbArgs& a) {
  const int sources =
      !a.simumax.empty() + !a.published.empty() + !a.from.empty() + !a.kineto.empty() + !a.nsys.empty();
  if (sources != 1) {
    throw InputError("<command line>", "db import",
                     "give exactly one of --simumax, --published, --from, --kineto or --nsys");
  }
  if (a.no_kernel_rows && a.kineto.empty()) {
    throw InputError("<command line>", "db import --no-kernel-rows", "needs --kineto (the rows come from its operators)");
  }
  if (!a.nvtx_steps.empty() && a.nsys.empty()) {
    throw InputError("<command line>", "db import --nvtx-steps", "needs --nsys (Kineto traces carry their own steps)");
  }
  if (!a.kineto.empty() || !a.nsys.empty()) {
    import_trace(a);
    return;
  }
  if (!a.simumax.empty() && a.device.empty()) {
    throw InputError("<command line>", "db import --simumax", "--device NAME is required (the GPU the file describes)");
  }
  // Read --from before the database is opened: a malformed or missing input creates nothing.
  cdb::Dump dump;
  if (!a.from.empty()) dump = cdb::read_any(a.from);
  // Imports are one transaction, so a failure leaves an existing database as it was; a database
  // this command created would be left empty, so it is removed again.
  namespace fs = std::filesystem;
  std::error_code ec;
  const bool existed = fs::exists(a.db, ec);
  try {
    import_into(a, &dump);
  } catch (...) {
    if (!existed) {
      for (const auto& f : database_files(a.db)) fs::remove(f, ec);
    }
    throw;
  }
}

void run_export(const DbArgs& a) {
  auto db = cdb::EfficiencyDb::open(a.db, cdb::OpenMode::read_only);
  std::string format = a.format;
  if (format.empty()) format = a.out.size() >= 4 && a.out.substr(a.out.size() - 4) == ".csv" ? "csv" : "json";
  if (format != "csv" && format != "json") {
    throw InputError("<command line>", "db export --format", "expected csv or json, got '" + format + "'");
  }
  cdb::Dump dump = cdb::dump_database(db, a.device);
  const std::size_t trace_records = dump.trace_kernel_count();
  const std::size_t trace_runs = dump.traces.size();
  if (format == "csv" && trace_records > 0 && !a.skip_traces) {
    throw InputError("<command line>", "db export --format csv",
                     fmt::format("{} holds {} trace run(s) with {} kernel/copy records, which CSV has no columns "
                                 "for: export JSON (it carries them), or pass --skip-traces to leave them out",
                                 a.db, trace_runs, trace_records));
  }
  const std::size_t log_entries = dump.profile_log_count();
  if (format == "csv" && log_entries > 0 && !a.skip_profile_log) {
    throw InputError("<command line>", "db export --format csv",
                     fmt::format("{} holds {} profile log entries (the profiler's record of skipped shapes, timers "
                                 "and throttling), which CSV has no columns for: export JSON (it carries them), or "
                                 "pass --skip-profile-log to leave them out",
                                 a.db, log_entries));
  }
  if (a.skip_traces) dump.traces.clear();
  if (a.skip_profile_log) dump.profile_logs.clear();
  if (format == "csv") {
    // CSV has no columns for device specs or aliases either. They are not refused like traces
    // (the rows are the point of a CSV export), but an import of the file creates its devices by
    // name only, which predict and calibrate refuse: say so.
    std::size_t with_specs = 0;
    for (const auto& d : dump.devices) {
      cdb::DeviceRecord name_only;
      name_only.name = d.name;
      with_specs += d == name_only ? 0 : 1;
    }
    if (with_specs > 0 || !dump.aliases.empty()) {
      fmt::print(stderr,
                 "warning: CSV has no columns for device specs or aliases: {} device(s) with specs (peaks, HBM "
                 "bandwidth, memory, SMs) and {} alias(es) of {} are not in {}; importing it creates the devices "
                 "by name only, without the specs that predict and calibrate need (export JSON to keep them)\n",
                 with_specs, dump.aliases.size(), a.db, a.out == "-" ? "the output" : a.out);
    }
  }
  auto write = [&](std::ostream& os) { format == "csv" ? cdb::write_csv(os, dump) : cdb::write_json(os, dump); };
  if (a.out == "-") {
    write(std::cout);
    return;
  }
  std::ofstream os(a.out, std::ios::binary);
  if (!os) throw InputError(a.out, "", "cannot write the file");
  write(os);
  std::size_t rows = 0;
  for (const auto& b : dump.runs) rows += b.rows.size();
  const std::size_t written_traces = dump.trace_kernel_count();
  std::string text = fmt::format("wrote {} ({}): {} device(s), {} run(s), {} row(s), {} trace record(s)\n", a.out,
                                 format, dump.devices.size(), dump.runs.size(), rows, written_traces);
  if (written_traces < trace_records) {
    text += fmt::format("  left out {} trace record(s) of {} trace run(s) (--skip-traces)\n", trace_records,
                        trace_runs);
  }
  const std::size_t written_log = dump.profile_log_count();
  if (written_log > 0) text += fmt::format("  {} profile log entries\n", written_log);
  if (written_log < log_entries) text += fmt::format("  left out {} profile log entries (--skip-profile-log)\n", log_entries);
  print(a,
        {{"path", a.out}, {"format", format}, {"devices", dump.devices.size()}, {"runs", dump.runs.size()},
         {"rows", rows}, {"trace_records", written_traces}, {"trace_records_left_out", trace_records - written_traces},
         {"profile_log_entries", written_log}, {"profile_log_entries_left_out", log_entries - written_log}},
        text);
}

void run_merge(const DbArgs& a) {
  // Read every input first: a malformed one stops the merge before anything is written.
  std::vector<cdb::Dump> dumps;
  for (const auto& in : a.inputs) dumps.push_back(cdb::read_any(in));
  auto db = cdb::EfficiencyDb::open(a.db, cdb::OpenMode::create);
  cdb::MergeReport total;
  ordered_json per_input = ordered_json::array();
  std::string text;
  for (std::size_t i = 0; i < dumps.size(); ++i) {
    const cdb::MergeReport r = cdb::merge_into(db, dumps[i]);
    per_input.push_back(ordered_json{{"input", a.inputs[i]}, {"report", report_json(r)}});
    text += a.inputs[i] + ": " + report_text(r);
  }
  print(a, {{"output", a.db}, {"inputs", per_input}}, text);
}

void run_vacuum(const DbArgs& a) {
  auto db = cdb::EfficiencyDb::open(a.db, cdb::OpenMode::read_write);
  db.vacuum();
  print(a, {{"path", a.db}, {"vacuumed", true}}, a.db + ": vacuumed\n");
}

void run_delete(const DbArgs& a) {
  auto db = cdb::EfficiencyDb::open(a.db, cdb::OpenMode::read_write);
  if (!db.delete_run(a.run_id)) {
    throw InputError(a.db, "run " + std::to_string(a.run_id), "no such run (see `calisim db show`)");
  }
  print(a, {{"path", a.db}, {"deleted_run", a.run_id}}, fmt::format("deleted run {}\n", a.run_id));
}

CLI::App* sub(CLI::App* parent, const std::shared_ptr<DbArgs>& args, const char* name, const char* help,
              void (*run)(const DbArgs&), const char* db_help = "efficiency database file") {
  CLI::App* s = parent->add_subcommand(name, help);
  s->add_option("db", args->db, db_help)->required();
  s->add_flag("--json", args->json, "print one JSON document");
  s->callback([args, run] { run(*args); });
  return s;
}

}  // namespace

void register_db(CLI::App& app) {
  auto args = std::make_shared<DbArgs>();
  CLI::App* db = app.add_subcommand("db", "Create, inspect, import into and export the efficiency database");
  db->require_subcommand(1);
  sub(db, args, "init", "Create a database file (or migrate an older one)", run_init);
  sub(db, args, "list", "List the devices and their row counts", run_list);
  sub(db, args, "show", "Show one device's specs and runs", run_show)
      ->add_option("device", args->device, "device name or alias")
      ->required();
  CLI::App* q = sub(db, args, "query", "Look up a kernel key (exact, or its nearest neighbours)", run_query);
  q->add_option("device", args->device, "device name or alias")->required();
  q->add_option("key", args->key, "canonical key, e.g. \"gemm m=4096 n=1536 k=5120 batch=1 dtype=bf16 layout=TN acc=0\"")
      ->required();
  q->add_option("--nearest", args->nearest, "list the N nearest rows in log-shape space instead");
  CLI::App* imp = sub(db, args, "import", "Import a SimuMax system file, published figures, a calisim export or a profiler trace",
                      run_import);
  imp->add_option("--simumax", args->simumax, "SimuMax system JSON (needs --device)");
  imp->add_option("--device", args->device,
                  "device the SimuMax file describes, e.g. \"NVIDIA A100 PCIe 80GB\" (with --kineto / --nsys: the GPU "
                  "the trace ran on, when the trace does not name it)");
  imp->add_option("--published", args->published, "CSV of published figures (device,key,tflops|gb_s|busbw_gb_s,...,source)");
  imp->add_option("--from", args->from, "a calisim export (.json, .csv) or another database file");
  imp->add_option("--kineto", args->kineto,
                  "a PyTorch profiler trace (Chrome-trace .json or .json.gz of one rank) to store as a trace run, or a "
                  "directory of them (one per rank: each file imported, those already stored skipped); recorded with "
                  "record_shapes=True, its GEMM, attention and collective calls also become efficiency rows");
  imp->add_flag("--no-kernel-rows", args->no_kernel_rows,
                "with --kineto: store the trace only, not the GEMM / attention efficiency rows of its operators "
                "(traces recorded with record_shapes=True; the report still says what they would be)");
  imp->add_option("--nsys", args->nsys,
                  "an Nsight Systems report exported to SQLite (nsys export --type sqlite) to store as trace runs, "
                  "one per GPU, or a directory of them (one per node: each imported, those already stored skipped)");
  imp->add_option("--nvtx-steps", args->nvtx_steps,
                  "with --nsys: the program's NVTX ranges whose text starts with PREFIX are the training steps "
                  "(e.g. iteration for torch.cuda.nvtx.range_push(f\"iteration{i}\"))");
  CLI::App* exp = sub(db, args, "export", "Write the database as JSON or CSV (stable, diff-friendly)", run_export);
  exp->add_option("out", args->out, "output file, or - for stdout")->required();
  exp->add_option("--format", args->format, "json or csv (default: from the extension, else json)");
  exp->add_option("--device", args->device, "only this device");
  exp->add_flag("--skip-traces", args->skip_traces,
                "leave trace runs' kernel/copy records out (needed for CSV, which has no columns for them)");
  exp->add_flag("--skip-profile-log", args->skip_profile_log,
                "leave the profiler's session log out (needed for CSV, which has no columns for it)");
  CLI::App* merge = sub(db, args, "merge", "Merge databases and exports into one file, skipping duplicates", run_merge,
                        "output database (created when missing)");
  merge->add_option("inputs", args->inputs, "database files, .json or .csv exports")->required();
  sub(db, args, "vacuum", "Reclaim free space and checkpoint the write-ahead log", run_vacuum);
  sub(db, args, "delete-run", "Delete one run and its rows", run_delete)
      ->add_option("run", args->run_id, "run id (see `calisim db show`)")
      ->required();
}

}  // namespace calisim::cli
