// The flex token dispatcher (Megatron-Core's MoEFlexTokenDispatcher over DeepEP's normal kernels or
// NVIDIA's HybridEP): what one EP rank moves, and how long the exchange takes.
//
// The all-to-all dispatcher sends a token once per chosen expert. DeepEP-family kernels send it
// once per destination GPU (its experts there are fed from the one copy, permuted locally after
// the dispatch), and across nodes once per destination node over RDMA, forwarded inside that
// node's NVLink domain to the GPUs that need it (DeepEP README, "Normal kernels with NVLink and RDMA
// forwarding"). With E experts spread evenly over `groups` (ranks, or scale-up domains) and a
// token's k experts drawn uniformly without repetition (balanced routing, as the simulator's
// moe_token_imbalance_factor 1 assumes), a token reaches on average
//   groups · (1 − C(E − E/groups, k) / C(E, k))
// distinct groups. Per rank, T tokens of b bytes entering, ep ranks in n-rank domains, N = ep / n
// domains, D_r distinct ranks and D_n distinct domains per token:
//   RDMA bytes out   = T · b · D_n · (N − 1) / N        (one copy per remote domain)
//   NVLink bytes     = T · b · D_r · (n − 1) / n        (own tokens inside the domain, and the RDMA
//                                                        arrivals forwarded to their final GPUs)
//   tokens received  = T · D_r (deduplicated), times the busiest rank's load factor.
// The two fabrics run pipelined (DeepEP forwards while it receives), so the exchange takes the
// slower of the two plus one latency per tier crossed. Combine is the mirror (partial sums of a
// token's local experts are reduced on the GPU before they travel) with the same bytes, and so
// are the two backward passes.
//
// Link efficiencies (published, DeepEP on H800, ~160 GB/s NVLink, CX7 400 Gb/s ~50 GB/s NICs,
// DeepSeek-V3 pretraining setting): intranode dispatch 153 GB/s and combine 158 GB/s -> 0.95 of
// NVLink; internode dispatch and combine 43 GB/s at EP 16 -> 0.86 of the NIC (the EP 32 / 64
// figures, 51–58 GB/s, exceed one NIC's rate and are not used). HybridEP publishes no figures: it
// takes DeepEP's (an assumption, said in docs/simulator.md). Not modelled: FP8 dispatch (Megatron
// dispatches in the training dtype), the top-k indices and weights that travel with each token
// (12·k bytes against h·2: under 1 % for any shipped model), and node-limited (group) routing.
// Pure functions.
#pragma once

#include <cstdint>

#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

inline constexpr double kFlexNvlinkEfficiency = 0.95;
inline constexpr double kFlexRdmaEfficiency = 0.86;

// Expected number of distinct groups (of E / groups experts each) that a token's k experts fall
// in; groups must divide E. 1 <= result <= min(k, groups).
double expected_groups_hit(std::int64_t experts, std::int64_t topk, std::int64_t groups);

// One direction of one exchange (dispatch forward; combine and the backward passes move the same).
struct FlexExchange {
  double nvlink_bytes = 0;    // per rank, over the scale-up fabric
  double rdma_bytes = 0;      // per rank, over its share of the node's NICs
  double received_tokens = 0; // deduplicated tokens arriving at the busiest rank
  int ep = 1, ep_per_domain = 1;
  bool operator==(const FlexExchange&) const = default;
};

// tokens: per rank entering the MoE block (Tsp); token_bytes: one token's hidden state;
// ep_per_domain: EP ranks per scale-up domain (the group spans ceil(ep / ep_per_domain) domains);
// load: busiest rank / average.
FlexExchange flex_exchange(double tokens, double token_bytes, std::int64_t experts, std::int64_t topk, int ep,
                           int ep_per_domain, double load);

// Seconds for one exchange on the system's fabrics (kFlex* efficiencies, tier latencies).
double flex_exchange_s(const FlexExchange& x, const SystemConfig& system);

// Slowdown of compute that runs beside a flex exchange (overlap_moe_expert_parallel_comm): the
// share of the SMs its kernels occupy (flex_num_sms / sm_count); the system's
// comm_compute_slowdown when the device's SM count is unknown or the dispatcher is not flex.
double flex_overlap_slowdown(const StrategyConfig& strategy, const SystemConfig& system);

}  // namespace calisim
