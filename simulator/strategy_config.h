// Strategy configuration: parallel layout, batching, recompute and kernel choices.
//
// Field names follow SimuMax's strategy files (which mirror Megatron-LM flags). Derived sizes
// (dp, micro-batch count, layers per stage) are computed and checked by the loader; after a
// successful load every invariant in docs/configs.md holds, so the simulator never re-checks.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "simulator/collective_algorithms.h"

namespace calisim {

// full_block: whole layers; selective: SimuMax's attn/mla_rms/mlp/mlp_rms switches; attn_only:
// the attention block; mlp_only: the MLP; sdp_only: core attention alone (Megatron's
// `--recompute-granularity selective`, Korthikanti et al.'s selective recompute); selective_op:
// PyTorch's op-level selective activation checkpointing as torchtitan applies it to each block
// (`--activation_checkpoint.mode selective --activation_checkpoint.selective_ac_option op`:
// the outputs of SDPA and of every other matmul are saved, everything else is rerun; dense
// MHA/GQA layers only); save_qkv_proj: MaxText's remat_policy of that name (the block reruns from
// its input except the Q, K, V projections, whose outputs are saved; MHA/GQA layers).
enum class RecomputeGranularity : std::uint8_t {
  none, full_block, selective, attn_only, mlp_only, sdp_only, selective_op, save_qkv_proj
};

// Megatron 0.14's output-discarding recompute (`--recompute-modules`), SimuMax's
// `megatron_recompute_modules`: one bit per module name.
enum MegatronRecomputeModule : std::uint8_t {
  kRecomputeLayernorm = 1,   // "layernorm": the pre-norms that are modules of their own (layer_ops.h)
  kRecomputeMlaUpProj = 2,   // "mla_up_proj": MLA q/kv up projections and RoPE
  kRecomputeMoeAct = 4,      // "moe_act": the routed experts' activation
  kRecomputeMlp = 8,         // "mlp": a dense layer's MLP
  kRecomputeMoe = 16,        // "moe": the whole MoE block (router, dispatch, experts, shared experts)
};
// Megatron's module names and their bits, in the order its --recompute-modules help lists them.
struct MegatronRecomputeModuleName {
  const char* name;
  std::uint8_t bit;
};
inline constexpr MegatronRecomputeModuleName kMegatronRecomputeModules[] = {
    {"layernorm", kRecomputeLayernorm}, {"mla_up_proj", kRecomputeMlaUpProj}, {"moe_act", kRecomputeMoeAct},
    {"mlp", kRecomputeMlp},             {"moe", kRecomputeMoe}};
// The bit of a module name; 0 when it names none.
inline std::uint8_t megatron_recompute_module_bit(const std::string& name) {
  for (const auto& m : kMegatronRecomputeModules) {
    if (name == m.name) return m.bit;
  }
  return 0;
}
// The modules of `mask` by their Megatron names, in that order, joined by `separator`.
inline std::string megatron_recompute_module_names(std::uint8_t mask, const char* separator) {
  std::string out;
  for (const auto& m : kMegatronRecomputeModules) {
    if (!(mask & m.bit)) continue;
    if (!out.empty()) out += separator;
    out += m.name;
  }
  return out;
}

// Context-parallel attention (Megatron `--cp-comm-type`): p2p = ring attention exchanging KV
// blocks overlapped with the attention compute; a2a = Ulysses, all-to-all of Q/K/V and output;
// all_gather = TransformerEngine's AttnFuncWithCPAndKVAllGather (Llama 3's CP): K, V all-gathered
// in front of the attention, exposed, dK, dV reduce-scattered after its backward.
enum class CpCommType : std::uint8_t { p2p, a2a, all_gather };
// The strategy file's name of a CP communication type ("p2p", "a2a", "allgather").
inline const char* cp_comm_type_name(CpCommType t) {
  return t == CpCommType::p2p ? "p2p" : t == CpCommType::a2a ? "a2a" : "allgather";
}
// "p2p", "a2a", "allgather" or TE's "all_gather" -> the type; false for anything else (the
// hierarchical "a2a+p2p" is a 2D CP grid, read by the strategy loader).
inline bool parse_cp_comm_type(const std::string& name, CpCommType* out) {
  if (name == "p2p") *out = CpCommType::p2p;
  else if (name == "a2a") *out = CpCommType::a2a;
  else if (name == "allgather" || name == "all_gather") *out = CpCommType::all_gather;
  else return false;
  return true;
}

// Whose ring attention runs the context parallelism (JSON cp_implementation; ring, cp_comm_type
// p2p, only): transformer_engine = TE's AttnFuncWithCPAndKVP2P (Megatron, NeMo): one fused
// output-correction kernel per step, priced with the attention; pytorch = PyTorch's
// torch.distributed.tensor.experimental context_parallel (torchtitan): the flash op needs K, V
// repeated to the query heads, and the per-step merging runs as unfused element-wise ops in fp32
// (convert_to_f32 on by default), its dQ, dK, dV accumulated and dK, dV sent on in fp32
// (docs/simulator.md "Context parallelism").
enum class CpImplementation : std::uint8_t { transformer_engine, pytorch };
// The strategy file's name of a CP implementation ("transformer_engine", "pytorch").
inline const char* cp_implementation_name(CpImplementation i) {
  return i == CpImplementation::pytorch ? "pytorch" : "transformer_engine";
}
// The name -> the implementation; false for anything else.
inline bool parse_cp_implementation(const std::string& name, CpImplementation* out) {
  if (name == "transformer_engine") *out = CpImplementation::transformer_engine;
  else if (name == "pytorch") *out = CpImplementation::pytorch;
  else return false;
  return true;
}

// Tensor parallelism (JSON tensor_parallel_mode): one_d = Megatron's column/row-parallel linears
// over tp ranks; two_d = SUMMA on a tp_2d_rows × tp_2d_cols grid (Subramanian et al. 2024,
// docs/simulator.md "2D tensor parallelism"): weights split over both grid dimensions, activations
// split over the rows (tokens) and the columns (features), weight panels gathered along columns.
enum class TensorParallelMode : std::uint8_t { one_d, two_d };

// Context parallelism (JSON context_parallel_mode): one_d = one CP group of cp_size ranks running
// cp_comm_type; two_d = a cp_2d_rows × cp_2d_cols grid (docs/simulator.md "2D context
// parallelism", simulator/layer_ops_cp2d.h): Ulysses all-to-all (heads) along the rows, the
// sequence split with its K/V all-gather (ring, as the NERSC model's sequence group) along the columns.
enum class ContextParallelMode : std::uint8_t { one_d, two_d };

// MoE token dispatcher (Megatron `--moe-token-dispatcher-type`, SimuMax `moe_dispatcher_policy`).
// flex = Megatron's MoEFlexTokenDispatcher over a DeepEP-family library (FlexBackend): each token
// crosses the network once per destination GPU (and RDMA once per destination node), not once per
// chosen expert (simulator/flex_dispatch.h).
enum class MoeDispatcher : std::uint8_t { all_to_all, all_gather, flex };
// Megatron `--moe-flex-dispatcher-backend`: DeepEP's normal kernels or NVIDIA's HybridEP.
enum class FlexBackend : std::uint8_t { deepep, hybridep };
// Megatron's names: "alltoall", "allgather", "flex".
inline const char* moe_dispatcher_name(MoeDispatcher d) {
  return d == MoeDispatcher::all_gather ? "allgather" : d == MoeDispatcher::flex ? "flex" : "alltoall";
}
// Megatron's names and SimuMax's "all2all"; false for anything else.
inline bool parse_moe_dispatcher(const std::string& name, MoeDispatcher* out) {
  if (name == "alltoall" || name == "all2all") *out = MoeDispatcher::all_to_all;
  else if (name == "allgather") *out = MoeDispatcher::all_gather;
  else if (name == "flex") *out = MoeDispatcher::flex;
  else return false;
  return true;
}

// CUDA-graph capture (Megatron `--cuda-graph-impl` / `--cuda-graph-scope`, JSON cuda_graph_scope):
// bits of the parts of a layer replayed as graphs (TransformerEngine per-layer scopes), or the
// whole iteration (Megatron's local full-iteration graph). 0 = none (Megatron's default). Used by
// the host-dispatch model (simulator/host_dispatch.h); the GPU work is unchanged.
enum CudaGraphScope : std::uint8_t {
  kGraphAttn = 1,            // "attn": input norm, attention block, residual
  kGraphMlp = 2,             // "mlp": a dense layer's pre-MLP norm, MLP, residual
  kGraphMoeRouter = 4,       // "moe_router": a MoE layer's pre-MLP norm and router
  kGraphMoePreprocess = 8,   // "moe_preprocess": the dispatcher's metadata kernels (no op of calisim's list)
  kGraphMoe = 16,            // "moe": the whole MoE block (Megatron requires drop-and-pad)
  kGraphFullIteration = 32,  // "full_iteration": forward and backward of the whole step
};

// Unfused cross-entropy (JSON cross_entropy_implementation; cross_entropy_loss_fusion picks the
// fused kernel instead): megatron = Megatron's vocab_parallel_cross_entropy (fp32 softmax kept and
// turned into the gradient in place); pytorch = torch.nn.functional.cross_entropy on a .float()
// copy of the logits (log-softmax kept, the gradient built in new fp32 tensors), as torchtitan.
enum class CrossEntropyImpl : std::uint8_t { megatron, pytorch };

// Fused cross-entropy (cross_entropy_loss_fusion true; Megatron --cross-entropy-fusion-impl):
// te = TransformerEngine's parallel cross-entropy, which writes the logits' gradient into the
// logits during forward (kept: the logits, in the training dtype); native = Megatron-Core's
// fused_vocab_parallel_cross_entropy, which upcasts the logits to an fp32 copy and keeps the fp32
// softmax for backward (twice the bytes under bf16). calisim's default is te, as SimuMax reads
// its cross_entropy_loss_fusion and as Megatron-Bridge's performance recipes set it; Megatron-LM's
// own default is native.
enum class CrossEntropyFusionImpl : std::uint8_t { te, native };

// Who runs the FP8 linears (JSON fp8_implementation): transformer_engine = TE (Megatron): saves
// the FP8 (column-wise) input for the weight gradient and caches FP8 weight copies across
// micro-batches; torchao = torchao's Float8Linear (torchtitan): saves the high-precision input and
// weight and casts them again in backward, casting the weight on every call (no cache).
enum class Fp8Implementation : std::uint8_t { transformer_engine, torchao };

// FP8 scaling recipe (Megatron `--fp8-recipe`); none = no FP8 GEMMs.
enum class Fp8Recipe : std::uint8_t { none, delayed, tensorwise, blockwise, mxfp8 };

// The JSON name of a recipe (fp8_recipe), nullptr for none.
inline const char* fp8_recipe_name(Fp8Recipe r) {
  switch (r) {
    case Fp8Recipe::delayed: return "delayed";
    case Fp8Recipe::tensorwise: return "tensorwise";
    case Fp8Recipe::blockwise: return "blockwise";
    case Fp8Recipe::mxfp8: return "mxfp8";
    case Fp8Recipe::none: break;
  }
  return nullptr;
}

// The JSON name of an optimizer-state dtype (main_params_dtype, exp_avg_dtype, ...): Megatron's
// names, "fp8" for the one-byte moments.
inline std::string optimizer_dtype_name(DType t) {
  return t == DType::fp8_e4m3 ? std::string("fp8") : std::string(to_string(t));
}

// The parallel dimensions in Megatron's rank order (initialize_model_parallel's `order`).
enum class ParallelDim : std::uint8_t { tp, cp, ep, dp, pp };
inline constexpr int kParallelDimCount = 5;
// Rank order, fastest-varying dimension first: ranks r and r+1 differ in order[0]. Megatron's
// default "tp-cp-ep-dp-pp" packs TP, then CP, then DP into consecutive ranks (one scale-up domain
// holds consecutive ranks); other orders put DP, CP, EP or PP inside the domain first. Dense layers
// see ep as 1; expert layers see tp as etp, cp as 1 and dp as edp (Megatron's two rank generators).
using RankOrder = std::array<ParallelDim, kParallelDimCount>;
inline constexpr RankOrder kMegatronRankOrder{ParallelDim::tp, ParallelDim::cp, ParallelDim::ep, ParallelDim::dp,
                                              ParallelDim::pp};

// Highest zero_state the simulator models (the loader and the search reject higher ones).
inline constexpr int kMaxModeledZeroStage = 3;

struct StrategyConfig {
  std::int64_t seq_len = 0;
  std::int64_t micro_batch_size = 1;
  std::int64_t micro_batch_num = 0;   // m, gradient-accumulation steps per iteration
  std::int64_t global_batch_size = 0; // = micro_batch_size * micro_batch_num * dp
  DType dtype = DType::bf16;

