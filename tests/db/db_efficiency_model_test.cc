#include "db/db_efficiency_model.h"

#include <gtest/gtest.h>

#include "core/error.h"
#include "db_test_util.h"

namespace calisim::db {
namespace {

using testing::gemm_row;
using testing::run_with;
using testing::test_device;

std::shared_ptr<const EfficiencyModel> roofline() { return std::make_shared<testing::ConstantModel>(); }

TEST(DbEfficiencyModel, ExactHitsAreMeasuredAndMissesFallBackUnchanged) {
  MeasurementSet s;
  s.gemm.push_back(gemm_row(4096, 0.8));
  MemoryOpRow m;
  m.key = MemoryOpKey{"copy", 1 << 20};
  m.efficiency = 0.7;
  s.memory.push_back(m);
  const auto model = make_db_efficiency_model(test_device(), {run_with("Test GPU", Source::measured, "h", "t", s)},
                                              roofline());
  const Efficiency hit = model->gemm(gemm_row(4096, 0).key);
  EXPECT_DOUBLE_EQ(hit.value, 0.8);
  EXPECT_EQ(hit.source, EfficiencySource::measured);
  const Efficiency miss = model->gemm(gemm_row(4097, 0).key);
  EXPECT_DOUBLE_EQ(miss.value, 0.123);
  EXPECT_EQ(miss.source, EfficiencySource::roofline);
  EXPECT_DOUBLE_EQ(model->memory_op(MemoryOpKey{"copy", 1 << 20}).value, 0.7);
  EXPECT_DOUBLE_EQ(model->memory_op(MemoryOpKey{"copy", 1 << 21}).value, 0.345);  // no fit: fallback
  EXPECT_DOUBLE_EQ(model->attention(AttentionKey{}).value, 0.234);
  EXPECT_DOUBLE_EQ(model->collective(CollectiveKey{}).value, 0.456);
}

TEST(DbEfficiencyModel, PrefersMeasuredOverImportedAndCapsAtOne) {
  MeasurementSet imported, measured;
  imported.gemm.push_back(gemm_row(512, 1.3));
  imported.gemm.push_back(gemm_row(1024, 0.9));
  measured.gemm.push_back(gemm_row(1024, 0.6));
  const auto model =
      make_db_efficiency_model(test_device(),
                               {run_with("Test GPU", Source::imported, "h", "2026", imported),
                                run_with("Test GPU", Source::measured, "h", "2020", measured)},
                               roofline());
  EXPECT_DOUBLE_EQ(model->gemm(gemm_row(1024, 0).key).value, 0.6);
  EXPECT_DOUBLE_EQ(model->gemm(gemm_row(512, 0).key).value, 1.0);
}

TEST(DbEfficiencyModel, FitsGiveSizeDependentInterpolatedEfficiencies) {
  MeasurementSet s;
  s.memory_fits.push_back(MemoryFit{"default", 2000, 0.9, 10});
  s.memory_fits.push_back(MemoryFit{"permute_fwd", 2000, 0.2, 10});
  s.collective_fits.push_back(CollectiveFit{CollectiveOp::all_reduce, LinkTier::intra_node, 8, 100, 0.5, 5});
  s.collective_fits.push_back(CollectiveFit{CollectiveOp::all_reduce, LinkTier::inter_node, 0, 25, 0.6, 40});
  const auto model = make_db_efficiency_model(test_device(), {run_with("Test GPU", Source::imported, "h", "t", s)},
                                              roofline());
  const double bytes = 1e9;
  const double t = 10e-6 + bytes / (0.9 * 2000e9);
  const Efficiency big = model->memory_op(MemoryOpKey{"rmsnorm_fwd", 1'000'000'000});
  EXPECT_NEAR(big.value, bytes / t / 2000e9, 1e-12);  // device HBM is 2000 GB/s
  EXPECT_EQ(big.source, EfficiencySource::interpolated);
  EXPECT_LT(model->memory_op(MemoryOpKey{"rmsnorm_fwd", 1'000'000}).value, 0.1);  // latency-bound
  EXPECT_LT(model->memory_op(MemoryOpKey{"permute_fwd", 1'000'000'000}).value, 0.2);

  const CollectiveKey intra{CollectiveOp::all_reduce, 1 << 28, 8, 8, DType::bf16};
  const double wire = (1 << 28) * 2.0 * 7 / 8;
  EXPECT_NEAR(model->collective(intra).value, wire / (5e-6 + wire / (0.5 * 100e9)) / 100e9, 1e-12);
  const CollectiveKey inter{CollectiveOp::all_reduce, 1 << 28, 16, 8, DType::bf16};
  const double wire16 = (1 << 28) * 2.0 * 15 / 16;
  EXPECT_NEAR(model->collective(inter).value, wire16 / (40e-6 + wire16 / (0.6 * 25e9)) / 25e9, 1e-12);
  // Intra-node group of 4 has no fit of its own size and no any-size fit: fallback.
  EXPECT_EQ(model->collective(CollectiveKey{CollectiveOp::all_reduce, 1 << 28, 4, 8, DType::bf16}).source,
            EfficiencySource::roofline);
}

using LoadTest = testing::ScratchDir;

TEST_F(LoadTest, LoadsByNameOrAliasAndListsDevicesOnAMiss) {
  {
    auto db = EfficiencyDb::open(path("m.db"), OpenMode::create);
    db.put_device(test_device());
    db.add_alias("tgpu", "Test GPU");
    MeasurementSet s;
    s.gemm.push_back(gemm_row(4096, 0.8));
    db.insert_run(run_with("Test GPU", Source::measured, "h", "t", s));
  }
  const auto model = load_db_efficiency_model(path("m.db"), "tgpu", roofline());
  EXPECT_DOUBLE_EQ(model->gemm(gemm_row(4096, 0).key).value, 0.8);
  EXPECT_EQ(list_db_devices(path("m.db")), std::vector<std::string>{"Test GPU (tgpu)"});
  try {
    load_db_efficiency_model(path("m.db"), "H100", roofline());
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'Test GPU'"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace calisim::db
