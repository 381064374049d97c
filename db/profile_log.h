// The profiler's session log: one entry per measurement `calisim profile run` finished or skipped
// (profiler/profile_store.h), in the table calisim_profile_log beside the db/ schema. It is the
// record of what was skipped and why (out of memory, unsupported by the library, no second GPU),
// which timer was used and whether the GPU throttled; committed calibration data must keep it.
//
// Contract:
//   - ensure_profile_log_table() creates the table when missing (CREATE IF NOT EXISTS); databases
//     that never ran the profiler have none, and the readers below then return nothing.
//   - Entries belong to a run (run_id, ON DELETE CASCADE); `device` is the run's device.
//     `details` is a JSON object as text (timer, algorithm, clocks, throttling); status is
//     `measured` or `skipped`.
//   - load_profile_log() returns one run's entries in the order they were recorded (row id), so
//     appending a list and loading it back gives the same list.
//   - append_profile_log() adds entries to an existing run (the profiler, import and merge use it).
//     An entry with another status, or details that are not a JSON object, is refused
//     (std::invalid_argument) before anything is written.
// Export (db/text_dump.h) and merge (db/merge.h) carry the entries with their run.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/efficiency_db.h"

namespace calisim::db {

struct ProfileLogEntry {
  std::string key;           // canonical key text of the planned kernel (core/kernel_keys.h)
  std::string status;        // "measured" or "skipped"
  std::string reason;        // why it was skipped; empty when measured
  std::string recorded_at;   // UTC ISO 8601
  std::string details = "{}";  // JSON object text
  bool operator==(const ProfileLogEntry&) const = default;
};

bool is_profile_log_status(const std::string& status);

void ensure_profile_log_table(EfficiencyDb& db);
bool has_profile_log_table(EfficiencyDb& db);

// Runs with at least one entry, by id (empty when the table does not exist).
std::vector<std::int64_t> runs_with_profile_log(EfficiencyDb& db);
std::vector<ProfileLogEntry> load_profile_log(EfficiencyDb& db, std::int64_t run_id);
// The caller holds a transaction when the entries must go in with other writes.
void append_profile_log(EfficiencyDb& db, std::int64_t run_id, const std::string& device,
                        const std::vector<ProfileLogEntry>& entries);

}  // namespace calisim::db
