// The MoE block of a MoE layer, as Megatron-Core's MoELayer runs it with the all-to-all (or
// all-gather) token dispatcher, grouped GEMMs and optional shared experts (MODELING.md §1).
//
// Per rank: Tsp tokens enter (the SP shard of b·s/c; Megatron requires SP for MoE with TP > 1),
// R = Tsp·k routed copies leave it. EP ranks receive on average R tokens (each of the e ranks
// sends R/e to every rank); the busiest rank receives R·load, where load = the strategy's
// moe_token_imbalance_factor, or the capacity factor when inputs are padded to capacity
// (moe_pad_expert_input_to_capacity; then load is exactly the capacity factor and excess tokens
// are dropped). With expert TP (etp > 1) the received tokens are all-gathered over the etp ranks
// sharing the same experts, each computing 1/etp of every expert's width:
//   X = R·load·etp tokens through E/e local experts, grouped GEMM [X/(E/e), h]·[h, f_e/etp]...
// Expert FLOPs per rank are therefore R·load·6·h·f_e·(3/2 with SwiGLU), independent of e and etp.
// Collectives (S = full buffer, nccl-tests convention):
//   dispatch / combine all-to-all over e ranks, S = R·load·h·bytes (forward and backward each);
//   ETP all-gather / reduce-scatter over etp ranks, S = X·h·bytes;
//   all-gather dispatcher: all-gather then reduce-scatter of the e·Tsp tokens over the EP group.
// Layout copies: permute (Tsp in, R out), with the all-to-all dispatcher and E/e > 1 the chunk
// sort after dispatch and its inverse before combine (X tokens read and written; the same
// row-gather kernel family as the permute, so its memory kinds), unpermute.
// Flex dispatcher (DeepEP / HybridEP, simulator/flex_dispatch.h; etp 1): the tokens travel
// unpermuted, once per destination GPU; the receiving rank permutes its V deduplicated tokens into
// the X expert inputs (permute: V in, X out) and reduces them back before the combine (unpermute:
// X in, V out); no chunk sort. The exchange is priced by its own model, not as an NCCL collective.
#include <cmath>

#include "simulator/op_builders.h"

