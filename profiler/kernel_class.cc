#include "profiler/kernel_class.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>

namespace calisim::profiler {
namespace {

bool contains_any(const std::string& lower, std::initializer_list<std::string_view> needles) {
  return std::any_of(needles.begin(), needles.end(),
                     [&](std::string_view n) { return lower.find(n) != std::string::npos; });
}

std::string lowercase(std::string_view name) {
  std::string s(name);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}

// Kernels that move data between GPUs: NCCL's, and those of the libraries that bypass NCCL —
// TransformerEngine's userbuffers (Megatron's tp_comm_overlap: "userbuffers_fp16_sum_inplace_gpu_rr_rs",
// "kuserbuffers_pushsend"), DeepEP's and HybridEP's dispatch / combine, NVSHMEM, PyTorch's
// symmetric-memory collectives ("one_shot_all_reduce_kernel", "multimem_all_gather_kernel").
bool is_communication(const std::string& lower) {
  return contains_any(lower, {"nccl", "userbuffers", "deep_ep::", "hybrid_ep", "hybridep", "nvshmem",
                              "all_reduce_kernel", "all_gather_kernel", "reduce_scatter_kernel",
                              "all_to_all_kernel"});
}

// `word` in `s` followed by its end or by a character that is not a letter or digit ("_rs" in
// "..._rr_rs_oop<8>" and "..._rr_rs", not in "..._rsqrt").
bool has_suffix_word(const std::string& s, std::string_view word) {
  for (auto at = s.find(word); at != std::string::npos; at = s.find(word, at + 1)) {
    const std::size_t next = at + word.size();
    if (next == s.size() || !std::isalnum(static_cast<unsigned char>(s[next]))) return true;
  }
  return false;
}

}  // namespace

std::string_view to_string(KernelClass c) {
  switch (c) {
    case KernelClass::gemm: return "gemm";
    case KernelClass::attention: return "attention";
    case KernelClass::nccl: return "nccl";
    case KernelClass::elementwise: return "elementwise";
    case KernelClass::memcpy: return "memcpy";
    case KernelClass::memset: return "memset";
    case KernelClass::other: return "other";
  }
  return "other";
}

KernelClass classify_kernel(std::string_view name) {
  const std::string s = lowercase(name);
  if (is_communication(s)) return KernelClass::nccl;
  if (contains_any(s, {"flash", "fmha", "sdpa", "attention", "attn", "mha_fwd", "mha_bwd"})) {
    return KernelClass::attention;
  }
  if (contains_any(s, {"gemm", "nvjet_", "xmma", "cutlass", "matmul", "triton_tem_fused_mm", "triton_tem_fused_bmm",
                       "gemv", "cublas"})) {
    return KernelClass::gemm;
  }
  if (contains_any(s, {"elementwise", "vectorized", "reduce_kernel", "norm", "softmax", "dropout", "triton_poi_",
                       "triton_red_", "triton_per_", "adam", "multi_tensor", "unrolled_", "fill", "copy_kernel",
                       "cat_", "index_elementwise", "rope", "rotary", "swiglu", "gelu", "silu", "cross_entropy"})) {
    return KernelClass::elementwise;
  }
  return KernelClass::other;
}

bool is_attention_backward(std::string_view name) {
  return contains_any(lowercase(name), {"bwd", "bprop", "backward", "cutlassb"});
}

NcclCollective nccl_collective(std::string_view name) {
  const std::string s = lowercase(name);
  if (contains_any(s, {"send", "recv", "alltoall", "all_to_all", "deep_ep::", "hybrid_ep", "hybridep"})) {
    return NcclCollective::send_recv;
  }
  if (contains_any(s, {"allreduce", "all_reduce"})) return NcclCollective::all_reduce;
  if (contains_any(s, {"allgather", "all_gather"})) return NcclCollective::all_gather;
  if (contains_any(s, {"reducescatter", "reduce_scatter"})) return NcclCollective::reduce_scatter;
  // TransformerEngine's userbuffers say the collective in a suffix: "..._rr_rs", "..._rs_oop_fp8"
  // reduce-scatter, "..._rw_ag" all-gather; the bare "userbuffers_fp16_sum_inplace_gpu_rw" and the
  // multicast "..._mc" reduce in place (all-reduce).
  if (s.find("userbuffers") != std::string::npos) {
    if (has_suffix_word(s, "_rs")) return NcclCollective::reduce_scatter;
    if (has_suffix_word(s, "_ag")) return NcclCollective::all_gather;
    return NcclCollective::all_reduce;
  }
  return NcclCollective::other;
}

}  // namespace calisim::profiler
