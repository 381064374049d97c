// The efficiency database schema and its forward migrations.
//
// The version lives in `PRAGMA user_version`. Migration i (1-based) takes a file from version
// i-1 to i; a fresh file is at version 0. Each migration runs in its own transaction, so a
// crash leaves the file at a whole version. A file whose version is newer than this build's
// kSchemaVersion was written by a newer calisim and is refused (InputError), never modified.
//
// Tables (all measurement tables hang off runs, which hang off devices):
//   devices(name, architecture, SMs, clocks, dense peak per dtype, HBM GB/s, memory, versions)
//   device_aliases(alias -> device)       names a device is also known by (a SimuMax sys_name)
//   runs(device, source, tool_version, host, started_at, ended_at, notes)
//   gemm_measurements, attention_measurements, collective_measurements, memory_measurements:
//     typed key columns + canonical key text (core/kernel_keys.h to_string) + sample statistics
//     + achieved rate + efficiency; indexed by key text for exact lookup.
//   memory_fits, collective_fits: size-independent bandwidth fits (SimuMax system files).
//   trace_kernels: the kernels of a `trace` run, one row each (db/trace_store.h; version 3), and its
//     memory copies and memsets with their bytes (version 4).
#pragma once

#include "db/sqlite_handle.h"

namespace calisim::db {

inline constexpr int kSchemaVersion = 4;

// The database's version (0 for a fresh file).
int schema_version(Connection& conn);

// Refuses files newer than this build, then (when `conn` is writable) applies the missing
// migrations. A read-only connection to an older file throws InputError asking for a writable
// open (`calisim db init` migrates in place).
void ensure_schema(Connection& conn);

// Applies migrations up to `target` only (tests use it to build an old-version file).
void migrate_to(Connection& conn, int target);

}  // namespace calisim::db
