// The result of one simulation: SimuMax's cost and memory fields (same names) plus per-stage,
// per-op and efficiency-source detail. Units are in the names (_s seconds, _bytes bytes).
#pragma once

#include <algorithm>
#include <array>
#include <string>
#include <vector>

#include "core/efficiency_model.h"
#include "simulator/model_stats.h"
#include "simulator/pipeline_schedule.h"
#include "simulator/strategy_config.h"

namespace calisim {

struct OpReport {
  std::string name;
  std::string scope;           // "layer", "moe_layer", "embedding", "head" or "mtp" (one MTP depth)
  std::string kind;            // "gemm", "attention", "memory"
  double fwd_s = 0, bwd_s = 0;  // compute, one micro-batch, one instance
  double fwd_comm_s = 0, bwd_comm_s = 0;  // exposed communication (TP, CP or EP: the op's group)
  double fwd_flops = 0, bwd_flops = 0;
  double act_bytes = 0;        // what the op saves for its backward without recompute
  double act_bytes_recomputed = 0;  // what it keeps in recomputed layers (recompute_plan's kept bytes)
  double efficiency = 0;       // of the forward kernel
  std::string source;          // of the forward kernel: measured | interpolated | scaled | roofline
  std::string origin;          // device(s) a scaled forward kernel was predicted from; empty otherwise
  std::string fwd_key;         // canonical kernel key of the forward kernel
  bool recomputed = false;     // in recomputed layers
};

// One distinct collective of the simulation (simulator/collective_table.h): the NCCL algorithm and
// protocol the network model picks, the tier it crosses, its time and achieved nccl-tests busbw.
struct CollectiveReport {
  std::string op, algorithm, protocol, tier;
  std::string source;          // efficiency source: measured | interpolated | scaled | roofline
  long long bytes = 0;         // nccl-tests size convention (full buffer)
  int ranks = 0, ranks_per_domain = 0;
  double time_s = 0, busbw_gb_s = 0;
};

struct StageReport {
  int rank = 0;
  int layers = 0;              // over all its chunks
  int moe_layers = 0;          // of which MoE layers (the rest are dense)
  int mtp_layers = 0;          // multi-token-prediction depths (last stage only), not in `layers`
  std::vector<int> first_layers;  // global index of each chunk's first layer, chunk order
  int recomputed_layers = 0;
  bool has_embedding = false, has_head = false;
  double fwd_s_per_micro_batch = 0;   // all chunks of this rank, incl. exposed TP comm
  double bwd_s_per_micro_batch = 0;   // incl. recompute
  double recompute_s_per_micro_batch = 0;
  // Of fwd + bwd (recompute included): the attention core's kernels (fused or unfused attention,
  // the CP ring's merge), without their communication.
  double attention_s_per_micro_batch = 0;
  double tp_comm_s_per_micro_batch = 0;  // exposed
  double cp_comm_s_per_micro_batch = 0;  // exposed context-parallel communication
  double ep_comm_s_per_micro_batch = 0;  // exposed expert-parallel (all-to-all, ETP) communication
  double dp_comm_s_per_micro_batch = 0;  // ZeRO-2/3 per-micro-batch collectives, exposed part
  double offload_s_per_micro_batch = 0;  // activation offload transfers not hidden by compute
  double p2p_blocking_s_per_micro_batch = 0;  // blocking send/recv (overlap_p2p_comm false)
  double host_exposed_s_per_micro_batch = 0;  // GPU idle waiting on host dispatch / syncs (host_dispatch.h)
  double pipeline_busy_s = 0, pipeline_finish_s = 0, bubble_s = 0, bubble_fraction = 0;
  double dp_comm_s = 0;         // per-iteration gradient reduce(-scatter) + parameter all-gather, exposed
  double optimizer_s = 0;
  double params = 0;            // parameters held by this rank (after TP / EP split)
  double expert_params = 0;     // of which routed-expert parameters (sharded over the expert-DP group)
  double weight_bytes = 0, grad_bytes = 0, optimizer_bytes = 0;
  double model_mem_bytes = 0;   // weight + grad + optimizer state
  double fwd_activation_cache_per_micro_batch_bytes = 0;
  int max_micro_batches_in_flight = 0;
  double peak_activation_mem_in_1F1B_bytes = 0;
  double fwd_peak_allocated_mem_bytes = 0, bwd_peak_allocated_mem_bytes = 0;
  double peak_mem_bytes = 0, peak_mem_with_reserved_bytes = 0;
  std::string peak_path;
};

// Host dispatch of one kind of block, one micro-batch (simulator/host_dispatch.h): which side
// bounds it. bound = "host" when the GPU waits on the host in forward or backward, else "gpu".
struct HostBlockReport {
  std::string block;           // "layer" (dense), "moe_layer", "embedding", "head", "mtp"
  double gpu_fwd_s = 0, host_fwd_s = 0, exposed_fwd_s = 0;
  double gpu_bwd_s = 0, host_bwd_s = 0, exposed_bwd_s = 0;
  int syncs_fwd = 0;           // device-to-host synchronisations per forward
  std::string bound;
};

struct SimulationResult {
  std::string model_name, strategy_name, system_name, device_name;
  int world_size = 0, tp = 1, pp = 1, vpp = 1, cp = 1, dp = 1, ep = 1, etp = 1, edp = 1;
  int vpp_group = 0;  // micro-batches per chunk group of the interleaved schedule (vpp > 1), else 0
  // 2D grids (both 1 for 1D TP / CP) and the rank order that placed the groups on domains.
  int tp_2d_rows = 1, tp_2d_cols = 1, cp_2d_rows = 1, cp_2d_cols = 1;
  RankOrder rank_order = kMegatronRankOrder;
  long long micro_batch_size = 1, micro_batch_num = 1, global_batch_size = 1, seq_len = 0;
  bool sequence_parallel = false;
  std::string recompute;        // human-readable recompute setting
  // Human-readable numerics: GEMM precision (FP8 recipe, implementation, FP8 parameters, layers
  // kept in the training dtype), optimizer state bytes per parameter, cross-entropy kernel.
  std::string precision, optimizer_state, loss;
  // ZeRO stage and sharding group, e.g. "ZeRO-3 over 128 ranks x 16 replicas (hybrid sharding)".
  std::string sharding;
  ModelStats stats;

