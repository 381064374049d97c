// `calisim validate --fit-system SYSTEM|all`: fits the roofline defaults of each system to its
// rows (calibration/run_fit.h), reports the errors with the defaults, fitted and held out, and
// writes the fitted system files. `all` fits every system with simulated rows, each on its own
// rows, and adds the error over all of them.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/run_fit.h"

namespace calisim::cli {

struct FitArgs {
  std::vector<std::string> runs_files;  // the --runs files, for the provenance sentence of a written file
  std::string source;
  std::string system;             // a shipped system name, or "all"
  std::string out;                // file (one system) or directory (all); empty = none
  std::vector<std::string> groups;
};

// MAPE, median |error| and bias (mean signed error) of simulated against measured step times.
struct FitStats {
  double mape = 0, median = 0, bias = 0;
};
// Of model_s[i] against measured_s[i] (same length; zeros for none).
FitStats step_errors(const std::vector<double>& measured_s, const std::vector<double>& model_s);
// {"mape", "median", "bias"}.
nlohmann::json stats_json(const FitStats& s);

struct SystemFit {
  std::string system;
  calibration::RunFitResult result;
  FitStats before, fitted, held_out;
  std::vector<std::string> at_cap;  // efficiencies the factors put at the whole peak (calibration::efficiencies_at_cap)
  std::string written;
};

struct FitReport {
  std::vector<SystemFit> systems;    // in the order their first row appeared
  FitStats before, fitted, held_out;  // over every fitted row
  std::size_t rows = 0;
};

// rows: each simulated row's mapped system name and what fitting needs. Throws InputError for an
// unknown group, no row of the system, or a file that cannot be written.
FitReport run_fits(const FitArgs& a, const std::vector<std::pair<std::string, calibration::FitRow>>& rows);
nlohmann::json fit_json(const FitArgs& a, const FitReport& r);
std::string fit_text(const FitArgs& a, const FitReport& r);
// The same tables as fit_text for the HTML report (text escaped).
std::string fit_html(const FitArgs& a, const FitReport& r);

}  // namespace calisim::cli
