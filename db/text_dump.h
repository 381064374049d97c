// Text forms of a database's content, for committing calibration data (calibration/data/) and
// moving it between hosts: JSON (everything, trace runs' records included) and CSV (measurements
// with their provenance).
//
// Both are stable and diff-friendly: devices by name; runs by (device, source, started_at, host,
// tool_version, ended_at, notes); rows by kind then key text; trace records in start order; one
// row or record per line; numbers in their shortest round-trip form. Writing a Dump and reading
// it back gives the same Dump (run ids aside).
//
// JSON: {"format": "calisim-efficiency-db", "version": 1 or 2, "devices": [...], "aliases": [...],
//        "runs": [{"device", "source", "tool_version", "host", "started_at", "ended_at", "notes",
//                  "rows": [{"key": ..., numbers as in row_text.h}, ...],
//                  "kernels": [{"name", "class", "device", "stream", "grid": [x,y,z],
//                               "block": [x,y,z], "start_ns", "end_ns", "nvtx_range",
//                               "bytes", "copy_kind"}, ...]}, ...]}
//       "kernels" (a trace run's kernels, copies and memsets, db/trace_store.h) appears only on
//       trace runs that have records, and then the file says version 2, so that a calisim that
//       reads only version 1 refuses it instead of dropping the trace; trace-free exports stay
//       version 1. nvtx_range, bytes and copy_kind are left out when empty / 0.
//       "profile_log": [{"key", "status", "reason", "recorded_at", "details": {...}}, ...] (the
//       profiler's session log of the run, db/profile_log.h, in recorded order) appears only on
//       runs that have entries, and then the file says version 3 (older readers refuse it rather
//       than drop the record of skipped shapes); versions 1 and 2 still load, and a version 1 or
//       2 file holding "profile_log" is refused as malformed. Details are read back with their
//       key order, so export -> import stores the same text (numbers as nlohmann writes them,
//       shortest round-trip, which is how the profiler writes them).
// CSV:  header  device,source,tool_version,host,started_at,ended_at,notes,key,<row_number_fields>
//       one line per row; lines with equal provenance columns form one run. Device specs and
//       aliases are not in CSV: importing one into a file that lacks the device creates it with
//       its name only (`calisim db export` warns on stderr when it leaves specs or aliases out).
//       CSV has no columns for trace records or profile log entries: write_csv() refuses a Dump
//       that holds any (std::invalid_argument); `calisim db export` says so, or drops them with
//       --skip-traces / --skip-profile-log.
//
// Readers parse the whole file before returning and throw InputError naming the line (CSV) or
// JSON path and the field; nothing is returned for a malformed file, so nothing is imported.
// Besides types, they refuse:
//   - a field or column the format does not have (JSON members of the document, devices,
//     aliases, runs, rows, kernels and log entries; CSV header columns), and a row number the
//     row's kind does not have (row_text.h);
//   - a missing "runs" array ("devices" and "aliases" may be left out: none);
//   - an alias whose device no entry of "devices" or "runs" names;
//   - device specs that are negative, and an sm_count that is not an integer;
//   - a started_at / ended_at that is neither empty nor ISO 8601 UTC to the second
//     ("2025-06-01T12:00:00Z"), the one form whose text order (how lookups rank runs) is time order;
//   - row numbers as row_text.h's add_row_from_text (efficiency in (0, 1] for gemm and attn);
//   - a row key repeated in the same run (same provenance) with other numbers, naming both rows.
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "db/profile_log.h"
#include "db/records.h"
#include "db/trace_store.h"

namespace calisim::db {

// The records of one trace run. `run` equals (RunRecord::same_provenance) a run in Dump::runs:
// that is the run the records belong to.
struct TraceRecords {
  RunRecord run;
  std::vector<TraceKernel> kernels;
};

// The profiler's log entries of one run; `run` pairs with a run of Dump::runs as for traces.
struct ProfileLogRecords {
  RunRecord run;
  std::vector<ProfileLogEntry> entries;
};

struct Dump {
  std::vector<DeviceRecord> devices;
  std::vector<std::pair<std::string, std::string>> aliases;  // (alias, device)
  std::vector<RunBatch> runs;
  std::vector<TraceRecords> traces;
  std::vector<ProfileLogRecords> profile_logs;
  // Sorts everything into the stable order described above.
  void normalize();
  // Trace records over all runs.
  std::size_t trace_kernel_count() const;
  // Profile log entries over all runs.
  std::size_t profile_log_count() const;
};

// The JSON objects the export uses for one device and one run's provenance (CLI --json too).
nlohmann::ordered_json device_to_json(const DeviceRecord& d);
nlohmann::ordered_json run_to_json(const RunRecord& r);

void write_json(std::ostream& out, Dump dump);
void write_csv(std::ostream& out, Dump dump);
Dump read_json_dump(const std::string& path);
Dump read_csv_dump(const std::string& path);

}  // namespace calisim::db
