// NCCL's collective algorithms and protocols as a cost model, and the choice among them
// (docs/comm.md). Mirrors the structure of NCCL's tuning model (src/graph/tuning.cc): each
// (algorithm, protocol) has a latency = base + hops × per-hop hardware latency and a bus bandwidth
// = link bus bandwidth × protocol/algorithm factor (capped for LL), converted to algorithm
// bandwidth; time = latency + bytes / algorithm bandwidth; NCCL runs the fastest enabled pair.
//
// Contract: pure functions of plain values, no allocation, no strings on the cost path (the
// simulator calls select_algorithm for every collective of every candidate). A time of -1 means
// the pair does not apply to the collective on this topology.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/kernel_keys.h"
#include "simulator/topology.h"

namespace calisim {

// p2p: all-to-all and send/recv, which NCCL runs as grouped point-to-point sends (no algorithm
// choice; NCCL_ALGO does not apply to them).
enum class CollAlgo : std::uint8_t { ring, tree, nvls, nvls_tree, collnet_direct, collnet_chain, p2p };
inline constexpr int kCollAlgoCount = 7;
enum class CollProto : std::uint8_t { ll, ll128, simple };
inline constexpr int kCollProtoCount = 3;

std::string_view to_string(CollAlgo a);   // NCCL's names in lower case: "ring", "nvls_tree", ...
std::string_view to_string(CollProto p);  // "LL", "LL128", "Simple"

// Enabled algorithms and protocols, one bit per enum value (NCCL_ALGO / NCCL_PROTO).
struct CollectiveChoiceMask {
  std::uint8_t algos = (1u << kCollAlgoCount) - 1;
  std::uint8_t protos = (1u << kCollProtoCount) - 1;
  bool allows(CollAlgo a) const { return (algos >> static_cast<int>(a)) & 1u; }
  bool allows(CollProto p) const { return (protos >> static_cast<int>(p)) & 1u; }
  bool operator==(const CollectiveChoiceMask&) const = default;
};

// NCCL_ALGO / NCCL_PROTO list syntax: comma-separated names (case-insensitive; "collnet" = both
// CollNet variants), or "^" + list to disable those. Returns the bit mask, or nullopt with the
// first unknown name in *bad.
std::optional<std::uint8_t> parse_algo_list(std::string_view list, std::string_view* bad);
std::optional<std::uint8_t> parse_proto_list(std::string_view list, std::string_view* bad);

// Everything the algorithm costs need about one collective on one topology. Bandwidths are
// achieved bus bandwidths of the Simple protocol (link × the tier's efficiency), GB/s, one
// direction, per GPU; latencies are the tiers' Simple ring step latencies, µs.
struct CollectiveSetting {
  CollectiveOp op = CollectiveOp::all_reduce;
  double bytes = 0;            // S, nccl-tests convention (CollectiveKey::bytes)
  int ranks = 1;               // n
  int ranks_per_domain = 1;    // k: ranks of the group in one scale-up domain
  int domains = 1;             // N = ceil(n / k)
  double intra_bus_gb_s = 0;   // scale-up ring busbw
  double inter_bus_gb_s = 0;   // ring busbw across domains: min(scale-up, ranks per node × NIC share)
  double nic_gb_s = 0;         // one GPU's share of its node's NICs (after efficiency, oversubscription)
  double a2a_nic_gb_s = 0;     // the same for all-to-all traffic (rail crossings, PXN)
  double intra_lat_us = 0;     // scale-up Simple ring step latency
  double inter_lat_us = 0;     // scale-out Simple ring step latency
  bool pcie = false;           // scale-up over PCIe (NCCL's PCI latency table, no LL128, no NVLS)
  bool nvls = false;           // NVLink SHARP available in the domain
  bool collnet = false;        // in-network reduction available across domains
  bool pxn = true;             // cross-rail all-to-all traffic first hops over NVLink
  NcclArch arch = NcclArch::hopper;
};

// Time of one (algorithm, protocol) in seconds, or -1 when NCCL would not run it here.
double algorithm_time_s(const CollectiveSetting& c, CollAlgo a, CollProto p);

struct AlgorithmChoice {
  CollAlgo algo = CollAlgo::ring;
  CollProto proto = CollProto::simple;
  double time_s = 0;
};
// The fastest applicable pair among those the mask enables. When the mask leaves no applicable
// pair (e.g. NCCL_ALGO=tree for an all-gather), the choice is made over all pairs, as NCCL applies
// NCCL_ALGO only where the algorithm exists for the collective.
AlgorithmChoice select_algorithm(const CollectiveSetting& c, CollectiveChoiceMask mask = {});

// Per-GPU bytes of a two-level (intra-domain, then across domains) decomposition of a collective
// of S bytes over n = k·N ranks: all-reduce = reduce-scatter in the domain, all-reduce of the
// 1/k shard across domains, all-gather in the domain. intra + inter equals the flat ring's
// wire bytes; inter is what crosses the NICs.
struct HierarchicalVolumes {
  double intra_bytes = 0;
  double inter_bytes = 0;
};
HierarchicalVolumes hierarchical_volumes(CollectiveOp op, double bytes, int ranks, int ranks_per_domain);

}  // namespace calisim
