#include "calibration/trace_comparison.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <string_view>
#include <utility>

#include "calibration/efficiency_scale.h"
#include "core/error.h"
#include "profiler/kernel_class.h"
#include "simulator/rank_placement.h"

namespace calisim::calibration {
namespace {

using Interval = std::pair<std::uint64_t, std::uint64_t>;

// The union of intervals as disjoint segments, in time order.
std::vector<Interval> merged(std::vector<Interval> v) {
  std::sort(v.begin(), v.end());
  std::vector<Interval> out;
  for (const auto& iv : v) {
    if (out.empty() || iv.first > out.back().second) out.push_back(iv);
    else out.back().second = std::max(out.back().second, iv.second);
  }
  return out;
}

// Total length of the union of intervals (ns).
std::uint64_t union_ns(std::vector<Interval> v) {
  std::uint64_t total = 0;
  for (const auto& [s, e] : merged(std::move(v))) total += e - s;
  return total;
}

bool in_profiler_step(const db::TraceKernel& k) { return k.nvtx_range.starts_with(db::kProfilerStepPrefix); }

constexpr std::uint64_t kShortGapNs = 20'000;  // TraceStepStats::short_gap_s

bool is_compute(std::string_view c) { return c == "gemm" || c == "attention" || c == "elementwise" || c == "other"; }
bool is_copy(std::string_view c) { return c == "memcpy" || c == "memset"; }

double* nccl_bucket(TraceStepStats& s, std::string_view name) {
  switch (profiler::nccl_collective(name)) {
    case profiler::NcclCollective::all_reduce: return &s.nccl_all_reduce_s;
    case profiler::NcclCollective::all_gather: return &s.nccl_all_gather_s;
    case profiler::NcclCollective::reduce_scatter: return &s.nccl_reduce_scatter_s;
    case profiler::NcclCollective::send_recv: return &s.nccl_send_recv_s;
    case profiler::NcclCollective::other: break;
  }
  return &s.nccl_other_s;
}

// One step's figures (seconds), not yet averaged.
TraceStepStats measure(const std::vector<const db::TraceKernel*>& recs) {
  TraceStepStats s;
  if (recs.empty()) return s;
  std::uint64_t first = recs.front()->start_ns, last = recs.front()->end_ns;
  std::vector<Interval> compute, compute_comm, all;
  for (const db::TraceKernel* k : recs) {
    first = std::min(first, k->start_ns);
    last = std::max(last, k->end_ns);
    const double d = k->duration_s();
    const std::string& c = k->kernel_class;
    // A copy from one GPU to another is communication: TransformerEngine's userbuffers in their
    // copy-engine mode and PyTorch's async tensor parallelism move TP data this way.
    const bool peer = c == "memcpy" && k->copy_kind == "PtoP";
    if (c == "gemm") s.gemm_s += d;
    else if (c == "attention") {
      s.attention_s += d;
      if (profiler::is_attention_backward(k->name)) s.attention_bwd_s += d;
    }
    else if (c == "elementwise") s.elementwise_s += d;
    else if (c == "nccl") {
      s.nccl_s += d;
      *nccl_bucket(s, k->name) += d;
    }
    else if (peer) {
      s.nccl_s += d;
      s.peer_copy_s += d;
    }
    else if (is_copy(c)) s.copy_s += d;
    else s.other_s += d;
    const Interval iv{k->start_ns, k->end_ns};
    all.push_back(iv);
    if (is_compute(c)) compute.push_back(iv);
    if (is_compute(c) || c == "nccl" || peer) compute_comm.push_back(iv);
  }
  // Busy segments (anything running); the gaps between them are the idle time: short ones the
  // launch / dispatch gaps between kernels that follow each other, long ones the GPU waiting
  // (bubble, host-bound phases, peers).
  const std::vector<Interval> busy = merged(std::move(all));
  std::uint64_t u_all = 0;
  for (const auto& [b, e] : busy) u_all += e - b;
  const std::uint64_t u_compute = union_ns(std::move(compute)), u_cc = union_ns(std::move(compute_comm));
  for (std::size_t i = 1; i < busy.size(); ++i) {
    const std::uint64_t gap = busy[i].first - busy[i - 1].second;
    if (gap < kShortGapNs) {
      s.short_gap_s += static_cast<double>(gap) * 1e-9;
      s.short_gaps += 1;
    }
  }
  s.span_s = static_cast<double>(last - first) * 1e-9;
  s.compute_busy_s = static_cast<double>(u_compute) * 1e-9;
  s.comm_only_s = static_cast<double>(u_cc - u_compute) * 1e-9;
  s.copy_only_s = static_cast<double>(u_all - u_cc) * 1e-9;
  s.idle_s = static_cast<double>(last - first - u_all) * 1e-9;
  s.long_idle_s = std::max(0.0, s.idle_s - s.short_gap_s);
  return s;
}

void accumulate(TraceStepStats& sum, const TraceStepStats& x, double w) {
  sum.span_s += w * x.span_s;
  sum.gemm_s += w * x.gemm_s;
  sum.attention_s += w * x.attention_s;
  sum.attention_bwd_s += w * x.attention_bwd_s;
  sum.nccl_all_reduce_s += w * x.nccl_all_reduce_s;
  sum.nccl_all_gather_s += w * x.nccl_all_gather_s;
  sum.nccl_reduce_scatter_s += w * x.nccl_reduce_scatter_s;
  sum.nccl_send_recv_s += w * x.nccl_send_recv_s;
  sum.nccl_other_s += w * x.nccl_other_s;
  sum.peer_copy_s += w * x.peer_copy_s;
  sum.elementwise_s += w * x.elementwise_s;
  sum.other_s += w * x.other_s;
  sum.nccl_s += w * x.nccl_s;
  sum.copy_s += w * x.copy_s;
  sum.compute_busy_s += w * x.compute_busy_s;
  sum.comm_only_s += w * x.comm_only_s;
  sum.copy_only_s += w * x.copy_only_s;
  sum.idle_s += w * x.idle_s;
  sum.short_gap_s += w * x.short_gap_s;
  sum.short_gaps += w * x.short_gaps;
  sum.long_idle_s += w * x.long_idle_s;
}


}  // namespace

TraceStepStats trace_step_stats(const std::vector<db::TraceKernel>& records, int steps_if_unnamed) {
  std::map<std::string, std::vector<const db::TraceKernel*>> steps;
  std::int64_t outside = 0;
  for (const db::TraceKernel& k : records) {
    if (in_profiler_step(k)) {
      steps[k.nvtx_range].push_back(&k);
    } else {
      ++outside;
    }
  }
  TraceStepStats out;
  if (!steps.empty()) {
    // Steps in time order (names sort "#10" before "#9").
    struct Step {
      std::uint64_t start;
      const std::string* name;
      const std::vector<const db::TraceKernel*>* recs;
    };
    std::vector<Step> order;
    for (const auto& [name, recs] : steps) order.push_back({recs.front()->start_ns, &name, &recs});
    std::sort(order.begin(), order.end(), [](const Step& a, const Step& b) { return a.start < b.start; });
    for (const Step& st : order) {
      const TraceStepStats one = measure(*st.recs);
      accumulate(out, one, 1.0 / static_cast<double>(order.size()));
      out.span_min_s = &st == &order.front() ? one.span_s : std::min(out.span_min_s, one.span_s);
      out.span_max_s = std::max(out.span_max_s, one.span_s);
    }
    out.steps = static_cast<int>(order.size());
    out.steps_text = order.size() == 1 ? *order.front().name
                                       : fmt::format("{} .. {} ({} steps)", *order.front().name,
                                                     *order.back().name, out.steps);
    out.outside_steps = outside;
    out.from_step_ranges = true;
    return out;
  }
  if (steps_if_unnamed < 1) {
    throw InputError("<command line>", "--trace-steps",
                     "the trace has no ProfilerStep ranges: say how many training steps it holds (N >= 1)");
  }
  std::vector<const db::TraceKernel*> all;
  all.reserve(records.size());
  for (const db::TraceKernel& k : records) all.push_back(&k);
  accumulate(out, measure(all), 1.0 / steps_if_unnamed);
  out.span_min_s = out.span_max_s = out.span_s;  // one span for all the steps: no spread to tell
  out.steps = steps_if_unnamed;
  out.steps_text = fmt::format("whole trace as {} step{}", steps_if_unnamed, steps_if_unnamed > 1 ? "s" : "");
  return out;
}

SimulatedStepClasses simulated_step_classes(const SimulationResult& r, int stage) {
  if (stage < 0 || stage >= static_cast<int>(r.stages.size())) {
    throw InputError("<command line>", "--trace-stage",
                     fmt::format("expected a pipeline stage from 0 to {}, got {}", r.stages.size() - 1, stage));
  }
  if (r.ops.empty()) throw std::invalid_argument("simulated_step_classes: the result has no op table");
  const StageReport& s = r.stages[stage];
  const double m = static_cast<double>(r.micro_batch_num);
  SimulatedStepClasses out;
  out.stage = stage;
  out.step_s = r.duration_time_per_iter_s;
  const double dense_layers = s.layers - s.moe_layers;
  // Recomputed layers, split between dense and MoE layers in proportion (the op table has one
  // instance of each block; which layers recompute is per chunk).
  const double rc_share = s.layers > 0 ? static_cast<double>(s.recomputed_layers) / s.layers : 0.0;
  double gemm = 0, attention = 0, memory = 0, attention_bwd = 0;
  for (const OpReport& o : r.ops) {
    double n = 0;
    if (o.scope == "layer") n = dense_layers;
    else if (o.scope == "moe_layer") n = s.moe_layers;
    else if (o.scope == "embedding") n = s.has_embedding ? 1 : 0;
    else if (o.scope == "head") n = s.has_head ? 1 : 0;
    else if (o.scope == "mtp") n = s.mtp_layers;
    const bool in_layer = o.scope == "layer" || o.scope == "moe_layer";
    const double rc = o.recomputed && in_layer ? n * rc_share * o.fwd_s : 0.0;
    const double t = n * (o.fwd_s + o.bwd_s) + rc;
    if (o.kind == "gemm") gemm += t;
    else if (o.kind == "attention") {
      attention += t;
      attention_bwd += n * o.bwd_s;
    }
    else memory += t;
  }
  // The stage's own compute per micro-batch (what its schedule ran): forward and backward with
  // recompute, less what they include that is not a kernel of this rank's compute stream.
  const double stage_compute = s.fwd_s_per_micro_batch + s.bwd_s_per_micro_batch - s.tp_comm_s_per_micro_batch -
                               s.cp_comm_s_per_micro_batch - s.ep_comm_s_per_micro_batch -
                               s.dp_comm_s_per_micro_batch - s.offload_s_per_micro_batch -
                               s.p2p_blocking_s_per_micro_batch - s.host_exposed_s_per_micro_batch;
  // The op table lists one instance of each op; where a stage's instances differ from that
  // (windowed and full attention layers, MTP depths, full recompute of every op) the split by
  // class is kept and its total set to the stage's.
  const double ops_total = gemm + attention + memory;
  out.class_split_scale = ops_total > 0 ? std::max(0.0, stage_compute) / ops_total : 1.0;
  out.gemm_s = m * gemm * out.class_split_scale;
  out.attention_s = m * attention * out.class_split_scale;
  out.attention_bwd_s = m * attention_bwd * out.class_split_scale;
  out.memory_s = m * memory * out.class_split_scale;
  out.optimizer_s = s.optimizer_s;
  out.compute_busy_s = out.gemm_s + out.attention_s + out.memory_s + out.optimizer_s;
  out.comm_exposed_s = m * (s.tp_comm_s_per_micro_batch + s.cp_comm_s_per_micro_batch + s.ep_comm_s_per_micro_batch +
                            s.dp_comm_s_per_micro_batch + s.p2p_blocking_s_per_micro_batch) +
                       s.dp_comm_s;
  out.idle_s = std::max(0.0, out.step_s - out.compute_busy_s - out.comm_exposed_s);
  return out;
}

int pipeline_stage_of_rank(const SimulationResult& r, int rank) {
  if (rank < 0 || rank >= r.world_size) {
    throw InputError("<command line>", "--trace-rank",
                     fmt::format("expected a rank from 0 to {} of this layout's {} GPUs, got {}", r.world_size - 1,
                                 r.world_size, rank));
  }
  return rank_coordinate(r.rank_order, {r.tp, r.cp, 1, r.dp, r.pp}, ParallelDim::pp, rank);
}

std::vector<TopKernel> top_kernels(const std::vector<db::TraceKernel>& records, const TraceStepStats& stats,
                                   std::size_t n) {
  // Without named steps the whole trace counts (trace_step_stats divided it into stats.steps).
  const bool named = std::any_of(records.begin(), records.end(), in_profiler_step);
  std::map<std::pair<std::string, std::string>, std::pair<double, std::int64_t>> by_name;
  for (const db::TraceKernel& k : records) {
    if (named && !in_profiler_step(k)) continue;
    auto& [time, calls] = by_name[{k.name, k.kernel_class}];
    time += k.duration_s();
    ++calls;
  }
  std::vector<TopKernel> out;
  const double steps = std::max(1, stats.steps);
  for (const auto& [key, v] : by_name) {
    out.push_back({key.first, key.second, v.first / steps, static_cast<double>(v.second) / steps});
  }
  std::sort(out.begin(), out.end(), [](const TopKernel& a, const TopKernel& b) {
    return a.per_step_s != b.per_step_s ? a.per_step_s > b.per_step_s : a.name < b.name;
  });
  if (out.size() > n) out.resize(n);
  return out;
}

std::vector<ComparisonRow> compare_trace(const TraceStepStats& t, const SimulatedStepClasses& s) {
  std::vector<ComparisonRow> rows;
  rows.push_back({"step (GPU span)", t.span_s, s.step_s});
  rows.push_back({"GEMM kernels", t.gemm_s, s.gemm_s});
  rows.push_back({"attention kernels", t.attention_s, s.attention_s});
  rows.push_back({"  of which backward", t.attention_bwd_s, s.attention_bwd_s});
  rows.push_back({"memory-bound kernels (elementwise + other; optimizer)", t.elementwise_s + t.other_s,
                  s.memory_s + s.optimizer_s});
  rows.push_back({"copies / memsets", t.copy_s, 0.0, false});
  rows.push_back({"communication (NCCL, userbuffers, DeepEP kernels; peer copies; summed)", t.nccl_s, 0.0, false});
  const std::pair<const char*, double> collectives[] = {{"  all-reduce", t.nccl_all_reduce_s},
                                                        {"  all-gather", t.nccl_all_gather_s},
                                                        {"  reduce-scatter", t.nccl_reduce_scatter_s},
                                                        {"  send / recv (pipeline, all-to-all)", t.nccl_send_recv_s},
                                                        {"  other collectives", t.nccl_other_s},
                                                        {"  peer-to-peer copies (copy engine)", t.peer_copy_s}};
  for (const auto& [label, traced] : collectives) {
    if (traced > 0) rows.push_back({label, traced, 0.0, false});
  }
  rows.push_back({"compute busy (union of compute kernels)", t.compute_busy_s, s.compute_busy_s});
  rows.push_back({"communication only (exposed)", t.comm_only_s, s.comm_exposed_s});
  rows.push_back({"copies only", t.copy_only_s, 0.0, false});
  rows.push_back({"idle (nothing on the GPU: bubble, host, waits)", t.idle_s, s.idle_s});
  const double mean_gap_us = t.short_gaps > 0 ? t.short_gap_s / t.short_gaps * 1e6 : 0.0;
  rows.push_back({fmt::format("  of which gaps under 20 us ({:.0f} per step, {:.1f} us each)", t.short_gaps,
                              mean_gap_us),
                  t.short_gap_s, 0.0, false});
  rows.push_back({"  of which longer waits", t.long_idle_s, 0.0, false});
  return rows;
}

TraceFit fit_to_trace(const TraceStepStats& t, const SimulatedStepClasses& s) {
  TraceFit f;
  auto factor = [&f](double traced_s, double simulated_s, const char* name) {
    if (traced_s > 0 && simulated_s > 0) return simulated_s / traced_s;
    f.unfitted.emplace_back(name);
    return 1.0;
  };
  f.matmul = factor(t.gemm_s, s.gemm_s, "GEMM");
  f.attention = factor(t.attention_s, s.attention_s, "attention");
  f.memory = factor(t.elementwise_s + t.other_s, s.memory_s + s.optimizer_s, "memory-bound");
  return f;
}

nlohmann::ordered_json apply_trace_fit(nlohmann::ordered_json doc, const TraceFit& f, std::vector<std::string>* capped) {
  EfficiencyScale s;
  s.matmul = f.matmul;
  s.attention = f.attention;
  s.memory = f.memory;
  return scale_efficiencies(std::move(doc), s, capped);
}

}  // namespace calisim::calibration
