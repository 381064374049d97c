#include "profiler/collective_sizes.h"
#include "profiler/memory_patterns.h"
#include "profiler/profile_plan.h"
#include "profiler/row_builder.h"
#include "profiler/sweep.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "db/key_text.h"

namespace calisim::profiler {
namespace {

TEST(CollectiveSizes, NcclTestsReferenceRow) {
  // nccl #1161: all_reduce of 1073741824 bytes over 2 H100 PCIe, 9306.7 us -> 115.37 GB/s both.
  const CollectiveKey k{CollectiveOp::all_reduce, 1073741824, 2, 2, DType::fp32};
  EXPECT_NEAR(algbw_gb_s(k, 9306.7e-6), 115.37, 0.01);
  EXPECT_NEAR(busbw_gb_s(k, 9306.7e-6), 115.37, 0.01);
  // Over 8 ranks the all-reduce bus factor is 2 * 7 / 8.
  const CollectiveKey k8{CollectiveOp::all_reduce, 1 << 30, 8, 8, DType::bf16};
  EXPECT_NEAR(busbw_gb_s(k8, 1.0) / algbw_gb_s(k8, 1.0), 1.75, 1e-12);
}

TEST(CollectiveSizes, GatherScatterSharesRoundDownTo16Bytes) {
  // 1000 bytes of bf16 over 8 ranks: 62 elements per rank, rounded down to 56 (112 bytes).
  const CollectiveKey ag{CollectiveOp::all_gather, 1000, 8, 8, DType::bf16};
  const CollectiveBuffers b = collective_buffers(ag);
  EXPECT_EQ(b.count, 56);
  EXPECT_EQ(b.send_bytes, 112);
  EXPECT_EQ(b.recv_bytes, 896);
  EXPECT_EQ(b.effective_bytes, 896);
  const CollectiveBuffers rs = collective_buffers({CollectiveOp::reduce_scatter, 1000, 8, 8, DType::bf16});
  EXPECT_EQ(rs.send_bytes, 896);
  EXPECT_EQ(rs.recv_bytes, 112);
  const CollectiveBuffers a2a = collective_buffers({CollectiveOp::all_to_all, 4096, 4, 4, DType::bf16});
  EXPECT_EQ(a2a.count, 512);  // per peer
  EXPECT_EQ(a2a.send_bytes, 4096);
  const CollectiveBuffers sr = collective_buffers({CollectiveOp::send_recv, 4096, 2, 2, DType::bf16});
  EXPECT_EQ(sr.count, 2048);
  EXPECT_DOUBLE_EQ(busbw_gb_s({CollectiveOp::send_recv, 4096, 2, 2, DType::bf16}, 1e-6), 4.096);
  EXPECT_THROW(collective_buffers({CollectiveOp::all_gather, 64, 8, 8, DType::bf16}), std::invalid_argument);
}

TEST(MemoryPatterns, ArraysMoveTheKeysBytes) {
  const MemoryPattern adam = memory_pattern("adam_step");
  EXPECT_EQ(adam.reads, 4);
  EXPECT_EQ(adam.writes, 3);
  EXPECT_EQ(adam.element_bytes, 4);
  EXPECT_EQ(elements_per_array({"adam_step", 7 * 4 * 1000}, adam), 1000);
  EXPECT_EQ(memory_pattern("copy").reads, 1);
  EXPECT_FALSE(memory_pattern("rmsnorm_fwd").approximated);
  EXPECT_TRUE(memory_pattern("something_new").approximated);
  EXPECT_EQ(elements_per_array({"something_new", 1}, memory_pattern("something_new")), 1);
}

TEST(ProfilePlan, JsonRoundTripCanonicalisesAndDropsRepeats) {
  const std::string text = R"({"calisim_profile_plan": 1, "description": "t",
    "collective": ["coll op=all_reduce bytes=1024 ranks=8 per_node=8 dtype=bf16"],
    "gemm": ["gemm layout=TN m=1 n=2 k=3 batch=1 dtype=bf16 acc=0", "gemm m=1 n=2 k=3 batch=1 dtype=bf16 layout=TN acc=0"],
    "memory": ["mem kind=copy bytes=1048576"]})";
  const ProfilePlan p = plan_from_json(text, "p.json");
  ASSERT_EQ(p.kernels.size(), 3u);
  EXPECT_EQ(p.kernels[0].key, "gemm m=1 n=2 k=3 batch=1 dtype=bf16 layout=TN acc=0");
  EXPECT_EQ(p.kernels[1].kind, db::KeyKind::memory);     // measuring order: gemm, attention, memory,
  EXPECT_EQ(p.kernels[2].kind, db::KeyKind::collective); // collective
  const ProfilePlan again = plan_from_json(plan_to_json(p), "again.json");
  EXPECT_EQ(again.kernels, p.kernels);
  EXPECT_EQ(again.description, "t");
}

