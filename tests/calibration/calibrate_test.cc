// calibration/calibrate.h and calibrated_system.h on small databases built here: the SimuMax
// A100-PCIe table (imported) and a hand-made device whose GEMMs run well below the datasheet.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "calibration/calibrate.h"
#include "calibration/calibrated_system.h"
#include "core/error.h"
#include "core/tile_quantization.h"
#include "db/db_efficiency_model.h"
#include "db/efficiency_db.h"
#include "db/simumax_import.h"
#include "simulator/comm_model.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/kernel_plan.h"
#include "simulator/simulate.h"

namespace calisim::calibration {
namespace {

namespace fs = std::filesystem;

std::string config(const std::string& kind, const std::string& name) {
  return std::string(CALISIM_CONFIG_DIR) + "/" + kind + "/" + name + ".json";
}

struct Configs {
  ModelConfig model;
  StrategyConfig strategy;
  SystemConfig system;
  std::string system_file;
};

Configs load(const std::string& model, const std::string& strategy, const std::string& system) {
  Configs c;
  const std::string mf = config("models", model), sf = config("strategies", strategy);
  c.system_file = config("systems", system);
  c.model = parse_model(read_json_file(mf), mf, nullptr);
  c.strategy = parse_strategy(read_json_file(sf), sf);
  c.system = parse_system(read_json_file(c.system_file), c.system_file);
  validate_layout(c.model, c.strategy, sf, mf);
  return c;
}

nlohmann::ordered_json ordered_file(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::ordered_json::parse(in);
}

class Calibrate : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("calibrate_test_" + std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()) + "_" +
            std::to_string(::getpid()));  // other build trees run the same tests at the same time
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  // The SimuMax A100-PCIe table under the a100-pcie-80g system's device name.
  std::string simumax_db() const {
    const std::string p = path("simumax.db");
    auto db = db::EfficiencyDb::open(p, db::OpenMode::create);
    db::import_simumax_system(db, std::string(CALISIM_TEST_DATA_DIR) + "/simumax/system/a100_pcie.json",
                              "NVIDIA A100 PCIe 80GB");
    return p;
  }

  // A device with the a100-pcie-80g specs whose GEMMs reach 45 % of peak, a stored memory fit
  // at half the HBM bandwidth, and 8-GPU all-reduce rows of exactly 20 us + wire bytes / 10 GB/s.
  // A database holding `sys`'s device, and a measured run on it to fill with rows.
  static db::RunBatch measured_run_on(db::EfficiencyDb& db, const SystemConfig& sys, const std::string& notes) {
    const db::DeviceRecord d = db::DeviceRecord::from_spec(sys.device);
    db.add_device_if_missing(d);
    db::RunBatch b;
    b.run.device = d.name;
    b.run.source = db::Source::measured;
    b.run.started_at = "2026-01-01T00:00:00Z";
    b.run.notes = notes;
    return b;
  }

  std::string slow_db(const SystemConfig& sys) const {
    const std::string p = path("slow.db");
    auto db = db::EfficiencyDb::open(p, db::OpenMode::create);
    db::RunBatch b = measured_run_on(db, sys, "hand-made test rows");
    const double peak = sys.device.peak_tflops[static_cast<int>(DType::bf16)];
    for (std::int64_t m : {2048, 4096, 8192, 16384}) {
      for (std::int64_t n : {4096, 14336}) {
        const GemmKey k{m, n, 5120, 1, DType::bf16, GemmLayout::TN, false};  // no planned shape
        b.rows.gemm.push_back(db::row_from_tflops<db::GemmRow>(k, 0.45 * peak, peak));
      }
    }
    b.rows.memory_fits.push_back({"default", sys.device.hbm_gb_s, 0.5, 5.0});
    for (std::int64_t bytes = std::int64_t{1} << 20; bytes <= (std::int64_t{1} << 30); bytes *= 4) {
      db::CollectiveRow r;
      r.key = {CollectiveOp::all_reduce, bytes, 8, 8, DType::bf16};
      const double wire = static_cast<double>(bytes) * db::bus_factor(r.key.op, 8);
      const double t = 20e-6 + wire / 10e9;
      r.stats = {t, t, t, 0, 10};
      r.algbw_gb_s = static_cast<double>(bytes) / t / 1e9;
      r.busbw_gb_s = wire / t / 1e9;
      r.link_gb_s = sys.scale_up.gpu_gb_s;
      r.efficiency = r.busbw_gb_s / r.link_gb_s;
      b.rows.collective.push_back(r);
    }
    db.insert_run(b);
    return p;
  }

