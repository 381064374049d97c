// calibration/trace_comparison: a traced step's figures by class, a simulated stage's, and the
// rows that pair them.
#include "calibration/trace_comparison.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "core/error.h"
#include "profiler/kineto_trace.h"
#include "simulator/config_loader.h"
#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"
#include "tests/simulator/test_support.h"

namespace {

using namespace calisim;
using calibration::TraceStepStats;

db::TraceKernel rec(const std::string& cls, double start_us, double end_us, const std::string& step) {
  db::TraceKernel k;
  k.name = cls;
  k.kernel_class = cls;
  k.start_ns = static_cast<std::uint64_t>(start_us * 1e3);
  k.end_ns = static_cast<std::uint64_t>(end_us * 1e3);
  k.nvtx_range = step;
  return k;
}

// One step of the fixture tests/data/kineto/two_steps.json, shifted by `off` us: GEMM 1000-1200,
// attention 1210-1300, elementwise 1300-1320, NCCL 1250-1450 (another stream), GEMM 1330-1500,
// memcpy 1500-1510, memset 1510-1512, elementwise 1590-1600.
std::vector<db::TraceKernel> step(double off, const std::string& name) {
  return {rec("gemm", 1000 + off, 1200 + off, name),      rec("attention", 1210 + off, 1300 + off, name),
          rec("elementwise", 1300 + off, 1320 + off, name), rec("nccl", 1250 + off, 1450 + off, name),
          rec("gemm", 1330 + off, 1500 + off, name),      rec("memcpy", 1500 + off, 1510 + off, name),
          rec("memset", 1510 + off, 1512 + off, name),    rec("elementwise", 1590 + off, 1600 + off, name)};
}

// The figures of one such step, worked by hand: span 600 us; sums GEMM 370, attention 90,
// elementwise 30, NCCL 200, copies 12; compute runs over [1000,1200] [1210,1320] [1330,1500]
// [1590,1600] = 490; NCCL alone at 1320-1330 = 10; copies alone 1500-1512 = 12; idle 88.
void expect_fixture_step(const TraceStepStats& s) {
  EXPECT_NEAR(s.span_s, 600e-6, 1e-12);
  EXPECT_NEAR(s.gemm_s, 370e-6, 1e-12);
  EXPECT_NEAR(s.attention_s, 90e-6, 1e-12);
  EXPECT_NEAR(s.elementwise_s, 30e-6, 1e-12);
  EXPECT_NEAR(s.nccl_s, 200e-6, 1e-12);
  EXPECT_NEAR(s.copy_s, 12e-6, 1e-12);
  EXPECT_NEAR(s.other_s, 0, 1e-12);
  EXPECT_NEAR(s.compute_busy_s, 490e-6, 1e-12);
  EXPECT_NEAR(s.comm_only_s, 10e-6, 1e-12);
  EXPECT_NEAR(s.copy_only_s, 12e-6, 1e-12);
  EXPECT_NEAR(s.idle_s, 88e-6, 1e-12);
  // Busy [1000,1200] [1210,1512] [1590,1600]: a 10 us gap (short) and a 78 us one (long).
  EXPECT_NEAR(s.short_gap_s, 10e-6, 1e-12);
  EXPECT_NEAR(s.short_gaps, 1.0, 1e-12);
  EXPECT_NEAR(s.long_idle_s, 78e-6, 1e-12);
}

TEST(TraceComparison, StepFiguresByClassAndUnion) {
  std::vector<db::TraceKernel> recs = {rec("elementwise", 500, 510, "")};  // warm-up, in no step
  for (const auto& k : step(0, "ProfilerStep#2")) recs.push_back(k);
  for (const auto& k : step(1000, "ProfilerStep#3")) recs.push_back(k);
  const TraceStepStats s = calibration::trace_step_stats(recs, 0);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.steps_text, "ProfilerStep#2 .. ProfilerStep#3 (2 steps)");
  EXPECT_EQ(s.outside_steps, 1);
  expect_fixture_step(s);
}

// The same figures from the Kineto fixture itself, through the reader.
TEST(TraceComparison, KinetoFixtureGivesTheHandWorkedFigures) {
  const auto t = profiler::read_kineto_trace(std::string(CALISIM_TEST_DATA_DIR) + "/kineto/two_steps.json");
  expect_fixture_step(calibration::trace_step_stats(t.records, 0));
}

