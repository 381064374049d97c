// Which layers each model chunk holds (MODELING.md §3, Megatron's layer offsets).
//
// Virtual stage j = chunk·p + rank holds layers_per_chunk[j] consecutive layers; in Megatron's
// numbering the virtual stages follow the model order (stage j's first layer is the sum of the
// layers of stages 0..j−1, which is get_transformer_layer_offset for even and uneven splits).
// A MoE model's first `dense_layers` layers keep a dense MLP, so they land on the first chunks.
#pragma once

#include <vector>

#include "simulator/model_config.h"
#include "simulator/strategy_config.h"

namespace calisim {

struct ChunkLayers {
  int first_layer = 0;  // global index of the chunk's first layer
  int dense = 0;        // dense layers (all of them for a dense model)
  int moe = 0;          // MoE layers
  int total() const { return dense + moe; }
};

// One entry per virtual stage, from strategy.layers_per_chunk (filled by validate_layout).
std::vector<ChunkLayers> chunk_layers(const ModelConfig& model, const StrategyConfig& strategy);

}  // namespace calisim
