// The built-in calibration sweeps (`calisim profile run --sweep ...`).
//
// Each sweep is a plan of keys chosen to cover what the predictor fits and what published figures
// can check, sized so that the default sweep of all four kinds takes at most about 10 minutes of
// GPU time on one H100:
//   gemm       - squares 512..16384 (TN), and the three Megatron GEMMs (forward TN m=tokens
//                k=in n=out; dgrad NN m=tokens k=out n=in; wgrad NT m=out k=tokens n=in,
//                accumulating into fp32 for 16-bit inputs) of Llama-like layers (hidden 4096
//                and 8192, tokens 4096 and 16384), plus batched / grouped (MoE) shapes;
//   attention  - the FlashAttention benchmark grid (hidden 2048, head dim 64 and 128, seq
//                512..16k with batch = 16384 / seq), causal and not, forward and backward, plus
//                GQA (32 query / 8 KV heads) and MLA (head dims 192 + 128) at seq 4096 / 8192;
//   collective - all_reduce, all_gather, reduce_scatter, all_to_all, send_recv from 1 KiB to
//                4 GiB in steps of 4x over `ranks` GPUs (`ranks_per_node` of them per node);
//   memory     - the default memory kinds from 1 MiB to 4 GiB in steps of 4x.
// Sweeps are pure functions of their arguments.
#pragma once

#include <string_view>
#include <vector>

#include "core/dtype.h"
#include "profiler/profile_plan.h"

namespace calisim::profiler {

enum class SweepKind : std::uint8_t { gemm, attention, collective, memory, all };
SweepKind parse_sweep_kind(std::string_view s);  // throws InputError listing the choices

struct SweepOptions {
  std::vector<DType> dtypes{DType::bf16};  // GEMM and attention input types
  int ranks = 1;                           // collective group size
  int ranks_per_node = 1;
};

ProfilePlan gemm_sweep(const std::vector<DType>& dtypes);
ProfilePlan attention_sweep(const std::vector<DType>& dtypes);
ProfilePlan collective_sweep(int ranks, int ranks_per_node);
ProfilePlan memory_sweep();
// One sweep, or all four in measuring order (gemm, attention, memory, collective).
ProfilePlan make_sweep(SweepKind kind, const SweepOptions& options);

}  // namespace calisim::profiler
