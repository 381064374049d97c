// The accuracy the predictor reaches on the repository's data (docs/predictor.md reports the same
// numbers through `calisim predict --evaluate`). Thresholds sit just above what is reached, so a
// change that makes the predictor worse fails here.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "predictor/device_fit.h"
#include "predictor/evaluate.h"
#include "predictor_test_util.h"

namespace calisim::predictor {
namespace {

class Accuracy : public testing::ScratchDb {
 protected:
  // The three devices of the published figures, with the test profiles of their system files.
  static std::vector<DeviceData> published(db::EfficiencyDb& db) {
    return {data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie()), data(db, "NVIDIA A100 SXM4 80GB", testing::a100_sxm()),
            data(db, "NVIDIA H100 SXM5 80GB", testing::h100_sxm())};
  }
};

const ErrorSummary& find(const std::vector<ErrorSummary>& rows, const std::string& from, const std::string& device,
                         const std::string& family) {
  for (const auto& r : rows) {
    if (r.from == from && r.device == device && r.family == family) return r;
  }
  ADD_FAILURE() << "no row " << from << " -> " << device << " " << family;
  static const ErrorSummary none{};
  return none;
}

TEST_F(Accuracy, LeaveOneOutOnTheSimumaxA100Table) {
  auto db = make_db(false);
  const Evaluation e = evaluate({data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie())});
  const std::string dev = "NVIDIA A100 PCIe 80GB";
  const auto& gemm = find(e.leave_one_out, "", dev, "gemm bf16");
  EXPECT_EQ(gemm.n, 195u);
  EXPECT_LT(gemm.mape_pct, 4.7);
  // Backward 4.7 % -> 2.0 % (1.8 % with its per-CTA term) since its bound carries the causal grid's list-scheduled utilization
  // (core/tile_quantization.h) as forward's does; forward 4.4 % -> 4.7 %.
  EXPECT_LT(find(e.leave_one_out, "", dev, "attention bwd bf16").mape_pct, 2.5);
  EXPECT_LT(find(e.leave_one_out, "", dev, "attention fwd bf16").mape_pct, 5.0);
}

// Host time of one eager PyTorch op: host.op_dispatch_us of every shipped system file (10 µs, an
// assumption; docs/simulator.md "Host dispatch").
std::map<std::string, double> dispatch(double us) {
  return {{"NVIDIA A100 PCIe 80GB", us * 1e-6}, {"NVIDIA A100 SXM4 80GB", us * 1e-6}, {"NVIDIA H100 SXM5 80GB", us * 1e-6}};
}

