#include "db/text_dump.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <limits>
#include <map>
#include <ostream>
#include <stdexcept>
#include <tuple>

#include "core/error.h"
#include "db/csv.h"
#include "db/json_file.h"
#include "db/row_tables.h"
#include "db/row_text.h"
#include "db/trace_text.h"

namespace calisim::db {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

constexpr const char* kFormat = "calisim-efficiency-db";
// Version 2 = version 1 plus "kernels" on trace runs; version 3 = version 2 plus "profile_log";
// each written only when there are any (text_dump.h).
constexpr int kFormatVersion = 1;
constexpr int kFormatVersionWithTraces = 2;
constexpr int kFormatVersionWithProfileLog = 3;

const std::vector<std::string>& provenance_columns() {
  static const std::vector<std::string> cols = {"device",     "source",   "tool_version", "host",
                                                "started_at", "ended_at", "notes"};
  return cols;
}

auto run_order(const RunRecord& r) {
  return std::tie(r.device, r.source, r.started_at, r.host, r.tool_version, r.ended_at, r.notes);
}

}  // namespace

ordered_json device_to_json(const DeviceRecord& d) {
  ordered_json o;
  o["name"] = d.name;
  o["architecture"] = d.architecture;
  o["sm_count"] = d.sm_count;
  o["boost_clock_mhz"] = d.boost_clock_mhz;
  o["memory_clock_mhz"] = d.memory_clock_mhz;
  ordered_json peaks = ordered_json::object();
  for (int i = 0; i < kDTypeCount; ++i) {
    if (d.peak_tflops[i] > 0) peaks[std::string(to_string(static_cast<DType>(i)))] = d.peak_tflops[i];
  }
  o["peak_tflops"] = peaks;
  o["hbm_gb_s"] = d.hbm_gb_s;
  o["memory_gb"] = d.memory_gb;
  o["l2_mb"] = d.l2_mb;
  o["driver_version"] = d.driver_version;
  o["cuda_version"] = d.cuda_version;
  o["library_versions"] = d.library_versions;
  return o;
}

ordered_json run_to_json(const RunRecord& r) {
  ordered_json o;
  o["device"] = r.device;
  o["source"] = to_string(r.source);
  o["tool_version"] = r.tool_version;
  o["host"] = r.host;
  o["started_at"] = r.started_at;
  o["ended_at"] = r.ended_at;
  o["notes"] = r.notes;
  return o;
}

namespace {

// Typed access to one JSON object, with the JSON path of the object for errors.
class Obj {
 public:
  Obj(const json& j, std::string file, std::string where) : j_(j), file_(std::move(file)), where_(std::move(where)) {
    if (!j.is_object()) throw InputError(file_, where_, "expected an object");
  }
  std::string str(const char* name, bool required = true) const {
    auto it = j_.find(name);
    if (it == j_.end() && !required) return "";
    if (it == j_.end() || !it->is_string()) throw InputError(file_, path(name), "expected a string");
    return it->get<std::string>();
  }
  double num(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end()) return 0;
    if (!it->is_number()) throw InputError(file_, path(name), "expected a number");
    return it->get<double>();
  }
  // A device spec figure: absent or 0 = unknown, never negative.
  double spec(const char* name) const {
    const double v = num(name);
    if (v < 0) throw InputError(file_, path(name), fmt::format("expected a number >= 0 (0 = unknown), got {}", v));
    return v;
  }
  // A count: absent = 0; an integer from 0 to INT_MAX (1.5 is refused, not truncated).
  int count(const char* name) const {
    auto it = j_.find(name);
    if (it == j_.end()) return 0;
    if (!it->is_number_integer() || it->get<double>() < 0 || it->get<double>() > std::numeric_limits<int>::max()) {
      throw InputError(file_, path(name),
                       fmt::format("expected an integer from 0 to {}, got {}", std::numeric_limits<int>::max(),
                                   it->dump()));
    }
    return it->get<int>();
  }
  // Refuses a member not in `known`: a misspelt field would otherwise be ignored without a word.
  void only(std::initializer_list<const char*> known) const {
    for (auto it = j_.begin(); it != j_.end(); ++it) {
      if (std::none_of(known.begin(), known.end(), [&](const char* k) { return it.key() == k; })) {
        throw InputError(file_, path(it.key()),
                         fmt::format("unknown field (expected {})", fmt::join(known.begin(), known.end(), ", ")));
      }
    }
  }
  std::string path(const std::string& name) const { return where_ + "." + name; }
  const json& raw() const { return j_; }
  const std::string& file() const { return file_; }