// Steps are averaged and ordered in time, not by name ("#10" sorts before "#9").
TEST(TraceComparison, StepsAreAveragedInTimeOrder) {
  std::vector<db::TraceKernel> recs = {rec("gemm", 0, 100, "ProfilerStep#9"), rec("gemm", 200, 500, "ProfilerStep#10")};
  const TraceStepStats s = calibration::trace_step_stats(recs, 0);
  EXPECT_EQ(s.steps_text, "ProfilerStep#9 .. ProfilerStep#10 (2 steps)");
  EXPECT_NEAR(s.span_s, 200e-6, 1e-12);
  EXPECT_NEAR(s.span_min_s, 100e-6, 1e-12);  // the spread of the steps: a straggling step shows
  EXPECT_NEAR(s.span_max_s, 300e-6, 1e-12);
  EXPECT_NEAR(s.gemm_s, 200e-6, 1e-12);
  EXPECT_NEAR(s.idle_s, 0, 1e-12);
}

TEST(TraceComparison, UnnamedTraceNeedsAStepCount) {
  std::vector<db::TraceKernel> recs = step(0, "");
  EXPECT_THROW(calibration::trace_step_stats(recs, 0), InputError);
  const TraceStepStats s = calibration::trace_step_stats(recs, 2);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.steps_text, "whole trace as 2 steps");
  EXPECT_NEAR(s.span_s, 300e-6, 1e-12);
  EXPECT_NEAR(s.gemm_s, 185e-6, 1e-12);
}

// The simulated side of a dense model: the classes add up to the stage's compute, recompute and
// optimizer (the breakdown's), GEMMs dominate, and the idle rest is the step less busy and
// exposed communication.
TEST(TraceComparison, SimulatedClassesAddUpToTheStage) {
  const ModelConfig model = testing_support::shipped_model("llama3-8b");
  const SystemConfig sys = testing_support::shipped_system("h100-sxm");
  const StrategyConfig st = testing_support::strategy_from_json(
      R"({"tp_size": 2, "pp_size": 2, "world_size": 8, "micro_batch_size": 1, "micro_batch_num": 8,
          "seq_len": 4096, "recompute_granularity": "selective"})",
      model);
  const DefaultEfficiencyModel eff(sys);
  const SimulationResult r = simulate(model, st, sys, eff);
  for (int stage = 0; stage < 2; ++stage) {
    const auto c = calibration::simulated_step_classes(r, stage);
    EXPECT_NEAR(c.class_split_scale, 1.0, 1e-9) << "a dense model's op table has the stage's instances";
    EXPECT_GT(c.gemm_s, c.attention_s);
    EXPECT_GT(c.attention_s, 0);
    EXPECT_GT(c.memory_s, 0);
    EXPECT_NEAR(c.compute_busy_s, c.gemm_s + c.attention_s + c.memory_s + c.optimizer_s, 1e-12);
    EXPECT_GT(c.attention_bwd_s, 0.5 * c.attention_s) << "backward is about 2.5x the forward's work";
    EXPECT_LT(c.attention_bwd_s, c.attention_s);
    EXPECT_NEAR(c.idle_s + c.compute_busy_s + c.comm_exposed_s, r.duration_time_per_iter_s, 1e-9);
    if (stage == r.critical_rank) {
      EXPECT_NEAR(c.compute_busy_s, r.compute_s + r.recompute_s + r.optimizer_s, 1e-6 * c.compute_busy_s);
    }
  }
  EXPECT_THROW(calibration::simulated_step_classes(r, 2), InputError);
}

TEST(TraceComparison, RowsPairTracedAndSimulated) {
  const TraceStepStats t = calibration::trace_step_stats(step(0, "ProfilerStep#1"), 0);
  calibration::SimulatedStepClasses s;
  s.step_s = 480e-6;
  s.gemm_s = 296e-6;
  s.attention_s = 90e-6;
  s.memory_s = 20e-6;
  s.optimizer_s = 4e-6;
  s.compute_busy_s = 410e-6;
  s.comm_exposed_s = 10e-6;
  s.idle_s = 60e-6;
  const auto rows = calibration::compare_trace(t, s);
  // step, GEMM, attention, its backward, memory-bound, copies, NCCL, its one collective bucket
  // (the hand-made record is named "nccl": other collectives), compute busy, communication only,
  // copies only, idle, its short gaps and its longer waits.
  ASSERT_EQ(rows.size(), 14u);
  EXPECT_EQ(rows[0].quantity, "step (GPU span)");
  EXPECT_NEAR(rows[0].ratio(), 0.8, 1e-9);
  EXPECT_NEAR(rows[1].ratio(), 0.8, 1e-9);          // GEMM 296 / 370
  EXPECT_EQ(rows[3].quantity, "  of which backward");
  EXPECT_EQ(rows[3].ratio(), 0.0);                   // no backward kernel traced
  EXPECT_NEAR(rows[4].ratio(), 24.0 / 30.0, 1e-9);  // memory-bound and optimizer against elementwise + other
  EXPECT_FALSE(rows[6].has_simulated);               // NCCL kernels: no simulated sum
  EXPECT_EQ(rows[6].ratio(), 0.0);
  EXPECT_EQ(rows[7].quantity, "  other collectives");
  EXPECT_EQ(rows[12].quantity, "  of which gaps under 20 us (1 per step, 10.0 us each)");
  EXPECT_NEAR(rows[13].traced_s, 78e-6, 1e-12);
}

