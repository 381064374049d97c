#include "simulator/search.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <random>
#include <set>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/pipeline_schedule.h"
#include "simulator/simulate.h"
#include "search_brute_force.h"
#include "test_support.h"

namespace calisim {
namespace {

struct Fixture {
  ModelConfig model = testing_support::shipped_model("llama3-8b");
  SystemConfig system = testing_support::shipped_system("h100-sxm");
  StrategyConfig base = parse_strategy(nlohmann::json::parse(R"({"seq_len": 4096, "global_batch_size": 32})"), "base");
  SearchSpace space;
  Fixture() {
    space.world_size = 16;
    space.global_batch_size = 32;
    space.tp = {1, 2, 4};
    space.pp = {1, 2, 4};
    space.vpp = {1, 2};
    space.cp = {1};
    space.ep = {1};
    space.mbs = {1, 2};
    space.recompute = {RecomputeChoice::none, RecomputeChoice::attn_mlp, RecomputeChoice::full};
    space.zero = {0, 1};
    space.orders = {kMegatronRankOrder};
  }
};

// The search over the fixture's space with every feasible candidate kept (no top-K pruning).
SearchResult search_keeping_all(const Fixture& f, const EfficiencyModel& eff) {
  SearchOptions o;
  o.keep_all = true;
  return run_search(f.model, f.base, f.system, eff, f.space, o);
}

// Every index simulated exactly, feasible ones sorted best first.
std::vector<CandidateResult> brute_force(const Fixture& f, double capacity_gb) {
  DefaultEfficiencyModel eff(f.system);
  std::vector<CandidateResult> out;
  StrategyConfig st;
  for (std::uint64_t i = 0; i < space_size(f.space); ++i) {
    const Candidate c = candidate_at(f.space, i);
    if (!make_strategy(f.base, f.model, f.space, c, st, nullptr)) continue;
    const SimulationResult r = simulate(f.model, st, f.system, eff);
    double peak = 0;
    for (const auto& s : r.stages) peak = std::max(peak, s.peak_mem_with_reserved_bytes / 1e9);
    if (peak > capacity_gb) continue;
    CandidateResult cr;
    cr.candidate = c;
    cr.index = i;
    cr.step_time_s = r.duration_time_per_iter_s;
    out.push_back(cr);
  }
  std::sort(out.begin(), out.end(), better);
  return out;
}

TEST(Search, TopKEqualsBruteForce) {
  Fixture f;
  DefaultEfficiencyModel eff(f.system);
  const auto reference = brute_force(f, f.system.device.memory_gb);
  ASSERT_GT(reference.size(), 10u);
  for (int threads : {1, 2}) {
    SearchOptions o;
    o.top_k = 10;
    o.threads = threads;
    const SearchResult r = run_search(f.model, f.base, f.system, eff, f.space, o);
    ASSERT_EQ(r.top.size(), 10u);
    for (std::size_t i = 0; i < r.top.size(); ++i) {
      EXPECT_EQ(r.top[i].index, reference[i].index) << "rank " << i << " threads " << threads;
      EXPECT_DOUBLE_EQ(r.top[i].step_time_s, reference[i].step_time_s);
    }
    EXPECT_EQ(r.feasible_count, reference.size());
    EXPECT_EQ(r.simulated + r.pruned, r.feasible_count);
    EXPECT_EQ(r.illegal + r.equivalent + r.too_big + r.dominated + r.feasible_count, r.space_size);
    EXPECT_EQ(r.equivalent, 0u);  // one order: nothing to be equivalent to
    EXPECT_EQ(r.dominated, 0u);   // attn+mlp and full recompute save memory in every layout here
  }
}

TEST(Search, KeepAllReturnsEveryFeasibleCandidateUnpruned) {
  Fixture f;
  DefaultEfficiencyModel eff(f.system);
  SearchOptions o;
  o.keep_all = true;
  const SearchResult r = run_search(f.model, f.base, f.system, eff, f.space, o);
  const auto reference = brute_force(f, f.system.device.memory_gb);
  ASSERT_EQ(r.feasible.size(), reference.size());
  EXPECT_EQ(r.pruned, 0u);
  for (std::size_t i = 0; i < reference.size(); ++i) EXPECT_EQ(r.feasible[i].index, reference[i].index);
}

TEST(Search, ShardsCoverTheSpaceExactlyOnceAndMergeToTheSameTop) {
  Fixture f;
  DefaultEfficiencyModel eff(f.system);
  SearchOptions o;
  o.top_k = 5;
  const SearchResult whole = run_search(f.model, f.base, f.system, eff, f.space, o);
  for (int n : {2, 3, 7}) {
    std::vector<CandidateResult> tops;
    std::uint64_t covered = 0;
    std::set<std::uint64_t> seen;
    for (int i = 0; i < n; ++i) {
      SearchOptions so = o;
      so.shard_index = i;
      so.shard_count = n;
      so.keep_all = true;
      const SearchResult part = run_search(f.model, f.base, f.system, eff, f.space, so);
      covered += part.space_size;
      for (const auto& c : part.feasible) EXPECT_TRUE(seen.insert(c.index).second) << "index in two shards";
      tops.insert(tops.end(), part.top.begin(), part.top.end());
    }
    EXPECT_EQ(covered, space_size(f.space));
    EXPECT_EQ(seen.size(), whole.feasible_count);
    const auto merged = merge_top(tops, 5);
    ASSERT_EQ(merged.size(), whole.top.size());
    for (std::size_t i = 0; i < merged.size(); ++i) EXPECT_EQ(merged[i].index, whole.top[i].index);
  }
}

// Megatron's recompute modules as search choices: the name round-trips (in Megatron's order),
// bad names are refused, a candidate carries the modules into its strategy, and on a MoE model
// the modules save memory against the twin without recompute, so they are not dominated.
TEST(Search, MegatronRecomputeModulesAreChoices) {
  EXPECT_EQ(to_string(parse_recompute_choice("modules:moe_act+layernorm")), "modules:layernorm+moe_act");
  EXPECT_EQ(parse_recompute_choice(to_string(parse_recompute_choice("modules:mla_up_proj+mlp"))),
            parse_recompute_choice("modules:mlp+mla_up_proj"));
  EXPECT_THROW(parse_recompute_choice("modules:core_attn"), std::invalid_argument);
  EXPECT_THROW(parse_recompute_choice("modules:moe+moe"), std::invalid_argument);
  EXPECT_THROW(parse_recompute_choice("modules:"), std::invalid_argument);

  Fixture f;
  f.model = testing_support::shipped_model("qwen3-30b-a3b");
  f.system = testing_support::shipped_system("h200");  // at mbs 2 only the recompute fits
  f.base = parse_strategy(nlohmann::json::parse(R"({"seq_len": 4096, "global_batch_size": 64,
                                                      "moe_grouped_gemm": true})"),
                          "base");
  f.space.world_size = 8;
  f.space.global_batch_size = 64;
  f.space.tp = {1};
  f.space.pp = {1};
  f.space.vpp = {1};
  f.space.ep = {8};
  f.space.mbs = {1, 2};
  f.space.zero = {1};
  f.space.recompute = {RecomputeChoice::none, parse_recompute_choice("modules:layernorm+moe_act")};
  DefaultEfficiencyModel eff(f.system);
  SearchOptions o;
  o.keep_all = true;
  o.top_k = 100;
  const SearchResult r = run_search(f.model, f.base, f.system, eff, f.space, o);
  EXPECT_EQ(r.dominated, 0u);
  int modules = 0;
  for (const auto& c : r.feasible) {
    if (c.candidate.recompute.kind != RecomputeChoice::Kind::modules) continue;
    ++modules;
    StrategyConfig st;
    ASSERT_TRUE(make_strategy(f.base, f.model, f.space, c.candidate, st, nullptr));
    EXPECT_EQ(st.megatron_recompute_modules, kRecomputeLayernorm | kRecomputeMoeAct);
    EXPECT_EQ(st.recompute_granularity, RecomputeGranularity::selective);
    for (const auto& twin : r.feasible) {
      if (twin.candidate.recompute == RecomputeChoice::none && twin.candidate.mbs == c.candidate.mbs) {
        EXPECT_LT(c.max_peak_gb, twin.max_peak_gb);
        EXPECT_GT(c.step_time_s, twin.step_time_s);
      }
    }
  }
  EXPECT_EQ(modules, 2);
  EXPECT_EQ(r.feasible.front().candidate.recompute.kind, RecomputeChoice::Kind::modules);  // mbs 2 wins
  // A module the base strategy cannot run is an illegal candidate with Megatron's reason.
  f.base.moe_grouped_gemm = false;
  const SearchResult bad = run_search(f.model, f.base, f.system, eff, f.space, o);
  EXPECT_EQ(bad.illegal, 2u);
}

// Selective recompute (the core attention) under the default fused attention keeps the same
// tensors as no recompute: every such candidate is slower for nothing, and the search drops it
// as dominated — also when the twin without recompute lies in another shard — while full
// recompute, which saves memory, stays. The answer matches a brute force applying the rule.
TEST(Search, RecomputeThatSavesNoMemoryIsDominated) {
  Fixture f;
  f.space.recompute = {RecomputeChoice::none, RecomputeChoice::selective, RecomputeChoice::full};
  DefaultEfficiencyModel eff(f.system);
  SearchOptions o;
  o.top_k = 1000;
  o.keep_all = true;
  const SearchResult r = run_search(f.model, f.base, f.system, eff, f.space, o);
  EXPECT_GT(r.dominated, 0u);
  EXPECT_EQ(r.illegal + r.equivalent + r.too_big + r.dominated + r.feasible_count, r.space_size);
  std::uint64_t selective = 0, full = 0;
  for (const auto& c : r.feasible) {
    selective += c.candidate.recompute == RecomputeChoice::selective;
    full += c.candidate.recompute == RecomputeChoice::full;
    if (c.candidate.recompute != RecomputeChoice::selective) continue;
    for (const auto& twin : r.feasible) {
      Candidate t = twin.candidate;
      t.recompute = RecomputeChoice::selective;
      const bool same = t.tp == c.candidate.tp && t.pp == c.candidate.pp && t.vpp == c.candidate.vpp &&
                        t.mbs == c.candidate.mbs && t.zero == c.candidate.zero;
      EXPECT_FALSE(same && twin.candidate.recompute == RecomputeChoice::none && twin.max_peak_gb <= c.max_peak_gb)
          << "a dominated selective candidate was kept: index " << c.index;
    }
  }
  EXPECT_GT(full, 0u);
  EXPECT_EQ(selective, 0u) << "selective recompute saves no memory with fused attention";
  testing_support::expect_search_equals_brute_force(
      f.model, f.base, f.system, eff, f.space,
      testing_support::brute_force_feasible(f.model, f.base, f.system, eff, f.space));

  // Shards: a twin in another shard is costed where it is needed; together the same counts.
  std::uint64_t dominated = 0, feasible = 0;
  for (int i = 0; i < 3; ++i) {
    SearchOptions so = o;
    so.shard_index = i;
    so.shard_count = 3;
    const SearchResult part = run_search(f.model, f.base, f.system, eff, f.space, so);
    dominated += part.dominated;
    feasible += part.feasible_count;
  }
  EXPECT_EQ(dominated, r.dominated);
  EXPECT_EQ(feasible, r.feasible_count);

  // Without "none" in the space nothing is compared against, so nothing is dominated.
  f.space.recompute = {RecomputeChoice::selective, RecomputeChoice::full};
  EXPECT_EQ(run_search(f.model, f.base, f.system, eff, f.space, o).dominated, 0u);
}

TEST(Search, ExplainsWhenNothingFits) {
  Fixture f;
  f.system.device.memory_gb = 12;
  DefaultEfficiencyModel eff(f.system);
  SearchOptions o;
  o.memory_margin_gb = 2;
  const SearchResult r = run_search(f.model, f.base, f.system, eff, f.space, o);
  EXPECT_EQ(r.feasible_count, 0u);
  EXPECT_TRUE(r.top.empty());
  ASSERT_TRUE(r.have_smallest);
  EXPECT_NE(r.explanation.find("no layout fits in 10.0 GB (12.0 GB device - 2.0 GB margin): the smallest needs"),
            std::string::npos)
      << r.explanation;
  EXPECT_NE(r.explanation.find(describe(r.smallest.candidate, r.smallest.dp)), std::string::npos);
  // The smallest really is the smallest legal layout.
  const auto all = brute_force(f, 1e9);
  for (const auto& c : all) {
    StrategyConfig st;
    ASSERT_TRUE(make_strategy(f.base, f.model, f.space, c.candidate, st, nullptr));
    const SimulationResult sr = simulate(f.model, st, f.system, eff);
    double peak = 0;
    for (const auto& s : sr.stages) peak = std::max(peak, s.peak_mem_with_reserved_bytes / 1e9);
    EXPECT_GE(peak, r.smallest.max_peak_gb - 1e-9);
  }
}

TEST(Search, IllegalLayoutsGiveReasons) {
  Fixture f;
  StrategyConfig st;
  std::string why;
  Candidate c;
  c.tp = 3;
  EXPECT_FALSE(make_strategy(f.base, f.model, f.space, c, st, &why));
  EXPECT_NE(why.find("divisible"), std::string::npos) << why;
  c = Candidate{};
  c.pp = 1;
  c.vpp = 2;
  EXPECT_FALSE(make_strategy(f.base, f.model, f.space, c, st, &why));
  c = Candidate{};
  c.zero = 4;
  EXPECT_FALSE(make_strategy(f.base, f.model, f.space, c, st, &why));
  EXPECT_NE(why.find("not modeled"), std::string::npos) << why;
}

TEST(Search, BadOptionsAreInputErrors) {
  Fixture f;
  DefaultEfficiencyModel eff(f.system);
  SearchOptions o;
  o.shard_index = 3;
  o.shard_count = 3;
  EXPECT_THROW(run_search(f.model, f.base, f.system, eff, f.space, o), InputError);
  o = SearchOptions{};
  f.space.tp.clear();
  EXPECT_THROW(run_search(f.model, f.base, f.system, eff, f.space, o), InputError);
}

// Placement search against brute force: every index of a space with all 120 rank orders
// simulated, none skipped. The search (skipping orders that place every group alike) must keep,
// for every brute-force candidate, one of the same layout with exactly the same step time, only
// keep candidates the brute force has with the same time, and find the same best time.
void expect_placement_search_equals_brute_force(const ModelConfig& model, const SystemConfig& system,
                                                const StrategyConfig& base, const SearchSpace& space) {
  DefaultEfficiencyModel eff(system);
  std::vector<CandidateResult> reference;
  StrategyConfig st;
  for (std::uint64_t i = 0; i < space_size(space); ++i) {
    const Candidate c = candidate_at(space, i);
    if (!make_strategy(base, model, space, c, st, nullptr)) continue;
    CandidateResult cr = summarize(simulate(model, st, system, eff), c, i, true);
    if (cr.max_peak_gb > system.device.memory_gb) continue;
    reference.push_back(cr);
  }
  std::sort(reference.begin(), reference.end(), better);
  ASSERT_GT(reference.size(), 20u);
  SearchOptions o;
  o.keep_all = true;
  const SearchResult r = run_search(model, base, system, eff, space, o);
  EXPECT_GT(r.equivalent, 0u);
  ASSERT_FALSE(r.feasible.empty());
  EXPECT_DOUBLE_EQ(r.feasible.front().step_time_s, reference.front().step_time_s);
  auto same_layout = [](const Candidate& a, const Candidate& b) {
    return a.tp == b.tp && a.pp == b.pp && a.vpp == b.vpp && a.cp == b.cp && a.ep == b.ep && a.mbs == b.mbs &&
           a.recompute == b.recompute && a.zero == b.zero && (b.etp == 0 || a.etp == b.etp) &&
           (b.cp_comm < 0 || a.cp_comm == b.cp_comm) && (b.dispatcher < 0 || a.dispatcher == b.dispatcher) &&
           (b.dp_replicate == 0 || a.dp_replicate == b.dp_replicate);
  };
  for (const auto& ref : reference) {
    bool found = false;
    for (const auto& kept : r.feasible) {
      if (same_layout(kept.candidate, ref.candidate) && kept.step_time_s == ref.step_time_s) {
        found = true;
        break;
      }
    }
    EXPECT_TRUE(found) << describe(ref.candidate, ref.dp) << " " << ref.step_time_s << " s lost by the placement pruning";
  }
  for (const auto& kept : r.feasible) {
    const auto it = std::find_if(reference.begin(), reference.end(), [&](const auto& x) { return x.index == kept.index; });
    ASSERT_NE(it, reference.end()) << describe(kept.candidate, kept.dp);
    EXPECT_DOUBLE_EQ(it->step_time_s, kept.step_time_s) << describe(kept.candidate, kept.dp);
  }
  EXPECT_LT(r.feasible.size(), reference.size());  // the pruning did skip something
}

TEST(Search, PlacementSearchEqualsBruteForceDense) {
  Fixture f;
  f.space.tp = {1, 2, 4};
  f.space.pp = {1, 2};
  f.space.vpp = {1};
  f.space.cp = {1, 2};
  f.space.mbs = {1};
  f.space.recompute = {RecomputeChoice::full};
  f.space.zero = {1};
  f.space.orders = rank_order_list("all");
  expect_placement_search_equals_brute_force(f.model, f.system, f.base, f.space);
  f.system.scale_up_domain_size = 4;  // a smaller domain: other orders become distinct
  expect_placement_search_equals_brute_force(f.model, f.system, f.base, f.space);
}

// A small MoE model on 16 GPUs: tp 1/2, pp 1/2, the given ep list, one mbs, no recompute.
Fixture moe_fixture(std::vector<int> ep, const char* orders) {
  Fixture f;
  f.model = testing_support::small_moe();
  f.base = parse_strategy(nlohmann::json::parse(R"({"seq_len": 2048, "global_batch_size": 32})"), "base");
  f.space.tp = {1, 2};
  f.space.pp = {1, 2};
  f.space.vpp = {1};
  f.space.cp = {1};
  f.space.ep = std::move(ep);
  f.space.mbs = {1};
  f.space.recompute = {RecomputeChoice::none};
  f.space.zero = {1};
  f.space.orders = rank_order_list(orders);
  return f;
}

TEST(Search, PlacementSearchEqualsBruteForceMoe) {
  const Fixture f = moe_fixture({1, 2, 4, 8}, "all");
  expect_placement_search_equals_brute_force(f.model, f.system, f.base, f.space);
}

// Left empty, the expert-parallel list is ep 1 for a dense model and, for a MoE model, every power
// of two dividing the expert count up to the world size (DeepSeek-V3: 256 experts).
TEST(Search, DefaultExpertParallelSizesFollowTheExperts) {
  SearchSpace dense;
  dense.world_size = 1024;
  fill_default_lists(dense, testing_support::shipped_model("llama3-8b"), 8);
  EXPECT_EQ(dense.ep, std::vector<int>({1}));

  const ModelConfig dsv3 = testing_support::shipped_model("deepseek-v3");
  ASSERT_EQ(dsv3.expert_num, 256);
  SearchSpace big;
  big.world_size = 1024;
  fill_default_lists(big, dsv3, 8);
  EXPECT_EQ(big.ep, std::vector<int>({1, 2, 4, 8, 16, 32, 64, 128, 256}));
  SearchSpace small;
  small.world_size = 24;  // powers of two up to the world size, whether or not they divide it
  fill_default_lists(small, dsv3, 8);
  EXPECT_EQ(small.ep, std::vector<int>({1, 2, 4, 8, 16}));
  SearchSpace stated;
  stated.world_size = 1024;
  stated.ep = {32};
  fill_default_lists(stated, dsv3, 8);
  EXPECT_EQ(stated.ep, std::vector<int>({32}));  // a stated list is kept
}

// An expert-TP list multiplies the space; the search still equals a brute force over it, and each
// result carries the expert TP it ran with.
TEST(Search, ExpertTensorParallelListEqualsBruteForce) {
  Fixture f = moe_fixture({1, 2, 4}, "tp_first");
  f.space.etp = {1, 2};
  expect_placement_search_equals_brute_force(f.model, f.system, f.base, f.space);

  DefaultEfficiencyModel eff(f.system);
  const SearchResult r = search_keeping_all(f, eff);
  bool saw_etp2 = false;
  for (const auto& c : r.feasible) {
    const Candidate listed = candidate_at(f.space, c.index);
    EXPECT_EQ(c.candidate.etp, listed.etp);
    saw_etp2 = saw_etp2 || c.candidate.etp == 2;
  }
  EXPECT_TRUE(saw_etp2);
  // Without a list the results report the base strategy's expert TP.
  f.space.etp.clear();
  const SearchResult base_only = search_keeping_all(f, eff);
  ASSERT_FALSE(base_only.feasible.empty());
  for (const auto& c : base_only.feasible) EXPECT_EQ(c.candidate.etp, f.base.etp_size);
  // A dense model rejects expert TP.
  Candidate dense = candidate_at(f.space, 0);
  dense.etp = 2;
  StrategyConfig st;
  std::string why;
  EXPECT_FALSE(make_strategy(f.base, testing_support::shipped_model("llama3-8b"), f.space, dense, st, &why));
  EXPECT_NE(why.find("etp > 1 needs a MoE model"), std::string::npos) << why;
}

// A CP-communication list: the search equals a brute force over it, results carry the type they
// ran with, and at cp 1 only the list's first type is legal (the others are the same layout).
TEST(Search, CpCommunicationListEqualsBruteForce) {
  Fixture f;
  f.space.tp = {1, 2};
  f.space.pp = {1};
  f.space.vpp = {1};
  f.space.cp = {1, 2, 4};
  f.space.mbs = {1};
  f.space.recompute = {RecomputeChoice::none};
  f.space.zero = {1};
  f.space.cp_comm = {CpCommType::p2p, CpCommType::a2a, CpCommType::all_gather};
  f.space.orders = rank_order_list("tp_first");
  expect_placement_search_equals_brute_force(f.model, f.system, f.base, f.space);

  DefaultEfficiencyModel eff(f.system);
  const SearchResult r = search_keeping_all(f, eff);
  std::set<int> kinds;
  for (const auto& c : r.feasible) {
    EXPECT_EQ(c.candidate.cp_comm, candidate_at(f.space, c.index).cp_comm);
    if (c.candidate.cp == 1) {
      EXPECT_EQ(c.candidate.cp_comm, static_cast<int>(CpCommType::p2p));
    } else {
      kinds.insert(c.candidate.cp_comm);
    }
  }
  EXPECT_EQ(kinds.size(), 3u);
  Candidate cp1 = candidate_at(f.space, 0);
  cp1.cp = 1;
  cp1.cp_comm = static_cast<int>(CpCommType::a2a);
  StrategyConfig st;
  std::string why;
  EXPECT_FALSE(make_strategy(f.base, f.model, f.space, cp1, st, &why));
  EXPECT_NE(why.find("only matters with cp > 1"), std::string::npos) << why;
}

// A MoE-dispatcher list: the search equals a brute force over it, results carry the dispatcher they
// ran with, at ep 1 (and for a dense model) only the list's first one is legal, and the flex one
// with expert TP is refused with its reason.
TEST(Search, DispatcherListEqualsBruteForce) {
  Fixture f = moe_fixture({1, 2, 4}, "tp_first");
  f.space.dispatchers = {MoeDispatcher::all_to_all, MoeDispatcher::flex};
  expect_placement_search_equals_brute_force(f.model, f.system, f.base, f.space);

  DefaultEfficiencyModel eff(f.system);
  const SearchResult r = search_keeping_all(f, eff);
  std::set<int> kinds;
  for (const auto& c : r.feasible) {
    EXPECT_EQ(c.candidate.dispatcher, candidate_at(f.space, c.index).dispatcher);
    if (c.candidate.ep == 1) EXPECT_EQ(c.candidate.dispatcher, static_cast<int>(MoeDispatcher::all_to_all));
    else kinds.insert(c.candidate.dispatcher);
  }
  EXPECT_EQ(kinds, (std::set<int>{static_cast<int>(MoeDispatcher::all_to_all), static_cast<int>(MoeDispatcher::flex)}));
  // Without a list the results report the base strategy's dispatcher.
  f.space.dispatchers.clear();
  const SearchResult base_only = search_keeping_all(f, eff);
  ASSERT_FALSE(base_only.feasible.empty());
  for (const auto& c : base_only.feasible) EXPECT_EQ(c.candidate.dispatcher, static_cast<int>(f.base.moe_dispatcher));

  f.space.dispatchers = {MoeDispatcher::all_to_all, MoeDispatcher::flex};
  Candidate c = candidate_at(f.space, 0);
  c.ep = 1;
  c.dispatcher = static_cast<int>(MoeDispatcher::flex);
  StrategyConfig st;
  std::string why;
  EXPECT_FALSE(make_strategy(f.base, f.model, f.space, c, st, &why));
  EXPECT_NE(why.find("only matters with ep > 1"), std::string::npos) << why;
  EXPECT_FALSE(make_strategy(f.base, testing_support::shipped_model("llama3-8b"), f.space, c, st, &why));
  EXPECT_NE(why.find("only matters for a MoE model"), std::string::npos) << why;
  c.ep = 2;
  c.etp = 2;
  EXPECT_FALSE(make_strategy(f.base, f.model, f.space, c, st, &why));
  EXPECT_NE(why.find("flex dispatcher with expert tensor parallelism"), std::string::npos) << why;
  c.etp = 1;
  ASSERT_TRUE(make_strategy(f.base, f.model, f.space, c, st, &why)) << why;
  EXPECT_EQ(st.moe_dispatcher, MoeDispatcher::flex);
}

// A hybrid-sharding list (dp_replicate_size): the search equals a brute force over it, results
// carry the replica count they ran with, replicas of a replicated state (ZeRO-0) or that do not
// split the data-parallel group are refused with the reason, and at ZeRO-3 more replicas hold more
// of the state per GPU (each shards it over fewer ranks).
TEST(Search, HybridShardingListEqualsBruteForce) {
  Fixture f;
  f.space.tp = {1, 2};
  f.space.pp = {1, 2};
  f.space.vpp = {1};
  f.space.mbs = {1};
  f.space.recompute = {RecomputeChoice::full};
  f.space.zero = {0, 1, 3};
  f.space.dp_replicate = {1, 2, 4, 8};
  f.space.orders = rank_order_list("tp_first");
  expect_placement_search_equals_brute_force(f.model, f.system, f.base, f.space);

  DefaultEfficiencyModel eff(f.system);
  const SearchResult r = search_keeping_all(f, eff);
  std::set<int> counts;
  double zero3_peak_r1 = 0, zero3_peak_r8 = 0;
  for (const auto& c : r.feasible) {
    EXPECT_EQ(c.candidate.dp_replicate, candidate_at(f.space, c.index).dp_replicate);
    if (c.candidate.zero == 0) {
      EXPECT_EQ(c.candidate.dp_replicate, 1) << describe(c.candidate, c.dp);
    }
    EXPECT_EQ(c.dp % c.candidate.dp_replicate, 0) << describe(c.candidate, c.dp);
    counts.insert(c.candidate.dp_replicate);
    // tp 1 pp 1: 16 data-parallel ranks.
    if (c.candidate.zero == 3 && c.candidate.tp == 1 && c.candidate.pp == 1 && c.candidate.order == f.space.orders[0]) {
      if (c.candidate.dp_replicate == 1) zero3_peak_r1 = c.max_peak_gb;
      if (c.candidate.dp_replicate == 8) zero3_peak_r8 = c.max_peak_gb;
    }
  }
  EXPECT_EQ(counts, (std::set<int>{1, 2, 4, 8}));
  ASSERT_GT(zero3_peak_r1, 0);
  ASSERT_GT(zero3_peak_r8, 0);
  // llama3-8b's 8 B parameters at ZeRO-3: 16 bytes each over 16 ranks against over 2 ranks.
  EXPECT_GT(zero3_peak_r8 - zero3_peak_r1, 30.0);
  // Without a list the results report the base strategy's count.
  f.space.dp_replicate.clear();
  const SearchResult base_only = search_keeping_all(f, eff);
  ASSERT_FALSE(base_only.feasible.empty());
  for (const auto& c : base_only.feasible) EXPECT_EQ(c.candidate.dp_replicate, 1);

  f.space.dp_replicate = {1, 2, 4, 8};
  Candidate c = candidate_at(f.space, 0);
  c.tp = 2;
  c.pp = 1;
  c.zero = 0;
  c.dp_replicate = 2;
  StrategyConfig st;
  std::string why;
  EXPECT_FALSE(make_strategy(f.base, f.model, f.space, c, st, &why));
  EXPECT_NE(why.find("need zero_state 1, 2 or 3"), std::string::npos) << why;
  c.zero = 1;
  c.dp_replicate = 3;  // 8 data-parallel ranks
  EXPECT_FALSE(make_strategy(f.base, f.model, f.space, c, st, &why));
  EXPECT_NE(why.find("must be divisible by dp_replicate_size (3)"), std::string::npos) << why;
  c.dp_replicate = 4;
  ASSERT_TRUE(make_strategy(f.base, f.model, f.space, c, st, &why)) << why;
  EXPECT_EQ(st.dp_replicate_size, 4);
  EXPECT_NE(describe(c, 8).find(" replicas 4"), std::string::npos);
}

TEST(PipelineLowerBound, NeverExceedsTheSimulationAndIsTightForEqualStages) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(0.5, 2.0);
  for (int trial = 0; trial < 200; ++trial) {
    const int p = 1 + trial % 6, v = p > 1 ? 1 + (trial / 6) % 3 : 1, m = p * (1 + trial % 4);
    std::vector<double> f(p * v), b(p * v);
    for (auto& x : f) x = u(rng);
    for (auto& x : b) x = 2 * u(rng);
    PipelineSpec s{p, v, m, f, b, {}, trial % 2 ? 0.05 : 0.0};
    const double exact = simulate_pipeline(s, false).makespan_s;
    EXPECT_LE(pipeline_lower_bound_s(s), exact + 1e-9) << "p " << p << " v " << v << " m " << m;
    s.cutoff_s = 0;  // forces the bound path
    const PipelineResult bounded = simulate_pipeline(s, false);
    EXPECT_TRUE(bounded.bounded);
    EXPECT_LE(bounded.makespan_s, exact + 1e-9);
  }
  std::vector<double> f(8, 1.0), b(8, 2.0);
  PipelineSpec s{4, 2, 8, f, b, {}, 0.0};
  EXPECT_NEAR(pipeline_lower_bound_s(s), simulate_pipeline(s, false).makespan_s, 1e-9);
}

}  // namespace
}  // namespace calisim
