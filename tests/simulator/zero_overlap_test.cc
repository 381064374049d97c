// ZeRO-2/3 memory and communication, the overlap switches (DP, TP, EP, PP), offload and the
// straggler factor. Overlap must never make a step slower than without it, and never faster
// than its compute alone.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <string>

#include "core/error.h"
#include "simulator/default_efficiency.h"
#include "simulator/model_stats.h"
#include "simulator/overlap.h"
#include "simulator/simulate.h"
#include "test_support.h"

namespace calisim {
namespace {

using testing_support::shipped_model;
using testing_support::shipped_system;
using testing_support::strategy_from_json;

SimulationResult run(const ModelConfig& m, const std::string& json, const SystemConfig& sys) {
  return testing_support::simulate_roofline(m, json, sys);
}

TEST(OverlapMath, BoundsAndHandNumbers) {
  EXPECT_DOUBLE_EQ(overlap_extra_s(10, 4, 0.0), 0.0);
  EXPECT_DOUBLE_EQ(overlap_extra_s(10, 4, 0.25), 1.0);   // 0.25 × 4 hidden
  EXPECT_DOUBLE_EQ(overlap_extra_s(3, 4, 0.0), 1.0);     // 1 s sticks out
  // Four buckets of 1 s behind a 10 s window: the last bucket stays exposed.
  EXPECT_DOUBLE_EQ(bucketed_overlap_s(4, 10, 4, 0.0), 1.0);
  EXPECT_DOUBLE_EQ(bucketed_overlap_s(4, 1, 4, 0.0), 3.0);
  EXPECT_DOUBLE_EQ(bucketed_overlap_s(4, 0, 4, 0.5), 4.0);
  for (double slow : {0.0, 0.19, 1.0}) {
    for (double c : {0.5, 2.0, 9.0}) {
      EXPECT_LE(overlap_extra_s(3, c, slow), c);
      EXPECT_GE(overlap_extra_s(3, c, slow), 0.0);
      EXPECT_LE(bucketed_overlap_s(c, 3, 5, slow), c);
    }
  }
}

// Megatron's per-chunk gradient sync under interleaving: chunk 0's reduction, launched after the
// rank's very last backward, is always exposed; earlier chunks hide behind the backward left
// after them, one sync after another on the communicator.
TEST(OverlapMath, ChunkedGradientSyncHandNumbers) {
  // Chunks 0, 1, 2 with 2, 3, 4 s of reduction; 0, 5 and 10 s of backward left after their last one.
  EXPECT_DOUBLE_EQ(chunked_sync_exposed_s({2, 3, 4}, {0, 5, 10}, 0.0), 2.0);  // chunk 2: -10..-6, 1: -5..-2, 0: 0..2
  // Slow chunk 2 delays chunk 1, which delays chunk 0: 9 s from -10 is -1, then 3 to 2, then 2 to 4.
  EXPECT_DOUBLE_EQ(chunked_sync_exposed_s({2, 3, 9}, {0, 5, 10}, 0.0), 4.0);
  // The slowdown applies to the hidden part only; no cover exposes everything.
  EXPECT_DOUBLE_EQ(chunked_sync_exposed_s({2, 3, 4}, {0, 5, 10}, 0.5), 2.0 + 0.5 * 7.0);
  EXPECT_DOUBLE_EQ(chunked_sync_exposed_s({2, 3, 4}, {0, 0, 0}, 0.0), 9.0);
}

TEST(Overlap, InterleavedGradientSyncExposesTheFirstChunk) {
  const ModelConfig m = shipped_model("llama3-70b");
  const SystemConfig sys = shipped_system("h100-sxm");
  // ZeRO-0: the DP traffic is the gradient all-reduce alone (no parameter gather).
  const std::string base = R"({"seq_len": 8192, "micro_batch_size": 1, "global_batch_size": 128, "world_size": 64,
      "tp_size": 8, "pp_size": 4, "interleaving_size": 5, "zero_state": 0)";
  const double on = run(m, base + R"(, "overlap_grad_reduce": true})", sys).stages[0].dp_comm_s;
  const double off = run(m, base + R"(, "overlap_grad_reduce": false})", sys).stages[0].dp_comm_s;
  // Stage 0's first chunk holds 4 of its 20 layers and the embedding: more than a fifth of the
  // reduction is exposed (it was one bucket of ~57 before), and overlap still hides the rest.
  EXPECT_GE(on, 0.2 * off);
  EXPECT_LT(on, 0.5 * off);
}

// Megatron launches a chunk's gradient sync r backward units after its last backward on pipeline
// rank r (all ranks at the same wall time), so with cover this tight the middle stages, equal in
// parameters and compute, expose more the later they sit.
TEST(Overlap, InterleavedGradientSyncLaunchesLaterOnLaterRanks) {
  const ModelConfig m = shipped_model("llama3-70b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const std::string base = R"({"seq_len": 1024, "micro_batch_size": 1, "global_batch_size": 64, "world_size": 64,
      "tp_size": 8, "pp_size": 4, "interleaving_size": 5, "zero_state": 0)";
  const SimulationResult on = run(m, base + R"(, "overlap_grad_reduce": true})", sys);
  const SimulationResult off = run(m, base + R"(, "overlap_grad_reduce": false})", sys);
  ASSERT_EQ(on.stages.size(), 4u);
  EXPECT_DOUBLE_EQ(on.stages[1].params, on.stages[2].params);
  EXPECT_DOUBLE_EQ(on.stages[1].bwd_s_per_micro_batch, on.stages[2].bwd_s_per_micro_batch);
  EXPECT_GT(on.stages[2].dp_comm_s, on.stages[1].dp_comm_s * 1.01);
  EXPECT_LT(on.stages[2].dp_comm_s, off.stages[2].dp_comm_s);
}

// The interleaved parameter gather (overlap.h): with one chunk it is the bucketed rule; by hand,
// chunks of 1, 3, 3 s of gather and 1 s forwards in groups of 2 on rank 0: chunk 0 waits its
// whole gather (1 s; one bucket), chunk 1's (launched at the start behind chunk 0's) is done 1 s
// after its first forward starts — 1 s more — and chunk 2's, launched at chunk 1's first forward,
// once more 1 s: 3 s exposed of 7.
TEST(OverlapMath, InterleavedParameterGather) {
  for (double c : {0.5, 2.0, 9.0}) {
    for (double b : {1.0, 4.0}) {
      EXPECT_DOUBLE_EQ(chunked_gather_exposed_s({c}, {3.0}, {b}, 4, 0, 0.1), bucketed_overlap_s(c, 3.0, b, 0.1));
    }
  }
  EXPECT_DOUBLE_EQ(chunked_gather_exposed_s({1, 3, 3}, {1, 1, 1}, {1, 1, 1}, 2, 0, 0.0), 3.0);
  EXPECT_DOUBLE_EQ(chunked_gather_exposed_s({1, 3, 3}, {1, 1, 1}, {1, 1, 1}, 2, 0, 0.5), 3.0 + 0.5 * 4.0);
  // Plenty of cover: only chunk 0's first bucket waits.
  EXPECT_DOUBLE_EQ(chunked_gather_exposed_s({0.4, 0.4, 0.4}, {1, 1, 1}, {4, 4, 4}, 4, 3, 0.0), 0.1);
  // Comm-bound: the gathers of later chunks hide behind the first group's forwards, which the
  // one-window rule (the stage's forward of one micro-batch) cannot see.
  EXPECT_LT(chunked_gather_exposed_s({2, 2, 2, 2}, {0.5, 0.5, 0.5, 0.5}, {4, 4, 4, 4}, 4, 0, 0.0),
            bucketed_overlap_s(8.0, 2.0, 16.0, 0.0));
}

TEST(Zero, StaticBytesPerParameterByStage) {
  const ModelConfig m = shipped_model("llama3-8b");
  const SystemConfig sys = shipped_system("h100-sxm");
  const std::string base = R"({"seq_len": 4096, "micro_batch_num": 4, "world_size": 8, "bucket_size": 1000000, "zero_state": )";
  const SimulationResult z1 = run(m, base + "1}", sys), z2 = run(m, base + "2}", sys), z3 = run(m, base + "3}", sys);
  const StageReport &a = z1.stages[0], &b = z2.stages[0], &c = z3.stages[0];
  const double P = a.params;
  EXPECT_NEAR(a.model_mem_bytes / P, 2 + 4 + 12.0 / 8, 1e-9);
  // ZeRO-2: grads sharded (+ one 1M-parameter bucket of fp32 grads).
  EXPECT_NEAR(b.grad_bytes, 4 * (P / 8 + 1e6), 1.0);
  EXPECT_NEAR(b.weight_bytes, 2 * P, 1.0);
  // ZeRO-3: parameters sharded, plus the running and the prefetched layer gathered.
  const double layer = dense_layer_params(m).total();
  EXPECT_NEAR(c.weight_bytes, 2 * (P / 8 + 2 * layer), 1.0);
  // More communication per step: ZeRO-2 reduce-scatters every micro-batch, ZeRO-3 also gathers.
  EXPECT_GT(z2.dp_comm_exposed_s, z1.dp_comm_exposed_s);
  EXPECT_GT(z3.dp_comm_exposed_s, z2.dp_comm_exposed_s);
}

// Each switch against its baseline: on ≤ off, and on ≥ off minus everything that could be hidden.
TEST(Overlap, NeverSlowerNeverFasterThanCompute) {
  const SystemConfig sys = shipped_system("h100-sxm");
  struct Case {
    const char* model;
    const char* base;
    const char* on;
  };
  const std::vector<Case> cases = {
      {"llama3-8b", R"({"seq_len": 4096, "micro_batch_num": 4, "world_size": 16, "zero_state": 1)",
       R"(, "overlap_grad_reduce": true, "overlap_param_gather": true)"},
      {"llama3-8b", R"({"seq_len": 4096, "micro_batch_num": 4, "world_size": 16, "zero_state": 3)",
       R"(, "overlap_grad_reduce": true, "overlap_param_gather": true)"},
      {"llama3-70b", R"({"seq_len": 4096, "micro_batch_num": 8, "world_size": 32, "tp_size": 8, "pp_size": 4)",
       R"(, "tp_comm_overlap": true)"},
      {"llama3-70b", R"({"seq_len": 4096, "micro_batch_num": 8, "world_size": 32, "tp_size": 8, "pp_size": 4,
                         "overlap_p2p_comm": false)",
       R"(, "overlap_p2p_comm": true)"},
      // Megatron runs the EP all-to-all overlap with pp > 1 only in the interleaved schedule.
      {"mixtral-8x7b", R"({"seq_len": 4096, "micro_batch_num": 8, "world_size": 64, "tp_size": 2, "pp_size": 4,
                           "interleaving_size": 2, "ep_size": 8)",
       R"(, "overlap_moe_expert_parallel_comm": true)"},
      {"deepseek-v2", R"({"seq_len": 4096, "micro_batch_num": 4, "world_size": 64, "pp_size": 4, "ep_size": 16)",
       R"(, "moe_shared_expert_overlap": true)"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(std::string(c.model) + c.on);
    const ModelConfig m = shipped_model(c.model);
    std::string base = c.base;
    if (std::string(c.on).find("overlap_p2p_comm") != std::string::npos) {
      base = base.substr(0, base.find(", \"overlap_p2p_comm\": false"));
    }
    const SimulationResult off = run(m, std::string(c.base) + "}", sys);
    const SimulationResult on = run(m, base + c.on + "}", sys);
    EXPECT_LE(on.duration_time_per_iter_s, off.duration_time_per_iter_s * (1 + 1e-12));
    const double hideable = off.tp_comm_exposed_s + off.ep_comm_exposed_s + off.dp_comm_exposed_s +
                            off.pp_comm_exposed_s + off.cp_comm_exposed_s;
    EXPECT_GE(on.duration_time_per_iter_s, off.duration_time_per_iter_s - hideable - 1e-12);
    EXPECT_LT(on.duration_time_per_iter_s, off.duration_time_per_iter_s);  // each switch hides something here
  }
}

// Megatron's interleaved schedule keeps one more micro-batch in flight on every rank when the EP
// all-to-all overlap is on (get_pp_rank_microbatches), and g micro-batches per chunk group keep
// (v − 1)·(g − p) more: both show in the activation memory.
TEST(Overlap, MoeCommOverlapAndGroupSizeWidenTheWarmup) {
  const SystemConfig sys = shipped_system("h100-sxm");
  const ModelConfig m = shipped_model("mixtral-8x7b");
  const std::string base = R"({"seq_len": 4096, "micro_batch_num": 12, "world_size": 64, "tp_size": 2,
                               "pp_size": 4, "interleaving_size": 2, "ep_size": 8)";
  const SimulationResult off = run(m, base + "}", sys);
  const SimulationResult on = run(m, base + R"(, "overlap_moe_expert_parallel_comm": true})", sys);
  const SimulationResult wide = run(m, base + R"(, "microbatch_group_size_per_vp_stage": 6})", sys);
  ASSERT_EQ(off.stages.size(), 4u);
  for (std::size_t r = 0; r < off.stages.size(); ++r) {
    SCOPED_TRACE(r);
    const int p = 4;
    EXPECT_EQ(off.stages[r].max_micro_batches_in_flight, 2 * (p - 1 - static_cast<int>(r)) + p + 1);
    EXPECT_EQ(on.stages[r].max_micro_batches_in_flight, off.stages[r].max_micro_batches_in_flight + 1);
    EXPECT_EQ(wide.stages[r].max_micro_batches_in_flight, off.stages[r].max_micro_batches_in_flight + 2);
    EXPECT_GT(on.stages[r].peak_activation_mem_in_1F1B_bytes, off.stages[r].peak_activation_mem_in_1F1B_bytes);
    EXPECT_GT(wide.stages[r].peak_activation_mem_in_1F1B_bytes, off.stages[r].peak_activation_mem_in_1F1B_bytes);
  }
  EXPECT_TRUE(wide.warnings.empty());
  // The warm-up forwards and cool-down backwards have no partner to hide their all-to-all
  // behind: the step's exposed EP time exceeds m times the per-micro-batch exposure.
  double per_mb = 0;
  for (const StageReport& s : on.stages) per_mb = std::max(per_mb, s.ep_comm_s_per_micro_batch);
  EXPECT_GT(on.ep_comm_exposed_s, 12 * per_mb);
  // Without a pipeline Megatron's combined schedule runs the first forward before the first
  // backward: two micro-batches in flight.
  const std::string flat_base = R"({"seq_len": 4096, "micro_batch_num": 12, "world_size": 64, "tp_size": 2, "ep_size": 8)";
  EXPECT_EQ(run(m, flat_base + "}", sys).stages[0].max_micro_batches_in_flight, 1);
  EXPECT_EQ(run(m, flat_base + R"(, "overlap_moe_expert_parallel_comm": true})", sys).stages[0].max_micro_batches_in_flight,
            2);
  const SimulationResult flat = run(m, R"({"seq_len": 4096, "micro_batch_num": 12, "world_size": 64, "tp_size": 2,
                                         "pp_size": 4, "ep_size": 8, "microbatch_group_size_per_vp_stage": 6})",
                                    sys);
  ASSERT_EQ(flat.warnings.size(), 1u);
  EXPECT_EQ(flat.warnings[0], "microbatch_group_size_per_vp_stage (6) has no effect without interleaving "
                              "(interleaving_size 1)");
}

