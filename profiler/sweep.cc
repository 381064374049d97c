#include "profiler/sweep.h"

#include <string>

#include "core/error.h"
#include "profiler/memory_patterns.h"

namespace calisim::profiler {
namespace {

void append(ProfilePlan& to, const ProfilePlan& from) {
  // Sweeps of different kinds never share a key.
  to.kernels.insert(to.kernels.end(), from.kernels.begin(), from.kernels.end());
}

// The three GEMMs of a linear layer in the project's key convention (core/kernel_keys.h).
void add_linear(ProfilePlan& plan, std::int64_t tokens, std::int64_t in, std::int64_t out, DType dt) {
  // fp8 weight gradients accumulate in bf16 outputs as TransformerEngine runs them; 16/32-bit
  // ones accumulate into fp32 main grads (Megatron's gradient-accumulation fusion).
  const bool accumulate = bytes_per_element(dt) >= 2;
  // fp8: TN for all three, as the simulator keys them (TE's transposed FP8 copies; op_builders.cc).
  const bool fp8 = dt == DType::fp8_e4m3 || dt == DType::fp8_e5m2;
  plan.add(GemmKey{tokens, out, in, 1, dt, GemmLayout::TN, false});
  plan.add(GemmKey{tokens, in, out, 1, dt, fp8 ? GemmLayout::TN : GemmLayout::NN, false});
  plan.add(GemmKey{out, in, tokens, 1, dt, fp8 ? GemmLayout::TN : GemmLayout::NT, accumulate});
}

}  // namespace

SweepKind parse_sweep_kind(std::string_view s) {
  if (s == "gemm") return SweepKind::gemm;
  if (s == "attention") return SweepKind::attention;
  if (s == "collective") return SweepKind::collective;
  if (s == "memory") return SweepKind::memory;
  if (s == "all") return SweepKind::all;
  throw InputError("<command line>", "--sweep",
                   "unknown sweep '" + std::string(s) + "' (expected gemm, attention, collective, memory or all)");
}

ProfilePlan gemm_sweep(const std::vector<DType>& dtypes) {
  ProfilePlan plan;
  plan.description = "GEMM sweep";
  for (DType dt : dtypes) {
    for (std::int64_t s : {512, 1024, 2048, 4096, 8192, 16384}) plan.add(GemmKey{s, s, s, 1, dt, GemmLayout::TN, false});
    for (std::int64_t tokens : {4096, 16384}) {
      for (std::int64_t h : {4096, 8192}) {
        const std::int64_t ffn = h * 7 / 2;           // Llama 3: 14336 for 4096, 28672 for 8192
        add_linear(plan, tokens, h, h + h / 4, dt);   // QKV with 8 KV heads of 128 per 64 query heads
        add_linear(plan, tokens, h, h, dt);           // attention output projection
        add_linear(plan, tokens, h, 2 * ffn, dt);     // fused gate + up (SwiGLU)
        add_linear(plan, tokens, ffn, h, dt);         // down projection
      }
    }
    // Batched / grouped (MoE) shapes: 8 experts of equal load, Mixtral-like widths.
    plan.add(GemmKey{2048, 2 * 14336, 4096, 8, dt, GemmLayout::TN, false});
    plan.add(GemmKey{2048, 4096, 14336, 8, dt, GemmLayout::TN, false});
    plan.add(GemmKey{512, 2 * 2048, 7168, 8, dt, GemmLayout::TN, false});
  }
  return plan;
}

ProfilePlan attention_sweep(const std::vector<DType>& dtypes) {
  ProfilePlan plan;
  plan.description = "attention sweep";
  for (DType dt : dtypes) {
    for (auto dir : {AttentionDirection::forward, AttentionDirection::backward}) {
      for (bool causal : {false, true}) {
        for (std::int64_t d : {64, 128}) {
          for (std::int64_t seq : {512, 1024, 2048, 4096, 8192, 16384}) {
            plan.add(flash_benchmark_key(seq, d, causal, dt, dir));
          }
        }
      }
      for (std::int64_t seq : {4096, 8192}) {
        plan.add(AttentionKey{1, 32, 8, seq, seq, 128, 128, true, dt, dir});   // GQA (Llama 3 8B per GPU)
        plan.add(AttentionKey{1, 16, 16, seq, seq, 192, 128, true, dt, dir});  // MLA (DeepSeek-V3, 128 heads / TP 8)
      }
    }
  }
  return plan;
}

ProfilePlan collective_sweep(int ranks, int ranks_per_node) {
  ProfilePlan plan;
  plan.description = "collective sweep";
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
                          CollectiveOp::all_to_all, CollectiveOp::send_recv}) {
    for (std::int64_t bytes = 1024; bytes <= (std::int64_t{4} << 30); bytes *= 4) {
      plan.add(CollectiveKey{op, bytes, ranks, ranks_per_node, DType::bf16});
    }
  }
  return plan;
}

ProfilePlan memory_sweep() {
  ProfilePlan plan;
  plan.description = "memory sweep";
  for (const std::string& kind : default_memory_kinds()) {
    for (std::int64_t bytes = std::int64_t{1} << 20; bytes <= (std::int64_t{4} << 30); bytes *= 4) {
      plan.add(MemoryOpKey{kind, bytes});
    }
  }
  return plan;
}

ProfilePlan make_sweep(SweepKind kind, const SweepOptions& o) {
  switch (kind) {
    case SweepKind::gemm: return gemm_sweep(o.dtypes);
    case SweepKind::attention: return attention_sweep(o.dtypes);
    case SweepKind::collective: return collective_sweep(o.ranks, o.ranks_per_node);
    case SweepKind::memory: return memory_sweep();
    case SweepKind::all: break;
  }
  ProfilePlan all;
  all.description = "full calibration sweep";
  append(all, gemm_sweep(o.dtypes));
  append(all, attention_sweep(o.dtypes));
  append(all, memory_sweep());
  append(all, collective_sweep(o.ranks, o.ranks_per_node));
  return all;
}

}  // namespace calisim::profiler
