#include "simulator/host_dispatch.h"

#include <algorithm>
#include <cstring>

namespace calisim {
namespace {

// Ops issued once per local expert: the routed experts' GEMMs, their FP8 casts (TE quantizes each
// expert's slice) and, without grouped GEMM, their activations (SequentialMLP runs each expert's
// MLP in turn).
bool per_expert(const LayerOp& op) { return op.unit == OpUnit::expert || op.unit == OpUnit::expert_act; }

// Host time of `count` back-to-back issues of one op that is per-expert or not.
double issue_s(const LayerOp& op, const HostDispatchSettings& s, int count) {
  if (count <= 0) return 0;
  double one = s.op_dispatch_s;
  if (per_expert(op) && s.local_experts > 1) {
    const bool expert_gemm = op.unit == OpUnit::expert && op.kind == OpKind::gemm;
    if (!s.grouped_gemm) {
      // SequentialMLP: a Python op per expert; its GEMMs submit the same library call each.
      one = s.local_experts * (s.op_dispatch_s + (expert_gemm ? s.expert_gemm_s : 0.0));
    } else if (op.unit == OpUnit::expert) {
      // TE GroupedLinear: one Python op, one library GEMM submission per local expert; its FP8
      // multi-quantize: one Python op, and per local expert the output tensors' allocations
      // (two torch.empty per expert, TransformerEngine issue #1499), priced as one op.
      one = s.op_dispatch_s + s.local_experts * (expert_gemm ? s.expert_gemm_s : s.op_dispatch_s);
    }
  }
  return count * one;
}

}  // namespace

HostDispatchSettings host_dispatch_settings(const SystemConfig& sys, const StrategyConfig& st,
                                            const ModelConfig& model) {
  HostDispatchSettings s;
  s.op_dispatch_s = sys.host_op_dispatch_us * 1e-6;
  s.expert_gemm_s = sys.host_grouped_gemm_expert_us * 1e-6;
  s.sync_s = sys.host_sync_us * 1e-6;
  s.grouped_gemm = st.moe_grouped_gemm;
  s.cuda_graph = st.cuda_graph_scope;
  if (model.is_moe && st.ep_size > 0) s.local_experts = static_cast<int>(std::max<std::int64_t>(1, model.expert_num / st.ep_size));
  return s;
}

HostOpCost host_op_cost(const LayerOp& op, const HostDispatchSettings& s) {
  HostOpCost c;
  switch (op.kind) {
    case OpKind::gemm:
      c.fwd_s = issue_s(op, s, 1);
      // dgrad, wgrad, and the main-gradient add when accumulation is not fused into the wgrad
      c.bwd_s = issue_s(op, s, (op.has_wgrad ? 2 : 1) + (op.wgrad_accum_bytes > 0 ? 1 : 0));
      break;
    case OpKind::attention:
      c.fwd_s = issue_s(op, s, 1);
      c.bwd_s = issue_s(op, s, 1);
      break;
    case OpKind::memory:
      // A copy or element-wise kernel; a communication-only op (no bytes) issues only its collective.
      c.fwd_s = op.mem_fwd.bytes > 0 ? issue_s(op, s, 1) : 0.0;
      c.bwd_s = op.mem_bwd.bytes > 0 ? issue_s(op, s, 1) : 0.0;
      break;
  }
  // Each collective is one more host call (an NCCL launch); a one-rank group issues nothing.
  auto calls = [](std::initializer_list<const std::optional<CollectiveKey>*> keys) {
    int n = 0;
    for (const auto* k : keys) n += (*k && (*k)->ranks > 1) ? 1 : 0;
    return n;
  };
  c.fwd_s += s.op_dispatch_s * calls({&op.fwd_comm, &op.fwd_weight_comm});
  c.bwd_s += s.op_dispatch_s * calls({&op.bwd_comm, &op.bwd_comm_with_dgrad, &op.bwd_comm_with_wgrad,
                                      &op.bwd_weight_comm_with_dgrad, &op.bwd_weight_comm_with_wgrad});
  return c;
}

bool graph_captured(const LayerOp& op, std::uint8_t g, bool moe_block) {
  if (g == 0) return false;
  if (g & kGraphFullIteration) return true;
  switch (op.unit) {
    case OpUnit::input_norm:
    case OpUnit::qkv_down:
    case OpUnit::qkv:
    case OpUnit::attention_core:
    case OpUnit::out_proj:
    case OpUnit::post_attn: return (g & kGraphAttn) != 0;
    case OpUnit::post_norm: return (g & (moe_block ? kGraphMoeRouter | kGraphMoe : kGraphMlp)) != 0;
    case OpUnit::mlp: return (g & kGraphMlp) != 0;
    case OpUnit::post_mlp: return !moe_block && (g & kGraphMlp) != 0;
    case OpUnit::router: return (g & (kGraphMoeRouter | kGraphMoe)) != 0;
    case OpUnit::moe_dispatch:
    case OpUnit::expert:
    case OpUnit::expert_act:
    case OpUnit::shared_expert: return (g & kGraphMoe) != 0;
    case OpUnit::other: return false;
  }
  return false;
}

int moe_sync_index(const std::vector<LayerOp>& ops, const StrategyConfig& st, bool moe_block, bool pad_to_capacity) {
  if (!moe_block || pad_to_capacity || (st.cuda_graph_scope & kGraphFullIteration)) return -1;
  // All-to-all: before the dispatch all-to-all (Megatron's cuda_sync_point "before_ep_alltoall");
  // all-gather: the grouped GEMM needs tokens_per_expert on the host, before the first expert op.
  for (std::size_t i = 0; i < ops.size(); ++i) {
    // Flex: DeepEP's normal dispatch (and HybridEP's blocking one, Megatron's default) waits on the
    // host for the received-token count before it can size its output.
    if ((st.moe_dispatcher == MoeDispatcher::all_to_all || st.moe_dispatcher == MoeDispatcher::flex) &&
        std::strcmp(ops[i].name, "ep_dispatch") == 0) {
      return static_cast<int>(i);
    }
    if (st.moe_dispatcher == MoeDispatcher::all_gather && ops[i].unit == OpUnit::expert) return static_cast<int>(i);
  }
  return -1;
}

HostBlockTiming host_block_timing(const std::vector<LayerOp>& ops, const std::vector<double>& gpu_fwd,
                                  const std::vector<double>& gpu_bwd, const HostDispatchSettings& s, bool moe_block,
                                  int sync_index) {
  HostBlockTiming t;
  const std::size_t n = ops.size();
  if (s.cuda_graph & kGraphFullIteration) {
    // One graph launch for the whole step (not per block) and no sync inside it: nothing exposed.
    for (std::size_t i = 0; i < n; ++i) t.gpu_fwd_s += gpu_fwd[i], t.gpu_bwd_s += gpu_bwd[i];
    return t;
  }
  std::vector<double> host_fwd(n), host_bwd(n);
  bool prev_fwd = false, prev_bwd = false;  // previous op (issue order) inside a captured run
  for (std::size_t i = 0; i < n; ++i) {
    t.gpu_fwd_s += gpu_fwd[i];
    t.gpu_bwd_s += gpu_bwd[i];
    if (graph_captured(ops[i], s.cuda_graph, moe_block)) {
      // One graph launch per captured run; forward runs in op order, backward in reverse, so a
      // run's launch is charged on its first op in each direction.
      host_fwd[i] = prev_fwd ? 0.0 : s.op_dispatch_s;
      prev_fwd = true;
      continue;
    }
    prev_fwd = false;
    const HostOpCost c = host_op_cost(ops[i], s);
    host_fwd[i] = c.fwd_s;
    host_bwd[i] = c.bwd_s;
  }
  for (std::size_t k = n; k-- > 0;) {
    if (!graph_captured(ops[k], s.cuda_graph, moe_block)) {
      prev_bwd = false;
      continue;
    }
    host_bwd[k] = prev_bwd ? 0.0 : s.op_dispatch_s;
    prev_bwd = true;
  }
  for (std::size_t i = 0; i < n; ++i) t.host_fwd_s += host_fwd[i], t.host_bwd_s += host_bwd[i];

  if (sync_index >= 0 && static_cast<std::size_t>(sync_index) < n) {
    // Steady state between two layers' syncs: after the sync the GPU is idle and the host issues
    // the ops from the sync point to the end of this layer and from the start of the next (the
    // same list) up to its sync point; op i runs when issued and when the GPU is free.
    double host = 0, gpu = 0;
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t i = (static_cast<std::size_t>(sync_index) + k) % n;
      host += host_fwd[i];
      gpu = std::max(gpu, host) + gpu_fwd[i];
    }
    t.exposed_fwd_s = gpu - t.gpu_fwd_s + s.sync_s;
    t.syncs_fwd = 1;
  } else {
    t.exposed_fwd_s = std::max(0.0, t.host_fwd_s - t.gpu_fwd_s);
  }
  t.exposed_bwd_s = std::max(0.0, t.host_bwd_s - t.gpu_bwd_s);
  return t;
}

}  // namespace calisim
