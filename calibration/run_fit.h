// Fitting a system's default efficiencies to measured step times (`calisim validate --fit-system`).
//
// When a cluster's kernels cannot be profiled but some of its training runs were measured, the
// roofline defaults of its system file can be scaled to those runs: one multiplicative factor per
// fitted group of efficiencies, applied to every row's own system (its patches kept), chosen to
// minimise the mean squared log ratio of simulated to measured step time (symmetric in over- and
// under-prediction, insensitive to a row's absolute step time). Groups:
//   compute — efficiency.matmul, every matmul_by_dtype entry and the attention efficiency;
//   comm    — every collective efficiency of the scale-up and scale-out tiers;
//   memory  — efficiency.memory_bound;
//   fp8     — the FP8 GEMMs' efficiency relative to the rest (on top of compute): matmul_by_dtype's
//             fp8 entries, or, where the file gives none, the matmul figure the FP8 GEMMs use,
//             written as matmul_by_dtype.fp8; only on a device with an FP8 peak. Left at 1
//             (not fitted) where no row of the fit runs FP8 — the rows say nothing about it.
// Scaled efficiencies are capped at 1. One factor is found by golden-section search on its log
// over [1/4, 4]; several by coordinate descent over them.
//
// How well such a fit predicts runs it has not seen is what matters, so the fit is cross-validated:
// each group of rows (a source, i.e. one publication's runs, which share a framework, a cluster and
// a software version; sources that cite the same document are one group) is predicted by the
// factors fitted on all other groups; with a single group, each row by the factors fitted on the
// other rows. Pure: no I/O.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "simulator/model_config.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim::calibration {

enum class FitGroup { compute, comm, memory, fp8 };
const char* to_string(FitGroup g);
// "compute" | "comm" | "memory" | "fp8"; throws std::invalid_argument naming the accepted words.
FitGroup parse_fit_group(const std::string& word);

struct FitRow {
  std::string run_id;
  std::string group;           // cross-validation group (the row's source)
  std::string document;        // the document it cites; groups sharing one are merged ("" = none)
  ModelConfig model;
  StrategyConfig strategy;
  SystemConfig system;         // the row's own system (patches applied), before any factor
  double measured_step_s = 0;
};

struct FitFactors {
  std::vector<FitGroup> groups;
  std::vector<double> factor;  // one per group, same order
  double of(FitGroup g) const;  // 1 for a group not fitted
};

// `sys` with the factors applied (efficiencies scaled, capped at 1).
SystemConfig apply_factors(const SystemConfig& sys, const FitFactors& f);
// The efficiencies of `sys` that the factors scale to 1 or above (written as the system file names
// them: "matmul", "matmul_by_dtype.fp8", "attention", "memory_bound", "scale_up.all_reduce", ...):
// capped at the whole peak, which no kernel reaches, so the factor absorbs something else there.
std::vector<std::string> efficiencies_at_cap(const SystemConfig& sys, const FitFactors& f);
// A system file's JSON with the factors applied to the same fields (efficiency.matmul,
// matmul_by_dtype, attention and every attention_implementations entry; network tiers' efficiency
// objects; efficiency.memory_bound; the fp8 factor on matmul_by_dtype's fp8 entries, added as
// "fp8" from efficiency.matmul when the file has none and device.peak_tflops has fp8), each capped
// at 1.
nlohmann::json apply_factors(nlohmann::json system_doc, const FitFactors& f);
nlohmann::ordered_json apply_factors(nlohmann::ordered_json system_doc, const FitFactors& f);  // keeps field order

struct FittedRow {
  std::string run_id, group;    // group: the cross-validation fold the row belongs to
  double measured_step_s = 0;
  double default_step_s = 0;    // the system's own efficiencies
  double fitted_step_s = 0;     // with the factors fitted on every row
  double held_out_step_s = 0;   // with the factors fitted without the row's group (or the row)
};

struct RunFitResult {
  FitFactors factors;                // fitted on every row
  std::vector<FittedRow> rows;
  bool by_group = true;              // cross-validated by group (false: leave one row out)
  std::vector<FitFactors> held_out;  // the factors of each cross-validation fold, in fold order
  std::vector<std::string> folds;    // the group (or run id) each fold leaves out
  int simulations = 0;
};

struct RunFitOptions {
  std::vector<FitGroup> groups{FitGroup::compute};
  double min_factor = 0.25, max_factor = 4.0;
  int passes = 4;             // coordinate-descent passes when several groups are fitted
  double log_tolerance = 1e-3;  // golden-section stop: bracket width on log(factor) (0.1 %)
};

// Each row's cross-validation fold from its group and the document it cites (per row, same order):
// its group, with groups that cite the same document joined under the first of them in row order
// ("A (+ 2 sources citing the same document)"); an empty document joins nothing.
std::vector<std::string> cross_validation_folds(const std::vector<std::string>& groups,
                                                const std::vector<std::string>& documents);

// The held-out sets of a cross-validation from each row's fold name (rows' order): one per distinct
// name, in name order, when there are several; else one per row, named by its run id (leave one row
// out); none for a single row. `by_fold` says which.
struct HoldoutFolds {
  bool by_fold = false;
  std::vector<std::pair<std::string, std::vector<std::size_t>>> folds;  // name -> row indices
};
HoldoutFolds holdout_folds(const std::vector<std::string>& fold_of, const std::vector<std::string>& run_ids);

// Throws std::invalid_argument for no rows, a non-positive measured step, or no group to fit.
// progress(done, total) is called after each fit (the full fit, then each fold).
RunFitResult fit_runs(const std::vector<FitRow>& rows, const RunFitOptions& options,
                      const std::function<void(int, int)>& progress = {});

}  // namespace calisim::calibration
