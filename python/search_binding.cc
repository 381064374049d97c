#include "python/search_binding.h"

#include <filesystem>

#include "cli/accuracy_report.h"
#include "cli/efficiency_source.h"
#include "cli/search_csv.h"
#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/search.h"

namespace calisim::python {
namespace {

using nlohmann::json;

template <typename T>
std::vector<T> list_of(const json& space, const char* key) {
  std::vector<T> out;
  if (!space.contains(key) || space[key].is_null()) return out;
  try {
    for (const auto& v : space[key]) out.push_back(v.get<T>());
  } catch (const json::exception&) {
    throw InputError("<search>", key, "expected a list of integers, got " + space[key].dump());
  }
  return out;
}

SearchSpace make_space(const json& j, const ModelConfig& model, const SystemConfig& system) {
  SearchSpace space;
  space.world_size = j.at("world_size").get<int>();
  space.global_batch_size = j.at("global_batch_size").get<std::int64_t>();
  space.tp = list_of<int>(j, "tp");
  space.pp = list_of<int>(j, "pp");
  space.vpp = list_of<int>(j, "vpp");
  space.cp = list_of<int>(j, "cp");
  space.ep = list_of<int>(j, "ep");
  space.etp = list_of<int>(j, "etp");
  auto names = [&](const char* key) {
    if (!j.contains(key) || j[key].is_null()) return std::vector<std::string>{};
    try {
      return j[key].get<std::vector<std::string>>();
    } catch (const json::exception&) {
      throw InputError("<search>", key, "expected a list of names, got " + j[key].dump());
    }
  };
  space.cp_comm = parse_named_list(names("cp_comm_type"), parse_cp_comm_type, "p2p, a2a or allgather", "<search>",
                                   "cp_comm_type");
  space.dispatchers = parse_named_list(names("moe_dispatcher"), parse_moe_dispatcher, "alltoall, allgather or flex",
                                       "<search>", "moe_dispatcher");
  for (int e : space.etp) {
    if (e < 1) throw InputError("<search>", "etp", "expert TP sizes must be >= 1, got " + std::to_string(e));
  }
  space.zero = list_of<int>(j, "zero");
  space.mbs = list_of<std::int64_t>(j, "mbs");
  if (j.contains("recompute") && !j["recompute"].is_null()) {
    for (const auto& r : j["recompute"]) {
      try {
        space.recompute.push_back(parse_recompute_choice(r.get<std::string>()));
      } catch (const std::exception& e) {
        throw InputError("<search>", "recompute_search_type", e.what());
      }
    }
  }
  for (int z : space.zero) {
    if (z < 0 || z > kMaxModeledZeroStage) {
      throw InputError("<search>", "zero", "ZeRO stage " + std::to_string(z) + " is not modeled (expected 0.." +
                                               std::to_string(kMaxModeledZeroStage) + ")");
    }
  }
  fill_default_lists(space, model, system.scale_up_domain_size);
  return space;
}

}  // namespace

json run_search_request(const SearchRequest& q) {
  json model_doc = q.model.doc, base_doc = q.base_strategy.doc, system_doc = q.system.doc;
  if (base_doc.is_null()) base_doc = json::object();
  base_doc["world_size"] = q.space.at("world_size");
  base_doc["global_batch_size"] = q.space.at("global_batch_size");
  base_doc.erase("micro_batch_num");
  if (q.space.value("seq_len", 0LL) > 0) base_doc["seq_len"] = q.space["seq_len"];
  if (!base_doc.contains("seq_len")) {
    throw InputError("<search>", "seq_len", "required when the base strategy does not give seq_len");
  }
  for (const auto& o : q.overrides) apply_override(o, model_doc, base_doc, system_doc);
  ModelConfig model = parse_model(model_doc, q.model.file, nullptr);
  if (model.model_name.empty()) model.model_name = std::filesystem::path(q.model.file).stem().string();
  const StrategyConfig base = parse_strategy(base_doc, q.base_strategy.file);
  const SystemConfig system = parse_system(system_doc, q.system.file);
  const cli::EfficiencyChoice eff = cli::make_efficiency_source(system, q.system.file, q.db);
  const SearchSpace space = make_space(q.space, model, system);

  SearchOptions opt;
  const json& o = q.options;
  opt.objective = o.value("objective", std::string("mfu")) == "tokens" ? SearchObjective::tokens : SearchObjective::mfu;
  opt.top_k = o.value("top_k", 10);
  opt.threads = o.value("threads", 0);
  opt.memory_margin_gb = o.value("memory_margin_gb", 0.0);
  opt.use_reserved_memory = o.value("use_reserved_memory", true);
  opt.keep_all = o.value("keep_all", false) || !q.csv_path.empty();
  const SearchResult res = run_search(model, base, system, *eff.model, space, opt);
  if (!q.csv_path.empty()) cli::write_search_csv(q.csv_path, res.feasible);
  if (!q.out_path.empty()) cli::write_search_csv(q.out_path, res.top);

  json j;
  j["model"] = model.model_name;
  j["system"] = system.name;
  j["world_size"] = space.world_size;
  j["global_batch_size"] = space.global_batch_size;
  j["seq_len"] = base.seq_len;
  j["efficiency_db"] = eff.database.empty() ? json(nullptr) : json(eff.database);
  j["counts"] = {{"candidates", res.space_size}, {"illegal", res.illegal},     {"over_memory", res.too_big},
                 {"equivalent_placement", res.equivalent},
                 {"feasible", res.feasible_count}, {"simulated", res.simulated}, {"pruned_by_bound", res.pruned}};
  j["elapsed_s"] = res.elapsed_s;
  j["candidates_per_s"] = res.elapsed_s > 0 ? res.space_size / res.elapsed_s : 0.0;
  j["top"] = json::array();
  for (const auto& r : res.top) j["top"].push_back(cli::search_candidate_json(r));
  j["feasible"] = json::array();
  for (const auto& r : res.feasible) j["feasible"].push_back(cli::search_candidate_json(r));
  j["explanation"] = res.explanation.empty() ? json(nullptr) : json(res.explanation);
  j["smallest"] = res.have_smallest ? cli::search_candidate_json(res.smallest) : json(nullptr);
  // accuracy (options.accuracy / options.accuracy_runs): the envelope of `search --accuracy` for the
  // best layout.
  const std::vector<std::string> runs = o.value("accuracy_runs", std::vector<std::string>{});
  if ((o.value("accuracy", false) || !runs.empty()) && !res.top.empty()) {
    j["accuracy"] =
        cli::accuracy_json(cli::accuracy_report(runs, q.db, model, base, system, res.top.front().step_time_s));
  }
  return j;
}

}  // namespace calisim::python
