#include "calibration/calibrated_system.h"

#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "simulator/config_loader.h"

namespace calisim::calibration {

namespace fs = std::filesystem;

std::string db_reference(const std::string& db_path, const std::string& out_path) {
  const fs::path db = fs::absolute(db_path).lexically_normal();
  fs::path dir = fs::absolute(out_path).lexically_normal().parent_path();
  if (db.root_name() != dir.root_name()) return db.string();
  const fs::path rel = db.lexically_relative(dir);
  return rel.empty() ? db.string() : rel.string();
}

nlohmann::ordered_json calibrated_system(const nlohmann::ordered_json& base, const Calibration& c,
                                         const CalibratedSystemOptions& o) {
  if (!base.is_object()) throw InputError(o.base_file, "", "expected a JSON object (a system file)");
  nlohmann::ordered_json doc = base;
  const std::string base_name = base.contains("name") && base["name"].is_string() ? base["name"].get<std::string>()
                                                                                 : fs::path(o.base_file).stem().string();
  doc["name"] = base_name + "-calibrated";
  std::string fitted;
  for (const FittedValue& v : c.defaults) {
    if (!v.fitted) continue;
    std::string pointer = "/" + v.field;
    for (char& ch : pointer) ch = ch == '.' ? '/' : ch;
    doc[nlohmann::ordered_json::json_pointer(pointer)] = *v.fitted;
    fitted += fmt::format("{}{} {:.4g} -> {:.4g}", fitted.empty() ? "" : ", ", v.field, v.datasheet, *v.fitted);
  }
  const std::string reference = db_reference(o.db_path, o.out_path);
  doc["efficiency_db"] = reference;
  const std::string base_source =
      base.contains("source") && base["source"].is_string() ? base["source"].get<std::string>() : "";
  doc["source"] = fmt::format(
      "calisim calibrate {}: efficiency database {} (efficiency_db {}), device '{}', {} rows used (rows of "
      "predicted runs excluded); fitted {}: {}. Unfitted fields keep the base file's values. Base system {}: {}",
      o.date_utc, o.db_path, reference, c.device, c.rows_used, c.fitted_count(), fitted.empty() ? "none" : fitted,
      o.base_file, base_source.empty() ? "(no source given)" : base_source);
  // The file must load as it will be loaded; a field the loader rejects is reported now.
  parse_system(nlohmann::json::parse(doc.dump()), o.out_path);
  return doc;
}

void write_system_file(const nlohmann::ordered_json& doc, const std::string& path) {
  std::ofstream out(path, std::ios::binary);
  if (!out) throw InputError(path, "--out", "cannot write the calibrated system file");
  out << doc.dump(2) << "\n";
  if (!out) throw InputError(path, "--out", "write failed");
}

}  // namespace calisim::calibration
