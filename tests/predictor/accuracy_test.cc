// The accuracy the predictor reaches on the repository's data (docs/predictor.md reports the same
// numbers through `calisim predict --evaluate`). Thresholds sit just above what is reached, so a
// change that makes the predictor worse fails here.
#include <gtest/gtest.h>

#include <cmath>

#include "predictor/evaluate.h"
#include "predictor_test_util.h"

namespace calisim::predictor {
namespace {

using Accuracy = testing::ScratchDb;

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
  EXPECT_LT(find(e.leave_one_out, "", dev, "attention bwd bf16").mape_pct, 5.0);
  EXPECT_LT(find(e.leave_one_out, "", dev, "attention fwd bf16").mape_pct, 5.0);
}

TEST_F(Accuracy, CrossDeviceOnPublishedFigures) {
  auto db = make_db(true);
  const std::vector<DeviceData> devices{data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie()),
                                        data(db, "NVIDIA A100 SXM4 80GB", testing::a100_sxm()),
                                        data(db, "NVIDIA H100 SXM5 80GB", testing::h100_sxm())};
  const Evaluation e = evaluate(devices);
  const auto& gemm = find(e.cross_device, "NVIDIA A100 PCIe 80GB", "NVIDIA H100 SXM5 80GB", "gemm bf16");
  EXPECT_EQ(gemm.n, 6u);
  // 23.8 %: was 79.6 % without the fixed per-call overhead, 25.4 % with the system files' matmul ratio
  // instead of the source rows' own ceiling (achievable_ceiling.h). 1024³ (host dispatch in the
  // figure) alone is +100 %; the other five stay within 11 %.
  EXPECT_LT(gemm.mape_pct, 24.5);
  EXPECT_NE(gemm.note.find("prior"), std::string::npos);
  EXPECT_NE(gemm.note.find("a_c ceiling"), std::string::npos);
  ASSERT_EQ(gemm.rows.size(), 6u);
  for (const auto& r : gemm.rows) {
    if (r.key.find("m=1024 n=1024 k=1024") != std::string::npos) continue;
    EXPECT_LT(std::abs(r.predicted / r.actual - 1), 0.115) << r.key;
  }
  // The MAMF row of the A100 SXM (0.869): 18.7 % with the system files' ratio.
  EXPECT_LT(find(e.cross_device, "NVIDIA A100 PCIe 80GB", "NVIDIA A100 SXM4 80GB", "gemm bf16").mape_pct, 14.5);
  const auto& fa2 = find(e.cross_device, "NVIDIA A100 SXM4 80GB", "NVIDIA H100 SXM5 80GB", "attention fwd fp16");
  EXPECT_EQ(fa2.n, 24u);
  // FA2 -> FA2 (was 76.8 % scaled to the FA3/cuDNN-calibrated figure): 5.4 % with the H100 file's
  // attention 0.50, derived from FA3 / cuDNN figures alone (2.0 % with the former 0.52, which took a
  // fwd+bwd factor from two of the scored FA2 H100 figures).
  EXPECT_LT(fa2.mape_pct, 5.6);
  EXPECT_LT(find(e.cross_device, "NVIDIA H100 SXM5 80GB", "NVIDIA A100 SXM4 80GB", "attention fwd fp16").mape_pct, 7.0);
  EXPECT_NE(fa2.note.find("FA2->FA2"), std::string::npos);
  EXPECT_EQ(fa2.note.find("kernel-generation change"), std::string::npos);
  // H100 GEMM leave-one-out: the overhead is fitted from its own short rows (1024³, 2048³).
  EXPECT_LT(find(e.leave_one_out, "", "NVIDIA H100 SXM5 80GB", "gemm bf16").mape_pct, 25.0);
}

}  // namespace
}  // namespace calisim::predictor
