#include "simulator/model_costs.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "simulator/flex_dispatch.h"
#include "simulator/host_dispatch.h"
#include "simulator/op_cost.h"
#include "simulator/overlap.h"
#include "simulator/rank_placement.h"

namespace calisim {
namespace {

const char* kind_name(OpKind k) {
  switch (k) {
    case OpKind::gemm: return "gemm";
    case OpKind::attention: return "attention";
    case OpKind::memory: return "memory";
  }
  return "memory";
}

std::string fwd_key_of(const LayerOp& op) {
  switch (op.kind) {
    case OpKind::gemm: return to_string(op.gemm_fwd);
    case OpKind::attention: return to_string(op.attn_fwd);
    case OpKind::memory: return to_string(op.mem_fwd);
  }
  return "";
}

// How the host side of a block is modeled: the settings, whether the block is a MoE layer (its
// pre-MLP norm belongs to the moe_router graph scope) and where its forward synchronises (-1: none).
struct HostContext {
  const HostDispatchSettings* settings = nullptr;  // nullptr = host side not modeled
  bool moe_block = false;
  int sync_index = -1;
};

// The host's issue time of the block and the GPU idle time it causes, added to fwd_s / bwd_s.
void apply_host_dispatch(BlockCost& b, const std::vector<LayerOp>& ops, const std::vector<double>& gpu_fwd,
                         const std::vector<double>& gpu_bwd, const HostContext& host) {
  const HostBlockTiming h = host_block_timing(ops, gpu_fwd, gpu_bwd, *host.settings, host.moe_block, host.sync_index);
  b.host_fwd_s = h.host_fwd_s;
  b.host_bwd_s = h.host_bwd_s;
  b.host_exposed_fwd_s = h.exposed_fwd_s;
  b.host_exposed_bwd_s = h.exposed_bwd_s;
  b.host_syncs_fwd = h.syncs_fwd;
  b.fwd_s += h.exposed_fwd_s;
  b.bwd_s += h.exposed_bwd_s;
  // A recomputed forward is issued again: its share of the forward's GPU time carries the same
  // share of the host exposure (all of it under full recompute, syncs included).
  if (b.recompute_fwd_s > 0 && h.gpu_fwd_s > 0) {
    b.recompute_fwd_s += h.exposed_fwd_s * std::min(1.0, b.recompute_fwd_s / h.gpu_fwd_s);
  }
}

BlockCost cost_block(const std::vector<LayerOp>& ops, const RecomputePlan* plan, const OpCoster& coster,
                     SourceTally* tally, const char* scope, std::vector<OpReport>* report,
                     const HostContext& host = {}) {
  BlockCost b;
  std::vector<double> gpu_fwd, gpu_bwd;  // per op, for the host-dispatch model
  if (host.settings) gpu_fwd.reserve(ops.size()), gpu_bwd.reserve(ops.size());
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const LayerOp& op = ops[i];
    const OpTiming t = coster.cost(op, tally);
    if (host.settings) gpu_fwd.push_back(t.fwd_s()), gpu_bwd.push_back(t.bwd_s());
    b.fwd_s += t.fwd_s();
    b.bwd_s += t.bwd_s();
    switch (op.comm_group) {
      case CommGroup::tp: b.tp_comm_fwd_s += t.fwd_comm_s, b.tp_comm_bwd_s += t.bwd_comm_s; break;
      case CommGroup::cp: b.cp_comm_fwd_s += t.fwd_comm_s, b.cp_comm_bwd_s += t.bwd_comm_s; break;
      case CommGroup::ep: b.ep_comm_fwd_s += t.fwd_comm_s, b.ep_comm_bwd_s += t.bwd_comm_s; break;
    }
    if (op.unit == OpUnit::shared_expert) {
      b.shared_expert_fwd_s += t.fwd_compute_s;
      b.shared_expert_bwd_s += t.bwd_compute_s;
    }
    b.compute_fwd_s += t.fwd_compute_s;
    b.compute_bwd_s += t.bwd_compute_s;
    const bool attention_core = op.unit == OpUnit::attention_core;
    if (attention_core) {
      b.attention_fwd_s += t.fwd_compute_s;
      b.attention_bwd_s += t.bwd_compute_s;
    }
    b.fwd_flops += op.fwd_flops();
    b.bwd_flops += op.bwd_flops();
    b.act_bytes += op.act_bytes;
    b.bwd_transient_bytes = std::max(b.bwd_transient_bytes, op.bwd_transient_bytes >= 0
                                                                ? op.bwd_transient_bytes
                                                                : op.transient_bytes + 2 * op.act_bytes);
    const bool rc = plan && plan->recomputed[i];
    b.act_bytes_recomputed += plan ? plan->kept_bytes[i] : op.act_bytes;
    if (plan && plan->rerun[i] > 0) {
      b.recompute_fwd_s += plan->rerun[i] * t.fwd_s();
      if (attention_core) b.attention_recompute_s += plan->rerun[i] * t.fwd_compute_s;
      b.recompute_flops += plan->rerun[i] * op.fwd_flops();
    }
    if (report) {
      OpReport r;
      r.name = op.name;
      r.scope = scope;
      r.kind = kind_name(op.kind);
      r.fwd_s = t.fwd_compute_s;
      r.bwd_s = t.bwd_compute_s;
      r.fwd_comm_s = t.fwd_comm_s;
      r.bwd_comm_s = t.bwd_comm_s;
      r.fwd_flops = op.fwd_flops();
      r.bwd_flops = op.bwd_flops();
      r.act_bytes = op.act_bytes;
      r.act_bytes_recomputed = plan ? plan->kept_bytes[i] : op.act_bytes;
      r.efficiency = t.efficiency;
      r.source = std::string(to_string(t.source));
      if (t.origin != 0) r.origin = std::string(coster.efficiency_model().origin(t.origin));
      r.fwd_key = fwd_key_of(op);
      r.recomputed = rc;
      report->push_back(std::move(r));
    }
  }
  // Forward transients: logits and cross-entropy working copies on the last stage.
  for (const LayerOp& op : ops) b.fwd_transient_bytes = std::max(b.fwd_transient_bytes, op.transient_bytes);
  if (host.settings) apply_host_dispatch(b, ops, gpu_fwd, gpu_bwd, host);
  return b;
}

// Expert-parallel all-to-all overlap across ops of a MoE layer (the per-op model cannot see it):
// Megatron's --moe-shared-expert-overlap runs the shared experts while the dispatch / combine
// all-to-all are in flight; --overlap-moe-expert-parallel-comm (1F1B A2A overlap) hides them
// behind the compute of another micro-batch, i.e. at most the whole layer's compute.
void apply_moe_overlap(BlockCost& b, const StrategyConfig& st, double slowdown) {
  auto hide = [&](double& ep, double& total, double window) {
    const double after = overlap_extra_s(window, ep, slowdown);
    total -= ep - after;
    const double saved = ep - after;
    ep = after;
    return saved;
  };
  if (st.overlap_moe_expert_parallel_comm) {
    b.ep_paired_saving_fwd_s = hide(b.ep_comm_fwd_s, b.fwd_s, b.compute_fwd_s);
    b.ep_paired_saving_bwd_s = hide(b.ep_comm_bwd_s, b.bwd_s, b.compute_bwd_s);
  } else if (st.moe_shared_expert_overlap) {
    hide(b.ep_comm_fwd_s, b.fwd_s, b.shared_expert_fwd_s);
    hide(b.ep_comm_bwd_s, b.bwd_s, b.shared_expert_bwd_s);
  }
}

// Sequential blocks: times, FLOPs and kept bytes add; transients are the largest of either.
void append_block(BlockCost& into, const BlockCost& b) {
  into.fwd_s += b.fwd_s;
  into.bwd_s += b.bwd_s;
  into.tp_comm_fwd_s += b.tp_comm_fwd_s;
  into.tp_comm_bwd_s += b.tp_comm_bwd_s;
  into.cp_comm_fwd_s += b.cp_comm_fwd_s;
  into.cp_comm_bwd_s += b.cp_comm_bwd_s;
  into.ep_comm_fwd_s += b.ep_comm_fwd_s;
  into.ep_comm_bwd_s += b.ep_comm_bwd_s;
  into.recompute_fwd_s += b.recompute_fwd_s;
  into.fwd_flops += b.fwd_flops;
  into.bwd_flops += b.bwd_flops;
  into.recompute_flops += b.recompute_flops;
  into.compute_fwd_s += b.compute_fwd_s;
  into.compute_bwd_s += b.compute_bwd_s;
  into.shared_expert_fwd_s += b.shared_expert_fwd_s;
  into.shared_expert_bwd_s += b.shared_expert_bwd_s;
  into.attention_fwd_s += b.attention_fwd_s;
  into.attention_bwd_s += b.attention_bwd_s;
  into.attention_recompute_s += b.attention_recompute_s;
  into.ep_paired_saving_fwd_s += b.ep_paired_saving_fwd_s;
  into.ep_paired_saving_bwd_s += b.ep_paired_saving_bwd_s;
  into.act_bytes += b.act_bytes;
  into.act_bytes_recomputed += b.act_bytes_recomputed;
  into.host_fwd_s += b.host_fwd_s;
  into.host_bwd_s += b.host_bwd_s;
  into.host_exposed_fwd_s += b.host_exposed_fwd_s;
  into.host_exposed_bwd_s += b.host_exposed_bwd_s;
  into.host_syncs_fwd += b.host_syncs_fwd;
  into.fwd_transient_bytes = std::max(into.fwd_transient_bytes, b.fwd_transient_bytes);
  into.bwd_transient_bytes = std::max(into.bwd_transient_bytes, b.bwd_transient_bytes);
}

// One block kind's cost when a fraction w of its layers is windowed: per-layer times, FLOPs and
// bytes are the layer-count-weighted mean of the two variants (exact for a stage holding the two
// kinds in that ratio, e.g. an even run of GPT-OSS's alternating layers); transients the larger.
BlockCost mix_blocks(const BlockCost& full, const BlockCost& win, double w) {
  auto mix = [w](double a, double b) { return a * (1 - w) + b * w; };
  BlockCost m = full;
  m.fwd_s = mix(full.fwd_s, win.fwd_s);
  m.bwd_s = mix(full.bwd_s, win.bwd_s);
  m.tp_comm_fwd_s = mix(full.tp_comm_fwd_s, win.tp_comm_fwd_s);
  m.tp_comm_bwd_s = mix(full.tp_comm_bwd_s, win.tp_comm_bwd_s);
  m.cp_comm_fwd_s = mix(full.cp_comm_fwd_s, win.cp_comm_fwd_s);
  m.cp_comm_bwd_s = mix(full.cp_comm_bwd_s, win.cp_comm_bwd_s);
  m.ep_comm_fwd_s = mix(full.ep_comm_fwd_s, win.ep_comm_fwd_s);
  m.ep_comm_bwd_s = mix(full.ep_comm_bwd_s, win.ep_comm_bwd_s);
  m.recompute_fwd_s = mix(full.recompute_fwd_s, win.recompute_fwd_s);
  m.fwd_flops = mix(full.fwd_flops, win.fwd_flops);
  m.bwd_flops = mix(full.bwd_flops, win.bwd_flops);
  m.recompute_flops = mix(full.recompute_flops, win.recompute_flops);
  m.compute_fwd_s = mix(full.compute_fwd_s, win.compute_fwd_s);
  m.compute_bwd_s = mix(full.compute_bwd_s, win.compute_bwd_s);
  m.shared_expert_fwd_s = mix(full.shared_expert_fwd_s, win.shared_expert_fwd_s);
  m.shared_expert_bwd_s = mix(full.shared_expert_bwd_s, win.shared_expert_bwd_s);
  m.attention_fwd_s = mix(full.attention_fwd_s, win.attention_fwd_s);
  m.attention_bwd_s = mix(full.attention_bwd_s, win.attention_bwd_s);
  m.attention_recompute_s = mix(full.attention_recompute_s, win.attention_recompute_s);
  m.ep_paired_saving_fwd_s = mix(full.ep_paired_saving_fwd_s, win.ep_paired_saving_fwd_s);
  m.ep_paired_saving_bwd_s = mix(full.ep_paired_saving_bwd_s, win.ep_paired_saving_bwd_s);
  m.act_bytes = mix(full.act_bytes, win.act_bytes);
  m.act_bytes_recomputed = mix(full.act_bytes_recomputed, win.act_bytes_recomputed);
  m.fwd_transient_bytes = std::max(full.fwd_transient_bytes, win.fwd_transient_bytes);
  m.bwd_transient_bytes = std::max(full.bwd_transient_bytes, win.bwd_transient_bytes);
  m.host_fwd_s = mix(full.host_fwd_s, win.host_fwd_s);
  m.host_bwd_s = mix(full.host_bwd_s, win.host_bwd_s);
  m.host_exposed_fwd_s = mix(full.host_exposed_fwd_s, win.host_exposed_fwd_s);
  m.host_exposed_bwd_s = mix(full.host_exposed_bwd_s, win.host_exposed_bwd_s);
  return m;  // host_syncs_fwd: the two variants issue the same kernels
}

// One block per kind, every layer alike. attention_tally (optional) also counts the attention
// kernels of the dense and MoE layer alone.
// layers_only: cost the dense and MoE layers alone (embedding, head and MTP stay zero).
ModelCosts cost_model_uniform(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                              const EfficiencyModel& eff, bool details, SourceTally* attention_tally = nullptr,
                              bool layers_only = false);
ModelCosts cost_model_mixed(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                            const EfficiencyModel& eff, bool details, bool layers_only);

}  // namespace

