#include "db/efficiency_db.h"

#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "db/nearest.h"
#include "db_test_util.h"

namespace calisim::db {
namespace {

using testing::gemm_row;
using testing::gemm_rows;
using testing::run_with;
using testing::test_device;

class EfficiencyDbTest : public testing::ScratchDir {
 protected:
  void SetUp() override {
    ScratchDir::SetUp();
    db_.emplace(EfficiencyDb::open(path("e.db"), OpenMode::create));
    db_->put_device(test_device());
  }
  EfficiencyDb& db() { return *db_; }
  std::optional<EfficiencyDb> db_;
};

TEST_F(EfficiencyDbTest, DevicesRoundTripAndUpdateByName) {
  DeviceRecord d = test_device("Other GPU");
  d.library_versions = "cublasLt 12.4";
  d.peak_tflops[static_cast<int>(DType::fp8_e4m3)] = 2000;
  db().put_device(d);
  EXPECT_EQ(db().device("Other GPU"), d);
  d.hbm_gb_s = 3350;
  db().put_device(d);
  EXPECT_EQ(db().device("Other GPU").hbm_gb_s, 3350);
  ASSERT_EQ(db().devices().size(), 2u);
  EXPECT_EQ(db().devices().front().name, "Other GPU");  // sorted by name
  EXPECT_FALSE(db().add_device_if_missing(d));
}

TEST_F(EfficiencyDbTest, AliasesResolveAndUnknownNamesListTheDevices) {
  db().add_alias("tg", "Test GPU");
  EXPECT_EQ(db().device("tg").name, "Test GPU");
  EXPECT_EQ(db().aliases("Test GPU"), std::vector<std::string>{"tg"});
  try {
    db().device("Nope");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("'Test GPU'"), std::string::npos) << e.what();
  }
}

TEST_F(EfficiencyDbTest, InsertsLoadsAndLooksUpBestFirst) {
  MeasurementSet a;
  a.gemm.push_back(gemm_row(4096, 0.6));
  MeasurementSet b;
  b.gemm.push_back(gemm_row(4096, 0.7));
  MeasurementSet c;
  c.gemm.push_back(gemm_row(4096, 0.8));
  db().insert_runs({run_with("Test GPU", Source::imported, "h1", "2025-01-01T00:00:00Z", a),
                    run_with("Test GPU", Source::measured, "h1", "2024-01-01T00:00:00Z", b),
                    run_with("Test GPU", Source::measured, "h2", "2025-02-01T00:00:00Z", c)});
  const auto hits = db().lookup("Test GPU", to_string(gemm_row(4096, 0).key));
  ASSERT_EQ(hits.size(), 3u);
  EXPECT_DOUBLE_EQ(hits[0].row.gemm.at(0).efficiency, 0.8);  // measured, newest
  EXPECT_DOUBLE_EQ(hits[1].row.gemm.at(0).efficiency, 0.7);  // measured, older
  EXPECT_DOUBLE_EQ(hits[2].row.gemm.at(0).efficiency, 0.6);  // imported
  EXPECT_EQ(hits[0].row.gemm.at(0), c.gemm[0]);
  EXPECT_TRUE(db().lookup("Test GPU", to_string(gemm_row(1, 0).key)).empty());

  const auto runs = db().load_runs("Test GPU");
  ASSERT_EQ(runs.size(), 3u);
  EXPECT_EQ(runs[0].rows.gemm, a.gemm);
  EXPECT_EQ(runs[2].run.host, "h2");
}

TEST_F(EfficiencyDbTest, EveryTableRoundTrips) {
  MeasurementSet s;
  s.gemm.push_back(gemm_row(128, 0.4));
  AttentionRow a;
  a.key.heads_q = 32, a.key.heads_kv = 8, a.key.seq_q = a.key.seq_kv = 4096;
  a.efficiency = 0.55, a.tflops = 550, a.stats = {1e-3, 9e-4, 1.1e-3, 1e-5, 20};
  s.attention.push_back(a);
  CollectiveRow c;
  c.key = CollectiveKey{CollectiveOp::all_reduce, 1 << 26, 8, 8, DType::bf16};
  c.algbw_gb_s = 100, c.busbw_gb_s = 175, c.link_gb_s = 450, c.efficiency = 175.0 / 450, c.stats = {1e-3, 1e-3, 1e-3, 0, 5};
  s.collective.push_back(c);
  MemoryOpRow m;
  m.key = MemoryOpKey{"copy", 1 << 30};
  m.gb_s = 1500, m.efficiency = 0.75, m.stats = {7e-4, 7e-4, 7e-4, 0, 3};
  s.memory.push_back(m);
  s.memory_fits.push_back(MemoryFit{"default", 1700, 0.9, 40});
  s.collective_fits.push_back(CollectiveFit{CollectiveOp::all_gather, LinkTier::inter_node, 0, 25, 0.6, 40});
  const auto id = db().insert_run(run_with("Test GPU", Source::measured, "h", "t", s));
  const auto runs = db().load_runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].run.id, id);
  EXPECT_EQ(runs[0].rows.gemm, s.gemm);
  EXPECT_EQ(runs[0].rows.attention, s.attention);
  EXPECT_EQ(runs[0].rows.collective, s.collective);
  EXPECT_EQ(runs[0].rows.memory, s.memory);
  EXPECT_EQ(runs[0].rows.memory_fits, s.memory_fits);
  EXPECT_EQ(runs[0].rows.collective_fits, s.collective_fits);

  const DeviceSummary sum = db().summary("Test GPU");
  EXPECT_EQ(sum.runs, 1);
  EXPECT_EQ(sum.total(), 6);
  EXPECT_EQ(sum.rows_by_source[static_cast<int>(Source::measured)], 6);
}

