// Contention between concurrent collectives of different groups on the same NIC tier
// (docs/comm.md "Contention").
//
// When the data-parallel gradient reduction runs behind the backward (overlap_grad_reduce) and that
// backward also moves expert-parallel all-to-all or context-parallel ring traffic between domains,
// both flows cross the same NICs. With fair sharing each runs at half rate while the other is
// active, so the pair needs the sum of their NIC times: the DP collective is charged
// comm + min(comm, competing). The competing traffic's own time already sits in the backward it
// belongs to, so charging the overlap once, on the DP side, conserves the bytes on the wire.
//
// Contract: pure inline functions, no allocation; competing time below zero counts as none.
#pragma once

#include <algorithm>

namespace calisim {

// A group of `ranks` ranks with `per_domain` of them in one scale-up domain sends over the NICs.
inline bool crosses_nics(int ranks, int per_domain) { return ranks > 1 && per_domain < ranks; }

// Time of a collective of `comm_s` (alone) that shares its NICs with `competing_s` of another
// group's traffic during the window it is overlapped with.
inline double nic_contended_s(double comm_s, double competing_s) {
  return comm_s + std::min(comm_s, std::max(0.0, competing_s));
}

}  // namespace calisim
