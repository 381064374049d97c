// Helpers shared by the simulator tests: load shipped configs by name.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "simulator/layer_ops.h"
#include "simulator/model_config.h"
#include "simulator/result.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim::testing_support {

ModelConfig shipped_model(const std::string& name);
SystemConfig shipped_system(const std::string& name);
// A strategy from JSON text, validated against `model`.
StrategyConfig strategy_from_json(const std::string& json_text, const ModelConfig& model);

// A GPT-style model as Korthikanti et al. count activations: MHA, LayerNorm, 4h GeLU MLP.
ModelConfig gpt_model(long long h, long long a, long long layers, long long vocab);

// A small MoE (Mixtral-shaped): h 1024, 8 heads, 8 experts of width 512, top-2, SwiGLU, no
// shared expert, 8 layers of which the first 3 are dense (FFN 2048).
ModelConfig small_moe();

// One simulation of `model` with the strategy given as JSON text on the roofline defaults of
// `system`, without the per-op report (what most end-to-end tests need).
SimulationResult simulate_roofline(const ModelConfig& model, const std::string& strategy_json,
                                   const SystemConfig& system);

// The op named `name` in an op list, or nullptr.
const LayerOp* find_op(const std::vector<LayerOp>& ops, const std::string& name);

// Why a strategy given as JSON text is refused for `model`: "field: problem" of the InputError
// that reading and validating it raises, or "(accepted)" when it loads.
std::string strategy_refusal(const ModelConfig& model, const std::string& strategy_json);

// Why a system document is refused: "field: problem" of the InputError that parsing it raises,
// or "(accepted)" when it loads.
std::string system_refusal(const nlohmann::json& doc);

}  // namespace calisim::testing_support
