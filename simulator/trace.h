// Chrome / Perfetto trace (the "Trace Event Format" JSON) of one simulated iteration: one track
// per pipeline stage with its forward and backward units, then DP communication and the
// optimizer step. Open in ui.perfetto.dev or chrome://tracing.
#pragma once

#include <nlohmann/json.hpp>

#include "simulator/result.h"

namespace calisim {

// Requires a result simulated with SimulateOptions::trace = true.
nlohmann::json chrome_trace(const SimulationResult& r);

}  // namespace calisim
