#include "simulator/model_stats.h"

#include "simulator/attention_shape.h"

namespace calisim {
namespace {

// Linear weights only (what GEMMs multiply), without biases.
double attention_matmul(const ModelConfig& m) {
  const double h = static_cast<double>(m.hidden_size);
  const double a = static_cast<double>(m.head_num);
  if (m.attention_type == AttentionType::mla) {
    const double dqk = static_cast<double>(m.qk_head_dim), dr = static_cast<double>(m.qk_pos_emb_head_dim);
    const double dv = static_cast<double>(m.v_head_dim);
    const double q = m.q_lora_rank > 0 ? h * m.q_lora_rank + static_cast<double>(m.q_lora_rank) * a * (dqk + dr)
                                       : h * a * (dqk + dr);
    return q + h * (m.kv_lora_rank + dr) + static_cast<double>(m.kv_lora_rank) * a * (dqk + dv) + a * dv * h;
  }
  const double d = static_cast<double>(m.head_size);
  return h * (a + 2.0 * m.kv_head_num) * d + a * d * h;
}

double mlp_matmul(const ModelConfig& m, double ffn) {
  return (m.use_swiglu ? 3.0 : 2.0) * static_cast<double>(m.hidden_size) * ffn;
}

double attention_params(const ModelConfig& m) {
  double p = attention_matmul(m);
  if (m.attention_type == AttentionType::mla) {
    p += static_cast<double>(m.q_lora_rank) + m.kv_lora_rank;  // q and kv compression norms
  } else if (m.add_bias_linear) {
    p += (static_cast<double>(m.head_num) + 2.0 * m.kv_head_num) * m.head_size + m.hidden_size;
  }
  return p;
}

double mlp_params(const ModelConfig& m, double ffn) {
  double p = mlp_matmul(m, ffn);
  if (m.add_bias_linear) p += (m.use_swiglu ? 2.0 * ffn : ffn) + m.hidden_size;
  return p;
}

double norm_params(const ModelConfig& m) {
  // LayerNorm has a weight and a bias; RMSNorm only a weight.
  return (m.norm_type == NormType::layernorm ? 2.0 : 1.0) * static_cast<double>(m.hidden_size);
}

}  // namespace

double routed_expert_params(const ModelConfig& m) {
  return mlp_params(m, static_cast<double>(m.moe_ffn_hidden_size));
}

double shared_expert_params(const ModelConfig& m) {
  return m.moe_shared_expert_intermediate_size > 0
             ? mlp_params(m, static_cast<double>(m.moe_shared_expert_intermediate_size))
             : 0.0;
}

double mla_replicated_params(const ModelConfig& m) {
  if (m.attention_type != AttentionType::mla) return 0;
  const double h = static_cast<double>(m.hidden_size);
  return h * m.q_lora_rank + h * (m.kv_lora_rank + m.qk_pos_emb_head_dim) + static_cast<double>(m.q_lora_rank) +
         m.kv_lora_rank;
}

LayerParams dense_layer_params(const ModelConfig& m) {
  LayerParams p;
  p.attention = attention_params(m);
  p.mlp = mlp_params(m, static_cast<double>(m.intermediate_size));
  p.mlp_active = p.mlp;
  p.norms = 2.0 * norm_params(m);
  p.matmul_active = attention_matmul(m) + mlp_matmul(m, static_cast<double>(m.intermediate_size));
  return p;
}

LayerParams moe_layer_params(const ModelConfig& m) {
  LayerParams p;
  p.attention = attention_params(m);
  const double expert = routed_expert_params(m);
  const double shared = shared_expert_params(m);
  const double router = static_cast<double>(m.hidden_size) * m.expert_num;
  p.mlp = expert * m.expert_num + shared + router;
  p.mlp_active = expert * m.topk + shared + router;
  p.norms = 2.0 * norm_params(m);
  p.matmul_active = attention_matmul(m) + router +
                    mlp_matmul(m, static_cast<double>(m.moe_ffn_hidden_size)) * m.topk +
                    mlp_matmul(m, static_cast<double>(m.moe_shared_expert_intermediate_size));
  return p;
}

LayerParams mtp_depth_params(const ModelConfig& m) {
  LayerParams p = m.mtp_layer_is_moe() ? moe_layer_params(m) : dense_layer_params(m);
  const double h = static_cast<double>(m.hidden_size);
  const double proj = 2.0 * h * h;  // eh_proj: [2h] → [h], no bias (Megatron builds it with bias=False)
  p.attention += proj;
  p.matmul_active += proj;
  p.norms += 3.0 * norm_params(m);  // enorm, hnorm, the depth's final norm
  return p;
}

ModelStats model_stats(const ModelConfig& m, std::int64_t seq_len) {
  ModelStats s;
  const double h = static_cast<double>(m.hidden_size);
  const double V = static_cast<double>(m.vocab_size);
  s.embedding_params = V * h;
  if (m.position_embedding_type == PositionEmbedding::learned_absolute) {
    s.embedding_params += static_cast<double>(m.max_position_embeddings > 0 ? m.max_position_embeddings : seq_len) * h;
  }
  s.output_params = m.untie_embeddings_and_output_weights ? V * h : 0.0;
  s.final_norm_params = norm_params(m);

  const LayerParams dense = dense_layer_params(m);
  const std::int64_t n_moe = m.is_moe ? m.layer_num - m.dense_layers : 0;
  const std::int64_t n_dense = m.layer_num - n_moe;
  s.dense_layer_params = dense.total();
  double layers_total = dense.total() * n_dense;
  double layers_active = dense.active() * n_dense;
  double layers_matmul = dense.matmul_active * n_dense;
  if (n_moe > 0) {
    const LayerParams moe = moe_layer_params(m);
    s.moe_layer_params = moe.total();
    layers_total += moe.total() * n_moe;
    layers_active += moe.active() * n_moe;
    layers_matmul += moe.matmul_active * n_moe;
  }
  s.total_params = s.embedding_params + s.output_params + s.final_norm_params + layers_total;
  s.active_params = s.embedding_params + s.output_params + s.final_norm_params + layers_active;
  // The LM head GEMM runs whether or not its weight is tied to the embedding.
  s.matmul_params_per_token = layers_matmul + V * h;
  s.flops_6n_per_token = 6.0 * s.matmul_params_per_token;

  double dqk = static_cast<double>(m.head_size), dv = dqk;
  if (m.attention_type == AttentionType::mla) {
    dqk = static_cast<double>(m.qk_head_dim + m.qk_pos_emb_head_dim);
    dv = static_cast<double>(m.v_head_dim);
  }
  // Per layer, non-causal convention. A windowed layer counts twice its unmasked query-key pairs
  // per token (Megatron-Bridge's GPT-OSS count, window_mask_pairs), so that halving gives the
  // causal-style count as for full layers.
  const double attn_full_layer = 6.0 * static_cast<double>(seq_len) * m.head_num * (dqk + dv);
  const std::int64_t n_window = m.windowed_layers_in(0, m.layer_num);
  const double attn_window_layer =
      n_window > 0 && seq_len > m.attention_window_tokens
          ? 6.0 * m.head_num * (dqk + dv) * 2.0 * window_mask_pairs(seq_len, m.attention_window_tokens) /
                static_cast<double>(seq_len)
          : attn_full_layer;
  const double attn = attn_full_layer * static_cast<double>(m.layer_num - n_window) + attn_window_layer * n_window;
  s.model_flops_per_token = s.flops_6n_per_token + attn;
  s.model_flops_per_token_causal = s.flops_6n_per_token + 0.5 * attn;

  if (m.mtp_num_layers > 0) {
    const double D = static_cast<double>(m.mtp_num_layers);
    const LayerParams mtp = mtp_depth_params(m);
    s.mtp_depth_params = mtp.total();
    s.mtp_params = D * mtp.total();
    s.mtp_active_params = D * mtp.active();
    s.total_params += s.mtp_params;
    s.active_params += s.mtp_active_params;
    // Each depth runs its layer, the projection and the shared LM head over every token; the
    // attention term follows the same (non-causal) convention as model_flops_per_token.
    // (The MTP layer attends fully unless every layer is windowed, as in cost_model.)
    s.mtp_flops_per_token =
        D * (6.0 * (mtp.matmul_active + V * h) + (n_window == m.layer_num ? attn_window_layer : attn_full_layer));
  }
  return s;
}

}  // namespace calisim
