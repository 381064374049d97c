// Text forms of a database's content, for committing calibration data (calibration/data/) and
// moving it between hosts: JSON (everything) and CSV (measurements with their provenance).
//
// Both are stable and diff-friendly: devices by name; runs by (device, source, started_at, host,
// tool_version, ended_at, notes); rows by kind then key text; one row per line; numbers in their
// shortest round-trip form. Writing a Dump and reading it back gives the same Dump (run ids
// aside).
//
// JSON: {"format": "calisim-efficiency-db", "version": 1, "devices": [...], "aliases": [...],
//        "runs": [{"device", "source", "tool_version", "host", "started_at", "ended_at", "notes",
//                  "rows": [{"key": ..., numbers as in row_text.h}, ...]}, ...]}
// CSV:  header  device,source,tool_version,host,started_at,ended_at,notes,key,<row_number_fields>
//       one line per row; lines with equal provenance columns form one run. Device specs are not
//       in CSV: importing one into a file that lacks the device creates it with its name only.
//
// Readers parse the whole file before returning and throw InputError naming the line (CSV) or
// JSON path and the field; nothing is returned for a malformed file, so nothing is imported.
#pragma once

#include <nlohmann/json.hpp>

#include <iosfwd>
#include <string>
#include <utility>
#include <vector>

#include "db/records.h"

namespace calisim::db {

struct Dump {
  std::vector<DeviceRecord> devices;
  std::vector<std::pair<std::string, std::string>> aliases;  // (alias, device)
  std::vector<RunBatch> runs;
  // Sorts everything into the stable order described above.
  void normalize();
};

// The JSON objects the export uses for one device and one run's provenance (CLI --json too).
nlohmann::ordered_json device_to_json(const DeviceRecord& d);
nlohmann::ordered_json run_to_json(const RunRecord& r);

void write_json(std::ostream& out, Dump dump);
void write_csv(std::ostream& out, Dump dump);
Dump read_json_dump(const std::string& path);
Dump read_csv_dump(const std::string& path);

}  // namespace calisim::db
