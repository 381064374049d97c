// `calisim validate --components`: per system, which part of the simulated step the measured rows
// say is mispriced (calibration/step_components.h): the multiplier of each part (compute, exposed
// model-parallel communication, exposed data-parallel communication, bubble, other) that the rows'
// step times want, its share of the simulated time, and the step-time error as simulated, fitted
// and held out by source. Works on any validation, with or without --db.
#pragma once

#include <array>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/step_components.h"
#include "calibration/validation.h"
#include "cli/validate_fit.h"

namespace calisim::cli {

struct SystemComponents {
  std::string system;
  std::vector<std::string> run_ids;  // the fitted rows, fit.*_s order
  std::vector<double> measured_s;
  std::vector<std::string> row_folds;
  calibration::ComponentFit fit;
  FitStats simulated, fitted, held_out;  // step-time errors (cli/validate_fit.h)
  bool database_priced = false;  // some kernel lookup of its rows came from the --db (not the roofline)
  // Held out by source (fit.by_fold): the step-time errors of each fold's rows (fit.fold_rows)
  // with the multipliers fitted without them (fit.held_out), in fit.folds order — the per-source
  // spread behind `held_out`; empty when held out row by row or not at all.
  std::vector<FitStats> source_held_out;
};

// The parts to fit from their names (json names, calibration/step_components.h; empty: every part);
// InputError naming --components for an unknown one.
std::array<bool, calibration::kStepComponents> component_mask(const std::vector<std::string>& parts);

// rows: every validated row; documents: the document each row cites (same order; "" = none), so
// that sources citing one document are one fold. One entry per system with simulated rows, in the
// order of its first row. `parts`: the parts to fit (json names, calibration/step_components.h;
// empty: all), the others kept as simulated. `select_parts`: per system, only the subset of them
// that cross-validation keeps (calibration::fit_components). Throws InputError for an unknown part,
// std::invalid_argument when the sizes differ.
std::vector<SystemComponents> step_components(const std::vector<calibration::RowResult>& rows,
                                              const std::vector<std::string>& documents,
                                              const std::vector<std::string>& parts = {}, bool select_parts = false);
nlohmann::json components_json(const std::vector<SystemComponents>& systems);
std::string components_text(const std::vector<SystemComponents>& systems);
// The same tables for the HTML report (text escaped).
std::string components_html(const std::vector<SystemComponents>& systems);

// `--components-out DIR` (only with `--components compute [attention]`): for each system,
// DIR/<system>-insitu.json, its shipped file with efficiency.sustained_kernel_speed divided by the
// fitted compute multiplier (kernels that run m times slower in situ than the file, or the
// database, prices them) — and, where attention was fitted apart from compute,
// efficiency.sustained_attention_speed divided by the attention multiplier —, with
// efficiency_db set to `db` where the database priced the system's rows (database_priced), and a
// description sentence saying how it was
// fitted and how well (held out by source). Fills `written` (system -> path). Throws InputError for
// a speed outside (0, 2], no kernel multiplier fitted, or a file that cannot be written; the
// written file must load.
struct ComponentsOutArgs {
  std::vector<std::string> runs_files;
  std::string db, source, dir;
  bool attention_asked = false;  // --components compute attention (for the description's command)
};
std::vector<std::pair<std::string, std::string>> write_insitu_systems(const ComponentsOutArgs& a,
                                                                      const std::vector<SystemComponents>& systems);

}  // namespace calisim::cli
