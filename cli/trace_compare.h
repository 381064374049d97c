// `calisim simulate --compare-trace` (and the Python API's simulate(compare_trace=...)): a trace
// run of a database set beside a simulation result, by kernel class (calibration/trace_comparison.h
// does the arithmetic; this is the I/O around it: choosing the run and the stage, text and JSON).
//
// Contract: compare_with_trace() opens request.db read-only and takes trace run request.run; when
// that is 0, the newest trace run whose notes say "rank request.rank of W" (a directory of per-rank
// traces imported together), else the newest; a chosen run of another rank than request.rank adds
// a warning. InputError names the file and option for a missing file, a database without trace runs,
// a run that is not one, a stage or rank the layout lacks, or an unnamed trace without a step count.
// The stage is request.stage when >= 0, else the pipeline stage of request.rank when >= 0, else that
// of the "rank R of W" the run's notes give when W is the result's world size, else 0; a trace of
// another world size adds a warning.
// Shapes (with request.system and request.model): when `db import --kineto` stored efficiency rows
// beside the trace run (a trace recorded with record_shapes: the rows run of the same device whose
// notes carry the trace run's import fingerprint, cli/trace_import.h), each key's traced median
// against the time that system and model give one call of it (simulator/op_cost.h: FLOPs over the
// efficiency's share of the peak, roofline keys at least their memory time; collectives by the
// NCCL model, their traced time including waits for peers), by traced time (calls x median),
// largest first; shapes_run 0 and no shapes otherwise.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "calibration/trace_comparison.h"
#include "core/efficiency_model.h"
#include "simulator/result.h"
#include "simulator/system_config.h"

namespace calisim::cli {

struct TraceCompareRequest {
  std::string db;            // empty: no comparison
  std::int64_t run = 0;      // 0: the newest trace run of `rank` when there is one, else the newest
  bool all_runs = false;     // every trace run, each with its own rank's stage (--trace-run all)
  int stage = -1;            // -1: from the traced rank, else 0
  int rank = -1;             // -1: from the trace run's notes ("rank R of W"), when they say
  int steps = 0;             // steps in a trace without ProfilerStep ranges
  // The simulation's system and efficiency model: with both, a trace recorded with record_shapes
  // gets its operator shapes set beside the time these give each key (TraceComparison::shapes).
  const SystemConfig* system = nullptr;
  const EfficiencyModel* model = nullptr;
};

// One operator shape of a trace recorded with record_shapes: its calls' median time against the
// time the simulation gives the same key.
struct ShapeComparison {
  std::string key;
  std::int64_t calls = 0;            // calls timed (the row's n)
  double traced_s = 0;               // median per call
  double simulated_s = 0;            // the simulator's time for one call of the key
  EfficiencySource source = EfficiencySource::roofline;  // of the simulated efficiency
  double simulated_efficiency = 0, traced_efficiency = 0;
};

struct TraceComparison {
  std::string db, device, notes;
  std::int64_t run = 0;
  std::string run_why;           // how the run was chosen: --trace-run, the latest, the latest of rank R
  std::vector<std::int64_t> other_runs;
  calibration::TraceStepStats traced;
  calibration::SimulatedStepClasses simulated;
  std::vector<calibration::ComparisonRow> rows;
  std::vector<calibration::TopKernel> top;
  std::string stage_why;         // how the stage was chosen
  std::vector<std::string> warnings;
  std::int64_t shapes_run = 0;        // the rows run beside the trace run (0: none)
  std::vector<ShapeComparison> shapes;  // by traced time (calls x median), largest first
};

TraceComparison compare_with_trace(const TraceCompareRequest& request, const SimulationResult& r);
std::string trace_comparison_text(const TraceComparison& c);


nlohmann::json trace_comparison_json(const TraceComparison& c);

// --trace-run all: every trace run of request.db (ids ascending), each compared as
// compare_with_trace with that run and no --trace-rank (its stage from its own "rank R of W" notes
// when W is the result's world size, else request.stage, else 0): a per-rank view of a
// pipeline-parallel job imported as a directory of per-rank traces. The text is one summary table
// (per run: rank, stage, steps, and traced / simulated step span, compute busy, exposed
// communication, idle); the JSON {"database", "runs": [trace_comparison_json of each]}.
std::vector<TraceComparison> compare_all_trace_runs(const TraceCompareRequest& request, const SimulationResult& r);
std::string trace_comparisons_text(const std::vector<TraceComparison>& cs);
nlohmann::json trace_comparisons_json(const std::vector<TraceComparison>& cs);

// --trace-fit-out (and the Python API's trace_fit_out): `system_doc` (the run's system document
// before overrides) with the "system." entries of `overrides` applied and its kernel efficiencies
// scaled to the trace (calibration::fit_to_trace / apply_trace_fit), a description sentence
// saying which trace, run, steps and stage, written to `out_path`. InputError where the simulation
// took its efficiencies from a database (r.efficiency_db) or the file cannot be written. Returns
// {"file", "matmul", "attention", "memory_bound", "unfitted", "capped"}.
nlohmann::json write_trace_fit(const std::string& out_path, nlohmann::ordered_json system_doc,
                               const std::vector<std::string>& overrides, const SimulationResult& r,
                               const TraceComparison& c);
// The text line saying what write_trace_fit wrote.
std::string trace_fit_text(const nlohmann::json& fit);

// "N" or "all" (--trace-run, the Python API's trace_run) into the request; InputError otherwise.
void parse_trace_run(const std::string& text, TraceCompareRequest& request);

}  // namespace calisim::cli