// Attention backward and NCCL collectives are told apart by kernel name, as the libraries name them.
// A GPU-to-GPU copy (copy-engine communication) counts as communication, not as a copy: alone on
// the GPU it is exposed communication.
TEST(TraceComparison, PeerCopiesAreCommunication) {
  std::vector<db::TraceKernel> recs = {rec("gemm", 0, 100, "ProfilerStep#1"), rec("memcpy", 100, 150, "ProfilerStep#1"),
                                       rec("memcpy", 150, 160, "ProfilerStep#1")};
  recs[1].copy_kind = "PtoP";
  recs[2].copy_kind = "DtoD";
  const TraceStepStats t = calibration::trace_step_stats(recs, 0);
  EXPECT_NEAR(t.peer_copy_s, 50e-6, 1e-12);
  EXPECT_NEAR(t.nccl_s, 50e-6, 1e-12);
  EXPECT_NEAR(t.copy_s, 10e-6, 1e-12);       // the device-local copy
  EXPECT_NEAR(t.comm_only_s, 50e-6, 1e-12);
  EXPECT_NEAR(t.copy_only_s, 10e-6, 1e-12);
}

TEST(TraceComparison, AttentionDirectionAndCollectivesByKernelName) {
  auto named = [](const std::string& cls, const std::string& name, double start_us, double end_us) {
    db::TraceKernel k = rec(cls, start_us, end_us, "ProfilerStep#1");
    k.name = name;
    return k;
  };
  const std::vector<db::TraceKernel> recs = {
      named("attention", "void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128> >(Flash_fwd_params)", 0, 10),
      named("attention", "void flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<T>(Flash_bwd_params)", 10, 30),
      named("attention", "cudnn_generated_fort_native_sdpa_sm90_flash_bprop_wgmma_f16_knob_3", 30, 60),
      named("attention", "fmha_cutlassB_bf16_aligned_64x64_k128_sm80", 60, 100),
      named("attention", "cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3", 100, 105),
      named("nccl", "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)", 0, 1),
      named("nccl", "ncclKernel_AllGather_RING_LL_Sum_int8_t", 0, 2),
      named("nccl", "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", 0, 4),
      named("nccl", "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)", 0, 8),
      named("nccl", "ncclDevKernel_Broadcast_RING_LL", 0, 16)};
  const TraceStepStats s = calibration::trace_step_stats(recs, 0);
  EXPECT_NEAR(s.attention_s, 105e-6, 1e-12);
  EXPECT_NEAR(s.attention_bwd_s, 90e-6, 1e-12);
  EXPECT_NEAR(s.nccl_all_reduce_s, 1e-6, 1e-12);
  EXPECT_NEAR(s.nccl_all_gather_s, 2e-6, 1e-12);
  EXPECT_NEAR(s.nccl_reduce_scatter_s, 4e-6, 1e-12);
  EXPECT_NEAR(s.nccl_send_recv_s, 8e-6, 1e-12);
  EXPECT_NEAR(s.nccl_other_s, 16e-6, 1e-12);
}

// Megatron numbers ranks fastest dimension first: with tp 2, cp 1, dp 2, pp 2 in the default
// order tp-cp-ep-dp-pp a stage holds 4 consecutive ranks; with pp right after tp, stages alternate
// every 2 ranks.
TEST(TraceComparison, PipelineStageOfARank) {
  SimulationResult r;
  r.world_size = 8;
  r.tp = 2, r.cp = 1, r.dp = 2, r.pp = 2;
  EXPECT_EQ(calibration::pipeline_stage_of_rank(r, 0), 0);
  EXPECT_EQ(calibration::pipeline_stage_of_rank(r, 3), 0);
  EXPECT_EQ(calibration::pipeline_stage_of_rank(r, 4), 1);
  EXPECT_EQ(calibration::pipeline_stage_of_rank(r, 7), 1);
  r.rank_order = {ParallelDim::tp, ParallelDim::pp, ParallelDim::cp, ParallelDim::ep, ParallelDim::dp};
  EXPECT_EQ(calibration::pipeline_stage_of_rank(r, 1), 0);
  EXPECT_EQ(calibration::pipeline_stage_of_rank(r, 2), 1);
  EXPECT_EQ(calibration::pipeline_stage_of_rank(r, 5), 0);
  EXPECT_THROW(calibration::pipeline_stage_of_rank(r, 8), InputError);
}