 private:
  const json& j_;
  std::string file_, where_;
};

DeviceRecord device_from(const Obj& o) {
  o.only({"name", "architecture", "sm_count", "boost_clock_mhz", "memory_clock_mhz", "peak_tflops", "hbm_gb_s",
          "memory_gb", "l2_mb", "driver_version", "cuda_version", "library_versions"});
  DeviceRecord d;
  d.name = o.str("name");
  if (d.name.empty()) throw InputError(o.file(), o.path("name"), "a device needs a name");
  d.architecture = o.str("architecture", false);
  d.sm_count = o.count("sm_count");
  d.boost_clock_mhz = o.spec("boost_clock_mhz");
  d.memory_clock_mhz = o.spec("memory_clock_mhz");
  if (auto p = o.raw().find("peak_tflops"); p != o.raw().end()) {
    if (!p->is_object()) throw InputError(o.file(), o.path("peak_tflops"), "expected an object");
    for (auto it = p->begin(); it != p->end(); ++it) {
      try {
        if (!it->is_number() || it->get<double>() < 0) {
          throw std::invalid_argument("expected a number >= 0 (dense TFLOP/s; 0 = no such mode)");
        }
        d.peak_tflops[static_cast<int>(parse_dtype(it.key()))] = it->get<double>();
      } catch (const std::invalid_argument& e) {
        throw InputError(o.file(), o.path("peak_tflops." + it.key()), e.what());
      }
    }
  }
  d.hbm_gb_s = o.spec("hbm_gb_s");
  d.memory_gb = o.spec("memory_gb");
  d.l2_mb = o.spec("l2_mb");
  d.driver_version = o.str("driver_version", false);
  d.cuda_version = o.str("cuda_version", false);
  d.library_versions = o.str("library_versions", false);
  return d;
}

Source source_from(const std::string& s, const std::string& file, const std::string& where) {
  try {
    return parse_source(s);
  } catch (const std::invalid_argument& e) {
    throw InputError(file, where, e.what());
  }
}

// A run's started_at / ended_at: empty, or ISO 8601 UTC to the second as every calisim writer
// stores it ("2025-06-01T12:00:00Z"). Lookups rank runs by the newest started_at as text, which is
// time order only for this one form (fractional seconds or an offset would sort wrongly):
// anything else ("yesterday") is refused rather than stored to be mis-ranked.
void check_timestamp(const std::string& t, const std::string& file, const std::string& where) {
  if (t.empty()) return;
  const auto digits = [&](std::size_t at, std::size_t n) {
    if (at + n > t.size()) return -1;
    int v = 0;
    for (std::size_t i = at; i < at + n; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(t[i]))) return -1;
      v = v * 10 + (t[i] - '0');
    }
    return v;
  };
  bool ok = t.size() == 20 && t[4] == '-' && t[7] == '-' && t[10] == 'T' && t[13] == ':' && t[16] == ':' &&
            t[19] == 'Z';
  if (ok) {
    const int month = digits(5, 2), day = digits(8, 2), hour = digits(11, 2), minute = digits(14, 2),
              second = digits(17, 2);
    ok = digits(0, 4) >= 0 && month >= 1 && month <= 12 && day >= 1 && day <= 31 && hour >= 0 && hour <= 23 &&
         minute >= 0 && minute <= 59 && second >= 0 && second <= 60;
  }
  if (!ok) {
    throw InputError(file, where,
                     fmt::format("'{}' is not an ISO 8601 UTC time like \"2025-06-01T12:00:00Z\" (or empty)", t));
  }
}

