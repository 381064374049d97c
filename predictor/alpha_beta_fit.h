// α-β (latency-bandwidth) fits: time(size) = alpha_s + size / beta_per_s.
//
// The model of collectives (size = bytes on the wire, nccl-tests busbw convention) and of
// bandwidth-bound memory ops (size = bytes moved). It gives the size-dependent efficiency the
// database cannot store for every size: small transfers pay the latency, large ones approach
// beta. Fitted by least squares on relative error (weights 1/t²), so a 10 µs point counts as much
// as a 10 ms one; alpha is kept >= 0 (refitted through the origin when the free fit goes
// negative). With one distinct size alpha is 0 and beta reproduces that point.
#pragma once

#include <span>

namespace calisim::predictor {

struct AlphaBetaFit {
  double alpha_s = 0;
  double beta_per_s = 0;  // units of size per second (bytes/s)
  double time_s(double size) const { return alpha_s + size / beta_per_s; }
};

// sizes and times_s have equal length >= 1, all positive; throws std::invalid_argument otherwise.
AlphaBetaFit fit_alpha_beta(std::span<const double> sizes, std::span<const double> times_s);

}  // namespace calisim::predictor
