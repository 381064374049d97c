#include "simulator/layer_sequence.h"

#include <fmt/format.h>

#include "core/error.h"
#include "simulator/layer_ops.h"
#include "simulator/op_cost.h"

namespace calisim {

std::string_view to_string(SequenceKernelKind k) {
  switch (k) {
    case SequenceKernelKind::gemm:
      return "gemm";
    case SequenceKernelKind::attention:
      return "attention";
    case SequenceKernelKind::memory:
      return "memory";
  }
  return "?";
}

std::string_view to_string(SequenceLayer l) { return l == SequenceLayer::moe ? "moe" : "dense"; }

double LayerSequence::simulated_s() const {
  double s = 0;
  for (const auto& k : kernels) s += k.simulated_s;
  return s;
}

SequenceLayer default_sequence_layer(const ModelConfig& model) {
  return model.is_moe && model.dense_layers < model.layer_num ? SequenceLayer::moe : SequenceLayer::dense;
}

namespace {

class Builder {
 public:
  Builder(const OpCoster& coster, LayerSequence& out) : coster_(coster), out_(out) {}

  void gemm(const LayerOp& op, const char* role, const GemmKey& k) {
    if (k.m <= 0 || k.n <= 0 || k.k <= 0 || k.batch <= 0) return;
    out_.kernels.push_back({op.name, role, SequenceKernelKind::gemm, to_string(k), k.flops(), 0,
                            coster_.gemm_s(k, nullptr, nullptr, 1, coster_.kernel_speed(op))});
  }
  void attention(const LayerOp& op, const std::string& role, const AttentionKey& k) {
    out_.kernels.push_back({op.name, role, SequenceKernelKind::attention, to_string(k), k.flops(), 0,
                            coster_.attention_s(k, nullptr, nullptr, coster_.kernel_speed(op))});
  }
  void memory(const LayerOp& op, const char* role, const MemoryOpKey& k) {
    if (k.bytes <= 0) return;
    out_.kernels.push_back({op.name, role, SequenceKernelKind::memory, to_string(k), 0, static_cast<double>(k.bytes),
                            coster_.memory_s(k, nullptr, nullptr, coster_.kernel_speed(op))});
  }

  // Ring context parallelism as op_cost prices it: the causal diagonal step on the rank's own
  // chunks, then c - 1 non-causal chunk-pair steps.
  void ring_attention(const LayerOp& op, AttentionDirection dir) {
    const RingAttentionKeys k = ring_attention_keys(op, dir);
    const char* role = dir == AttentionDirection::forward ? "fwd" : "bwd";
    attention(op, fmt::format("{} step 0", role), k.diagonal);
    for (int i = 1; i < op.cp_ring_steps; ++i) attention(op, fmt::format("{} step {}", role, i), k.step);
  }

  void forward(const LayerOp& op) {
    count_comm(op.fwd_comm);
    count_comm(op.fwd_weight_comm);
    if (op.flex) ++out_.collectives_left_out;
    switch (op.kind) {
      case OpKind::gemm:
        gemm(op, "fwd", op.gemm_fwd);
        break;
      case OpKind::attention:
        if (op.cp_ring_steps > 1) {
          ring_attention(op, AttentionDirection::forward);
        } else {
          attention(op, "fwd", op.attn_fwd);
        }
        break;
      case OpKind::memory:
        memory(op, "fwd", op.mem_fwd);
        break;
    }
  }

  void backward(const LayerOp& op) {
    count_comm(op.bwd_comm);
    count_comm(op.bwd_comm_with_dgrad);
    count_comm(op.bwd_comm_with_wgrad);
    count_comm(op.bwd_weight_comm_with_dgrad);
    count_comm(op.bwd_weight_comm_with_wgrad);
    if (op.flex) ++out_.collectives_left_out;
    switch (op.kind) {
      case OpKind::gemm:
        gemm(op, "dgrad", op.gemm_dgrad);
        if (op.has_wgrad) {
          gemm(op, "wgrad", op.gemm_wgrad);
          memory(op, "grad_accum", MemoryOpKey{"grad_accum", static_cast<std::int64_t>(op.wgrad_accum_bytes)});
        }
        break;
      case OpKind::attention:
        if (op.cp_ring_steps > 1) {
          ring_attention(op, AttentionDirection::backward);
        } else {
          attention(op, "bwd", op.attn_bwd);
        }
        break;
      case OpKind::memory:
        memory(op, "bwd", op.mem_bwd);
        break;
    }
  }

 private:
  void count_comm(const std::optional<CollectiveKey>& k) {
    if (k && k->ranks > 1) ++out_.collectives_left_out;
  }
  const OpCoster& coster_;
  LayerSequence& out_;
};

}  // namespace

LayerSequence layer_sequence(const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system,
                             const EfficiencyModel& eff, SequenceLayer layer, const std::string& where) {
  const ModelOps ops = build_model_ops(model, strategy, system.scale_up_domain_size);
  const std::vector<LayerOp>& list = layer == SequenceLayer::moe ? ops.moe_layer : ops.layer;
  const bool has_dense = !model.is_moe || model.dense_layers > 0;
  if (list.empty() || (layer == SequenceLayer::dense && !has_dense)) {
    throw InputError(where, "layer",
                     layer == SequenceLayer::moe
                         ? "the model has no MoE layer: ask for the dense layer"
                         : "every layer of this MoE model is a MoE layer (no leading dense layers): ask for the moe "
                           "layer");
  }
  LayerSequence out;
  out.layer = layer;
  const OpCoster coster(system, eff, strategy.nccl);
  Builder b(coster, out);
  for (const LayerOp& op : list) b.forward(op);
  out.forward_kernels = out.kernels.size();
  for (auto it = list.rbegin(); it != list.rend(); ++it) b.backward(*it);
  return out;
}

}  // namespace calisim
