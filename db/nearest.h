// Nearest measured neighbours of a kernel key in log-shape space.
//
// Only rows of the same kind and the same categorical fields are candidates (GEMM: dtype,
// layout, accumulate; attention: causal, dtype, direction; collective: op, dtype; memory: kind).
// Distance is Euclidean over log2 of the numeric fields (GEMM m, n, k, batch; attention batch,
// heads, sequence lengths, head dims; collective bytes, ranks, ranks per node; memory bytes), so
// doubling one dimension is distance 1 whatever its size. Fits have no shape and are never
// neighbours. Pure: works on rows already loaded (EfficiencyDb::load_runs).
#pragma once

#include <string>
#include <vector>

#include "db/records.h"

namespace calisim::db {

struct Neighbour {
  double distance = 0;
  RunRecord run;
  MeasurementSet row;  // exactly one row
};

// The `count` nearest rows to `key` (canonical key text), nearest first; ties keep load order.
// Throws std::invalid_argument for a malformed key.
std::vector<Neighbour> nearest(const std::vector<RunBatch>& runs, const std::string& key, std::size_t count);

}  // namespace calisim::db
