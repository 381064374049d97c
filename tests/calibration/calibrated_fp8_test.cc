// The FP8 matmul figure (efficiency.matmul_by_dtype.fp8) through calibrate's output half and the
// predictor's view of a system file.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "calibration/calibrate.h"
#include "calibration/calibrated_system.h"
#include "calibration/system_profile.h"
#include "simulator/config_loader.h"

namespace calisim::calibration {
namespace {

std::string system_file(const std::string& name) { return std::string(CALISIM_CONFIG_DIR) + "/systems/" + name + ".json"; }

nlohmann::ordered_json ordered_file(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::ordered_json::parse(in);
}

Calibration fitted_fp8(double matmul, double fp8) {
  Calibration c;
  c.device = "NVIDIA H100";
  c.rows_used = 10;
  c.defaults.push_back({"efficiency.matmul", 0.72, matmul, "test"});
  c.defaults.push_back({"efficiency.matmul_by_dtype.fp8", 0.638, fp8, "test"});
  return c;
}

TEST(CalibratedFp8, WriterSetsTheFp8FigureApartFromMatmul) {
  // h100-sxm has an fp8 entry (replaced); h100-pcie has none (created).
  for (const char* name : {"h100-sxm", "h100-pcie"}) {
    const std::string base_file = system_file(name);
    const nlohmann::ordered_json doc = calibrated_system(ordered_file(base_file), fitted_fp8(0.66, 0.55),
                                                         {base_file, "/tmp/x.db", "/tmp/out.json", "2026-11-21T00:00:00Z"});
    EXPECT_DOUBLE_EQ(doc["efficiency"]["matmul"].get<double>(), 0.66) << name;
    EXPECT_DOUBLE_EQ(doc["efficiency"]["matmul_by_dtype"]["fp8"].get<double>(), 0.55) << name;
    const SystemConfig s = parse_system(nlohmann::json::parse(doc.dump()), "out.json");
    EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::bf16), 0.66) << name;
    EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::fp8_e4m3), 0.55) << name;
    EXPECT_DOUBLE_EQ(s.matmul_efficiency_for(DType::fp8_e5m2), 0.55) << name;
    EXPECT_NE(doc["source"].get<std::string>().find("efficiency.matmul_by_dtype.fp8 0.638 -> 0.55"), std::string::npos);
  }
}

TEST(CalibratedFp8, PredictorProfileCarriesThePerDtypeFigures) {
  const SystemConfig s = parse_system(nlohmann::json::parse(std::ifstream(system_file("h100-sxm"))), "h100-sxm.json");
  const predictor::DeviceProfile p = profile_of_system(s);
  EXPECT_DOUBLE_EQ(p.matmul_efficiency_for(DType::fp8_e4m3), 0.638);
  EXPECT_DOUBLE_EQ(p.matmul_efficiency_for(DType::bf16), 0.72);
}

}  // namespace
}  // namespace calisim::calibration