  int world_size = 8;
  int tp_size = 1;
  int pp_size = 1;
  int cp_size = 1;
  int ep_size = 1;
  int etp_size = 1;
  bool enable_sequence_parallel = true;  // effective only when tp_size > 1
  int interleaving_size = 1;             // v, virtual pipeline chunks per rank
  // Megatron's --microbatch-group-size-per-virtual-pipeline-stage: micro-batches each chunk runs
  // in a row in the interleaved schedule (p ≤ g ≤ m); 0 = pp_size, Megatron's default.
  int microbatch_group_size_per_vp_stage = 0;
  int num_layers_in_first_pipeline_stage = 0;  // 0 = even split
  int num_layers_in_last_pipeline_stage = 0;
  // Megatron's account_for_embedding/loss_in_pipeline_split: the embedding (the loss) counts as
  // one layer of the first (the last) virtual chunk when layer_num is split over pp·vpp chunks.
  bool account_for_embedding_in_pipeline_split = false;
  bool account_for_loss_in_pipeline_split = false;
  // Megatron's --pipeline-model-parallel-layout, e.g. "Et*4|(t*4|)*14tmL" (simulator/layer_placement.h):
  // the layers of every virtual stage; empty = the split above. Excludes the four fields above.
  std::string pipeline_layout;
  int zero_state = 1;  // 0: replicated; 1: distributed optimizer; 2: + sharded grads; 3: + sharded params (FSDP)
  // Hybrid sharding: the data-parallel ranks form this many replicas, each sharding the ZeRO state
  // (and at ZeRO-3 the parameters) over dp·cp / dp_replicate_size consecutive ranks (edp /
  // dp_replicate_size for expert parameters); gradients reduce-scatter inside a replica, then the
  // shard all-reduces across replicas. Megatron's --num-distributed-optimizer-instances, FSDP2's
  // HSDP (torchtitan data_parallel_replicate_degree), MaxText's dcn_data_parallelism. 1 = one
  // sharding group over the whole data-parallel group; > 1 needs zero_state >= 1.
  int dp_replicate_size = 1;
  CpCommType cp_comm_type = CpCommType::p2p;
  CpImplementation cp_impl = CpImplementation::transformer_engine;
  // 2D tensor parallelism: rows · cols = tp_size (both 1 under one_d). Rank (i, j) of the TP group
  // is tp index i·cols + j: a row group (cols ranks) is contiguous, a column group (rows ranks)
  // strided by cols.
  TensorParallelMode tp_mode = TensorParallelMode::one_d;
  int tp_2d_rows = 1;
  int tp_2d_cols = 1;
  // 2D context parallelism: rows · cols = cp_size (both 1 under one_d). CP index j·rows + i: a
  // column group (rows ranks: the head all-to-all) is contiguous, as Megatron's hierarchical CP
  // puts its a2a level first; a row group (cols ranks: the K/V ring) is strided by rows.
  ContextParallelMode cp_mode = ContextParallelMode::one_d;
  int cp_2d_rows = 1;
  int cp_2d_cols = 1;
  RankOrder rank_order = kMegatronRankOrder;  // JSON "order", e.g. "tp-dp-cp-ep-pp" (simulator/rank_placement.h)