// Kernels by summed time per step, in the steps only; calls counted per step.
TEST(TraceComparison, TopKernelsPerStep) {
  std::vector<db::TraceKernel> recs = {rec("elementwise", 500, 900, "")};  // outside: not counted
  for (const auto& k : step(0, "ProfilerStep#2")) recs.push_back(k);
  for (const auto& k : step(1000, "ProfilerStep#3")) recs.push_back(k);
  const TraceStepStats s = calibration::trace_step_stats(recs, 0);
  const auto top = calibration::top_kernels(recs, s, 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_EQ(top[0].name, "gemm");
  EXPECT_NEAR(top[0].per_step_s, 370e-6, 1e-12);
  EXPECT_DOUBLE_EQ(top[0].calls_per_step, 2.0);
  EXPECT_EQ(top[1].name, "nccl");
  EXPECT_EQ(top[2].name, "attention");
  // Without steps, the whole trace over the given count.
  const auto unnamed = step(0, "");
  const auto whole = calibration::top_kernels(unnamed, calibration::trace_step_stats(unnamed, 2), 1);
  EXPECT_NEAR(whole[0].per_step_s, 185e-6, 1e-12);
}

}  // namespace

namespace {

// A system file calibrated to a trace gives back the trace's time per class: "traced" here is the
// simulation with GEMMs 1.25x, attention 1.5x and memory-bound work 2x slower; the fit finds
// 0.8, 0.667, 0.5, and simulating with the fitted file reproduces the traced class times (to the
// 4 decimals the file keeps). Factors above 1 are capped and named.
TEST(TraceComparison, SystemFileFittedToATraceReproducesItsClassTimes) {
  const ModelConfig model = testing_support::shipped_model("llama3-8b");
  const nlohmann::ordered_json doc =
      nlohmann::ordered_json::parse(read_json_file(std::string(CALISIM_CONFIG_DIR) + "/systems/h100-sxm.json").dump());
  const SystemConfig sys = parse_system(nlohmann::json::parse(doc.dump()), "h100-sxm");
  const StrategyConfig st = testing_support::strategy_from_json(
      R"({"tp_size": 2, "world_size": 8, "micro_batch_size": 1, "micro_batch_num": 8, "seq_len": 4096})", model);
  auto classes = [&](const SystemConfig& s) {
    const DefaultEfficiencyModel eff(s);
    return calibration::simulated_step_classes(simulate(model, st, s, eff), 0);
  };
  const auto before = classes(sys);
  TraceStepStats traced;
  traced.gemm_s = before.gemm_s * 1.25;
  traced.attention_s = before.attention_s * 1.5;
  traced.elementwise_s = (before.memory_s + before.optimizer_s) * 2.0;
  const calibration::TraceFit f = calibration::fit_to_trace(traced, before);
  EXPECT_NEAR(f.matmul, 0.8, 1e-12);
  EXPECT_NEAR(f.attention, 1 / 1.5, 1e-12);
  EXPECT_NEAR(f.memory, 0.5, 1e-12);
  EXPECT_TRUE(f.unfitted.empty());
  std::vector<std::string> capped;
  const auto fitted_doc = calibration::apply_trace_fit(doc, f, &capped);
  EXPECT_TRUE(capped.empty());
  EXPECT_NEAR(fitted_doc["efficiency"]["matmul_by_dtype"]["fp8"].get<double>(),
              doc["efficiency"]["matmul_by_dtype"]["fp8"].get<double>() * 0.8, 1e-4);
  const auto after = classes(parse_system(nlohmann::json::parse(fitted_doc.dump()), "fitted"));
  // The GEMM kernels' fixed part (efficiency.gemm_fixed_us, 4 us each on the H100) does not scale
  // with the matmul efficiency, so the refit lands within a few tenths of a percent, not exactly.
  EXPECT_NEAR(after.gemm_s, traced.gemm_s, 5e-3 * traced.gemm_s);
  EXPECT_NEAR(after.attention_s, traced.attention_s, 2e-3 * traced.attention_s);
  // Memory-bound ops scale with memory_bound; the optimizer step's share is priced the same way.
  EXPECT_NEAR(after.memory_s + after.optimizer_s, traced.elementwise_s, 0.02 * traced.elementwise_s);

  // A trace faster than the peak allows: capped and named; a class with no traced time: unfitted.
  TraceStepStats fast;
  fast.gemm_s = before.gemm_s / 2;
  const calibration::TraceFit g = calibration::fit_to_trace(fast, before);
  EXPECT_EQ(g.unfitted, (std::vector<std::string>{"attention", "memory-bound"}));
  std::vector<std::string> cut;
  calibration::apply_trace_fit(doc, g, &cut);
  EXPECT_NE(std::find(cut.begin(), cut.end(), "efficiency.matmul"), cut.end());
}

}  // namespace
