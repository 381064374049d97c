// Which part of the simulated step the measured runs say is mispriced (`calisim validate
// --components`).
//
// A simulated step is a sum of parts on its critical stage (simulator/result.h): kernel time, exposed
// communication of the model-parallel groups, exposed data-parallel communication, pipeline bubble,
// and the rest (optimizer step, host dispatch idle, stragglers, offload). If one part is mispriced
// the rows' errors follow that part's share of each row; so the measured step times are modelled as
//
//   measured_i ≈ Σ_k m_k · part_k(i)
//
// with one non-negative multiplier m_k per part, chosen to minimise Σ_i ((model_i − measured_i) /
// measured_i)² (relative least squares: every row weighs the same whatever its step time). m_k = 1
// says the part is priced right on these rows, 1.2 that the runs spend 20 % more there, 0 that the
// rows fit better without it. Exact non-negative least squares: every subset of the parts the rows
// contain is solved unconstrained (Eigen, column-pivoting QR) and the best solution with no
// negative multiplier kept. A part no row has (all zeros: no pipeline in these rows), or one the
// caller keeps as simulated, is not fitted and keeps 1.
//
// The multipliers explain the rows they saw, so they are cross-validated as `--fit-system` is
// (calibration/run_fit.h): each fold (a source; sources citing one document joined) is predicted
// with the multipliers fitted on the other folds; with one fold, each row by the other rows. A
// part that only lowers the in-sample error and not the held-out one is not supported by the rows.
// Pure: no I/O.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "simulator/result.h"

namespace calisim::calibration {

enum class StepComponent { compute, attention, model_parallel_comm, data_parallel_comm, bubble, other };
inline constexpr int kStepComponents = 6;
// "compute", "attention kernels", "model-parallel comm", "data-parallel comm", "bubble", "other".
const char* to_string(StepComponent c);
// The JSON name: "compute", "attention", "model_parallel_comm", "data_parallel_comm", "bubble", "other".
const char* json_name(StepComponent c);

using StepParts = std::array<double, kStepComponents>;

// A simulated step's parts, seconds on its critical stage:
//   compute             compute_s + recompute_s, less the attention core's kernels
//   attention           the attention core's kernels (SimulationResult::attention_kernel_s)
//   model_parallel_comm exposed TP + CP + EP + PP communication
//   data_parallel_comm  exposed DP communication (gradient reduction, parameter gathers, ZeRO)
//   bubble              pipeline bubble
//   other               optimizer_s + host_exposed_s + straggler_s + offload_exposed_s
StepParts step_parts(const SimulationResult& r);

struct ComponentRow {
  std::string run_id;
  std::string fold;     // cross-validation fold (calibration::cross_validation_folds)
  double measured_s = 0;
  StepParts parts_s{};
};

// Attention is a refinement of compute: unless its own multiplier is fitted, the attention kernels
// take compute's (attention_tied; all kernels one part, as before attention was a part of its own).
struct ComponentMultipliers {
  StepParts value{1, 1, 1, 1, 1, 1};
  std::array<bool, kStepComponents> fitted{};  // false: not asked for, or no row has it (value stays 1)
  bool attention_tied = false;  // compute fitted, attention not: attention's value is compute's
};

struct ComponentFit {
  ComponentMultipliers multipliers;   // fitted on every row
  // With select_parts: the parts fitted (a subset of those asked for) were chosen by cross-validation
  // — for `multipliers` over every fold, for each fold's multipliers over the other folds only.
  bool selected = false;
  StepParts share{};                  // each part's share of the rows' summed simulated time
  bool by_fold = true;                // cross-validated by fold (false: leave one row out)
  std::vector<std::string> folds;     // what each cross-validation fold leaves out
  std::vector<ComponentMultipliers> held_out;  // the multipliers of each fold, same order
  std::vector<std::vector<std::size_t>> fold_rows;  // the rows each fold holds out (indices), same order
  std::vector<double> simulated_s, fitted_s, held_out_s;  // per row, rows' order
};

// "compute", "attention", "model_parallel_comm", "data_parallel_comm", "bubble", "other" (json_name);
// throws std::invalid_argument naming the accepted words.
StepComponent parse_step_component(const std::string& word);

// `fit`: the parts whose multiplier is fitted; the others keep 1 (priced as simulated) and are
// marked not fitted (attention, when compute is fitted: tied to compute).
// `select_parts`: instead of fitting every part of `fit`, choose the subset of `fit` (the empty one,
// all multipliers 1, included) whose multipliers predict held-out rows best — mean |relative
// error| of a cross-validation over the folds of the rows it may see: each fold's multipliers
// are chosen and fitted on the other folds only (nested cross-validation: a fold's own rows never
// choose its parts), the multipliers over every row by the cross-validation over every fold. More
// parts always fit the rows seen better; this keeps a part only where the held-out rows agree.
// Throws std::invalid_argument for no rows, a non-positive measured step, rows whose parts are all
// zero, or no part to fit.
ComponentFit fit_components(const std::vector<ComponentRow>& rows,
                            const std::array<bool, kStepComponents>& fit = {true, true, true, true, true, true},
                            bool select_parts = false);

}  // namespace calisim::calibration
