#include <gtest/gtest.h>

#include <map>

#include "core/error.h"
#include "db/db_efficiency_model.h"
#include "predictor/achievable_ceiling.h"
#include "predictor/evaluate.h"
#include "predictor/interpolating_model.h"
#include "predictor/scaled_model.h"
#include "predictor_test_util.h"

namespace calisim::predictor {
namespace {

using Predict = testing::ScratchDb;

TEST_F(Predict, InterpolatingModelAnswersMeasuredThenInterpolated) {
  auto db = make_db(false);
  const auto d = data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie());
  const auto model = make_interpolating_model(d.profile.spec, d.record, d.runs, no_data_model());
  const GemmKey measured{4096, 1536, 5120, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_EQ(model->gemm(measured).source, EfficiencySource::measured);
  const GemmKey unmeasured{4096, 2000, 5000, 1, DType::bf16, GemmLayout::TN, false};
  const Efficiency e = model->gemm(unmeasured);
  EXPECT_EQ(e.source, EfficiencySource::interpolated);
  EXPECT_GT(e.value, 0.5);
  EXPECT_LT(e.value, 0.85);
  const AttentionKey attn{2, 32, 8, 2048, 2048, 128, 128, true, DType::bf16, AttentionDirection::forward};
  EXPECT_EQ(model->attention(attn).source, EfficiencySource::interpolated);
  // No fp8 attention data: the fallback answers.
  AttentionKey fp8 = attn;
  fp8.dtype = DType::fp8_e4m3;
  EXPECT_EQ(model->attention(fp8).source, EfficiencySource::roofline);
}

TEST_F(Predict, PredictedRowsAreStoredUnderTheTargetAndServedToTheSimulator) {
  auto db = make_db(false);
  const DeviceProfile target = testing::a100_sxm();
  const auto d = data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie());
  const Prediction p = predict_target({d}, target);
  EXPECT_EQ(p.batch.run.source, db::Source::predicted);
  EXPECT_NE(p.batch.run.notes.find("NVIDIA A100 PCIe 80GB"), std::string::npos);
  EXPECT_NE(p.batch.run.notes.find(kPredictorModelVersion), std::string::npos);
  EXPECT_EQ(p.batch.rows.gemm.size(), 195u);
  EXPECT_EQ(p.batch.rows.attention.size(), 24u);
  for (const auto& r : p.batch.rows.gemm) {
    EXPECT_GT(r.efficiency, 0.0);
    EXPECT_LE(r.efficiency, 1.0);
  }
  db.add_device_if_missing(p.device);
  db.insert_run(p.batch);

  // What `calisim simulate --db` does for the target system.
  const auto model = load_db_efficiency_model(db.path(), target.spec.name, no_data_model());
  const GemmKey k{4096, 1536, 5120, 1, DType::bf16, GemmLayout::TN, false};
  const Efficiency e = model->gemm(k);
  // Rows of a predicted run answer as `scaled`, naming the device they were predicted from.
  EXPECT_EQ(e.source, EfficiencySource::scaled);
  EXPECT_EQ(model->origin(e.origin), "NVIDIA A100 PCIe 80GB");
  // Same peaks, same SMs: the row as a fraction of the PCIe rows' own ceiling, times the SXM's MAMF
  // (0.78 / 0.9; achievable_ceiling.h).
  const double ceiling =
      with_gemm_ceilings(d.profile, d.runs, kOverheadPriorUs * 1e-6).matmul_ceiling[static_cast<int>(DType::bf16)];
  EXPECT_GT(ceiling, 0.7);
  EXPECT_LT(ceiling, 0.8);
  EXPECT_NEAR(e.value, 0.7877 * (0.78 / kSystemMatmulShareOfMamf) / ceiling, 0.01);
  EXPECT_NE(p.batch.run.notes.find("scaled onto the MAMF"), std::string::npos);
}

TEST_F(Predict, CollectivesAreNotCarriedToAnotherFabricAndFitLatencyIsTheTargets) {
  auto db = make_db(false);
  auto source = data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie());
  source.profile.scale_up_kind = "pcie";
  DeviceProfile target = testing::h100_sxm();
  target.scale_up_kind = "nvswitch";
  target.intra_node = {450, 3.4, {0.82, 0.82, 0.82, 0.70, 0.80}};
  target.inter_node = {50, 14, {0.9, 0.9, 0.9, 0.6, 0.9}};
  const Prediction p = predict_target({source}, target);
  EXPECT_TRUE(p.batch.rows.collective_fits.empty());
  EXPECT_TRUE(p.batch.rows.collective.empty());
  bool warned = false;
  for (const auto& w : p.warnings) warned = warned || w.find("collectives not predicted") != std::string::npos;
  EXPECT_TRUE(warned);
  // SimuMax's memory fits carry 40 us of latency; the target gets its own fixed overhead instead.
  ASSERT_FALSE(p.batch.rows.memory_fits.empty());
  for (const auto& f : p.batch.rows.memory_fits) EXPECT_DOUBLE_EQ(f.latency_us, kOverheadPriorUs);

