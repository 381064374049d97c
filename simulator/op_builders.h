// Building blocks of the per-layer op lists (internal to layer_ops*.cc): the dimensions of one
// micro-batch on one rank, and constructors for linear layers (plain, column-/row-parallel,
// grouped), element-wise ops, norms and the collectives they issue.
//
// Conventions: T = tokens of one micro-batch on this rank (b·s/c), Tsp = T/t under sequence
// parallelism (norms, residuals, dropout and the MoE router run on the SP shard), e = bytes per
// activation element. GEMM shapes follow SimuMax's convention: forward TN [T,in]·[in,out],
// dgrad NN, wgrad NT accumulating into the fp32 main grad.
#pragma once

#include <cstdint>
#include <vector>

#include "simulator/layer_ops.h"

namespace calisim::ops {

struct Dims {
  std::int64_t T = 0;    // tokens per micro-batch on this rank: b·s/c
  std::int64_t Tsp = 0;  // tokens per TP rank in norms/dropout/residual: T/t under SP
  std::int64_t b = 0;
  std::int64_t s = 0;    // sequence length on this rank (s/c)
  std::int64_t s_full = 0;  // full sequence length
  std::int64_t h = 0, t = 1, c = 1;
  DType dtype = DType::bf16;
  double e = 2;          // bytes per activation element
  bool sp = false;
  bool accumulate = true;
  bool grad_accum_unfused = false;  // use_fused_grad_accumulation false: wgrad then main_grad += grad
  double main_grad_e = 4;           // bytes per main-gradient element (fp32, or the dtype's)
  bool fused_norm = true;
  bool fused_rope = true;
  bool tp_comm_overlap = false;  // TE userbuffers (requires SP)
  Fp8Recipe fp8 = Fp8Recipe::none;
  bool fp8_torchao = false;  // FP8 linears keep high-precision inputs and cast weights every call
  int tp_per_domain = 1;
  int cp_per_domain = 1;
  int ep_per_domain = 1;   // expert groups (rank_placement.h)
  int etp_per_domain = 1;
  int domain_size = 8;
  // 2D (SUMMA) tensor parallelism (layer_ops_tp2d.h): grid rows × cols = t; ranks per domain of
  // a row group (cols ranks, contiguous) and a column group (rows ranks, strided by cols).
  bool tp_2d = false;
  std::int64_t tp_rows = 1, tp_cols = 1;
  int tp_row_per_domain = 1, tp_col_per_domain = 1;
  // 2D context parallelism (layer_ops_cp2d.h): grid rows × cols = c; ranks per domain of a row
  // group (cols ranks, the K/V ring, strided) and a column group (rows ranks, the head
  // all-to-all, contiguous; place_cp_grid).
  bool cp_2d = false;
  std::int64_t cp_rows = 1, cp_cols = 1;
  int cp_row_per_domain = 1, cp_col_per_domain = 1;
};

Dims make_dims(const ModelConfig& m, const StrategyConfig& st, int scale_up_domain_size);

CollectiveKey collective(CollectiveOp op, double bytes, int ranks, int ranks_per_node, DType dtype);
CollectiveKey tp_coll(const Dims& d, CollectiveOp op, double bytes);
// Ring context parallelism over `ring` ranks (ranks_per_domain of them per scale-up domain) on a
// flash-attention op whose heads per rank are g KV heads: sets op.cp_ring_steps and the per-step
// send/recv of the local K, V (b·s/ring tokens, e bytes per element) and of dK, dV (grad_e bytes
// per element: e for TransformerEngine's ring, 4 for PyTorch's fp32 accumulators; layer_ops.h).
// A ring that leaves the domain is paced by its slowest (inter-domain) hop, since all ranks step
// together.
void set_ring_steps(std::int64_t b, std::int64_t s_full, std::int64_t g, std::int64_t dqk, std::int64_t dv, int ring,
                    int ranks_per_domain, double e, double grad_e, DType dtype, LayerOp& op);

// y[tokens, out] = x[tokens, in]·W; keeps its input. fp8 = run it as an FP8 GEMM (the caller
// adds the cast op with fp8_cast()).
LayerOp linear(const Dims& d, const char* name, OpUnit unit, std::int64_t tokens, std::int64_t in, std::int64_t out,
               bool fp8);

// Column-parallel linear over all T tokens: input all-gathered under SP (re-gathered in backward,
// overlapped with dgrad); input gradient reduce-scattered (SP) or all-reduced, overlapped with
// wgrad, as Megatron does. gather_width = features of the all-gathered tensor (h for QKV/FC1;
// the compressed width for MLA's up projections); 0 = no gather (the input is already full).
LayerOp column_parallel(const Dims& d, const char* name, OpUnit unit, std::int64_t in, std::int64_t out_per_rank,
                        std::int64_t gather_width, bool fp8);
// Row-parallel linear: output reduce-scattered (SP) or all-reduced; under SP the output gradient
// is all-gathered in backward.
LayerOp row_parallel(const Dims& d, const char* name, OpUnit unit, std::int64_t in_per_rank, std::int64_t out,
                     bool fp8);

LayerOp memory_op(const char* name, OpUnit unit, const char* fwd_kind, double fwd_bytes, const char* bwd_kind,
                  double bwd_bytes, double act_bytes);
LayerOp norm(const Dims& d, const ModelConfig& m, const char* name, OpUnit unit, std::int64_t tokens,
             std::int64_t width);
LayerOp dropout_residual(const Dims& d, const char* name, OpUnit unit, bool dropout);
// Rotary embedding applied in place to `elements` query and key elements (one micro-batch, this
// rank). Fused: one kernel reads and writes each element, forward and backward. Unfused (eager
// PyTorch): five read-and-write passes each way (Megatron's rotate-half chain: neg, cat, two
// products, a sum; torchtitan's fp32 complex product: upcast, product, downcast, 20 bytes per bf16
// element either way). Nothing is saved for backward but the shared frequency table.
LayerOp rope(const Dims& d, const char* name, OpUnit unit, double elements);

// The FP8 quantize op in front of an FP8 GEMM with input [tokens, in] and output [tokens, out]
// (TransformerEngine): forward casts the input to a row-wise and a column-wise (transposed) FP8
// copy, read e + write 2 bytes per element; backward does the same for the output gradient.
// Per-tensor current scaling ("tensorwise") first reads the tensor once more for its amax;
// delayed scaling uses the amax history, block / MX scaling compute block scales in the same pass.
LayerOp fp8_cast(const Dims& d, const char* name, OpUnit unit, std::int64_t tokens, std::int64_t in,
                 std::int64_t out);

// Appends `gemm` preceded by its FP8 cast when FP8 is on.
void push_gemm(const Dims& d, std::vector<LayerOp>& ops, LayerOp gemm, const char* cast_name);

// Flash attention over this rank's a query / g KV heads (per TP rank), with context parallelism
// applied (ring or Ulysses, see layer_ops_dense.cc).
LayerOp flash_attention(const Dims& d, const StrategyConfig& st, std::int64_t a, std::int64_t g, std::int64_t dqk,
                        std::int64_t dv);

// The pieces of a layer, each appended in execution order.
void add_attention(const Dims& d, const ModelConfig& m, const StrategyConfig& st, std::vector<LayerOp>& ops);
// All-gather context parallelism (cp_comm_type all_gather, cp > 1, 1D CP): the op in front of
// the attention that reorders the gathered K, V (and dK, dV in backward) and reduce-scatters
// dK, dV; nothing otherwise.
void push_cp_all_gather_reorder(const Dims& d, const StrategyConfig& st, std::int64_t g, std::int64_t dqk,
                                std::int64_t dv, std::vector<LayerOp>& ops);
void add_mla_attention(const Dims& d, const ModelConfig& m, const StrategyConfig& st, std::vector<LayerOp>& ops);
struct MlpNames {
  const char *fc1, *fc1_cast, *act, *fc2, *fc2_cast;
};
inline constexpr MlpNames kDenseMlpNames{"fc1", "fc1_fp8_cast", "activation", "fc2", "fc2_fp8_cast"};
inline constexpr MlpNames kSharedExpertNames{"shared_fc1", "shared_fc1_fp8_cast", "shared_activation", "shared_fc2",
                                             "shared_fc2_fp8_cast"};
// A TP-parallel MLP of width ffn (dense layers, and DeepSeek's shared experts).
void add_dense_mlp(const Dims& d, const ModelConfig& m, const StrategyConfig& st, std::int64_t ffn, OpUnit unit,
                   const MlpNames& names, std::vector<LayerOp>& ops);
void add_moe_mlp(const Dims& d, const ModelConfig& m, const StrategyConfig& st, int scale_up_domain_size,
                 std::vector<LayerOp>& ops);

}  // namespace calisim::ops
