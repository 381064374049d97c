// Kernel keys: the plain value types that name one kernel shape, shared by the simulator
// (which asks for efficiencies), the database (which stores them) and the profiler.
//
// Each key has a canonical string form (to_string) used as the database key and in reports.
// The form is stable: changing it invalidates stored databases, so it is versioned with the
// schema. Keys compare and hash by value.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/dtype.h"

namespace calisim {

// cuBLAS-style operand layout of C[m,n] = op(A)[m,k] * op(B)[k,n], named as Megatron/TE name
// their three GEMMs: forward "TN", data-gradient "NN", weight-gradient "NT". FP8 GEMMs are "TN" in
// all three passes: TransformerEngine multiplies transposed FP8 copies (Hopper's cuBLASLt FP8
// kernels take no other layout), so that is the kernel the key names.
enum class GemmLayout : std::uint8_t { TN, NN, NT };
std::string_view to_string(GemmLayout l);
GemmLayout parse_gemm_layout(std::string_view s);

struct GemmKey {
  std::int64_t m = 0, n = 0, k = 0;
  std::int64_t batch = 1;     // batched GEMM count (1 = plain GEMM); grouped GEMMs use groups here
  DType dtype = DType::bf16;  // input dtype
  GemmLayout layout = GemmLayout::TN;
  bool accumulate = false;    // C += A*B into an fp32 buffer (wgrad with gradient-accumulation fusion)

  double flops() const { return 2.0 * static_cast<double>(m) * n * k * batch; }
  // Bytes of A, B read and C written once (the roofline memory term).
  double bytes() const;
  bool operator==(const GemmKey&) const = default;
};

enum class AttentionDirection : std::uint8_t { forward, backward };

struct AttentionKey {
  std::int64_t batch = 1;
  std::int64_t heads_q = 1, heads_kv = 1;
  std::int64_t seq_q = 1, seq_kv = 1;
  std::int64_t head_dim_qk = 128, head_dim_v = 128;
  bool causal = true;
  DType dtype = DType::bf16;
  AttentionDirection direction = AttentionDirection::forward;

  // FLOPs by MODELING.md: forward 2·b·hq·sq·skv·(dqk + dv) (4·b·s²·a·d when dqk = dv), halved
  // for causal masks; backward 2.5x forward (it recomputes the scores).
  double flops() const;
  // Bytes of Q, K, V, O (and dO, dQ, dK, dV for backward) moved once.
  double bytes() const;
  bool operator==(const AttentionKey&) const = default;
};

// The FlashAttention benchmark grid, the shape of the published FlashAttention-2/3 and cuDNN
// figures (and of calisim's attention sweep): self-attention of `seq` tokens, hidden 2048
// (2048 / head_dim heads), 16k tokens per batch (batch 16384 / seq), both at least 1.
AttentionKey flash_benchmark_key(std::int64_t seq, std::int64_t head_dim, bool causal, DType dtype,
                                 AttentionDirection direction);

enum class CollectiveOp : std::uint8_t { all_reduce, all_gather, reduce_scatter, all_to_all, send_recv };
std::string_view to_string(CollectiveOp op);
CollectiveOp parse_collective_op(std::string_view s);

struct CollectiveKey {
  CollectiveOp op = CollectiveOp::all_reduce;
  std::int64_t bytes = 0;          // full buffer size S as nccl-tests counts it
  int ranks = 1;
  int ranks_per_node = 1;          // how many of the ranks share one scale-up domain
  DType dtype = DType::bf16;
  bool operator==(const CollectiveKey&) const = default;
};

// Bandwidth-bound element-wise or copy kernels; kind names the op family
// (e.g. "rmsnorm_fwd", "swiglu_bwd", "adam_step", "copy").
struct MemoryOpKey {
  std::string kind;
  std::int64_t bytes = 0;          // bytes read + written
  bool operator==(const MemoryOpKey&) const = default;
};

// Canonical string forms, e.g.
//   "gemm m=4096 n=1536 k=5120 batch=1 dtype=bf16 layout=TN acc=0"
//   "attn b=1 hq=64 hkv=8 sq=4096 skv=4096 dqk=128 dv=128 causal=1 dtype=bf16 dir=fwd"
//   "coll op=all_reduce bytes=67108864 ranks=8 per_node=8 dtype=bf16"
//   "mem kind=rmsnorm_fwd bytes=134217728"
std::string to_string(const GemmKey& k);
std::string to_string(const AttentionKey& k);
std::string to_string(const CollectiveKey& k);
std::string to_string(const MemoryOpKey& k);

std::size_t hash_value(const GemmKey& k);
std::size_t hash_value(const AttentionKey& k);
std::size_t hash_value(const CollectiveKey& k);
std::size_t hash_value(const MemoryOpKey& k);

}  // namespace calisim

template <> struct std::hash<calisim::GemmKey> {
  std::size_t operator()(const calisim::GemmKey& k) const noexcept { return calisim::hash_value(k); }
};
template <> struct std::hash<calisim::AttentionKey> {
  std::size_t operator()(const calisim::AttentionKey& k) const noexcept { return calisim::hash_value(k); }
};
template <> struct std::hash<calisim::CollectiveKey> {
  std::size_t operator()(const calisim::CollectiveKey& k) const noexcept { return calisim::hash_value(k); }
};
template <> struct std::hash<calisim::MemoryOpKey> {
  std::size_t operator()(const calisim::MemoryOpKey& k) const noexcept { return calisim::hash_value(k); }
};
