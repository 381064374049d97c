// Reading and validating model, strategy and system configs.
//
// Contract: every function either returns a fully valid config or throws InputError naming the
// file, the JSON path and what was expected. parse_* check one file; validate_layout checks what
// needs several (divisibility of heads by tp, layers by pp·v, batch arithmetic) and fills the
// strategy's derived fields. Pure functions (read_json_file, core/json_file.h, reads the files).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "core/json_file.h"  // read_json_file, used with the parsers below
#include "simulator/model_config.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

ModelConfig parse_model(const nlohmann::json& doc, const std::string& file, std::vector<std::string>* not_modeled);
// Parses fields only; derived fields are filled by validate_layout.
StrategyConfig parse_strategy(const nlohmann::json& doc, const std::string& file);
SystemConfig parse_system(const nlohmann::json& doc, const std::string& file);

// Cross-file checks; fills strategy.dp_size, micro_batch_num / global_batch_size,
// sequence_parallel and layers_per_chunk. strategy_file names the file in messages.
void validate_layout(const ModelConfig& model, StrategyConfig& strategy, const std::string& strategy_file,
                     const std::string& model_file);

// Applies one "--set section.key.sub=value" override to the matching document. section is
// model, strategy or system; value is parsed as JSON when it is valid JSON, else taken as a string.
// Throws InputError("<--set>", ...) on a malformed override or unknown section.
void apply_override(const std::string& assignment, nlohmann::json& model, nlohmann::json& strategy,
                    nlohmann::json& system);

}  // namespace calisim
