// The EfficiencyModel the simulator gets from a database (cli/efficiency_source.h): the device's
// rows, then the predictor's fits of those rows where the fits have data to stand on, then the
// fallback. ARCHITECTURE.md "Efficiency resolution order", with the guard rails of
// docs/predictor.md "What the simulator gets":
//   1. an exact key, a padded GEMM or a stored bandwidth fit (db_efficiency_model.h)
//                                         -> `measured` / `interpolated`; `scaled` for predicted runs
//   2. the Eigen fit (device_fit.h) of the device's own rows (runs not of source `predicted`)
//                                         -> `interpolated`
//   3. the same fit over the device's rows of source `predicted` (written by `calisim predict`),
//      for groups step 2 does not serve  -> `scaled`, with the origin of those rows
//   4. `fallback` (the roofline model)    -> its answer, unchanged.
// Steps 2 and 3 answer a GEMM or attention key only when
//   - its group (dtype; dtype and direction for attention) has at least kMinGemmRowsToServe /
//     kMinAttentionRowsToServe rows: fewer rows than the fit has coefficients leave it decided by
//     its ridge penalty rather than by data;
//   - every size of the key lies within the range the group's rows span, widened by a margin
//     factor either way (GEMM: m, n, k, batch, kGemmSizeMargin; attention: seq_q, seq_kv,
//     head_dim_qk, batch * heads_q, kAttentionSizeMargin). Outside, the fit's learned part is
//     clamped to its edge and only the roofline term moves: a guess, not data, so the roofline
//     answers and says so. The GEMM margin is backed by held-out octaves of the SimuMax table
//     (tests/predictor/served_model_test.cc, docs/predictor.md); the attention one is narrower
//     because that table holds a single sequence length, so nothing backs a wider one.
// Collective and memory fits (alpha-beta in the message size, physically bounded at both ends)
// need kMinCurveRowsToServe rows and are not limited in size. Collective answers are re-expressed
// against `collective_link` exactly as db_efficiency_model.h does for rows.
// Building fits every group once (the cost is in bench/predictor_bench.cc); calls do not
// allocate, lock or do I/O, and are safe from many threads.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/device_spec.h"
#include "core/efficiency_model.h"
#include "db/db_efficiency_model.h"
#include "db/records.h"
#include "predictor/shape_features.h"

namespace calisim::predictor {

inline constexpr std::size_t kMinGemmRowsToServe = kGemmFeatureCount + 1;           // 14
inline constexpr std::size_t kMinAttentionRowsToServe = kAttentionFeatureCount + 1; // 10
inline constexpr std::size_t kMinCurveRowsToServe = 3;  // two alpha-beta parameters and one to spare
inline constexpr double kGemmSizeMargin = 4.0;
inline constexpr double kAttentionSizeMargin = 2.0;

// `device`: the spec the fits use (peaks, HBM bandwidth, sm_count for wave quantization).
// `fallback` must not be null (std::invalid_argument).
std::unique_ptr<EfficiencyModel> make_served_model(const DeviceSpec& device, const db::DeviceRecord& record,
                                                   const std::vector<db::RunBatch>& runs,
                                                   std::shared_ptr<const EfficiencyModel> fallback,
                                                   CollectiveLinkFn collective_link = {});

// Opens the database read-only and builds make_served_model for `device_name` (a name or alias)
// with the record's spec. `system_spec` (the system file's description of the same device) fills
// what the record lacks: the SM count (SimuMax imports carry none) and, for a record without any
// peak (a CSV import), the peaks and HBM bandwidth, without which no fit could be used; each fill
// of the latter kind is said in `notes` (may be null). Throws InputError like
// load_db_efficiency_model.
std::unique_ptr<EfficiencyModel> load_served_model(const std::string& db_path, const std::string& device_name,
                                                   std::shared_ptr<const EfficiencyModel> fallback,
                                                   CollectiveLinkFn collective_link, const DeviceSpec& system_spec,
                                                   std::vector<std::string>* notes = nullptr);

}  // namespace calisim::predictor