TEST_F(Accuracy, CrossDeviceOnPublishedFigures) {
  auto db = make_db(true);
  const Evaluation e = evaluate(published(db), dispatch(10));
  const auto& gemm = find(e.cross_device, "NVIDIA A100 PCIe 80GB", "NVIDIA H100 SXM5 80GB", "gemm bf16");
  EXPECT_EQ(gemm.n, 6u);
  // 10.7 %: was 23.8 % comparing the predicted kernel with figures timed as eager torch.matmul loops
  // (79.6 % without the fixed per-call overhead). The 1024³ loop runs at the host's pace: its
  // predicted kernel (6.1 µs) is below the 10 µs dispatch, so the prediction is the dispatch bound,
  // +21.6 % against the measured 12.2 µs; the other five stay within 11 % (unchanged, kernel-bound).
  EXPECT_LT(gemm.mape_pct, 11.0);
  EXPECT_NE(gemm.note.find("prior"), std::string::npos);
  EXPECT_NE(gemm.note.find("a_c ceiling"), std::string::npos);
  EXPECT_NE(gemm.note.find("6 eager-loop rows: max(kernel, host 10.0 us/op)"), std::string::npos) << gemm.note;
  ASSERT_EQ(gemm.rows.size(), 6u);
  for (const auto& r : gemm.rows) {
    if (r.key.find("m=1024 n=1024 k=1024") != std::string::npos) {
      const double bound = 2.0 * 1024 * 1024 * 1024 / (989e12 * 10e-6);  // 2·1024³ FLOP in 10 µs at the peak
      EXPECT_NEAR(r.predicted, bound, 1e-9);
      EXPECT_LT(std::abs(r.predicted / r.actual - 1), 0.22);
      continue;
    }
    EXPECT_LT(std::abs(r.predicted / r.actual - 1), 0.115) << r.key;
  }
  // The MAMF row of the A100 SXM (0.869): 18.7 % with the system files' ratio.
  EXPECT_LT(find(e.cross_device, "NVIDIA A100 PCIe 80GB", "NVIDIA A100 SXM4 80GB", "gemm bf16").mape_pct, 14.5);
  const auto& fa2 = find(e.cross_device, "NVIDIA A100 SXM4 80GB", "NVIDIA H100 SXM5 80GB", "attention fwd fp16");
  EXPECT_EQ(fa2.n, 24u);
  // FA2 -> FA2 (was 76.8 % scaled to the FA3/cuDNN-calibrated figure): 5.4 % with the H100 file's
  // attention 0.50, derived from FA3 / cuDNN figures alone (2.0 % with the former 0.52, which took a
  // fwd+bwd factor from two of the scored FA2 H100 figures).
  // 5.4 % -> 4.5 % with the causal schedule and the diagonal's share in the bound.
  EXPECT_LT(fa2.mape_pct, 4.7);
  EXPECT_NE(fa2.note.find("FA2->FA2"), std::string::npos);
  EXPECT_EQ(fa2.note.find("kernel-generation change"), std::string::npos);
  // Reverse direction: the H100 source fit skips its host-bound 1024³ row, so its t0 is no longer
  // fitted (10 µs) from a host-timed figure but the 4 µs prior: 33.8 % -> 13.1 % on the SimuMax
  // GEMMs, 6.8 % -> 5.8 % on FA2.
  const auto& back = find(e.cross_device, "NVIDIA H100 SXM5 80GB", "NVIDIA A100 PCIe 80GB", "gemm bf16");
  EXPECT_LT(back.mape_pct, 13.5);
  EXPECT_NE(back.note.find("source fit skips 1 host-bound eager-loop row"), std::string::npos) << back.note;
  EXPECT_NE(back.note.find("(prior)"), std::string::npos) << back.note;
  EXPECT_LT(find(e.cross_device, "NVIDIA H100 SXM5 80GB", "NVIDIA A100 SXM4 80GB", "attention fwd fp16").mape_pct, 5.0);
  // H100 GEMM leave-one-out, 6 eager-loop rows: 23.4 % -> 7.0 % (each fit skips the host-bound rows of
  // the other five; an eager held-out row is predicted as max(kernel, dispatch)).
  const auto& loo = find(e.leave_one_out, "", "NVIDIA H100 SXM5 80GB", "gemm bf16");
  EXPECT_LT(loo.mape_pct, 7.5);
  EXPECT_NE(loo.note.find("6 eager-loop rows"), std::string::npos) << loo.note;
}

