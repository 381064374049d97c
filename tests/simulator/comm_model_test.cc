#include "simulator/comm_model.h"

#include <gtest/gtest.h>

#include "simulator/default_efficiency.h"
#include "test_support.h"

namespace calisim {
namespace {

TEST(CommModel, WireBytesFollowNcclTestsConventions) {
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::all_reduce, 800, 8), 2.0 * 7 / 8 * 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::all_gather, 800, 8), 7.0 / 8 * 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::reduce_scatter, 800, 8), 7.0 / 8 * 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::all_to_all, 800, 8), 7.0 / 8 * 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::send_recv, 800, 2), 800);
  EXPECT_DOUBLE_EQ(wire_bytes_per_rank(CollectiveOp::all_reduce, 800, 1), 0);
}

TEST(CommModel, RanksPerDomainFromStride) {
  EXPECT_EQ(ranks_per_domain(8, 1, 8), 8);    // TP 8 inside an HGX node
  EXPECT_EQ(ranks_per_domain(16, 1, 8), 8);   // TP 16 spans two
  EXPECT_EQ(ranks_per_domain(64, 8, 8), 1);   // DP with TP 8: one rank per node
  EXPECT_EQ(ranks_per_domain(64, 2, 8), 4);   // DP with TP 2: four ranks per node
  EXPECT_EQ(ranks_per_domain(64, 8, 72), 9);  // NVL72
}

TEST(CommModel, RingSimpleIsNcclsAlphaBeta) {
  const SystemConfig sys = testing_support::shipped_system("h100-sxm");
  DefaultEfficiencyModel eff(sys);
  const double S = 256e6;
  CollectiveChoiceMask ring_simple;
  ring_simple.algos = 1u << static_cast<int>(CollAlgo::ring);
  ring_simple.protos = 1u << static_cast<int>(CollProto::simple);
  // Inside the NVLink domain: NCCL's ring base latency 8.4 us + 2(n-1) hops of the tier latency,
  // bytes at the ring's algorithm bandwidth busbw · n / 2(n-1).
  CollectiveKey k{CollectiveOp::all_reduce, static_cast<std::int64_t>(S), 8, 8, DType::bf16};
  const double e_up = sys.scale_up.efficiency[0];
  const double expected =
      (8.4 + 14 * sys.scale_up.latency_us) * 1e-6 + 2.0 * 7 / 8 * S / (sys.scale_up.gpu_gb_s * 1e9 * e_up);
  const CollectiveCost c = collective_cost(k, sys, eff, ring_simple);
  EXPECT_NEAR(c.time_s, expected, expected * 1e-12);
  EXPECT_EQ(c.algo, CollAlgo::ring);
  EXPECT_EQ(c.proto, CollProto::simple);
  EXPECT_EQ(c.tier, CommTier::scale_up);
  EXPECT_NEAR(c.busbw_gb_s, S / expected * 1.75 / 1e9, 1e-9);
  // Across nodes with one rank per node: one NIC share per GPU, every step over the network.
  CollectiveKey x{CollectiveOp::reduce_scatter, static_cast<std::int64_t>(S), 16, 1, DType::bf16};
  const double nic = sys.nics_per_node * sys.nic_gb_s / sys.gpus_per_node;
  const double e_out = sys.scale_out.efficiency[static_cast<int>(CollectiveOp::reduce_scatter)];
  const double expected_x = (8.4 + 15 * sys.scale_out.latency_us) * 1e-6 + 15.0 / 16 * S / (nic * 1e9 * e_out);
  EXPECT_NEAR(collective_time_s(x, sys, eff, nullptr, ring_simple), expected_x, expected_x * 1e-12);
  // More ranks of the group per node get more NIC bandwidth (NCCL rails), capped by NVLink.
  CollectiveKey y = x;
  y.ranks_per_node = 8;
  EXPECT_LT(collective_time_s(y, sys, eff), collective_time_s(x, sys, eff));
  EXPECT_DOUBLE_EQ(collective_time_s({CollectiveOp::all_reduce, 1000, 1, 1, DType::bf16}, sys, eff), 0.0);
}

}  // namespace
}  // namespace calisim
