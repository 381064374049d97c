// Collective communication cost: NCCL's algorithms and protocols on the system's topology
// (docs/comm.md, MODELING.md §2). Entry point of the network model.
//
// collective_cost(key) builds the collective's setting from the system file (tier bandwidths ×
// efficiencies, tier latencies, topology), lets select_algorithm (simulator/collective_algorithms.h)
// pick the fastest enabled (algorithm, protocol) as NCCL's tuner does, and reports its time, tier
// and achieved busbw. When the EfficiencyModel answers from data (measured, interpolated or
// scaled), that answer is the collective's achieved busbw over link_for's link — the convention
// the profiler stores rows in — so time = wire bytes / (link × efficiency) with no latency added
// (the measurement contains it); the algorithm and protocol reported are still the model's choice.
// Sizes follow nccl-tests: S = CollectiveKey::bytes (full buffer); wire bytes per rank =
// S·2(n−1)/n (all-reduce), S·(n−1)/n (all-gather, reduce-scatter, all-to-all), S (send/recv).
//
// Contract: pure, no allocation, no strings: the simulator calls it for every collective of every
// candidate layout.
#pragma once

#include <cstdint>

#include "core/efficiency_model.h"
#include "core/kernel_keys.h"
#include "simulator/collective_algorithms.h"
#include "simulator/system_config.h"

namespace calisim {

// Ranks of a group that share one scale-up domain, for a group of `ranks` ranks spaced `stride`
// apart in Megatron's rank order (tp fastest, then cp, dp, pp).
int ranks_per_domain(int ranks, int stride, int domain_size);

// Ring wire bytes per rank and ring steps for one collective; nccl-tests' busbw factor.
double wire_bytes_per_rank(CollectiveOp op, double buffer_bytes, int ranks);
int ring_steps(CollectiveOp op, int ranks);
double bus_factor(CollectiveOp op, int ranks);

// Per-GPU link bandwidth (GB/s) and tier for the group a key describes: the scale-up per-GPU
// bandwidth inside one domain, else min(scale-up, ranks per node × the node's NIC share). The
// reference link of measured collective efficiencies (db/records.h).
struct LinkChoice {
  double gb_s = 0;
  const NetworkTier* tier = nullptr;
  bool spans_domains = false;
};
LinkChoice link_for(const CollectiveKey& key, const SystemConfig& system);

// The model's view of one collective on the system (bandwidths after the tier efficiencies of
// the system file, oversubscription and PXN applied).
CollectiveSetting collective_setting(const CollectiveKey& key, const SystemConfig& system);

enum class CommTier : std::uint8_t { scale_up, scale_out };
std::string_view to_string(CommTier t);

struct CollectiveCost {
  double time_s = 0;
  CollAlgo algo = CollAlgo::ring;
  CollProto proto = CollProto::simple;
  CommTier tier = CommTier::scale_up;
  double busbw_gb_s = 0;  // achieved, nccl-tests convention: S / time × bus_factor
  Efficiency efficiency;  // the EfficiencyModel's answer for the key
};

// Cost of one collective; time 0 for a single rank or an empty buffer.
// ranks_per_switch: how many of the group's ranks share one PCIe switch (rank_placement.h with the
// switch size; 0 = unknown or no switch level). It rides beside the key, not in it (the key is the
// efficiency database's key): on a two-level PCIe box a group that crosses the switches gets
// busbw = min(the model's or the database's busbw, pcie_bridge_gb_s / crossing groups)
// (topology.h pcie_crossing_groups).
CollectiveCost collective_cost(const CollectiveKey& key, const SystemConfig& system, const EfficiencyModel& eff,
                               CollectiveChoiceMask mask = {}, int ranks_per_switch = 0);

// collective_cost(...).time_s. `used` (optional) receives the efficiency answer.
double collective_time_s(const CollectiveKey& key, const SystemConfig& system, const EfficiencyModel& eff,
                         Efficiency* used = nullptr, CollectiveChoiceMask mask = {}, int ranks_per_switch = 0);

}  // namespace calisim