TEST(ProfilePlan, MalformedEntriesNameFileAndPlace) {
  try {
    plan_from_json(R"({"calisim_profile_plan": 1, "gemm": ["gemm m=1 n=2"]})", "bad.json");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "bad.json");
    EXPECT_EQ(e.where(), "gemm[0]");
  }
  EXPECT_THROW(plan_from_json(R"({"calisim_profile_plan": 1, "gemm": ["mem kind=copy bytes=1"]})", "f"), InputError);
  EXPECT_THROW(plan_from_json(R"({"calisim_profile_plan": 1, "gemms": []})", "f"), InputError);
  EXPECT_THROW(plan_from_json(R"({"gemm": []})", "f"), InputError);
  EXPECT_THROW(plan_from_json("{", "f"), InputError);
}

TEST(Sweeps, GemmSweepUsesMegatronLayoutsAndKeyConvention) {
  const ProfilePlan p = gemm_sweep({DType::bf16});
  std::set<std::string> keys;
  for (const auto& k : p.kernels) keys.insert(k.key);
  EXPECT_EQ(keys.size(), p.kernels.size()) << "no repeated keys";
  EXPECT_TRUE(keys.count(to_string(GemmKey{8192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false})));
  // Down projection of hidden 4096 (ffn 14336) over 4096 tokens: forward, dgrad, wgrad.
  EXPECT_TRUE(keys.count(to_string(GemmKey{4096, 4096, 14336, 1, DType::bf16, GemmLayout::TN, false})));
  EXPECT_TRUE(keys.count(to_string(GemmKey{4096, 14336, 4096, 1, DType::bf16, GemmLayout::NN, false})));
  EXPECT_TRUE(keys.count(to_string(GemmKey{4096, 14336, 4096, 1, DType::bf16, GemmLayout::NT, true})));
  EXPECT_TRUE(std::any_of(p.kernels.begin(), p.kernels.end(),
                          [](const PlannedKernel& k) { return db::parse_gemm_key(k.key).batch > 1; }));
}

TEST(Sweeps, Fp8GemmSweepIsTnOnly) {
  // The simulator keys every FP8 GEMM pass TN (TE's transposed FP8 copies), so the sweep measures
  // the same keys: the bf16 sweep's shapes, each pass as TN.
  const ProfilePlan p = gemm_sweep({DType::fp8_e4m3});
  ASSERT_FALSE(p.kernels.empty());
  for (const auto& k : p.kernels) EXPECT_EQ(db::parse_gemm_key(k.key).layout, GemmLayout::TN) << k.key;
  std::set<std::string> keys;
  for (const auto& k : p.kernels) keys.insert(k.key);
  EXPECT_TRUE(keys.count(to_string(GemmKey{4096, 14336, 4096, 1, DType::fp8_e4m3, GemmLayout::TN, false})));
}

TEST(Sweeps, CollectiveSweepSpans1KiBTo4GiB) {
  const ProfilePlan p = collective_sweep(8, 8);
  EXPECT_EQ(p.kernels.size(), 5u * 12u);
  EXPECT_EQ(db::parse_collective_key(p.kernels.front().key).bytes, 1024);
  EXPECT_EQ(db::parse_collective_key(p.kernels[11].key).bytes, std::int64_t{4} << 30);
}

