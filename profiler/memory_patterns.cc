#include "profiler/memory_patterns.h"

#include <algorithm>
#include <string>
#include <utility>

namespace calisim::profiler {
namespace {

struct Entry {
  std::string_view kind;
  MemoryPattern pattern;
};

// Read:write streams per kind. Forward element-wise ops read their inputs and write one output;
// backward ones read the output gradient and the saved inputs and write the input gradients.
// adam_step reads param, grad, m, v and writes param, m, v (fp32).
constexpr Entry kTable[] = {
    {"copy", {1, 1, 2, false}},
    {"add_fwd", {2, 1, 2, false}},
    {"add_bwd", {1, 2, 2, false}},
    {"dropout_add_fwd", {2, 2, 2, false}},
    {"dropout_add_bwd", {2, 2, 2, false}},
    {"dropout_fwd", {1, 2, 2, false}},
    {"dropout_bwd", {2, 1, 2, false}},
    {"rmsnorm_fwd", {1, 1, 2, false}},
    {"rmsnorm_bwd", {2, 1, 2, false}},
    {"layernorm_fwd", {1, 1, 2, false}},
    {"layernorm_bwd", {2, 1, 2, false}},
    {"rope_fwd", {1, 1, 2, false}},
    {"rope_bwd", {1, 1, 2, false}},
    {"swiglu_fwd", {2, 1, 2, false}},
    {"swiglu_bwd", {3, 2, 2, false}},
    {"swiglu_unfused_fwd", {2, 1, 2, false}},
    {"swiglu_unfused_bwd", {3, 2, 2, false}},
    {"gelu_fwd", {1, 1, 2, false}},
    {"gelu_bwd", {2, 1, 2, false}},
    {"softmax_fwd", {1, 1, 2, false}},
    {"softmax_bwd", {2, 1, 2, false}},
    {"ce_fwd", {1, 1, 4, false}},
    {"ce_bwd", {1, 1, 4, false}},
    {"ce_fused_fwd", {1, 1, 2, false}},
    {"ce_fused_bwd", {1, 1, 2, false}},
    {"embedding_fwd", {1, 1, 2, false}},
    {"embedding_bwd", {1, 1, 4, false}},
    {"adam_step", {4, 3, 4, false}},
    {"grad_accum", {2, 1, 4, false}},  // main_grad += grad: reads both, writes the main gradient
};

}  // namespace

MemoryPattern memory_pattern(std::string_view kind) {
  for (const Entry& e : kTable) {
    if (e.kind == kind) return e.pattern;
  }
  MemoryPattern p;
  p.approximated = true;
  return p;
}

std::int64_t elements_per_array(const MemoryOpKey& key, const MemoryPattern& p) {
  const std::int64_t per_element = static_cast<std::int64_t>(p.reads + p.writes) * p.element_bytes;
  return std::max<std::int64_t>(1, key.bytes / per_element);
}

std::vector<std::string> default_memory_kinds() {
  return {"copy", "add_fwd", "rmsnorm_fwd", "rmsnorm_bwd", "swiglu_fwd", "swiglu_bwd", "adam_step"};
}

}  // namespace calisim::profiler
