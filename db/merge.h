// Moving content between databases and text files, with duplicate detection.
//
// merge_into() is how every import of calisim's own formats and `calisim db merge` write: in one
// transaction (all of a dump or nothing),
//   - a device missing from the target is added with its specs; an existing one keeps its specs,
//     unless it has none (a name-only record, as a CSV import creates): then it takes the input's;
//   - aliases are added when free (an alias already naming another device, or naming a device
//     neither the dump nor the target holds, is reported and not added);
//   - a run whose provenance equals a run already in the target (RunRecord::same_provenance) is
//     the same run: its rows are added to it, except rows whose key the run already holds, which
//     are duplicates when their numbers are equal and conflicts (the target's row is kept)
//     otherwise. Runs from different hosts or MPI ranks differ in provenance, so all are kept;
//   - a trace run's records (Dump::traces) go with their run, whole: into a run that has none
//     they are added; a run that already has records keeps them, and the incoming ones count as
//     duplicates when the lists are equal, else as one conflict (a trace is never mixed with
//     another). A trace entry whose run is not in the dump is a programming error
//     (std::invalid_argument, before anything is written);
//   - a run's profile log entries (Dump::profile_logs, db/profile_log.h) go with their run as a
//     union: entries the run already holds (all fields equal) are duplicates, the others are
//     appended in their order (a log is a record of events: two databases of one resumed session
//     hold each event once, and nothing is a conflict). A log whose run is not in the dump is a
//     programming error, as for traces.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "db/efficiency_db.h"
#include "db/text_dump.h"

namespace calisim::db {

struct MergeReport {
  std::int64_t devices_added = 0, runs_added = 0, rows_added = 0;
  std::int64_t device_specs_filled = 0;  // name-only devices of the target that took the input's specs
  std::int64_t duplicates = 0, conflicts = 0;
  std::int64_t trace_kernels_added = 0, trace_kernel_duplicates = 0;
  std::int64_t profile_log_added = 0, profile_log_duplicates = 0;
  std::vector<std::string> messages;  // one line per conflict or refused alias (the first 20)
};

// Everything in the database (one device's when `device` is not empty, aliases, trace records and
// profile log entries included).
Dump dump_database(EfficiencyDb& db, const std::string& device = "");

// Reads a database file (read-only), a .json export or a .csv export, by content and extension.
Dump read_any(const std::string& path);

MergeReport merge_into(EfficiencyDb& db, const Dump& dump);

}  // namespace calisim::db
