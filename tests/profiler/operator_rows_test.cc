// Keyed operators of a Kineto trace recorded with shapes, and the efficiency rows they give.
// Fixture: tests/data/kineto/record_shapes.json (tests/data/kineto/make_record_shapes.py writes
// it; not a measurement): two steps on one H100, each with a forward linear (aten::mm, TN, 200 us),
// a biased linear (aten::addmm, TN, k 1024, 60 us), scaled_dot_product_attention (a fill kernel of
// 5 us and the flash kernel of 300 us, inside the nested flash operators), an fp32 mm, a GEMM
// launched outside any operator (100 us), and on the autograd thread the data gradient (NN,
// 210 us), weight gradient (NT, 220 us), flash backward (800 us) and the forward GEMM's shape
// again beside a reduce-scatter (260 us).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "profiler/kineto_trace.h"
#include "profiler/operator_rows.h"

namespace {

using calisim::DType;
using calisim::profiler::OperatorKey;
using calisim::profiler::operator_rows;
using calisim::profiler::read_kineto_trace;
using calisim::profiler::TracedOperator;

const std::string kFixture = std::string(CALISIM_TEST_DATA_DIR) + "/kineto/record_shapes.json";

calisim::db::DeviceRecord h100() {
  calisim::db::DeviceRecord d;
  d.name = "NVIDIA H100 SXM5 80GB";
  d.peak_tflops[static_cast<int>(DType::bf16)] = 989;
  return d;
}

TEST(OperatorRows, KernelsBelongToTheOutermostKeyedOperatorOfTheirLaunch) {
  const auto t = read_kineto_trace(kFixture);
  EXPECT_TRUE(t.record_shapes);
  EXPECT_EQ(t.operator_events, 2 * 11);  // aten::linear is not keyed; the three SDPA levels are
  ASSERT_EQ(t.operators.size(), 18u);    // calls that launched kernels: 9 per step
  int sdpa = 0, overlapped = 0, collectives = 0;
  for (const TracedOperator& op : t.operators) {
    EXPECT_EQ(op.device, 0);
    EXPECT_TRUE(op.step == "ProfilerStep#1" || op.step == "ProfilerStep#2") << op.step;
    if (op.name == "aten::scaled_dot_product_attention") {
      ++sdpa;
      EXPECT_EQ(op.kernels, 2);  // the fill and the flash kernel
      EXPECT_NEAR(op.gpu_s, 305e-6, 1e-12);
      ASSERT_EQ(op.key.kind, OperatorKey::Kind::attention);
      EXPECT_EQ(op.key.attention.heads_kv, 8);
    }
    EXPECT_NE(op.name, "aten::_flash_attention_forward");  // nested: attributed to the outer call
    if (op.name == "record_param_comms") {
      ++collectives;  // the reduce-scatter kernel, and nothing else
      EXPECT_EQ(op.kernels, 1);
      EXPECT_NEAR(op.gpu_s, 400e-6, 1e-12);
      ASSERT_EQ(op.key.kind, OperatorKey::Kind::collective) << op.key.reason;
      EXPECT_EQ(op.key.group_ranks.size(), 8u);
    }
    if (op.overlaps_communication) {
      ++overlapped;
      EXPECT_NEAR(op.gpu_s, 260e-6, 1e-12);
    }
  }
  EXPECT_EQ(sdpa, 2);
  EXPECT_EQ(collectives, 2);
  EXPECT_EQ(overlapped, 2);
  // The GEMM launched outside any operator, once per step.
  ASSERT_EQ(t.unkeyed.count("gemm"), 1u);
  EXPECT_EQ(t.unkeyed.at("gemm").count, 2);
  EXPECT_NEAR(t.unkeyed.at("gemm").total_s, 200e-6, 1e-12);
  EXPECT_EQ(t.unkeyed.count("attention"), 0u);
  EXPECT_TRUE(std::is_sorted(t.operators.begin(), t.operators.end(),
                             [](const TracedOperator& a, const TracedOperator& b) { return a.step < b.step; }));
}

TEST(OperatorRows, OneRowPerKeyFromTheCallsWithoutCommunication) {
  const auto t = read_kineto_trace(kFixture);
  const auto r = operator_rows(t.operators, 0, h100());
  EXPECT_EQ(r.calls, 18);
  ASSERT_EQ(r.rows.gemm.size(), 4u);
  ASSERT_EQ(r.rows.attention.size(), 2u);
  EXPECT_EQ(r.overlapped_keys, 0);
  // The fp32 mm of each step; the reduce-scatters, without a network to place their group on.
  ASSERT_EQ(r.not_keyed.size(), 2u);
  EXPECT_EQ(r.not_keyed.at("fp32 inputs (whether TF32 ran is not in the trace)"), 2);
  EXPECT_EQ(r.not_keyed.at("a collective on a GPU whose network no shipped system describes"), 2);

  auto gemm = [&](calisim::GemmLayout layout, std::int64_t k) {
    for (const auto& row : r.rows.gemm) {
      if (row.key.layout == layout && row.key.k == k) return row;
    }
    ADD_FAILURE() << "no row";
    return calisim::db::GemmRow{};
  };
  const double flops = 2.0 * 4096.0 * 4096.0 * 4096.0;
  // TN: the two 200 us calls; the 260 us calls beside the reduce-scatter are left out.
  const auto tn = gemm(calisim::GemmLayout::TN, 4096);
  EXPECT_EQ(tn.stats.n, 2);
  EXPECT_NEAR(tn.stats.median_s, 200e-6, 1e-12);
  EXPECT_NEAR(tn.efficiency, flops / 200e-6 / 989e12, 1e-9);
  EXPECT_NEAR(gemm(calisim::GemmLayout::NN, 4096).efficiency, flops / 210e-6 / 989e12, 1e-9);
  EXPECT_NEAR(gemm(calisim::GemmLayout::NT, 4096).efficiency, flops / 220e-6 / 989e12, 1e-9);
  EXPECT_NEAR(gemm(calisim::GemmLayout::TN, 1024).tflops, flops / 4 / 60e-6 * 1e-12, 1e-6);
  // Attention: causal halves the FLOPs, backward is 2.5x forward (core/kernel_keys.h).
  const double attn_fwd = 2.0 * 32 * 4096.0 * 4096.0 * 256 / 2;
  for (const auto& row : r.rows.attention) {
    const bool fwd = row.key.direction == calisim::AttentionDirection::forward;
    EXPECT_NEAR(row.efficiency, (fwd ? attn_fwd / 305e-6 : 2.5 * attn_fwd / 800e-6) / 989e12, 1e-9);
  }
  // info: by GPU time; the TN key holds 2 x 200 + 2 x 260 us of it.
  ASSERT_EQ(r.info.size(), 6u);
  EXPECT_EQ(r.info[0].key, "attn b=1 hq=32 hkv=8 sq=4096 skv=4096 dqk=128 dv=128 causal=1 dtype=bf16 dir=bwd");
  EXPECT_EQ(r.info[1].key, "gemm m=4096 n=4096 k=4096 batch=1 dtype=bf16 layout=TN acc=0");
  EXPECT_EQ(r.info[1].calls, 4);
  EXPECT_EQ(r.info[1].used, 2);
  EXPECT_NEAR(r.info[1].total_s, 920e-6, 1e-12);
  EXPECT_EQ(r.info[1].operators, "aten::mm");
}

// Traces of PyTorch before 2.1 carry no Input Strides (GEMM layout unknown) and no Concrete
// Inputs (causal unknown), and name no device; their kernels' External id is the launch's
// correlation, not the operator's. Attribution goes by the launch's CPU span, so it holds; the
// keys are refused with their reasons, nothing is guessed.
TEST(OperatorRows, OldTracesWithoutStridesOrScalarsGiveReasonsNotKeys) {
  std::ifstream in(kFixture);
  nlohmann::json doc = nlohmann::json::parse(in);
  doc.erase("deviceProperties");
  for (auto& e : doc["traceEvents"]) {
    if (!e.contains("args")) continue;
    e["args"].erase("Input Strides");
    e["args"].erase("Concrete Inputs");
    if (e.value("cat", "") == "kernel") e["args"]["External id"] = e["args"]["correlation"];
  }
  const std::string path = ::testing::TempDir() + "old_record_shapes.json";
  std::ofstream(path) << doc.dump();
  const auto t = read_kineto_trace(path, "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(t.operators.size(), 18u);
  const auto r = operator_rows(t.operators, 0, h100());
  EXPECT_EQ(r.rows.size(), 0u);
  EXPECT_EQ(r.not_keyed.at("no Input Strides (PyTorch before 2.1): the layout is unknown"), 10);
  EXPECT_EQ(r.not_keyed.at("no Concrete Inputs (PyTorch before 2.1): causal or not is unknown"), 4);
  EXPECT_EQ(r.not_keyed.at("fp32 inputs (whether TF32 ran is not in the trace)"), 2);
}

// With the network (h100-sxm's: 8 GPUs per NVLink domain, 450 GB/s each; 50 GB/s per GPU over the
// NICs), the reduce-scatter is a row: 64 MiB in 400 us, busbw 167.8 x 7/8 = 146.8 GB/s over NVLink.
TEST(OperatorRows, CollectivesBecomeRowsOverTheTierTheirGroupSpans) {
  const auto t = read_kineto_trace(kFixture);
  calisim::profiler::TraceNetwork net;
  net.scale_up_domain = 8;
  net.links = {450, 50};
  const auto r = operator_rows(t.operators, 0, h100(), net);
  ASSERT_EQ(r.rows.collective.size(), 1u);
  const auto& row = r.rows.collective[0];
  EXPECT_EQ(calisim::to_string(row.key), "coll op=reduce_scatter bytes=67108864 ranks=8 per_node=8 dtype=bf16");
  EXPECT_NEAR(row.busbw_gb_s, 67108864.0 / 400e-6 * 1e-9 * 7 / 8, 1e-9);
  EXPECT_EQ(row.link_gb_s, 450);
  EXPECT_NEAR(row.efficiency, row.busbw_gb_s / 450, 1e-12);
  EXPECT_EQ(row.stats.n, 2);
  EXPECT_EQ(r.not_keyed.count("a collective on a GPU whose network no shipped system describes"), 0u);
  // Four GPUs per domain (and 100 GB/s of NICs per GPU): the group spans two domains, 4 ranks each,
  // and is priced over the NICs.
  net.scale_up_domain = 4;
  net.links = {450, 100};
  const auto r4 = operator_rows(t.operators, 0, h100(), net);
  ASSERT_EQ(r4.rows.collective.size(), 1u);
  EXPECT_EQ(r4.rows.collective[0].key.ranks_per_node, 4);
  EXPECT_EQ(r4.rows.collective[0].link_gb_s, 100);
  // With 50 GB/s it would be faster than twice its link: another network than the one given.
  net.links = {450, 50};
  const auto fast = operator_rows(t.operators, 0, h100(), net);
  EXPECT_EQ(fast.rows.collective.size(), 0u);
  EXPECT_EQ(fast.not_keyed.at("a collective faster than twice its link (another system's network?)"), 2);
}

TEST(OperatorRows, OverlappedOnlyKeysMissingPeaksAndImpossibleSpeedsAreSaid) {
  auto call = [](double s, bool overlapped, DType dtype = DType::bf16) {
    TracedOperator op;
    op.name = "aten::mm";
    op.key.kind = OperatorKey::Kind::gemm;
    op.key.gemm = calisim::GemmKey{1024, 1024, 1024, 1, dtype, calisim::GemmLayout::TN, false};
    op.gpu_s = s;
    op.kernels = 1;
    op.overlaps_communication = overlapped;
    return op;
  };
  // Every call beside communication: timed from all of them, counted.
  auto r = operator_rows({call(10e-6, true), call(12e-6, true), call(11e-6, true)}, 0, h100());
  ASSERT_EQ(r.rows.gemm.size(), 1u);
  EXPECT_EQ(r.overlapped_keys, 1);
  EXPECT_NEAR(r.rows.gemm[0].stats.median_s, 11e-6, 1e-15);
  EXPECT_EQ(r.rows.gemm[0].stats.n, 3);
  // Another device's calls are not this device's.
  auto other = call(10e-6, false);
  other.device = 1;
  EXPECT_EQ(operator_rows({other}, 0, h100()).calls, 0);
  // No fp16 peak on the record; faster than the peak (2.1 GFLOP in 1 us).
  r = operator_rows({call(10e-6, false, DType::fp16), call(1e-6, false)}, 0, h100());
  EXPECT_EQ(r.rows.size(), 0u);
  ASSERT_EQ(r.not_keyed.size(), 2u);
  EXPECT_EQ(r.not_keyed.count("no peak for fp16 on NVIDIA H100 SXM5 80GB"), 1u);
  bool too_fast = false;
  for (const auto& [reason, n] : r.not_keyed) too_fast |= reason.find("faster than the device's peak") == 0;
  EXPECT_TRUE(too_fast);
}

}  // namespace
