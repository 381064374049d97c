// Database collective rows through the network model: a stored efficiency is relative to the link
// its row was measured (or fitted) on, the comm model multiplies by the system file's link, and
// the database model bridges the two (db_efficiency_model.h CollectiveLinkFn) so that a data-answered
// collective takes wire bytes / achieved busbw whatever the system file says its link is.
#include <gtest/gtest.h>

#include <memory>

#include "db/db_efficiency_model.h"
#include "simulator/comm_model.h"
#include "simulator/default_efficiency.h"
#include "test_support.h"

namespace calisim {
namespace {

db::DeviceRecord device(const SystemConfig& sys) {
  db::DeviceRecord d;
  d.name = sys.device.name;
  d.hbm_gb_s = 2000;
  return d;
}

db::RunBatch batch(db::MeasurementSet rows) {
  db::RunBatch b;
  b.run.device = "test";
  b.run.source = db::Source::measured;
  b.run.started_at = "2026-01-01T00:00:00Z";
  b.rows = std::move(rows);
  return b;
}

TEST(CommDb, MeasuredRowReproducesItsTimeOnAnotherLink) {
  const SystemConfig sys = testing_support::shipped_system("a100-pcie-80g");  // scale-up link 32 GB/s
  const auto roofline = std::make_shared<const DefaultEfficiencyModel>(sys);
  const CollectiveKey key{CollectiveOp::all_reduce, 64 << 20, 4, 4, DType::bf16};
  db::CollectiveRow r;
  r.key = key;
  r.stats.median_s = 9.1e-3;
  r.stats.n = 20;
  r.algbw_gb_s = static_cast<double>(key.bytes) / r.stats.median_s / 1e9;
  r.busbw_gb_s = r.algbw_gb_s * bus_factor(key.op, key.ranks);
  r.link_gb_s = 30;  // SimuMax's PCIe link, not the system file's 32
  r.efficiency = r.busbw_gb_s / r.link_gb_s;
  db::MeasurementSet rows;
  rows.collective.push_back(r);
  const auto link = [&sys](const CollectiveKey& k) { return link_for(k, sys).gb_s; };
  ASSERT_DOUBLE_EQ(link(key), 32.0);
  const auto model = db::make_db_efficiency_model(device(sys), {batch(rows)}, roofline, link);
  Efficiency used;
  EXPECT_NEAR(collective_time_s(key, sys, *model, &used), r.stats.median_s, r.stats.median_s * 1e-12);
  EXPECT_EQ(used.source, EfficiencySource::measured);
  EXPECT_NEAR(collective_cost(key, sys, *model).busbw_gb_s, r.busbw_gb_s, 1e-9);
  // Without the link function the efficiency is taken against the wrong link: 32/30 too fast.
  const auto as_stored = db::make_db_efficiency_model(device(sys), {batch(rows)}, roofline);
  EXPECT_NEAR(collective_time_s(key, sys, *as_stored), r.stats.median_s * 30 / 32, 1e-12);
}

TEST(CommDb, FitIsEvaluatedOnItsOwnLink) {
  const SystemConfig sys = testing_support::shipped_system("a100-pcie-80g");
  const auto roofline = std::make_shared<const DefaultEfficiencyModel>(sys);
  db::MeasurementSet rows;
  rows.collective_fits.push_back(
      db::CollectiveFit{CollectiveOp::all_gather, db::LinkTier::intra_node, 0, 30, 0.45, 12});
  const auto model = db::make_db_efficiency_model(device(sys), {batch(rows)}, roofline,
                                                  [&sys](const CollectiveKey& k) { return link_for(k, sys).gb_s; });
  for (std::int64_t bytes : {std::int64_t{1} << 16, std::int64_t{1} << 26}) {
    const CollectiveKey key{CollectiveOp::all_gather, bytes, 8, 8, DType::bf16};
    // The fit's own formula: latency + wire bytes / (efficiency × its 30 GB/s link).
    const double expected = 12e-6 + static_cast<double>(bytes) * 7 / 8 / (0.45 * 30e9);
    Efficiency used;
    EXPECT_NEAR(collective_time_s(key, sys, *model, &used), expected, expected * 1e-12) << bytes;
    EXPECT_EQ(used.source, EfficiencySource::interpolated);
  }
}

}  // namespace
}  // namespace calisim
