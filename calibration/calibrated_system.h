// `calisim calibrate`, the output half: the calibrated system file.
//
// Contract: the base system file's JSON (any `--set system.…` overrides applied) with only these
// fields changed, so every other field — including ones this code does not know, such as
// topology fields added later — passes through untouched and in its order:
//   name           "<base name>-calibrated";
//   source         a provenance note: date, database file, device, rows used, every fitted
//                  field with its datasheet value, and the base file and its source;
//   efficiency_db  the database, as a path relative to the output file's directory when both
//                  lie on one filesystem root, else absolute (simulate resolves a relative
//                  efficiency_db against the system file's directory);
//   each FittedValue with a value (efficiency.matmul, network.scale_up.latency_us, ...).
// The result parses with parse_system (checked before writing) and simulates with
// `calisim simulate --system PATH`.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

#include "calibration/calibrate.h"

namespace calisim::calibration {

struct CalibratedSystemOptions {
  std::string base_file;  // the system file that was calibrated
  std::string db_path;    // as the user named it
  std::string out_path;   // where the calibrated file goes
  std::string date_utc;   // ISO 8601, for the provenance note
};

// The path to store in efficiency_db: db_path relative to out_path's directory, else absolute.
std::string db_reference(const std::string& db_path, const std::string& out_path);

// Throws InputError naming out_path when the result does not parse as a system.
nlohmann::ordered_json calibrated_system(const nlohmann::ordered_json& base, const Calibration& c,
                                         const CalibratedSystemOptions& options);

// Writes the document (2-space indent, trailing newline); InputError when the file cannot be written.
void write_system_file(const nlohmann::ordered_json& doc, const std::string& path);

}  // namespace calisim::calibration