TEST_F(EfficiencyDbTest, RejectsBadRowsBeforeWritingAnything) {
  MeasurementSet s = gemm_rows(10);
  s.gemm[7].efficiency = std::nan("");
  EXPECT_THROW(db().insert_run(run_with("Test GPU", Source::measured, "h", "t", s)), InputError);
  EXPECT_TRUE(db().runs().empty());
  // A run for an unknown device rolls back the whole call.
  EXPECT_THROW(db().insert_runs({run_with("Test GPU", Source::measured, "h", "t", gemm_rows(3)),
                                 run_with("Ghost", Source::measured, "h", "t", gemm_rows(3))}),
               InputError);
  EXPECT_TRUE(db().runs().empty());
}

TEST_F(EfficiencyDbTest, DeletesARunWithItsRows) {
  const auto keep = db().insert_run(run_with("Test GPU", Source::measured, "a", "t", gemm_rows(5)));
  const auto drop = db().insert_run(run_with("Test GPU", Source::measured, "b", "t", gemm_rows(7, 1000)));
  EXPECT_TRUE(db().delete_run(drop));
  EXPECT_FALSE(db().delete_run(drop));
  EXPECT_EQ(db().summary("Test GPU").gemm, 5);
  EXPECT_EQ(db().runs().at(0).id, keep);
}

TEST_F(EfficiencyDbTest, ProgressIsReportedAndCanAbortTheBatch) {
  std::size_t last = 0;
  db().insert_run(run_with("Test GPU", Source::measured, "h", "t", gemm_rows(3000)),
                  [&](std::size_t done, std::size_t total) {
                    EXPECT_EQ(total, 3000u);
                    last = done;
                  });
  EXPECT_EQ(last, 3000u);
  EXPECT_THROW(db().insert_run(run_with("Test GPU", Source::measured, "h2", "t", gemm_rows(3000, 9000)),
                               [](std::size_t, std::size_t) { throw std::runtime_error("stop"); }),
               std::runtime_error);
  EXPECT_EQ(db().summary("Test GPU").gemm, 3000);
}

TEST(Nearest, OrdersByLogShapeDistanceWithinACategory) {
  MeasurementSet s;
  for (std::int64_t m : {256, 1024, 4096, 16384}) s.gemm.push_back(gemm_row(m, 0.5));
  GemmRow other_layout = gemm_row(2048, 0.5);
  other_layout.key.layout = GemmLayout::NN;
  s.gemm.push_back(other_layout);
  const std::vector<RunBatch> runs{run_with("Test GPU", Source::measured, "h", "t", s)};
  const auto n = nearest(runs, to_string(gemm_row(2048, 0).key), 3);
  ASSERT_EQ(n.size(), 3u);
  EXPECT_EQ(n[0].row.gemm[0].key.m, 1024);  // log2 distance 1 (tie with 4096 keeps load order)
  EXPECT_DOUBLE_EQ(n[0].distance, 1.0);
  EXPECT_EQ(n[1].row.gemm[0].key.m, 4096);
  EXPECT_EQ(n[2].row.gemm[0].key.m, 256);
}

}  // namespace
}  // namespace calisim::db