  // MoE.
  MoeDispatcher moe_dispatcher = MoeDispatcher::all_to_all;
  FlexBackend flex_backend = FlexBackend::deepep;  // with moe_dispatcher flex
  // SMs the flex dispatcher's communication kernels occupy (Megatron --moe-deepep-num-sms, default
  // 20; --moe-hybridep-num-sms, default 16): the compute beside an overlapped dispatch runs on the rest.
  int flex_num_sms = 20;
  bool dispatch_probs = false;              // probs travel with the tokens (Megatron >= 0.14)
  double moe_token_imbalance_factor = 1.0;  // busiest EP rank's routed tokens / the average (>= 1)
  bool moe_shared_expert_overlap = false;   // shared experts run during the dispatch/combine all-to-all
  bool overlap_moe_expert_parallel_comm = false;  // EP all-to-all hidden behind another micro-batch's compute
  // Megatron --moe-grouped-gemm (default off): TE grouped GEMM, one Python op per expert GEMM;
  // off = SequentialMLP, one op per local expert. Changes the host dispatch only (host_dispatch.h).
  bool moe_grouped_gemm = false;
  std::uint8_t cuda_graph_scope = 0;  // CudaGraphScope bits; 0 = no CUDA graphs

  Fp8Recipe fp8 = Fp8Recipe::none;
  // Megatron --fp8-param-gather (TransformerEngine FP8 model parameters): the FP8 layers' weights
  // live in FP8 (one byte; TE's transposed / column-wise copy one more) instead of the training
  // dtype plus TE's two cached FP8 copies, and the DP parameter all-gather moves them in one byte.
  // The fp32 master weights of the distributed optimizer are unchanged.
  bool fp8_param_gather = false;
  Fp8Implementation fp8_impl = Fp8Implementation::transformer_engine;
  // Megatron --first-last-layers-bf16 with --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16:
  // transformer layers [0, start) and [layer_num - end, layer_num) (global indices, MTP depths
  // excluded) run their GEMMs in the training dtype under FP8. Both 0 without the switch.
  int num_layers_at_start_in_bf16 = 0;
  int num_layers_at_end_in_bf16 = 0;