TEST(Offload, ActivationsLeaveTheDeviceAndStragglersCost) {
  const ModelConfig m = shipped_model("llama3-8b");
  SystemConfig sys = shipped_system("h100-sxm");
  const std::string base = R"({"seq_len": 8192, "micro_batch_num": 4, "world_size": 8, "tp_size": 2, "pp_size": 2)";
  const SimulationResult a = run(m, base + "}", sys);
  const SimulationResult b = run(m, base + R"(, "cpu_offloading_num_layers": 8})", sys);
  // 8 of 16 layers per chunk offloaded: the chunk's layer activations halve.
  EXPECT_LT(b.stages[1].fwd_activation_cache_per_micro_batch_bytes,
            0.6 * a.stages[1].fwd_activation_cache_per_micro_batch_bytes);
  EXPECT_GE(b.duration_time_per_iter_s, a.duration_time_per_iter_s);
  // Straggler factor: 1 + cv·sqrt(2 ln 8) on the critical stage's busy time.
  sys.straggler_cv = 0.02;
  const SimulationResult c = run(m, base + "}", sys);
  const double busy = a.stages[a.critical_rank].pipeline_busy_s;
  EXPECT_NEAR(c.straggler_s, busy * 0.02 * std::sqrt(2 * std::log(8.0)), 1e-12);
  EXPECT_NEAR(c.duration_time_per_iter_s, a.duration_time_per_iter_s + c.straggler_s, 1e-9);
  // Optimizer offload needs a CPU Adam figure in the system file.
  DefaultEfficiencyModel eff(sys);
  EXPECT_THROW(simulate(m, strategy_from_json(base + R"(, "optimizer_cpu_offload": true})", m), sys, eff),
               InputError);
}

}  // namespace
}  // namespace calisim
