#include "db/nearest.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

#include "db/key_text.h"
#include "db/row_tables.h"

namespace calisim::db {
namespace {

// A key's categorical part (must match) and numeric part (log2, compared by distance).
struct Shape {
  std::string category;
  std::vector<double> logs;
};

double lg(double v) { return std::log2(std::max(v, 1.0)); }

Shape shape_of(const GemmKey& k) {
  return {fmt::format("{} {} {}", to_string(k.dtype), to_string(k.layout), k.accumulate),
          {lg(k.m), lg(k.n), lg(k.k), lg(k.batch)}};
}
Shape shape_of(const AttentionKey& k) {
  return {fmt::format("{} {} {}", k.causal, to_string(k.dtype), static_cast<int>(k.direction)),
          {lg(k.batch), lg(k.heads_q), lg(k.heads_kv), lg(k.seq_q), lg(k.seq_kv), lg(k.head_dim_qk),
           lg(k.head_dim_v)}};
}
Shape shape_of(const CollectiveKey& k) {
  return {fmt::format("{} {}", to_string(k.op), to_string(k.dtype)),
          {lg(k.bytes), lg(k.ranks), lg(k.ranks_per_node)}};
}
Shape shape_of(const MemoryOpKey& k) { return {k.kind, {lg(k.bytes)}}; }

double distance(const Shape& a, const Shape& b) {
  double d = 0;
  for (std::size_t i = 0; i < a.logs.size(); ++i) d += (a.logs[i] - b.logs[i]) * (a.logs[i] - b.logs[i]);
  return std::sqrt(d);
}

template <class Key, class Row>
void collect(const Key& query, const std::vector<RunBatch>& runs, std::vector<Row> MeasurementSet::*member,
             std::vector<Neighbour>& out) {
  const Shape q = shape_of(query);
  for (const RunBatch& b : runs) {
    for (const Row& r : b.rows.*member) {
      const Shape s = shape_of(r.key);
      if (s.category != q.category) continue;
      Neighbour n{distance(q, s), b.run, {}};
      (n.row.*member).push_back(r);
      out.push_back(std::move(n));
    }
  }
}

}  // namespace

std::vector<Neighbour> nearest(const std::vector<RunBatch>& runs, const std::string& key, std::size_t count) {
  std::vector<Neighbour> out;
  switch (key_kind(key)) {
    case KeyKind::gemm: collect(parse_gemm_key(key), runs, &MeasurementSet::gemm, out); break;
    case KeyKind::attention: collect(parse_attention_key(key), runs, &MeasurementSet::attention, out); break;
    case KeyKind::collective: collect(parse_collective_key(key), runs, &MeasurementSet::collective, out); break;
    case KeyKind::memory: collect(parse_memory_key(key), runs, &MeasurementSet::memory, out); break;
    case KeyKind::memory_fit:
    case KeyKind::collective_fit: break;
  }
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.distance < b.distance; });
  if (out.size() > count) out.resize(count);
  return out;
}

}  // namespace calisim::db