// Layers kept out of FP8 (first_last_layers_bf16): the dense and MoE layer are costed a second
// time with FP8 off and kept beside the FP8 ones; their kernels join the tallies, their ops the
// report under the scopes "layer_bf16" / "moe_layer_bf16".
ModelCosts cost_model(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                      const EfficiencyModel& eff, bool details) {
  ModelCosts mc = cost_model_mixed(model, st, sys, eff, details, false);
  if (!st.has_bf16_layers()) return mc;
  StrategyConfig bf = st;
  bf.fp8 = Fp8Recipe::none;
  bf.fp8_param_gather = false;
  bf.num_layers_at_start_in_bf16 = bf.num_layers_at_end_in_bf16 = 0;
  ModelCosts b = cost_model_mixed(model, bf, sys, eff, details, true);
  mc.layer_bf16 = b.layer;
  mc.moe_layer_bf16 = b.moe_layer;
  for (std::size_t i = 0; i < mc.kernels_per_source.size(); ++i) mc.kernels_per_source[i] += b.kernels_per_source[i];
  for (std::size_t i = 0; i < mc.kernels_per_origin.size(); ++i) mc.kernels_per_origin[i] += b.kernels_per_origin[i];
  for (OpReport& r : b.ops) {
    r.scope += "_bf16";
    mc.ops.push_back(std::move(r));
  }
  for (std::string& k : b.roofline_keys) mc.roofline_keys.push_back(std::move(k));
  return mc;
}

