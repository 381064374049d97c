// Shared helpers for the predictor tests: device profiles with datasheet numbers and databases
// filled from the repository's test data (SimuMax A100-PCIe table, published figures).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "db/efficiency_db.h"
#include "db/published_import.h"
#include "db/simumax_import.h"
#include "db/text_dump.h"
#include "tests/db/db_test_util.h"
#include "predictor/prediction_rows.h"

namespace calisim::predictor::testing {

using db::testing::fixture;

// Datasheet profile as the shipped system files give it (configs/systems/*.json).
inline DeviceProfile profile(const std::string& name, double bf16_tflops, double hbm_gb_s, int sms, double matmul,
                             double attention, double memory) {
  DeviceProfile p;
  p.spec.name = name;
  p.spec.peak_tflops[static_cast<int>(DType::bf16)] = bf16_tflops;
  p.spec.peak_tflops[static_cast<int>(DType::fp16)] = bf16_tflops;
  p.spec.hbm_gb_s = hbm_gb_s;
  p.spec.sm_count = sms;
  p.matmul_efficiency = matmul;
  p.attention_efficiency = attention;
  p.memory_efficiency = memory;
  return p;
}
inline DeviceProfile a100_pcie() { return profile("NVIDIA A100 PCIe 80GB", 312, 1935, 108, 0.73, 0.53, 0.88); }
inline DeviceProfile a100_sxm() { return profile("NVIDIA A100 SXM4 80GB", 312, 2039, 108, 0.78, 0.57, 0.88); }
// H100 / H200 attention 0.50: fwd+bwd of the best Hopper kernel (FA3 / cuDNN forward 0.563, backward
// at 0.85 of it), as configs/systems/h100-sxm.json now states (was 0.52, forward times an FA2 factor).
inline DeviceProfile h100_sxm() { return profile("NVIDIA H100 SXM5 80GB", 989, 3350, 132, 0.72, 0.50, 0.90); }
inline DeviceProfile h200() { return profile("NVIDIA H200 SXM 141GB", 989, 4800, 132, 0.72, 0.50, 0.90); }

// A scratch directory (db tests' fixture) with databases filled from the test data.
class ScratchDb : public db::testing::ScratchDir {
 protected:
  // The SimuMax A100-PCIe table, plus the published A100 SXM / H100 SXM figures when asked.
  db::EfficiencyDb make_db(bool with_published) {
    auto db = db::EfficiencyDb::open(path("eff.db"), db::OpenMode::create);
    db::import_simumax_system(db, fixture("simumax/system/a100_pcie.json"), "NVIDIA A100 PCIe 80GB");
    if (with_published) {
      for (const auto& d : db::read_json_dump(fixture("predictor/published_devices.json")).devices) db.put_device(d);
      db.insert_runs(db::read_published_csv(fixture("predictor/published_figures.csv"), db));
    }
    return db;
  }

  // A device's rows with the given profile's spec gaps filled (SimuMax import has no SM count).
  static DeviceData data(db::EfficiencyDb& db, const std::string& name, const DeviceProfile& system) {
    DeviceData d;
    d.record = db.device(name);
    d.runs = db.load_runs(d.record.name);
    d.profile = enrich_profile(profile_from_record(d.record), system);
    return d;
  }
};

}  // namespace calisim::predictor::testing
