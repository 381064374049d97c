// Strategy configuration: parallel layout, batching, recompute and kernel choices.
//
// Field names follow SimuMax's strategy files (which mirror Megatron-LM flags). Derived sizes
// (dp, micro-batch count, layers per stage) are computed and checked by the loader; after a
// successful load every invariant in docs/configs.md holds, so the simulator never re-checks.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/dtype.h"

namespace calisim {

// full_block: whole layers; selective: SimuMax's attn/mla_rms/mlp/mlp_rms switches; attn_only:
// the attention block; mlp_only: the MLP; sdp_only: core attention alone (Megatron's
// `--recompute-granularity selective`, Korthikanti et al.'s selective recompute).
enum class RecomputeGranularity : std::uint8_t { none, full_block, selective, attn_only, mlp_only, sdp_only };

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
  int num_layers_in_first_pipeline_stage = 0;  // 0 = even split
  int num_layers_in_last_pipeline_stage = 0;
  int zero_state = 1;                    // 0: replicated optimizer, 1: distributed optimizer

  bool enable_dropout = false;
  bool use_flash_sdp = true;
  bool use_math_sdp = false;
  bool use_fused_norm = true;
  bool use_fused_swiglu = true;
  bool use_fp32_accum_grad = true;        // fp32 main grads (Megatron's default)
  bool use_fused_grad_accumulation = true;
  bool grad_reduce_in_bf16 = false;
  bool cross_entropy_loss_fusion = false;

  // Recompute, SimuMax semantics: the first recompute_layer_num layers of each model chunk.
  bool enable_recompute = true;
  RecomputeGranularity recompute_granularity = RecomputeGranularity::none;
  int recompute_layer_num = 0;
  bool attn_recompute = false;
  bool mla_rms_recompute = false;
  bool mlp_recompute = false;
  bool mlp_rms_recompute = false;
  bool recompute_variance = false;

  double mem_factor = 0.94;  // reserved = allocated / mem_factor

  // Derived by the loader.
  int dp_size = 1;
  bool sequence_parallel = false;             // enable_sequence_parallel && tp_size > 1
  std::vector<int> layers_per_chunk;           // size pp*v, index = chunk*pp + rank (virtual stage)
  std::vector<std::string> not_modeled_fields; // accepted SimuMax fields that change nothing yet

  bool recompute_active() const {
    return enable_recompute && recompute_granularity != RecomputeGranularity::none && recompute_layer_num > 0;
  }
};

}  // namespace calisim