  fs::path dir_;
};

const FittedValue& field(const Calibration& c, const std::string& name) {
  for (const auto& v : c.defaults) {
    if (v.field == name) return v;
  }
  throw std::runtime_error("no default " + name);
}

TEST_F(Calibrate, SimumaxTableMissingKeysFitQualityAndDefaults) {
  const Configs cfg = load("llama3-8b", "tp2_pp2_dp2_mbs1", "a100-pcie-80g");
  const KernelPlan plan = plan_kernels(cfg.model, cfg.strategy, cfg.system);
  const DeviceRows rows = load_device_rows(simumax_db(), cfg.system.device.name);
  ASSERT_EQ(rows.runs.size(), 1u);
  EXPECT_EQ(rows.row_count(), rows.runs.front().rows.size());
  EXPECT_GE(rows.row_count(), 195u + 24u);  // every GEMM and attention row, plus the fits

  // The SimuMax table holds GEMM and attention rows but only fits for memory ops and collectives:
  // every planned memory and collective key lacks an exact row.
  const profiler::ProfilePlan missing = missing_kernels(plan, rows);
  const auto summary = summarize_missing(missing, 2);
  ASSERT_EQ(summary.size(), 4u);
  EXPECT_EQ(summary[2].family, "memory");
  EXPECT_EQ(summary[2].count, plan.memory.size());
  EXPECT_EQ(summary[3].count, plan.collective.size());
  EXPECT_LE(summary[0].first_keys.size(), 2u);
  std::size_t total = 0;
  for (const auto& f : summary) total += f.count;
  EXPECT_EQ(total, missing.kernels.size());
  EXPECT_LE(summary[0].count, plan.gemm.size());

  const Calibration c = calibrate(plan, cfg.system, rows);
  EXPECT_EQ(c.device, "NVIDIA A100 PCIe 80GB");
  bool gemm_loo = false;
  for (const auto& f : c.fit_quality) {
    if (f.family == "gemm bf16") {
      gemm_loo = true;
      EXPECT_EQ(f.n, 195u);
      EXPECT_GT(f.loo_mape_pct, 0.0);
      EXPECT_LT(f.loo_mape_pct, 10.0);
    }
  }
  EXPECT_TRUE(gemm_loo);

  // memory_bound: byte-weighted over the planned kernels, of the stored "default" fit (0.91 of
  // 1717.99 GB/s) and, for the cross-entropy's ce_fwd / ce_bwd, the table's "ce" fit (0.808), over
  // this system's 1935 GB/s: between the two.
  const FittedValue& mem = field(c, "efficiency.memory_bound");
  ASSERT_TRUE(mem.fitted);
  EXPECT_LT(*mem.fitted, 0.91 * 1717.9869184 / 1935.0 - 1e-4);
  EXPECT_GT(*mem.fitted, 0.808 * 1717.9869184 / 1935.0);
  EXPECT_NE(mem.basis.find("ce_fwd (stored fit)"), std::string::npos) << mem.basis;
  EXPECT_DOUBLE_EQ(mem.datasheet, 0.88);
  // all_reduce in the domain: the 8-rank fit (0.4176 of 32.21 GB/s) against the 32 GB/s link.
  const FittedValue& ar = field(c, "network.scale_up.efficiency.all_reduce");
  ASSERT_TRUE(ar.fitted);
  EXPECT_NEAR(*ar.fitted, 0.4176 * 32.21225472 / 32.0, 1e-4);
  // Per-step latency: alpha / ring steps (all_reduce over 8: 14 steps; 8.98 us).
  const FittedValue& lat = field(c, "network.scale_up.latency_us");
  ASSERT_TRUE(lat.fitted);
  EXPECT_GT(*lat.fitted, 0.0);
  EXPECT_LT(*lat.fitted, 10.0);
  const FittedValue& mm = field(c, "efficiency.matmul");
  ASSERT_TRUE(mm.fitted);
  EXPECT_GT(*mm.fitted, 0.5);
  EXPECT_LT(*mm.fitted, 0.8);

  // Coverage: memory ops come from the stored fits (interpolated), collectives from the fits the
  // table has (not every op has one); every row adds up.
  ASSERT_EQ(c.coverage.size(), 5u);
  EXPECT_EQ(c.coverage[2].interpolated, plan.memory.size());
  EXPECT_EQ(c.coverage[3].measured, 0u);
  EXPECT_GT(c.coverage[3].interpolated, 0u);
  EXPECT_EQ(c.coverage[3].interpolated + c.coverage[3].roofline, plan.collective.size());
  const CoverageRow& t = c.coverage.back();
  EXPECT_EQ(t.planned, plan.size());
  EXPECT_EQ(t.measured + t.interpolated + t.scaled + t.roofline, t.planned);
  EXPECT_EQ(t.measured, plan.size() - missing.kernels.size());
}

