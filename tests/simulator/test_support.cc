#include "test_support.h"

#include <algorithm>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace calisim::testing_support {

ModelConfig shipped_model(const std::string& name) {
  const std::string path = std::string(CALISIM_CONFIG_DIR) + "/models/" + name + ".json";
  ModelConfig m = parse_model(read_json_file(path), path, nullptr);
  if (m.model_name.empty()) m.model_name = name;
  return m;
}

SystemConfig shipped_system(const std::string& name) {
  const std::string path = std::string(CALISIM_CONFIG_DIR) + "/systems/" + name + ".json";
  return parse_system(read_json_file(path), path);
}

StrategyConfig strategy_from_json(const std::string& json_text, const ModelConfig& model) {
  StrategyConfig s = parse_strategy(nlohmann::json::parse(json_text), "test-strategy");
  validate_layout(model, s, "test-strategy", "test-model");
  return s;
}

ModelConfig gpt_model(long long h, long long a, long long layers, long long vocab) {
  ModelConfig m;
  m.model_name = "gpt-test";
  m.hidden_size = h;
  m.head_num = a;
  m.kv_head_num = a;
  m.head_size = h / a;
  m.intermediate_size = 4 * h;
  m.layer_num = layers;
  m.vocab_size = vocab;
  m.use_swiglu = false;
  m.norm_type = NormType::layernorm;
  m.position_embedding_type = PositionEmbedding::learned_absolute;
  m.untie_embeddings_and_output_weights = false;
  m.add_bias_linear = true;
  return m;
}

ModelConfig small_moe() {
  ModelConfig m = shipped_model("mixtral-8x7b");
  m.hidden_size = 1024;
  m.head_num = 8;
  m.kv_head_num = 8;
  m.head_size = 128;
  m.intermediate_size = 2048;
  m.moe_ffn_hidden_size = 512;
  m.expert_num = 8;
  m.topk = 2;
  m.layer_num = 8;
  m.dense_layers = 3;
  return m;
}

SimulationResult simulate_roofline(const ModelConfig& model, const std::string& strategy_json,
                                   const SystemConfig& system) {
  DefaultEfficiencyModel eff(system);
  SimulateOptions o;
  o.details = false;
  return simulate(model, strategy_from_json(strategy_json, model), system, eff, o);
}

const LayerOp* find_op(const std::vector<LayerOp>& ops, const std::string& name) {
  auto it = std::find_if(ops.begin(), ops.end(), [&](const LayerOp& o) { return name == o.name; });
  return it == ops.end() ? nullptr : &*it;
}

std::string strategy_refusal(const ModelConfig& model, const std::string& strategy_json) {
  try {
    strategy_from_json(strategy_json, model);
  } catch (const InputError& e) {
    return e.where() + ": " + e.what();
  }
  return "(accepted)";
}

std::string system_refusal(const nlohmann::json& doc) {
  try {
    parse_system(doc, "test.json");
  } catch (const InputError& e) {
    return e.where() + ": " + e.what();
  }
  return "(accepted)";
}

}  // namespace calisim::testing_support
