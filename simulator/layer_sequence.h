// The compute kernels of one transformer layer, forward then backward, for one micro-batch on one
// GPU, in the order the simulator charges them: what `calisim profile sequence` runs back to back
// on a GPU to compare a layer's sustained time with the sum of its kernels measured alone.
//
// Contract: pure ((model, strategy, system, efficiencies) in, kernel list out). Forward: each op
// of the layer in order (a GEMM's forward GEMM, attention's forward kernel, a memory-bound op's
// forward kernel). Backward: the ops in reverse order (a GEMM's dgrad, then its wgrad and, when
// the wgrad does not accumulate, Megatron's main-gradient add; attention's backward kernel; a
// memory-bound op's backward kernel). Ring context-parallel attention gives its c steps as op_cost
// prices them (one causal diagonal kernel, c - 1 non-causal chunk-pair kernels, per direction).
// Kernels with no work (a zero-byte memory op, a GEMM with an empty dimension) are left out.
// Collectives and flex-dispatcher exchanges are not kernels one GPU can run alone: they are left
// out and counted. Recompute is not part of the sequence (it reruns forward kernels the list
// already holds). `simulated_s` of each kernel is the simulator's time for it under `eff` (the
// system's roofline defaults or a database), so the list also says what the simulator charges.
// Throws InputError (naming `where`) when the model has no layer of the asked kind.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/efficiency_model.h"
#include "simulator/model_config.h"
#include "simulator/strategy_config.h"
#include "simulator/system_config.h"

namespace calisim {

enum class SequenceKernelKind : std::uint8_t { gemm, attention, memory };
std::string_view to_string(SequenceKernelKind k);

struct SequenceKernel {
  std::string op;    // the layer op it belongs to ("qkv_proj")
  std::string role;  // "fwd", "dgrad", "wgrad", "grad_accum", "bwd"; ring CP adds " step i"
  SequenceKernelKind kind = SequenceKernelKind::gemm;
  std::string key;   // canonical key text (core/kernel_keys.h)
  double flops = 0;  // GEMM and attention FLOPs (0 for memory-bound kernels)
  double bytes = 0;  // memory-bound kernels' bytes (the key's)
  double simulated_s = 0;
};

enum class SequenceLayer : std::uint8_t { dense, moe };
std::string_view to_string(SequenceLayer l);  // "dense", "moe"

struct LayerSequence {
  SequenceLayer layer = SequenceLayer::dense;
  std::vector<SequenceKernel> kernels;  // forward, then backward
  int collectives_left_out = 0;         // collectives and flex exchanges of the layer (both directions)
  std::size_t forward_kernels = 0;      // kernels[0, forward_kernels) are the forward pass
  double simulated_s() const;
};

// `layer`: which layer of the model; MoE models have both kinds only when they keep leading dense
// layers (moe_first_k_dense_layers), dense models only `dense`.
LayerSequence layer_sequence(const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system,
                             const EfficiencyModel& eff, SequenceLayer layer, const std::string& where);

// The layer kind a model's typical layer is: moe for MoE models, else dense.
SequenceLayer default_sequence_layer(const ModelConfig& model);

}  // namespace calisim
