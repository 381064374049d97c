// SimulationResult as one JSON document (the CLI's --json output and the Python API's dict).
// Field names are SimuMax's where they exist; every number carries its unit in the name.
#pragma once

#include <nlohmann/json.hpp>

#include "simulator/result.h"

namespace calisim {

nlohmann::json to_json(const SimulationResult& r);
// The critical stage's step split by where the time goes (compute_s, recompute_s, the exposed
// communication of each group, bubble_s, host_exposed_s, optimizer_s, ...): to_json's "breakdown",
// also what `calisim validate --json` gives each simulated row.
nlohmann::json breakdown_json(const SimulationResult& r);
// Not in the breakdown (whose parts add up to the step): how compute_s + recompute_s splits
// between the attention core's kernels and the rest. to_json's "compute_split", also validate's rows'.
nlohmann::json compute_split_json(const SimulationResult& r);

}  // namespace calisim