  // Overlap (Megatron flag names).
  bool overlap_grad_reduce = false;     // DP grad reduce(-scatter) bucketed behind backward
  bool overlap_param_gather = false;    // DP param all-gather bucketed behind forward
  // Megatron-LM >= 0.9 with MoE and overlap_param_gather off gathers every parameter twice per
  // step (one start_param_sync per chained optimizer; data_parallel.h param_gather_passes).
  bool moe_double_param_gather = false;
  std::int64_t bucket_size = 0;         // parameters per DP bucket; 0 = Megatron's max(4e7, 1e6·dp)
  bool tp_comm_overlap = false;         // TE userbuffers: TP all-gather / reduce-scatter overlapped with GEMMs
  bool overlap_p2p_comm = true;         // PP send/recv asynchronous (false: the sender blocks)
  // NCCL_ALGO / NCCL_PROTO-style override of the collective algorithm choice (JSON nccl_algo,
  // nccl_proto; simulator/collective_algorithms.h). Default: every algorithm and protocol enabled.
  CollectiveChoiceMask nccl;

  // Offload to host memory over the system's host link.
  int cpu_offloading_num_layers = 0;    // layers per model chunk whose activations are offloaded
  bool optimizer_cpu_offload = false;
  double optimizer_offload_fraction = 1.0;  // share of the optimizer state (and its step) on the host

