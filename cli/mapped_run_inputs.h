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

namespace calisim::cli {

calibration::MappedRun map_with_overrides(const calibration::MeasuredRun& run, const std::vector<std::string>& overrides);

nlohmann::json mapped_system_doc(const calibration::MappedRun& m, const std::vector<std::string>& overrides);

}  // namespace calisim::cli
