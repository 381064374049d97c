// `calisim search`: the best parallel layouts for a model on N GPUs, and `calisim search merge`.
#include <fmt/format.h>

#include <memory>
#include <optional>
#include <thread>

#include "cli/accuracy_report.h"
#include "cli/commands.h"
#include "cli/config_catalog.h"
#include "cli/efficiency_source.h"
#include "cli/progress_bar.h"
#include "cli/search_csv.h"
#include "cli/search_inputs.h"
#include "cli/search_mpi.h"
#include "cli/table.h"
#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/search.h"

namespace calisim::cli {
namespace {

struct SearchArgs {
  SpaceArgs space;
  std::string db, csv, out, objective = "mfu", shard;
  std::vector<std::string> merge_files;
  int top = 10;
  bool json = false;
  // --accuracy / --accuracy-runs: the best layout beside the validated runs of its class.
  bool accuracy = false;
  std::vector<std::string> accuracy_runs;
};

std::string top_table(const std::vector<CandidateResult>& top, bool tokens_first) {
  Table t({"#", "layout", "in domain", "mbs", "m", "zero", "recompute", "step s", tokens_first ? "tok/s/GPU" : "MFU",
           tokens_first ? "MFU" : "tok/s/GPU", "bubble", "first GB", "last GB"});
  int i = 0;
  for (const auto& r : top) {
    const std::string mfu = fmt::format("{:.1f}%", r.mfu * 100);
    const std::string tok = fmt::format("{:.0f}", r.tokens_per_s_per_gpu);
    t.add_row({std::to_string(++i), layout_label(r), domain_summary(r.placement, r.candidate.order),
               std::to_string(r.candidate.mbs), std::to_string(r.micro_batch_num),
               std::to_string(r.candidate.zero), to_string(r.candidate.recompute), fmt::format("{:.4f}", r.step_time_s),
               tokens_first ? tok : mfu, tokens_first ? mfu : tok, fmt::format("{:.1f}%", r.bubble_fraction * 100),
               fmt::format("{:.1f}", r.first_stage_peak_gb), fmt::format("{:.1f}", r.last_stage_peak_gb)});
  }
  return t.render();
}

void parse_shard(const std::string& s, SearchOptions& o) {
  if (s.empty()) return;
  const auto slash = s.find('/');
  try {
    if (slash == std::string::npos) throw std::invalid_argument(s);
    std::size_t a = 0, b = 0;
    o.shard_index = std::stoi(s.substr(0, slash), &a);
    o.shard_count = std::stoi(s.substr(slash + 1), &b);
    if (a != slash || b != s.size() - slash - 1) throw std::invalid_argument(s);
  } catch (const std::exception&) {
    throw InputError("<command line>", "--shard", "expected i/n (e.g. 0/4), got '" + s + "'");
  }
}

void run_search_command(const SearchArgs& a) {
  const SpaceInputs in = load_space_inputs(a.space, true);
  const ModelConfig& model = in.model;
  const StrategyConfig& base = in.base;
  const SystemConfig& system = in.system;
  const EfficiencyChoice eff = make_efficiency_source(system, in.system_file, a.db);
  for (const auto& n : eff.notes) fmt::print(stderr, "note: {}\n", n);
  // As `calisim simulate`: fields accepted but not modeled are said, never dropped silently
  // (stderr keeps the table and the JSON on stdout clean; --json also lists them).
  for (const auto& w : in.warnings) fmt::print(stderr, "warning: {}\n", w);
  SearchSpace space = in.lists;
  fill_default_lists(space, model, system.scale_up_domain_size);

  SearchOptions opt;
  if (a.objective == "mfu") opt.objective = SearchObjective::mfu;
  else if (a.objective == "tokens") opt.objective = SearchObjective::tokens;
  else throw InputError("<command line>", "--objective", "expected mfu or tokens, got '" + a.objective + "'");
  opt.top_k = a.top;
  opt.threads = a.space.threads;
  opt.memory_margin_gb = a.space.memory_margin_gb;
  opt.use_reserved_memory = !a.space.allocated_memory;
  opt.keep_all = !a.csv.empty();
  parse_shard(a.shard, opt);
  MpiContext mpi;
  if (mpi.size() > 1) {
    if (!a.shard.empty()) throw InputError("<command line>", "--shard", "do not combine --shard with mpirun");
    opt.shard_index = mpi.rank();
    opt.shard_count = mpi.size();
  }
  ProgressBar bar(mpi.size() > 1 ? fmt::format("rank {} searching", mpi.rank()) : "searching");
  opt.progress = [&bar](std::uint64_t d, std::uint64_t t) { bar.update(d, t); };
  SearchResult res = run_search(model, base, system, *eff.model, space, opt);
  bar.finish();

  if (!a.csv.empty()) {
    const std::string path = mpi.size() > 1 ? fmt::format("{}.rank{}", a.csv, mpi.rank()) : a.csv;
    write_search_csv(path, res.feasible);
  }
  if (mpi.size() > 1) {
    res.top = mpi.gather_top(res.top, opt.top_k);
    mpi.sum_counts(res);
    if (mpi.rank() != 0) return;
  }
  if (!a.out.empty()) write_search_csv(a.out, res.top);

  const double rate = res.elapsed_s > 0 ? res.space_size / res.elapsed_s : 0;
  // The class (system, dense / MoE, precision) is the same for every candidate: the search varies
  // the layout, not the precision.
  std::optional<AccuracyReport> acc;
  if ((a.accuracy || !a.accuracy_runs.empty()) && !res.top.empty()) {
    acc = accuracy_report(a.accuracy_runs, a.db, model, base, system, res.top.front().step_time_s);
  }
  if (a.json) {
    nlohmann::json j;
    j["model"] = model.model_name;
    j["system"] = system.name;
    j["world_size"] = space.world_size;
    j["global_batch_size"] = space.global_batch_size;
    j["seq_len"] = base.seq_len;
    j["efficiency_db"] = eff.database.empty() ? nlohmann::json(nullptr) : nlohmann::json(eff.database);
    j["counts"] = {{"candidates", res.space_size}, {"illegal", res.illegal},     {"over_memory", res.too_big},
                 {"equivalent_placement", res.equivalent}, {"dominated_recompute", res.dominated},
                   {"feasible", res.feasible_count}, {"simulated", res.simulated}, {"pruned_by_bound", res.pruned}};
    j["elapsed_s"] = res.elapsed_s;
    j["candidates_per_s"] = rate;
    nlohmann::json top = nlohmann::json::array();
    for (const auto& r : res.top) top.push_back(search_candidate_json(r));
    j["top"] = top;
    // Every feasible candidate goes to --csv FILE, not into the JSON (null: not part of this
    // document; the Python API fills it with keep_all=True).
    j["feasible"] = nullptr;
    j["explanation"] = res.explanation.empty() ? nlohmann::json(nullptr) : nlohmann::json(res.explanation);
    // The legal layout needing the least memory, when nothing fits (what the explanation names).
    j["smallest"] = res.top.empty() && res.have_smallest ? search_candidate_json(res.smallest) : nlohmann::json(nullptr);
    nlohmann::json warnings = in.warnings;
    for (const auto& n : eff.notes) warnings.push_back(n);
    j["warnings"] = warnings;
    if (acc) j["accuracy"] = accuracy_json(*acc);
    fmt::print("{}\n", j.dump(2));
    if (!res.explanation.empty()) throw InputError("search", "", res.explanation);
    return;
  }
  fmt::print("calisim search: {} on {} x {} ({}), global batch {}, seq {}{}\n", model.model_name, space.world_size,
             system.device.name, system.name, space.global_batch_size, base.seq_len,
             eff.database.empty() ? "" : ", efficiencies from " + eff.database);
  fmt::print("  {} candidates in {:.2f} s ({:.0f}/s{}): {} illegal, {} equivalent placements, {} over memory, {}"
             "{} feasible ({} simulated, {} skipped by the schedule bound)\n\n",
             res.space_size, res.elapsed_s, rate, mpi.size() > 1 ? fmt::format(", {} MPI ranks", mpi.size()) : "",
             res.illegal, res.equivalent, res.too_big,
             res.dominated > 0 ? fmt::format("{} recomputing for no memory saved, ", res.dominated) : "",
             res.feasible_count, res.simulated, res.pruned);
  if (!res.explanation.empty()) throw InputError("search", "", res.explanation);
  fmt::print("{}", top_table(res.top, opt.objective == SearchObjective::tokens));
  fmt::print("  peak memory per GPU {} (device {:.0f} GB{}); m = micro-batches per iteration\n",
             opt.use_reserved_memory ? "with reserved" : "allocated", system.device.memory_gb,
             opt.memory_margin_gb > 0 ? fmt::format(", margin {:.1f} GB", opt.memory_margin_gb) : "");
  if (!a.csv.empty()) fmt::print("all {} feasible candidates written to {}\n", res.feasible.size(), a.csv);
  if (!a.out.empty()) fmt::print("top {} written to {}\n", res.top.size(), a.out);
  if (acc) fmt::print("\n{}", accuracy_text(*acc, "the best layout (#1)"));
}

void run_merge(const SearchArgs& a) {
  if (a.merge_files.empty()) throw InputError("<command line>", "search merge", "give one or more result files");
  std::vector<CandidateResult> all;
  for (const auto& f : a.merge_files) {
    auto rows = read_search_csv(f);
    all.insert(all.end(), rows.begin(), rows.end());
  }
  // The same index in two files is the same layout: keep one.
  std::sort(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.index < y.index; });
  all.erase(std::unique(all.begin(), all.end(), [](const auto& x, const auto& y) { return x.index == y.index; }),
            all.end());
  const auto top = merge_top(std::move(all), a.top);
  if (!a.out.empty()) write_search_csv(a.out, top);
  if (a.json) {
    nlohmann::json j = nlohmann::json::array();
    for (const auto& r : top) j.push_back(search_candidate_json(r));
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("calisim search merge: best {} of {} files\n{}", top.size(), a.merge_files.size(),
             top_table(top, a.objective == "tokens"));
}

}  // namespace

void register_search(CLI::App& app) {
  auto a = std::make_shared<SearchArgs>();
  CLI::App* sub = app.add_subcommand("search", "Find the fastest parallel layouts that fit in memory");
  sub->require_subcommand(0, 1);
  add_space_options(sub, a->space, true);
  sub->add_option("--objective", a->objective, "mfu or tokens (same ranking for a fixed batch; sets the first column)");
  sub->add_option("--top", a->top, "how many layouts to show (default 10)");
  sub->add_option("--csv", a->csv, "write every feasible candidate to FILE (disables bound pruning)");
  sub->add_option("--out", a->out, "write the top K as a CSV result file (input of `search merge`)");
  sub->add_option("--shard", a->shard, "search only shard i of n (i/n); merge the --out files with `search merge`");
  sub->add_option("--db", a->db, "efficiency database (default: the system file's efficiency_db)");
  sub->add_flag("--json", a->json, "print one JSON document");
  add_accuracy_options(sub, a->accuracy, a->accuracy_runs, "the best layout");
  sub->callback([a, sub] {
    if (sub->get_subcommands().empty()) run_search_command(*a);
  });

  CLI::App* merge = sub->add_subcommand("merge", "Merge search result files (shards or MPI ranks) into one top K");
  merge->add_option("files", a->merge_files, "result CSV files from --out or --csv")->required();
  merge->add_option("--top", a->top, "how many layouts to keep (default 10)");
  merge->add_option("--out", a->out, "write the merged top K to FILE");
  merge->add_flag("--json", a->json, "print JSON");
  merge->callback([a] { run_merge(*a); });
}

}  // namespace calisim::cli
