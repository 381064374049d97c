#include "simulator/op_cost.h"

#include <algorithm>

#include "simulator/comm_model.h"

namespace calisim {

void SourceTally::add(const Efficiency& e, const std::string& key_if_recorded) {
  ++kernels[static_cast<int>(e.source)];
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

double OpCoster::collective_s(const CollectiveKey& k, SourceTally* tally) const {
  if (k.ranks <= 1) return 0;
  Efficiency e;
  const double t = collective_time_s(k, sys_, eff_, &e);
  if (tally) tally->add_key(e, k);
  return t;
}

OpTiming OpCoster::cost(const LayerOp& op, SourceTally* tally) const {
  OpTiming t;
  Efficiency used;
  switch (op.kind) {
    case OpKind::gemm: {
      t.fwd_compute_s = gemm_s(op.gemm_fwd, tally, &used);
      const double dgrad = gemm_s(op.gemm_dgrad, tally);
      const double wgrad = op.has_wgrad ? gemm_s(op.gemm_wgrad, tally) : 0.0;
      const double c_d = op.bwd_comm_with_dgrad ? collective_s(*op.bwd_comm_with_dgrad, tally) : 0.0;
      const double c_w = op.bwd_comm_with_wgrad ? collective_s(*op.bwd_comm_with_wgrad, tally) : 0.0;
      t.bwd_compute_s = dgrad + wgrad;
      t.bwd_comm_s = std::max(0.0, c_d - dgrad) + std::max(0.0, c_w - wgrad);
      break;
    }
    case OpKind::attention:
      t.fwd_compute_s = attention_s(op.attn_fwd, tally, &used);
      t.bwd_compute_s = attention_s(op.attn_bwd, tally);
      break;
    case OpKind::memory:
      t.fwd_compute_s = memory_s(op.mem_fwd, tally, &used);
      t.bwd_compute_s = memory_s(op.mem_bwd, tally);
      break;
  }
  t.source = used.source;
  t.efficiency = used.value;
  if (op.fwd_comm) t.fwd_comm_s += collective_s(*op.fwd_comm, tally);
  if (op.bwd_comm) t.bwd_comm_s += collective_s(*op.bwd_comm, tally);
  return t;
}

}  // namespace calisim
