// Megatron's explicit pipeline layout (strategy.pipeline_layout): parsing, validation against the
// model and the pipeline, layer placement and equivalence with the uneven-split fields.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <numeric>
#include <stdexcept>
#include <string>

#include "core/error.h"
#include "simulator/layer_placement.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::simulate_roofline;
using testing_support::strategy_from_json;

std::vector<int> decoders(const std::vector<LayoutStage>& stages) {
  std::vector<int> out;
  for (const LayoutStage& s : stages) out.push_back(s.decoder);
  return out;
}

// Megatron's documented example (docs "Custom Pipeline Model Parallel Layout"): DeepSeek-V3 over
// pp 16 · vpp 2 is "Et*3|(tt|)*29,m|L": the embedding and 3 layers, 29 stages of 2, the MTP stage,
// the loss stage.
TEST(PipelineLayout, ParsesMegatronsSyntax) {
  const auto stages = parse_pipeline_layout("Et*3|(tt|)*29,m|L");
  ASSERT_EQ(stages.size(), 32u);
  EXPECT_EQ(stages[0].embedding, 1);
  EXPECT_EQ(stages[0].decoder, 3);
  for (int j = 1; j <= 29; ++j) EXPECT_EQ(stages[j].decoder, 2) << j;
  EXPECT_EQ(stages[30].text, "m");
  EXPECT_EQ(stages[31].text, "L");
  const auto d = decoders(stages);
  EXPECT_EQ(std::accumulate(d.begin(), d.end(), 0), 61);
  // Its MTP stage (rank 14) is not the loss's (rank 15): Megatron's standalone MTP, not modelled.
  EXPECT_NE(check_pipeline_layout(stages, 16, 2, 61, 1).find("not modelled"), std::string::npos);
  EXPECT_EQ(check_pipeline_layout(parse_pipeline_layout("Et*3|(tt|)*29,|mL"), 16, 2, 61, 1), "");
  // "x*n" repeats one character, groups repeat with their '|', commas are cosmetic.
  EXPECT_EQ(decoders(parse_pipeline_layout("Et*4|(t*4|)*2,t,L")), (std::vector<int>{4, 4, 4, 1}));
  EXPECT_EQ(parse_pipeline_layout("E|t|tL").size(), 3u);
}

TEST(PipelineLayout, MalformedStringsSayWhat) {
  const auto message = [](const std::string& text) {
    try {
      parse_pipeline_layout(text);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(message("Ett|tXL").find("invalid layer character 'X' in stage 1"), std::string::npos);
  EXPECT_NE(message("E(tt|*3L").find("'(' without a matching ')'"), std::string::npos);
  EXPECT_NE(message("Ett)|L").find("')' without a matching '('"), std::string::npos);
  EXPECT_NE(message("E(tt|)L").find("must be followed by '*n'"), std::string::npos);
  EXPECT_NE(message("Et*|L").find("expected a repeat count"), std::string::npos);
  EXPECT_NE(message("*3tL").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(message("Et*99999999999|L").find("too large"), std::string::npos);
  EXPECT_NE(message("E(t*2)*900000|L").find("more than"), std::string::npos);
  EXPECT_NE(message("").find("empty"), std::string::npos);
}

TEST(PipelineLayout, ChecksAsMegatronDoes) {
  const auto check = [](const std::string& text, int p, int v, int layers, int mtp) {
    return check_pipeline_layout(parse_pipeline_layout(text), p, v, layers, mtp);
  };
  EXPECT_EQ(check("Ett|ttL", 2, 1, 4, 0), "");
  EXPECT_NE(check("Ett|ttL", 2, 2, 4, 0).find("expected pp_size * interleaving_size = 2 * 2 = 4"), std::string::npos);
  EXPECT_NE(check("Ett|ttLE", 2, 1, 4, 0).find("exactly one embedding"), std::string::npos);
  EXPECT_NE(check("Ett|tt", 2, 1, 4, 0).find("exactly one loss"), std::string::npos);
  EXPECT_NE(check("tEt|ttL", 2, 1, 4, 0).find("first layer must be the embedding"), std::string::npos);
  EXPECT_NE(check("Ett|tLt", 2, 1, 4, 0).find("last layer must be the loss"), std::string::npos);
  EXPECT_NE(check("|EttttL", 2, 1, 4, 0).find("first virtual stage"), std::string::npos);
  EXPECT_NE(check("Ett|tL", 2, 1, 4, 0).find("has 3 transformer layers 't'; the model's layer_num is 4"),
            std::string::npos);
  EXPECT_NE(check("Ett|ttL", 2, 1, 4, 1).find("has 0 MTP layers"), std::string::npos);
  EXPECT_NE(check("Ett|tmtL", 2, 1, 4, 1).find("before MTP"), std::string::npos);
  EXPECT_NE(check("Ett|t|tm|mL", 2, 2, 4, 2).find("same virtual stage"), std::string::npos);
  EXPECT_NE(check("Ett|ttm||L", 2, 2, 4, 1).find("last model chunk"), std::string::npos);
  // The MTP on rank 0's last chunk, the loss on rank 1's (Megatron's standalone MTP): not modelled.
  EXPECT_NE(check("Et|tt|tm|L", 2, 2, 4, 1).find("not modelled"), std::string::npos);
  EXPECT_EQ(check("Et|t|t|tmL", 2, 2, 4, 1), "");
}

// DeepSeek-V3 on 1024 GPUs (tp 2, ep 64) with the pipeline split given by `split`.
std::string dsv3_strategy(int pp, int v, const std::string& split) {
  return fmt::format(R"({{"seq_len": 4096, "micro_batch_size": 1, "global_batch_size": 2048, "world_size": 1024,
    "tp_size": 2, "pp_size": {}, "interleaving_size": {}, "ep_size": 64, "etp_size": 1, {}}})",
                     pp, v, split);
}