// Row keys already read, per run provenance, with where each was read: a key repeated within one
// input with other numbers has no right answer, so the reader refuses it naming both places (with
// equal numbers it is a harmless repeat, counted as a duplicate by merge_into).
class RowsSeen {
 public:
  // Adds `one` (a single row just read at `where`) to `into`, after the check.
  void add(const RunRecord& run, MeasurementSet one, MeasurementSet& into, const std::string& file,
           const std::string& where) {
    for_each_row_text(one, [&](const std::string& key, const ordered_json& numbers) {
      const auto [it, fresh] = seen_.try_emplace(Key(Provenance(run_order(run)), key), where, numbers);
      if (!fresh && it->second.second != numbers) {
        std::string differ;
        for (auto n = numbers.begin(); n != numbers.end(); ++n) {
          const ordered_json& before = it->second.second.at(n.key());
          if (before != *n) differ += fmt::format("{}{} {} there, {} here", differ.empty() ? "" : "; ", n.key(),
                                                  before.dump(), n->dump());
        }
        throw InputError(file, where,
                         fmt::format("row '{}' repeats {} of the same run with other numbers ({}); keep one", key,
                                     it->second.first, differ));
      }
    });
    detail::for_each_table(one, [&](auto table, const auto& list) {
      using Table = decltype(table);
      auto& dst = Table::rows(into);
      dst.insert(dst.end(), list.begin(), list.end());
    });
  }

 private:
  using Provenance = std::tuple<std::string, Source, std::string, std::string, std::string, std::string, std::string>;
  using Key = std::pair<Provenance, std::string>;
  std::map<Key, std::pair<std::string, ordered_json>> seen_;
};

}  // namespace

void Dump::normalize() {
  std::sort(devices.begin(), devices.end(), [](const auto& a, const auto& b) { return a.name < b.name; });
  std::sort(aliases.begin(), aliases.end());
  // Runs, traces and profile logs all carry a RunRecord: one order for the three.
  const auto by_run = [](const auto& a, const auto& b) { return run_order(a.run) < run_order(b.run); };
  std::stable_sort(runs.begin(), runs.end(), by_run);
  std::stable_sort(traces.begin(), traces.end(), by_run);
  std::stable_sort(profile_logs.begin(), profile_logs.end(), by_run);
}

namespace {

// For each run, the first entry of `extras` (traces or profile logs) of equal provenance not yet
// taken, so runs and entries pair one to one even when two runs share their provenance. An entry
// with content but no run is a programming error.
template <class Extra, class Size>
std::vector<const Extra*> pair_with_runs(const std::vector<RunBatch>& runs, const std::vector<Extra>& extras,
                                         const char* what, Size size) {
  std::vector<bool> paired(extras.size(), false);
  std::vector<const Extra*> of(runs.size(), nullptr);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    for (std::size_t t = 0; t < extras.size(); ++t) {
      if (!paired[t] && extras[t].run.same_provenance(runs[i].run)) {
        paired[t] = true;
        of[i] = &extras[t];
        break;
      }
    }
  }
  for (std::size_t t = 0; t < extras.size(); ++t) {
    if (!paired[t] && size(extras[t]) > 0) {
      throw std::invalid_argument(fmt::format("write_json: {} of a run of '{}' started '{}' have no run in the dump",
                                              what, extras[t].run.device, extras[t].run.started_at));
    }
  }
  return of;
}

ordered_json profile_log_to_json(const ProfileLogEntry& e) {
  ordered_json o;
  o["key"] = e.key;
  o["status"] = e.status;
  o["reason"] = e.reason;
  o["recorded_at"] = e.recorded_at;
  // Stored as JSON text; written as the object it is, so the export stays readable and diffable.
  auto details = ordered_json::parse(e.details, nullptr, false);
  if (details.is_discarded() || !details.is_object()) {
    throw std::invalid_argument(fmt::format("profile log entry '{}' recorded {}: details are not a JSON object", e.key,
                                            e.recorded_at));
  }
  o["details"] = std::move(details);
  return o;
}

