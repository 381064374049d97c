#include "simulator/op_cost.h"

#include <algorithm>

#include "simulator/comm_model.h"
#include "simulator/overlap.h"

namespace calisim {

void SourceTally::add(const Efficiency& e, const std::string& key_if_recorded) {
  ++kernels[static_cast<int>(e.source)];
  ++origins[e.origin < kOriginIdCount ? e.origin : kOriginIdCount - 1];
  if (roofline_keys && e.source == EfficiencySource::roofline) roofline_keys->push_back(key_if_recorded);
}

double OpCoster::gemm_s(const GemmKey& k, SourceTally* tally, Efficiency* used) const {
  const Efficiency e = eff_.gemm(k);
  if (tally) tally->add_key(e, k);
  if (used) *used = e;
  const double compute = k.flops() / (sys_.device.peak_flops_per_s(k.dtype) * e.value);
  if (e.source != EfficiencySource::roofline) return compute;
  return std::max(compute, k.bytes() / (sys_.device.hbm_bytes_per_s() * sys_.memory_efficiency));
}

double OpCoster::attention_s(const AttentionKey& k, SourceTally* tally, Efficiency* used) const {
  const Efficiency e = eff_.attention(k);
  if (tally) tally->add_key(e, k);
  if (used) *used = e;
  const double compute = k.flops() / (sys_.device.peak_flops_per_s(k.dtype) * e.value);
  if (e.source != EfficiencySource::roofline) return compute;
  return std::max(compute, k.bytes() / (sys_.device.hbm_bytes_per_s() * sys_.memory_efficiency));
}

double OpCoster::memory_s(const MemoryOpKey& k, SourceTally* tally, Efficiency* used) const {
  if (k.bytes <= 0) return 0;
  const Efficiency e = eff_.memory_op(k);
  if (tally) tally->add_key(e, k);
  if (used) *used = e;
  return static_cast<double>(k.bytes) / (sys_.device.hbm_bytes_per_s() * e.value) + sys_.kernel_launch_us * 1e-6;
}

double OpCoster::collective_s(const CollectiveKey& k, SourceTally* tally, int ranks_per_switch) const {
  if (k.ranks <= 1) return 0;
  Efficiency e;
  const double t = collective_time_s(k, sys_, eff_, &e, nccl_, ranks_per_switch);
  if (tally) tally->add_key(e, k);
  return t;
}

OpTiming OpCoster::cost(const LayerOp& op, SourceTally* tally) const {
  OpTiming t;
  Efficiency used;
  const double slow = sys_.comm_compute_slowdown;
  auto comm = [&](const std::optional<CollectiveKey>& k) { return k ? collective_s(*k, tally) : 0.0; };
  const double c_fwd = comm(op.fwd_comm), c_bwd = comm(op.bwd_comm);
  const double c_d = comm(op.bwd_comm_with_dgrad), c_w = comm(op.bwd_comm_with_wgrad);
  double weight_fwd_s = 0;  // 2D TP weight-panel gather exposed in forward
  switch (op.kind) {
    case OpKind::gemm: {
      t.fwd_compute_s = gemm_s(op.gemm_fwd, tally, &used);
      const double dgrad = gemm_s(op.gemm_dgrad, tally);
      const double wgrad = op.has_wgrad ? gemm_s(op.gemm_wgrad, tally) : 0.0;
      t.bwd_compute_s = dgrad + wgrad;
      // Megatron overlaps the re-gather of a column-parallel input with dgrad and the input
      // gradient's reduction with wgrad; with tp_comm_overlap the row-parallel output-gradient
      // gather joins the dgrad too.
      const double with_dgrad = c_d + (op.bwd_comm_overlapped ? c_bwd : 0.0);
      t.bwd_comm_s = overlap_extra_s(dgrad, with_dgrad, slow) + overlap_extra_s(wgrad, c_w, slow) +
                     (op.bwd_comm_overlapped ? 0.0 : c_bwd);
      // 2D TP: SUMMA weight panels pipelined beside the GEMM in the time the activation
      // collectives leave free; one panel of weight_comm_steps stays exposed (overlap.h).
      if (op.fwd_weight_comm || op.bwd_weight_comm_with_dgrad || op.bwd_weight_comm_with_wgrad) {
        const double steps = op.weight_comm_steps;
        t.bwd_comm_s += bucketed_overlap_s(comm(op.bwd_weight_comm_with_dgrad), std::max(0.0, dgrad - with_dgrad),
                                           steps, slow) +
                        bucketed_overlap_s(comm(op.bwd_weight_comm_with_wgrad), std::max(0.0, wgrad - c_w), steps,
                                           slow);
        const double fwd_busy = op.fwd_comm_overlapped ? c_fwd : 0.0;
        weight_fwd_s = bucketed_overlap_s(comm(op.fwd_weight_comm), std::max(0.0, t.fwd_compute_s - fwd_busy), steps,
                                          slow);
      }
      break;
    }
    case OpKind::attention: {
      t.fwd_compute_s = attention_s(op.attn_fwd, tally, &used);
      t.bwd_compute_s = attention_s(op.attn_bwd, tally);
      // Ring context parallelism: KV (and dKV) blocks move while the attention backward runs.
      t.bwd_comm_s = overlap_extra_s(t.bwd_compute_s, c_d + c_w, slow) + c_bwd;
      break;
    }
    case OpKind::memory:
      t.fwd_compute_s = memory_s(op.mem_fwd, tally, &used);
      t.bwd_compute_s = memory_s(op.mem_bwd, tally);
      t.bwd_comm_s = c_d + c_w + c_bwd;
      break;
  }
  t.source = used.source;
  t.origin = used.origin;
  t.efficiency = used.value;
  t.fwd_comm_s = op.fwd_comm_overlapped ? overlap_extra_s(t.fwd_compute_s, c_fwd, slow) : c_fwd;
  t.fwd_comm_s += weight_fwd_s;
  return t;
}

}  // namespace calisim
