// ProfileStore: where `calisim profile run` writes, one finished measurement at a time.
//
// Contract:
//   - Every commit() is one transaction holding the measurement's row (db/ tables, through
//     EfficiencyDb::append_rows) and its entry in the session log `calisim_profile_log`
//     (db/profile_log.h: status, skip reason, and timer, algorithm, kernel names, clocks,
//     throttling as JSON details). A crash or Ctrl-C loses at most the measurement in flight.
//   - The run (db::RunRecord, source `measured`) is created at the first commit, so a rerun with
//     nothing left to do adds no empty run.
//   - done() says whether a key needs no new measurement: a `measured` row of this device for
//     that key exists in any run, or (unless retry_skipped) an earlier run recorded it skipped.
//     That is how a rerun resumes.
//   - The device record is inserted when missing (never overwritten: its specs may have been
//     curated) and the CUDA name is added as an alias.
// The log table is created with IF NOT EXISTS beside the db/ schema; lookups ignore it, and the
// JSON export, import and `calisim db merge` carry it with its run (db/text_dump.h, db/merge.h).
#pragma once

#include <cstdint>
#include <fstream>
#include <memory>
#include <optional>
#include <string>

#include "db/efficiency_db.h"
#include "profiler/measurement.h"
#include "profiler/profile_plan.h"

namespace calisim::profiler {

struct StoreOptions {
  bool retry_skipped = false;
  std::string notes;          // goes into the run record
  std::string csv_path;       // optional text mirror, one line per commit (appended)
};

class ProfileStore {
 public:
  // Opens (creating when missing) the database; `device` must carry the specs efficiencies use.
  ProfileStore(const std::string& db_path, const db::DeviceRecord& device, const std::string& cuda_name,
               StoreOptions options);

  bool done(const PlannedKernel& kernel);
  // `rows` is empty for a skipped measurement.
  void commit(const PlannedKernel& kernel, const Measurement& m, const db::MeasurementSet& rows);

  std::optional<std::int64_t> run_id() const { return run_id_; }
  const std::string& device_name() const { return device_; }
  db::EfficiencyDb& database() { return db_; }

 private:
  std::int64_t ensure_run();

  db::EfficiencyDb db_;
  std::string device_;
  StoreOptions options_;
  std::optional<std::int64_t> run_id_;
  std::ofstream csv_;
};

// The JSON details stored with each log entry (exposed for tests and the CSV mirror).
std::string details_json(const Measurement& m);
// CSV header and one line of the mirror.
std::string csv_header();
std::string csv_line(const std::string& device, const PlannedKernel& kernel, const Measurement& m,
                     const db::MeasurementSet& rows);

}  // namespace calisim::profiler