// `ordered` is the same entry parsed with its key order kept: details go back into the database
// as the text they were exported from, so export -> import gives identical log rows.
ProfileLogEntry profile_log_from_json(const json& j, const ordered_json& ordered, const std::string& file,
                                      const std::string& where) {
  if (!j.is_object()) throw InputError(file, where, "expected an object");
  Obj(j, file, where).only({"key", "status", "reason", "recorded_at", "details"});
  const auto text = [&](const char* name) {
    auto it = j.find(name);
    if (it == j.end() || !it->is_string()) throw InputError(file, where + "." + name, "expected a string");
    return it->get<std::string>();
  };
  ProfileLogEntry e;
  e.key = text("key");
  e.status = text("status");
  if (!is_profile_log_status(e.status)) {
    throw InputError(file, where + ".status", fmt::format("expected \"measured\" or \"skipped\", got \"{}\"", e.status));
  }
  e.reason = text("reason");
  e.recorded_at = text("recorded_at");
  auto it = j.find("details");
  if (it == j.end() || !it->is_object()) throw InputError(file, where + ".details", "expected an object");
  e.details = ordered.at("details").dump();
  return e;
}

}  // namespace

std::size_t Dump::profile_log_count() const {
  std::size_t n = 0;
  for (const auto& l : profile_logs) n += l.entries.size();
  return n;
}

std::size_t Dump::trace_kernel_count() const {
  std::size_t n = 0;
  for (const auto& t : traces) n += t.kernels.size();
  return n;
}

void write_json(std::ostream& out, Dump dump) {
  dump.normalize();
  const int version = dump.profile_log_count() > 0 ? kFormatVersionWithProfileLog
                      : dump.trace_kernel_count() > 0 ? kFormatVersionWithTraces
                                                      : kFormatVersion;
  const auto traces_of = pair_with_runs(dump.runs, dump.traces, "trace records",
                                        [](const TraceRecords& t) { return t.kernels.size(); });
  const auto logs_of = pair_with_runs(dump.runs, dump.profile_logs, "profile log entries",
                                      [](const ProfileLogRecords& l) { return l.entries.size(); });
  out << "{\n  \"format\": \"" << kFormat << "\",\n  \"version\": " << version << ",\n  \"devices\": [";
  for (std::size_t i = 0; i < dump.devices.size(); ++i) {
    out << (i ? ",\n    " : "\n    ") << device_to_json(dump.devices[i]).dump();
  }
  out << (dump.devices.empty() ? "],\n" : "\n  ],\n") << "  \"aliases\": [";
  for (std::size_t i = 0; i < dump.aliases.size(); ++i) {
    const ordered_json a = {{"alias", dump.aliases[i].first}, {"device", dump.aliases[i].second}};
    out << (i ? ",\n    " : "\n    ") << a.dump();
  }
  out << (dump.aliases.empty() ? "],\n" : "\n  ],\n") << "  \"runs\": [";
  for (std::size_t i = 0; i < dump.runs.size(); ++i) {
    ordered_json head = run_to_json(dump.runs[i].run);
    std::string h = head.dump();
    h.pop_back();  // reopen the object to append the rows array
    out << (i ? ",\n    " : "\n    ") << h << ", \"rows\": [";
    bool first = true;
    for_each_row_text(dump.runs[i].rows, [&](const std::string&, const ordered_json& row) {
      out << (first ? "\n      " : ",\n      ") << row.dump();
      first = false;
    });
    out << (first ? "]" : "\n    ]");
    const std::vector<TraceKernel>* kernels = traces_of[i] ? &traces_of[i]->kernels : nullptr;
    if (kernels && !kernels->empty()) {
      out << ", \"kernels\": [";
      for (std::size_t k = 0; k < kernels->size(); ++k) {
        out << (k ? ",\n      " : "\n      ") << trace_kernel_to_json((*kernels)[k]).dump();
      }
      out << "\n    ]";
    }
    if (logs_of[i] && !logs_of[i]->entries.empty()) {
      out << ", \"profile_log\": [";
      const auto& entries = logs_of[i]->entries;
      for (std::size_t k = 0; k < entries.size(); ++k) {
        out << (k ? ",\n      " : "\n      ") << profile_log_to_json(entries[k]).dump();
      }
      out << "\n    ]";
    }
    out << "}";
  }
  out << (dump.runs.empty() ? "]\n}\n" : "\n  ]\n}\n");
}

