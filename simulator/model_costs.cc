#include "simulator/model_costs.h"

#include <algorithm>
#include <set>

#include "simulator/op_cost.h"

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

BlockCost cost_block(const std::vector<LayerOp>& ops, const RecomputePlan* plan, const OpCoster& coster,
                     SourceTally* tally, const char* scope, std::vector<OpReport>* report) {
  BlockCost b;
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const LayerOp& op = ops[i];
    const OpTiming t = coster.cost(op, tally);
    b.fwd_s += t.fwd_s();
    b.bwd_s += t.bwd_s();
    b.tp_comm_fwd_s += t.fwd_comm_s;
    b.tp_comm_bwd_s += t.bwd_comm_s;
    b.fwd_flops += op.fwd_flops();
    b.bwd_flops += op.bwd_flops();
    b.act_bytes += op.act_bytes;
    b.bwd_transient_bytes = std::max(b.bwd_transient_bytes, op.transient_bytes + 2 * op.act_bytes);
    const bool rc = plan && plan->recomputed[i];
    if (!rc || plan->keeps_input[i]) b.act_bytes_recomputed += op.act_bytes;
    if (rc) {
      const bool last_of_run = i + 1 == ops.size() || !plan->recomputed[i + 1];
      if (!(plan->skip_last_forward && last_of_run)) {
        b.recompute_fwd_s += t.fwd_s();
        b.recompute_flops += op.fwd_flops();
      }
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
      r.efficiency = t.efficiency;
      r.source = std::string(to_string(t.source));
      r.fwd_key = fwd_key_of(op);
      r.recomputed = rc;
      report->push_back(std::move(r));
    }
  }
  // Forward transients: logits and cross-entropy working copies on the last stage.
  for (const LayerOp& op : ops) b.fwd_transient_bytes = std::max(b.fwd_transient_bytes, op.transient_bytes);
  return b;
}

}  // namespace

ModelCosts cost_model(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                      const EfficiencyModel& eff, bool details) {
  ModelCosts mc;
  const ModelOps ops = build_model_ops(model, st, sys.scale_up_domain_size);
  const RecomputePlan plan = recompute_plan(ops.layer, st);
  const OpCoster coster(sys, eff);
  SourceTally tally;
  std::vector<std::string> keys;
  if (details) tally.roofline_keys = &keys;
  std::vector<OpReport>* report = details ? &mc.ops : nullptr;
  mc.layer = cost_block(ops.layer, &plan, coster, &tally, "layer", report);
  mc.embedding = cost_block(ops.embedding, nullptr, coster, &tally, "embedding", report);
  mc.head = cost_block(ops.head, nullptr, coster, &tally, "head", report);
  mc.p2p_bytes = ops.p2p_bytes;
  mc.kernels_per_source = tally.kernels;
  mc.roofline_keys = std::move(keys);
  return mc;
}

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
                 s.use_fp32_accum_grad, s.use_fused_grad_accumulation, s.cross_entropy_loss_fusion}) {
    f |= static_cast<std::uint32_t>(b) << bit++;
  }
  k.flags = f;
  std::uint32_t r = s.recompute_active() ? static_cast<std::uint32_t>(s.recompute_granularity) : 0u;
  bit = 4;
  for (bool b : {s.attn_recompute, s.mla_rms_recompute, s.mlp_recompute, s.mlp_rms_recompute, s.recompute_variance}) {
    r |= static_cast<std::uint32_t>(b && s.recompute_active()) << bit++;
  }
  k.recompute = r;
  return k;
}

}  // namespace calisim