  // The scaled model skips the source for collectives too; the same fabric carries them.
  SourceDevice s{source.profile,
                 make_interpolating_model(source.profile.spec, source.record, source.runs, no_data_model())};
  const CollectiveKey ar{CollectiveOp::all_reduce, std::int64_t{1} << 28, 8, 8, DType::bf16};
  EXPECT_EQ(make_scaled_model({s}, target, no_data_model())->collective(ar).source, EfficiencySource::roofline);
  DeviceProfile pcie_target = target;
  pcie_target.scale_up_kind = "pcie";
  pcie_target.intra_node = {32, 10, {0.39, 0.42, 0.35, 0.26, 0.47}};
  s.profile.intra_node = pcie_target.intra_node;
  EXPECT_EQ(make_scaled_model({s}, pcie_target, no_data_model())->collective(ar).source, EfficiencySource::scaled);
}

TEST_F(Predict, ScaledModelSkipsSourcesWithoutDataAndRejectsSelfPrediction) {
  auto db = make_db(false);
  const auto source = data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie());
  SourceDevice s{source.profile,
                 make_interpolating_model(source.profile.spec, source.record, source.runs, no_data_model())};
  const auto model = make_scaled_model({s}, testing::h100_sxm(), no_data_model());
  const GemmKey k{4096, 4096, 4096, 1, DType::bf16, GemmLayout::TN, false};
  EXPECT_EQ(model->gemm(k).source, EfficiencySource::scaled);
  const MemoryOpKey unknown{"no_such_kind", 1 << 20};
  EXPECT_EQ(model->memory_op(unknown).source, EfficiencySource::scaled);  // the "default" fit covers it
  GemmKey fp8 = k;
  fp8.dtype = DType::fp8_e4m3;
  EXPECT_EQ(model->gemm(fp8).source, EfficiencySource::roofline);
  EXPECT_THROW(predict_target({source}, testing::a100_pcie()), InputError);
}

TEST_F(Predict, PublishedFlashAttention2RowsAreRecognisedAndPredictedAsFa2) {
  auto db = make_db(true);
  const auto sxm = data(db, "NVIDIA A100 SXM4 80GB", testing::a100_sxm());
  EXPECT_EQ(with_row_kernels(sxm.profile, sxm.runs).attention_kernel, AttentionKernel::flash2);
  const auto pcie = data(db, "NVIDIA A100 PCIe 80GB", testing::a100_pcie());
  EXPECT_EQ(with_row_kernels(pcie.profile, pcie.runs).attention_kernel, AttentionKernel::best);
  const Prediction p = predict_target({sxm}, testing::h100_sxm());
  EXPECT_NE(p.batch.run.notes.find("are FlashAttention-2: predicted as FlashAttention-2"), std::string::npos);
  EXPECT_NE(p.batch.run.notes.find("per-call overhead"), std::string::npos);
}

// `calisim predict` writes what `--evaluate` scores: both fit a source with fit_source, so with the
// host's dispatch time given, the H100's host-bound 1024^3 eager-loop figure stays out of the fit that
// the written rows come from, and the run's notes say so.
TEST_F(Predict, WrittenRowsComeFromTheSourceFitEvaluateScores) {
  auto db = make_db(true);
  const auto h100 = data(db, "NVIDIA H100 SXM5 80GB", testing::h100_sxm());
  const DeviceProfile target = testing::a100_pcie();
  const std::map<std::string, double> dispatch{{h100.record.name, 10e-6}};
  const Prediction ruled = predict_target({h100}, target, dispatch);
  const Prediction plain = predict_target({h100}, target);
  EXPECT_NE(ruled.batch.run.notes.find("fit of NVIDIA H100 SXM5 80GB skips 1 host-bound eager-loop row(s) (1 GEMM, "
                                       "0 attention)"),
            std::string::npos)
      << ruled.batch.run.notes;
  EXPECT_EQ(plain.batch.run.notes.find("host-bound"), std::string::npos);
  ASSERT_EQ(ruled.batch.rows.gemm.size(), 6u);
  ASSERT_EQ(plain.batch.rows.gemm.size(), 6u);

  // Score each set of written rows as if the target had measured them, with evaluate's fit of the H100.
  const auto cross_gemm_mape = [&](const Prediction& p) {
    DeviceData scored;
    scored.record = record_from_profile(target);
    scored.profile = target;
    scored.runs = {p.batch};
    scored.runs.front().run.source = db::Source::measured;
    const Evaluation e = evaluate({h100, scored}, dispatch);
    for (const auto& r : e.cross_device) {
      if (r.from == h100.record.name && r.family == "gemm bf16") return r.mape_pct;
    }
    ADD_FAILURE() << "no H100 -> target GEMM row";
    return -1.0;
  };
  EXPECT_LT(cross_gemm_mape(ruled), 1e-6);
  // Without the rule the H100's t0 is fitted (10 us) from the host-timed figure instead of taken as the
  // 4 us prior, so more of every row's time is put down to overhead and its work efficiency is
  // overstated: every written row is faster than the fit evaluate scores (10.7 % apart on average),
  // one of them capped at 1.
  EXPECT_GT(cross_gemm_mape(plain), 10.0);
  std::size_t capped = 0;
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(ruled.batch.rows.gemm[i].key, plain.batch.rows.gemm[i].key);
    EXPECT_LT(ruled.batch.rows.gemm[i].efficiency, plain.batch.rows.gemm[i].efficiency) << i;
    capped += plain.batch.rows.gemm[i].efficiency >= 1.0 ? 1 : 0;
  }
  EXPECT_EQ(capped, 1u);
}

}  // namespace
}  // namespace calisim::predictor
