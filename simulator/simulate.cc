#include "simulator/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "core/error.h"
#include "simulator/comm_model.h"
#include "simulator/contention.h"
#include "simulator/data_parallel.h"
#include "simulator/layer_placement.h"
#include "simulator/overlap.h"
#include "simulator/rank_params.h"
#include "simulator/model_costs.h"
#include "simulator/op_cost.h"
#include "simulator/pipeline_schedule.h"
#include "simulator/rank_placement.h"

namespace calisim {
namespace {

std::string recompute_granularity_description(const StrategyConfig& s) {
  switch (s.recompute_granularity) {
    case RecomputeGranularity::full_block: return fmt::format("full_block, {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::attn_only: return fmt::format("attn_only, {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::mlp_only: return fmt::format("mlp_only, {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::sdp_only: return fmt::format("sdp_only, {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::selective_op:
      return fmt::format("selective_op (torchtitan op-level), {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::save_qkv_proj:
      return fmt::format("save_qkv_proj (MaxText remat policy), {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::selective: {
      std::string parts;
      auto add = [&](bool on, const char* n) {
        if (!on) return;
        if (!parts.empty()) parts += '+';
        parts += n;
      };
      add(s.mla_rms_recompute, "input_norm");
      add(s.attn_recompute, "attn");
      add(s.mlp_rms_recompute, "mlp_norm");
      add(s.mlp_recompute, "mlp");
      // Megatron's --recompute-modules (output-discarding recompute), by their Megatron names.
      const std::string megatron = megatron_recompute_module_names(s.megatron_recompute_modules, ", ");
      if (!megatron.empty()) {
        if (!parts.empty()) parts += '+';
        parts += "recompute_modules " + megatron;
      }
      return fmt::format("selective ({}), {} layer(s) per chunk", parts.empty() ? "nothing" : parts,
                         s.recompute_layer_num);
    }
    case RecomputeGranularity::none: break;
  }
  return "none";
}

// "full_block, 80 layer(s) per chunk", plus where the rerun stops when the checkpoint stops early.
std::string recompute_description(const StrategyConfig& s) {
  if (!s.recompute_active()) return "none";
  std::string out = recompute_granularity_description(s);
  if (s.recompute_early_stop || s.recompute_granularity == RecomputeGranularity::save_qkv_proj) {
    out += ", early stop (each block's last GEMM and residual add not rerun)";
  }
  return out;
}

// "bf16", or "bf16 + fp8 tensorwise (TransformerEngine, fp8 params, layer 0 and layer 79 in bf16)".
std::string precision_description(const StrategyConfig& s, long long layers) {
  std::string out(to_string(s.dtype));
  if (!s.fp8_enabled()) return out;
  out += fmt::format(" + fp8 {} ({}", fp8_recipe_name(s.fp8),
                     s.fp8_impl == Fp8Implementation::torchao ? "torchao" : "TransformerEngine");
  if (s.fp8_param_gather) out += ", fp8 params";
  if (s.has_bf16_layers()) {
    const long long a = s.num_layers_at_start_in_bf16, b = s.num_layers_at_end_in_bf16;
    std::string which;
    if (a > 0) which += a == 1 ? "layer 0" : fmt::format("layers 0-{}", a - 1);
    if (b > 0) which += (which.empty() ? "" : " and ") + (b == 1 ? fmt::format("layer {}", layers - 1)
                                                                 : fmt::format("layers {}-{}", layers - b, layers - 1));
    out += ", " + which + " in " + std::string(to_string(s.dtype));
  }
  return out + ")";
}

// "ZeRO-1 over 64 ranks", "ZeRO-3 over 128 ranks x 16 replicas (hybrid sharding)", "ZeRO-0
// (replicated)": the stage and the dense data-parallel group its state is sharded over.
std::string sharding_description(int zero_state, const DpGroups& g) {
  if (zero_state == 0) return "ZeRO-0 (replicated)";
  if (g.dense_replicas <= 1) return fmt::format("ZeRO-{} over {} ranks", zero_state, g.dense_ranks);
  return fmt::format("ZeRO-{} over {} ranks x {} replicas (hybrid sharding)", zero_state, g.dense_ranks,
                     g.dense_replicas);
}

// "12 B/param (fp32 master and moments)", or e.g. "10 B/param (precision-aware: master fp32 as bf16
// remainders, moments fp32/fp32)".
std::string optimizer_description(const StrategyConfig& s) {
  if (!s.use_precision_aware_optimizer) return "12 B/param (fp32 master and moments)";
  return fmt::format("{:g} B/param (precision-aware: master {}, moments {}/{})", s.optimizer_state_bytes(),
                     s.stores_param_remainders() ? "fp32 as bf16 remainders" : optimizer_dtype_name(s.main_params_dtype),
                     optimizer_dtype_name(s.exp_avg_dtype), optimizer_dtype_name(s.exp_avg_sq_dtype));
}

std::string loss_description(const StrategyConfig& s) {
  if (s.cross_entropy_loss_fusion) {
    return s.cross_entropy_fusion_impl == CrossEntropyFusionImpl::native ? "fused cross-entropy (Megatron native)"
                                                                          : "fused cross-entropy (TransformerEngine)";
  }
  return s.cross_entropy_impl == CrossEntropyImpl::pytorch ? "PyTorch cross-entropy (fp32 copy)"
                                                           : "Megatron vocab-parallel cross-entropy";
}

constexpr double kGB = 1e9;

// Recompute settings that, read the SimuMax way, recompute nothing although they name a
// granularity or a layer count: each is legal (SimuMax files carry such leftovers) but a user
// who set one of them expects recompute, so the result says why there is none.
// Megatron recompute modules the model has nothing for (Megatron accepts them and recomputes
// nothing; layer_ops.h recompute_plan follows its TransformerEngine layer spec).
void recompute_module_warnings(const ModelConfig& m, const StrategyConfig& s, std::vector<std::string>& out) {
  if (!s.recompute_active() || s.recompute_granularity != RecomputeGranularity::selective) return;
  const std::uint8_t mods = s.megatron_recompute_modules;
  const bool mla = m.attention_type == AttentionType::mla;
  const bool moe_layers = m.has_moe_layers();
  if ((mods & kRecomputeLayernorm) && !mla && !moe_layers) {
    out.push_back("megatron_recompute_modules \"layernorm\" recomputes nothing for this model: on Megatron-Core's "
                  "TransformerEngine layer spec its norms are fused into the next linear layer (only an MLA layer's "
                  "input norm and a MoE layer's pre-MLP norm are modules of their own)");
  }
  if ((mods & (kRecomputeMoe | kRecomputeMoeAct)) && !moe_layers) {
    out.push_back("megatron_recompute_modules \"moe\" / \"moe_act\" recompute nothing: the model has no MoE layers");
  }
  if ((mods & kRecomputeMlp) && !m.has_dense_layers()) {
    out.push_back("megatron_recompute_modules \"mlp\" recomputes nothing: it covers dense MLPs and every layer is MoE");
  }
}

void recompute_warnings(const StrategyConfig& s, std::vector<std::string>& out) {
  const bool named = s.recompute_granularity != RecomputeGranularity::none;
  if (named && !s.enable_recompute) {
    out.push_back("recompute_granularity is set but enable_recompute is false: nothing is recomputed");
  } else if (named && s.recompute_layer_num == 0) {
    out.push_back("recompute_granularity is set but recompute_layer_num is 0: nothing is recomputed (it counts "
                  "the recomputed layers of each model chunk)");
  } else if (!named && s.recompute_layer_num > 0) {
    out.push_back(fmt::format("recompute_layer_num is {} but no recompute_granularity is set{}: nothing is recomputed",
                              s.recompute_layer_num, s.enable_recompute ? "" : " (and enable_recompute is false)"));
  } else if (s.recompute_active() && s.recompute_granularity == RecomputeGranularity::selective &&
             !s.attn_recompute && !s.mla_rms_recompute && !s.mlp_recompute && !s.mlp_rms_recompute &&
             s.megatron_recompute_modules == 0) {
    out.push_back("recompute_granularity \"selective_recompute\" with none of attn_recompute, mla_rms_recompute, "
                  "mlp_recompute, mlp_rms_recompute or megatron_recompute set: nothing is recomputed");
  }
}

}  // namespace

SimulationResult simulate(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                          const EfficiencyModel& eff, const SimulateOptions& opt) {
  const ModelCosts mc = cost_model(model, st, sys, eff, opt.details);
  return assemble(model, st, sys, eff, mc, opt);
}

SimulationResult assemble(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                          const EfficiencyModel& eff, const ModelCosts& mc, const SimulateOptions& opt) {
  SimulationResult res;
  res.model_name = model.model_name;
  res.system_name = sys.name;
  res.device_name = sys.device.name;
  res.world_size = st.world_size;
  res.tp = st.tp_size;
  res.pp = st.pp_size;
  res.vpp = st.interleaving_size;
  if (st.interleaving_size > 1) {
    res.vpp_group = st.microbatch_group();
  }
  res.cp = st.cp_size;
  res.dp = st.dp_size;
  res.ep = st.ep_size;
  res.etp = st.etp_size;
  res.edp = st.edp_size;
  if (st.tp_mode == TensorParallelMode::two_d) {
    res.tp_2d_rows = st.tp_2d_rows;
    res.tp_2d_cols = st.tp_2d_cols;
  }
  if (st.cp_mode == ContextParallelMode::two_d) {
    res.cp_2d_rows = st.cp_2d_rows;
    res.cp_2d_cols = st.cp_2d_cols;
  }
  res.rank_order = st.rank_order;
  res.micro_batch_size = st.micro_batch_size;
  res.micro_batch_num = st.micro_batch_num;
  res.global_batch_size = st.global_batch_size;
  res.seq_len = st.seq_len;
  res.sequence_parallel = st.sequence_parallel;
  res.recompute = recompute_description(st);
  if (opt.details) {
    res.precision = precision_description(st, model.layer_num);
    res.optimizer_state = optimizer_description(st);
    res.loss = loss_description(st);
  }
  res.stats = model_stats(model, st.seq_len);
  res.device_memory_bytes = sys.device.memory_bytes();
  for (const auto& f : st.not_modeled_fields) {
    res.warnings.push_back("strategy field '" + f + "' is accepted for SimuMax compatibility but not modeled");
  }
  recompute_warnings(st, res.warnings);
  recompute_module_warnings(model, st, res.warnings);
  if (st.cross_entropy_fusion_impl == CrossEntropyFusionImpl::native && !st.cross_entropy_loss_fusion) {
    res.warnings.push_back("cross_entropy_fusion_impl \"native\" has no effect without cross_entropy_loss_fusion "
                           "(the unfused loss runs; cross_entropy_implementation picks which)");
  }
  if (st.microbatch_group_size_per_vp_stage > 0 && st.interleaving_size == 1) {
    res.warnings.push_back(fmt::format("microbatch_group_size_per_vp_stage ({}) has no effect without interleaving "
                                       "(interleaving_size 1)",
                                       st.microbatch_group_size_per_vp_stage));
  }
  if (st.moe_double_param_gather && (!model.is_moe || st.overlap_param_gather || st.zero_state == 0 || st.zero_state == 3)) {
    res.warnings.push_back("moe_double_param_gather has no effect: it applies to MoE models at zero_state 1 or 2 with "
                           "overlap_param_gather off");
  }
  double peak_flops;
  try {
    peak_flops = sys.device.peak_flops_per_s(st.dtype);
  } catch (const std::invalid_argument& e) {
    throw InputError(sys.error_label(), "device.peak_tflops", e.what());
  }

  if ((st.cpu_offloading_num_layers > 0 || st.optimizer_cpu_offload) && sys.host_link_gb_s <= 0) {
    throw InputError(sys.error_label(), "host.link_gb_s", "offload needs the host link bandwidth (GB/s, one direction)");
  }
  if (st.optimizer_cpu_offload && sys.host_adam_params_per_s <= 0) {
    throw InputError(sys.error_label(), "host.adam_params_per_s",
                     "optimizer_cpu_offload needs the host's CPU Adam throughput (parameters/s per GPU)");
  }
  const OpCoster coster(sys, eff, st.nccl);
  SourceTally tally;
  tally.kernels = mc.kernels_per_source;
  tally.origins = mc.kernels_per_origin;
  std::vector<std::string> stage_keys;  // roofline keys of the per-layout collectives and optimizer
  if (opt.details) tally.roofline_keys = &stage_keys;
  if (opt.details) res.ops = mc.ops;
  const BlockCost& emb = mc.embedding;
  const BlockCost& head = mc.head;

  const int p = st.pp_size, v = st.interleaving_size, m = static_cast<int>(st.micro_batch_num);
  const int stages = p * v;
  const bool rc_on = st.recompute_active();
  const double slow = sys.comm_compute_slowdown;
  const std::vector<ChunkLayers> chunks = chunk_layers(model, st);

  // Parameters per virtual stage (this rank's TP/EP shard), split by DP group.
  const RankParams dense_lp = dense_layer_params_per_rank(model, st);
  const RankParams moe_lp = model.is_moe ? moe_layer_params_per_rank(model, st) : RankParams{};
  const double vocab_rank = static_cast<double>(model.padded_vocab(st.tp_size)) / st.tp_size * model.hidden_size;
  const double pos_params = model.position_embedding_type == PositionEmbedding::learned_absolute
                                ? static_cast<double>(model.max_position_embeddings > 0 ? model.max_position_embeddings
                                                                                        : st.seq_len) *
                                      model.hidden_size
                                : 0.0;
  const double final_norm = dense_layer_params(model).norms / 2;
  // Untied: the LM head weight. Tied with pp > 1: the last stage keeps its own copy of the word
  // embedding, kept in sync by an all-reduce of its gradient with the first stage.
  const bool head_weight = model.untie_embeddings_and_output_weights || p > 1;
  // Multi-token prediction: D depths on the last stage. With pp > 1 that stage also builds the
  // embedding for the shifted tokens (Megatron: pre_process or mtp_process), a copy of the first
  // stage's whose gradient is all-reduced with it; tied weights already put the word embedding there.
  const int D = static_cast<int>(model.mtp_num_layers);
  const RankParams mtp_lp = D > 0 ? mtp_depth_params_per_rank(model, st) : RankParams{};
  // Layers of each chunk by kind and precision (first_last_layers_bf16 keeps some out of FP8).
  std::vector<ChunkPrecision> prec(stages);
  for (int j = 0; j < stages; ++j) prec[j] = chunk_precision(chunks[j], model, st);
  std::vector<RankParams> chunk_params(stages), chunk_fp8_params(stages);
  for (int j = 0; j < stages; ++j) {
    chunk_params[j] = chunks[j].dense * dense_lp;
    chunk_params[j] += chunks[j].moe * moe_lp;
    if (st.fp8_enabled()) {
      chunk_fp8_params[j] = (chunks[j].dense - prec[j].dense_bf16) * dense_lp;
      chunk_fp8_params[j] += (chunks[j].moe - prec[j].moe_bf16) * moe_lp;
      if (j == stages - 1 && D > 0) chunk_fp8_params[j] += static_cast<double>(D) * mtp_lp;
    }
    if (j == 0) chunk_params[j].dense += vocab_rank + pos_params;
    if (j == stages - 1) chunk_params[j].dense += final_norm + (head_weight ? vocab_rank : 0.0);
    if (j == stages - 1 && D > 0) {
      chunk_params[j] += static_cast<double>(D) * mtp_lp;
      if (p > 1) chunk_params[j].dense += pos_params + (model.untie_embeddings_and_output_weights ? vocab_rank : 0.0);
    }
  }
  const DpGroups groups = dp_groups(st, sys.scale_up_domain_size, sys.topology.pcie_switch_gpus);
  if (opt.details) res.sharding = sharding_description(st.zero_state, groups);

  // Pipeline p2p: adjacent stages are pipeline_stride() ranks apart (tp·cp·dp in Megatron's order).
  const RankPlacement placed = place_ranks(st, sys.scale_up_domain_size);
  // NIC sharing between the DP gradient reduction and EP / CP traffic of the backward (contention.h).
  const bool dp_nic = crosses_nics(groups.dense_ranks, groups.dense_per_domain) ||
                      crosses_nics(groups.expert_ranks, groups.expert_per_domain) ||
                      crosses_nics(groups.dense_replicas, groups.dense_replicas_per_domain) ||
                      crosses_nics(groups.expert_replicas, groups.expert_replicas_per_domain);
  const bool ep_nic = crosses_nics(st.ep_size, placed.ep), cp_nic = crosses_nics(st.cp_size, placed.cp);
  double p2p_s = 0;
  if (p > 1) {
    CollectiveKey k{CollectiveOp::send_recv, static_cast<std::int64_t>(mc.p2p_bytes), 2, placed.pp_next, st.dtype};
    // PCIe switches: adjacent stages in different switches share the host bridge with every other
    // pair of the node (docs/comm.md "PCIe switches").
    const int sw = sys.topology.pcie_switch_gpus;
    p2p_s = coster.collective_s(k, &tally, sw > 0 ? place_ranks(st, sw).pp_next : 0);
  }
  const double host_bw = sys.host_link_gb_s * 1e9 * sys.host_link_efficiency;

  // Per virtual stage: times and activation bytes of one micro-batch.
  std::vector<double> fwd(stages), bwd(stages), act(stages), rc_time(stages), fwd_tr(stages), bwd_tr(stages);
  std::vector<double> tp_comm(stages), cp_comm(stages), ep_comm(stages), dp_mb_comm(stages), offload(stages);
  std::vector<double> p2p_block(stages), rc_flops(stages), nic_bwd(stages);  // nic_bwd: EP/CP backward NIC traffic
  std::vector<double> host_wait(stages);  // GPU idle on host dispatch (host_dispatch.h), in fwd/bwd above
  std::vector<double> attn(stages);       // attention-core kernels (BlockCost::attention_*), recompute incl.
  // EP all-to-all time the 1F1B overlap hid, paid back by unpaired units (PipelineSpec).
  std::vector<double> unpaired_fwd(stages), unpaired_bwd(stages);
  std::vector<int> layers_rc(stages);
  bool clamped = false;
  for (int j = 0; j < stages; ++j) {
    const int n = chunks[j].total();
    const int nr = rc_on ? std::min(st.recompute_layer_num, n) : 0;
    // A count of at least the model's layers reads as "every layer" (Megatron's uniform and
    // selective recompute): no warning for the chunks it exceeds.
    if (rc_on && st.recompute_layer_num > n && st.recompute_layer_num < model.layer_num) clamped = true;
    layers_rc[j] = nr;
    auto add_layers = [&](const BlockCost& b, int count, int count_rc) {
      if (count <= 0) return;
      fwd[j] += count * b.fwd_s;
      bwd[j] += count * b.bwd_s + count_rc * b.recompute_fwd_s;
      rc_time[j] += count_rc * b.recompute_fwd_s;
      rc_flops[j] += count_rc * b.recompute_flops;
      attn[j] += count * (b.attention_fwd_s + b.attention_bwd_s) + count_rc * b.attention_recompute_s;
      tp_comm[j] += count * (b.tp_comm_fwd_s + b.tp_comm_bwd_s);
      cp_comm[j] += count * (b.cp_comm_fwd_s + b.cp_comm_bwd_s);
      ep_comm[j] += count * (b.ep_comm_fwd_s + b.ep_comm_bwd_s);
      host_wait[j] += count * (b.host_exposed_fwd_s + b.host_exposed_bwd_s);
      unpaired_fwd[j] += count * b.ep_paired_saving_fwd_s;
      unpaired_bwd[j] += count * b.ep_paired_saving_bwd_s;
      nic_bwd[j] += count * ((ep_nic ? b.ep_comm_bwd_s : 0.0) + (cp_nic ? b.cp_comm_bwd_s : 0.0));
      act[j] += (count - count_rc) * b.act_bytes + count_rc * b.act_bytes_recomputed;
      fwd_tr[j] = std::max(fwd_tr[j], b.fwd_transient_bytes);
      // While a recomputed layer runs backward, its recomputed activations are live again.
      bwd_tr[j] = std::max(bwd_tr[j], b.bwd_transient_bytes + (count_rc > 0 ? b.act_bytes - b.act_bytes_recomputed : 0.0));
    };
    // The first nr layers of the chunk are recomputed; dense layers come first in a chunk.
    if (!st.has_bf16_layers()) {
      const int nr_dense = std::min(nr, chunks[j].dense), nr_moe = nr - nr_dense;
      add_layers(mc.layer, chunks[j].dense, nr_dense);
      add_layers(mc.moe_layer, chunks[j].moe, nr_moe);
    } else {
      const ChunkPrecision& c = prec[j];
      const LayerCounts rc = recomputed_layer_counts(chunks[j], c, nr, model, st);
      add_layers(mc.layer, chunks[j].dense - c.dense_bf16, rc.dense);
      add_layers(mc.layer_bf16, c.dense_bf16, rc.dense_bf16);
      add_layers(mc.moe_layer, chunks[j].moe - c.moe_bf16, rc.moe);
      add_layers(mc.moe_layer_bf16, c.moe_bf16, rc.moe_bf16);
    }
    double block_act = 0;  // kept by the embedding, head and MTP blocks (not offloaded)
    auto add_block = [&](const BlockCost& b) {
      fwd[j] += b.fwd_s;
      bwd[j] += b.bwd_s;
      tp_comm[j] += b.tp_comm_fwd_s + b.tp_comm_bwd_s;
      host_wait[j] += b.host_exposed_fwd_s + b.host_exposed_bwd_s;
      act[j] += b.act_bytes;
      block_act += b.act_bytes;
      fwd_tr[j] = std::max(fwd_tr[j], b.fwd_transient_bytes);
      bwd_tr[j] = std::max(bwd_tr[j], b.bwd_transient_bytes);
    };
    if (j == 0) add_block(emb);
    if (j == stages - 1) add_block(head);
    // MTP depths run after the decoder on the last chunk; under recompute their core is rerun
    // before its backward (Megatron checkpoints it whenever recompute is on, whatever
    // recompute_layer_num says).
    if (j == stages - 1 && D > 0) {
      const BlockCost& b = mc.mtp;
      const double rc = rc_on ? D * b.recompute_fwd_s : 0.0;
      fwd[j] += D * b.fwd_s;
      bwd[j] += D * b.bwd_s + rc;
      rc_time[j] += rc;
      rc_flops[j] += rc_on ? D * b.recompute_flops : 0.0;
      attn[j] += D * (b.attention_fwd_s + b.attention_bwd_s) + (rc_on ? D * b.attention_recompute_s : 0.0);
      tp_comm[j] += D * (b.tp_comm_fwd_s + b.tp_comm_bwd_s);
      cp_comm[j] += D * (b.cp_comm_fwd_s + b.cp_comm_bwd_s);
      ep_comm[j] += D * (b.ep_comm_fwd_s + b.ep_comm_bwd_s);
      host_wait[j] += D * (b.host_exposed_fwd_s + b.host_exposed_bwd_s);
      unpaired_fwd[j] += D * b.ep_paired_saving_fwd_s;
      unpaired_bwd[j] += D * b.ep_paired_saving_bwd_s;
      const double kept = D * (rc_on ? b.act_bytes_recomputed : b.act_bytes);
      act[j] += kept;
      block_act += kept;
      fwd_tr[j] = std::max(fwd_tr[j], b.fwd_transient_bytes);
      bwd_tr[j] = std::max(bwd_tr[j], b.bwd_transient_bytes + (rc_on ? b.act_bytes - b.act_bytes_recomputed : 0.0));
    }

    // Activation offload (Megatron --cpu-offloading-num-layers): the first layers' saved
    // activations go to host memory during the forward and come back during the backward, on
    // copy engines (no SM slowdown), hidden behind the chunk's compute where it is long enough.
    if (st.cpu_offloading_num_layers > 0 && n > 0) {
      const int off = std::min(st.cpu_offloading_num_layers, n - 1);
      const double per_layer = (act[j] - block_act) / n;
      const double bytes = off * per_layer;
      const double xfer = bytes / host_bw;
      const double extra_f = std::max(0.0, xfer - fwd[j]), extra_b = std::max(0.0, xfer - bwd[j]);
      fwd[j] += extra_f;
      bwd[j] += extra_b;
      offload[j] = extra_f + extra_b;
      act[j] -= bytes;
      bwd_tr[j] += off > 0 ? per_layer : 0.0;  // the layer being reloaded
    }
    // ZeRO-2 reduce-scatters each micro-batch's gradients; ZeRO-3 also all-gathers every layer's
    // parameters before its forward and again before its backward (prefetching the next layer).
    if (st.dp_size * st.cp_size > 1 || st.edp_size > 1) {
      const double layers = std::max(1, n + (j == stages - 1 ? D : 0));
      if (st.zero_state >= 2) {
        const double rs = nic_contended_s(grad_reduce_s(chunk_params[j], st, groups, coster, &tally),
                                          st.overlap_grad_reduce && dp_nic ? nic_bwd[j] : 0.0);
        const double extra = bucketed_overlap_s(rs, st.overlap_grad_reduce ? bwd[j] : 0.0,
                                                std::max(1.0, std::ceil(chunk_params[j].total() / bucket_params(st))),
                                                slow);
        if (st.zero_state >= 3) {
          const double ag = param_gather_s(chunk_params[j], chunk_fp8_params[j], st, groups, coster, &tally);
          const double window_f = st.overlap_param_gather ? fwd[j] : 0.0;
          const double window_b = st.overlap_param_gather ? bwd[j] : 0.0;
          const double f_extra = bucketed_overlap_s(ag, window_f, layers, slow);
          const double b_extra = bucketed_overlap_s(ag + rs, window_b, layers, slow);
          fwd[j] += f_extra;
          bwd[j] += b_extra;
          dp_mb_comm[j] = f_extra + b_extra;
        } else {
          bwd[j] += extra;
          dp_mb_comm[j] = extra;
        }
      }
    }
    // Blocking send/recv (overlap_p2p_comm false): the sender waits for its transfer.
    if (p > 1 && !st.overlap_p2p_comm) {
      if (j < stages - 1) fwd[j] += p2p_s, p2p_block[j] += p2p_s;
      if (j > 0) bwd[j] += p2p_s, p2p_block[j] += p2p_s;
    }
  }
  if (clamped) {
    res.warnings.push_back(fmt::format("recompute_layer_num ({}) exceeds the layers of some model chunks; those chunks "
                                       "recompute all their layers",
                                       st.recompute_layer_num));
  }

  PipelineSpec spec{p, v, m, fwd, bwd, act, st.overlap_p2p_comm ? p2p_s : 0.0, opt.pipeline_cutoff_s};
  spec.group = st.microbatch_group_size_per_vp_stage;
  // Megatron runs one more warm-up forward with the EP all-to-all overlap (get_pp_rank_microbatches).
  spec.extra_warmup = st.overlap_moe_expert_parallel_comm ? 1 : 0;
  if (st.overlap_moe_expert_parallel_comm) {
    spec.fwd_unpaired_extra_s = unpaired_fwd;
    spec.bwd_unpaired_extra_s = unpaired_bwd;
  }
  PipelineResult pipe = simulate_pipeline(spec, opt.trace);
  res.pruned = pipe.bounded;

  const double act_e = bytes_per_element(st.dtype);
  const double grad_e = st.use_fp32_accum_grad ? 4.0 : act_e;
  const double largest_layer =
      std::max({dense_lp.total(), model.is_moe ? moe_lp.total() : 0.0, D > 0 ? mtp_lp.total() : 0.0});
  const double bucket = bucket_params(st);

  res.stages.resize(p);
  double step = 0;
  double optimizer_max = 0;
  for (int r = 0; r < p; ++r) {
    StageReport& sr = res.stages[r];
    sr.rank = r;
    sr.has_embedding = r == 0;
    sr.has_head = r == p - 1;
    RankParams params, fp8_params;
    double act_per_mb = 0, fwd_tr_max = 0, bwd_tr_max = 0, fwd_mb = 0, bwd_mb = 0, nic_bwd_mb = 0;
    for (int c = 0; c < v; ++c) {
      const int j = c * p + r;
      sr.layers += chunks[j].total();
      if (j == stages - 1) sr.mtp_layers = D;
      sr.moe_layers += chunks[j].moe;
      sr.first_layers.push_back(chunks[j].first_layer);
      sr.recomputed_layers += layers_rc[j];
      sr.fwd_s_per_micro_batch += fwd[j];
      sr.bwd_s_per_micro_batch += bwd[j];
      sr.recompute_s_per_micro_batch += rc_time[j];
      sr.attention_s_per_micro_batch += attn[j];
      sr.tp_comm_s_per_micro_batch += tp_comm[j];
      sr.cp_comm_s_per_micro_batch += cp_comm[j];
      sr.ep_comm_s_per_micro_batch += ep_comm[j];
      sr.dp_comm_s_per_micro_batch += dp_mb_comm[j];
      sr.offload_s_per_micro_batch += offload[j];
      sr.p2p_blocking_s_per_micro_batch += p2p_block[j];
      sr.host_exposed_s_per_micro_batch += host_wait[j];
      params += chunk_params[j];
      fp8_params += chunk_fp8_params[j];
      act_per_mb += act[j];
      fwd_mb += fwd[j];
      bwd_mb += bwd[j];
      nic_bwd_mb += nic_bwd[j];
      fwd_tr_max = std::max(fwd_tr_max, fwd_tr[j]);
      bwd_tr_max = std::max(bwd_tr_max, bwd_tr[j]);
    }
    sr.params = params.total();
    sr.expert_params = params.expert;
    const StaticMemory mem = static_memory(params, fp8_params, largest_layer, bucket, st, groups);
    sr.weight_bytes = mem.weight_bytes;
    sr.grad_bytes = mem.grad_bytes;
    sr.optimizer_bytes = mem.optimizer_bytes;
    sr.model_mem_bytes = mem.total();

    sr.pipeline_busy_s = pipe.rank_busy_s[r];
    sr.pipeline_finish_s = pipe.rank_finish_s[r];
    sr.bubble_s = sr.pipeline_finish_s - sr.pipeline_busy_s;
    sr.bubble_fraction = sr.pipeline_finish_s > 0 ? sr.bubble_s / sr.pipeline_finish_s : 0;

    // Per-iteration DP communication: ZeRO-0/1 reduce the gradients once after the last
    // micro-batch (hidden behind its backward with overlap_grad_reduce, bucket by bucket);
    // ZeRO-1/2 all-gather the updated parameters (hidden behind the next forward with
    // overlap_param_gather). ZeRO-2/3's per-micro-batch collectives are in the stage times.
    const double buckets = std::max(1.0, std::ceil(params.total() / bucket));
    if (st.zero_state <= 1) {
      const double c = nic_contended_s(grad_reduce_s(params, st, groups, coster, &tally),
                                       st.overlap_grad_reduce && dp_nic ? nic_bwd_mb : 0.0);
      if (st.overlap_grad_reduce && v > 1 && params.total() > 0) {
        // Interleaved: one sync per model chunk after its last backward (overlap.h), each the
        // chunk's share of the reduction. Its cover is the last micro-batch group's backwards of
        // chunks k-1 … 0 (pipeline_schedule.h) less the first r of them: Megatron launches chunk
        // k's sync r backward units late on rank r (grad_sync_virtual_microbatch_id = id − rank, so
        // every rank launches at the same wall time), after the schedule when fewer are left.
        const int last_group = last_micro_batch_group(m, st.microbatch_group());
        std::vector<double> chunk_comm(v), tail(v, 0.0);
        for (int k = 0; k < v; ++k) {
          chunk_comm[k] = c * chunk_params[k * p + r].total() / params.total();
          int late = r;
          for (int j = k - 1; j >= 0; --j) {
            const int skipped = std::min(late, last_group);
            late -= skipped;
            tail[k] += (last_group - skipped) * bwd[j * p + r];
          }
        }
        sr.dp_comm_s += chunked_sync_exposed_s(chunk_comm, tail, slow);
      } else {
        sr.dp_comm_s += bucketed_overlap_s(c, st.overlap_grad_reduce ? bwd_mb : 0.0, buckets, slow);
      }
    }
    if (st.zero_state == 1 || st.zero_state == 2) {
      const int passes = param_gather_passes(params, st);  // 2: Megatron's chained MoE optimizers
      const double c = passes * param_gather_s(params, fp8_params, st, groups, coster, &tally);
      if (st.overlap_param_gather && v > 1 && params.total() > 0) {
        // Interleaved: one gather per model chunk, launched ahead of the chunk's first forward
        // (overlap.h); each chunk's share of the gather and its own buckets.
        std::vector<double> chunk_comm(v), chunk_fwd(v), chunk_buckets(v);
        for (int k = 0; k < v; ++k) {
          const double kp = chunk_params[k * p + r].total();
          chunk_comm[k] = c * kp / params.total();
          chunk_fwd[k] = fwd[k * p + r];
          chunk_buckets[k] = passes * std::max(1.0, std::ceil(kp / bucket));
        }
        sr.dp_comm_s += chunked_gather_exposed_s(chunk_comm, chunk_fwd, chunk_buckets, st.microbatch_group(), r, slow);
      } else {
        sr.dp_comm_s += bucketed_overlap_s(c, st.overlap_param_gather ? fwd_mb : 0.0, passes * buckets, slow);
      }
    }
    if ((!model.untie_embeddings_and_output_weights || D > 0) && p > 1 && (sr.has_embedding || sr.has_head)) {
      sr.dp_comm_s += coster.collective_s({CollectiveOp::all_reduce, static_cast<std::int64_t>(vocab_rank * grad_e), 2,
                                           placed.pp_ends, st.dtype},
                                          &tally);
    }
    // The optimizer step's HBM passes (data_parallel.h optimizer_step_bytes): Adam, the norm and
    // the master-to-model copy over this rank's GPU shard, and the zeroing / NaN check / 1/dp
    // scaling over its whole gradient buffer. With optimizer_cpu_offload the host runs its
    // fraction after the gradients cross the host link (fp32) and the updated bf16 parameters
    // come back; the GPU part runs concurrently.
    const double shard = optimizer_shard_params(params, st, groups);
    const double host_part = st.optimizer_cpu_offload ? st.optimizer_offload_fraction : 0.0;
    const OptimizerStepBytes ob = optimizer_step_bytes(shard * (1.0 - host_part), mem.grad_bytes, st);
    sr.optimizer_s = coster.memory_s({"adam_step", static_cast<std::int64_t>(ob.adam_bytes)}, &tally) +
                     coster.memory_s({"copy", static_cast<std::int64_t>(ob.grad_buffer_bytes)}, &tally);
    if (host_part > 0) {
      const double host_params = shard * host_part;
      const double host_s = host_params * (4.0 + act_e) / host_bw + host_params / sys.host_adam_params_per_s;
      sr.optimizer_s = std::max(sr.optimizer_s, host_s);
    }
    optimizer_max = std::max(optimizer_max, sr.optimizer_s);
    step = std::max(step, sr.pipeline_finish_s + sr.dp_comm_s);

    // Memory.
    sr.fwd_activation_cache_per_micro_batch_bytes = act_per_mb;
    sr.max_micro_batches_in_flight = pipe.max_in_flight[r];
    sr.peak_activation_mem_in_1F1B_bytes = pipe.peak_act_bytes[r];
    sr.fwd_peak_allocated_mem_bytes = sr.model_mem_bytes + sr.peak_activation_mem_in_1F1B_bytes + fwd_tr_max;
    sr.bwd_peak_allocated_mem_bytes = sr.model_mem_bytes + sr.peak_activation_mem_in_1F1B_bytes + bwd_tr_max;
    const bool bwd_peak = sr.bwd_peak_allocated_mem_bytes >= sr.fwd_peak_allocated_mem_bytes;
    sr.peak_mem_bytes = std::max(sr.fwd_peak_allocated_mem_bytes, sr.bwd_peak_allocated_mem_bytes);
    sr.peak_mem_with_reserved_bytes = sr.peak_mem_bytes / st.mem_factor;
    if (opt.details) sr.peak_path = fmt::format(
        "{}: model {:.2f} GB (weights {:.2f} + grads {:.2f} + optimizer {:.2f}) + activations {:.2f} GB "
        "({} micro-batch chunk(s) in flight) + transient {:.2f} GB",
        bwd_peak ? "backward" : "forward", sr.model_mem_bytes / kGB, sr.weight_bytes / kGB, sr.grad_bytes / kGB,
        sr.optimizer_bytes / kGB, sr.peak_activation_mem_in_1F1B_bytes / kGB, sr.max_micro_batches_in_flight,
        (bwd_peak ? bwd_tr_max : fwd_tr_max) / kGB);
    if (sr.peak_mem_with_reserved_bytes > res.device_memory_bytes) res.fits_in_memory = false;
  }
  step += optimizer_max;
  if (!res.fits_in_memory) {
    double worst = 0;
    for (const auto& sr : res.stages) worst = std::max(worst, sr.peak_mem_with_reserved_bytes);
    res.warnings.push_back(fmt::format("does not fit: peak memory with reserved {:.1f} GB exceeds the device's {:.1f} GB",
                                       worst / kGB, res.device_memory_bytes / kGB));
  }

  // Critical stage: the one whose pipeline end plus DP communication is last.
  int crit = 0;
  for (int r = 1; r < p; ++r) {
    const auto& a = res.stages[r];
    const auto& b = res.stages[crit];
    if (a.pipeline_finish_s + a.dp_comm_s > b.pipeline_finish_s + b.dp_comm_s) crit = r;
  }
  res.critical_rank = crit;
  const StageReport& cs = res.stages[crit];
  // Stragglers: a synchronous step waits for the slowest of N GPUs; with per-GPU step times of
  // coefficient of variation cv, the expected maximum of N normal draws is about
  // mean·(1 + cv·sqrt(2·ln N)), charged on the critical stage's busy time.
  if (sys.straggler_cv > 0 && st.world_size > 1) {
    res.straggler_s = cs.pipeline_busy_s * sys.straggler_cv * std::sqrt(2.0 * std::log(static_cast<double>(st.world_size)));
    step += res.straggler_s;
  }
  res.duration_time_per_iter_s = step;
  double chunk = 0;
  for (const auto& sr : res.stages) chunk = std::max(chunk, sr.fwd_s_per_micro_batch + sr.bwd_s_per_micro_batch);
  res.chunk_time_s = chunk;
  res.recompute_s = cs.recompute_s_per_micro_batch * m;
  res.attention_kernel_s = cs.attention_s_per_micro_batch * m;
  res.tp_comm_exposed_s = cs.tp_comm_s_per_micro_batch * m;
  res.cp_comm_exposed_s = cs.cp_comm_s_per_micro_batch * m;
  // Plus what the warm-up forwards and cool-down backwards pay without a 1F1B partner.
  res.ep_comm_exposed_s = cs.ep_comm_s_per_micro_batch * m + pipe.rank_unpaired_extra_s[crit];
  res.offload_exposed_s = cs.offload_s_per_micro_batch * m;
  res.host_exposed_s = cs.host_exposed_s_per_micro_batch * m;
  res.compute_s = cs.pipeline_busy_s - res.recompute_s - res.tp_comm_exposed_s - res.cp_comm_exposed_s -
                  res.ep_comm_exposed_s - res.offload_exposed_s - res.host_exposed_s - (cs.dp_comm_s_per_micro_batch +
                  cs.p2p_blocking_s_per_micro_batch) * m;
  res.pp_comm_exposed_s = 0;
  res.bubble_s = cs.bubble_s;
  res.bubble_fraction = cs.bubble_fraction;
  res.dp_comm_exposed_s = cs.dp_comm_s + cs.dp_comm_s_per_micro_batch * m;
  res.optimizer_s = optimizer_max;
  if (p > 1) {
    // Send/recv sits on the critical path: the part of the stage's idle time spent waiting on
    // transfers is PP communication, the rest is the schedule's bubble.
    res.pp_comm_exposed_s = pipe.rank_p2p_wait_s[crit];
    res.bubble_s = std::max(0.0, cs.bubble_s - res.pp_comm_exposed_s);
    res.pp_comm_exposed_s += cs.p2p_blocking_s_per_micro_batch * m;
  }

  // Throughput and FLOP metrics.
  const double world = st.world_size;
  res.all_tokens_per_iter = static_cast<double>(st.global_batch_size) * st.seq_len;
  res.tokens_per_s = res.all_tokens_per_iter / step;
  res.tokens_per_s_per_gpu = res.tokens_per_s / world;
  res.throughput_per_accelerator = res.tokens_per_s_per_gpu;
  const double denom = step * world * peak_flops;
  res.mfu = res.stats.model_flops_per_token * res.all_tokens_per_iter / denom;
  res.mfu_6nd_with_attn = res.mfu;
  res.mfu_6nd = res.stats.flops_6n_per_token * res.all_tokens_per_iter / denom;
  res.mfu_causal = res.stats.model_flops_per_token_causal * res.all_tokens_per_iter / denom;
  res.tflops_per_gpu = res.stats.model_flops_per_token * res.all_tokens_per_iter / step / world / 1e12;
  // HFU: the model FLOPs (same convention as mfu) plus the FLOPs of recomputed forwards, which
  // each TP rank executes for its 1/t share.
  double recompute_flops = 0;
  for (int j = 0; j < stages; ++j) recompute_flops += rc_flops[j];
  recompute_flops *= static_cast<double>(m) * st.dp_size * st.tp_size * st.cp_size;
  // MTP depths are executed work outside the model-FLOP convention: HFU counts them, MFU does not.
  res.hfu = ((res.stats.model_flops_per_token + res.stats.mtp_flops_per_token) * res.all_tokens_per_iter +
             recompute_flops) /
            denom;
  if (res.mfu > 1 || res.hfu > 1) {
    // Not a modelling error: the convention counts causal attention as if unmasked, so at long
    // sequences the counted FLOPs exceed what the GPU executes.
    res.warnings.push_back(fmt::format(
        "MFU {:.1f} % / HFU {:.1f} % exceed 100 %: the convention counts causal attention's FLOPs as non-causal "
        "(twice the work executed); the causal MFU is {:.1f} %",
        100 * res.mfu, 100 * res.hfu, 100 * res.mfu_causal));
  }

  res.kernels_per_source = tally.kernels;
  // Names only for origins that occur: a simulation without scaled rows allocates nothing here.
  for (int id = 1; id < kOriginIdCount; ++id) {
    if (tally.origins[id] > 0) res.kernels_per_origin.push_back({std::string(eff.origin(id)), tally.origins[id]});
  }
  if (opt.details) {
    std::set<std::string> uniq(mc.roofline_keys.begin(), mc.roofline_keys.end());
    uniq.insert(stage_keys.begin(), stage_keys.end());
    res.roofline_keys.assign(uniq.begin(), uniq.end());
  }
  res.host_dispatch_modeled = sys.host_op_dispatch_us > 0 || sys.host_sync_us > 0;
  if (res.host_dispatch_modeled && opt.details) {
    auto report = [&](const char* name, const BlockCost& b, bool present) {
      if (!present) return;
      const double gpu_f = b.fwd_s - b.host_exposed_fwd_s, gpu_b = b.bwd_s - b.host_exposed_bwd_s;
      res.host_blocks.push_back({name, gpu_f, b.host_fwd_s, b.host_exposed_fwd_s, gpu_b, b.host_bwd_s,
                                 b.host_exposed_bwd_s, b.host_syncs_fwd,
                                 b.host_fwd_s > gpu_f || b.host_bwd_s > gpu_b ? "host" : "gpu"});
    };
    report("layer", mc.layer, model.dense_layers > 0 || !model.is_moe);
    report("moe_layer", mc.moe_layer, model.is_moe && model.dense_layers < model.layer_num);
    report("embedding", emb, true);
    report("head", head, true);
    report("mtp", mc.mtp, D > 0);
  }
  if (opt.trace) res.events = std::move(pipe.events);
  return res;
}

}  // namespace calisim
