// The fitted model of one measured device as a source of cross-device prediction, and the
// eager-loop rule it is built with. One function (fit_source) serves both `calisim predict`'s
// written rows (prediction_rows.h) and the cross-device check (evaluate.h), so what the check scores
// is what users get.
//
// Eager-loop rule: a published figure timed as a host-issued loop (db/published_import.h
// PublishedTiming::eager_loop) cannot show an iteration faster than the host dispatches one op.
// Such a GEMM or attention row is left out of the kernel-efficiency fits when the fit of the other
// rows of its group (GEMM per dtype, attention per dtype and direction) predicts its kernel below
// the device's op dispatch time: its figure is the host's pace and bounds the kernel time from
// above only. Rows timed at the kernel or `unknown` are always fitted; nothing is left out when
// fewer than kMinRowsPerFit rows would remain, or when the dispatch time is 0 (unknown: no bound).
// Pure; deterministic.
#pragma once

#include <array>
#include <cstddef>
#include <memory>
#include <utility>
#include <vector>

#include "predictor/device_fit.h"
#include "predictor/prediction_rows.h"
#include "predictor/scaled_model.h"

namespace calisim::predictor {

// Whether the run's figures were timed as an eager host loop.
bool eager_loop(const db::RunBatch& batch);

// Time of a key's work at the device's dense peak (memory ops: at its HBM bandwidth); a row of
// efficiency e takes work_s / e.
double work_s(const GemmKey& key, const DeviceSpec& device);
double work_s(const AttentionKey& key, const DeviceSpec& device);
double work_s(const MemoryOpKey& key, const DeviceSpec& device);

// Efficiency of one iteration of a host-issued loop: the kernel's time, or the host's dispatch
// time of one op when that is longer. Unchanged when dispatch_s or the efficiency is not > 0.
double host_bound(double kernel_efficiency, double work_s, double dispatch_s);

// `v` without its element i (leave-one-out and the host-bound test both refit without one row).
template <class T>
std::vector<T> without(const std::vector<T>& v, std::size_t i) {
  std::vector<T> out;
  out.reserve(v.size() - 1);
  for (std::size_t j = 0; j < v.size(); ++j) {
    if (j != i) out.push_back(v[j]);
  }
  return out;
}

// Rows of one shape-fit group, each with its timing and its place in the runs (run, row index).
template <class Row>
struct TimedGroup {
  std::vector<Row> rows;
  std::vector<bool> eager;
  std::vector<std::pair<std::size_t, std::size_t>> at;
};
struct TimedGroups {
  std::array<TimedGroup<db::GemmRow>, kDTypeCount> gemm;
  std::array<TimedGroup<db::AttentionRow>, 2 * kDTypeCount> attention;  // by attention_group
};
// The GEMM and attention fit groups of the runs (predicted runs left out).
TimedGroups timed_groups(const std::vector<db::RunBatch>& runs);

// Which rows of a group the kernel-efficiency fit leaves out (the rule above). Every eager row is
// judged against the fit (fit_gemm / fit_attention with overhead_prior_s) of all the other rows.
std::vector<bool> host_bound_rows(const TimedGroup<db::GemmRow>& group, const DeviceSpec& device, double dispatch_s,
                                  double overhead_prior_s);
std::vector<bool> host_bound_rows(const TimedGroup<db::AttentionRow>& group, const DeviceSpec& device,
                                  double dispatch_s, double overhead_prior_s);

// A source device ready for make_scaled_model.
struct SourceFit {
  std::vector<db::RunBatch> runs;  // the device's runs, host-bound eager-loop rows taken out
  std::size_t gemm_left_out = 0, attention_left_out = 0;  // how many were taken out
  std::shared_ptr<const DeviceFit> fit;                   // of `runs`
  bool overhead_fitted = false;  // the profile's kernel overhead is the fit's t0 (else its own or the prior)
  SourceDevice source;           // profile (row links and kernels, t0, GEMM ceilings) + interpolating model
};

// dispatch_s: host time of one eager op on this device (its system's host.op_dispatch_us); 0 turns
// the rule off.
SourceFit fit_source(const DeviceData& device, double dispatch_s);

}  // namespace calisim::predictor