TEST(Sweeps, AllKindsInMeasuringOrder) {
  SweepOptions o;
  o.ranks = o.ranks_per_node = 4;
  const ProfilePlan all = make_sweep(SweepKind::all, o);
  EXPECT_EQ(all.kernels.front().kind, db::KeyKind::gemm);
  EXPECT_EQ(all.kernels.back().kind, db::KeyKind::collective);
  const ProfilePlan att = attention_sweep({DType::bf16});
  EXPECT_EQ(att.count(db::KeyKind::attention), att.kernels.size());
  EXPECT_TRUE(std::any_of(att.kernels.begin(), att.kernels.end(), [](const PlannedKernel& k) {
    const AttentionKey a = db::parse_attention_key(k.key);
    return a.head_dim_qk == 192 && a.head_dim_v == 128 && a.direction == AttentionDirection::backward;
  }));
  EXPECT_THROW(parse_sweep_kind("gemms"), InputError);
}

DeviceSpec h100() {
  DeviceSpec d;
  d.name = "NVIDIA H100 SXM5 80GB";
  d.peak_tflops[static_cast<int>(DType::bf16)] = 989;
  d.hbm_gb_s = 3350;
  return d;
}

Measurement measured(double median_s) {
  Measurement m;
  m.status = MeasurementStatus::measured;
  m.summary = summarize({median_s, median_s, median_s});
  return m;
}

TEST(RowBuilder, EfficienciesFollowTheDatabaseConventions) {
  // bf16 8192^3 in 1.392 ms = 790 TFLOP/s, 0.799 of 989.
  const GemmKey g{8192, 8192, 8192, 1, DType::bf16, GemmLayout::TN, false};
  const auto rows = rows_for({db::KeyKind::gemm, to_string(g)}, measured(1.392e-3), h100(), {});
  ASSERT_EQ(rows.gemm.size(), 1u);
  EXPECT_NEAR(rows.gemm[0].tflops, 789.9, 0.1);
  EXPECT_NEAR(rows.gemm[0].efficiency, 789.9 / 989, 1e-3);
  EXPECT_EQ(rows.gemm[0].stats.n, 3);

  const MemoryOpKey mk{"copy", 2'000'000'000};
  const auto mem = rows_for({db::KeyKind::memory, to_string(mk)}, measured(1e-3), h100(), {});
  EXPECT_NEAR(mem.memory[0].gb_s, 2000, 1e-9);
  EXPECT_NEAR(mem.memory[0].efficiency, 2000.0 / 3350, 1e-12);

  const CollectiveKey ck{CollectiveOp::all_reduce, 1 << 30, 8, 8, DType::bf16};
  const auto coll = rows_for({db::KeyKind::collective, to_string(ck)}, measured(5e-3), h100(), {450, 50});
  EXPECT_DOUBLE_EQ(coll.collective[0].link_gb_s, 450);
  EXPECT_NEAR(coll.collective[0].efficiency, coll.collective[0].busbw_gb_s / 450, 1e-12);
  const CollectiveKey across{CollectiveOp::all_reduce, 1 << 30, 16, 8, DType::bf16};
  EXPECT_DOUBLE_EQ(rows_for({db::KeyKind::collective, to_string(across)}, measured(5e-3), h100(), {450, 50})
                       .collective[0]
                       .link_gb_s,
                   50);
}

TEST(RowBuilder, NoPeakForTheDtypeIsAnInputError) {
  const GemmKey g{4096, 4096, 4096, 1, DType::fp8_e4m3, GemmLayout::TN, false};
  EXPECT_THROW(rows_for({db::KeyKind::gemm, to_string(g)}, measured(1e-3), h100(), {}), InputError);
  EXPECT_THROW(rows_for({db::KeyKind::gemm, to_string(g)}, Measurement::skipped_because("x"), h100(), {}),
               std::invalid_argument);
}

}  // namespace
}  // namespace calisim::profiler
