#include "cli/efficiency_source.h"

#include <filesystem>

#include "predictor/served_model.h"
#include "simulator/comm_model.h"
#include "simulator/default_efficiency.h"

namespace calisim::cli {

EfficiencyChoice make_efficiency_source(const SystemConfig& system, const std::string& system_file,
                                        const std::string& db_flag) {
  EfficiencyChoice out;
  auto roofline = std::make_shared<const DefaultEfficiencyModel>(system);
  out.model = roofline;
  out.database = db_flag;
  if (out.database.empty() && !system.efficiency_db.empty()) {
    std::filesystem::path p(system.efficiency_db);
    if (p.is_relative()) p = std::filesystem::path(system_file).parent_path() / p;
    out.database = p.string();
  }
  // Resolution order (ARCHITECTURE.md; predictor/served_model.h): this device's rows, the
  // predictor's fits of them where they have data (`interpolated`; `scaled` over predicted rows),
  // then roofline. Collective rows and fits answer against this system's links
  // (db_efficiency_model.h CollectiveLinkFn); the system's SM count fills a record without one.
  if (!out.database.empty()) {
    out.model = predictor::load_served_model(
        out.database, system.device.name, roofline,
        [system](const CollectiveKey& k) { return link_for(k, system).gb_s; }, system.device.sm_count);
  }
  return out;
}

}  // namespace calisim::cli
