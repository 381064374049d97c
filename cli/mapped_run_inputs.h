// The simulation inputs of one measured run as `calisim validate` builds them, shared by validate
// and `calisim profile plan --runs` (the kernels the rows of a runs file need on one system).
//
// map_with_overrides: calibration::map_run with the shipped models as loader, then every --set
// override that is not system.* applied to the mapped model and strategy (so a --set overrides
// inferred and stated settings alike). Returns the MappedRun (ok false: reason says why); throws
// what map_run throws. mapped_system_doc: the shipped file of the row's mapped system with the
// row's patch and the system.* overrides merged in.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "calibration/measured_runs.h"
#include "calibration/run_mapping.h"
#include "cli/config_catalog.h"

namespace calisim::cli {

calibration::MappedRun map_with_overrides(const calibration::MeasuredRun& run, const std::vector<std::string>& overrides);

nlohmann::json mapped_system_doc(const calibration::MappedRun& m, const std::vector<std::string>& overrides);

// One published run as `calisim simulate --run FILE:ID` takes it: the row ID of the measured-runs
// CSV FILE, mapped as validate maps it, its documents parsed after `overrides` (as --set applies
// them). `system` empty: the row's mapped system with its patch; otherwise that system instead
// (the patch dropped, said in a warning); rc.warnings also carries the row's own warnings, and
// mapped.inferred every setting the mapping inferred. InputError naming the file and the row when
// the row is missing or cannot be simulated (the mapping's reason).
struct RunRowConfigs {
  RunConfigs rc;
  calibration::MeasuredRun run;
  calibration::MappedRun mapped;
  bool system_replaced = false;  // simulated on `system`, not on the row's own
};
RunRowConfigs run_row_configs(const std::string& file_and_id, const std::string& system,
                              const std::vector<std::string>& overrides);

}  // namespace calisim::cli