  bool enable_dropout = false;
  bool use_flash_sdp = true;
  bool use_math_sdp = false;
  bool use_fused_norm = true;
  bool use_fused_swiglu = true;
  // RoPE as one fused kernel (Megatron's apply_rope_fusion, TE's fused RoPE; torch.compile fuses it
  // too). false: the eager chain of element-wise kernels (Megatron's unfused rotate-half path,
  // torchtitan's complex multiply in fp32), about five times the fused kernel's traffic.
  bool use_fused_rope = true;
  bool use_fp32_accum_grad = true;        // fp32 main grads (Megatron's default)
  bool use_fused_grad_accumulation = true;
  bool grad_reduce_in_bf16 = false;
  bool cross_entropy_loss_fusion = false;
  CrossEntropyImpl cross_entropy_impl = CrossEntropyImpl::megatron;  // when not fused
  CrossEntropyFusionImpl cross_entropy_fusion_impl = CrossEntropyFusionImpl::te;  // when fused

  // Recompute, SimuMax semantics: the first recompute_layer_num layers of each model chunk.
  bool enable_recompute = true;
  RecomputeGranularity recompute_granularity = RecomputeGranularity::none;
  int recompute_layer_num = 0;
  bool attn_recompute = false;
  bool mla_rms_recompute = false;
  bool mlp_recompute = false;
  bool mlp_rms_recompute = false;
  bool recompute_variance = false;
  // The checkpoint reruns a block's forward only as far as backward reads it (PyTorch's
  // non-reentrant torch.utils.checkpoint, whose early stop is on by default, and torch.compile's
  // partitioner; JAX's remat prunes its recomputation the same way): the run's trailing residual
  // add and the GEMM before it (whose backward reads its input, not its output) are not rerun.
  // false = Megatron's CheckpointFunction and reentrant checkpoints, which rerun the whole block.
  // save_qkv_proj (JAX by definition) prunes whatever this says.
  bool recompute_early_stop = false;
  std::uint8_t megatron_recompute_modules = 0;  // MegatronRecomputeModule bits; non-zero = megatron_recompute

