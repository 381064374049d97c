#include "db/efficiency_db.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string>

#include "core/error.h"
#include "db/key_text.h"
#include "db/row_tables.h"
#include "db/schema.h"

namespace calisim::db {
namespace {

using detail::column_count;
using detail::for_each_table;
using detail::RowTable;

constexpr const char* kDeviceColumns =
    "name, architecture, sm_count, boost_clock_mhz, memory_clock_mhz, peak_fp32_tflops, peak_tf32_tflops, "
    "peak_bf16_tflops, peak_fp16_tflops, peak_fp8_e4m3_tflops, peak_fp8_e5m2_tflops, hbm_gb_s, memory_gb, l2_mb, "
    "driver_version, cuda_version, library_versions";

constexpr const char* kRunColumns = "r.id, d.name, r.source, r.tool_version, r.host, r.started_at, r.ended_at, r.notes";

std::string placeholders(int n) {
  std::string s;
  for (int i = 0; i < n; ++i) s += i ? ", ?" : "?";
  return s;
}

void bind_device(Statement& st, const DeviceRecord& d) {
  Binder b(st, 1);
  b(d.name)(d.architecture)(d.sm_count)(d.boost_clock_mhz);
  b(d.memory_clock_mhz);
  for (double p : d.peak_tflops) b(p);
  b(d.hbm_gb_s)(d.memory_gb)(d.l2_mb)(d.driver_version);
  b(d.cuda_version)(d.library_versions);
}

DeviceRecord read_device(const Statement& st) {
  DeviceRecord d;
  int c = 0;
  d.name = st.text(c++);
  d.architecture = st.text(c++);
  d.sm_count = static_cast<int>(st.int64(c++));
  d.boost_clock_mhz = st.real(c++);
  d.memory_clock_mhz = st.real(c++);
  for (double& p : d.peak_tflops) p = st.real(c++);
  d.hbm_gb_s = st.real(c++);
  d.memory_gb = st.real(c++);
  d.l2_mb = st.real(c++);
  d.driver_version = st.text(c++);
  d.cuda_version = st.text(c++);
  d.library_versions = st.text(c++);
  return d;
}

RunRecord read_run(const Statement& st, int c) {
  RunRecord r;
  r.id = st.int64(c);
  r.device = st.text(c + 1);
  r.source = parse_source(st.text(c + 2));
  r.tool_version = st.text(c + 3);
  r.host = st.text(c + 4);
  r.started_at = st.text(c + 5);
  r.ended_at = st.text(c + 6);
  r.notes = st.text(c + 7);
  return r;
}

bool bad(double v) { return !std::isfinite(v) || v <= 0; }

void check_row(const std::string& file, const std::string& key, double efficiency, const SampleStats* stats) {
  if (bad(efficiency)) {
    throw InputError(file, key, fmt::format("efficiency {} must be a finite number above 0", efficiency));
  }
  if (stats && (stats->n < 0 || !std::isfinite(stats->median_s) || stats->median_s < 0)) {
    throw InputError(file, key, "sample statistics must be finite and non-negative");
  }
}

std::int64_t count(Connection& conn, const std::string& sql, std::int64_t device_id) {
  Statement st(conn, sql);
  st.bind(1, device_id);
  return st.step() ? st.int64(0) : 0;
}

}  // namespace

void validate_rows(const MeasurementSet& rows, const std::string& file) {
  for_each_table(rows, [&](auto table, const auto& list) {
    using Row = typename std::decay_t<decltype(list)>::value_type;
    (void)table;
    for (const Row& r : list) {
      if constexpr (requires { r.stats; }) {
        check_row(file, detail::row_key(r), r.efficiency, &r.stats);
      } else {
        check_row(file, detail::row_key(r), r.efficiency, nullptr);
      }
    }
  });
}

EfficiencyDb EfficiencyDb::open(const std::string& path, OpenMode mode) {
  Connection conn(path, mode);
  conn.exec("PRAGMA foreign_keys = ON");
  if (mode != OpenMode::read_only) {
    // WAL: readers never block the writer and see whole transactions only. FULL sync makes a
    // commit durable before insert returns.
    conn.query_int("PRAGMA journal_mode = WAL");
    conn.exec("PRAGMA synchronous = FULL");
  }
  ensure_schema(conn);
  return EfficiencyDb(std::move(conn));
}

void EfficiencyDb::put_device(const DeviceRecord& device) {
  if (device.name.empty()) throw InputError(path(), "device", "a device needs a name");
  const std::string updates = [] {
    std::string s;
    const std::string cols = kDeviceColumns;
    std::size_t pos = cols.find(',') + 2;  // every column but name
    while (pos < cols.size()) {
      std::size_t end = cols.find(',', pos);
      if (end == std::string::npos) end = cols.size();
      const std::string c = cols.substr(pos, end - pos);
      s += (s.empty() ? "" : ", ") + c + " = excluded." + c;
      pos = end + 2;
    }
    return s;
  }();
  Statement st(conn_, fmt::format("INSERT INTO devices ({}) VALUES ({}) ON CONFLICT(name) DO UPDATE SET {}",
                                  kDeviceColumns, placeholders(column_count(kDeviceColumns)), updates));
  bind_device(st, device);
  st.run();
}

bool EfficiencyDb::add_device_if_missing(const DeviceRecord& device) {
  if (find_device(device.name)) return false;
  put_device(device);
  return true;
}

std::optional<DeviceRecord> EfficiencyDb::find_device(const std::string& name_or_alias) {
  Statement st(conn_, fmt::format("SELECT {} FROM devices WHERE name = ?1 OR id = "
                                  "(SELECT device_id FROM device_aliases WHERE alias = ?1) ORDER BY name = ?1 DESC",
                                  kDeviceColumns));
  st.bind(1, name_or_alias);
  if (!st.step()) return std::nullopt;
  return read_device(st);
}

DeviceRecord EfficiencyDb::device(const std::string& name_or_alias) {
  if (auto d = find_device(name_or_alias)) return *d;
  std::string known;
  for (const auto& d : devices()) known += (known.empty() ? "'" : ", '") + d.name + "'";
  throw InputError(path(), "device",
                   fmt::format("no device or alias '{}' in this database (it holds: {})", name_or_alias,
                               known.empty() ? "no devices" : known));
}

std::vector<DeviceRecord> EfficiencyDb::devices() {
  Statement st(conn_, fmt::format("SELECT {} FROM devices ORDER BY name", kDeviceColumns));
  std::vector<DeviceRecord> out;
  while (st.step()) out.push_back(read_device(st));
  return out;
}

void EfficiencyDb::add_alias(const std::string& alias, const std::string& device) {
  const std::int64_t id = device_id(device);
  Statement st(conn_, "INSERT INTO device_aliases (alias, device_id) VALUES (?, ?) "
                      "ON CONFLICT(alias) DO UPDATE SET device_id = excluded.device_id");
  st.bind(1, alias).bind(2, id);
  st.run();
}

std::vector<std::string> EfficiencyDb::aliases(const std::string& device) {
  Statement st(conn_, "SELECT alias FROM device_aliases WHERE device_id = ? ORDER BY alias");
  st.bind(1, device_id(device));
  std::vector<std::string> out;
  while (st.step()) out.push_back(st.text(0));
  return out;
}

std::int64_t EfficiencyDb::device_id(const std::string& name_or_alias) {
  Statement st(conn_, "SELECT id FROM devices WHERE name = ?1 UNION ALL "
                      "SELECT device_id FROM device_aliases WHERE alias = ?1");
  st.bind(1, name_or_alias);
  if (st.step()) return st.int64(0);
  device(name_or_alias);  // throws the error that lists the known devices
  return 0;
}

void EfficiencyDb::insert_rows(std::int64_t run_id, const MeasurementSet& rows, std::size_t& done,
                               std::size_t total, const InsertProgress& progress) {
  for_each_table(rows, [&](auto table, const auto& list) {
    using Table = decltype(table);
    if (list.empty()) return;
    Statement st(conn_, fmt::format("INSERT INTO {} (run_id, {}) VALUES (?, {})", Table::table, Table::columns,
                                    placeholders(column_count(Table::columns))));
    for (const auto& row : list) {
      st.bind(1, run_id);
      Table::bind(st, 2, row);
      st.run();
      // Report every 1024 rows: cheap, and often enough for a progress bar.
      if (progress && (++done % 1024 == 0 || done == total)) progress(done, total);
    }
  });
}

std::vector<std::int64_t> EfficiencyDb::insert_runs(const std::vector<RunBatch>& batches,
                                                    const InsertProgress& progress) {
  std::size_t total = 0;
  for (const auto& b : batches) {
    validate_rows(b.rows, path());
    total += b.rows.size();
  }
  Transaction tx(conn_);
  std::vector<std::int64_t> ids;
  std::size_t done = 0;
  for (const auto& b : batches) {
    Statement st(conn_, "INSERT INTO runs (device_id, source, tool_version, host, started_at, ended_at, notes) "
                        "VALUES (?, ?, ?, ?, ?, ?, ?)");
    const RunRecord& r = b.run;
    st.bind(1, device_id(r.device)).bind(2, to_string(r.source)).bind(3, r.tool_version).bind(4, r.host);
    st.bind(5, r.started_at).bind(6, r.ended_at).bind(7, r.notes);
    st.run();
    ids.push_back(conn_.last_insert_rowid());
    insert_rows(ids.back(), b.rows, done, total, progress);
  }
  tx.commit();
  return ids;
}

std::int64_t EfficiencyDb::insert_run(const RunBatch& batch, const InsertProgress& progress) {
  return insert_runs({batch}, progress).front();
}

void EfficiencyDb::append_rows(std::int64_t run_id, const MeasurementSet& rows) {
  validate_rows(rows, path());
  Transaction tx(conn_);
  std::size_t done = 0;
  insert_rows(run_id, rows, done, rows.size(), {});
  tx.commit();
}

std::vector<RunRecord> EfficiencyDb::runs(const std::string& device) {
  std::string sql = fmt::format("SELECT {} FROM runs r JOIN devices d ON d.id = r.device_id", kRunColumns);
  if (!device.empty()) sql += " WHERE r.device_id = ?";
  Statement st(conn_, sql + " ORDER BY r.id");
  if (!device.empty()) st.bind(1, device_id(device));
  std::vector<RunRecord> out;
  while (st.step()) out.push_back(read_run(st, 0));
  return out;
}

std::vector<RunBatch> EfficiencyDb::load_runs(const std::string& device) {
  std::vector<RunBatch> out;
  std::map<std::int64_t, std::size_t> index;
  for (auto& r : runs(device)) {
    index[r.id] = out.size();
    out.push_back(RunBatch{std::move(r), {}});
  }
  const std::string filter = device.empty() ? "" : " WHERE r.device_id = ?";
  const std::int64_t id = device.empty() ? 0 : device_id(device);
  MeasurementSet scratch;
  for_each_table(scratch, [&](auto table, auto&) {
    using Table = decltype(table);
    Statement st(conn_, fmt::format("SELECT t.run_id, {} FROM {} t JOIN runs r ON r.id = t.run_id{} "
                                    "ORDER BY t.run_id, t.id",
                                    Table::columns, Table::table, filter));
    if (!device.empty()) st.bind(1, id);
    while (st.step()) {
      auto run = index.find(st.int64(0));
      if (run == index.end()) continue;  // a row of a run added after runs() read its list
      try {
        Table::rows(out[run->second].rows).push_back(Table::read(st, 1));
      } catch (const std::invalid_argument& e) {
        throw InputError(path(), Table::table, std::string("holds an unreadable row (corrupt?): ") + e.what());
      }
    }
  });
  return out;
}

bool EfficiencyDb::delete_run(std::int64_t run_id) {
  Transaction tx(conn_);
  Statement st(conn_, "DELETE FROM runs WHERE id = ?");
  st.bind(1, run_id);
  st.run();
  const bool deleted = conn_.query_int("SELECT changes()") > 0;
  tx.commit();
  return deleted;
}

std::vector<EfficiencyDb::Hit> EfficiencyDb::lookup(const std::string& device, const std::string& key_text) {
  const std::string key = canonical_key(key_text);
  std::vector<Hit> hits;
  const std::int64_t id = device_id(device);
  MeasurementSet scratch;
  const KeyKind kind = key_kind(key);
  int table_index = 0;
  for_each_table(scratch, [&](auto table, auto&) {
    using Table = decltype(table);
    if (table_index++ != static_cast<int>(kind)) return;
    Statement st(conn_, fmt::format("SELECT {}, {} FROM {} t JOIN runs r ON r.id = t.run_id "
                                    "JOIN devices d ON d.id = r.device_id WHERE t.key = ? AND r.device_id = ?",
                                    kRunColumns, Table::columns, Table::table));
    st.bind(1, key).bind(2, id);
    while (st.step()) {
      Hit h{read_run(st, 0), {}};
      Table::rows(h.row).push_back(Table::read(st, 8));
      hits.push_back(std::move(h));
    }
  });
  auto samples = [](const Hit& h) {
    std::int64_t n = 0;
    for_each_table(h.row, [&](auto, const auto& list) {
      for (const auto& r : list) {
        if constexpr (requires { r.stats; }) n = r.stats.n;
      }
    });
    return n;
  };
  std::stable_sort(hits.begin(), hits.end(), [&](const Hit& a, const Hit& b) {
    if (a.run.source != b.run.source) return a.run.source < b.run.source;
    if (a.run.started_at != b.run.started_at) return a.run.started_at > b.run.started_at;
    return samples(a) > samples(b);
  });
  return hits;
}

DeviceSummary EfficiencyDb::summary(const std::string& device) {
  DeviceSummary s;
  s.device = this->device(device).name;
  const std::int64_t id = device_id(device);
  s.runs = count(conn_, "SELECT COUNT(*) FROM runs WHERE device_id = ?", id);
  std::int64_t* counts[] = {&s.gemm, &s.attention, &s.collective, &s.memory, &s.memory_fits, &s.collective_fits};
  int i = 0;
  MeasurementSet scratch;
  for_each_table(scratch, [&](auto table, auto&) {
    using Table = decltype(table);
    Statement st(conn_, fmt::format("SELECT r.source, COUNT(*) FROM {} t JOIN runs r ON r.id = t.run_id "
                                    "WHERE r.device_id = ? GROUP BY r.source",
                                    Table::table));
    st.bind(1, id);
    while (st.step()) {
      const std::int64_t n = st.int64(1);
      *counts[i] += n;
      s.rows_by_source[static_cast<int>(parse_source(st.text(0)))] += n;
    }
    ++i;
  });
  return s;
}

void EfficiencyDb::vacuum() {
  conn_.exec("VACUUM");
  conn_.query_int("PRAGMA wal_checkpoint(TRUNCATE)");
}

}  // namespace calisim::db