namespace {

// Sliding-window models (model_config.h): every layer of a block kind costs the same except its
// core attention, so the windowed and the full-attention variant of each kind are costed once
// each and mixed by the share of windowed layers of that kind; the pipeline then sees one mean
// layer per kind (docs/simulator.md "Sliding-window attention and sinks"). The windowed
// variant adds only its attention kernels to the tallies and, with details, its attention ops
// under the scopes "layer_window" / "moe_layer_window".
ModelCosts cost_model_mixed(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                            const EfficiencyModel& eff, bool details, bool layers_only) {
  const std::int64_t n_moe = model.is_moe ? model.layer_num - model.dense_layers : 0;
  const std::int64_t n_dense = model.layer_num - n_moe;
  const std::int64_t w_dense = model.windowed_layers_in(0, n_dense), w_moe = model.windowed_layers_in(n_dense, n_moe);
  if (w_dense == 0 && w_moe == 0) {
    if (model.attention_window_tokens == 0) return cost_model_uniform(model, st, sys, eff, details, nullptr, layers_only);
    ModelConfig full = model;  // a pattern without windowed layers
    full.attention_window_tokens = 0;
    return cost_model_uniform(full, st, sys, eff, details, nullptr, layers_only);
  }
  // Every layer windowed: the MTP layer too (below).
  if (w_dense == n_dense && w_moe == n_moe) return cost_model_uniform(model, st, sys, eff, details, nullptr, layers_only);
  ModelConfig full = model;
  full.attention_window_tokens = 0;
  ModelCosts mc = cost_model_uniform(full, st, sys, eff, details, nullptr, layers_only);
  SourceTally win_attention;
  const ModelCosts win = cost_model_uniform(model, st, sys, eff, details, &win_attention, layers_only);
  const double f_dense = n_dense > 0 ? static_cast<double>(w_dense) / static_cast<double>(n_dense) : 0.0;
  const double f_moe = n_moe > 0 ? static_cast<double>(w_moe) / static_cast<double>(n_moe) : 0.0;
  mc.layer = mix_blocks(mc.layer, win.layer, f_dense);
  mc.moe_layer = mix_blocks(mc.moe_layer, win.moe_layer, f_moe);
  // mc.mtp stays the full-attention variant: a pattern that leaves some layers full is taken to
  // leave the MTP layer full too (named assumption; no shipped model has both).
  for (std::size_t i = 0; i < mc.kernels_per_source.size(); ++i) mc.kernels_per_source[i] += win_attention.kernels[i];
  for (std::size_t i = 0; i < mc.kernels_per_origin.size(); ++i) mc.kernels_per_origin[i] += win_attention.origins[i];
  for (const OpReport& r : win.ops) {
    if (r.kind != "attention" || (r.scope != "layer" && r.scope != "moe_layer")) continue;
    if ((r.scope == "layer" && w_dense == 0) || (r.scope == "moe_layer" && w_moe == 0)) continue;
    OpReport w = r;
    w.scope += "_window";
    mc.ops.push_back(std::move(w));
  }
  for (const std::string& k : win.roofline_keys) {
    if (k.rfind("attn ", 0) == 0) mc.roofline_keys.push_back(k);
  }
  return mc;
}

ModelCosts cost_model_uniform(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                              const EfficiencyModel& eff, bool details, SourceTally* attention_tally, bool layers_only) {
  if (st.fp8_enabled() && sys.device.peak_tflops[static_cast<int>(DType::fp8_e4m3)] <= 0) {
    throw InputError(sys.error_label(), "device.peak_tflops.fp8", "the strategy enables fp8 but the device has no FP8 peak");
  }
  if (st.fp8 == Fp8Recipe::mxfp8 && sys.topology.arch != NcclArch::blackwell) {
    // MXFP8 scales every 32 elements in the tensor core (Blackwell's block-scaled MMA);
    // Transformer Engine refuses the recipe below compute capability 10.0. Hopper's block
    // scaling is the "blockwise" recipe (128x128 weights, 1x128 activations).
    throw InputError(sys.error_label(), "network.nccl_arch",
                     fmt::format("fp8_recipe \"mxfp8\" needs Blackwell's block-scaled tensor cores, and this system's "
                                 "architecture is \"{}\" (use fp8_recipe \"blockwise\" for block scaling on Hopper)",
                                 to_string(sys.topology.arch)));
  }
  if (sys.device.peak_tflops[static_cast<int>(st.dtype)] <= 0) {
    throw InputError(sys.error_label(), fmt::format("device.peak_tflops.{}", to_string(st.dtype)),
                     fmt::format("the strategy trains in {} but the device has no {} peak (a positive TFLOP/s "
                                 "figure is expected)",
                                 to_string(st.dtype), to_string(st.dtype)));
  }
  ModelCosts mc;
  const ModelOps ops = build_model_ops(model, st, sys.scale_up_domain_size);
  const RecomputePlan plan = recompute_plan(ops.layer, st);
  const OpCoster coster(sys, eff, st.nccl);
  SourceTally tally;
  std::vector<std::string> keys;
  if (details) tally.roofline_keys = &keys;
  std::vector<OpReport>* report = details ? &mc.ops : nullptr;
  const HostDispatchSettings host_settings = host_dispatch_settings(sys, st, model);
  const HostDispatchSettings* hs = host_settings.enabled() ? &host_settings : nullptr;
  auto host_for = [&](const std::vector<LayerOp>& list, bool moe_block) {
    return HostContext{hs, moe_block, moe_sync_index(list, st, moe_block, model.moe_pad_expert_input_to_capacity)};
  };
  mc.layer = cost_block(ops.layer, &plan, coster, &tally, "layer", report, host_for(ops.layer, false));
  if (!ops.moe_layer.empty()) {
    const RecomputePlan moe_plan = recompute_plan(ops.moe_layer, st);
    mc.moe_layer = cost_block(ops.moe_layer, &moe_plan, coster, &tally, "moe_layer", report,
                              host_for(ops.moe_layer, true));
    apply_moe_overlap(mc.moe_layer, st, flex_overlap_slowdown(st, sys));
  }
  if (!layers_only) {
    mc.embedding = cost_block(ops.embedding, nullptr, coster, &tally, "embedding", report, host_for(ops.embedding, false));
    mc.head = cost_block(ops.head, nullptr, coster, &tally, "head", report, host_for(ops.head, false));
  }
  if (!ops.mtp_layer.empty() && !layers_only) {
    // Megatron checkpoints the MTP core under full recompute and applies the selective modules
    // inside its transformer layer, which recompute_plan does for this op list too.
    mc.mtp = cost_block(ops.mtp_embedding, nullptr, coster, &tally, "mtp", report, host_for(ops.mtp_embedding, false));
    const RecomputePlan mtp_plan = recompute_plan(ops.mtp_layer, st);
    BlockCost core = cost_block(ops.mtp_layer, &mtp_plan, coster, &tally, "mtp", report,
                                host_for(ops.mtp_layer, model.mtp_layer_is_moe()));
    if (model.mtp_layer_is_moe()) apply_moe_overlap(core, st, flex_overlap_slowdown(st, sys));
    append_block(mc.mtp, core);
    append_block(mc.mtp, cost_block(ops.mtp_head, nullptr, coster, &tally, "mtp", report, host_for(ops.mtp_head, false)));
  }
  mc.p2p_bytes = ops.p2p_bytes;
  if (attention_tally) {
    for (const std::vector<LayerOp>* list : {&ops.layer, &ops.moe_layer}) {
      for (const LayerOp& op : *list) {
        if (op.kind == OpKind::attention) coster.cost(op, attention_tally);
      }
    }
  }
  mc.kernels_per_source = tally.kernels;
  mc.kernels_per_origin = tally.origins;
  mc.roofline_keys = std::move(keys);
  return mc;
}

}  // namespace

