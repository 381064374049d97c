#include "simulator/data_parallel.h"

#include <algorithm>

#include "simulator/rank_placement.h"

namespace calisim {

namespace {

// A group of `ranks` of which `per_block` share a block, split into `replicas` replicas of
// consecutive group members: members of one replica in a block, and ranks holding the same shard
// (one per replica, `ranks / replicas` apart) in a block. A block holds leading group members
// (rank_placement.h), so a replica fills it before the next one starts.
struct Split {
  int shard_per_block, replicas_per_block;
};
Split split(int ranks, int per_block, int replicas) {
  const int shard = ranks / replicas;
  return {std::min(shard, per_block), std::clamp(per_block / shard, 1, replicas)};
}

}  // namespace

DpGroups dp_groups(const StrategyConfig& st, int domain, int pcie_switch_gpus) {
  DpGroups g;
  const RankPlacement placed = place_ranks(st, domain);
  const int r = std::max(1, st.dp_replicate_size);
  const int dense = st.dp_size * st.cp_size, expert = st.edp_size;
  // validate_layout makes both groups divisible for a MoE model; a dense model's expert group (1
  // rank, no parameters) stays whole.
  const int re = expert % r == 0 ? r : 1;
  g.dense_ranks = dense / r;
  g.dense_replicas = r;
  const Split d = split(dense, placed.dense_dp, r);
  g.dense_per_domain = d.shard_per_block;
  g.dense_replicas_per_domain = d.replicas_per_block;
  g.expert_ranks = expert / re;
  g.expert_replicas = re;
  const Split e = split(expert, placed.expert_dp, re);
  g.expert_per_domain = e.shard_per_block;
  g.expert_replicas_per_domain = e.replicas_per_block;
  if (pcie_switch_gpus > 0) {
    const RankPlacement switched = place_ranks(st, pcie_switch_gpus);
    const Split ds = split(dense, switched.dense_dp, r), es = split(expert, switched.expert_dp, re);
    g.dense_per_switch = ds.shard_per_block;
    g.dense_replicas_per_switch = ds.replicas_per_block;
    g.expert_per_switch = es.shard_per_block;
    g.expert_replicas_per_switch = es.replicas_per_block;
  }
  return g;
}

double optimizer_shard_params(const RankParams& p, const StrategyConfig& st, const DpGroups& g) {
  if (st.zero_state == 0) return p.total();
  return p.dense / g.dense_ranks + p.expert / g.expert_ranks;
}

OptimizerStepBytes optimizer_step_bytes(double shard, double grad_buffer_bytes, const StrategyConfig& st) {
  OptimizerStepBytes b;
  const double e = bytes_per_element(st.dtype);
  if (!st.use_precision_aware_optimizer) {
    b.adam_bytes = shard * (16.0 + 12.0 + 4.0 + 4.0 + e);
  } else {
    // TE FusedAdam: reads and writes master and moments in their dtypes, reads the main gradient,
    // writes the model weight itself (no separate copy); with stored remainders the master is
    // rebuilt from the model weight, which it also reads. Plus the gradient-norm pass over the
    // main gradient, and a cast of the buffer's shard when the two gradient dtypes differ.
    const double state = st.optimizer_state_bytes();
    const double g = bytes_per_element(st.main_grads_dtype);
    const double buffer_e = st.use_fp32_accum_grad ? 4.0 : e;
    const double cast = buffer_e != g ? buffer_e + g : 0.0;
    b.adam_bytes = shard * (2 * state + g + g + e + (st.stores_param_remainders() ? e : 0.0) + cast);
  }
  const double passes = 2.0 + (st.dp_size * st.cp_size > 1 ? 2.0 : 0.0);
  b.grad_buffer_bytes = grad_buffer_bytes * passes;
  return b;
}

int param_gather_passes(const RankParams& p, const StrategyConfig& st) {
  const bool chained = st.moe_double_param_gather && p.expert > 0 && p.dense > 0;
  return chained && !st.overlap_param_gather && (st.zero_state == 1 || st.zero_state == 2) ? 2 : 1;
}

double bucket_params(const StrategyConfig& st) {
  return st.bucket_size > 0 ? static_cast<double>(st.bucket_size) : std::max(4e7, 1e6 * st.dp_size);
}

StaticMemory static_memory(const RankParams& p, const RankParams& fp8, double largest_layer, double bucket,
                           const StrategyConfig& st, const DpGroups& g) {
  StaticMemory m;
  const double e = bytes_per_element(st.dtype);
  const double grad_e = st.use_fp32_accum_grad ? 4.0 : e;
  const double shard = p.dense / g.dense_ranks + p.expert / g.expert_ranks;
  const double total = p.total(), fp8_total = st.fp8_enabled() ? std::min(fp8.total(), total) : 0.0;
  // Bytes of the model copy per parameter, averaged over FP8-layer and other parameters.
  const double fp8_e = st.fp8_param_gather ? 1.0 : e;
  const double mean_e = total > 0 ? ((total - fp8_total) * e + fp8_total * fp8_e) / total : e;
  // ZeRO-3 keeps its shard plus the layer being run and the prefetched next one, gathered.
  m.weight_bytes = (st.zero_state >= 3 ? shard + std::min(total, 2 * largest_layer) : total) * mean_e;
  // TransformerEngine caches FP8 copies of an FP8 layer's weights across micro-batches: row-wise
  // and column-wise (transposed), 2 bytes per parameter; with FP8 parameters the row-wise copy is
  // the parameter itself, so 1 byte.
  const double cache_e = st.fp8_impl == Fp8Implementation::torchao ? 0.0 : st.fp8_param_gather ? 1.0 : 2.0;
  m.weight_bytes += cache_e * (st.zero_state >= 3 ? std::min(fp8_total, 2 * largest_layer) : fp8_total);
  // ZeRO-2/3 keep their gradient shard plus one bucket of unreduced gradients.
  m.grad_bytes = (st.zero_state >= 2 ? shard + std::min(p.total(), bucket) : p.total()) * grad_e;
  const double opt_params = st.zero_state >= 1 ? shard : p.total();
  const double on_device = st.optimizer_cpu_offload ? 1.0 - st.optimizer_offload_fraction : 1.0;
  m.optimizer_bytes = opt_params * st.optimizer_state_bytes() * on_device;
  return m;
}

namespace {

double over_groups(const RankParams& p, double bytes_per_param, CollectiveOp op, const StrategyConfig& st,
                   const DpGroups& g, const OpCoster& coster, SourceTally* tally) {
  double t = 0;
  if (p.dense > 0 && g.dense_ranks > 1) {
    t += coster.collective_s({op, static_cast<std::int64_t>(p.dense * bytes_per_param), g.dense_ranks,
                              g.dense_per_domain, st.dtype},
                             tally, g.dense_per_switch);
  }
  if (p.expert > 0 && g.expert_ranks > 1) {
    t += coster.collective_s({op, static_cast<std::int64_t>(p.expert * bytes_per_param), g.expert_ranks,
                              g.expert_per_domain, st.dtype},
                             tally, g.expert_per_switch);
  }
  return t;
}

// Hybrid sharding's second level as over_groups sees a level: the groups of ranks holding the
// same shard (one per replica) and each rank's shard of the parameters.
DpGroups replica_groups(const DpGroups& g) {
  DpGroups r;
  r.dense_ranks = g.dense_replicas;
  r.dense_per_domain = g.dense_replicas_per_domain;
  r.dense_per_switch = g.dense_replicas_per_switch;
  r.expert_ranks = g.expert_replicas;
  r.expert_per_domain = g.expert_replicas_per_domain;
  r.expert_per_switch = g.expert_replicas_per_switch;
  return r;
}
RankParams shard_of(const RankParams& p, const DpGroups& g) { return {p.dense / g.dense_ranks, p.expert / g.expert_ranks}; }

}  // namespace

double grad_reduce_s(const RankParams& p, const StrategyConfig& st, const DpGroups& g, const OpCoster& coster,
                     SourceTally* tally) {
  const double e = bytes_per_element(st.dtype);
  const double reduce_e = st.grad_reduce_in_bf16 ? 2.0 : (st.use_fp32_accum_grad ? 4.0 : e);
  const CollectiveOp op = st.zero_state == 0 ? CollectiveOp::all_reduce : CollectiveOp::reduce_scatter;
  // Hybrid sharding: each replica's reduced shard then all-reduces with the same shard of the
  // others (over_groups skips a level of one replica).
  return over_groups(p, reduce_e, op, st, g, coster, tally) +
         over_groups(shard_of(p, g), reduce_e, CollectiveOp::all_reduce, st, replica_groups(g), coster, tally);
}

double param_gather_s(const RankParams& p, const RankParams& fp8_p, const StrategyConfig& st, const DpGroups& g,
                      const OpCoster& coster, SourceTally* tally) {
  const double e = bytes_per_element(st.dtype);
  if (!st.fp8_param_gather || fp8_p.total() <= 0) return over_groups(p, e, CollectiveOp::all_gather, st, g, coster, tally);
  // One bucketed gather per group: its bytes are e per parameter, 1 per FP8 parameter. over_groups
  // takes bytes per parameter, so each group gets its own mean.
  auto mean = [e](double n, double n8) { return n > 0 ? (e * (n - std::min(n8, n)) + std::min(n8, n)) / n : e; };
  return over_groups({p.dense, 0.0}, mean(p.dense, fp8_p.dense), CollectiveOp::all_gather, st, g, coster, tally) +
         over_groups({0.0, p.expert}, mean(p.expert, fp8_p.expert), CollectiveOp::all_gather, st, g, coster, tally);
}

}  // namespace calisim
