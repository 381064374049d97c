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
//   timing      optional column: how the figure was timed (PublishedTiming below); when the column
//               is present every cell must name one; files without it load with `unknown`
//   notes       optional
// Rows become runs of source `published`, one per (device, source, timing, notes); the run notes
// read "source: S; timing: T[; notes]" so that the timing survives the database (published_timing
// reads it back); efficiency =
// tflops / dense peak, gb_s / HBM GB/s, busbw / link; times are derived from the rates (n = 0).
// Every row is checked before anything is written; errors name the line and the field.
#pragma once

#include <string>
#include <vector>

#include "db/efficiency_db.h"

namespace calisim::db {

// How a published figure was timed: what a prediction must be compared with.
//   kernel      the kernel alone (CUPTI / nsys / cuBLAS-level events around the kernel)
//   eager_loop  framework ops issued back to back from Python, events around the loop: each
//               iteration takes at least the host's per-op dispatch time, so a short kernel is
//               measured at the host's pace, not its own
//   unknown     the source does not say; treated as kernel timing
enum class PublishedTiming { kernel, eager_loop, unknown };
const char* to_string(PublishedTiming t);

// The timing recorded in a published run's notes by read_published_csv; `kernel` for every other
// run (measured, imported, predicted rows time kernels).
PublishedTiming published_timing(const RunRecord& run);

// Parses and converts; the database supplies device peaks only (nothing is written).
std::vector<RunBatch> read_published_csv(const std::string& path, EfficiencyDb& db);

}  // namespace calisim::db
