// From raw kernel records of a traced program to a trace run in the efficiency database: the
// CUDA-free half of libcalisim_trace.so (profiler/trace_injection.cc), testable without a GPU.
//
// Contract:
//   - demangle_kernel_name() returns the C++ demangled name, or the input unchanged when it is
//     not a mangled name (CUDA C kernels, "nvjet_..." names).
//   - finish_trace_kernel() demangles k.name and sets k.kernel_class with classify_kernel().
//   - store_trace() writes one `trace` run per device seen (kernels grouped by k.device, each
//     run's kernels in start order) into the database at db_path (created when missing). A
//     device is found by its CUDA name (device_names[ordinal]) among device names and aliases;
//     a name the file does not know is added as a device with no specs (a trace needs no peaks)
//     and a warning saying so is returned, unless `extras.device_specs` has specs for that ordinal:
//     then the device is added with them (its CUDA name an alias when the specs name it otherwise),
//     and a known device whose record has no peaks gets them (keeping its name). With
//     `extras.rows`, each device's efficiency rows are stored as one more run of source `trace`
//     (profiler/operator_rows.h). Everything is one transaction. Returns the run ids, by ordinal.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "db/trace_store.h"

namespace calisim::profiler {

std::string demangle_kernel_name(std::string_view name);
void finish_trace_kernel(db::TraceKernel& k);

struct TraceWriteResult {
  std::map<int, std::int64_t> run_by_device;
  std::map<int, std::int64_t> rows_run_by_device;  // the efficiency-row runs of `extras.rows`
  std::map<int, std::string> device_by_ordinal;     // the database's name of each device
  std::vector<std::string> warnings;
};

// Rows stored beside a trace run: one run of its device.
struct TraceRowsRun {
  std::string notes;
  db::MeasurementSet rows;
};

struct TraceExtras {
  std::map<int, db::DeviceRecord> device_specs;  // by CUDA ordinal
  std::map<int, TraceRowsRun> rows;              // by CUDA ordinal
};

// Provenance of the runs store_trace() writes.
struct TraceRunInfo {
  TraceRunInfo() = default;
  TraceRunInfo(std::string notes_text, std::string started)
      : notes(std::move(notes_text)), started_at(std::move(started)) {}
  std::string notes;
  std::string started_at;               // when tracing began (ISO 8601 UTC, utc_now_iso()), or ""
  // nullopt = now (the trace library stores as the program exits); an import passes what it knows.
  std::optional<std::string> ended_at;
  std::string tool = "libcalisim_trace";  // the runs' tool_version
  std::string host;                     // "" = this machine's name
};

TraceWriteResult store_trace(const std::string& db_path, std::vector<db::TraceKernel> kernels,
                             const std::map<int, std::string>& device_names, const TraceRunInfo& info,
                             const TraceExtras& extras = {});

// The device names of imported trace records (Kineto, Nsight Systems): `override`, when given,
// names every device the records use; otherwise each must already be in `names`, and InputError
// names `file` and `where` (the part of the trace that names devices) and asks for --device.
void name_trace_devices(const std::vector<db::TraceKernel>& records, std::map<int, std::string>& names,
                        const std::string& override, const std::string& file, const std::string& where);

// The rank and world size a launcher gave this process, from `env` (getenv's contract): torchrun's
// RANK / WORLD_SIZE, then Open MPI's OMPI_COMM_WORLD_RANK / _SIZE, Slurm's SLURM_PROCID /
// SLURM_NTASKS, PMI's PMI_RANK / PMI_SIZE; the first pair that parses as 0 <= rank < size.
// The trace library writes it into a run's notes as "rank R of W", the form `simulate
// --compare-trace` reads to find the traced rank's pipeline stage.
std::optional<std::pair<int, int>> launcher_rank(const std::function<const char*(const char*)>& env);

// The current time as ISO 8601 UTC ("2026-11-21T12:00:00Z").
std::string utc_now_iso();

}  // namespace calisim::profiler
