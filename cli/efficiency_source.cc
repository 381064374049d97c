#include "cli/efficiency_source.h"

#include <fmt/format.h>

#include <filesystem>
#include <system_error>

#include "core/error.h"

#include "predictor/served_model.h"
#include "simulator/comm_model.h"
#include "simulator/default_efficiency.h"

namespace calisim::cli {
namespace {

// A database's attention rows are the framework-default fused kernel (what `calisim profile`
// measures: cuDNN's SDPA, TransformerEngine's fused attention; imported tables likewise) and are
// keyed by shape, not by kernel. A system that selects another implementation
// (efficiency.attention_implementation, e.g. FlashAttention-2) would otherwise be priced with the
// default kernel's speed: its attention comes from that implementation's roofline defaults, and
// everything else from the database.
class AttentionFromImplementation final : public EfficiencyModel {
 public:
  AttentionFromImplementation(std::shared_ptr<const EfficiencyModel> db, std::shared_ptr<const EfficiencyModel> roofline)
      : db_(std::move(db)), roofline_(std::move(roofline)) {}
  Efficiency gemm(const GemmKey& key) const override { return db_->gemm(key); }
  Efficiency attention(const AttentionKey& key) const override { return roofline_->attention(key); }
  Efficiency memory_op(const MemoryOpKey& key) const override { return db_->memory_op(key); }
  Efficiency collective(const CollectiveKey& key) const override { return db_->collective(key); }
  std::string_view origin(std::uint32_t id) const override { return db_->origin(id); }

 private:
  std::shared_ptr<const EfficiencyModel> db_, roofline_;
};

}  // namespace

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
    std::error_code ec;
    if (!std::filesystem::is_regular_file(p, ec)) {
      throw InputError(system_file, "efficiency_db",
                       fmt::format("the database '{}' does not exist{} (a relative path is taken from the system "
                                   "file's folder)",
                                   system.efficiency_db, p.string() == system.efficiency_db ? "" : " as " + p.string()));
    }
  }
  // Resolution order (ARCHITECTURE.md; predictor/served_model.h): this device's rows, the
  // predictor's fits of them where they have data (`interpolated`; `scaled` over predicted rows),
  // then roofline. Collective rows and fits answer against this system's links
  // (db_efficiency_model.h CollectiveLinkFn); the system's SM count fills a record without one.
  if (!out.database.empty()) {
    out.model = predictor::load_served_model(
        out.database, system.device.name, roofline,
        [system](const CollectiveKey& k) { return link_for(k, system).gb_s; }, system.device, &out.notes);
    if (system.attention_implementation != "default") {
      out.model = std::make_shared<const AttentionFromImplementation>(out.model, roofline);
      out.notes.push_back("attention priced from the system's '" + system.attention_implementation +
                          "' defaults, not from database " + out.database +
                          " (its attention rows are the default fused kernel; efficiency.attention_implementation "
                          "selects another)");
    }
  }
  return out;
}

}  // namespace calisim::cli
