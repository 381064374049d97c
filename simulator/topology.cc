#include "simulator/topology.h"

#include <algorithm>

#include "simulator/system_config.h"

namespace calisim {

std::string_view to_string(ScaleUpKind k) {
  switch (k) {
    case ScaleUpKind::nvswitch: return "nvswitch";
    case ScaleUpKind::nvlink: return "nvlink";
    case ScaleUpKind::pcie: return "pcie";
  }
  return "?";
}

std::string_view to_string(FabricKind k) { return k == FabricKind::fat_tree ? "fat_tree" : "rail_optimized"; }

std::string_view to_string(NcclArch a) {
  switch (a) {
    case NcclArch::volta: return "volta";
    case NcclArch::ampere: return "ampere";
    case NcclArch::hopper: return "hopper";
    case NcclArch::blackwell: return "blackwell";
  }
  return "?";
}

std::optional<ScaleUpKind> parse_scale_up_kind(std::string_view s) {
  for (ScaleUpKind k : {ScaleUpKind::nvswitch, ScaleUpKind::nvlink, ScaleUpKind::pcie}) {
    if (s == to_string(k)) return k;
  }
  return std::nullopt;
}

std::optional<FabricKind> parse_fabric_kind(std::string_view s) {
  for (FabricKind k : {FabricKind::rail_optimized, FabricKind::fat_tree}) {
    if (s == to_string(k)) return k;
  }
  return std::nullopt;
}

std::optional<NcclArch> parse_nccl_arch(std::string_view s) {
  for (NcclArch a : {NcclArch::volta, NcclArch::ampere, NcclArch::hopper, NcclArch::blackwell}) {
    if (s == to_string(a)) return a;
  }
  return std::nullopt;
}

GroupGeometry group_geometry(const CollectiveKey& key, const SystemConfig& sys) {
  GroupGeometry g;
  g.ranks = std::max(1, key.ranks);
  g.ranks_per_domain = std::clamp(key.ranks_per_node, 1, g.ranks);
  g.domains = (g.ranks + g.ranks_per_domain - 1) / g.ranks_per_domain;
  g.ranks_per_node = std::max(1, std::min(g.ranks_per_domain, sys.gpus_per_node));
  return g;
}

int pcie_crossing_groups(const GroupGeometry& g, int ranks_per_switch, const SystemConfig& sys) {
  const Topology& t = sys.topology;
  if (t.scale_up_kind != ScaleUpKind::pcie || t.pcie_switch_gpus <= 0 || t.pcie_bridge_gb_s <= 0) return 0;
  if (ranks_per_switch <= 0 || g.ranks_per_node <= 1 || ranks_per_switch >= g.ranks_per_node) return 0;
  return std::max(1, sys.gpus_per_node / g.ranks_per_node);
}

double nic_share_gb_s(const SystemConfig& sys) {
  return sys.nics_per_node * sys.nic_gb_s / std::max(1, sys.gpus_per_node);
}

}  // namespace calisim