TEST_F(Calibrate, SlowDeviceGivesASlowerCalibratedSimulationThatLoadsFromTheWrittenFile) {
  const Configs cfg = load("llama3-8b", "tp2_pp2_dp2_mbs1", "a100-pcie-80g");
  const std::string db_path = slow_db(cfg.system);
  const KernelPlan plan = plan_kernels(cfg.model, cfg.strategy, cfg.system);
  const DeviceRows rows = load_device_rows(db_path, cfg.system.device.name);
  const Calibration c = calibrate(plan, cfg.system, rows);

  // No planned GEMM is among the 8 rows: the predictor's fit of them answers, near 0.45.
  const FittedValue& mm = field(c, "efficiency.matmul");
  ASSERT_TRUE(mm.fitted);
  EXPECT_NEAR(*mm.fitted, 0.45, 0.08);
  EXPECT_NE(mm.basis.find("from the predictor's fit"), std::string::npos) << mm.basis;
  EXPECT_EQ(c.coverage[0].roofline, plan.gemm.size());
  EXPECT_EQ(c.coverage[0].roofline_predictor_covers, plan.gemm.size());
  // No attention rows: the datasheet value stays, and says why.
  const FittedValue& at = field(c, "efficiency.attention");
  EXPECT_FALSE(at.fitted);
  EXPECT_FALSE(at.basis.empty());
  const FittedValue& mem = field(c, "efficiency.memory_bound");
  ASSERT_TRUE(mem.fitted);
  EXPECT_NEAR(*mem.fitted, 0.5, 1e-9);
  // The all-reduce rows are exactly 20 us + wire / 10 GB/s: the alpha-beta fit gives them back.
  const FittedValue& ar = field(c, "network.scale_up.efficiency.all_reduce");
  ASSERT_TRUE(ar.fitted);
  EXPECT_NEAR(*ar.fitted, 10.0 / cfg.system.scale_up.gpu_gb_s, 1e-6);
  const FittedValue& lat = field(c, "network.scale_up.latency_us");
  ASSERT_TRUE(lat.fitted);
  EXPECT_NEAR(*lat.fitted, 20.0 / ring_steps(CollectiveOp::all_reduce, 8), 1e-6);
  EXPECT_FALSE(field(c, "network.scale_up.efficiency.all_gather").fitted);

  // The written file: only fitted fields, name, source and efficiency_db change.
  const std::string out = path("out/a100-calibrated.json");
  fs::create_directories(dir_ / "out");
  const nlohmann::ordered_json base = ordered_file(cfg.system_file);
  const nlohmann::ordered_json doc =
      calibrated_system(base, c, {cfg.system_file, db_path, out, "2026-01-02T03:04:05Z"});
  write_system_file(doc, out);
  EXPECT_EQ(doc["efficiency_db"], "../slow.db");
  EXPECT_EQ(doc["name"], "a100-pcie-80g-calibrated");
  EXPECT_EQ(doc["description"], base["description"]);
  EXPECT_EQ(doc["host"], base["host"]);
  EXPECT_EQ(doc["device"], base["device"]);
  EXPECT_EQ(doc["efficiency"]["attention"], base["efficiency"]["attention"]);
  EXPECT_EQ(doc["efficiency"]["kernel_launch_us"], base["efficiency"]["kernel_launch_us"]);
  EXPECT_EQ(doc["network"]["scale_up"]["efficiency"]["all_gather"], base["network"]["scale_up"]["efficiency"]["all_gather"]);
  EXPECT_EQ(doc["network"]["scale_out"], base["network"]["scale_out"]);
  EXPECT_DOUBLE_EQ(doc["efficiency"]["matmul"].get<double>(), *mm.fitted);
  std::vector<std::string> keys, base_keys;
  for (const auto& [k, v] : doc.items()) keys.push_back(k);
  for (const auto& [k, v] : base.items()) base_keys.push_back(k);
  base_keys.push_back("efficiency_db");  // the one field added (the base has none)
  EXPECT_EQ(keys, base_keys);  // order kept
  const std::string source = doc["source"];
  for (const char* part : {"2026-01-02T03:04:05Z", "slow.db", "NVIDIA A100 PCIe 80GB", "15 rows used",
                           "efficiency.matmul 0.73 ->"}) {
    EXPECT_NE(source.find(part), std::string::npos) << part << " in " << source;
  }

  // It loads, and simulates slower than the datasheet system (GEMMs at ~0.45 instead of 0.73).
  const SystemConfig calibrated = parse_system(read_json_file(out), out);
  EXPECT_EQ(calibrated.efficiency_db, "../slow.db");
  const std::string resolved = (fs::path(out).parent_path() / calibrated.efficiency_db).string();
  auto roofline = std::make_shared<const DefaultEfficiencyModel>(calibrated);
  const auto model = load_db_efficiency_model(resolved, calibrated.device.name, roofline);
  const SimulationResult after = simulate(cfg.model, cfg.strategy, calibrated, *model);
  const SimulationResult before = simulate(cfg.model, cfg.strategy, cfg.system, DefaultEfficiencyModel(cfg.system));
  EXPECT_GT(after.duration_time_per_iter_s, 1.3 * before.duration_time_per_iter_s);
  EXPECT_GT(after.kernels_per_source[static_cast<int>(EfficiencySource::measured)] +
                after.kernels_per_source[static_cast<int>(EfficiencySource::interpolated)],
            0);
}

