// Cost of communication that runs beside compute (MODELING.md §3): each overlapped pair costs
// max(compute, comm) plus the slowdown the compute suffers while communication kernels share
// its SMs, charged on the hidden part. With 0 <= slowdown <= 1 the added time lies in
// [0, comm]: overlap never makes a step slower than running the two back to back, and never
// faster than the compute alone.
#pragma once

#include <algorithm>

namespace calisim {

// Time added to `compute_s` by `comm_s` of communication overlapped with it.
inline double overlap_extra_s(double compute_s, double comm_s, double slowdown) {
  const double hidden = std::min(compute_s, comm_s);
  return comm_s - hidden + slowdown * hidden;
}

// Bucketed overlap (Megatron's DP grad reduce / param gather, FSDP per-layer gathers): `comm_s`
// split into `buckets` equal collectives issued as compute of `window_s` produces (or needs)
// them; the last bucket can start only when the window ends, so at least comm/buckets stays
// exposed. Returns the exposed time plus the slowdown on the hidden part.
inline double bucketed_overlap_s(double comm_s, double window_s, double buckets, double slowdown) {
  const double exposed = std::max(comm_s / std::max(1.0, buckets), comm_s - window_s);
  const double clamped = std::clamp(exposed, 0.0, comm_s);
  return clamped + slowdown * (comm_s - clamped);
}

}  // namespace calisim
