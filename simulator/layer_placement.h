// Which layers each model chunk holds (MODELING.md §3, Megatron's layer offsets), and Megatron's
// explicit pipeline layout (`--pipeline-model-parallel-layout`, JSON strategy.pipeline_layout).
//
// Virtual stage j = chunk·p + rank holds layers_per_chunk[j] consecutive layers; in Megatron's
// numbering the virtual stages follow the model order (stage j's first layer is the sum of the
// layers of stages 0..j−1, which is get_transformer_layer_offset for even and uneven splits, and
// PipelineParallelLayerLayout.get_layer_offset for an explicit layout).
// A MoE model's first `dense_layers` layers keep a dense MLP, so they land on the first chunks.
#pragma once

#include <string>
#include <string_view>
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

// How many of a chunk's dense and MoE layers run their GEMMs in the training dtype although the
// strategy enables FP8 (Megatron --first-last-layers-bf16: global layers [0, start) and
// [layer_num - end, layer_num)). Both 0 when strategy.has_bf16_layers() is false.
struct ChunkPrecision {
  int dense_bf16 = 0;
  int moe_bf16 = 0;
};
ChunkPrecision chunk_precision(const ChunkLayers& chunk, const ModelConfig& model, const StrategyConfig& strategy);

// The chunk's first `recomputed` layers (in layer order: dense before MoE, as the model holds
// them) split by kind and precision; the four counts sum to min(recomputed, chunk.total()).
struct LayerCounts {
  int dense = 0, dense_bf16 = 0, moe = 0, moe_bf16 = 0;  // dense / moe: the FP8 ones
};
LayerCounts recomputed_layer_counts(const ChunkLayers& chunk, const ChunkPrecision& precision, int recomputed,
                                    const ModelConfig& model, const StrategyConfig& strategy);

// One virtual stage of a pipeline layout string, in Megatron's characters: E embedding,
// t transformer (decoder) layer, m MTP layer, L loss (LM head and cross-entropy).
struct LayoutStage {
  int decoder = 0;
  int mtp = 0;
  int embedding = 0;
  int loss = 0;
  std::string text;  // the stage's characters after expansion, for messages
};

// Parses Megatron's layout syntax (megatron/core/transformer/pipeline_parallel_layer_layout.py,
// parse_str_to_list): commas are cosmetic, "(...)*n" repeats a group, "x*n" repeats one
// character, '|' separates virtual stages listed in virtual-stage order (index chunk·p + rank).
// Throws std::invalid_argument naming the offending character or repetition.
std::vector<LayoutStage> parse_pipeline_layout(std::string_view text);

// Checks a parsed layout against the model and the pipeline as Megatron's validate_layer_layout
// does (exactly pp·vpp stages here, since calisim takes vpp from interleaving_size; one E, first;
// one L, last; layer_num t; mtp_num_layers m, after every t, together in one rank's last chunk)
// plus calisim's own placement rule: the MTP depths run on the last
// virtual stage, with the loss. Returns "" when valid, else what is wrong.
std::string check_pipeline_layout(const std::vector<LayoutStage>& stages, int pp_size, int interleaving_size,
                                  int layer_num, int mtp_num_layers);

}  // namespace calisim
