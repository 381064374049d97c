#include "python/db_binding.h"

#include "db/db_efficiency_model.h"
#include "db/efficiency_db.h"
#include "db/key_text.h"
#include "db/nearest.h"
#include "db/row_text.h"
#include "predictor/interpolating_model.h"

namespace calisim::python {
namespace {

using nlohmann::json;
using nlohmann::ordered_json;

void add_rows(json& out, const db::RunRecord& run, const db::MeasurementSet& row, const double* distance) {
  db::for_each_row_text(row, [&](const std::string&, const ordered_json& numbers) {
    json j = numbers;
    if (distance) j["distance"] = *distance;
    j["run"] = run.id;
    j["source"] = std::string(db::to_string(run.source));
    j["host"] = run.host;
    out.push_back(j);
  });
}

}  // namespace

std::vector<std::string> database_devices(const std::string& db_path) { return list_db_devices(db_path); }

json query_database(const std::string& db_path, const std::string& device, const std::string& key, int nearest) {
  auto file = db::EfficiencyDb::open(db_path, db::OpenMode::read_only);
  const std::string name = file.device(device).name;
  json out = json::array();
  if (nearest > 0) {
    for (const auto& n : db::nearest(file.load_runs(name), key, static_cast<std::size_t>(nearest))) {
      add_rows(out, n.run, n.row, &n.distance);
    }
    return out;
  }
  for (const auto& h : file.lookup(name, key)) add_rows(out, h.run, h.row, nullptr);
  return out;
}

json predict_efficiency(const std::string& db_path, const std::string& device, const std::string& key) {
  const auto model = predictor::load_interpolating_model(db_path, device, predictor::no_data_model());
  Efficiency e;
  switch (db::key_kind(key)) {
    case db::KeyKind::gemm: e = model->gemm(db::parse_gemm_key(key)); break;
    case db::KeyKind::attention: e = model->attention(db::parse_attention_key(key)); break;
    case db::KeyKind::collective: e = model->collective(db::parse_collective_key(key)); break;
    case db::KeyKind::memory: e = model->memory_op(db::parse_memory_key(key)); break;
    default: throw std::invalid_argument("predict: '" + key + "' is a fit key; give a gemm, attn, coll or mem key");
  }
  return {{"key", db::canonical_key(key)}, {"efficiency", e.value}, {"source", std::string(to_string(e.source))}};
}

}  // namespace calisim::python