// H100 <-> H200 on measured data: the H200's bf16 GEMMs measured by calisim's profiler
// (calibration/data/h200/, 598 rows: sweeps and the validation rows' shapes) against the six
// published H100 SXM GEMM figures, both ways. Same SMs and clocks, 1.43x the bandwidth: a GEMM
// stays compute-bound on both, so what is scored is the ceiling anchoring (the H200 rows' own
// q95 ceiling against the H100's MAMF) and the shape dependence each side's fit learned.
TEST_F(Accuracy, CrossDeviceBetweenPublishedH100AndMeasuredH200) {
  auto db = make_db(true);
  for (const char* f : {"rows.json", "sweep.json"}) {
    const db::Dump dump = db::read_json_dump(db::testing::fixture(std::string("../../calibration/data/h200/") + f));
    for (const auto& d : dump.devices) db.put_device(d);
    db.insert_runs(dump.runs);
  }
  DeviceData h200 = data(db, "NVIDIA H200 SXM 141GB", testing::h200());
  std::size_t bf16 = 0;
  for (auto& r : h200.runs) {  // bf16 GEMMs (all the H100 side has) and the attention rows
    auto& g = r.rows.gemm;
    g.erase(std::remove_if(g.begin(), g.end(), [](const db::GemmRow& row) { return row.key.dtype != DType::bf16; }),
            g.end());
    r.rows.memory.clear();
    bf16 += g.size();
  }
  EXPECT_EQ(bf16, 598u);
  auto dispatch_s = dispatch(10);
  dispatch_s["NVIDIA H200 SXM 141GB"] = 10e-6;
  const Evaluation e = evaluate({data(db, "NVIDIA H100 SXM5 80GB", testing::h100_sxm()), h200}, dispatch_s);
  // H200 -> H100: 6.7 %; the worst row is the host-bound 1024³ eager loop (+21.6 %, as from the A100).
  const auto& to_h100 = find(e.cross_device, "NVIDIA H200 SXM 141GB", "NVIDIA H100 SXM5 80GB", "gemm bf16");
  EXPECT_EQ(to_h100.n, 6u);
  EXPECT_LT(to_h100.mape_pct, 7.0);
  EXPECT_NE(to_h100.note.find("a_c ceiling 0.823 -> MAMF 0.800"), std::string::npos) << to_h100.note;
  // H100 -> H200: 6.2 % over 598 measured shapes, from a fit of five kernel-bound squares.
  const auto& to_h200 = find(e.cross_device, "NVIDIA H100 SXM5 80GB", "NVIDIA H200 SXM 141GB", "gemm bf16");
  EXPECT_EQ(to_h200.n, 598u);
  EXPECT_LT(to_h200.mape_pct, 6.5);
  // On the measured device itself, leave-one-out: GEMM 3.8 %; cuDNN attention forward 4.1 %,
  // backward (below; 6.4 % and 10.9 % with equal-work waves). The causal schedule is most of the
  // difference: the measured causal rows at 4k tokens with b·h = 7 ... 48 sit at a constant 0.64
  // (fwd) and 0.52 (bwd) of its utilization, which ranges 0.57 ... 0.90 over them.
  const std::string h200_name = "NVIDIA H200 SXM 141GB";
  EXPECT_LT(find(e.leave_one_out, "", h200_name, "gemm bf16").mape_pct, 4.0);
  EXPECT_LT(find(e.leave_one_out, "", h200_name, "attention fwd bf16").mape_pct, 4.5);
  // Backward 7.9 % -> 4.1 % with its per-CTA overhead chosen by leave-one-out inside each fit
  // (kCtaOverheadBlocks): a key-block CTA visiting w query blocks runs at w / (w + c). The fit of
  // all 95 rows takes c = 2 blocks; a 128 x 252-token context-parallel chunk (w = 1) was +80-90 %.
  EXPECT_LT(find(e.leave_one_out, "", h200_name, "attention bwd bf16").mape_pct, 4.5);
  std::vector<db::AttentionRow> bwd;
  for (const auto& r : h200.runs) {
    for (const auto& a : r.rows.attention) {
      if (a.key.direction == AttentionDirection::backward && a.key.dtype == DType::bf16) bwd.push_back(a);
    }
  }
  ASSERT_EQ(bwd.size(), 95u);
  EXPECT_DOUBLE_EQ(fit_attention(bwd, h200.profile.spec).cta_overhead_blocks, 2.0);
}

// How much the published-figure numbers lean on the assumed 10 µs dispatch time.
TEST_F(Accuracy, EagerLoopRuleSensitivityToTheDispatchTime) {
  auto db = make_db(true);
  const auto devices = published(db);
  const auto cross = [&](double us) {
    return find(evaluate(devices, dispatch(us)).cross_device, "NVIDIA A100 PCIe 80GB", "NVIDIA H100 SXM5 80GB",
                "gemm bf16").mape_pct;
  };
  // No dispatch time: the rule is off, eager rows are scored and fitted as kernels (the former 23.8 %).
  const double off = find(evaluate(devices).cross_device, "NVIDIA A100 PCIe 80GB", "NVIDIA H100 SXM5 80GB",
                          "gemm bf16").mape_pct;
  EXPECT_GT(off, 23.0);
  EXPECT_LT(off, 24.5);
  // 5 µs: below the predicted 6.1 µs kernel, so no row is host-bound and nothing changes.
  EXPECT_NEAR(cross(5), off, 1e-9);
  EXPECT_LT(cross(10), 11.0);
  // 20 µs: 1024³ predicted at 20 µs against the measured 12.2 µs (-39 %): 13.6 %.
  EXPECT_GT(cross(20), cross(10));
  EXPECT_LT(cross(20), 14.0);
}

}  // namespace
}  // namespace calisim::predictor
