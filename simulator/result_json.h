// SimulationResult as one JSON document (the CLI's --json output and the Python API's dict).
// Field names are SimuMax's where they exist; every number carries its unit in the name.
#pragma once

#include <nlohmann/json.hpp>

#include "simulator/result.h"

namespace calisim {

nlohmann::json to_json(const SimulationResult& r);

}  // namespace calisim
