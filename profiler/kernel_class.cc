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
  if (contains_any(s, {"nccl"})) return KernelClass::nccl;
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
  if (contains_any(s, {"allreduce"})) return NcclCollective::all_reduce;
  if (contains_any(s, {"allgather"})) return NcclCollective::all_gather;
  if (contains_any(s, {"reducescatter"})) return NcclCollective::reduce_scatter;
  if (contains_any(s, {"send", "recv", "alltoall"})) return NcclCollective::send_recv;
  return NcclCollective::other;
}

}  // namespace calisim::profiler
