// Import of published kernel figures (papers, vendor tables, READMEs) from CSV.
//
// Columns (header required, order free; empty cells allowed where a kind does not use them):
//   device      a device already in the database (its peaks turn rates into efficiencies)
//   key         canonical key text (core/kernel_keys.h), e.g. "gemm m=2048 n=5120 k=6144 batch=1
//               dtype=bf16 layout=TN acc=0"
//   tflops      achieved TFLOP/s for gemm and attn keys (our FLOP convention, kernel_keys.cc)
//   gb_s        achieved GB/s for mem keys
//   busbw_gb_s  bus bandwidth for coll keys, with link_gb_s the per-GPU link it ran over
//   link_gb_s
//   source      the citation (paper, table, commit); required
//   notes       optional
// Rows become runs of source `published`, one per (device, source, notes); efficiency =
// tflops / dense peak, gb_s / HBM GB/s, busbw / link; times are derived from the rates (n = 0).
// Every row is checked before anything is written; errors name the line and the field.
#pragma once

#include <string>
#include <vector>

#include "db/efficiency_db.h"

namespace calisim::db {

// Parses and converts; the database supplies device peaks only (nothing is written).
std::vector<RunBatch> read_published_csv(const std::string& path, EfficiencyDb& db);

}  // namespace calisim::db
