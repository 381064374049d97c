// `calisim calibrate`, the analysis half: what a configuration needs from a device's rows in the
// efficiency database, what is missing, how well the predictor fits the rows, and the default
// efficiencies of a system file fitted from them (docs/calibration.md).
//
// Contract: pure functions of (kernel plan, system, device rows); no I/O except
// load_device_rows. Steps:
//   missing_kernels   planned keys without an exact row of this device (rows of `predicted` runs
//                     do not count): what `calisim profile run` would measure;
//   calibrate         leave-one-out accuracy of the predictor per family (predictor/evaluate.h;
//                     the record's profile completed from the system, as `calisim predict` does),
//                     α-β fits of the collective and memory rows (predictor/alpha_beta_fit.h,
//                     device_fit.h) and the stored bandwidth fits, the fitted defaults, and the
//                     coverage of the planned keys.
// Fitted defaults (each replaces the datasheet value only when data supports it, else `fitted`
// is empty and `basis` says why):
//   efficiency.matmul / .attention  time-weighted mean efficiency Σ(F/P) / Σ(F/(P·e)) of the
//                     planned GEMM / attention keys that data answers: an exact row, else the
//                     predictor's interpolating fit (kernels measured nowhere near are left out);
//                     FP8 GEMMs (e4m3/e5m2 inputs) are fitted apart, as efficiency.matmul_by_dtype.fp8,
//                     when the plan has any; efficiency.matmul then covers the other GEMMs;
//   efficiency.memory_bound  byte-weighted harmonic mean, over the planned memory keys, of the
//                     large-transfer efficiency β / HBM of their kind's fit (memory rows' α-β
//                     fit, else a stored fit of the kind, else the stored "default" fit); the
//                     latency α is not in it because the simulator adds kernel_launch_us itself;
//   network.<tier>.efficiency.<op>  β / the per-GPU link the simulator divides by for that group
//                     (simulator/comm_model.h link_for), from the op's row group with the most
//                     ranks in the tier (else its stored fit with the most ranks), capped at 1;
//   network.<tier>.latency_us  median over the tier's fitted ops of α / ring steps.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "db/records.h"
#include "profiler/profile_plan.h"
#include "simulator/kernel_plan.h"
#include "simulator/system_config.h"

namespace calisim::calibration {

// One device's rows as read from the database.
struct DeviceRows {
  db::DeviceRecord record;
  std::vector<db::RunBatch> runs;
  std::size_t row_count() const;  // rows of runs not of source `predicted`
};

// Throws InputError naming the file when it cannot be read or holds no such device (name or
// alias); the message lists the devices it holds.
DeviceRows load_device_rows(const std::string& db_path, const std::string& device_name);

// The planned keys without an exact row of this device (rows of predicted runs do not count),
// in measuring order (gemm, attention, memory, collective).
profiler::ProfilePlan missing_kernels(const KernelPlan& plan, const DeviceRows& rows);

struct MissingFamily {
  std::string family;  // "gemm", "attention", "memory", "collective"
  std::size_t count = 0;
  std::vector<std::string> first_keys;  // at most `first_n`
};
std::vector<MissingFamily> summarize_missing(const profiler::ProfilePlan& missing, std::size_t first_n = 3);

struct FitQuality {
  std::string family;  // as predictor::evaluate names it, e.g. "gemm bf16", "attention fwd bf16"
  std::size_t n = 0;
  double loo_mape_pct = 0, max_ape_pct = 0;
};

// An α-β fit of collective or memory data: time = alpha + size / beta.
struct BandwidthFit {
  std::string what;    // "memory kind=norm", "all_reduce ranks=8 per node=8 (intra_node)"
  std::string basis;   // "N rows" or "stored fit"
  double alpha_us = 0;
  double beta_gb_s = 0;     // bytes (wire bytes for collectives) per second at large sizes
  double efficiency = 0;    // beta / HBM, or beta / the rows' link bandwidth
};

struct FittedValue {
  std::string field;              // JSON path in the system file, e.g. "efficiency.matmul"
  double datasheet = 0;           // the base system file's value
  std::optional<double> fitted;   // empty: the data does not support one; the datasheet value stays
  std::string basis;              // how it was fitted, or why not
};

// How the planned keys are answered. measured / interpolated / scaled / roofline are the
// answers `calisim simulate` gets from the database with the calibrated system (rows, stored
// bandwidth fits, rows of `calisim predict`, the system file's defaults);
// `roofline_predictor_covers` counts the roofline ones the predictor's fits could answer (they
// enter the fitted defaults, not the per-kernel lookups).
struct CoverageRow {
  std::string family;
  std::size_t planned = 0, measured = 0, interpolated = 0, scaled = 0, roofline = 0;
  std::size_t roofline_predictor_covers = 0;
};

struct Calibration {
  std::string device;
  std::size_t rows_used = 0;
  std::vector<FitQuality> fit_quality;       // families with enough rows for leave-one-out
  std::vector<BandwidthFit> bandwidth_fits;  // collectives, then memory kinds
  std::vector<FittedValue> defaults;
  std::vector<CoverageRow> coverage;         // gemm, attention, memory, collective, total
  std::size_t fitted_count() const;
};

// Called between the steps (fit quality, bandwidth fits, defaults, coverage) for progress output.
using StepCallback = void (*)(void* user, int done, int total);

Calibration calibrate(const KernelPlan& plan, const SystemConfig& system, const DeviceRows& rows,
                      StepCallback on_step = nullptr, void* user = nullptr);

}  // namespace calisim::calibration
