// Turns LayerOps into seconds through an EfficiencyModel (roofline where it has no data).
//
// Per kernel: a measured/interpolated/scaled efficiency e gives time = FLOPs / (peak·e) (the
// measurement already contains every loss); a roofline answer gives max(FLOPs / (peak·e),
// bytes / (HBM·e_mem)). Memory-bound kernels take bytes / (HBM·e) + the launch latency. Each
// kernel time (not the launch latency) is divided by the system's sustained_kernel_speed (1 by
// default: kernels as fast as alone), the attention core's by its sustained_attention_speed when
// it sets one.
// Collectives tied to an op: forward ones are exposed unless marked overlapped (tp_comm_overlap,
// ring CP); in backward, the ones Megatron overlaps with the same op's dgrad/wgrad GEMM (or the
// attention backward) cost max(compute, comm) + the system's SM-sharing slowdown on the hidden
// part (simulator/overlap.h); the rest are exposed. Ring context-parallel attention
// (LayerOp::cp_ring_steps) is priced step by step: a causal diagonal kernel and c-1 chunk-pair
// kernels, each with its own efficiency, each hiding one K/V (and dK/dV) transfer.
// Attention efficiencies without a database row follow simulator/attention_shape.h. The flex
// dispatcher's exchanges (LayerOp::flex) are priced by simulator/flex_dispatch.h, exposed.
#pragma once

#include <array>
#include <string>
#include <vector>

#include "core/efficiency_model.h"
#include "simulator/collective_algorithms.h"
#include "simulator/layer_ops.h"
#include "simulator/system_config.h"

namespace calisim {

// Counts kernels per efficiency source; optionally records the keys that fell back to roofline.
struct SourceTally {
  std::array<int, kEfficiencySourceCount> kernels{};
  std::array<int, kOriginIdCount> origins{};          // by Efficiency::origin (0: none)
  std::vector<std::string>* roofline_keys = nullptr;  // nullptr = don't record (fast path)
  void add(const Efficiency& e, const std::string& key_if_recorded);
  template <class Key> void add_key(const Efficiency& e, const Key& key) {
    ++kernels[static_cast<int>(e.source)];
    ++origins[e.origin < kOriginIdCount ? e.origin : kOriginIdCount - 1];
    if (roofline_keys && e.source == EfficiencySource::roofline) roofline_keys->push_back(to_string(key));
  }
};

struct OpTiming {
  double fwd_compute_s = 0;
  double bwd_compute_s = 0;       // dgrad + wgrad (or element-wise backward)
  double fwd_comm_s = 0;          // exposed communication in forward (incl. the overlap slowdown)
  double bwd_comm_s = 0;          // exposed communication in backward (incl. the unhidden part of overlapped)
  double fwd_s() const { return fwd_compute_s + fwd_comm_s; }
  double bwd_s() const { return bwd_compute_s + bwd_comm_s; }
  EfficiencySource source = EfficiencySource::roofline;  // of the forward compute kernel
  double efficiency = 0;                                 // of the forward compute kernel
  std::uint16_t origin = 0;                              // of the forward compute kernel
};

// Ring context parallelism's kernels (LayerOp::cp_ring_steps = c > 1), in direction `dir`: the
// causal diagonal step on the rank's own chunks (s/c queries and keys) and the non-causal
// chunk-pair step the other c - 1 steps run (s/c queries to s/(2c) keys; s/c to s/c for a
// non-causal mask). OpCoster prices them; `calisim profile sequence` runs them.
struct RingAttentionKeys {
  AttentionKey diagonal, step;
};
RingAttentionKeys ring_attention_keys(const LayerOp& op, AttentionDirection dir);

class OpCoster {
 public:
  // system and eff must outlive the coster.
  // nccl: the strategy's NCCL_ALGO / NCCL_PROTO-style override (StrategyConfig::nccl).
  OpCoster(const SystemConfig& system, const EfficiencyModel& eff, CollectiveChoiceMask nccl = {})
      : sys_(system), eff_(eff), nccl_(nccl) {}

  OpTiming cost(const LayerOp& op, SourceTally* tally) const;
  // The in-situ speed op's kernels run at: the system's sustained_attention_speed for the
  // attention core (OpUnit::attention_core) when it sets one, else its sustained_kernel_speed.
  double kernel_speed(const LayerOp& op) const;
  // serial_kernels: GEMM kernels run one after another for this key (LayerOp::gemm_serial_kernels),
  // each adding the system's gemm_fixed_us when the roofline prices it. speed: the in-situ speed
  // the kernel time is divided by (kernel_speed(op)); 0 = the system's sustained_kernel_speed.
  double gemm_s(const GemmKey& k, SourceTally* tally, Efficiency* used = nullptr, int serial_kernels = 1,
                double speed = 0) const;
  double attention_s(const AttentionKey& k, SourceTally* tally, Efficiency* used = nullptr, double speed = 0) const;
  double memory_s(const MemoryOpKey& k, SourceTally* tally, Efficiency* used = nullptr, double speed = 0) const;
  // ranks_per_switch: the group's ranks under one PCIe switch (comm_model.h; 0 = not known).
  double collective_s(const CollectiveKey& k, SourceTally* tally, int ranks_per_switch = 0) const;
  const EfficiencyModel& efficiency_model() const { return eff_; }

 private:
  // Ring context-parallel attention priced per step (op_cost.cc); fills the compute and backward
  // communication of t and returns the exposed forward communication.
  double ring_attention(const LayerOp& op, double kv_s, double kv_bwd_s, double dkv_s, SourceTally* tally,
                        Efficiency* used, OpTiming& t) const;
  // A GEMM's or attention kernel's time at efficiency e (the rule at the top of this file), at
  // in-situ speed `speed` (> 0).
  double compute_kernel_s(double flops, double bytes, DType dtype, const Efficiency& e, double speed) const;
  double speed_or_default(double speed) const { return speed > 0 ? speed : sys_.sustained_kernel_speed; }
  const SystemConfig& sys_;
  const EfficiencyModel& eff_;
  CollectiveChoiceMask nccl_;
};

}  // namespace calisim
