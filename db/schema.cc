#include "db/schema.h"

#include <fmt/format.h>

#include <string>

#include "core/dtype.h"
#include "core/error.h"

namespace calisim::db {
namespace {

// Sample statistics shared by every measurement table.
constexpr const char* kStatsColumns =
    "median_s REAL NOT NULL, min_s REAL NOT NULL, p90_s REAL NOT NULL, stddev_s REAL NOT NULL, "
    "n_samples INTEGER NOT NULL";

std::string peak_columns() {
  std::string s;
  for (int i = 0; i < kDTypeCount; ++i) {
    s += fmt::format("peak_{}_tflops REAL NOT NULL DEFAULT 0, ", to_string(static_cast<DType>(i)));
  }
  return s;
}

// Version 1: devices, runs and the four typed measurement tables.
std::string migration_1() {
  return fmt::format(R"sql(
CREATE TABLE devices (
  id INTEGER PRIMARY KEY,
  name TEXT NOT NULL UNIQUE,
  architecture TEXT NOT NULL DEFAULT '',
  sm_count INTEGER NOT NULL DEFAULT 0,
  boost_clock_mhz REAL NOT NULL DEFAULT 0,
  memory_clock_mhz REAL NOT NULL DEFAULT 0,
  {peaks}
  hbm_gb_s REAL NOT NULL DEFAULT 0,
  memory_gb REAL NOT NULL DEFAULT 0,
  l2_mb REAL NOT NULL DEFAULT 0,
  driver_version TEXT NOT NULL DEFAULT '',
  cuda_version TEXT NOT NULL DEFAULT '',
  library_versions TEXT NOT NULL DEFAULT ''
);
CREATE TABLE runs (
  id INTEGER PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE,
  source TEXT NOT NULL CHECK (source IN ('measured','trace','imported','published','predicted')),
  tool_version TEXT NOT NULL DEFAULT '',
  host TEXT NOT NULL DEFAULT '',
  started_at TEXT NOT NULL DEFAULT '',
  ended_at TEXT NOT NULL DEFAULT '',
  notes TEXT NOT NULL DEFAULT ''
);
CREATE INDEX runs_by_device ON runs(device_id);
CREATE TABLE gemm_measurements (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  m INTEGER NOT NULL, n INTEGER NOT NULL, k INTEGER NOT NULL, batch INTEGER NOT NULL,
  dtype TEXT NOT NULL, layout TEXT NOT NULL, accumulate INTEGER NOT NULL,
  {stats},
  tflops REAL NOT NULL, efficiency REAL NOT NULL
);
CREATE TABLE attention_measurements (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  batch INTEGER NOT NULL, heads_q INTEGER NOT NULL, heads_kv INTEGER NOT NULL,
  seq_q INTEGER NOT NULL, seq_kv INTEGER NOT NULL, head_dim_qk INTEGER NOT NULL, head_dim_v INTEGER NOT NULL,
  causal INTEGER NOT NULL, dtype TEXT NOT NULL, direction TEXT NOT NULL,
  {stats},
  tflops REAL NOT NULL, efficiency REAL NOT NULL
);
CREATE TABLE collective_measurements (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  op TEXT NOT NULL, bytes INTEGER NOT NULL, ranks INTEGER NOT NULL, ranks_per_node INTEGER NOT NULL,
  dtype TEXT NOT NULL,
  {stats},
  algbw_gb_s REAL NOT NULL, busbw_gb_s REAL NOT NULL, link_gb_s REAL NOT NULL, efficiency REAL NOT NULL
);
CREATE TABLE memory_measurements (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  kind TEXT NOT NULL, bytes INTEGER NOT NULL,
  {stats},
  gb_s REAL NOT NULL, efficiency REAL NOT NULL
);
CREATE INDEX gemm_by_key ON gemm_measurements(key);
CREATE INDEX gemm_by_run ON gemm_measurements(run_id);
CREATE INDEX attention_by_key ON attention_measurements(key);
CREATE INDEX attention_by_run ON attention_measurements(run_id);
CREATE INDEX collective_by_key ON collective_measurements(key);
CREATE INDEX collective_by_run ON collective_measurements(run_id);
CREATE INDEX memory_by_key ON memory_measurements(key);
CREATE INDEX memory_by_run ON memory_measurements(run_id);
)sql",
                     fmt::arg("peaks", peak_columns()), fmt::arg("stats", kStatsColumns));
}

// Version 2: device aliases and the size-independent bandwidth fits that SimuMax files carry.
std::string migration_2() {
  return R"sql(
CREATE TABLE device_aliases (
  alias TEXT PRIMARY KEY,
  device_id INTEGER NOT NULL REFERENCES devices(id) ON DELETE CASCADE
);
CREATE TABLE memory_fits (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  kind TEXT NOT NULL,
  bandwidth_gb_s REAL NOT NULL, efficiency REAL NOT NULL, latency_us REAL NOT NULL
);
CREATE TABLE collective_fits (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  key TEXT NOT NULL,
  op TEXT NOT NULL, tier TEXT NOT NULL CHECK (tier IN ('intra_node','inter_node')), ranks INTEGER NOT NULL,
  link_gb_s REAL NOT NULL, efficiency REAL NOT NULL, latency_us REAL NOT NULL
);
CREATE INDEX memory_fits_by_run ON memory_fits(run_id);
CREATE INDEX collective_fits_by_run ON collective_fits(run_id);
)sql";
}