namespace calisim::ops {
namespace {

// TransformerEngine's multi-stream grouped GEMM and quantize run on this many CUDA streams
// (transformer_engine/common/util/multi_stream.cpp, nvte_get_num_compute_streams).
constexpr std::int64_t kTeComputeStreams = 4;

LayerOp grouped_linear(const Dims& d, const char* name, OpUnit unit, std::int64_t tokens, std::int64_t groups,
                       std::int64_t in, std::int64_t out, bool fp8) {
  const std::int64_t per_expert = (tokens + groups - 1) / groups;
  LayerOp op = linear(d, name, unit, per_expert, in, out, fp8);
  op.gemm_fwd.batch = op.gemm_dgrad.batch = op.gemm_wgrad.batch = groups;
  op.act_bytes *= static_cast<double>(groups);
  op.wgrad_accum_bytes *= static_cast<double>(groups);  // one weight per expert
  return op;
}

LayerOp comm_only(const char* name, OpUnit unit, CommGroup group, const CollectiveKey& fwd, const CollectiveKey& bwd,
                  double transient_bytes) {
  LayerOp op = memory_op(name, unit, "none", 0, "none", 0, 0.0);
  op.comm_group = group;
  op.fwd_comm = fwd;
  op.bwd_comm = bwd;
  op.transient_bytes = transient_bytes;
  return op;
}

}  // namespace

// The EP and ETP groups' domain occupancy comes with d (rank_placement.h), not from the domain size.
void add_moe_mlp(const Dims& d, const ModelConfig& m, const StrategyConfig& st, int /*scale_up_domain_size*/,
                 std::vector<LayerOp>& ops) {
  const std::int64_t E = m.expert_num, k = m.topk, ep = st.ep_size, etp = st.etp_size;
  const std::int64_t local_experts = E / ep;
  const std::int64_t fe = m.moe_ffn_hidden_size / etp;
  const double load = m.moe_pad_expert_input_to_capacity ? m.capacity : st.moe_token_imbalance_factor;
  const double R = static_cast<double>(d.Tsp) * k;
  const double received = R * load;  // routed tokens arriving at the busiest EP rank
  const auto X = static_cast<std::int64_t>(std::ceil(received * etp));
  const double tok = static_cast<double>(d.h) * d.e;  // bytes of one token's hidden state
  const bool fp8 = d.fp8 != Fp8Recipe::none;
  const int ep_per_domain = d.ep_per_domain;
  const int etp_per_domain = d.etp_per_domain;

  // Router GEMM (replicated over TP, fp32 logits kept small) and top-k with softmax: reads the
  // E logits, writes the probabilities and indices; keeps the fp32 probabilities for backward.
  ops.push_back(linear(d, "router", OpUnit::router, d.Tsp, d.h, E, false));
  ops.back().alias_of = OpUnit::post_norm;  // it saves the pre-MLP norm's output
  ops.back().alias_bytes = ops.back().act_bytes;
  {
    const double logits = static_cast<double>(d.Tsp) * E * 4.0;
    ops.push_back(memory_op("router_topk", OpUnit::router, "topk_softmax_fwd", 2 * logits + R * 8, "topk_softmax_bwd",
                            3 * logits, logits));
  }
  const double probs = st.dispatch_probs ? received * 4.0 : 0.0;  // fp32 prob per routed token
  const bool flex = st.moe_dispatcher == MoeDispatcher::flex;
  const FlexExchange fx = flex ? flex_exchange(static_cast<double>(d.Tsp), tok, E, k, static_cast<int>(ep),
                                               ep_per_domain, load)
                               : FlexExchange{};
  const double V = fx.received_tokens;  // flex: deduplicated tokens arriving at the busiest rank
  // Layout copies: the all-to-all / all-gather dispatchers permute the Tsp entering tokens into R
  // routed copies before the dispatch; flex permutes the V received tokens into the X expert
  // inputs after it. Permute keeps its int32 row map; the un-permutation (the probability-weighted
  // sum of the expert outputs) keeps the outputs for the probabilities' gradient unless the
  // probabilities travelled with the tokens (dispatch_probs, applied in the expert activation).
  const double in = flex ? V : static_cast<double>(d.Tsp), out = flex ? static_cast<double>(X) : R;
  auto permute = [&] {
    ops.push_back(memory_op("permute", OpUnit::moe_dispatch, "permute_fwd", (in + out) * tok, "permute_bwd",
                            (out + in) * tok, out * 4.0));
  };
  auto unpermute = [&] {
    ops.push_back(memory_op("unpermute", OpUnit::moe_dispatch, "unpermute_fwd", (out + in) * tok, "unpermute_bwd",
                            (in + 2 * out) * tok, st.dispatch_probs ? 0.0 : out * tok));
  };
  // Dispatch (forward: tokens out; backward: their gradients back) and combine, its mirror.
  auto ep_exchange = [&](const char* name, bool dispatch) {
    if (flex) {  // not an NCCL collective: op_cost prices LayerOp::flex
      LayerOp op = memory_op(name, OpUnit::moe_dispatch, "none", 0, "none", 0, 0.0);
      op.comm_group = CommGroup::ep;
      op.transient_bytes = V * tok;
      if (ep > 1) op.flex = fx;
      ops.push_back(op);
      return;
    }
    if (st.moe_dispatcher == MoeDispatcher::all_to_all) {
      const CollectiveKey a2a = collective(CollectiveOp::all_to_all, received * tok + (dispatch ? probs : 0.0),
                                           static_cast<int>(ep), ep_per_domain, d.dtype);
      ops.push_back(comm_only(name, OpUnit::moe_dispatch, CommGroup::ep, a2a, a2a, (dispatch ? received : R) * tok));
      return;
    }
    const double all = static_cast<double>(d.Tsp) * ep * tok;
    const CollectiveKey ag = collective(CollectiveOp::all_gather, all, static_cast<int>(ep), ep_per_domain, d.dtype);
    CollectiveKey rs = ag;
    rs.op = CollectiveOp::reduce_scatter;
    ops.push_back(comm_only(name, OpUnit::moe_dispatch, CommGroup::ep, dispatch ? ag : rs, dispatch ? rs : ag, all));
  };
  if (flex) {
    ep_exchange("ep_dispatch", true);
    permute();
  } else {
    permute();
    ep_exchange("ep_dispatch", true);
  }
  // ETP: gather the received tokens in forward (reduce-scatter their gradient in backward), and
  // the mirror after the experts.
  auto etp_pair = [&](const char* name, CollectiveOp fwd, CollectiveOp bwd) {
    if (etp <= 1) return;
    const double all = static_cast<double>(X) * tok;
    ops.push_back(comm_only(name, OpUnit::moe_dispatch, CommGroup::ep,
                            collective(fwd, all, static_cast<int>(etp), etp_per_domain, d.dtype),
                            collective(bwd, all, static_cast<int>(etp), etp_per_domain, d.dtype), all));
  };
  etp_pair("etp_gather", CollectiveOp::all_gather, CollectiveOp::reduce_scatter);
  // Megatron's all-to-all dispatcher receives the tokens chunked by (source rank, local expert)
  // and, with several local experts, regroups them by expert ("permutation 2",
  // sort_chunks_by_idxs) before the grouped GEMM, and restores the order before the combine:
  // one read and one write of the X tokens each way, forward and backward.
  const bool sort_chunks = st.moe_dispatcher == MoeDispatcher::all_to_all && local_experts > 1;
  const double sorted_bytes = 2.0 * static_cast<double>(X) * tok;
  if (sort_chunks) {
    ops.push_back(memory_op("sort_chunks", OpUnit::moe_dispatch, "permute_fwd", sorted_bytes, "permute_bwd",
                            sorted_bytes, 0.0));
  }
  // The experts' GEMM kernels in series: TransformerEngine's GroupedLinear spreads one kernel per
  // local expert over its compute streams; SequentialMLP runs them one after another.
  const int serial_kernels =
      static_cast<int>(st.moe_grouped_gemm ? (local_experts + kTeComputeStreams - 1) / kTeComputeStreams
                                           : local_experts);
  LayerOp fc1 = grouped_linear(d, "expert_fc1", OpUnit::expert, X, local_experts, d.h, m.use_swiglu ? 2 * fe : fe, fp8);
  fc1.gemm_serial_kernels = serial_kernels;
  push_gemm(d, ops, std::move(fc1), "expert_fc1_fp8_cast");
  {
    const double y = static_cast<double>(X) * fe * d.e;
    const double x = m.use_swiglu ? 2 * y : y;
    ops.push_back(memory_op("expert_activation", OpUnit::expert_act, m.use_swiglu ? "swiglu_fwd" : "gelu_fwd", x + y,
                            m.use_swiglu ? "swiglu_bwd" : "gelu_bwd", 2 * x + y, x));
  }
  LayerOp fc2 = grouped_linear(d, "expert_fc2", OpUnit::expert, X, local_experts, fe, d.h, fp8);
  fc2.gemm_serial_kernels = serial_kernels;
  push_gemm(d, ops, std::move(fc2), "expert_fc2_fp8_cast");
  ops.back().alias_of = OpUnit::expert_act;  // it saves the activation's output
  ops.back().alias_bytes = ops.back().act_bytes;
  etp_pair("etp_reduce_scatter", CollectiveOp::reduce_scatter, CollectiveOp::all_gather);
  if (sort_chunks) {
    ops.push_back(memory_op("unsort_chunks", OpUnit::moe_dispatch, "permute_fwd", sorted_bytes, "permute_bwd",
                            sorted_bytes, 0.0));
  }
  if (flex) {  // the local experts' sum per received token, then the combine reduces across ranks
    unpermute();
    ep_exchange("ep_combine", false);
  } else {
    ep_exchange("ep_combine", false);
    unpermute();
  }
  if (m.moe_shared_expert_intermediate_size > 0) {
    const std::size_t first = ops.size();
    add_dense_mlp(d, m, st, m.moe_shared_expert_intermediate_size, OpUnit::shared_expert, kSharedExpertNames, ops);
    // The shared experts' first linear layer saves the pre-MLP norm's output too.
    for (std::size_t i = first; i < ops.size(); ++i) {
      if (ops[i].kind != OpKind::gemm) continue;
      ops[i].alias_of = OpUnit::post_norm;
      ops[i].alias_bytes = ops[i].act_bytes;
      break;
    }
  }
}

}  // namespace calisim::ops
