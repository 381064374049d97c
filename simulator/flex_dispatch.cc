#include "simulator/flex_dispatch.h"

#include <algorithm>
#include <cmath>

namespace calisim {

double expected_groups_hit(std::int64_t experts, std::int64_t topk, std::int64_t groups) {
  if (groups <= 1 || experts <= 0 || topk <= 0) return 1.0;
  const std::int64_t per_group = experts / groups;
  const std::int64_t others = experts - per_group;
  // P(a given group is missed) = C(others, k) / C(E, k), in log space (lgamma) for large E.
  double missed = 0;
  if (topk <= others) {
    const auto lc = [](double n, double r) { return std::lgamma(n + 1) - std::lgamma(r + 1) - std::lgamma(n - r + 1); };
    missed = std::exp(lc(static_cast<double>(others), static_cast<double>(topk)) -
                      lc(static_cast<double>(experts), static_cast<double>(topk)));
  }
  return static_cast<double>(groups) * (1.0 - missed);
}

FlexExchange flex_exchange(double tokens, double token_bytes, std::int64_t experts, std::int64_t topk, int ep,
                           int ep_per_domain, double load) {
  FlexExchange x;
  x.ep = std::max(1, ep);
  x.ep_per_domain = std::clamp(ep_per_domain, 1, x.ep);
  // Domains the group spans (a group whose size the domain does not divide straddles one more).
  const int domains = (x.ep + x.ep_per_domain - 1) / x.ep_per_domain;
  const double d_ranks = expected_groups_hit(experts, topk, x.ep);
  const double d_domains = expected_groups_hit(experts, topk, domains);
  const double n = x.ep_per_domain, N = domains;
  x.rdma_bytes = tokens * token_bytes * d_domains * (N - 1) / N * load;
  x.nvlink_bytes = tokens * token_bytes * d_ranks * (n - 1) / n * load;
  x.received_tokens = tokens * d_ranks * load;
  return x;
}

double flex_exchange_s(const FlexExchange& x, const SystemConfig& sys) {
  if (x.ep <= 1) return 0;
  const bool crosses_domains = x.ep > x.ep_per_domain;
  const double nvl_bw = sys.scale_up.gpu_gb_s * 1e9 * kFlexNvlinkEfficiency;
  const double rdma_bw = sys.scale_out.gpu_gb_s * 1e9 * kFlexRdmaEfficiency;
  const double nvl_s = x.nvlink_bytes > 0 && nvl_bw > 0 ? x.nvlink_bytes / nvl_bw : 0;
  const double rdma_s = x.rdma_bytes > 0 && rdma_bw > 0 ? x.rdma_bytes / rdma_bw : 0;
  const double latency_s = (sys.scale_up.latency_us + (crosses_domains ? sys.scale_out.latency_us : 0)) * 1e-6;
  return std::max(nvl_s, rdma_s) + latency_s;
}

double flex_overlap_slowdown(const StrategyConfig& st, const SystemConfig& sys) {
  if (st.moe_dispatcher != MoeDispatcher::flex || sys.device.sm_count <= 0) return sys.comm_compute_slowdown;
  return std::min(1.0, static_cast<double>(st.flex_num_sms) / sys.device.sm_count);
}

}  // namespace calisim
