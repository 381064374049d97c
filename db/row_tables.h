// Internal to db/: how each record type maps onto its table's columns. One specialisation of
// RowTable per measurement table, so insertion and selection are written once (efficiency_db.cc).
//
// Contract: `columns` lists the columns after run_id, in the order bind() fills parameters and
// read() reads result columns; `key` is always first (canonical key text, key_text.h).
#pragma once

#include <string>
#include <vector>

#include "db/records.h"
#include "db/sqlite_handle.h"

namespace calisim::db::detail {

template <class Row>
struct RowTable;

#define CALISIM_ROW_TABLE(Row, Table, Member, Columns)                             \
  template <>                                                                      \
  struct RowTable<Row> {                                                           \
    static constexpr const char* table = Table;                                    \
    static constexpr const char* columns = Columns;                                \
    static std::vector<Row>& rows(MeasurementSet& s) { return s.Member; }          \
    static const std::vector<Row>& rows(const MeasurementSet& s) { return s.Member; } \
    static void bind(Statement& st, int first, const Row& r);                      \
    static Row read(const Statement& st, int first);                               \
  };

#define CALISIM_STATS_COLUMNS "median_s, min_s, p90_s, stddev_s, n_samples"

CALISIM_ROW_TABLE(GemmRow, "gemm_measurements", gemm,
                  "key, m, n, k, batch, dtype, layout, accumulate, " CALISIM_STATS_COLUMNS ", tflops, efficiency")
CALISIM_ROW_TABLE(AttentionRow, "attention_measurements", attention,
                  "key, batch, heads_q, heads_kv, seq_q, seq_kv, head_dim_qk, head_dim_v, causal, dtype, direction, "
                  CALISIM_STATS_COLUMNS ", tflops, efficiency")
CALISIM_ROW_TABLE(CollectiveRow, "collective_measurements", collective,
                  "key, op, bytes, ranks, ranks_per_node, dtype, " CALISIM_STATS_COLUMNS
                  ", algbw_gb_s, busbw_gb_s, link_gb_s, efficiency")
CALISIM_ROW_TABLE(MemoryOpRow, "memory_measurements", memory,
                  "key, kind, bytes, " CALISIM_STATS_COLUMNS ", gb_s, efficiency")
CALISIM_ROW_TABLE(MemoryFit, "memory_fits", memory_fits, "key, kind, bandwidth_gb_s, efficiency, latency_us")
CALISIM_ROW_TABLE(CollectiveFit, "collective_fits", collective_fits,
                  "key, op, tier, ranks, link_gb_s, efficiency, latency_us")

#undef CALISIM_ROW_TABLE

// Number of comma-separated names in a column list.
int column_count(const char* columns);

// The canonical key text of a row (key_text.h for fits).
std::string row_key(const GemmRow& r);
std::string row_key(const AttentionRow& r);
std::string row_key(const CollectiveRow& r);
std::string row_key(const MemoryOpRow& r);
std::string row_key(const MemoryFit& r);
std::string row_key(const CollectiveFit& r);

// Calls f(RowTable<Row>{}, rows) for each table of a measurement set, in schema order.
template <class Set, class F>
void for_each_table(Set& set, F&& f) {
  f(RowTable<GemmRow>{}, set.gemm);
  f(RowTable<AttentionRow>{}, set.attention);
  f(RowTable<CollectiveRow>{}, set.collective);
  f(RowTable<MemoryOpRow>{}, set.memory);
  f(RowTable<MemoryFit>{}, set.memory_fits);
  f(RowTable<CollectiveFit>{}, set.collective_fits);
}

}  // namespace calisim::db::detail