void write_csv(std::ostream& out, Dump dump) {
  if (const std::size_t n = dump.trace_kernel_count(); n > 0) {
    throw std::invalid_argument(fmt::format("CSV has no columns for trace records ({} in {} trace run(s)); write "
                                            "JSON, or leave the traces out",
                                            n, dump.traces.size()));
  }
  if (const std::size_t n = dump.profile_log_count(); n > 0) {
    throw std::invalid_argument(fmt::format("CSV has no columns for profile log entries ({} in {} run(s)); write "
                                            "JSON, or leave the log out",
                                            n, dump.profile_logs.size()));
  }
  dump.normalize();
  std::vector<std::string> header = provenance_columns();
  header.push_back("key");
  for (const auto& f : row_number_fields()) header.push_back(f);
  for (std::size_t i = 0; i < header.size(); ++i) out << (i ? "," : "") << header[i];
  out << "\n";
  for (const RunBatch& b : dump.runs) {
    const RunRecord& r = b.run;
    std::string prefix;
    for (const std::string& v : {r.device, std::string(to_string(r.source)), r.tool_version, r.host, r.started_at,
                                 r.ended_at, r.notes}) {
      prefix += csv_field(v) + ",";
    }
    for_each_row_text(b.rows, [&](const std::string& key, const ordered_json& row) {
      out << prefix << csv_field(key);
      for (const auto& f : row_number_fields()) {
        out << ",";
        if (auto it = row.find(f); it != row.end()) out << it->dump();
      }
      out << "\n";
    });
  }
}

