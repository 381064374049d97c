#include "python/search_binding.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>

#include "cli/accuracy_report.h"
#include "cli/efficiency_source.h"
#include "cli/search_csv.h"
#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/search.h"

namespace calisim::python {
namespace {

using nlohmann::json;

// The name the caller used for a request field: calisim.search's keyword by default, another
// API's own (PerfLLM's tp_search_list, micro_batch_size, ...) when the request maps it, so a
// message names the argument the user wrote.
struct ArgNames {
  const json* names = nullptr;
  std::string operator()(const char* key) const {
    if (names && names->is_object() && names->contains(key) && (*names)[key].is_string()) {
      return (*names)[key].get<std::string>();
    }
    return key;
  }
};

// A whole number in [lo, hi] (bools and fractions are refused, not converted).
std::int64_t whole_number(const json& v, const std::string& arg, std::int64_t lo, std::int64_t hi,
                          const std::string& expected) {
  const bool too_big = v.is_number_unsigned() && v.get<std::uint64_t>() > static_cast<std::uint64_t>(hi);
  if (!v.is_number_integer() || too_big || v.get<std::int64_t>() < lo || v.get<std::int64_t>() > hi) {
    throw InputError("<search>", arg, expected + ", got " + v.dump());
  }
  return v.get<std::int64_t>();
}

// A list of whole numbers >= lo (<= hi), in the given order without repeats (a value given twice
// is one layout, as on the command line). Absent or null: empty (calisim's defaults). An empty
// list would search nothing, and quietly searching the defaults instead would hide that.
template <typename T>
std::vector<T> list_of(const json& space, const char* key, const ArgNames& arg, std::int64_t lo = 1,
                       std::int64_t hi = std::numeric_limits<int>::max()) {
  std::vector<T> out;
  if (!space.contains(key) || space[key].is_null()) return out;
  const json& list = space[key];
  const std::string range = hi == std::numeric_limits<int>::max() || hi == std::numeric_limits<std::int64_t>::max()
                                ? fmt::format(">= {}", lo)
                                : fmt::format("from {} to {}", lo, hi);
  if (!list.is_array()) {
    throw InputError("<search>", arg(key), "expected a list of whole numbers " + range + ", got " + list.dump());
  }
  if (list.empty()) {
    throw InputError("<search>", arg(key), "an empty list searches nothing; leave it out (None) for calisim's defaults");
  }
  for (const auto& v : list) {
    const T x = static_cast<T>(
        whole_number(v, arg(key), lo, hi, fmt::format("expected whole numbers {} (in {})", range, list.dump())));
    if (std::find(out.begin(), out.end(), x) == out.end()) out.push_back(x);
  }
  return out;
}

std::vector<std::string> names_of(const json& j, const char* key, const ArgNames& arg) {
  if (!j.contains(key) || j[key].is_null()) return {};
  std::vector<std::string> out;
  try {
    out = j[key].get<std::vector<std::string>>();
  } catch (const json::exception&) {
    throw InputError("<search>", arg(key), "expected a list of names, got " + j[key].dump());
  }
  if (out.empty()) {
    throw InputError("<search>", arg(key), "an empty list searches nothing; leave it out (None) for calisim's defaults");
  }
  return out;
}

SearchSpace make_space(const json& j, const ModelConfig& model, const SystemConfig& system, const ArgNames& arg) {
  SearchSpace space;
  space.world_size = static_cast<int>(
      whole_number(j.at("world_size"), arg("world_size"), 1, std::numeric_limits<int>::max(), "expected a positive number of GPUs"));
  space.global_batch_size = whole_number(j.at("global_batch_size"), arg("global_batch_size"), 1,
                                         std::numeric_limits<std::int64_t>::max(),
                                         "expected a positive number of sequences");
  // Sizes below 1 would divide by zero in the space's arithmetic; they are refused here, as the
  // CLI's flags refuse them.
  space.tp = list_of<int>(j, "tp", arg);
  space.pp = list_of<int>(j, "pp", arg);
  space.vpp = list_of<int>(j, "vpp", arg);
  space.cp = list_of<int>(j, "cp", arg);
  space.ep = list_of<int>(j, "ep", arg);
  space.etp = list_of<int>(j, "etp", arg);
  space.dp_replicate = list_of<int>(j, "dp_replicate", arg);
  space.cp_comm = parse_named_list(names_of(j, "cp_comm_type", arg), parse_cp_comm_type, "p2p, a2a or allgather",
                                   "<search>", arg("cp_comm_type"));
  space.dispatchers = parse_named_list(names_of(j, "moe_dispatcher", arg), parse_moe_dispatcher,
                                       "alltoall, allgather or flex", "<search>", arg("moe_dispatcher"));
  space.zero = list_of<int>(j, "zero", arg, 0, kMaxModeledZeroStage);
  space.mbs = list_of<std::int64_t>(j, "mbs", arg, 1, std::numeric_limits<std::int64_t>::max());
  for (const auto& name : names_of(j, "recompute", arg)) {
    try {
      const RecomputeChoice c = parse_recompute_choice(name);
      if (std::find(space.recompute.begin(), space.recompute.end(), c) == space.recompute.end()) {
        space.recompute.push_back(c);
      }
    } catch (const std::exception& e) {
      throw InputError("<search>", arg("recompute"), e.what());
    }
  }
  fill_default_lists(space, model, system.scale_up_domain_size);
  return space;
}

}  // namespace

json run_search_request(const SearchRequest& q) {
  const ArgNames arg{q.arg_names.is_object() ? &q.arg_names : nullptr};
  json model_doc = q.model.doc, base_doc = q.base_strategy.doc, system_doc = q.system.doc;
  if (base_doc.is_null()) base_doc = json::object();
  // Checked before the base strategy sees them, so the message names the argument.
  base_doc["world_size"] = whole_number(q.space.at("world_size"), arg("world_size"), 1,
                                        std::numeric_limits<int>::max(), "expected a positive number of GPUs");
  base_doc["global_batch_size"] =
      whole_number(q.space.at("global_batch_size"), arg("global_batch_size"), 1,
                   std::numeric_limits<std::int64_t>::max(), "expected a positive number of sequences");
  base_doc.erase("micro_batch_num");
  if (q.space.contains("seq_len") && !q.space["seq_len"].is_null()) {
    base_doc["seq_len"] = whole_number(q.space["seq_len"], arg("seq_len"), 1, std::numeric_limits<std::int64_t>::max(),
                                       "expected a positive number of tokens");
  }
  if (!base_doc.contains("seq_len")) {
    throw InputError("<search>", arg("seq_len"), "required when the base strategy does not give seq_len");
  }
  // Options first: they need no config, and a bad one should not wait for the parsing.
  const json& o = q.options;
  const auto option = [&](const char* key, const json& fallback) { return o.contains(key) ? o[key] : fallback; };
  SearchOptions opt;
  const json objective = option("objective", "mfu");
  if (objective == "mfu") opt.objective = SearchObjective::mfu;
  else if (objective == "tokens") opt.objective = SearchObjective::tokens;
  else throw InputError("<search>", arg("objective"), "expected mfu or tokens, got " + objective.dump());
  opt.top_k = static_cast<int>(whole_number(option("top_k", 10), arg("top_k"), 1, std::numeric_limits<int>::max(),
                                            "expected a positive number of layouts"));
  opt.threads = static_cast<int>(whole_number(option("threads", 0), arg("threads"), 0, std::numeric_limits<int>::max(),
                                              "expected a number of threads >= 0 (0: all cores)"));
  const json margin = option("memory_margin_gb", 0.0);
  if (!margin.is_number() || !std::isfinite(margin.get<double>()) || margin.get<double>() < 0) {
    throw InputError("<search>", arg("memory_margin_gb"), "expected a finite number of GB >= 0, got " + margin.dump());
  }
  opt.memory_margin_gb = margin.get<double>();
  opt.use_reserved_memory = o.value("use_reserved_memory", true);
  opt.keep_all = o.value("keep_all", false) || !q.csv_path.empty();

  for (const auto& ov : q.overrides) apply_override(ov, model_doc, base_doc, system_doc);
  std::vector<std::string> not_modeled;
  ModelConfig model = parse_model(model_doc, q.model.file, &not_modeled);
  if (model.model_name.empty()) model.model_name = std::filesystem::path(q.model.file).stem().string();
  const StrategyConfig base = parse_strategy(base_doc, q.base_strategy.file);
  const SystemConfig system = parse_system(system_doc, q.system.file);
  if (opt.memory_margin_gb >= system.device.memory_gb) {
    throw InputError("<search>", arg("memory_margin_gb"),
                     fmt::format("a margin of {} GB leaves nothing of the {} GB of {} ({})", opt.memory_margin_gb,
                                 system.device.memory_gb, system.device.name, q.system.file));
  }
  const cli::EfficiencyChoice eff = cli::make_efficiency_source(system, q.system.file, q.db);
  const SearchSpace space = make_space(q.space, model, system, arg);
  // The words of `calisim search` (cli/search_inputs.cc), then the efficiency source's notes.
  json warnings = json::array();
  for (const auto& f : not_modeled) warnings.push_back("model field '" + f + "' is accepted but not modeled");
  for (const auto& f : base.not_modeled_fields) {
    warnings.push_back("strategy field '" + f + "' is accepted for SimuMax compatibility but not modeled");
  }
  for (const auto& n : eff.notes) warnings.push_back(n);

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
                 {"equivalent_placement", res.equivalent}, {"dominated_recompute", res.dominated},
                 {"feasible", res.feasible_count}, {"simulated", res.simulated}, {"pruned_by_bound", res.pruned}};
  j["elapsed_s"] = res.elapsed_s;
  j["candidates_per_s"] = res.elapsed_s > 0 ? res.space_size / res.elapsed_s : 0.0;
  j["top"] = json::array();
  for (const auto& r : res.top) j["top"].push_back(cli::search_candidate_json(r));
  // As `calisim search --json` (cli/search_command.cc): feasible is null unless asked for
  // (keep_all; the CLI writes it to --csv), smallest is null unless nothing fits.
  j["feasible"] = json(nullptr);
  if (o.value("keep_all", false)) {
    j["feasible"] = json::array();
    for (const auto& r : res.feasible) j["feasible"].push_back(cli::search_candidate_json(r));
  }
  j["explanation"] = res.explanation.empty() ? json(nullptr) : json(res.explanation);
  j["smallest"] = res.top.empty() && res.have_smallest ? cli::search_candidate_json(res.smallest) : json(nullptr);
  j["warnings"] = warnings;
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