// Megatron-Bridge's DeepSeek-V3 (pp 8, vpp 4) layout: 61 layers over 32 virtual stages, the first
// with the embedding and one layer, the last with the MTP depth and the loss and no decoder layer.
TEST(PipelineLayout, PlacesSixtyOneLayers) {
  ModelConfig model = shipped_model("deepseek-v3");
  model.mtp_num_layers = 1;
  const StrategyConfig st = strategy_from_json(dsv3_strategy(8, 4, R"("pipeline_layout": "Et|(tt|)*30mL")"), model);
  ASSERT_EQ(st.layers_per_chunk.size(), 32u);
  EXPECT_EQ(st.layers_per_chunk.front(), 1);
  EXPECT_EQ(st.layers_per_chunk.back(), 0);
  const std::vector<ChunkLayers> chunks = chunk_layers(model, st);
  // DeepSeek-V3's 3 dense layers: layer 0 on stage 0, layers 1-2 on stage 1; stage 2 starts the MoE.
  EXPECT_EQ(chunks[0].dense, 1);
  EXPECT_EQ(chunks[1].dense, 2);
  EXPECT_EQ(chunks[1].moe, 0);
  EXPECT_EQ(chunks[2].first_layer, 3);
  EXPECT_EQ(chunks[2].moe, 2);
  EXPECT_EQ(chunks[31].first_layer, 61);
  const SimulationResult r = simulate_roofline(model, dsv3_strategy(8, 4, R"("pipeline_layout": "Et|(tt|)*30mL")"),
                                               shipped_system("h100-sxm"));
  ASSERT_EQ(r.stages.size(), 8u);
  EXPECT_EQ(r.stages[0].layers, 1 + 2 * 3);  // virtual stages 0, 8, 16, 24
  EXPECT_EQ(r.stages[7].layers, 2 * 3);      // 7, 15, 23 and the MTP/loss stage 31
  EXPECT_EQ(r.stages[7].mtp_layers, 1);
  int total = 0;
  for (const auto& s : r.stages) total += s.layers;
  EXPECT_EQ(total, 61);
}

// A layout that spells out an uneven split gives the same simulation as the split's fields.
TEST(PipelineLayout, SameAsTheUnevenSplitItSpells) {
  const ModelConfig model = shipped_model("deepseek-v3");
  const SystemConfig sys = shipped_system("h100-sxm");
  const SimulationResult fields = simulate_roofline(
      model, dsv3_strategy(16, 1, R"("num_layers_in_first_pipeline_stage": 4, "num_layers_in_last_pipeline_stage": 1)"),
      sys);
  const SimulationResult layout = simulate_roofline(model, dsv3_strategy(16, 1, R"("pipeline_layout": "Et*4|(t*4|)*14tL")"), sys);
  EXPECT_DOUBLE_EQ(layout.duration_time_per_iter_s, fields.duration_time_per_iter_s);
  ASSERT_EQ(layout.stages.size(), fields.stages.size());
  for (std::size_t r = 0; r < layout.stages.size(); ++r) {
    EXPECT_EQ(layout.stages[r].layers, fields.stages[r].layers);
    EXPECT_DOUBLE_EQ(layout.stages[r].peak_mem_bytes, fields.stages[r].peak_mem_bytes);
  }
}

TEST(PipelineLayout, LoaderErrorsNameTheField) {
  const ModelConfig model = shipped_model("deepseek-v3");
  const auto error = [&](const std::string& json) {
    try {
      strategy_from_json(json, model);
    } catch (const InputError& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  EXPECT_NE(error(dsv3_strategy(16, 1, R"("pipeline_layout": "Et*4|(t*4|)*13tL")")).find("pipeline_layout"),
            std::string::npos);
  EXPECT_NE(error(dsv3_strategy(16, 1, R"("pipeline_layout": "Et*4|(t*4|)*14tmL")"))
                .find("has 1 MTP layers 'm'; the model's mtp_num_layers is 0"),
            std::string::npos);
  EXPECT_NE(error(dsv3_strategy(16, 1, R"("pipeline_layout": "Et*4|(t*4|)*14tQL")")).find("invalid layer character"),
            std::string::npos);
  EXPECT_NE(error(dsv3_strategy(16, 1, R"("pipeline_layout": "Et*4|(t*4|)*14tL",
                                          "num_layers_in_first_pipeline_stage": 4)"))
                .find("cannot be combined"),
            std::string::npos);
}

}  // namespace
}  // namespace calisim
