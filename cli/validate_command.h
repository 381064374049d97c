// `calisim validate` as a function: the same run the command does, returned as the JSON document
// `calisim validate --json` prints (the Python API's calisim.validate uses it).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/validation.h"

namespace calisim::cli {

struct ValidateArgs {
  // --runs: one or more measured-runs CSVs, read in order; a run_id may appear in only one of them.
  std::vector<std::string> runs;
  std::string db, report, source, dump_dir;
  std::vector<std::string> overrides;  // --set section.key=value, applied to every mapped row
  bool json = false;
  // --fit-system: fit that system's default efficiencies to its rows (calibration/run_fit.h).
  std::string fit_system, fit_out;
  std::vector<std::string> fit_groups{"compute"};
  // --components: per system, the multiplier of each part of the simulated step that the rows want
  // (cli/validate_components.h).
  bool components = false;
  std::vector<std::string> component_parts;  // the parts to fit (empty: every part)
  bool select_parts = false;                  // --select-parts: fit the subset cross-validation keeps
  std::string components_out;                 // --components-out DIR: <system>-insitu.json files
};

// Validates the runs (writing the HTML report, dumped inputs and fitted system files the args ask
// for) and returns the --json document. Throws InputError for bad input (file, line, option).
nlohmann::json validate_document(const ValidateArgs& a);

// The scored rows of the same run (simulated or not, in file order): what `simulate --accuracy`
// compares a simulation with.
std::vector<calibration::RowResult> validated_rows(const ValidateArgs& a);

}  // namespace calisim::cli