// Every planned GEMM measured at 0.6 x its tile/wave utilization: the fitted efficiency.matmul is
// 0.6, not the lower time-weighted mean of the rows, because the roofline default multiplies the
// figure by that utilization again (the loss would otherwise be counted twice), and the calibrated
// default then prices each planned GEMM exactly as its row does.
TEST_F(Calibrate, MatmulFigureDividesOutTheDefaultModelsTileAndWaveUtilization) {
  const Configs cfg = load("llama3-8b", "tp2_pp2_dp2_mbs1", "a100-pcie-80g");
  const KernelPlan plan = plan_kernels(cfg.model, cfg.strategy, cfg.system);
  const std::string p = path("quantized.db");
  {
    auto db = db::EfficiencyDb::open(p, db::OpenMode::create);
    db::RunBatch b = measured_run_on(db, cfg.system, "hand-made test rows: 0.6 x tile/wave utilization");
    for (const GemmKey& k : plan.gemm) {
      const double peak = cfg.system.device.peak_tflops[static_cast<int>(k.dtype)];
      const double q = gemm_quantization(k.m, k.n, k.batch, cfg.system.device.sm_count);
      b.rows.gemm.push_back(db::row_from_tflops<db::GemmRow>(k, 0.6 * q * peak, peak));
    }
    db.insert_run(b);
  }
  const Calibration c = calibrate(plan, cfg.system, load_device_rows(p, cfg.system.device.name));
  const FittedValue& mm = field(c, "efficiency.matmul");
  ASSERT_TRUE(mm.fitted);
  EXPECT_NEAR(*mm.fitted, 0.6, 1e-9) << mm.basis;
  bool some_gemm_loses = false;
  SystemConfig calibrated = cfg.system;
  calibrated.matmul_efficiency = *mm.fitted;
  const DefaultEfficiencyModel roofline(calibrated);
  for (const GemmKey& k : plan.gemm) {
    const double q = gemm_quantization(k.m, k.n, k.batch, cfg.system.device.sm_count);
    some_gemm_loses = some_gemm_loses || q < 0.99;
    EXPECT_NEAR(roofline.gemm(k).value, 0.6 * q, 1e-9) << to_string(k);
  }
  EXPECT_TRUE(some_gemm_loses) << "the plan must hold a GEMM with a wave loss for this test to mean anything";
}

TEST_F(Calibrate, DatabaseWithoutTheDeviceIsAnInputErrorListingWhatItHolds) {
  const std::string db_path = simumax_db();
  try {
    load_device_rows(db_path, "NVIDIA H100 SXM5 80GB");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(db_path), std::string::npos) << what;
    EXPECT_NE(what.find("NVIDIA A100 PCIe 80GB"), std::string::npos) << what;
  }
  EXPECT_THROW(load_device_rows(path("no_such.db"), "x"), InputError);
}

TEST_F(Calibrate, DbReferenceIsRelativeToTheOutputDirectory) {
  EXPECT_EQ(db_reference("/a/b/x.db", "/a/b/sys.json"), "x.db");
  EXPECT_EQ(db_reference("/a/x.db", "/a/b/c/sys.json"), "../../x.db");
  EXPECT_EQ(db_reference("/a/b/x.db", "/a/sys.json"), "b/x.db");
}

}  // namespace
}  // namespace calisim::calibration
