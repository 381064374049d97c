// Network topology of a system file beyond the two tiers' bandwidths (docs/comm.md, docs/configs.md):
// what kind of scale-up domain joins the GPUs (NVSwitch, switchless NVLink, PCIe only), whether it
// can reduce in the switch (NVLS / NVLink SHARP), how nodes are cabled (rail-optimized or fat-tree,
// with oversubscription), whether the fabric reduces in the network (SHARP / NCCL CollNet), and which
// NCCL architecture table applies. Plus the geometry of one collective group on that topology.
//
// Contract: plain values and pure functions; no allocation. Every default is the behaviour of a system
// file that does not name the field (no NVLS, no in-network reduction, rail-optimized 1:1, NVSwitch).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "core/kernel_keys.h"

namespace calisim {

struct SystemConfig;

// NVSwitch: every GPU reaches every other at full per-GPU bandwidth (HGX, NVL72). nvlink: GPUs joined
// by direct NVLink without a switch (NVLink bridges, 2-4 GPU meshes). pcie: no NVLink at all, peer
// traffic crosses PCIe (a100-pcie-style servers); NCCL then uses its PCI latency table and no LL128.
enum class ScaleUpKind : std::uint8_t { nvswitch, nvlink, pcie };
enum class FabricKind : std::uint8_t { rail_optimized, fat_tree };
// The GPU generation whose NCCL tuning constants apply (LL bandwidth caps, NVLS efficiency).
enum class NcclArch : std::uint8_t { volta, ampere, hopper, blackwell };

struct Topology {
  ScaleUpKind scale_up_kind = ScaleUpKind::nvswitch;
  bool nvls = false;                  // NVLink SHARP in the NVSwitch (gen3+: H100, H200, B200, GB200)
  FabricKind fabric = FabricKind::rail_optimized;
  double oversubscription = 1.0;      // leaf down-link : up-link bandwidth (>= 1; 1 = non-blocking)
  bool in_network_reduction = false;  // SHARP switches usable by NCCL CollNet
  bool pxn = true;                    // NCCL PXN: cross-rail all-to-all traffic hops over NVLink first
  NcclArch arch = NcclArch::hopper;
  // PCIe boxes with two levels (kind pcie only): GPUs under one PCIe switch (0 = one level, no
  // switches modeled) and the per-direction bandwidth (GB/s) of the bridge between switches, shared
  // by every flow that crosses it (docs/comm.md "PCIe switches").
  int pcie_switch_gpus = 0;
  double pcie_bridge_gb_s = 0;
};

std::string_view to_string(ScaleUpKind k);
std::string_view to_string(FabricKind k);
std::string_view to_string(NcclArch a);
std::optional<ScaleUpKind> parse_scale_up_kind(std::string_view s);
std::optional<FabricKind> parse_fabric_kind(std::string_view s);
std::optional<NcclArch> parse_nccl_arch(std::string_view s);

// Where the ranks of one collective group sit. ranks_per_domain comes from the key (how many of its
// ranks share one scale-up domain), clamped to [1, ranks]; domains = ceil(ranks / ranks_per_domain);
// ranks_per_node = the group's ranks sharing one node's NICs (a node can be smaller than the domain:
// NVL72 trays hold 4 GPUs).
struct GroupGeometry {
  int ranks = 1;
  int ranks_per_domain = 1;
  int domains = 1;
  int ranks_per_node = 1;
};
GroupGeometry group_geometry(const CollectiveKey& key, const SystemConfig& system);

// Groups of one kind that cross the PCIe switches at once, given how many of the group's ranks share
// one switch: 0 when the system has no switch level or the group stays inside one switch
// (ranks_per_switch >= the group's ranks in its node, or 0 = unknown); else the node's GPUs / the
// group's ranks in the node (the sibling groups tile the node and run together).
int pcie_crossing_groups(const GroupGeometry& g, int ranks_per_switch, const SystemConfig& system);

// One node's NIC bandwidth divided over its GPUs (GB/s, one direction, before efficiency).
double nic_share_gb_s(const SystemConfig& system);

}  // namespace calisim
