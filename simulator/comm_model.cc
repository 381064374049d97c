#include "simulator/comm_model.h"

#include <algorithm>

namespace calisim {

int ranks_per_domain(int ranks, int stride, int domain_size) {
  if (ranks <= 1) return 1;
  if (stride >= domain_size) return 1;
  return std::max(1, std::min(ranks, domain_size / std::max(1, stride)));
}

double wire_bytes_per_rank(CollectiveOp op, double S, int n) {
  if (n <= 1) return 0;
  const double frac = static_cast<double>(n - 1) / n;
  switch (op) {
    case CollectiveOp::all_reduce: return 2.0 * frac * S;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
    case CollectiveOp::all_to_all: return frac * S;
    case CollectiveOp::send_recv: return S;
  }
  return S;
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
  const int per_domain = std::max(1, key.ranks_per_node);
  if (per_domain >= key.ranks) {
    c.gb_s = sys.scale_up.gpu_gb_s;
    c.tier = &sys.scale_up;
    return c;
  }
  // A node (NIC-sharing unit) can be smaller than the domain (NVL72 trays hold 4 GPUs).
  const int per_node = std::min(per_domain, sys.gpus_per_node);
  const double nic_share_gb_s = sys.nics_per_node * sys.nic_gb_s / sys.gpus_per_node;
  c.gb_s = std::min(sys.scale_up.gpu_gb_s, per_node * nic_share_gb_s);
  c.tier = &sys.scale_out;
  c.spans_domains = true;
  return c;
}

double collective_time_s(const CollectiveKey& key, const SystemConfig& sys, const EfficiencyModel& eff,
                         Efficiency* used) {
  if (key.ranks <= 1 || key.bytes <= 0) return 0;
  const LinkChoice link = link_for(key, sys);
  const Efficiency e = eff.collective(key);
  if (used) *used = e;
  const double bw = link.gb_s * 1e9 * e.value;
  return ring_steps(key.op, key.ranks) * link.tier->latency_us * 1e-6 +
         wire_bytes_per_rank(key.op, static_cast<double>(key.bytes), key.ranks) / bw;
}

}  // namespace calisim