  double mem_factor = 0.94;  // reserved = allocated / mem_factor

  // Optimizer state (Megatron --use-precision-aware-optimizer with --main-params-dtype,
  // --exp-avg-dtype, --exp-avg-sq-dtype): TransformerEngine's FusedAdam holds the master weights
  // and the two Adam moments in these dtypes and writes the model weights itself. Without it the
  // distributed optimizer keeps fp32 master weights and moments (12 bytes per parameter). With
  // fp32 master weights of bf16 parameters TE stores only their 16 low bits
  // (store_param_remainders, Megatron's choice from TE 2.1): 2 bytes.
  bool use_precision_aware_optimizer = false;
  DType main_params_dtype = DType::fp32;  // fp32 | fp16
  DType exp_avg_dtype = DType::fp32;      // fp32 | fp16 | bf16 | fp8_e4m3 ("fp8")
  DType exp_avg_sq_dtype = DType::fp32;
  // --main-grads-dtype: the gradient the fused Adam reads; when it differs from the gradient
  // buffer's dtype, the optimizer step first casts the shard into it (Megatron: fp32 unless
  // precision-aware).
  DType main_grads_dtype = DType::fp32;
  bool store_param_remainders = true;
  // TE keeps fp32 master weights as the 16-bit remainders of the bf16 model weights.
  bool stores_param_remainders() const {
    return use_precision_aware_optimizer && main_params_dtype == DType::fp32 && store_param_remainders &&
           dtype == DType::bf16;
  }
  // Bytes of optimizer state (master weight + both moments) per parameter of the shard.
  double master_weight_bytes() const {
    if (!use_precision_aware_optimizer) return 4.0;
    if (stores_param_remainders()) return 2.0;
    return main_params_dtype == DType::fp32 ? 4.0 : 2.0;
  }
  double optimizer_state_bytes() const {
    if (!use_precision_aware_optimizer) return 12.0;
    return master_weight_bytes() + bytes_per_element(exp_avg_dtype) + bytes_per_element(exp_avg_sq_dtype);
  }

  // Derived by the loader.
  int dp_size = 1;
  int edp_size = 1;                            // expert-data-parallel: world / (ep·etp·pp)
  bool sequence_parallel = false;             // enable_sequence_parallel && tp_size > 1
  std::vector<int> layers_per_chunk;           // size pp*v, index = chunk*pp + rank (virtual stage)
  std::vector<std::string> not_modeled_fields; // accepted SimuMax fields that change nothing yet

  // The interleaved schedule's micro-batch group: the field, or Megatron's default (pp_size).
  int microbatch_group() const {
    return microbatch_group_size_per_vp_stage > 0 ? microbatch_group_size_per_vp_stage : pp_size;
  }
  bool recompute_active() const {
    return enable_recompute && recompute_granularity != RecomputeGranularity::none && recompute_layer_num > 0;
  }
  bool fp8_enabled() const { return fp8 != Fp8Recipe::none; }
  // Some transformer layers keep training-dtype GEMMs while the rest run FP8.
  bool has_bf16_layers() const {
    return fp8_enabled() && num_layers_at_start_in_bf16 + num_layers_at_end_in_bf16 > 0;
  }
  // Global transformer layer `i` of `layer_num` runs its GEMMs in FP8.
  bool fp8_layer(int i, int layer_num) const {
    return fp8_enabled() && i >= num_layers_at_start_in_bf16 && i < layer_num - num_layers_at_end_in_bf16;
  }
};

}  // namespace calisim
