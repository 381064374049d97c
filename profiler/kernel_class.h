// Classifying CUDA kernels by name: what a trace's kernels are, without knowing the program.
//
// Contract: classify_kernel() looks at the (mangled or demangled) name only, case-insensitively,
// and returns one class; names it cannot place are `other`. The rules, first match wins:
//   nccl        - communication kernels (the class keeps NCCL's name, as databases store it):
//                 NCCL's ("ncclDevKernel_...", "ncclKernel_..."), TransformerEngine userbuffers'
//                 (tp_comm_overlap: "userbuffers_...", "kuserbuffers_..."), DeepEP / HybridEP
//                 ("deep_ep::...", "hybrid_ep"), NVSHMEM, PyTorch symmetric-memory collectives
//                 ("..._all_reduce_kernel", "..._all_gather_kernel", ...);
//   attention   - flash / fused multi-head attention (FlashAttention "flash_fwd", cuDNN
//                 "...sdpa..." / "fmha", TE/xformers "fmha", "attention", "attn");
//   gemm        - matrix products: cuBLAS/cuBLASLt ("gemm", Hopper "nvjet_", "xmma", "cutlass"),
//                 Triton templates ("triton_tem_fused_mm"), "matmul";
//   elementwise - bandwidth-bound kernels: PyTorch's elementwise/reduce/norm/softmax/dropout
//                 kernels, Triton pointwise/reduction kernels ("triton_poi_", "triton_red_",
//                 "triton_per_"), Apex/TE norms, optimizers ("adam", "multi_tensor");
//   other       - anything else (sorting, indexing, RNG, ...).
// Attention is tested before GEMM because fused attention kernels often carry "gemm" or
// "cutlass" in their template names. Copies and memsets are not kernels; CUPTI reports them as
// their own record kinds, which profiler/trace_copies.h turns into KernelClass::memcpy / memset
// (classify_kernel() never returns those two).
#pragma once

#include <cstdint>
#include <string_view>

namespace calisim::profiler {

enum class KernelClass : std::uint8_t { gemm, attention, nccl, elementwise, memcpy, memset, other };
inline constexpr int kKernelClassCount = 7;
std::string_view to_string(KernelClass c);

KernelClass classify_kernel(std::string_view name);

// Finer reads of a name, for kernels already classified (case-insensitive, like classify_kernel):
//   is_attention_backward() - an attention kernel's backward pass: FlashAttention "flash_bwd...",
//                             FA3 "FlashAttnBwd...", cuDNN "..._bprop...", xformers / TE
//                             "fmha_cutlassB...", anything saying "backward";
//   nccl_collective()       - the collective a communication kernel runs, from its name
//                             ("ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "ncclKernel_AllGather_...",
//                             "ncclDevKernel_SendRecv", userbuffers' "_rs" / "_ag" suffixes);
//                             all-to-all (NCCL's, DeepEP's dispatch / combine) runs as send / recv.
bool is_attention_backward(std::string_view name);
enum class NcclCollective : std::uint8_t { all_reduce, all_gather, reduce_scatter, send_recv, other };
NcclCollective nccl_collective(std::string_view name);

}  // namespace calisim::profiler
