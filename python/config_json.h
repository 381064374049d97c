// The parsed form of each config as JSON: every field of the C++ struct, defaults filled in, so
// that Python's config objects can answer for fields their file does not set. Names are the
// config-file names where one exists (docs/configs.md); enums are their config-file strings.
#pragma once

#include <nlohmann/json.hpp>

#include "simulator/model_config.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim::python {

nlohmann::json model_json(const ModelConfig& m);
// with_derived adds what validate_layout fills (dp_size, edp_size, sequence_parallel,
// layers_per_chunk, micro_batch_num / global_batch_size); only meaningful after it ran.
nlohmann::json strategy_json(const StrategyConfig& s, bool with_derived);
nlohmann::json system_json(const SystemConfig& s);

}  // namespace calisim::python
