#include "simulator/search.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>
#include <tuple>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "simulator/model_costs.h"
#include "simulator/simulate.h"

namespace calisim {
namespace {

// Layer costs by LayerCostKey, shared by all workers. Few distinct keys exist in a space (tp ×
// mbs × recompute × kernel choices), so a locked list with a per-thread front cache is enough.
class CostCache {
 public:
  CostCache(const ModelConfig& m, const SystemConfig& s, const EfficiencyModel& e) : model_(m), sys_(s), eff_(e) {}

  const ModelCosts& get(const StrategyConfig& st) {
    const LayerCostKey key = layer_cost_key(st);
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [k, c] : entries_) {
      if (k == key) return c;
    }
    entries_.emplace_back(key, cost_model(model_, st, sys_, eff_, false));
    return entries_.back().second;
  }

 private:
  const ModelConfig& model_;
  const SystemConfig& sys_;
  const EfficiencyModel& eff_;
  std::mutex mu_;
  std::deque<std::pair<LayerCostKey, ModelCosts>> entries_;  // deque: references stay valid
};

// A result names the choices it was simulated with — expert TP, CP communication, dispatcher and
// hybrid-sharding replicas — also where the space leaves them to the base strategy, and where its
// groups sit in the scale-up domains.
void carry_effective_choices(const StrategyConfig& st, const SystemConfig& sys, CandidateResult& cr) {
  cr.candidate.etp = st.etp_size;
  cr.candidate.cp_comm = static_cast<int>(st.cp_comm_type);
  cr.candidate.dispatcher = static_cast<int>(st.moe_dispatcher);
  cr.candidate.dp_replicate = st.dp_replicate_size;
  cr.placement = place_ranks(st, sys.scale_up_domain_size);
}

void insert_top(std::vector<CandidateResult>& top, const CandidateResult& c, int k) {
  auto it = std::lower_bound(top.begin(), top.end(), c, better);
  if (static_cast<int>(top.size()) >= k && it == top.end()) return;
  top.insert(it, c);
  if (static_cast<int>(top.size()) > k) top.pop_back();
}

struct WorkerState {
  std::vector<CandidateResult> top, feasible;
  std::uint64_t illegal = 0, too_big = 0, equivalent = 0, simulated = 0, feasible_count = 0;
  // The last layout (a space index without its order) this worker saw: orders are the innermost
  // list, so consecutive indices share it and legality and placement classes are computed once.
  std::uint64_t layout = std::numeric_limits<std::uint64_t>::max();
  bool layout_legal = false;
  Candidate layout_candidate;
  StrategyConfig layout_strategy;
  std::vector<OrderStatus> order_status;
  bool have_smallest = false;
  CandidateResult smallest;
};

}  // namespace

CandidateResult summarize(const SimulationResult& r, const Candidate& c, std::uint64_t index, bool reserved) {
  CandidateResult out;
  out.candidate = c;
  out.index = index;
  out.dp = r.dp;
  out.micro_batch_num = r.micro_batch_num;
  out.first_stage_layers = r.stages.front().layers;
  out.last_stage_layers = r.stages.back().layers;
  out.middle_stage_layers = r.stages.size() > 2 ? r.stages[1].layers : out.first_stage_layers;
  out.step_time_s = r.duration_time_per_iter_s;
  out.mfu = r.mfu;
  out.tokens_per_s_per_gpu = r.tokens_per_s_per_gpu;
  out.bubble_fraction = r.bubble_fraction;
  out.tp_comm_s = r.tp_comm_exposed_s;
  out.pp_comm_s = r.pp_comm_exposed_s;
  out.dp_comm_s = r.dp_comm_exposed_s;
  out.recompute_s = r.recompute_s;
  out.compute_s = r.compute_s;
  out.bubble_s = r.bubble_s;
  out.optimizer_s = r.optimizer_s;
  auto peak = [&](const StageReport& s) { return (reserved ? s.peak_mem_with_reserved_bytes : s.peak_mem_bytes) / 1e9; };
  out.first_stage_peak_gb = peak(r.stages.front());
  out.last_stage_peak_gb = peak(r.stages.back());
  for (const auto& s : r.stages) out.max_peak_gb = std::max(out.max_peak_gb, peak(s));
  return out;
}

