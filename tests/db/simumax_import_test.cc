#include "db/simumax_import.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <memory>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "db/db_efficiency_model.h"
#include "db_test_util.h"

namespace calisim::db {
namespace {

const std::string kDevice = "NVIDIA A100 PCIe 80GB";
std::string a100() { return testing::fixture("simumax/system/a100_pcie.json"); }

const GemmRow* find_gemm(const MeasurementSet& s, const GemmKey& k) {
  for (const auto& r : s.gemm) {
    if (r.key == k) return &r;
  }
  return nullptr;
}

TEST(SimumaxImport, ReadsEveryTableOfTheA100File) {
  const SimumaxImport imp = read_simumax_system(a100(), kDevice);
  EXPECT_EQ(imp.alias, "a100_pcie_bf16");
  EXPECT_DOUBLE_EQ(imp.device.peak_tflops[static_cast<int>(DType::bf16)], 312);
  EXPECT_DOUBLE_EQ(imp.device.peak_tflops[static_cast<int>(DType::fp8_e4m3)], 624);
  EXPECT_NEAR(imp.device.hbm_gb_s, 1600 * 1.073741824, 1e-9);
  const MeasurementSet& s = imp.batch.rows;
  EXPECT_EQ(s.gemm.size(), 183u + 12u);  // matmul + group_matmul
  EXPECT_EQ(s.attention.size(), 24u);    // sdp_fwd + sdp_bwd
  EXPECT_EQ(s.memory_fits.size(), 8u);   // default, permute_fwd/_bwd, ce + unpermute_fwd/_bwd, ce_fwd/_bwd
  EXPECT_EQ(s.collective_fits.size(), 20u);
  EXPECT_EQ(imp.warnings.size(), 3u);    // dp_fixed_bw (all_gather, reduce_scatter) not imported + the bridge
  EXPECT_EQ(imp.batch.run.source, Source::imported);
}

// SimuMax prices the un-permutation with the permute bandwidths (moe_module.py UnPermutation);
// calisim's unpermute op asks for unpermute_fwd / unpermute_bwd, so they get the same fit.
TEST(SimumaxImport, UnpermuteUsesThePermuteBandwidths) {
  const MeasurementSet s = read_simumax_system(a100(), kDevice).batch.rows;
  auto fit = [&](const std::string& kind) -> const MemoryFit* {
    for (const auto& f : s.memory_fits) {
      if (f.kind == kind) return &f;
    }
    return nullptr;
  };
  for (const char* dir : {"fwd", "bwd"}) {
    const MemoryFit* permute = fit(std::string("permute_") + dir);
    const MemoryFit* unpermute = fit(std::string("unpermute_") + dir);
    ASSERT_NE(permute, nullptr);
    ASSERT_NE(unpermute, nullptr);
    EXPECT_DOUBLE_EQ(unpermute->efficiency, 0.1879);
    EXPECT_DOUBLE_EQ(unpermute->bandwidth_gb_s, permute->bandwidth_gb_s);
    EXPECT_DOUBLE_EQ(unpermute->latency_us, permute->latency_us);
  }
}

// SimuMax prices its cross-entropy with the table's single `ce` bandwidth (0.808 of 1600 GiB/s on
// this A100); calisim's cross_entropy op asks for ce_fwd / ce_bwd, which the import stores from it,
// so the lookup finds that fit instead of falling to `default` (0.91).
TEST(SimumaxImport, CrossEntropyUsesTheCeBandwidth) {
  const SimumaxImport imp = read_simumax_system(a100(), kDevice);
  const auto model = make_db_efficiency_model(imp.device, {imp.batch}, std::make_shared<testing::ConstantModel>());
  const std::int64_t bytes = 1'000'000'000;
  const double fit_s = 40e-6 + bytes / (0.808 * 1600 * 1.073741824e9);
  const double hbm = imp.device.hbm_gb_s * 1e9;
  for (const char* kind : {"ce_fwd", "ce_bwd"}) {
    const Efficiency e = model->memory_op(MemoryOpKey{kind, bytes});
    EXPECT_NEAR(e.value, bytes / fit_s / hbm, 1e-9) << kind;
    EXPECT_EQ(e.source, EfficiencySource::interpolated) << kind;
  }
  // Another kind without a fit of its own still uses `default`.
  const double default_s = 40e-6 + bytes / (0.91 * 1600 * 1.073741824e9);
  EXPECT_NEAR(model->memory_op(MemoryOpKey{"rmsnorm_fwd", bytes}).value, bytes / default_s / hbm, 1e-9);
}

// dp_fixed_bw of intra_node_pcie_8x: reduce_scatter {2: 3.9, 4: 7} and all_gather {2: 4, 4: 7.65}
// GiB/s. Groups of 2 (4) ranks spanning the 8 GPUs: 4 (2) of them cross the bridge at once, so the
// bridge is the mean of 4 x 3.9, 2 x 7, 4 x 4, 2 x 7.65 = 15.225 GiB/s, the a100-pcie-80g
// system file's pcie_bridge_gb_s 16.3 (docs/comm.md "PCIe switches").
TEST(SimumaxImport, DpFixedBwGivesTheHostBridge) {
  const SimumaxImport imp = read_simumax_system(a100(), kDevice);
  EXPECT_NEAR(imp.pcie_bridge_gb_s, 15.225 * 1.073741824, 1e-9);
  EXPECT_NEAR(imp.pcie_bridge_gb_s, 16.3, 0.05);
  EXPECT_TRUE(std::any_of(imp.warnings.begin(), imp.warnings.end(), [](const std::string& w) {
    return w.find("PCIe host bridge of 16.3 GB/s") != std::string::npos;
  }));
}

TEST(SimumaxImport, MapsGemmKeysByTheMegatronConvention) {
  const MeasurementSet s = read_simumax_system(a100(), kDevice).batch.rows;
  // "b=1, m=4096, k=5120, n=1536, layout=TN, accumulate=False, out_dtype=bf16": 0.7876672065615554
  const GemmRow* fwd = find_gemm(s, GemmKey{4096, 1536, 5120, 1, DType::bf16, GemmLayout::TN, false});
  ASSERT_NE(fwd, nullptr);
  EXPECT_DOUBLE_EQ(fwd->efficiency, 0.7876672065615554);
  EXPECT_NEAR(fwd->tflops, 0.7876672065615554 * 312, 1e-9);
  EXPECT_NEAR(fwd->stats.median_s, fwd->key.flops() / (fwd->tflops * 1e12), 1e-15);
  // "b=1, m=1536, k=4096, n=5120, layout=NT, accumulate=True, out_dtype=fp32": 0.6244545650481178
  const GemmRow* wgrad = find_gemm(s, GemmKey{1536, 5120, 4096, 1, DType::bf16, GemmLayout::NT, true});
  ASSERT_NE(wgrad, nullptr);
  EXPECT_DOUBLE_EQ(wgrad->efficiency, 0.6244545650481178);
  // group_matmul ng=40, M=616, N=3072, K=5120 stage=bwd_grad_w: 0.5196854178569805 -> NT m=N k=M n=K.
  const GemmRow* grouped = find_gemm(s, GemmKey{3072, 5120, 616, 40, DType::bf16, GemmLayout::NT, true});
  ASSERT_NE(grouped, nullptr);
  EXPECT_DOUBLE_EQ(grouped->efficiency, 0.5196854178569805);
  EXPECT_NE(find_gemm(s, GemmKey{616, 5120, 3072, 40, DType::bf16, GemmLayout::NN, false}), nullptr);
}

TEST(SimumaxImport, RescalesAttentionToCausalFlops) {
  const MeasurementSet s = read_simumax_system(a100(), kDevice).batch.rows;
  AttentionKey k;
  k.batch = 1, k.heads_q = k.heads_kv = 128, k.seq_q = k.seq_kv = 4096, k.head_dim_qk = 192, k.head_dim_v = 128;
  k.causal = true;
  bool fwd_found = false, bwd_found = false;
  for (const auto& r : s.attention) {
    if (r.key == k) {
      EXPECT_NEAR(r.efficiency, 1.0729673001633662 / 2, 1e-12);  // SimuMax counts non-causal FLOPs
      fwd_found = true;
    }
    AttentionKey kb = k;
    kb.direction = AttentionDirection::backward;
    if (r.key == kb) {
      EXPECT_NEAR(r.efficiency, 0.8018473732899901 / 2, 1e-12);
      bwd_found = true;
    }
    EXPECT_LE(r.efficiency, 1.0) << to_string(r.key);
  }
  EXPECT_TRUE(fwd_found && bwd_found);
}

TEST(SimumaxImport, ExpressesEfficienciesAgainstAnExistingDevicesPeak) {
  DeviceRecord faster = testing::test_device(kDevice);
  faster.peak_tflops[static_cast<int>(DType::bf16)] = 624;  // twice the file's 312
  const MeasurementSet s = read_simumax_system(a100(), kDevice, &faster).batch.rows;
  const GemmRow* fwd = find_gemm(s, GemmKey{4096, 1536, 5120, 1, DType::bf16, GemmLayout::TN, false});
  ASSERT_NE(fwd, nullptr);
  EXPECT_NEAR(fwd->efficiency, 0.7876672065615554 / 2, 1e-12);
}

using SimumaxDbTest = testing::ScratchDir;

TEST_F(SimumaxDbTest, ImportedFileServesTheSimulatorsKeys) {
  {
    auto db = EfficiencyDb::open(path("s.db"), OpenMode::create);
    import_simumax_system(db, a100(), kDevice);
    EXPECT_EQ(db.summary(kDevice).gemm, 195);
  }
  const auto model =
      load_db_efficiency_model(path("s.db"), "a100_pcie_bf16", std::make_shared<testing::ConstantModel>());
  const Efficiency e = model->gemm(GemmKey{4096, 1536, 5120, 1, DType::bf16, GemmLayout::TN, false});
  EXPECT_EQ(e.source, EfficiencySource::measured);
  EXPECT_DOUBLE_EQ(e.value, 0.7876672065615554);
  const Efficiency ar = model->collective(CollectiveKey{CollectiveOp::all_reduce, 1 << 28, 8, 8, DType::bf16});
  EXPECT_EQ(ar.source, EfficiencySource::interpolated);
  EXPECT_GT(ar.value, 0.40);
  EXPECT_LT(ar.value, 0.4176);
}

// SimuMax stores grouped GEMMs with tokens per expert padded up to a multiple of 8 (ng=20, M=1232
// for DeepSeek-V2 at ep8: 4096 x 6 x 8 / 160 = 1228.8 tokens); the simulator asks for 1229. The
// padded row runs the same tile grid, so it answers with the same time: efficiency x 1229/1232.
TEST_F(SimumaxDbTest, GroupedGemmsMatchTheirPaddedRows) {
  {
    auto db = EfficiencyDb::open(path("s.db"), OpenMode::create);
    import_simumax_system(db, a100(), kDevice);
  }
  const auto model = load_db_efficiency_model(path("s.db"), kDevice, std::make_shared<testing::ConstantModel>());
  // "ng=20, M=1232, N=3072, K=5120, ... stage=fwd": 0.7073733774506031
  const Efficiency fwd = model->gemm(GemmKey{1229, 3072, 5120, 20, DType::bf16, GemmLayout::TN, false});
  EXPECT_EQ(fwd.source, EfficiencySource::measured);
  EXPECT_NEAR(fwd.value, 0.7073733774506031 * 1229.0 / 1232.0, 1e-12);
  // The weight gradient carries the tokens in k: "stage=bwd_grad_w": 0.6036380796120573.
  const Efficiency wgrad = model->gemm(GemmKey{3072, 5120, 1229, 20, DType::bf16, GemmLayout::NT, true});
  EXPECT_EQ(wgrad.source, EfficiencySource::measured);
  EXPECT_NEAR(wgrad.value, 0.6036380796120573 * 1229.0 / 1232.0, 1e-12);
  // Padding never reaches a different tile grid: 1224 (a multiple of 8 itself) is not 1232.
  const Efficiency other = model->gemm(GemmKey{1224, 3072, 5120, 20, DType::bf16, GemmLayout::TN, false});
  EXPECT_NE(other.source, EfficiencySource::measured);
}

TEST_F(SimumaxDbTest, MalformedDpFixedBwNamesTheField) {
  const std::string file = path("bad_dp_fixed.json");
  nlohmann::json j = nlohmann::json::parse(std::ifstream(a100()));
  j["networks"]["intra_node_pcie_8x"]["op"]["all_gather"]["dp_fixed_bw"] = {{"3", 4.0}};
  std::ofstream(file) << j.dump();
  try {
    read_simumax_system(file, kDevice);
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "networks.intra_node_pcie_8x.op.all_gather.dp_fixed_bw.3");
  }
}

TEST_F(SimumaxDbTest, MalformedFilesNameTheEntry) {
  std::ofstream(path("bad.json")) << R"({"accelerator": {"op": {"matmul": {"tflops": 312,
      "accurate_efficient_factor": {"b=1, m=4096, k=5120, layout=TN, accumulate=False": 0.7}}}}})";
  try {
    read_simumax_system(path("bad.json"), kDevice);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("accelerator.op.matmul.accurate_efficient_factor"), std::string::npos) << e.what();
    EXPECT_NE(e.problem().find("'n'"), std::string::npos) << e.what();
  }
  std::ofstream(path("syntax.json")) << "{\n  \"accelerator\": {\n    \"op\": [1,\n  }\n}";
  try {
    read_simumax_system(path("syntax.json"), kDevice);
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(e.where().find("line 4"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace calisim::db
