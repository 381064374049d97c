#include "simulator/comm_model.h"

#include <algorithm>

namespace calisim {

int ranks_per_domain(int ranks, int stride, int domain_size) {
  if (ranks <= 1) return 1;
  if (stride >= domain_size) return 1;
  return std::max(1, std::min(ranks, domain_size / std::max(1, stride)));
}

double wire_bytes_per_rank(CollectiveOp op, double S, int n) { return bus_factor(op, n) * S; }

double bus_factor(CollectiveOp op, int n) {
  if (n <= 1) return 0;
  const double frac = static_cast<double>(n - 1) / n;
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * frac;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all: return frac;
    case CollectiveOp::send_recv: return 1.0;
  }
  return 1.0;
}

int ring_steps(CollectiveOp op, int n) {
  if (n <= 1) return 0;
  switch (op) {
    case CollectiveOp::all_reduce: return 2 * (n - 1);
    case CollectiveOp::send_recv: return 1;
    default: return n - 1;
  }
}

LinkChoice link_for(const CollectiveKey& key, const SystemConfig& sys) {
  LinkChoice c;
  const GroupGeometry g = group_geometry(key, sys);
  if (g.domains <= 1) {
    c.gb_s = sys.scale_up.gpu_gb_s;
    c.tier = &sys.scale_up;
    return c;
  }
  c.gb_s = std::min(sys.scale_up.gpu_gb_s, g.ranks_per_node * nic_share_gb_s(sys));
  c.tier = &sys.scale_out;
  c.spans_domains = true;
  return c;
}

CollectiveSetting collective_setting(const CollectiveKey& key, const SystemConfig& sys) {
  const GroupGeometry g = group_geometry(key, sys);
  const Topology& topo = sys.topology;
  const int op = static_cast<int>(key.op);
  CollectiveSetting c;
  c.op = key.op;
  c.bytes = static_cast<double>(key.bytes);
  c.ranks = g.ranks;
  c.ranks_per_domain = g.ranks_per_domain;
  c.domains = g.domains;
  c.intra_bus_gb_s = sys.scale_up.gpu_gb_s * sys.scale_up.efficiency[op];
  // Rings and trees follow the rails; on a fat-tree their traffic crosses the oversubscribed
  // spine. All-to-all crosses rails: only PXN keeps it on the rail switches.
  const double nic = nic_share_gb_s(sys) * sys.scale_out.efficiency[op];
  const double over = std::max(1.0, topo.oversubscription);
  const bool fat = topo.fabric == FabricKind::fat_tree;
  c.nic_gb_s = fat ? nic / over : nic;
  c.a2a_nic_gb_s = (fat || !topo.pxn) ? nic / over : nic;
  c.inter_bus_gb_s = std::min(c.intra_bus_gb_s, g.ranks_per_node * c.nic_gb_s);
  c.intra_lat_us = sys.scale_up.latency_us;
  c.inter_lat_us = sys.scale_out.latency_us;
  c.pcie = topo.scale_up_kind == ScaleUpKind::pcie;
  c.nvls = topo.nvls && topo.scale_up_kind == ScaleUpKind::nvswitch;
  c.collnet = topo.in_network_reduction;
  c.pxn = topo.pxn && topo.fabric == FabricKind::rail_optimized;
  c.arch = topo.arch;
  return c;
}

std::string_view to_string(CommTier t) { return t == CommTier::scale_out ? "scale_out" : "scale_up"; }

namespace {

// Everything but the achieved busbw (a report figure: collective_time_s skips its division).
CollectiveCost cost_without_busbw(const CollectiveKey& key, const SystemConfig& sys, const EfficiencyModel& eff,
                                  CollectiveChoiceMask mask, int ranks_per_switch) {
  CollectiveCost r;
  if (key.ranks <= 1 || key.bytes <= 0) return r;
  r.efficiency = eff.collective(key);
  const CollectiveSetting c = collective_setting(key, sys);
  r.tier = c.domains > 1 ? CommTier::scale_out : CommTier::scale_up;
  const AlgorithmChoice choice = select_algorithm(c, mask);
  r.algo = choice.algo;
  r.proto = choice.proto;
  r.time_s = choice.time_s;
  if (r.efficiency.source != EfficiencySource::roofline) {
    // Data: the stored efficiency is achieved busbw / link_for's bandwidth for this very key (or a
    // fit of such rows), so it reproduces the measured time and overrides the formula.
    const double busbw = link_for(key, sys).gb_s * 1e9 * r.efficiency.value;
    r.time_s = wire_bytes_per_rank(key.op, c.bytes, key.ranks) / busbw;
  }
  // PCIe switches: a ring over several switches crosses the host bridge once in each direction,
  // and every sibling group crosses it at the same time, so the group's busbw is at most its
  // share of the bridge (docs/comm.md "PCIe switches"). Applies to data answers too: rows are
  // keyed without the switch placement.
  const int crossing = pcie_crossing_groups(group_geometry(key, sys), ranks_per_switch, sys);
  if (crossing > 0) {
    const double bridge_busbw = sys.topology.pcie_bridge_gb_s * 1e9 / crossing;
    r.time_s = std::max(r.time_s, wire_bytes_per_rank(key.op, c.bytes, key.ranks) / bridge_busbw);
  }
  return r;
}

}  // namespace

CollectiveCost collective_cost(const CollectiveKey& key, const SystemConfig& sys, const EfficiencyModel& eff,
                               CollectiveChoiceMask mask, int ranks_per_switch) {
  CollectiveCost r = cost_without_busbw(key, sys, eff, mask, ranks_per_switch);
  const double bytes = static_cast<double>(key.bytes);
  r.busbw_gb_s = r.time_s > 0 ? bytes / r.time_s * bus_factor(key.op, key.ranks) / 1e9 : 0;
  return r;
}

double collective_time_s(const CollectiveKey& key, const SystemConfig& sys, const EfficiencyModel& eff,
                         Efficiency* used, CollectiveChoiceMask mask, int ranks_per_switch) {
  const CollectiveCost r = cost_without_busbw(key, sys, eff, mask, ranks_per_switch);
  if (used) *used = r.efficiency;
  return r.time_s;
}

}  // namespace calisim
