// Cost of communication that runs beside compute (MODELING.md §3): each overlapped pair costs
// max(compute, comm) plus the slowdown the compute suffers while communication kernels share
// its SMs, charged on the hidden part. With 0 <= slowdown <= 1 the added time lies in
// [0, comm]: overlap never makes a step slower than running the two back to back, and never
// faster than the compute alone.
#pragma once

#include <algorithm>
#include <limits>
#include <vector>

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

// Megatron's gradient sync under the interleaved schedule (overlap_grad_reduce with its default
// align_grad_reduce): each model chunk's buckets are reduced together once that chunk's last
// backward has run, and the syncs go out one after another on the data-parallel communicator.
// The chunks finish their last backward in reverse order (chunk v-1 first, chunk 0 last), so
// chunk c's sync has the remaining backward of chunks 0..c-1 to hide behind and chunk 0's is
// exposed whole. `comm_s[c]`: chunk c's reduction; `tail_bwd_s[c]`: backward compute left on this
// rank after chunk c's last backward (tail_bwd_s[0] = 0). The cooldown's pipeline waits are not
// counted as cover (conservative). Returns the exposed time plus the slowdown on the hidden part.
inline double chunked_sync_exposed_s(const std::vector<double>& comm_s, const std::vector<double>& tail_bwd_s,
                                     double slowdown) {
  double finish = -std::numeric_limits<double>::infinity(), total = 0;
  for (std::size_t c = comm_s.size(); c-- > 0;) {
    finish = std::max(finish, -tail_bwd_s[c]) + comm_s[c];
    total += comm_s[c];
  }
  const double exposed = std::clamp(finish, 0.0, total);
  return exposed + slowdown * (total - exposed);
}

// Megatron's parameter all-gather under the interleaved schedule (overlap_param_gather with its
// default align_param_gather): the gathers of chunks 0 and 1 are launched when the step starts,
// that of chunk k ≥ 2 when this rank runs the forward unit `rank` places before chunk k-1's first
// one (grad-sync's mirror: every pipeline rank launches at the same wall time), all on one
// data-parallel communicator in launch order. A chunk's first forward waits for its first bucket
// and overlaps the rest with itself, bucket by bucket. Cover: this rank's forwards of the first
// micro-batch group (`group` units per chunk, chunk 0 first); the warm-up's pipeline waits are not
// counted (conservative). `comm_s[k]`: chunk k's gather; `fwd_s[k]`: one micro-batch forward of
// chunk k; `buckets[k]` ≥ 1. With one chunk this is bucketed_overlap_s. Returns the exposed time
// plus the slowdown on the hidden part.
inline double chunked_gather_exposed_s(const std::vector<double>& comm_s, const std::vector<double>& fwd_s,
                                       const std::vector<double>& buckets, int group, int rank, double slowdown) {
  const int v = static_cast<int>(comm_s.size());
  std::vector<double> finish(v, 0.0);
  double t = 0, stream = 0, exposed = 0, total = 0;
  auto launch = [&](int k, double at) {
    stream = std::max(stream, at) + comm_s[k];
    finish[k] = stream;
  };
  for (int k = 0; k < v; ++k) total += comm_s[k];
  for (int k = 0; k < std::min(v, 2); ++k) launch(k, 0.0);
  int next = 2;  // chunk k ≥ 2 goes out at unit max(0, (k−1)·group − rank), in chunk order
  for (int u = 0; u < v * group; ++u) {
    while (next < v && std::max(0, (next - 1) * group - rank) == u) launch(next++, t);
    const int k = u / group;
    if (u == k * group) {
      const double first_bucket_done = finish[k] - comm_s[k] * (1.0 - 1.0 / std::max(1.0, buckets[k]));
      const double wait = std::max({0.0, first_bucket_done - t, finish[k] - (t + fwd_s[k])});
      t += wait;
      exposed += wait;
    }
    t += fwd_s[k];
  }
  const double clamped = std::clamp(exposed, 0.0, total);
  return clamped + slowdown * (total - clamped);
}

}  // namespace calisim
