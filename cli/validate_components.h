// `calisim validate --components`: per system, which part of the simulated step the measured rows
// say is mispriced (calibration/step_components.h): the multiplier of each part (compute, exposed
// model-parallel communication, exposed data-parallel communication, bubble, other) that the rows'
// step times want, its share of the simulated time, and the step-time error as simulated, fitted
// and held out by source. Works on any validation, with or without --db.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/step_components.h"
#include "calibration/validation.h"

namespace calisim::cli {

struct ComponentStats {
  double mape = 0, median = 0, bias = 0;
};

struct SystemComponents {
  std::string system;
  std::vector<std::string> run_ids;  // the fitted rows, fit.*_s order
  std::vector<double> measured_s;
  std::vector<std::string> row_folds;
  calibration::ComponentFit fit;
  ComponentStats simulated, fitted, held_out;
};

// rows: every validated row; documents: the document each row cites (same order; "" = none), so
// that sources citing one document are one fold. One entry per system with simulated rows, in the
// order of its first row. `parts`: the parts to fit (json names, calibration/step_components.h;
// empty: all), the others kept as simulated. Throws InputError for an unknown part,
// std::invalid_argument when the sizes differ.
std::vector<SystemComponents> step_components(const std::vector<calibration::RowResult>& rows,
                                              const std::vector<std::string>& documents,
                                              const std::vector<std::string>& parts = {});
nlohmann::json components_json(const std::vector<SystemComponents>& systems);
std::string components_text(const std::vector<SystemComponents>& systems);
// The same tables for the HTML report (text escaped).
std::string components_html(const std::vector<SystemComponents>& systems);

}  // namespace calisim::cli
