#include "calibration/efficiency_scale.h"

#include <algorithm>
#include <cmath>

namespace calisim::calibration {
namespace {

template <class Json>
Json scale_document(Json doc, const EfficiencyScale& f, std::vector<std::string>* capped) {
  // Scales parent[key] (a number) by k into its written form, naming it when the cap cuts it.
  auto scale = [capped](Json& parent, const std::string& key, double k, const std::string& path) {
    if (!parent.is_object() || !parent.contains(key) || !parent[key].is_number()) return;
    const double v = parent[key].template get<double>() * k;
    if (v >= 1 && capped) capped->push_back(path);
    parent[key] = std::round(std::min(1.0, v) * 1e4) / 1e4;
  };
  if (doc.contains("efficiency") && doc["efficiency"].is_object()) {
    Json& e = doc["efficiency"];
    const double matmul_read = e.contains("matmul") && e["matmul"].is_number() ? e["matmul"].template get<double>() : 0;
    bool fp8_entries = false;
    if (e.contains("matmul_by_dtype") && e["matmul_by_dtype"].is_object()) {
      Json& by = e["matmul_by_dtype"];
      for (auto& [key, v] : by.items()) {
        const bool fp8 = key.rfind("fp8", 0) == 0;
        fp8_entries = fp8_entries || (fp8 && v.is_number());
        scale(by, key, fp8 ? f.matmul * f.fp8 : f.matmul, "efficiency.matmul_by_dtype." + key);
      }
    }
    const bool has_fp8_peak = doc.contains("device") && doc["device"].is_object() &&
                              doc["device"].contains("peak_tflops") && doc["device"]["peak_tflops"].is_object() &&
                              doc["device"]["peak_tflops"].contains("fp8");
    if (f.fp8 != 1.0 && !fp8_entries && has_fp8_peak && matmul_read > 0) {
      e["matmul_by_dtype"]["fp8"] = matmul_read;
      scale(e["matmul_by_dtype"], "fp8", f.matmul * f.fp8, "efficiency.matmul_by_dtype.fp8");
    }
    scale(e, "matmul", f.matmul, "efficiency.matmul");
    scale(e, "attention", f.attention, "efficiency.attention");
    if (e.contains("attention_implementations") && e["attention_implementations"].is_object()) {
      for (auto& [name, impl] : e["attention_implementations"].items()) {
        scale(impl, "attention", f.attention, "efficiency.attention_implementations." + name + ".attention");
      }
    }
    scale(e, "memory_bound", f.memory, "efficiency.memory_bound");
  }
  if (doc.contains("network") && doc["network"].is_object()) {
    for (const char* tier : {"scale_up", "scale_out"}) {
      Json& n = doc["network"];
      if (!n.contains(tier) || !n[tier].is_object() || !n[tier].contains("efficiency") ||
          !n[tier]["efficiency"].is_object()) {
        continue;
      }
      Json& eff = n[tier]["efficiency"];
      for (auto& [key, v] : eff.items()) {
        (void)v;
        scale(eff, key, f.comm, std::string("network.") + tier + ".efficiency." + key);
      }
    }
  }
  return doc;
}

}  // namespace

nlohmann::json scale_efficiencies(nlohmann::json doc, const EfficiencyScale& s, std::vector<std::string>* capped) {
  return scale_document(std::move(doc), s, capped);
}
nlohmann::ordered_json scale_efficiencies(nlohmann::ordered_json doc, const EfficiencyScale& s,
                                          std::vector<std::string>* capped) {
  return scale_document(std::move(doc), s, capped);
}

}  // namespace calisim::calibration
