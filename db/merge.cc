#include "db/merge.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <stdexcept>

#include "core/error.h"
#include "db/profile_log.h"
#include "db/row_tables.h"

namespace calisim::db {
namespace {

void note(MergeReport& report, std::string msg) {
  if (report.messages.size() < 20) report.messages.push_back(std::move(msg));
}

// Adds the rows of `incoming` whose keys `existing` lacks to `fresh`; counts the rest.
void split_new_rows(const MeasurementSet& existing, const MeasurementSet& incoming, MeasurementSet& fresh,
                    MergeReport& report, const RunRecord& run) {
  std::map<std::string, const void*> have;
  detail::for_each_table(existing, [&](auto, const auto& list) {
    for (const auto& r : list) have.emplace(detail::row_key(r), &r);
  });
  // Rows taken from `incoming` so far, by key: the index into their table of `fresh` (a pointer
  // would dangle when the table grows), so later repeats within `incoming` compare with them.
  std::map<std::string, std::size_t> taken;
  detail::for_each_table(incoming, [&](auto table, const auto& list) {
    using Table = decltype(table);
    using Row = typename std::decay_t<decltype(list)>::value_type;
    for (const Row& r : list) {
      const std::string key = detail::row_key(r);
      auto it = have.find(key);
      const auto t = taken.find(key);
      if (it == have.end() && t == taken.end()) {
        taken.emplace(key, Table::rows(fresh).size());
        Table::rows(fresh).push_back(r);
        continue;
      }
      // Keys of one kind live in one table, so the stored pointer has this row's type.
      const Row& same = it != have.end() ? *static_cast<const Row*>(it->second) : Table::rows(fresh)[t->second];
      if (same == r) {
        ++report.duplicates;
      } else {
        ++report.conflicts;
        note(report, fmt::format("conflict: run of '{}' ({}, host '{}', started '{}') already has '{}' with other "
                                 "numbers; kept the existing row",
                                 run.device, to_string(run.source), run.host, run.started_at, key));
      }
    }
  });
}

}  // namespace

Dump dump_database(EfficiencyDb& db, const std::string& device) {
  Dump dump;
  if (device.empty()) {
    dump.devices = db.devices();
  } else {
    dump.devices.push_back(db.device(device));
  }
  for (const auto& d : dump.devices) {
    for (auto& a : db.aliases(d.name)) dump.aliases.emplace_back(std::move(a), d.name);
  }
  dump.runs = db.load_runs(device.empty() ? "" : dump.devices.front().name);
  const std::vector<std::int64_t> traced = runs_with_trace_kernels(db);
  for (const auto& b : dump.runs) {
    if (std::binary_search(traced.begin(), traced.end(), b.run.id)) {
      dump.traces.push_back(TraceRecords{b.run, load_trace_kernels(db, b.run.id)});
    }
  }
  const std::vector<std::int64_t> logged = runs_with_profile_log(db);
  for (const auto& b : dump.runs) {
    if (std::binary_search(logged.begin(), logged.end(), b.run.id)) {
      dump.profile_logs.push_back(ProfileLogRecords{b.run, load_profile_log(db, b.run.id)});
    }
  }
  return dump;
}

Dump read_any(const std::string& path) {
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".json") return read_json_dump(path);
  if (ext == ".csv") return read_csv_dump(path);
  auto db = EfficiencyDb::open(path, OpenMode::read_only);
  return dump_database(db);
}