// Version 3: trace runs (libcalisim_trace.so): one row per kernel a traced program ran (db/trace_store.h).
std::string migration_3() {
  return R"sql(
CREATE TABLE trace_kernels (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  class TEXT NOT NULL CHECK (class IN ('gemm','attention','nccl','elementwise','memcpy','other')),
  device INTEGER NOT NULL, stream INTEGER NOT NULL,
  grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
  block_x INTEGER NOT NULL, block_y INTEGER NOT NULL, block_z INTEGER NOT NULL,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_s REAL NOT NULL,
  nvtx_range TEXT NOT NULL DEFAULT ''
);
CREATE INDEX trace_kernels_by_run ON trace_kernels(run_id, class);
)sql";
}

// Version 4: trace runs also hold memory copies and memsets (bytes, direction or memory kind, classes
// 'memcpy' / 'memset'). SQLite cannot change a CHECK constraint in place, so the table is rebuilt.
std::string migration_4() {
  return R"sql(
CREATE TABLE trace_kernels_v4 (
  id INTEGER PRIMARY KEY,
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  name TEXT NOT NULL,
  class TEXT NOT NULL CHECK (class IN ('gemm','attention','nccl','elementwise','memcpy','memset','other')),
  device INTEGER NOT NULL, stream INTEGER NOT NULL,
  grid_x INTEGER NOT NULL, grid_y INTEGER NOT NULL, grid_z INTEGER NOT NULL,
  block_x INTEGER NOT NULL, block_y INTEGER NOT NULL, block_z INTEGER NOT NULL,
  start_ns INTEGER NOT NULL, end_ns INTEGER NOT NULL, duration_s REAL NOT NULL,
  nvtx_range TEXT NOT NULL DEFAULT '',
  bytes INTEGER NOT NULL DEFAULT 0,
  copy_kind TEXT NOT NULL DEFAULT ''
);
INSERT INTO trace_kernels_v4 (id, run_id, name, class, device, stream, grid_x, grid_y, grid_z, block_x, block_y,
                              block_z, start_ns, end_ns, duration_s, nvtx_range)
  SELECT id, run_id, name, class, device, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z, start_ns, end_ns,
         duration_s, nvtx_range FROM trace_kernels;
DROP TABLE trace_kernels;
ALTER TABLE trace_kernels_v4 RENAME TO trace_kernels;
CREATE INDEX trace_kernels_by_run ON trace_kernels(run_id, class);
)sql";
}

std::string migration(int version) {
  switch (version) {
    case 1: return migration_1();
    case 2: return migration_2();
    case 3: return migration_3();
    default: return migration_4();
  }
}

}  // namespace

int schema_version(Connection& conn) { return static_cast<int>(conn.query_int("PRAGMA user_version")); }

void migrate_to(Connection& conn, int target) {
  for (int v = schema_version(conn) + 1; v <= target; ++v) {
    Transaction tx(conn);
    // Re-read inside the write lock: another process may have migrated meanwhile.
    if (schema_version(conn) >= v) continue;
    conn.exec(migration(v));
    conn.exec(fmt::format("PRAGMA user_version = {}", v));
    tx.commit();
  }
}

void ensure_schema(Connection& conn) {
  const int v = schema_version(conn);
  if (v > kSchemaVersion) {
    throw InputError(conn.path(), "",
                     fmt::format("database schema version {} is newer than this calisim understands ({}); "
                                 "use a newer calisim, or export the data as JSON with it",
                                 v, kSchemaVersion));
  }
  if (v == kSchemaVersion) return;
  if (conn.mode() == OpenMode::read_only) {
    throw InputError(conn.path(), "",
                     fmt::format("database schema version {} is older than {}; open it writable once "
                                 "(for example `calisim db init {}`) to migrate it",
                                 v, kSchemaVersion, conn.path()));
  }
  migrate_to(conn, kSchemaVersion);
}

}  // namespace calisim::db