Dump read_json_dump(const std::string& path) {
  const json root = read_json_file(path);
  const Obj top(root, path, "$");
  top.only({"format", "version", "devices", "aliases", "runs"});
  if (top.str("format") != kFormat) {
    throw InputError(path, "$.format", fmt::format("expected \"{}\" (a calisim JSON export)", kFormat));
  }
  const double version = top.num("version");
  if (version != kFormatVersion && version != kFormatVersionWithTraces && version != kFormatVersionWithProfileLog) {
    throw InputError(path, "$.version",
                     fmt::format("this calisim reads version {}, {} and {} exports", kFormatVersion,
                                 kFormatVersionWithTraces, kFormatVersionWithProfileLog));
  }
  // Version 3 files are parsed a second time with key order kept, for the log entries' details.
  const ordered_json ordered_root =
      version == kFormatVersionWithProfileLog ? ordered_json::parse(read_text_file(path)) : ordered_json();
  Dump dump;
  // "runs" is required (an export of an empty database still writes "runs": []), so a file that
  // is something else, or has the key misspelt, is not read as an empty import. "devices" and
  // "aliases" may be left out of a hand-written file: none.
  const auto array = [&](const char* name, bool required) -> const json& {
    static const json empty = json::array();
    auto it = root.find(name);
    if (it == root.end() && required) throw InputError(path, top.path(name), "is required (an array of runs)");
    if (it == root.end()) return empty;
    if (!it->is_array()) throw InputError(path, top.path(name), "expected an array");
    return *it;
  };
  const json& devices = array("devices", false);
  for (std::size_t i = 0; i < devices.size(); ++i) {
    dump.devices.push_back(device_from(Obj(devices[i], path, fmt::format("$.devices[{}]", i))));
  }
  const json& runs = array("runs", true);
  const json& aliases = array("aliases", false);
  for (std::size_t i = 0; i < aliases.size(); ++i) {
    const Obj a(aliases[i], path, fmt::format("$.aliases[{}]", i));
    a.only({"alias", "device"});
    const std::string alias = a.str("alias"), device = a.str("device");
    // The device an alias names must come with it: merge_into could not point the alias anywhere.
    const bool in_file =
        std::any_of(devices.begin(), devices.end(), [&](const json& d) { return d.value("name", "") == device; }) ||
        std::any_of(runs.begin(), runs.end(), [&](const json& r) {
          return r.is_object() && r.contains("device") && r.at("device") == json(device);
        });
    if (!in_file) {
      throw InputError(path, a.path("device"),
                       fmt::format("'{}' is not a device of this file (no entry of $.devices or $.runs names it)",
                                   device));
    }
    dump.aliases.emplace_back(alias, device);
  }
  RowsSeen seen;
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const Obj o(runs[i], path, fmt::format("$.runs[{}]", i));
    o.only({"device", "source", "tool_version", "host", "started_at", "ended_at", "notes", "rows", "kernels",
            "profile_log"});
    RunBatch b;
    b.run.device = o.str("device");
    if (b.run.device.empty()) throw InputError(path, o.path("device"), "is empty (expected a device name)");
    b.run.source = source_from(o.str("source"), path, o.path("source"));
    b.run.tool_version = o.str("tool_version", false);
    b.run.host = o.str("host", false);
    b.run.started_at = o.str("started_at", false);
    check_timestamp(b.run.started_at, path, o.path("started_at"));
    b.run.ended_at = o.str("ended_at", false);
    check_timestamp(b.run.ended_at, path, o.path("ended_at"));
    b.run.notes = o.str("notes", false);
    auto rows = runs[i].find("rows");
    if (rows != runs[i].end()) {
      if (!rows->is_array()) throw InputError(path, o.path("rows"), "expected an array");
      for (std::size_t r = 0; r < rows->size(); ++r) {
        const std::string where = fmt::format("$.runs[{}].rows[{}]", i, r);
        if (!(*rows)[r].is_object()) throw InputError(path, where, "expected an object");
        MeasurementSet one;
        add_row_from_text((*rows)[r], one, path, where + ".");
        seen.add(b.run, std::move(one), b.rows, path, where);
      }
    }
    if (auto kernels = runs[i].find("kernels"); kernels != runs[i].end()) {
      if (!kernels->is_array()) throw InputError(path, o.path("kernels"), "expected an array");
      if (b.run.source != Source::trace && !kernels->empty()) {
        throw InputError(path, o.path("kernels"),
                         fmt::format("only runs of source 'trace' hold kernels; this run's source is '{}'",
                                     to_string(b.run.source)));
      }
      TraceRecords t{b.run, {}};
      t.kernels.reserve(kernels->size());
      for (std::size_t k = 0; k < kernels->size(); ++k) {
        t.kernels.push_back(
            trace_kernel_from_json((*kernels)[k], path, fmt::format("$.runs[{}].kernels[{}].", i, k)));
      }
      if (!t.kernels.empty()) dump.traces.push_back(std::move(t));
    }
    if (auto log = runs[i].find("profile_log"); log != runs[i].end()) {
      if (version < kFormatVersionWithProfileLog) {
        throw InputError(path, o.path("profile_log"),
                         fmt::format("a version {} export has no profile log (version {} files carry it)", version,
                                     kFormatVersionWithProfileLog));
      }
      if (!log->is_array()) throw InputError(path, o.path("profile_log"), "expected an array");
      ProfileLogRecords l{b.run, {}};
      l.entries.reserve(log->size());
      for (std::size_t k = 0; k < log->size(); ++k) {
        const ordered_json& same = ordered_root.at("runs").at(i).at("profile_log").at(k);
        l.entries.push_back(profile_log_from_json((*log)[k], same, path, fmt::format("$.runs[{}].profile_log[{}]", i, k)));
      }
      if (!l.entries.empty()) dump.profile_logs.push_back(std::move(l));
    }
    dump.runs.push_back(std::move(b));
  }
  return dump;
}

