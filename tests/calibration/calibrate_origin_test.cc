// Which device a predicted value came from: the database model labels rows and fits of
// `predicted` runs `scaled` with an origin id naming the source device(s), and the simulator
// reports them per op and per origin.
#include <gtest/gtest.h>

#include <memory>

#include "db/db_efficiency_model.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace calisim {
namespace {

db::DeviceRecord device() {
  db::DeviceRecord d;
  d.name = "B";
  d.peak_tflops[static_cast<int>(DType::bf16)] = 1000;
  d.hbm_gb_s = 3000;
  return d;
}

db::RunBatch run(db::Source source, const std::string& notes, const GemmKey& key, double efficiency) {
  db::RunBatch b;
  b.run.device = "B";
  b.run.source = source;
  b.run.started_at = "2026-01-01T00:00:00Z";
  b.run.notes = notes;
  b.rows.gemm.push_back(db::row_from_tflops<db::GemmRow>(key, efficiency * 1000, 1000));
  return b;
}

GemmKey gemm(std::int64_t m) { return {m, 4096, 4096, 1, DType::bf16, GemmLayout::TN, false}; }

std::shared_ptr<const EfficiencyModel> roofline() {
  SystemConfig s;
  s.matmul_efficiency = 0.5;
  return std::make_shared<const DefaultEfficiencyModel>(s);
}

TEST(Origin, PredictedRowsAreScaledFromTheDevicesTheirRunNames) {
  std::vector<db::RunBatch> runs{
      run(db::Source::measured, "profiled", gemm(1024), 0.7),
      run(db::Source::predicted, "predicted from A, C by calisim-predictor-2; per-call overhead 4 us", gemm(2048), 0.6),
      run(db::Source::predicted, "scaled by hand; see wiki", gemm(4096), 0.65)};
  runs[2].rows.memory_fits.push_back({"default", 3000, 0.8, 2.0});
  const auto model = db::make_db_efficiency_model(device(), runs, roofline());

  const Efficiency measured = model->gemm(gemm(1024));
  EXPECT_EQ(measured.source, EfficiencySource::measured);
  EXPECT_EQ(measured.origin, 0);
  EXPECT_EQ(model->origin(0), "");

  const Efficiency scaled = model->gemm(gemm(2048));
  EXPECT_EQ(scaled.source, EfficiencySource::scaled);
  EXPECT_NE(scaled.origin, 0);
  EXPECT_EQ(model->origin(scaled.origin), "A, C");
  EXPECT_DOUBLE_EQ(scaled.value, 0.6);

  // Notes of another form: their first clause names the origin.
  const Efficiency other = model->gemm(gemm(4096));
  EXPECT_EQ(other.source, EfficiencySource::scaled);
  EXPECT_EQ(model->origin(other.origin), "scaled by hand");
  // Stored fits of a predicted run are scaled too.
  const Efficiency mem = model->memory_op({"anything", 1 << 30});
  EXPECT_EQ(mem.source, EfficiencySource::scaled);
  EXPECT_EQ(mem.origin, other.origin);
  // Misses go to the fallback, unchanged.
  const Efficiency miss = model->gemm(gemm(8192));
  EXPECT_EQ(miss.source, EfficiencySource::roofline);
  EXPECT_EQ(miss.origin, 0);
  EXPECT_EQ(model->origin(99), "");
}

TEST(Origin, MoreOriginsThanIdsShareTheLastIdAndNameThemAll) {
  std::vector<db::RunBatch> runs;
  for (int i = 0; i < kOriginIdCount + 2; ++i) {
    runs.push_back(run(db::Source::predicted, "predicted from D" + std::to_string(i) + " by x", gemm(1024 * (i + 1)), 0.5));
  }
  const auto model = db::make_db_efficiency_model(device(), runs, roofline());
  const Efficiency first = model->gemm(gemm(1024));
  EXPECT_EQ(model->origin(first.origin), "D0");
  const Efficiency last = model->gemm(gemm(1024 * (kOriginIdCount + 2)));
  EXPECT_EQ(last.origin, kOriginIdCount - 1);
  const std::string shared(model->origin(last.origin));
  for (int i = kOriginIdCount - 2; i < kOriginIdCount + 2; ++i) {
    EXPECT_NE(shared.find("D" + std::to_string(i)), std::string::npos) << shared;
  }
}

TEST(Origin, SimulationCountsKernelsPerOriginAndLabelsOps) {
  const std::string dir = CALISIM_CONFIG_DIR;
  const std::string mf = dir + "/models/llama3-8b.json", sf = dir + "/strategies/llama3-8b-8gpu.json",
                    yf = dir + "/systems/h100-sxm.json";
  const ModelConfig m = parse_model(read_json_file(mf), mf, nullptr);
  StrategyConfig s = parse_strategy(read_json_file(sf), sf);
  const SystemConfig y = parse_system(read_json_file(yf), yf);
  validate_layout(m, s, sf, mf);
  // Every GEMM comes from a predicted run of "A100": a model whose gemm answers are all scaled.
  class AllScaled final : public EfficiencyModel {
   public:
    explicit AllScaled(const SystemConfig& sys) : roof_(sys) {}
    Efficiency gemm(const GemmKey&) const override { return {0.6, EfficiencySource::scaled, 3}; }
    Efficiency attention(const AttentionKey& k) const override { return roof_.attention(k); }
    Efficiency memory_op(const MemoryOpKey& k) const override { return roof_.memory_op(k); }
    Efficiency collective(const CollectiveKey& k) const override { return roof_.collective(k); }
    std::string_view origin(std::uint32_t id) const override { return id == 3 ? "A100" : ""; }

   private:
    DefaultEfficiencyModel roof_;
  };
  const AllScaled eff(y);
  SimulateOptions opt;
  opt.details = true;
  const SimulationResult r = simulate(m, s, y, eff, opt);
  ASSERT_EQ(r.kernels_per_origin.size(), 1u);
  EXPECT_EQ(r.kernels_per_origin[0].origin, "A100");
  EXPECT_EQ(r.kernels_per_origin[0].kernels, r.kernels_per_source[static_cast<int>(EfficiencySource::scaled)]);
  bool gemm_op = false;
  for (const auto& op : r.ops) {
    if (op.kind == "gemm") {
      gemm_op = true;
      EXPECT_EQ(op.source, "scaled");
      EXPECT_EQ(op.origin, "A100");
    } else {
      EXPECT_EQ(op.origin, "");
    }
  }
  EXPECT_TRUE(gemm_op);
  // Without scaled answers nothing is counted per origin.
  const SimulationResult plain = simulate(m, s, y, DefaultEfficiencyModel(y), opt);
  EXPECT_TRUE(plain.kernels_per_origin.empty());
}

}  // namespace
}  // namespace calisim
