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

double OpCoster::kernel_speed(const LayerOp& op) const {
  return op.unit == OpUnit::attention_core ? sys_.attention_kernel_speed() : sys_.sustained_kernel_speed;
}

double OpCoster::compute_kernel_s(double flops, double bytes, DType dtype, const Efficiency& e, double speed) const {
  const double compute = flops / (sys_.device.peak_flops_per_s(dtype) * e.value);
  if (e.source != EfficiencySource::roofline) return compute / speed;
  return std::max(compute, bytes / (sys_.device.hbm_bytes_per_s() * sys_.memory_efficiency)) / speed;
}

double OpCoster::gemm_s(const GemmKey& k, SourceTally* tally, Efficiency* used, int serial_kernels,
                        double speed) const {
  const Efficiency e = eff_.gemm(k);
  if (tally) tally->add_key(e, k);
  if (used) *used = e;
  // A measured or predicted time already contains the kernel's fixed part; the roofline's
  // throughput figure does not (it is a best-shape figure, where the fixed part vanishes).
  const double fixed_s =
      e.source == EfficiencySource::roofline ? std::max(1, serial_kernels) * sys_.gemm_fixed_us * 1e-6 : 0.0;
  return compute_kernel_s(k.flops(), k.bytes(), k.dtype, e, speed_or_default(speed)) + fixed_s;
}

double OpCoster::attention_s(const AttentionKey& k, SourceTally* tally, Efficiency* used, double speed) const {
  const Efficiency e = eff_.attention(k);
  if (tally) tally->add_key(e, k);
  if (used) *used = e;
  return compute_kernel_s(k.flops(), k.bytes(), k.dtype, e, speed_or_default(speed));
}

double OpCoster::memory_s(const MemoryOpKey& k, SourceTally* tally, Efficiency* used, double speed) const {
  if (k.bytes <= 0) return 0;
  const Efficiency e = eff_.memory_op(k);
  if (tally) tally->add_key(e, k);
  if (used) *used = e;
  return static_cast<double>(k.bytes) / (sys_.device.hbm_bytes_per_s() * e.value) / speed_or_default(speed) +
         sys_.kernel_launch_us * 1e-6;
}

double OpCoster::collective_s(const CollectiveKey& k, SourceTally* tally, int ranks_per_switch) const {
  if (k.ranks <= 1) return 0;
  Efficiency e;
  const double t = collective_time_s(k, sys_, eff_, &e, nccl_, ranks_per_switch);
  if (tally) tally->add_key(e, k);
  return t;
}

// Ring context parallelism, step by step (layer_ops.h cp_ring_steps): c steps, step 0 causal on
// the rank's own chunks (s/c queries and keys), steps 1..c-1 non-causal chunk pairs (s/c
// queries to s/(2c) keys; for a non-causal mask s/c to s/c). Forward: step i hides the KV
// transfer of step i+1 (c-1 transfers). Backward (TE): step i hides the next KV and the dKV of
// the previous step; the last dKV has nothing left to hide behind. A step shorter than its
// transfer exposes the difference; the hidden part pays the SM-sharing slowdown (overlap.h).
RingAttentionKeys ring_attention_keys(const LayerOp& op, AttentionDirection dir) {
  RingAttentionKeys k{op.attn_fwd, op.attn_fwd};
  k.diagonal.seq_kv = k.diagonal.seq_q;
  k.step.seq_kv = op.attn_fwd.causal ? std::max<std::int64_t>(1, op.attn_fwd.seq_q / 2) : op.attn_fwd.seq_q;
  k.step.causal = false;
  k.diagonal.direction = k.step.direction = dir;
  return k;
}

