#include "simulator/simulate.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "core/error.h"
#include "simulator/comm_model.h"
#include "simulator/model_costs.h"
#include "simulator/op_cost.h"
#include "simulator/pipeline_schedule.h"

namespace calisim {
namespace {

std::string recompute_description(const StrategyConfig& s) {
  if (!s.recompute_active()) return "none";
  switch (s.recompute_granularity) {
    case RecomputeGranularity::full_block: return fmt::format("full_block, {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::attn_only: return fmt::format("attn_only, {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::mlp_only: return fmt::format("mlp_only, {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::sdp_only: return fmt::format("sdp_only, {} layer(s) per chunk", s.recompute_layer_num);
    case RecomputeGranularity::selective: {
      std::string parts;
      auto add = [&](bool on, const char* n) {
        if (!on) return;
        if (!parts.empty()) parts += '+';
        parts += n;
      };
      add(s.mla_rms_recompute, "input_norm");
      add(s.attn_recompute, "attn");
      add(s.mlp_rms_recompute, "mlp_norm");
      add(s.mlp_recompute, "mlp");
      return fmt::format("selective ({}), {} layer(s) per chunk", parts.empty() ? "nothing" : parts,
                         s.recompute_layer_num);
    }
    case RecomputeGranularity::none: break;
  }
  return "none";
}

constexpr double kGB = 1e9;

}  // namespace

SimulationResult simulate(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                          const EfficiencyModel& eff, const SimulateOptions& opt) {
  const ModelCosts mc = cost_model(model, st, sys, eff, opt.details);
  return assemble(model, st, sys, eff, mc, opt);
}

SimulationResult assemble(const ModelConfig& model, const StrategyConfig& st, const SystemConfig& sys,
                          const EfficiencyModel& eff, const ModelCosts& mc, const SimulateOptions& opt) {
  SimulationResult res;
  res.model_name = model.model_name;
  res.system_name = sys.name;
  res.device_name = sys.device.name;
  res.world_size = st.world_size;
  res.tp = st.tp_size;
  res.pp = st.pp_size;
  res.vpp = st.interleaving_size;
  res.cp = st.cp_size;
  res.dp = st.dp_size;
  res.micro_batch_size = st.micro_batch_size;
  res.micro_batch_num = st.micro_batch_num;
  res.global_batch_size = st.global_batch_size;
  res.seq_len = st.seq_len;
  res.sequence_parallel = st.sequence_parallel;
  res.recompute = recompute_description(st);
  res.stats = model_stats(model, st.seq_len);
  res.device_memory_bytes = sys.device.memory_bytes();
  for (const auto& f : st.not_modeled_fields) {
    res.warnings.push_back("strategy field '" + f + "' is accepted for SimuMax compatibility but not modeled");
  }
  double peak_flops;
  try {
    peak_flops = sys.device.peak_flops_per_s(st.dtype);
  } catch (const std::invalid_argument& e) {
    throw InputError(sys.name, "device.peak_tflops", e.what());
  }

  const OpCoster coster(sys, eff);
  SourceTally tally;
  tally.kernels = mc.kernels_per_source;
  std::vector<std::string> stage_keys;  // roofline keys of the per-layout collectives and optimizer
  if (opt.details) tally.roofline_keys = &stage_keys;
  if (opt.details) res.ops = mc.ops;
  const BlockCost& layer = mc.layer;
  const BlockCost& emb = mc.embedding;
  const BlockCost& head = mc.head;

  const int p = st.pp_size, v = st.interleaving_size, m = static_cast<int>(st.micro_batch_num);
  const int stages = p * v;
  const bool rc_on = st.recompute_active();

  // Per virtual stage: times and activation bytes of one micro-batch.
  std::vector<double> fwd(stages), bwd(stages), act(stages), rc_time(stages), tp_comm(stages);
  std::vector<double> fwd_tr(stages), bwd_tr(stages);
  std::vector<int> layers_rc(stages);
  bool clamped = false;
  for (int j = 0; j < stages; ++j) {
    const int n = st.layers_per_chunk[j];
    const int nr = rc_on ? std::min(st.recompute_layer_num, n) : 0;
    if (rc_on && st.recompute_layer_num > n) clamped = true;
    layers_rc[j] = nr;
    fwd[j] = n * layer.fwd_s;
    bwd[j] = n * layer.bwd_s + nr * layer.recompute_fwd_s;
    rc_time[j] = nr * layer.recompute_fwd_s;
    tp_comm[j] = n * (layer.tp_comm_fwd_s + layer.tp_comm_bwd_s);
    act[j] = (n - nr) * layer.act_bytes + nr * layer.act_bytes_recomputed;
    fwd_tr[j] = n > 0 ? layer.fwd_transient_bytes : 0.0;
    // While a recomputed layer runs backward, its recomputed activations are live again.
    bwd_tr[j] = (n > 0 ? layer.bwd_transient_bytes : 0.0) +
                (nr > 0 ? layer.act_bytes - layer.act_bytes_recomputed : 0.0);
    auto add_block = [&](const BlockCost& b) {
      fwd[j] += b.fwd_s;
      bwd[j] += b.bwd_s;
      tp_comm[j] += b.tp_comm_fwd_s + b.tp_comm_bwd_s;
      act[j] += b.act_bytes;
      fwd_tr[j] = std::max(fwd_tr[j], b.fwd_transient_bytes);
      bwd_tr[j] = std::max(bwd_tr[j], b.bwd_transient_bytes);
    };
    if (j == 0) add_block(emb);
    if (j == stages - 1) add_block(head);
  }
  if (clamped) {
    res.warnings.push_back(fmt::format("recompute_layer_num ({}) exceeds the layers of some model chunks; those chunks "
                                       "recompute all their layers",
                                       st.recompute_layer_num));
  }

  // Pipeline p2p: adjacent stages are tp·cp·dp ranks apart.
  double p2p_s = 0;
  if (p > 1) {
    const int stride = st.tp_size * st.cp_size * st.dp_size;
    CollectiveKey k{CollectiveOp::send_recv, static_cast<std::int64_t>(mc.p2p_bytes), 2,
                    ranks_per_domain(2, stride, sys.scale_up_domain_size), st.dtype};
    p2p_s = coster.collective_s(k, &tally);
  }
  PipelineSpec spec{p, v, m, fwd, bwd, act, p2p_s};
  PipelineResult pipe = simulate_pipeline(spec, opt.trace);

  // Static memory and data-parallel work per pipeline rank.
  const LayerParams lp = dense_layer_params(model);
  const double t = st.tp_size;
  const double layer_params_rank = (lp.attention + lp.mlp) / t + lp.norms;
  const double vocab_rank = static_cast<double>(model.padded_vocab(st.tp_size)) / t * model.hidden_size;
  const double pos_params = model.position_embedding_type == PositionEmbedding::learned_absolute
                                ? static_cast<double>(model.max_position_embeddings > 0 ? model.max_position_embeddings
                                                                                        : st.seq_len) *
                                      model.hidden_size
                                : 0.0;
  const double act_e = bytes_per_element(st.dtype);
  const double grad_e = st.use_fp32_accum_grad ? 4.0 : act_e;
  const double reduce_e = st.grad_reduce_in_bf16 ? 2.0 : grad_e;
  const int dp_stride = st.tp_size * st.cp_size;
  const int dp_per_domain = ranks_per_domain(st.dp_size, dp_stride, sys.scale_up_domain_size);

  res.stages.resize(p);
  double step = 0;
  double optimizer_max = 0;
  for (int r = 0; r < p; ++r) {
    StageReport& sr = res.stages[r];
    sr.rank = r;
    sr.has_embedding = r == 0;
    sr.has_head = r == p - 1;
    double params = 0, act_per_mb = 0, fwd_tr_max = 0, bwd_tr_max = 0;
    for (int c = 0; c < v; ++c) {
      const int j = c * p + r;
      sr.layers += st.layers_per_chunk[j];
      sr.recomputed_layers += layers_rc[j];
      sr.fwd_s_per_micro_batch += fwd[j];
      sr.bwd_s_per_micro_batch += bwd[j];
      sr.recompute_s_per_micro_batch += rc_time[j];
      sr.tp_comm_s_per_micro_batch += tp_comm[j];
      act_per_mb += act[j];
      fwd_tr_max = std::max(fwd_tr_max, fwd_tr[j]);
      bwd_tr_max = std::max(bwd_tr_max, bwd_tr[j]);
    }
    params = sr.layers * layer_params_rank;
    if (sr.has_embedding) params += vocab_rank + pos_params;
    if (sr.has_head) {
      params += lp.norms / 2;  // final norm
      // Untied: the LM head weight. Tied with pp > 1: the last stage keeps its own copy of the
      // word embedding, kept in sync by an all-reduce of its gradient with the first stage.
      if (model.untie_embeddings_and_output_weights || p > 1) params += vocab_rank;
    }
    sr.params = params;
    sr.weight_bytes = params * act_e;
    sr.grad_bytes = params * grad_e;
    sr.optimizer_bytes = params * 12.0 / (st.zero_state >= 1 ? st.dp_size : 1);
    sr.model_mem_bytes = sr.weight_bytes + sr.grad_bytes + sr.optimizer_bytes;

    sr.pipeline_busy_s = pipe.rank_busy_s[r];
    sr.pipeline_finish_s = pipe.rank_finish_s[r];
    sr.bubble_s = sr.pipeline_finish_s - sr.pipeline_busy_s;
    sr.bubble_fraction = sr.pipeline_finish_s > 0 ? sr.bubble_s / sr.pipeline_finish_s : 0;

    // Data-parallel gradient reduction (and ZeRO-1's parameter all-gather), exposed in full.
    if (st.dp_size > 1) {
      const double grad_bytes = params * reduce_e;
      if (st.zero_state == 0) {
        sr.dp_comm_s += coster.collective_s(
            {CollectiveOp::all_reduce, static_cast<std::int64_t>(grad_bytes), st.dp_size, dp_per_domain, st.dtype},
            &tally);
      } else {
        sr.dp_comm_s += coster.collective_s({CollectiveOp::reduce_scatter, static_cast<std::int64_t>(grad_bytes),
                                             st.dp_size, dp_per_domain, st.dtype},
                                            &tally);
        sr.dp_comm_s += coster.collective_s({CollectiveOp::all_gather, static_cast<std::int64_t>(params * act_e),
                                             st.dp_size, dp_per_domain, st.dtype},
                                            &tally);
      }
    }
    if (!model.untie_embeddings_and_output_weights && p > 1 && (sr.has_embedding || sr.has_head)) {
      const int stride = st.tp_size * st.cp_size * st.dp_size * (p - 1);
      sr.dp_comm_s += coster.collective_s({CollectiveOp::all_reduce, static_cast<std::int64_t>(vocab_rank * grad_e), 2,
                                           ranks_per_domain(2, stride, sys.scale_up_domain_size), st.dtype},
                                          &tally);
    }
    // Adam over this rank's shard: read param, grad, m, v (fp32), write param, m, v and the bf16
    // copy; the gradient-norm pass reads the grads once more.
    const double shard = params / (st.zero_state >= 1 ? st.dp_size : 1);
    sr.optimizer_s = coster.memory_s({"adam_step", static_cast<std::int64_t>(shard * (16 + 12 + act_e + 4))}, &tally);
    optimizer_max = std::max(optimizer_max, sr.optimizer_s);
    step = std::max(step, sr.pipeline_finish_s + sr.dp_comm_s);

    // Memory.
    sr.fwd_activation_cache_per_micro_batch_bytes = act_per_mb;
    sr.max_micro_batches_in_flight = pipe.max_in_flight[r];
    sr.peak_activation_mem_in_1F1B_bytes = pipe.peak_act_bytes[r];
    sr.fwd_peak_allocated_mem_bytes = sr.model_mem_bytes + sr.peak_activation_mem_in_1F1B_bytes + fwd_tr_max;
    sr.bwd_peak_allocated_mem_bytes = sr.model_mem_bytes + sr.peak_activation_mem_in_1F1B_bytes + bwd_tr_max;
    const bool bwd_peak = sr.bwd_peak_allocated_mem_bytes >= sr.fwd_peak_allocated_mem_bytes;
    sr.peak_mem_bytes = std::max(sr.fwd_peak_allocated_mem_bytes, sr.bwd_peak_allocated_mem_bytes);
    sr.peak_mem_with_reserved_bytes = sr.peak_mem_bytes / st.mem_factor;
    sr.peak_path = fmt::format(
        "{}: model {:.2f} GB (weights {:.2f} + grads {:.2f} + optimizer {:.2f}) + activations {:.2f} GB "
        "({} micro-batch chunk(s) in flight) + transient {:.2f} GB",
        bwd_peak ? "backward" : "forward", sr.model_mem_bytes / kGB, sr.weight_bytes / kGB, sr.grad_bytes / kGB,
        sr.optimizer_bytes / kGB, sr.peak_activation_mem_in_1F1B_bytes / kGB, sr.max_micro_batches_in_flight,
        (bwd_peak ? bwd_tr_max : fwd_tr_max) / kGB);
    if (sr.peak_mem_with_reserved_bytes > res.device_memory_bytes) res.fits_in_memory = false;
  }
  step += optimizer_max;
  if (!res.fits_in_memory) {
    double worst = 0;
    for (const auto& sr : res.stages) worst = std::max(worst, sr.peak_mem_with_reserved_bytes);
    res.warnings.push_back(fmt::format("does not fit: peak memory with reserved {:.1f} GB exceeds the device's {:.1f} GB",
                                       worst / kGB, res.device_memory_bytes / kGB));
  }

  // Critical stage: the one whose pipeline end plus DP communication is last.
  int crit = 0;
  for (int r = 1; r < p; ++r) {
    const auto& a = res.stages[r];
    const auto& b = res.stages[crit];
    if (a.pipeline_finish_s + a.dp_comm_s > b.pipeline_finish_s + b.dp_comm_s) crit = r;
  }
  res.critical_rank = crit;
  const StageReport& cs = res.stages[crit];
  res.duration_time_per_iter_s = step;
  double chunk = 0;
  for (const auto& sr : res.stages) chunk = std::max(chunk, sr.fwd_s_per_micro_batch + sr.bwd_s_per_micro_batch);
  res.chunk_time_s = chunk;
  res.recompute_s = cs.recompute_s_per_micro_batch * m;
  res.tp_comm_exposed_s = cs.tp_comm_s_per_micro_batch * m;
  res.compute_s = cs.pipeline_busy_s - res.recompute_s - res.tp_comm_exposed_s;
  res.pp_comm_exposed_s = 0;
  res.bubble_s = cs.bubble_s;
  res.bubble_fraction = cs.bubble_fraction;
  res.dp_comm_exposed_s = cs.dp_comm_s;
  res.optimizer_s = optimizer_max;
  if (p > 1) {
    // Send/recv sits on the critical path: the part of the stage's idle time spent waiting on
    // transfers is PP communication, the rest is the schedule's bubble.
    res.pp_comm_exposed_s = pipe.rank_p2p_wait_s[crit];
    res.bubble_s = std::max(0.0, cs.bubble_s - res.pp_comm_exposed_s);
  }

  // Throughput and FLOP metrics.
  const double world = st.world_size;
  res.all_tokens_per_iter = static_cast<double>(st.global_batch_size) * st.seq_len;
  res.tokens_per_s = res.all_tokens_per_iter / step;
  res.tokens_per_s_per_gpu = res.tokens_per_s / world;
  res.throughput_per_accelerator = res.tokens_per_s_per_gpu;
  const double denom = step * world * peak_flops;
  res.mfu = res.stats.model_flops_per_token * res.all_tokens_per_iter / denom;
  res.mfu_6nd_with_attn = res.mfu;
  res.mfu_6nd = res.stats.flops_6n_per_token * res.all_tokens_per_iter / denom;
  res.mfu_causal = res.stats.model_flops_per_token_causal * res.all_tokens_per_iter / denom;
  res.tflops_per_gpu = res.stats.model_flops_per_token * res.all_tokens_per_iter / step / world / 1e12;
  // HFU: the model FLOPs (same convention as mfu) plus the FLOPs of recomputed forwards, which
  // each TP rank executes for its 1/t share.
  double recompute_flops = 0;
  for (int j = 0; j < stages; ++j) recompute_flops += layers_rc[j] * layer.recompute_flops;
  recompute_flops *= static_cast<double>(m) * st.dp_size * st.tp_size * st.cp_size;
  res.hfu = (res.stats.model_flops_per_token * res.all_tokens_per_iter + recompute_flops) / denom;

  res.kernels_per_source = tally.kernels;
  if (opt.details) {
    std::set<std::string> uniq(mc.roofline_keys.begin(), mc.roofline_keys.end());
    uniq.insert(stage_keys.begin(), stage_keys.end());
    res.roofline_keys.assign(uniq.begin(), uniq.end());
  }
  if (opt.trace) res.events = std::move(pipe.events);
  return res;
}

}  // namespace calisim
