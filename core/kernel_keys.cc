#include "core/kernel_keys.h"

#include <fmt/format.h>

#include <algorithm>

#include <stdexcept>
#include <string>

namespace calisim {
namespace {

// boost::hash_combine's mixing step: cheap and good enough for small value keys.
inline void mix(std::size_t& seed, std::size_t v) {
  seed ^= v + 0x9e3779b97f4a7c15ULL + (seed << 6) + (seed >> 2);
}

}  // namespace

std::string_view to_string(GemmLayout l) {
  switch (l) {
    case GemmLayout::TN: return "TN";
    case GemmLayout::NN: return "NN";
    case GemmLayout::NT: return "NT";
  }
  return "TN";
}

GemmLayout parse_gemm_layout(std::string_view s) {
  if (s == "TN") return GemmLayout::TN;
  if (s == "NN") return GemmLayout::NN;
  if (s == "NT") return GemmLayout::NT;
  throw std::invalid_argument("unknown GEMM layout '" + std::string(s) + "' (expected TN, NN or NT)");
}

double GemmKey::bytes() const {
  const double e = bytes_per_element(dtype);
  // fp8 GEMMs write bf16 outputs; an accumulating wgrad reads and writes an fp32 C.
  const double out_e = accumulate ? 8.0 : (e < 2.0 ? 2.0 : e);
  return static_cast<double>(batch) *
         (e * (static_cast<double>(m) * k + static_cast<double>(k) * n) + out_e * static_cast<double>(m) * n);
}

double AttentionKey::flops() const {
  double f = 2.0 * batch * heads_q * static_cast<double>(seq_q) * seq_kv * (head_dim_qk + head_dim_v);
  if (causal) f *= 0.5;
  if (direction == AttentionDirection::backward) f *= 2.5;
  return f;
}

AttentionKey flash_benchmark_key(std::int64_t seq, std::int64_t head_dim, bool causal, DType dtype,
                                 AttentionDirection direction) {
  seq = std::max<std::int64_t>(seq, 1);
  head_dim = std::max<std::int64_t>(head_dim, 1);
  const std::int64_t heads = std::max<std::int64_t>(1, 2048 / head_dim);
  return AttentionKey{std::max<std::int64_t>(1, 16384 / seq), heads, heads, seq, seq, head_dim, head_dim, causal,
                      dtype, direction};
}

double AttentionKey::bytes() const {
  const double e = bytes_per_element(dtype);
  const double q = static_cast<double>(batch) * seq_q * heads_q * head_dim_qk;
  const double k = static_cast<double>(batch) * seq_kv * heads_kv * head_dim_qk;
  const double v = static_cast<double>(batch) * seq_kv * heads_kv * head_dim_v;
  const double o = static_cast<double>(batch) * seq_q * heads_q * head_dim_v;
  const double fwd = e * (q + k + v + o);
  // Backward reads Q, K, V, O, dO and writes dQ, dK, dV.
  return direction == AttentionDirection::forward ? fwd : e * (2 * q + 2 * k + 2 * v + 2 * o);
}

std::string_view to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::all_reduce: return "all_reduce";
    case CollectiveOp::all_gather: return "all_gather";
    case CollectiveOp::reduce_scatter: return "reduce_scatter";
    case CollectiveOp::all_to_all: return "all_to_all";
    case CollectiveOp::send_recv: return "send_recv";
  }
  return "all_reduce";
}

CollectiveOp parse_collective_op(std::string_view s) {
  if (s == "all_reduce" || s == "allreduce") return CollectiveOp::all_reduce;
  if (s == "all_gather" || s == "allgather") return CollectiveOp::all_gather;
  if (s == "reduce_scatter" || s == "reducescatter") return CollectiveOp::reduce_scatter;
  if (s == "all_to_all" || s == "all2all" || s == "alltoall") return CollectiveOp::all_to_all;
  if (s == "send_recv" || s == "p2p" || s == "sendrecv") return CollectiveOp::send_recv;
  throw std::invalid_argument("unknown collective '" + std::string(s) +
                              "' (expected all_reduce, all_gather, reduce_scatter, all_to_all or send_recv)");
}

std::string to_string(const GemmKey& k) {
  return fmt::format("gemm m={} n={} k={} batch={} dtype={} layout={} acc={}", k.m, k.n, k.k, k.batch,
                     to_string(k.dtype), to_string(k.layout), k.accumulate ? 1 : 0);
}

std::string to_string(const AttentionKey& k) {
  return fmt::format("attn b={} hq={} hkv={} sq={} skv={} dqk={} dv={} causal={} dtype={} dir={}", k.batch,
                     k.heads_q, k.heads_kv, k.seq_q, k.seq_kv, k.head_dim_qk, k.head_dim_v, k.causal ? 1 : 0,
                     to_string(k.dtype), k.direction == AttentionDirection::forward ? "fwd" : "bwd");
}

std::string to_string(const CollectiveKey& k) {
  return fmt::format("coll op={} bytes={} ranks={} per_node={} dtype={}", to_string(k.op), k.bytes, k.ranks,
                     k.ranks_per_node, to_string(k.dtype));
}

std::string to_string(const MemoryOpKey& k) { return fmt::format("mem kind={} bytes={}", k.kind, k.bytes); }

std::size_t hash_value(const GemmKey& k) {
  std::size_t h = std::hash<std::int64_t>{}(k.m);
  mix(h, std::hash<std::int64_t>{}(k.n));
  mix(h, std::hash<std::int64_t>{}(k.k));
  mix(h, std::hash<std::int64_t>{}(k.batch));
  mix(h, static_cast<std::size_t>(k.dtype) * 16 + static_cast<std::size_t>(k.layout) * 2 + (k.accumulate ? 1 : 0));
  return h;
}

std::size_t hash_value(const AttentionKey& k) {
  std::size_t h = std::hash<std::int64_t>{}(k.batch);
  for (std::int64_t v : {k.heads_q, k.heads_kv, k.seq_q, k.seq_kv, k.head_dim_qk, k.head_dim_v}) {
    mix(h, std::hash<std::int64_t>{}(v));
  }
  mix(h, static_cast<std::size_t>(k.dtype) * 4 + static_cast<std::size_t>(k.direction) * 2 + (k.causal ? 1 : 0));
  return h;
}

std::size_t hash_value(const CollectiveKey& k) {
  std::size_t h = std::hash<std::int64_t>{}(k.bytes);
  mix(h, static_cast<std::size_t>(k.op));
  mix(h, static_cast<std::size_t>(k.ranks));
  mix(h, static_cast<std::size_t>(k.ranks_per_node));
  mix(h, static_cast<std::size_t>(k.dtype));
  return h;
}

std::size_t hash_value(const MemoryOpKey& k) {
  std::size_t h = std::hash<std::string>{}(k.kind);
  mix(h, std::hash<std::int64_t>{}(k.bytes));
  return h;
}

}  // namespace calisim