double OpCoster::ring_attention(const LayerOp& op, double kv_s, double kv_bwd_s, double dkv_s, SourceTally* tally,
                                Efficiency* used, OpTiming& t) const {
  const int c = op.cp_ring_steps;
  const double slow = sys_.comm_compute_slowdown;
  const RingAttentionKeys fwd = ring_attention_keys(op, AttentionDirection::forward);
  const RingAttentionKeys bwd = ring_attention_keys(op, AttentionDirection::backward);
  const double speed = kernel_speed(op);
  const double f_diag = attention_s(fwd.diagonal, tally, used, speed), f_step = attention_s(fwd.step, tally, nullptr, speed);
  const double b_diag = attention_s(bwd.diagonal, tally, nullptr, speed), b_step = attention_s(bwd.step, tally, nullptr, speed);
  const double rest = c - 1;
  t.fwd_compute_s = f_diag + rest * f_step;
  t.bwd_compute_s = b_diag + rest * b_step;
  // Backward: the diagonal step hides the first KV; the c-2 middle steps hide a KV and a dKV;
  // the last step hides the previous dKV; the final dKV is exposed.
  t.bwd_comm_s = overlap_extra_s(b_diag, kv_bwd_s, slow) + (rest - 1) * overlap_extra_s(b_step, kv_bwd_s + dkv_s, slow) +
                 overlap_extra_s(b_step, dkv_s, slow) + dkv_s;
  return overlap_extra_s(f_diag, kv_s, slow) + (rest - 1) * overlap_extra_s(f_step, kv_s, slow);
}

OpTiming OpCoster::cost(const LayerOp& op, SourceTally* tally) const {
  OpTiming t;
  Efficiency used;
  const double slow = sys_.comm_compute_slowdown;
  auto comm = [&](const std::optional<CollectiveKey>& k) { return k ? collective_s(*k, tally) : 0.0; };
  const double c_fwd = comm(op.fwd_comm), c_bwd = comm(op.bwd_comm);
  const double c_d = comm(op.bwd_comm_with_dgrad), c_w = comm(op.bwd_comm_with_wgrad);
  const double speed = kernel_speed(op);
  double weight_fwd_s = 0;  // 2D TP weight-panel gather exposed in forward
  double ring_fwd_comm_s = 0;  // ring CP: KV transfers not hidden by the forward steps
  switch (op.kind) {
    case OpKind::gemm: {
      t.fwd_compute_s = gemm_s(op.gemm_fwd, tally, &used, op.gemm_serial_kernels, speed);
      const double dgrad = gemm_s(op.gemm_dgrad, tally, nullptr, op.gemm_serial_kernels, speed);
      // The unfused main-gradient accumulation runs right after the wgrad on the same stream, so
      // it counts as part of it (also for what the wgrad's collectives can hide behind).
      const double wgrad = op.has_wgrad ? gemm_s(op.gemm_wgrad, tally, nullptr, op.gemm_serial_kernels, speed) +
                                              memory_s(MemoryOpKey{"grad_accum", static_cast<std::int64_t>(
                                                                                     op.wgrad_accum_bytes)},
                                                       tally, nullptr, speed)
                                        : 0.0;
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
      if (op.cp_ring_steps > 1) {
        ring_fwd_comm_s = ring_attention(op, c_fwd, c_d, c_w, tally, &used, t);
        break;
      }
      t.fwd_compute_s = attention_s(op.attn_fwd, tally, &used, speed);
      t.bwd_compute_s = attention_s(op.attn_bwd, tally, nullptr, speed);
      // Ring context parallelism: KV (and dKV) blocks move while the attention backward runs.
      t.bwd_comm_s = overlap_extra_s(t.bwd_compute_s, c_d + c_w, slow) + c_bwd;
      break;
    }
    case OpKind::memory:
      t.fwd_compute_s = memory_s(op.mem_fwd, tally, &used, speed);
      t.bwd_compute_s = memory_s(op.mem_bwd, tally, nullptr, speed);
      t.bwd_comm_s = c_d + c_w + c_bwd;
      break;
  }
  t.source = used.source;
  t.origin = used.origin;
  t.efficiency = used.value;
  if (op.cp_ring_steps > 1) {
    t.fwd_comm_s = ring_fwd_comm_s;
  } else {
    t.fwd_comm_s = op.fwd_comm_overlapped ? overlap_extra_s(t.fwd_compute_s, c_fwd, slow) : c_fwd;
  }
  t.fwd_comm_s += weight_fwd_s;
  // The flex dispatcher's dispatch / combine: its own model (flex_dispatch.h), the same bytes in
  // both directions (the backward of a dispatch is a combine and the reverse).
  if (op.flex) {
    const double f = flex_exchange_s(*op.flex, sys_);
    t.fwd_comm_s += f;
    t.bwd_comm_s += f;
  }
  return t;
}

}  // namespace calisim
