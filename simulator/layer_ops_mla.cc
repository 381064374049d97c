// Multi-head latent attention (DeepSeek-V2/V3), as Megatron-Core's MLASelfAttention runs it.
//
// Per TP rank, a = heads/t, r = rope dim (qk_pos_emb_head_dim), d_qk = qk_head_dim, d_v = v_head_dim:
//   q_down  [Tsp, h] → q_lora            (weights duplicated over TP, on the SP shard)
//   kv_down [Tsp, h] → kv_lora + r       (duplicated; the r part is the shared RoPE key)
//   q_norm, kv_norm on the compressed tensors
//   all-gather of the compressed [T, q_lora + kv_lora + r] under SP (far smaller than [T, h])
//   q_up    [T, q_lora] → a·(d_qk + r)   (column-parallel; without q_lora: q_proj [T, h] → a·(d_qk + r))
//   kv_up   [T, kv_lora] → a·(d_qk + d_v)
//   RoPE on q's rope part and the shared rope key
//   flash attention with head dims d_qk + r and d_v
//   out_proj [T, a·d_v] → h              (row-parallel)
#include "simulator/op_builders.h"

namespace calisim::ops {

void add_mla_attention(const Dims& d, const ModelConfig& m, const StrategyConfig& st, std::vector<LayerOp>& ops) {
  const std::int64_t a = m.head_num / d.t;
  const std::int64_t r = m.qk_pos_emb_head_dim, dqk = m.qk_head_dim + r, dv = m.v_head_dim;
  const std::int64_t ql = m.q_lora_rank, kvl = m.kv_lora_rank;
  const bool fp8 = d.fp8 != Fp8Recipe::none;
  ops.push_back(norm(d, m, "input_norm", OpUnit::input_norm, d.Tsp, d.h));
  // The down projections save the input norm's output (MLA's input norm is a module of its own).
  auto saves_norm_output = [](LayerOp& op) {
    op.alias_of = OpUnit::input_norm;
    op.alias_bytes = op.act_bytes;
  };
  if (ql > 0) {
    push_gemm(d, ops, linear(d, "q_down_proj", OpUnit::qkv_down, d.Tsp, d.h, ql, fp8), "q_down_fp8_cast");
    saves_norm_output(ops.back());
  }
  push_gemm(d, ops, linear(d, "kv_down_proj", OpUnit::qkv_down, d.Tsp, d.h, kvl + r, fp8), "kv_down_fp8_cast");
  saves_norm_output(ops.back());
  if (ql > 0) ops.push_back(norm(d, m, "q_norm", OpUnit::qkv_down, d.Tsp, ql));
  ops.push_back(norm(d, m, "kv_norm", OpUnit::qkv_down, d.Tsp, kvl));
  if (ql > 0) {
    // The up projection carries the all-gather of the whole compressed tensor (q, kv and rope key).
    push_gemm(d, ops, column_parallel(d, "q_up_proj", OpUnit::qkv, ql, a * dqk, ql + kvl + r, fp8), "q_up_fp8_cast");
    push_gemm(d, ops, column_parallel(d, "kv_up_proj", OpUnit::qkv, kvl, a * (m.qk_head_dim + dv), 0, fp8),
              "kv_up_fp8_cast");
  } else {
    push_gemm(d, ops, column_parallel(d, "q_proj", OpUnit::qkv, d.h, a * dqk, d.h, fp8), "q_proj_fp8_cast");
    push_gemm(d, ops, column_parallel(d, "kv_up_proj", OpUnit::qkv, kvl, a * (m.qk_head_dim + dv), kvl + r, fp8),
              "kv_up_fp8_cast");
  }
  {
    const double rope_elems = static_cast<double>(d.T) * (a + 1) * r;  // q's rope part and the shared key
    ops.push_back(rope(d, "rope", OpUnit::qkv, rope_elems));
  }
  // K is materialised per head (the shared rope key is broadcast), so attention sees MHA shapes:
  // g = a KV heads, Q/K head dim d_qk + r, V head dim d_v.
  push_cp_all_gather_reorder(d, st, a, dqk, dv, ops);
  LayerOp core = flash_attention(d, st, a, a, dqk, dv);
  core.act_bytes = static_cast<double>(d.T) * a * (2 * dqk + dv) * d.e + static_cast<double>(d.T) * a * 4.0;
  // Q, K, V are the up projections' and RoPE's outputs; the fp32 softmax statistics its own.
  core.alias_of = OpUnit::qkv;
  core.alias_bytes = static_cast<double>(d.T) * a * (2 * dqk + dv) * d.e;
  core.transient_bytes = static_cast<double>(d.T) * a * (2 * dqk + dv) * d.e;
  ops.push_back(core);
  push_gemm(d, ops, row_parallel(d, "out_proj", OpUnit::out_proj, a * dv, d.h, fp8), "out_proj_fp8_cast");
}

}  // namespace calisim::ops
