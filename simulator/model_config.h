// Model configuration: the architecture of a decoder-only transformer.
//
// Field names follow SimuMax's model files (hidden_size, head_num, kv_head_num, head_size,
// intermediate_size, layer_num, vocab_size, use_swiglu, expert_num, topk, ...) so users can bring
// the files they already have; fields that SimuMax lacks but Megatron has (norm type, tied
// embeddings, biases, learned position embeddings) use Megatron's names. docs/configs.md
// documents every field with unit and default.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace calisim {

enum class NormType : std::uint8_t { rmsnorm, layernorm };
enum class AttentionType : std::uint8_t { mha, gqa, mla };
enum class PositionEmbedding : std::uint8_t { rope, learned_absolute };

struct ModelConfig {
  std::string model_name;
  bool is_moe = false;                 // model_type == "moe"
  std::int64_t hidden_size = 0;        // h
  std::int64_t head_num = 0;           // a
  std::int64_t kv_head_num = 0;        // g (== a for MHA)
  std::int64_t head_size = 0;          // d
  std::int64_t intermediate_size = 0;  // f, dense FFN width (per gate/up branch with SwiGLU)
  std::int64_t layer_num = 0;          // L
  std::int64_t vocab_size = 0;         // V before Megatron's padding
  std::int64_t make_vocab_size_divisible_by = 128;
  bool use_swiglu = false;             // SwiGLU (gate+up) instead of GeLU
  AttentionType attention_type = AttentionType::mha;
  NormType norm_type = NormType::rmsnorm;
  PositionEmbedding position_embedding_type = PositionEmbedding::rope;
  std::int64_t max_position_embeddings = 0;  // learned positions only; 0 = seq_len
  bool untie_embeddings_and_output_weights = true;
  bool add_bias_linear = false;

  // Sliding-window attention (Megatron --window-size W,0 with --window-attn-skip-freq; GPT-OSS):
  // in a windowed layer the query at position i attends keys i-W..i (TransformerEngine's
  // window_size (W, 0): W earlier tokens and itself), elsewhere the whole causal prefix.
  // 0 = every layer attends to the whole causal prefix.
  std::int64_t attention_window_tokens = 0;
  // window_layers[l]: layer l (0-based) is windowed. layer_num entries when the window is set,
  // empty otherwise (the loader fills it from window_attn_skip_freq or attention_layer_types).
  std::vector<bool> window_layers;
  // Attention sinks (Megatron softmax_type "learnable", GPT-OSS): one learned logit per head in
  // every softmax denominator. a·(1) parameters and O(s·a) extra work: nothing a cost model sees
  // while the fused kernel supports it (docs/simulator.md "Sliding-window attention and sinks").
  bool attention_sinks = false;

  // Windowed layers among layers [first, first + count).
  std::int64_t windowed_layers_in(std::int64_t first, std::int64_t count) const {
    std::int64_t n = 0;
    for (std::int64_t l = first; l < first + count && l < static_cast<std::int64_t>(window_layers.size()); ++l) {
      n += window_layers[static_cast<std::size_t>(l)] ? 1 : 0;
    }
    return attention_window_tokens > 0 ? n : 0;
  }

  // MoE (model_type "moe"): routed experts, top-k, shared experts, leading dense layers, capacity.
  std::int64_t expert_num = 1;
  std::int64_t topk = 0;
  std::int64_t moe_ffn_hidden_size = 0;
  std::int64_t moe_shared_expert_intermediate_size = 0;
  std::int64_t dense_layers = 0;
  double capacity = 1.0;
  bool moe_pad_expert_input_to_capacity = false;

  // MLA (attention_type "mla").
  std::int64_t q_lora_rank = 0;        // 0 = no q compression
  std::int64_t kv_lora_rank = 0;
  std::int64_t qk_head_dim = 0;        // no-rope part of the q/k head
  std::int64_t qk_pos_emb_head_dim = 0;
  std::int64_t v_head_dim = 0;

  // Multi-token prediction (DeepSeek-V3; Megatron's --mtp-num-layers): D extra prediction depths on
  // the last pipeline stage, each = embedding of the shifted tokens (shared weights), two norms,
  // a 2h→h projection, one transformer layer of the model's kind, a norm and the shared LM head
  // with its own cross-entropy. 0 = off.
  std::int64_t mtp_num_layers = 0;
  // Whether some layers are MoE layers (those past dense_layers) and some dense ones.
  bool has_moe_layers() const { return is_moe && dense_layers < layer_num; }
  bool has_dense_layers() const { return !is_moe || dense_layers > 0; }
  // The MTP transformer layer is a MoE layer when the model's layers past dense_layers are MoE.
  bool mtp_layer_is_moe() const { return has_moe_layers(); }

  // Vocabulary after Megatron's padding to a multiple of make_vocab_size_divisible_by * tp.
  std::int64_t padded_vocab(int tp) const {
    const std::int64_t mult = make_vocab_size_divisible_by * tp;
    return (vocab_size + mult - 1) / mult * mult;
  }
};

}  // namespace calisim
