// EfficiencyDb: the SQLite efficiency database (one file, many devices, provenance per row).
//
// Contract:
//   - open() applies forward migrations when writable and refuses a newer schema (schema.h);
//     files are put in WAL mode, so readers in other processes keep a consistent snapshot while
//     one writer inserts.
//   - Every write is one transaction: insert_runs() commits all of its batches or none, so an
//     interrupted process (even kill -9) leaves every previously committed row and no partial
//     batch.
//   - Reads never change the file. Lookups return rows for the device named (or aliased).
//   - Errors: InputError for anything the user can fix (file, device name), see sqlite_handle.h.
// One EfficiencyDb is used by one thread at a time; open one per thread or process.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "db/records.h"
#include "db/sqlite_handle.h"

namespace calisim::db {

// Row counts of one device, by table and by source.
struct DeviceSummary {
  std::string device;
  std::int64_t runs = 0;
  std::int64_t gemm = 0, attention = 0, collective = 0, memory = 0, memory_fits = 0, collective_fits = 0;
  std::array<std::int64_t, kSourceCount> rows_by_source{};
  std::int64_t total() const { return gemm + attention + collective + memory + memory_fits + collective_fits; }
};

// Called during long inserts with (rows written so far, rows in the call), inside the
// transaction; an exception thrown from it rolls the whole call back.
using InsertProgress = std::function<void(std::size_t done, std::size_t total)>;

class EfficiencyDb {
 public:
  static EfficiencyDb open(const std::string& path, OpenMode mode);

  const std::string& path() const { return conn_.path(); }
  Connection& connection() { return conn_; }

  // --- devices -------------------------------------------------------------------------
  // Inserts the device, or replaces the specs of the device with the same name.
  void put_device(const DeviceRecord& device);
  // Inserts the device only when no device of that name exists; true when inserted.
  bool add_device_if_missing(const DeviceRecord& device);
  // Resolves a name or alias; nullopt when neither is known.
  std::optional<DeviceRecord> find_device(const std::string& name_or_alias);
  // Like find_device, but throws InputError listing the devices the file holds.
  DeviceRecord device(const std::string& name_or_alias);
  std::vector<DeviceRecord> devices();  // ordered by name
  // Makes `alias` another name of `device` (replacing an earlier meaning of the alias).
  void add_alias(const std::string& alias, const std::string& device);
  std::vector<std::string> aliases(const std::string& device);  // ordered

  // --- runs and rows -------------------------------------------------------------------
  // Inserts each batch as a new run of its device (which must exist), all in one transaction.
  // Returns the new run ids, in order. Rows with a non-finite or non-positive efficiency are
  // rejected (InputError naming the row's key) before anything is written.
  std::vector<std::int64_t> insert_runs(const std::vector<RunBatch>& batches, const InsertProgress& progress = {});
  std::int64_t insert_run(const RunBatch& batch, const InsertProgress& progress = {});
  // Adds rows to an existing run (merge uses it for runs already present).
  void append_rows(std::int64_t run_id, const MeasurementSet& rows);

  // Runs, ordered by id; only the named device's when `device` is not empty.
  std::vector<RunRecord> runs(const std::string& device = "");
  // Every run of the device (all devices when empty) with its rows, ordered by run id and,
  // within a run, by insertion.
  std::vector<RunBatch> load_runs(const std::string& device = "");
  // Deletes a run and its rows; false when no such run.
  bool delete_run(std::int64_t run_id);

  // --- lookup --------------------------------------------------------------------------
  // Every row of this device whose key equals `key` (any field order; it is canonicalised),
  // with its run, best first (by Source order, then newest started_at, then most samples).
  // Throws std::invalid_argument for a malformed key.
  struct Hit {
    RunRecord run;
    MeasurementSet row;  // exactly one row, in the table of the key's kind
  };
  std::vector<Hit> lookup(const std::string& device, const std::string& key);

  DeviceSummary summary(const std::string& device);

  // Rebuilds the file to reclaim space (VACUUM) and checkpoints the WAL.
  void vacuum();

 private:
  explicit EfficiencyDb(Connection conn) : conn_(std::move(conn)) {}
  std::int64_t device_id(const std::string& name_or_alias);
  void insert_rows(std::int64_t run_id, const MeasurementSet& rows, std::size_t& done, std::size_t total,
                   const InsertProgress& progress);

  Connection conn_;
};

// Validates one set of rows (finite, positive efficiencies and times); throws InputError with
// `file` and the offending key.
void validate_rows(const MeasurementSet& rows, const std::string& file);

}  // namespace calisim::db