MergeReport merge_into(EfficiencyDb& db, const Dump& dump) {
  MergeReport report;
  for (const auto& b : dump.runs) validate_rows(b.rows, db.path());
  for (const auto& t : dump.traces) {
    const bool has_run = std::any_of(dump.runs.begin(), dump.runs.end(),
                                     [&](const RunBatch& b) { return b.run.same_provenance(t.run); });
    if (!has_run) {
      throw std::invalid_argument(fmt::format("merge: trace records of a run of '{}' started '{}' have no run in the "
                                              "dump",
                                              t.run.device, t.run.started_at));
    }
  }
  for (const auto& l : dump.profile_logs) {
    const bool has_run = std::any_of(dump.runs.begin(), dump.runs.end(),
                                     [&](const RunBatch& b) { return b.run.same_provenance(l.run); });
    if (!has_run) {
      throw std::invalid_argument(fmt::format("merge: profile log entries of a run of '{}' started '{}' have no run in "
                                              "the dump",
                                              l.run.device, l.run.started_at));
    }
  }
  Transaction tx(db.connection());
  for (const auto& d : dump.devices) {
    const auto have = db.find_device(d.name);
    if (!have) {
      db.put_device(d);
      ++report.devices_added;
      continue;
    }
    // A device the target knows by name only (created from a CSV import, which carries no specs)
    // takes the input's specs: there are none to keep, and without them its rows cannot be priced.
    DeviceRecord name_only;
    name_only.name = d.name;
    if (have->name == d.name && *have == name_only && !(d == name_only)) {
      db.put_device(d);
      ++report.device_specs_filled;
    }
  }
  for (const auto& b : dump.runs) {
    if (!db.find_device(b.run.device)) {
      DeviceRecord d;
      d.name = b.run.device;
      db.put_device(d);
      ++report.devices_added;
    }
  }
  for (const auto& [alias, device] : dump.aliases) {
    const auto current = db.find_device(alias);
    if (current && current->name != device) {
      note(report, fmt::format("alias '{}' already names '{}'; not pointed at '{}'", alias, current->name, device));
      continue;
    }
    if (!current && !db.find_device(device)) {
      // read_json_dump refuses such a file; a Dump built in code can still hold one.
      note(report, fmt::format("alias '{}' names device '{}', which neither the input nor the database holds; "
                               "not added",
                               alias, device));
      continue;
    }
    if (!current) db.add_alias(alias, device);
  }
  // Index the target's runs (with rows) by device once.
  std::map<std::string, std::vector<RunBatch>> existing;
  for (const auto& b : dump.runs) {
    if (!existing.count(b.run.device)) existing[b.run.device] = db.load_runs(b.run.device);
  }
  for (const auto& b : dump.runs) {
    auto& runs = existing[b.run.device];
    RunBatch* same = nullptr;
    for (auto& r : runs) {
      if (r.run.same_provenance(b.run)) same = &r;
    }
    if (!same) {
      RunBatch fresh{b.run, {}};
      split_new_rows({}, b.rows, fresh.rows, report, b.run);
      fresh.run.id = db.insert_run(fresh);
      report.rows_added += static_cast<std::int64_t>(fresh.rows.size());
      ++report.runs_added;
      runs.push_back(std::move(fresh));
      continue;
    }
    MeasurementSet fresh;
    split_new_rows(same->rows, b.rows, fresh, report, b.run);
    if (fresh.size() == 0) continue;
    db.append_rows(same->run.id, fresh);
    report.rows_added += static_cast<std::int64_t>(fresh.size());
    detail::for_each_table(fresh, [&](auto table, const auto& list) {
      using Table = decltype(table);
      auto& dst = Table::rows(same->rows);
      dst.insert(dst.end(), list.begin(), list.end());
    });
  }
  // Trace records, whole, into the run of equal provenance (every dump run is in `existing` now).
  for (const auto& t : dump.traces) {
    if (t.kernels.empty()) continue;
    const RunBatch* target = nullptr;
    for (const auto& r : existing[t.run.device]) {
      if (r.run.same_provenance(t.run)) target = &r;
    }
    const std::vector<TraceKernel> have = load_trace_kernels(db, target->run.id);
    if (have.empty()) {
      append_trace_kernels(db, target->run.id, t.kernels);
      report.trace_kernels_added += static_cast<std::int64_t>(t.kernels.size());
    } else if (have == t.kernels) {
      report.trace_kernel_duplicates += static_cast<std::int64_t>(t.kernels.size());
    } else {
      ++report.conflicts;
      note(report, fmt::format("conflict: trace run of '{}' (host '{}', started '{}') already has {} records, the "
                               "input has {} different ones; kept the existing trace",
                               t.run.device, t.run.host, t.run.started_at, have.size(), t.kernels.size()));
    }
  }
  // Profile log entries, as a union, into the run of equal provenance.
  for (const auto& l : dump.profile_logs) {
    if (l.entries.empty()) continue;
    const RunBatch* target = nullptr;
    for (const auto& r : existing[l.run.device]) {
      if (r.run.same_provenance(l.run)) target = &r;
    }
    std::vector<ProfileLogEntry> have = load_profile_log(db, target->run.id);
    std::vector<ProfileLogEntry> fresh;
    for (const auto& e : l.entries) {
      if (std::find(have.begin(), have.end(), e) != have.end()) {
        ++report.profile_log_duplicates;
        continue;
      }
      fresh.push_back(e);
      have.push_back(e);  // an entry repeated within the input counts once
    }
    append_profile_log(db, target->run.id, target->run.device, fresh);
    report.profile_log_added += static_cast<std::int64_t>(fresh.size());
  }
  tx.commit();
  return report;
}

}  // namespace calisim::db
