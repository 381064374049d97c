#include "db/row_tables.h"

#include <string>

#include "db/key_text.h"

namespace calisim::db::detail {
namespace {

void bind_stats(Binder& b, const SampleStats& s) { b(s.median_s)(s.min_s)(s.p90_s)(s.stddev_s)(s.n); }

SampleStats read_stats(const Statement& st, int c) {
  return SampleStats{st.real(c), st.real(c + 1), st.real(c + 2), st.real(c + 3), st.int64(c + 4)};
}

}  // namespace

int column_count(const char* columns) {
  int n = 1;
  for (const char* p = columns; *p; ++p) n += *p == ',';
  return n;
}

std::string row_key(const GemmRow& r) { return to_string(r.key); }
std::string row_key(const AttentionRow& r) { return to_string(r.key); }
std::string row_key(const CollectiveRow& r) { return to_string(r.key); }
std::string row_key(const MemoryOpRow& r) { return to_string(r.key); }
std::string row_key(const MemoryFit& r) { return fit_key(r); }
std::string row_key(const CollectiveFit& r) { return fit_key(r); }

// The key text column (read at `first`) is redundant with the typed columns; reads use the
// typed columns and skip it.

void RowTable<GemmRow>::bind(Statement& st, int i, const GemmRow& r) {
  Binder b(st, i);
  const GemmKey& k = r.key;
  b(row_key(r))(k.m)(k.n)(k.k)(k.batch);
  b(to_string(k.dtype))(to_string(k.layout))(k.accumulate ? 1 : 0);
  bind_stats(b, r.stats);
  b(r.tflops)(r.efficiency);
}

GemmRow RowTable<GemmRow>::read(const Statement& st, int c) {
  GemmRow r;
  r.key.m = st.int64(c + 1);
  r.key.n = st.int64(c + 2);
  r.key.k = st.int64(c + 3);
  r.key.batch = st.int64(c + 4);
  r.key.dtype = parse_dtype(st.text(c + 5));
  r.key.layout = parse_gemm_layout(st.text(c + 6));
  r.key.accumulate = st.int64(c + 7) != 0;
  r.stats = read_stats(st, c + 8);
  r.tflops = st.real(c + 13);
  r.efficiency = st.real(c + 14);
  return r;
}

void RowTable<AttentionRow>::bind(Statement& st, int i, const AttentionRow& r) {
  Binder b(st, i);
  const AttentionKey& k = r.key;
  b(row_key(r))(k.batch)(k.heads_q)(k.heads_kv)(k.seq_q);
  b(k.seq_kv)(k.head_dim_qk)(k.head_dim_v)(k.causal ? 1 : 0);
  b(to_string(k.dtype))(k.direction == AttentionDirection::forward ? "fwd" : "bwd");
  bind_stats(b, r.stats);
  b(r.tflops)(r.efficiency);
}

AttentionRow RowTable<AttentionRow>::read(const Statement& st, int c) {
  AttentionRow r;
  r.key.batch = st.int64(c + 1);
  r.key.heads_q = st.int64(c + 2);
  r.key.heads_kv = st.int64(c + 3);
  r.key.seq_q = st.int64(c + 4);
  r.key.seq_kv = st.int64(c + 5);
  r.key.head_dim_qk = st.int64(c + 6);
  r.key.head_dim_v = st.int64(c + 7);
  r.key.causal = st.int64(c + 8) != 0;
  r.key.dtype = parse_dtype(st.text(c + 9));
  r.key.direction = st.text(c + 10) == "fwd" ? AttentionDirection::forward : AttentionDirection::backward;
  r.stats = read_stats(st, c + 11);
  r.tflops = st.real(c + 16);
  r.efficiency = st.real(c + 17);
  return r;
}

void RowTable<CollectiveRow>::bind(Statement& st, int i, const CollectiveRow& r) {
  Binder b(st, i);
  const CollectiveKey& k = r.key;
  b(row_key(r))(to_string(k.op))(k.bytes)(k.ranks);
  b(k.ranks_per_node)(to_string(k.dtype));
  bind_stats(b, r.stats);
  b(r.algbw_gb_s)(r.busbw_gb_s)(r.link_gb_s)(r.efficiency);
}

CollectiveRow RowTable<CollectiveRow>::read(const Statement& st, int c) {
  CollectiveRow r;
  r.key.op = parse_collective_op(st.text(c + 1));
  r.key.bytes = st.int64(c + 2);
  r.key.ranks = static_cast<int>(st.int64(c + 3));
  r.key.ranks_per_node = static_cast<int>(st.int64(c + 4));
  r.key.dtype = parse_dtype(st.text(c + 5));
  r.stats = read_stats(st, c + 6);
  r.algbw_gb_s = st.real(c + 11);
  r.busbw_gb_s = st.real(c + 12);
  r.link_gb_s = st.real(c + 13);
  r.efficiency = st.real(c + 14);
  return r;
}

void RowTable<MemoryOpRow>::bind(Statement& st, int i, const MemoryOpRow& r) {
  Binder b(st, i);
  b(row_key(r))(r.key.kind)(r.key.bytes);
  bind_stats(b, r.stats);
  b(r.gb_s)(r.efficiency);
}

MemoryOpRow RowTable<MemoryOpRow>::read(const Statement& st, int c) {
  MemoryOpRow r;
  r.key.kind = st.text(c + 1);
  r.key.bytes = st.int64(c + 2);
  r.stats = read_stats(st, c + 3);
  r.gb_s = st.real(c + 8);
  r.efficiency = st.real(c + 9);
  return r;
}

void RowTable<MemoryFit>::bind(Statement& st, int i, const MemoryFit& r) {
  Binder b(st, i);
  b(row_key(r))(r.kind)(r.bandwidth_gb_s)(r.efficiency);
  b(r.latency_us);
}

MemoryFit RowTable<MemoryFit>::read(const Statement& st, int c) {
  return MemoryFit{st.text(c + 1), st.real(c + 2), st.real(c + 3), st.real(c + 4)};
}

void RowTable<CollectiveFit>::bind(Statement& st, int i, const CollectiveFit& r) {
  Binder b(st, i);
  b(row_key(r))(to_string(r.op))(to_string(r.tier))(r.ranks);
  b(r.link_gb_s)(r.efficiency)(r.latency_us);
}

CollectiveFit RowTable<CollectiveFit>::read(const Statement& st, int c) {
  CollectiveFit r;
  r.op = parse_collective_op(st.text(c + 1));
  r.tier = parse_link_tier(st.text(c + 2));
  r.ranks = static_cast<int>(st.int64(c + 3));
  r.link_gb_s = st.real(c + 4);
  r.efficiency = st.real(c + 5);
  r.latency_us = st.real(c + 6);
  return r;
}

}  // namespace calisim::db::detail