Dump read_csv_dump(const std::string& path) {
  const CsvTable table = parse_csv(read_text_file(path), path);
  std::vector<int> prov;
  for (const auto& c : provenance_columns()) {
    prov.push_back(table.column(c));
    if (prov.back() < 0) throw InputError(path, "line 1", fmt::format("column '{}' is missing", c));
  }
  const int key_col = table.column("key");
  if (key_col < 0) throw InputError(path, "line 1", "column 'key' is missing");
  std::vector<std::pair<std::string, int>> numbers;
  for (const auto& f : row_number_fields()) {
    if (int c = table.column(f); c >= 0) numbers.emplace_back(f, c);
  }
  // A column this format does not have would be dropped without a word.
  for (const std::string& h : table.header) {
    const auto& p = provenance_columns();
    const auto& n = row_number_fields();
    if (h != "key" && std::find(p.begin(), p.end(), h) == p.end() && std::find(n.begin(), n.end(), h) == n.end()) {
      throw InputError(path, "line 1",
                       fmt::format("unknown column '{}' (expected {}, key, {})", h, fmt::join(p, ", "),
                                   fmt::join(n, ", ")));
    }
  }

  Dump dump;
  std::map<std::vector<std::string>, std::size_t> run_index;
  RowsSeen rows_seen;
  for (const CsvRecord& rec : table.records) {
    const std::string where = fmt::format("line {}, field ", rec.line);
    std::vector<std::string> provenance;
    for (int c : prov) provenance.push_back(rec.fields[c]);
    auto [it, inserted] = run_index.try_emplace(provenance, dump.runs.size());
    if (inserted) {
      RunBatch b;
      b.run.device = provenance[0];
      if (b.run.device.empty()) throw InputError(path, where + "'device'", "is empty");
      b.run.source = source_from(provenance[1], path, where + "'source'");
      b.run.tool_version = provenance[2];
      b.run.host = provenance[3];
      b.run.started_at = provenance[4];
      check_timestamp(b.run.started_at, path, where + "'started_at'");
      b.run.ended_at = provenance[5];
      check_timestamp(b.run.ended_at, path, where + "'ended_at'");
      b.run.notes = provenance[6];
      dump.runs.push_back(std::move(b));
    }
    json obj;
    obj["key"] = rec.fields[key_col];
    for (const auto& [name, c] : numbers) {
      const std::string& cell = rec.fields[c];
      if (cell.empty()) continue;
      try {
        std::size_t used = 0;
        if (name == "n") {
          obj[name] = std::stoll(cell, &used);
        } else {
          obj[name] = std::stod(cell, &used);
        }
        if (used != cell.size()) throw std::invalid_argument("trailing characters");
      } catch (const std::exception&) {
        throw InputError(path, where + "'" + name + "'", fmt::format("'{}' is not a number", cell));
      }
    }
    // Field errors from the row reader name the field after "field ".
    MeasurementSet one;
    try {
      add_row_from_text(obj, one, path, "");
    } catch (const InputError& e) {
      throw InputError(path, where + "'" + e.where() + "'", e.problem());
    }
    RunBatch& run = dump.runs[it->second];
    rows_seen.add(run.run, std::move(one), run.rows, path, fmt::format("line {}", rec.line));
  }
  // Devices named in CSV rows carry no specs; list them so importers can create them by name.
  std::map<std::string, bool> seen;
  for (const auto& b : dump.runs) {
    if (!seen[b.run.device]) {
      seen[b.run.device] = true;
      DeviceRecord d;
      d.name = b.run.device;
      dump.devices.push_back(d);
    }
  }
  return dump;
}

}  // namespace calisim::db
