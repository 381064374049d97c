// The fitted efficiency models of one device: what interpolation answers unmeasured shapes from.
//
// Per (family, dtype) — GEMM per dtype, attention per (dtype, direction) — a ridge fit
// (ridge_fit.h) of logit(r / bound) on the shape features of shape_features.h, where r is the work
// efficiency (the row's efficiency with the fixed per-call overhead t0 taken off, kernel_overhead.h)
// and bound is roofline_fraction(shape), times the grid's wave utilization for forward attention.
// The answer is add_overhead(bound · sigmoid(fit), t0), so it is bounded in (0, 1], follows the
// roofline and the overhead outside the data (both use the real shape; the learned correction sees
// features clamped to the fitted range), and tends to the measured level inside it. Collectives: an α-β fit per (op, ranks, ranks per node) over message sizes, the
// efficiency being busbw / link bandwidth of the rows' tier. Memory ops: an α-β fit per kind.
//
// Rows of source `predicted` are never fitted (no predictions from predictions). Pure: building
// reads only its arguments; the answers are const and safe to call from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/device_spec.h"
#include "db/records.h"
#include "predictor/alpha_beta_fit.h"
#include "predictor/kernel_overhead.h"
#include "predictor/ridge_fit.h"

namespace calisim::predictor {

// Minimum rows for a shape fit; groups with fewer rows are not fitted (the caller falls back).
inline constexpr std::size_t kMinRowsPerFit = 3;

// A shape fit of the work efficiency r (kernel_overhead.h: the rows with the fixed per-call
// overhead t0 taken off) and that t0. t0 is chosen among a grid of 0-16 µs by the exact
// leave-one-out error of the efficiency when the rows hold at least kMinShortRows problems short
// enough to show it (time < kShortRowFactor · prior); otherwise it is the prior.
struct ShapeFit {
  LinearFit fit;
  double overhead_s = 0;
  bool overhead_fitted = false;  // chosen from the rows (false: the prior)
  // Backward attention: the fixed work of one CTA, in 128 x 128 blocks (loading its key/value
  // block, writing dK/dV): a CTA that visits w query blocks runs at w / (w + c) of a long one.
  // Chosen from kCtaOverheadBlocks with t0 by the same leave-one-out error; 0 elsewhere, and 0
  // when the rows cannot tell (every row visits as many blocks: the choices tie, the first wins).
  double cta_overhead_blocks = 0;
};
inline constexpr double kCtaOverheadBlocks[] = {0, 1, 2, 3, 4};

ShapeFit fit_gemm(const std::vector<db::GemmRow>& rows, const DeviceSpec& device,
                  double overhead_prior_s = kOverheadPriorUs * 1e-6);
double predict_gemm(const ShapeFit& fit, const GemmKey& key, const DeviceSpec& device);
ShapeFit fit_attention(const std::vector<db::AttentionRow>& rows, const DeviceSpec& device,
                       double overhead_prior_s = kOverheadPriorUs * 1e-6);
double predict_attention(const ShapeFit& fit, const AttentionKey& key, const DeviceSpec& device);

struct CollectiveCurve {
  AlphaBetaFit time;       // of wire bytes (bytes · bus factor)
  double link_gb_s = 0;    // the tier the rows ran over (median of the rows)
};
CollectiveCurve fit_collective(const std::vector<db::CollectiveRow>& rows);  // rows non-empty
double predict_collective(const CollectiveCurve& curve, const CollectiveKey& key);

// Memory ops: efficiency = bytes / time / HBM bandwidth.
AlphaBetaFit fit_memory(const std::vector<db::MemoryOpRow>& rows);  // rows non-empty
double predict_memory(const AlphaBetaFit& fit, const MemoryOpKey& key, const DeviceSpec& device);

// Group codes: which fit answers a key.
std::uint64_t collective_group(const CollectiveKey& key);
int attention_group(DType dtype, AttentionDirection direction);

// Rows of one device, split into fit groups (predicted rows left out).
struct GroupedRows {
  std::array<std::vector<db::GemmRow>, kDTypeCount> gemm;
  std::array<std::vector<db::AttentionRow>, 2 * kDTypeCount> attention;  // by attention_group
  std::unordered_map<std::uint64_t, std::vector<db::CollectiveRow>> collective;
  std::unordered_map<std::string, std::vector<db::MemoryOpRow>> memory;
};
GroupedRows group_rows(const std::vector<db::RunBatch>& runs);

class DeviceFit {
 public:
  // overhead_prior_s: t0 of groups without short rows (kernel_overhead_s of the device's profile).
  DeviceFit(const DeviceSpec& device, const GroupedRows& rows, double overhead_prior_s = kOverheadPriorUs * 1e-6);

  const DeviceSpec& device() const { return device_; }
  // nullopt when no fit covers the key's group.
  std::optional<double> gemm(const GemmKey& key) const;
  std::optional<double> attention(const AttentionKey& key) const;
  std::optional<double> collective(const CollectiveKey& key) const;
  std::optional<double> memory_op(const MemoryOpKey& key) const;
  // t0 fitted from the rows of the GEMM group with the most rows, if that group's was fitted
  // (not the prior): what scaling uses as this device's overhead.
  std::optional<double> fitted_overhead_s() const;

 private:
  DeviceSpec device_;
  std::array<std::optional<ShapeFit>, kDTypeCount> gemm_;
  std::array<std::optional<ShapeFit>, 2 * kDTypeCount> attention_;
  std::array<std::size_t, kDTypeCount> gemm_rows_{};
  std::unordered_map<std::uint64_t, CollectiveCurve> collective_;
  std::unordered_map<std::string, AlphaBetaFit> memory_;
};

}  // namespace calisim::predictor
