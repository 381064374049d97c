// Accuracy of the predictor on data it did not see.
//
// Leave-one-out, per device and family group: every row is predicted by the fit of the other
// rows of its group (GEMM per dtype, attention per dtype and direction, collectives per op,
// ranks and ranks per node, memory ops per kind), never from itself.
// Cross-device, for every ordered pair of devices (A, B): every row of B is predicted from A's
// rows (interpolated on A, then scaled to B's profile by cross_device.h) without any of B's
// rows. Rows of source `predicted` are neither fitted nor scored.
// Cross-device attention is scaled for the kernel generation of the source rows
// (kernel_overhead.h); when the target's rows are of another generation the note says
// "kernel-generation change ... not predicted from specs" and the error measures that change.
// Published figures timed as an eager loop (db/published_import.h PublishedTiming) are compared like
// with like: a host-issued loop cannot run an iteration faster than the host dispatches one op, so
// the predicted time of such a row is max(predicted kernel time, the device's op dispatch time), the
// per-iteration throughput bound of the loop. The kernel-efficiency fits skip such a row when the
// fit of the other rows of its group puts its kernel below the dispatch time (its figure then
// bounds the kernel time from above only); rows timed at the kernel or `unknown` are always fitted.
// Cross-device sources are built by source_fit.h's fit_source, as `calisim predict`'s rows are.
// A device without a dispatch time (absent or 0) gets no host bound, and its eager rows are fitted
// as kernel figures.
// Errors are absolute percentage errors of efficiency (equivalently of time) against the stored
// value; MAPE is their mean. Pure; deterministic.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "predictor/prediction_rows.h"

namespace calisim::predictor {

// One scored row (leave-one-out or cross-device): what was predicted for it and what was stored.
struct ScoredRow {
  std::string key;  // canonical key text (core/kernel_keys.h)
  double actual = 0, predicted = 0;
};

struct ErrorSummary {
  std::string from;           // source device (cross-device); empty for leave-one-out
  std::string device;         // the device whose rows were predicted
  std::string family;         // e.g. "gemm bf16", "attention bwd bf16", "collective all_reduce"
  std::size_t n = 0;
  double mape_pct = 0, max_ape_pct = 0;
  // How the rows were predicted where it matters for reading the number (cross-device): the
  // fixed overheads used, the attention kernel generation on each side.
  std::string note;
  std::vector<ScoredRow> rows;  // every scored row, in the device's row order
};

struct Evaluation {
  std::vector<ErrorSummary> leave_one_out;
  std::vector<ErrorSummary> cross_device;
};

// op_dispatch_s: host time of one eager framework op per device name (the system file's
// host.op_dispatch_us), for the eager-loop rule above.
Evaluation evaluate(const std::vector<DeviceData>& devices, const std::map<std::string, double>& op_dispatch_s = {});

}  // namespace calisim::predictor