  // Cost (SimuMax names where they exist).
  double duration_time_per_iter_s = 0;   // step time
  double chunk_time_s = 0;               // slowest stage: forward + backward of one micro-batch
  double all_tokens_per_iter = 0;
  double tokens_per_s = 0, tokens_per_s_per_gpu = 0;
  double throughput_per_accelerator = 0;  // tokens/s per GPU (SimuMax's name)
  double tflops_per_gpu = 0;             // model FLOPs (non-causal convention) per second per GPU
  double mfu = 0;                        // model_flops_per_token (non-causal) convention
  double mfu_6nd = 0;                    // 6·N·D only
  double mfu_6nd_with_attn = 0;          // 6·N·D + attention (= mfu)
  double mfu_causal = 0;                 // attention halved for the causal mask
  double hfu = 0;                        // model FLOPs + recomputed forward FLOPs
  double bubble_fraction = 0;            // of the critical stage
  int critical_rank = 0;                 // the stage that finishes last

  // Breakdown of the critical stage's iteration.
  double compute_s = 0, recompute_s = 0, tp_comm_exposed_s = 0, pp_comm_exposed_s = 0, bubble_s = 0;
  double cp_comm_exposed_s = 0, ep_comm_exposed_s = 0, offload_exposed_s = 0;
  double dp_comm_exposed_s = 0, optimizer_s = 0;  // dp: per-iteration + ZeRO-2/3 per-micro-batch
  double straggler_s = 0;                         // wait for the slowest GPU (system straggler_cv)
  // Of compute_s + recompute_s (not a part of its own: the breakdown's parts add up to the step),
  // the attention core's kernels: fused or unfused attention and the CP ring's merge, forward,
  // backward and recomputed forward. `calisim validate --components attention` prices it apart.
  double attention_kernel_s = 0;
  // The rest of compute_s + recompute_s: every other kernel (rounding cannot make it negative).
  double other_kernel_s() const { return std::max(0.0, compute_s + recompute_s - attention_kernel_s); }
  // GPU idle time waiting on the host (dispatch slower than the GPU, syncs), critical stage.
  double host_exposed_s = 0;
  bool host_dispatch_modeled = false;             // the system gives host.op_dispatch_us / host.sync_us
  std::vector<HostBlockReport> host_blocks;       // per kind of block present (empty when not modeled)

  std::vector<StageReport> stages;
  std::vector<OpReport> ops;
  std::vector<CollectiveReport> collectives;  // per distinct collective; filled by reports (collective_table)

  std::array<int, kEfficiencySourceCount> kernels_per_source{};
  // Kernel lookups answered with values scaled from another device, per origin (the device(s)
  // the rows were predicted from); empty when none were.
  struct OriginCount {
    std::string origin;
    int kernels = 0;
  };
  std::vector<OriginCount> kernels_per_origin;
  std::vector<std::string> roofline_keys;  // unique, sorted
  std::string efficiency_db;              // database the efficiencies came from (empty: none)
  std::vector<std::string> warnings;
  double device_memory_bytes = 0;
  bool fits_in_memory = true;
  bool pruned = false;                   // times are lower bounds (SimulateOptions::pipeline_cutoff_s)

  std::vector<PipelineEvent> events;     // filled when a trace is requested
};

}  // namespace calisim
