// Collective communication cost: α-β with nccl-tests bus-bandwidth conventions (MODELING.md §2).
//
// wire bytes per rank = S·2(n−1)/n (all-reduce), S·(n−1)/n (all-gather, reduce-scatter,
// all-to-all), S (send/recv), S = full buffer. time = steps·latency + wire bytes / (link × eff).
// The link is the slowest tier the group spans: the scale-up domain's per-GPU bandwidth when all
// ranks share one domain, otherwise min(scale-up, k × the node's NIC bandwidth per GPU) where k is
// how many of the group's ranks sit in one node (NCCL spreads a ring's channels over the rails of
// those k GPUs, and every group of the layout communicates at once).
#pragma once

#include "core/efficiency_model.h"
#include "core/kernel_keys.h"
#include "simulator/system_config.h"

namespace calisim {

// Ranks of a group that share one scale-up domain, for a group of `ranks` ranks spaced `stride`
// apart in Megatron's rank order (tp fastest, then cp, dp, pp).
int ranks_per_domain(int ranks, int stride, int domain_size);

// Ring wire bytes per rank and algorithm steps for one collective.
double wire_bytes_per_rank(CollectiveOp op, double buffer_bytes, int ranks);
int ring_steps(CollectiveOp op, int ranks);

// Per-GPU link bandwidth (GB/s) and tier for the group a key describes.
struct LinkChoice {
  double gb_s = 0;
  const NetworkTier* tier = nullptr;
  bool spans_domains = false;
};
LinkChoice link_for(const CollectiveKey& key, const SystemConfig& system);

// Time of one collective. 0 for a single rank. `used` (optional) receives the efficiency answer.
double collective_time_s(const CollectiveKey& key, const SystemConfig& system, const EfficiencyModel& eff,
                         Efficiency* used = nullptr);

}  // namespace calisim
