// Kernel keys of the PyTorch operators a profiler trace recorded with shapes
// (torch.profiler.profile(record_shapes=True)): which GEMM or attention shape each aten
// operator ran, and which collective each c10d call made, read from the operator's trace
// arguments, so that the GPU time of its kernels becomes an efficiency row of that key
// (profiler/operator_rows.h).
//
// Contract:
//   - is_keyed_operator(name) is true for the operators operator_key() reads: the GEMMs
//     aten::mm, aten::addmm, aten::bmm, aten::baddbmm, aten::_scaled_mm, the grouped (MoE expert)
//     GEMMs aten::_grouped_mm and aten::_scaled_grouped_mm, and the fused attention
//     operators of PyTorch's scaled_dot_product_attention — the public aten::scaled_dot_product_attention,
//     its flash / efficient / cuDNN forward and backward operators, and aten::_flash_attention_forward
//     / _backward; and `record_param_comms` (collectives). The Kineto reader keeps the CPU events
//     of these operators only.
//   - operator_key(name, args) reads Kineto's "Input Dims", "Input type", "Input Strides" and
//     "Concrete Inputs" (the operator's arguments in schema order; scalars have empty dims and
//     their value as text in Concrete Inputs) and returns the key, or kind `none` with the reason
//     the operator has no key (calisim never guesses a key it cannot read).
//   - GEMMs follow core/kernel_keys.h: C[m,n] = A[m,k] · B[k,n], layout from the operand strides
//     (A row-major, B a transposed view: TN, a linear's forward; both row-major: NN, its data
//     gradient; A a transposed view, B row-major: NT, its weight gradient). No key: no strides in
//     the trace (PyTorch before 2.1), both operands transposed, an operand neither row- nor
//     column-major, fp32 inputs (whether TF32 ran is not in the trace), mixed input types other
//     than _scaled_mm's two FP8 formats (e5m2 when either operand is, as calisim keys gradients).
//   - Grouped GEMMs are keyed as the simulator keys expert GEMMs (batch = groups, the rows or the
//     inner dimension split evenly, rounded up, since the offsets' values are not in the trace):
//     [T, K] x [G, K, N] with offsets (each expert's tokens: forward, data gradient) gives m =
//     ceil(T / G), k = K, n = N; [M, T] x [T, N] with offsets (each expert's weight gradient) m = M,
//     n = N, k = ceil(T / G); [G, M, K] x [G, K, N] without offsets a batched GEMM. Layout and
//     dtype as for the plain GEMMs, from the two operands.
//   - Collectives: PyTorch's `record_param_comms` events (c10d's record of every collective call):
//     "Collective name" (allreduce, _allgather_base / all_gather_into_tensor, reduce_scatter_tensor,
//     alltoall_base, their coalesced forms) gives the op; the size is nccl-tests' S
//     (core/kernel_keys.h): all_reduce and all_to_all the input, all_gather the whole output,
//     reduce_scatter the whole input, each "msg nelems" times the element size of "dtype"; ranks
//     from "Group size"; group_ranks from "Process Group Ranks" (a list, or its text "[0, 1,
//     ...]"). No key: send / recv (the peer, hence the link, is not in the record), broadcast,
//     barrier and the other collectives calisim does not price, a group of one, an element type it
//     does not know.
//   - Attention: batch, heads and sequence lengths of query and key (heads_kv from the key: GQA),
//     head dims of query and value, causal from the is_causal argument (which must read "True" or
//     "False": a different schema is refused, not misread), dtype of the query. No key: no
//     Concrete Inputs (the causal flag is unknown), an explicit mask or bias, variable-length
//     batches (cumulative sequence lengths given), fp32 query.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "core/kernel_keys.h"

namespace calisim::profiler {

struct OperatorKey {
  enum class Kind { gemm, attention, collective, none };
  Kind kind = Kind::none;
  GemmKey gemm;
  AttentionKey attention;
  // kind collective: ranks_per_node is left 0 (the domain size is the system's:
  // profiler/operator_rows.h fills it from group_ranks).
  CollectiveKey collective;
  std::vector<std::int64_t> group_ranks;  // the process group's global ranks, when the trace lists them
  std::string reason;  // kind none: why the operator has no key
};

bool is_keyed_operator(std::string_view name);
// record_param_comms: a keyed operator whose kernels are the communication kernels of its call.
bool is_collective_operator(std::string_view name);

// `args`: the trace event's "args" object (null or missing members are read as absent).
OperatorKey operator_key(std::string_view name, const nlohmann::json& args);

}  // namespace calisim::profiler
