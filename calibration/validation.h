// Scoring simulated runs against measured ones, error statistics and the self-contained HTML
// report of `calisim validate`. Error convention (MODELING.md §6): (simulated − measured) /
// measured. Every row is compared on step time: measured directly, or converted from the
// published tokens/s/GPU (tokens per iteration are known exactly) or TFLOP/s (with the source's
// FLOP count, see docs/validation.md). Pure functions.
#pragma once

#include <array>
#include <map>
#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "calibration/accuracy_envelope.h"
#include "calibration/measured_runs.h"
#include "calibration/run_mapping.h"
#include "calibration/step_components.h"
#include "simulator/result.h"

namespace calisim::calibration {

struct RowResult {
  int line = 0;
  std::string run_id, source, model, gpu_type, system, layout;
  int gpus = 0;
  std::vector<std::string> inferred;
  bool simulated = false;
  std::string reason;                   // why not simulated

  std::string measured_from;            // "step_time_s", "tokens_per_sec_per_gpu", "tflops_per_gpu (...)"
  double measured_step_s = 0, simulated_step_s = 0;
  double step_error = 0;                // (sim − meas) / meas on step time; > 0 = simulation slower
  double throughput_error = 0;          // on tokens/s/GPU (= on TFLOP/s with one FLOP count)
  std::optional<double> mem_measured_gib, mem_simulated_gib, mem_error;
  std::string mem_kind;                 // "allocated" | "reserved"
  std::optional<double> mfu_published_pct;   // as the source printed it (its convention)
  double mfu_measured_pct = 0;          // measured throughput, calisim's convention (non-causal)
  double mfu_measured_causal_pct = 0;   // measured throughput, attention halved for causal masks
  double mfu_simulated_pct = 0;
  bool fits_in_memory = true;
  std::vector<std::string> warnings;
  // Kernel lookups of the simulation by where their efficiency came from (measured, interpolated,
  // scaled, roofline: core/efficiency_model.h): how much of the row a --db actually priced.
  std::array<int, kEfficiencySourceCount> kernels_per_source{};
  // Where the simulated step's time goes on its critical stage (simulator/result_json.h
  // breakdown_json): what a row's error can be set against, component by component.
  nlohmann::json breakdown;
  nlohmann::json compute_split;  // compute_split_json: attention kernels and the rest of compute
  StepParts parts_s{};  // the same time in the parts `validate --components` fits (step_components.h)
  // The simulated configuration's class (system, dense / MoE, precision), set by whoever parsed the
  // mapped configs (the CLI): what `simulate --accuracy` matches runs on.
  RunClass cls;
};

RowResult not_simulated(const MeasuredRun& run, const MappedRun& mapped, const std::string& reason);
// Throws std::invalid_argument when the row has no usable measurement (no step time, tokens/s or
// TFLOP/s): parse-level checks make that an input problem the CLI reports as not simulated.
RowResult score_run(const MeasuredRun& run, const MappedRun& mapped, const SimulationResult& result);

struct ErrorStats {
  std::string group;
  std::string metric = "step_time";  // "step_time" | "throughput" | "memory": what the sign means
  int count = 0;
  double mape = 0;       // mean |error|
  double median = 0;     // median |error|
  double worst = 0;      // signed error of the largest |error|
  std::string worst_run;
  double bias = 0;       // mean signed error
  double p10 = 0, p50 = 0, p90 = 0;  // signed error percentiles (what simulate --accuracy reports)
  int over = 0, under = 0;  // rows with error > 0 / < 0
};

// Signed relative errors keyed by run id -> statistics. An empty list gives count 0.
ErrorStats error_stats(const std::string& group, const std::vector<std::pair<std::string, double>>& errors);

struct ValidationSummary {
  ErrorStats all, all_throughput, memory;
  std::vector<ErrorStats> by_source, by_gpu;  // step-time errors
  // Step-time errors per class "system model_class precision" (RowResult::cls): the envelopes
  // `simulate --accuracy` draws from, before any widening.
  std::vector<ErrorStats> by_class;
  std::vector<const RowResult*> worst;        // up to 10, largest |step error| first
  // Memory feasibility: every measured run ran, so a simulated row that does not fit in its GPU's
  // memory is a false "does not fit" (the memory model, or the inferred settings, too large).
  std::vector<const RowResult*> not_fitting;
  // Kernel lookups of every simulated row by efficiency source, over all rows and per system.
  std::array<long long, kEfficiencySourceCount> kernels_per_source{};
  std::map<std::string, std::array<long long, kEfficiencySourceCount>> kernels_per_source_by_gpu;
};
ValidationSummary summarize(const std::vector<RowResult>& rows);

// "simulation slower" / "simulation faster" / "none" from a bias on step time.
std::string bias_label(double bias);
// The same for any ErrorStats: throughput > 0 = simulation faster; memory > 0 = simulation higher.
std::string bias_label(const ErrorStats& stats);

nlohmann::json to_json(const RowResult& row);
// A tally of kernel lookups by efficiency source: {"measured": n, "interpolated": n, ...}, and as
// text, "n measured (x %), n interpolated (...), ...".
nlohmann::json kernel_sources_json(const std::array<long long, kEfficiencySourceCount>& counts);
std::string kernel_sources_text(const std::array<long long, kEfficiencySourceCount>& counts);
nlohmann::json to_json(const ErrorStats& stats);

// Self-contained HTML: tables, an inline-SVG scatter of simulated vs measured step time (log-log,
// y = x line) and an error histogram. No scripts, no network. All text is escaped.
// `appendix`: finished HTML (already escaped) placed after the row table, e.g. the fit's tables.
std::string html_report(const std::vector<RowResult>& rows, const ValidationSummary& summary,
                        const std::string& title, const std::string& appendix = "");
std::string html_escape(const std::string& text);

}  // namespace calisim::calibration