LayerCostKey layer_cost_key(const StrategyConfig& s) {
  LayerCostKey k;
  k.micro_batch_size = s.micro_batch_size;
  k.seq_len = s.seq_len;
  k.tp = s.tp_size;
  k.cp = s.cp_size;
  k.ep = s.ep_size;
  k.etp = s.etp_size;
  std::uint32_t f = static_cast<std::uint32_t>(s.dtype);
  int bit = 4;
  for (bool b : {s.sequence_parallel, s.use_flash_sdp, s.enable_dropout, s.use_fused_norm, s.use_fused_swiglu,
                 s.use_fp32_accum_grad, s.use_fused_grad_accumulation, s.cross_entropy_loss_fusion,
                 s.tp_comm_overlap, s.cp_comm_type == CpCommType::a2a}) {
    f |= static_cast<std::uint32_t>(b) << bit++;
  }
  f |= static_cast<std::uint32_t>(s.fp8) << bit;
  f |= static_cast<std::uint32_t>(s.has_bf16_layers()) << (bit + 3);  // Fp8Recipe takes 3 bits
  f |= static_cast<std::uint32_t>(s.cross_entropy_impl) << (bit + 4);
  f |= static_cast<std::uint32_t>(s.fp8_impl) << (bit + 5);
  f |= static_cast<std::uint32_t>(s.cp_comm_type == CpCommType::all_gather) << (bit + 6);
  f |= static_cast<std::uint32_t>(s.cross_entropy_fusion_impl) << (bit + 7);
  f |= static_cast<std::uint32_t>(s.use_fused_rope) << (bit + 8);
  f |= static_cast<std::uint32_t>(s.cp_impl) << (bit + 9);
  k.flags = f;
  std::uint32_t moe = static_cast<std::uint32_t>(s.moe_dispatcher);
  bit = 4;
  for (bool b : {s.dispatch_probs, s.moe_shared_expert_overlap, s.overlap_moe_expert_parallel_comm,
                 s.moe_grouped_gemm}) {
    moe |= static_cast<std::uint32_t>(b) << bit++;
  }
  moe |= static_cast<std::uint32_t>(s.flex_backend) << 8;
  moe |= static_cast<std::uint32_t>(s.cuda_graph_scope) << 16;
  k.moe = moe;
  k.moe_token_imbalance_factor = s.moe_token_imbalance_factor;
  k.flex_num_sms = s.moe_dispatcher == MoeDispatcher::flex ? s.flex_num_sms : 0;
  const LayerGroupStrides strides = layer_group_strides(s);
  k.tp_stride = strides.tp, k.cp_stride = strides.cp, k.ep_stride = strides.ep, k.etp_stride = strides.etp;
  k.tp_2d_rows = s.tp_mode == TensorParallelMode::two_d ? s.tp_2d_rows : 0;
  k.cp_2d_rows = s.cp_mode == ContextParallelMode::two_d ? s.cp_2d_rows : 0;
  k.nccl = s.nccl;
  std::uint32_t r = s.recompute_active() ? static_cast<std::uint32_t>(s.recompute_granularity) : 0u;
  bit = 4;
  for (bool b : {s.attn_recompute, s.mla_rms_recompute, s.mlp_recompute, s.mlp_rms_recompute, s.recompute_variance,
                 s.recompute_early_stop}) {
    r |= static_cast<std::uint32_t>(b && s.recompute_active()) << bit++;
  }
  if (s.recompute_active()) r |= static_cast<std::uint32_t>(s.megatron_recompute_modules) << 12;
  k.recompute = r;
  return k;
}

}  // namespace calisim
