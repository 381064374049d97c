// Parameter counts and model FLOPs of a model, independent of any parallel layout.
//
// Conventions (MODELING.md §5): model_flops_per_token = 6 × (matmul parameters touched per token,
// LM head included, embedding lookup excluded; MoE counts only top-k + shared experts)
// + attention 6·L·s·a·(d_qk + d_v) (non-causal, Megatron's legacy count, = 12·L·s·a·d when
// d_qk = d_v); the causal variant halves the attention term. A sliding-window layer
// (model_config.h) counts 6·a·(d_qk + d_v)·2·P/s per token with P its unmasked query-key pairs
// (attention_shape.h window_mask_pairs), so its causal-style count is 6·a·(d_qk + d_v)·P/s.
#pragma once

#include <cstdint>

#include "simulator/model_config.h"

namespace calisim {

struct LayerParams {
  double attention = 0;   // QKV/out projections (MLA: down/up projections), biases, q/kv norms
  double mlp = 0;         // dense MLP, or routed experts (all) + shared experts + router
  double mlp_active = 0;  // parameters touched per token (top-k experts)
  double norms = 0;       // the two per-layer norms
  double matmul_active = 0;  // linear-layer weights touched per token (no biases, no norms): the 6N "N"
  double total() const { return attention + mlp + norms; }
  double active() const { return attention + mlp_active + norms; }
};

struct ModelStats {
  double embedding_params = 0;  // word (+ learned position) embeddings, unpadded vocab
  double output_params = 0;     // LM head (0 when tied to the embedding)
  double final_norm_params = 0;
  double dense_layer_params = 0;   // one dense layer
  double moe_layer_params = 0;     // one MoE layer (0 for dense models)
  double total_params = 0;
  double active_params = 0;        // touched per token
  double matmul_params_per_token = 0;  // the "N" of 6·N: linear layers touched, LM head included
  double model_flops_per_token = 0;         // 6N + non-causal attention
  double model_flops_per_token_causal = 0;  // 6N + causal attention
  double flops_6n_per_token = 0;            // 6N alone
  // Multi-token prediction (mtp_num_layers = D > 0), included in total_params / active_params but
  // not in the model-FLOP counts above (Megatron's MFU convention leaves MTP out):
  double mtp_depth_params = 0;        // one depth: eh_proj 2h·h + 3 norms + one layer (embedding, head shared)
  double mtp_params = 0;              // D depths
  double mtp_active_params = 0;       // D depths, touched per token
  double mtp_flops_per_token = 0;     // D·(6·(layer matmuls + 2h·h + V·h) + 6·s·a·(d_qk + d_v)), executed work
};

LayerParams dense_layer_params(const ModelConfig& m);
// One routed expert's MLP; the shared expert(s) together; MLA's TP-replicated part (q/kv down
// projections and the compression norms; 0 for MHA/GQA).
double routed_expert_params(const ModelConfig& m);
double shared_expert_params(const ModelConfig& m);
double mla_replicated_params(const ModelConfig& m);
LayerParams moe_layer_params(const ModelConfig& m);
// One MTP depth: the projection 2h→h and the enorm / hnorm / final norm (attention = 0) plus one
// transformer layer of the model's kind (mtp_layer_is_moe); embedding and LM head are shared.
LayerParams mtp_depth_params(const ModelConfig& m);
// seq_len enters through the attention term only.
ModelStats model_stats(const ModelConfig& m, std::int64_t seq_len);

}  // namespace calisim