bool better(const CandidateResult& a, const CandidateResult& b) {
  if (a.step_time_s != b.step_time_s) return a.step_time_s < b.step_time_s;
  return a.index < b.index;
}

std::vector<CandidateResult> merge_top(std::vector<CandidateResult> all, int top_k) {
  std::sort(all.begin(), all.end(), better);
  if (top_k >= 0 && static_cast<int>(all.size()) > top_k) all.resize(top_k);
  return all;
}

SearchResult run_search(const ModelConfig& model, const StrategyConfig& base, const SystemConfig& sys,
                        const EfficiencyModel& eff, const SearchSpace& space, const SearchOptions& opt) {
  if (opt.top_k < 1) throw InputError("<command line>", "--top", "expected a positive number of layouts to show");
  if (opt.shard_count < 1 || opt.shard_index < 0 || opt.shard_index >= opt.shard_count) {
    throw InputError("<command line>", "--shard",
                     fmt::format("expected i/n with 0 <= i < n, got {}/{}", opt.shard_index, opt.shard_count));
  }
  const std::uint64_t size = space_size(space);
  if (size == 0) throw InputError("<command line>", "search space", "a search list is empty");
  const auto t0 = std::chrono::steady_clock::now();

  SearchResult res;
  const std::uint64_t first = static_cast<std::uint64_t>(opt.shard_index);
  const std::uint64_t step = static_cast<std::uint64_t>(opt.shard_count);
  const std::uint64_t total = size > first ? (size - first + step - 1) / step : 0;  // indices of this shard
  res.space_size = total;
  const double capacity_gb = sys.device.memory_gb - opt.memory_margin_gb;

  CostCache cache(model, sys, eff);
  int threads = opt.threads > 0 ? opt.threads : static_cast<int>(std::thread::hardware_concurrency());
  threads = std::max(1, std::min<int>(threads, static_cast<int>(std::max<std::uint64_t>(1, total / 64))));
  std::vector<WorkerState> states(threads);
  std::mutex error_mu;
  std::exception_ptr error;
  constexpr std::uint64_t kChunk = 64;

  // Runs `body(worker, k)` for k in [0, n) over the thread pool, in chunks, stopping on error.
  auto parallel_for = [&](std::uint64_t n, auto&& body) {
    std::atomic<std::uint64_t> next{0};
    auto work = [&](WorkerState& w) {
      try {
        while (true) {
          const std::uint64_t begin = next.fetch_add(kChunk);
          if (begin >= n) break;
          const std::uint64_t end = std::min(n, begin + kChunk);
          for (std::uint64_t k = begin; k < end; ++k) {
            if (!body(w, k)) {
              next.store(n);
              break;
            }
          }
        }
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        next.store(n);
      }
    };
    if (threads == 1) {
      work(states[0]);
    } else {
      std::vector<std::thread> pool;
      for (int t = 0; t < threads; ++t) pool.emplace_back(work, std::ref(states[t]));
      for (auto& th : pool) th.join();
    }
    if (error) std::rethrow_exception(error);
  };

  // Phase A, every index: legality, exact memory and a lower bound on the step time from the
  // schedule bound (cutoff 0 skips the event simulation). Cheap: no schedule is simulated.
  struct Bound {
    double step_lb_s;
    std::uint64_t index;
    double max_peak_gb;
  };
  std::vector<std::vector<Bound>> bounds(threads);
  std::atomic<std::uint64_t> done{0};
  const std::uint64_t order_count = space.orders.size();
  parallel_for(total, [&](WorkerState& w, std::uint64_t k) {
    const std::uint64_t index = first + k * step;
    const std::size_t me = static_cast<std::size_t>(&w - states.data());
    if (index / order_count != w.layout) {
      // Legality apart from the order: checked under Megatron's order, which is always legal.
      w.layout = index / order_count;
      w.layout_candidate = candidate_at(space, index);
      w.layout_candidate.order = kMegatronRankOrder;
      w.layout_legal = make_strategy(base, model, space, w.layout_candidate, w.layout_strategy, nullptr);
      if (w.layout_legal) classify_orders(model, space, w.layout_strategy, sys.scale_up_domain_size, w.order_status);
    }
    Candidate c = w.layout_candidate;
    c.order = space.orders[index % order_count];
    const OrderStatus status = w.layout_legal ? w.order_status[index % order_count] : OrderStatus::illegal;
    if (status == OrderStatus::illegal) {
      ++w.illegal;
    } else if (status == OrderStatus::equivalent) {
      ++w.equivalent;
    } else {
      StrategyConfig& st = w.layout_strategy;
      st.rank_order = c.order;
      SimulateOptions so;
      so.details = false;
      so.pipeline_cutoff_s = 0;
      const SimulationResult r = assemble(model, st, sys, eff, cache.get(st), so);
      CandidateResult cr = summarize(r, c, index, opt.use_reserved_memory);
      carry_effective_choices(st, sys, cr);
      if (!w.have_smallest || cr.max_peak_gb < w.smallest.max_peak_gb) {
        w.smallest = cr;
        w.have_smallest = true;
      }
      if (cr.max_peak_gb > capacity_gb) {
        ++w.too_big;
      } else {
        ++w.feasible_count;
        bounds[me].push_back({r.duration_time_per_iter_s, index, cr.max_peak_gb});
      }
    }
    const std::uint64_t d = done.fetch_add(1) + 1;
    if (opt.progress && (d % 256 == 0 || d == total)) opt.progress(d, total);
    return true;
  });

  std::vector<Bound> order;
  for (auto& b : bounds) order.insert(order.end(), b.begin(), b.end());

  // Dominated recompute choices: recompute only adds work, so a candidate that recomputes while
  // its twin without recompute (the same layout otherwise) fits in no more memory is slower for
  // nothing — selective recompute of the core attention under FlashAttention-style kernels keeps
  // the same tensors. Such candidates are dropped before the exact phase (`dominated`). The twin
  // is looked up among this shard's feasible candidates, or costed here when another shard holds it.
  const auto none_at = std::find(space.recompute.begin(), space.recompute.end(), RecomputeChoice::none);
  if (none_at != space.recompute.end() && space.recompute.size() > 1) {
    const std::uint64_t none_pos = static_cast<std::uint64_t>(none_at - space.recompute.begin());
    const std::uint64_t rc_stride = space.orders.size() * space.zero.size();  // candidate_at's radix
    std::unordered_map<std::uint64_t, std::pair<double, double>> feasible_none;  // index -> (peak GB, bound s)
    for (const Bound& b : order) {
      if ((b.index / rc_stride) % space.recompute.size() == none_pos) {
        feasible_none.emplace(b.index, std::pair{b.max_peak_gb, b.step_lb_s});
      }
    }
    StrategyConfig twin_st;
    auto dominated = [&](const Bound& b) {
      const std::uint64_t pos = (b.index / rc_stride) % space.recompute.size();
      if (pos == none_pos) return false;
      const std::uint64_t twin = b.index - pos * rc_stride + none_pos * rc_stride;
      double twin_peak = 0, twin_lb = 0;
      if (const auto it = feasible_none.find(twin); it != feasible_none.end()) {
        std::tie(twin_peak, twin_lb) = it->second;
      } else if (twin >= first && (twin - first) % step == 0) {
        return false;  // in this shard and not feasible (or not legal)
      } else {
        const Candidate c = candidate_at(space, twin);
        if (!make_strategy(base, model, space, c, twin_st, nullptr)) return false;
        SimulateOptions so;
        so.details = false;
        so.pipeline_cutoff_s = 0;
        const SimulationResult r = assemble(model, twin_st, sys, eff, cache.get(twin_st), so);
        const CandidateResult cr = summarize(r, c, twin, opt.use_reserved_memory);
        if (cr.max_peak_gb > capacity_gb) return false;
        twin_peak = cr.max_peak_gb;
        twin_lb = r.duration_time_per_iter_s;
      }
      return twin_peak <= b.max_peak_gb && twin_lb <= b.step_lb_s;
    };
    const auto kept = std::remove_if(order.begin(), order.end(), dominated);
    res.dominated = static_cast<std::uint64_t>(order.end() - kept);
    order.erase(kept, order.end());
  }

  // Phase B, feasible candidates in order of their bound: simulate exactly until the next bound
  // cannot beat the K-th best found (every later one is worse still). keep_all simulates all.
  std::sort(order.begin(), order.end(), [](const Bound& a, const Bound& b) {
    return a.step_lb_s != b.step_lb_s ? a.step_lb_s < b.step_lb_s : a.index < b.index;
  });
  // Without keep_all only a handful of candidates run before the bound stops the walk, so it runs
  // on one thread: the counts are then deterministic, whatever the thread count.
  std::mutex top_mu;
  std::vector<CandidateResult> global_top;
  std::atomic<double> kth{std::numeric_limits<double>::infinity()};
  auto exact = [&](WorkerState& w, std::uint64_t k) {
    thread_local StrategyConfig st;
    const Bound& b = order[k];
    if (!opt.keep_all && b.step_lb_s > kth.load()) return false;  // sorted: nothing later can enter
    const Candidate c = candidate_at(space, b.index);
    make_strategy(base, model, space, c, st, nullptr);
    SimulateOptions so;
    so.details = false;
    const SimulationResult r = assemble(model, st, sys, eff, cache.get(st), so);
    CandidateResult cr = summarize(r, c, b.index, opt.use_reserved_memory);
    carry_effective_choices(st, sys, cr);
    ++w.simulated;
    if (opt.keep_all) w.feasible.push_back(cr);
    std::lock_guard<std::mutex> lock(top_mu);
    insert_top(global_top, cr, opt.top_k);
    if (static_cast<int>(global_top.size()) >= opt.top_k) kth.store(global_top.back().step_time_s);
    return true;
  };
  if (opt.keep_all) {
    parallel_for(order.size(), exact);
  } else {
    for (std::uint64_t k = 0; k < order.size(); ++k) {
      if (!exact(states[0], k)) break;
    }
  }
  for (auto& w : states) w.top.clear();
  states[0].top = global_top;
  res.pruned = 0;

  std::vector<CandidateResult> tops;
  for (auto& w : states) {
    res.illegal += w.illegal;
    res.too_big += w.too_big;
    res.equivalent += w.equivalent;
    res.simulated += w.simulated;
    res.feasible_count += w.feasible_count;
    tops.insert(tops.end(), w.top.begin(), w.top.end());
    res.feasible.insert(res.feasible.end(), w.feasible.begin(), w.feasible.end());
    if (w.have_smallest && (!res.have_smallest || w.smallest.max_peak_gb < res.smallest.max_peak_gb ||
                            (w.smallest.max_peak_gb == res.smallest.max_peak_gb && w.smallest.index < res.smallest.index))) {
      res.smallest = w.smallest;
      res.have_smallest = true;
    }
  }
  res.top = merge_top(std::move(tops), opt.top_k);
  res.feasible_count -= res.dominated;
  res.pruned = res.feasible_count - res.simulated;
  std::sort(res.feasible.begin(), res.feasible.end(), better);
  if (res.feasible_count == 0) {
    if (res.have_smallest) {
      res.explanation = fmt::format(
          "no layout fits in {:.1f} GB{}: the smallest needs {:.1f} GB{} at {}", capacity_gb,
          opt.memory_margin_gb > 0 ? fmt::format(" ({:.1f} GB device - {:.1f} GB margin)", sys.device.memory_gb,
                                                 opt.memory_margin_gb)
                                   : "",
          res.smallest.max_peak_gb, opt.use_reserved_memory ? " with reserved memory" : "",
          describe(res.smallest.candidate, res.smallest.dp));
    } else if (res.equivalent == 0) {
      // With equivalent placements in this shard, their first order is legal in another shard.
      // The first candidate's reason says which rule (divisibility, batch, ZeRO with replicas...).
      const Candidate c = candidate_at(space, first);
      StrategyConfig st;
      std::string why;
      make_strategy(base, model, space, c, st, &why);
      const int mp = c.tp * c.pp * c.cp;
      res.explanation = fmt::format("no legal layout in the space: all {} candidates fail the layout rules (world "
                                    "size {}, global batch {}); the first, {}: {}",
                                    total, space.world_size, space.global_batch_size,
                                    describe(c, space.world_size % mp ? 0 : space.world_size / mp), why);
    }
  }
  res.elapsed_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return res;
}

}  // namespace calisim
