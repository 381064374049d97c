// GPU tests of the CUDA profiler. Each checks a benchmark's numerical result against a CPU
// reference and its timing against CUDA events over the same loop. Without a CUDA device every
// test is skipped, naming why (a CI machine has the toolkit but no GPU).
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>

#include "profiler/attention_bench.h"
#include "profiler/cuda_bench.h"
#include "profiler/cuda_timer.h"
#include "profiler/cupti_timer.h"
#include "profiler/gemm_bench.h"
#include "profiler/gpu_error.h"
#include "profiler/l2flush.h"
#include "profiler/memory_bench.h"
#include "profiler/nccl_bench.h"
#include "profiler/nvml_monitor.h"

namespace calisim::profiler {
namespace {

#define REQUIRE_GPU(min_devices)                                                                          \
  do {                                                                                                    \
    std::string why;                                                                                      \
    const int n = cuda_device_count(&why);                                                                \
    if (n == 0) GTEST_SKIP() << "no CUDA device: " << why;                                                \
    if (n < (min_devices)) GTEST_SKIP() << "needs " << (min_devices) << " CUDA devices, found " << n;     \
  } while (0)

LoopOptions quick_loop() {
  LoopOptions o;
  o.rule.min_samples = 10;
  o.rule.time_budget_s = 0.5;
  return o;
}

// One benchmark on device 0, timed by CUDA events with the quick loop: the setup most tests share.
// Construct it after REQUIRE_GPU (the L2 flush buffer lives on the device).
template <class Bench>
struct EventTimed {
  CudaEventTimer timer;
  NvmlMonitor nvml{0};
  L2Flush flush{0};
  MeasureLoop loop{nullptr, timer, nvml, flush, quick_loop()};
  Bench bench{loop};
};

// CUPTI (kernel time only) against CUDA events over the same loop (which also include the launch
// gap): within 1 % below to 5 % above.
void expect_cupti_within_events(const Measurement& cupti, const Measurement& events) {
  const double rel = (events.summary.median_s - cupti.summary.median_s) / events.summary.median_s;
  EXPECT_GT(rel, -0.01) << "CUPTI " << cupti.summary.median_s << " s vs events " << events.summary.median_s << " s";
  EXPECT_LT(rel, 0.05) << "CUPTI " << cupti.summary.median_s << " s vs events " << events.summary.median_s << " s";
}

TEST(GpuGemm, Bf16AndFp32MatchCpuReference) {
  REQUIRE_GPU(1);
  EventTimed<GemmBench> rig;
  GemmBench& bench = rig.bench;
  // Odd sizes and every layout, accumulation and a batch: indexing mistakes show up as O(1) errors.
  for (GemmLayout l : {GemmLayout::TN, GemmLayout::NN, GemmLayout::NT}) {
    const GemmKey bf{96, 80, 64, 1, DType::bf16, l, false};
    EXPECT_LT(bench.check_against_cpu(bf, nullptr), 1e-2) << to_string(bf);
    const GemmKey f32{64, 48, 32, 2, DType::fp32, l, false};
    EXPECT_LT(bench.check_against_cpu(f32, nullptr), 1e-5) << to_string(f32);
  }
  const GemmKey acc{64, 64, 128, 1, DType::bf16, GemmLayout::NT, true};
  EXPECT_LT(bench.check_against_cpu(acc, nullptr), 1e-2) << "wgrad accumulating into fp32";
  const GemmKey tf{64, 64, 64, 1, DType::tf32, GemmLayout::TN, false};
  EXPECT_LT(bench.check_against_cpu(tf, nullptr), 3e-3);
}

TEST(GpuGemm, Fp8TnMatchesCpuReferenceWhereSupported) {
  REQUIRE_GPU(1);
  const CudaEnvironment env = describe_cuda(0);
  if (env.compute_capability < 89) GTEST_SKIP() << "fp8 GEMMs need sm_89 or newer; this GPU is sm_" << env.compute_capability;
  EventTimed<GemmBench> rig;
  GemmBench& bench = rig.bench;
  EXPECT_LT(bench.check_against_cpu({128, 128, 128, 1, DType::fp8_e4m3, GemmLayout::TN, false}, nullptr), 2e-2);
}

TEST(GpuMemory, StreamKernelsMatchCpuReference) {
  REQUIRE_GPU(1);
  for (const char* kind : {"copy", "add_fwd", "swiglu_bwd", "adam_step", "unknown_kind"}) {
    // Sizes that leave a scalar tail after the 16-byte vectors.
    EXPECT_LT(MemoryBench::check_against_cpu({kind, 7 * 4 * 1003}, nullptr), 1e-2) << kind;
  }
}

// CUPTI's kernel time and CUDA events over the same loop of a 256 MiB copy kernel: the kernel
// runs ~100 us, so launch overhead is small next to it; CUPTI (kernel only) must be within 1 %
// below to 5 % above... the events, which also include the launch gap.
TEST(GpuTimers, CuptiAgreesWithCudaEvents) {
  REQUIRE_GPU(1);
  std::string why;
  auto cupti = CuptiTimer::create(&why);
  if (!cupti) GTEST_SKIP() << "CUPTI unavailable in this process: " << why;
  NvmlMonitor nvml(0);
  L2Flush flush(0);
  LoopOptions o = quick_loop();
  o.rule.min_samples = 30;
  MeasureLoop cupti_loop(nullptr, *cupti, nvml, flush, o);
  CudaEventTimer events;
  MeasureLoop event_loop(nullptr, events, nvml, flush, o);
  MemoryBench with_cupti(cupti_loop), with_events(event_loop);
  const MemoryOpKey key{"copy", 512ll << 20};
  const Measurement a = with_cupti.measure(key);
  const Measurement b = with_events.measure(key);
  ASSERT_EQ(a.status, MeasurementStatus::measured) << a.reason;
  ASSERT_EQ(b.status, MeasurementStatus::measured) << b.reason;
  EXPECT_EQ(a.timer, TimerKind::cupti);
  EXPECT_EQ(a.kernels_per_op, 1);
  ASSERT_FALSE(a.kernel_names.empty());
  EXPECT_NE(a.kernel_names.front().find("stream_kernel"), std::string::npos);
  expect_cupti_within_events(a, b);
  EXPECT_EQ(cupti->dropped_records(), 0u);
}

TEST(GpuGemm, MeasuredRowIsPlausible) {
  REQUIRE_GPU(1);
  CudaBenchOptions o;
  o.loop = quick_loop();
  CudaBench bench(o);
  const GemmKey key{4096, 4096, 4096, 1, DType::bf16, GemmLayout::TN, false};
  const Measurement m = bench.measure({db::KeyKind::gemm, to_string(key)});
  ASSERT_EQ(m.status, MeasurementStatus::measured) << m.reason;
  const double tflops = key.flops() / m.summary.median_s / 1e12;
  EXPECT_GT(tflops, 10.0) << "a 4096^3 bf16 GEMM far below any tensor-core GPU";
  EXPECT_LT(tflops, 5000.0) << "faster than any GPU: the timer is not timing the GEMM";
  EXPECT_NE(m.algorithm.find("cublasLt algo"), std::string::npos);
  EXPECT_GE(m.summary.n, 10);
}

// cuDNN's SDPA forward against the naive reference kernel: causal and not, GQA, MLA head dims,
// bf16 and fp16, with odd-ish sequence lengths. bf16 outputs of a softmax-weighted mean of
// values in [-1, 1) are within 2^-8 relative; 2e-2 absolute leaves room for fp32 accumulation
// order and the rounding of O.
TEST(GpuAttention, SdpaForwardMatchesReferenceKernel) {
  REQUIRE_GPU(1);
  EventTimed<AttentionBench> rig;
  AttentionBench& bench = rig.bench;
  const AttentionKey keys[] = {
      {2, 4, 4, 128, 128, 64, 64, false, DType::bf16, AttentionDirection::forward},
      {2, 4, 4, 192, 192, 128, 128, true, DType::bf16, AttentionDirection::forward},
      {1, 8, 2, 128, 128, 128, 128, true, DType::bf16, AttentionDirection::forward},   // GQA
      {1, 4, 4, 128, 128, 192, 128, true, DType::bf16, AttentionDirection::forward},   // MLA dims
      {1, 4, 4, 128, 128, 64, 64, true, DType::fp16, AttentionDirection::forward},
  };
  for (const AttentionKey& key : keys) {
    try {
      EXPECT_LT(bench.check_against_reference(key, nullptr), 2e-2) << to_string(key);
    } catch (const GpuError& e) {
      ADD_FAILURE() << to_string(key) << ": " << e.what();
    }
  }
}

// The fp8 (e4m3) SDPA forward against a double-precision CPU recomputation from the same e4m3
// inputs, on Hopper or newer (older GPUs: skipped with the reason). O and P are e4m3 (3 mantissa
// bits, 2^-4 relative rounding): |O| <= 1 here, so 0.1 absolute bounds both roundings; a graph
// that ignored a scale or mis-wired P·V is off by far more. Then a timed measurement.
TEST(GpuAttention, Fp8ForwardMatchesCpuReferenceOnHopper) {
  REQUIRE_GPU(1);
  EventTimed<AttentionBench> rig;
  AttentionBench& bench = rig.bench;
  const AttentionKey small{1, 2, 2, 128, 128, 128, 128, true, DType::fp8_e4m3, AttentionDirection::forward};
  const Measurement m = bench.measure({2, 16, 16, 1024, 1024, 128, 128, true, DType::fp8_e4m3,
                                       AttentionDirection::forward});
  if (m.status == MeasurementStatus::skipped && m.reason.find("sm_") != std::string::npos) {
    GTEST_SKIP() << m.reason;
  }
  ASSERT_EQ(m.status, MeasurementStatus::measured) << m.reason;
  EXPECT_NE(m.algorithm.find("fwd fp8"), std::string::npos) << m.algorithm;
  try {
    EXPECT_LT(bench.check_against_reference(small, nullptr), 0.1);
    AttentionKey plain = small;
    plain.causal = false;
    EXPECT_LT(bench.check_against_reference(plain, nullptr), 0.1);
  } catch (const GpuError& e) {
    ADD_FAILURE() << e.what();
  }
}

// The fp8 (e4m3) SDPA backward on Hopper or newer: a timed measurement of the fp8 backward graph,
// then dQ, dK, dV against the double-precision CPU recomputation (check_backward_against_cpu
// rescales them from their amax first), causal and non-causal, with GQA. e4m3 keeps 3 mantissa
// bits (2^-4 relative rounding on P, dP and each gradient); 0.2 of the largest reference value
// bounds that, while a scale the graph dropped or applied twice is off by a factor of ~10^2.
TEST(GpuAttention, Fp8BackwardMatchesCpuReferenceOnHopper) {
  REQUIRE_GPU(1);
  EventTimed<AttentionBench> rig;
  AttentionBench& bench = rig.bench;
  const Measurement m = bench.measure({2, 16, 16, 1024, 1024, 128, 128, true, DType::fp8_e4m3,
                                       AttentionDirection::backward});
  if (m.status == MeasurementStatus::skipped &&
      (m.reason.find("sm_") != std::string::npos || m.reason.find("needs 9.1.0") != std::string::npos)) {
    GTEST_SKIP() << m.reason;
  }
  ASSERT_EQ(m.status, MeasurementStatus::measured) << m.reason;
  EXPECT_NE(m.algorithm.find("bwd fp8"), std::string::npos) << m.algorithm;
  const AttentionKey keys[] = {
      {1, 2, 2, 128, 128, 128, 128, true, DType::fp8_e4m3, AttentionDirection::backward},
      {1, 2, 2, 128, 128, 128, 128, false, DType::fp8_e4m3, AttentionDirection::backward},
      {1, 4, 2, 128, 128, 128, 128, true, DType::fp8_e4m3, AttentionDirection::backward},  // GQA
  };
  for (const AttentionKey& key : keys) {
    try {
      const auto e = bench.check_backward_against_cpu(key, nullptr);
      EXPECT_LT(e.dq, 0.2) << to_string(key);
      EXPECT_LT(e.dk, 0.2) << to_string(key);
      EXPECT_LT(e.dv, 0.2) << to_string(key);
    } catch (const GpuError& e) {
      ADD_FAILURE() << to_string(key) << ": " << e.what();
    }
  }
}

// cuDNN's SDPA backward (dQ, dK, dV) against a double-precision CPU recomputation: plain, causal
// with GQA, and MLA head dims. Errors relative to the largest reference value; bf16 outputs and
// the bf16 Pᵀ / dSᵀ the graph feeds its matmuls leave about 1e-2.
TEST(GpuAttention, SdpaBackwardMatchesCpuReference) {
  REQUIRE_GPU(1);
  EventTimed<AttentionBench> rig;
  AttentionBench& bench = rig.bench;
  const AttentionKey keys[] = {
      {1, 2, 2, 128, 128, 64, 64, false, DType::bf16, AttentionDirection::backward},
      {1, 4, 2, 128, 128, 128, 128, true, DType::bf16, AttentionDirection::backward},  // GQA
      {1, 2, 2, 128, 128, 192, 128, true, DType::bf16, AttentionDirection::backward},  // MLA dims
  };
  for (const AttentionKey& key : keys) {
    try {
      const auto e = bench.check_backward_against_cpu(key, nullptr);
      EXPECT_LT(e.dq, 3e-2) << to_string(key);
      EXPECT_LT(e.dk, 3e-2) << to_string(key);
      EXPECT_LT(e.dv, 3e-2) << to_string(key);
    } catch (const GpuError& e) {
      ADD_FAILURE() << to_string(key) << ": " << e.what();
    }
  }
}

// The SDPA timing through CUPTI against CUDA events over the same loop (the op is one or a few
// kernels of ~100 us at this size): within 1 % below to 5 % above, as for the copy kernel.
TEST(GpuAttention, CuptiTimeAgreesWithCudaEventsAndRowIsPlausible) {
  REQUIRE_GPU(1);
  std::string why;
  auto cupti = CuptiTimer::create(&why);
  if (!cupti) GTEST_SKIP() << "CUPTI unavailable in this process: " << why;
  NvmlMonitor nvml(0);
  L2Flush flush(0);
  LoopOptions o = quick_loop();
  o.rule.min_samples = 30;
  MeasureLoop cupti_loop(nullptr, *cupti, nvml, flush, o);
  CudaEventTimer events;
  MeasureLoop event_loop(nullptr, events, nvml, flush, o);
  AttentionBench with_cupti(cupti_loop), with_events(event_loop);
  const AttentionKey key{4, 16, 16, 2048, 2048, 128, 128, true, DType::bf16, AttentionDirection::forward};
  const Measurement a = with_cupti.measure(key);
  const Measurement b = with_events.measure(key);
  ASSERT_EQ(a.status, MeasurementStatus::measured) << a.reason;
  ASSERT_EQ(b.status, MeasurementStatus::measured) << b.reason;
  EXPECT_NE(a.algorithm.find("cudnn sdpa fwd engine"), std::string::npos) << a.algorithm;
  expect_cupti_within_events(a, b);
  const double tflops = key.flops() / a.summary.median_s / 1e12;
  EXPECT_GT(tflops, 20.0) << "flash attention far below any tensor-core GPU";
  EXPECT_LT(tflops, 5000.0) << "faster than any GPU: the timer is not timing the attention";
}

TEST(GpuAttention, UnsupportedKeysAreSkippedWithAReason) {
  REQUIRE_GPU(1);
  EventTimed<AttentionBench> rig;
  AttentionBench& bench = rig.bench;
  // Head dim 256 is outside cuDNN's fp8 backward on every architecture (Hopper: 128 only;
  // Blackwell: up to 128 or 192 / 128); on a pre-Hopper GPU every fp8 key is refused.
  const Measurement fp8_bwd =
      bench.measure({1, 4, 4, 128, 128, 256, 256, true, DType::fp8_e4m3, AttentionDirection::backward});
  EXPECT_EQ(fp8_bwd.status, MeasurementStatus::skipped);
  EXPECT_TRUE(fp8_bwd.reason.find("head dims") != std::string::npos ||
              fp8_bwd.reason.find("sm_") != std::string::npos || fp8_bwd.reason.find("cuDNN") != std::string::npos)
      << fp8_bwd.reason;
  const Measurement gqa_bad = bench.measure({1, 6, 4, 128, 128, 128, 128, true, DType::bf16, AttentionDirection::forward});
  EXPECT_EQ(gqa_bad.status, MeasurementStatus::skipped);
}

TEST(GpuNccl, AllReduceMatchesCpuSum) {
  REQUIRE_GPU(2);
  NvmlMonitor nvml(0);
  const int n = cuda_device_count();
  std::vector<int> devices(n);
  for (int i = 0; i < n; ++i) devices[i] = i;
  NcclBench bench(devices, StoppingRule{}, nvml);
  EXPECT_LT(bench.check_all_reduce(1 << 20), 2e-2);
}

TEST(GpuNccl, SingleGpuCollectivesAreSkippedWithAReason) {
  REQUIRE_GPU(1);
  if (cuda_device_count() > 1) GTEST_SKIP() << "this node has several GPUs; the single-GPU path is not taken";
  CudaBenchOptions o;
  o.loop = quick_loop();
  CudaBench bench(o);
  const CollectiveKey key{CollectiveOp::all_reduce, 1 << 20, 8, 8, DType::bf16};
  const Measurement m = bench.measure({db::KeyKind::collective, to_string(key)});
  EXPECT_EQ(m.status, MeasurementStatus::skipped);
  EXPECT_NE(m.reason.find("1 GPU"), std::string::npos) << m.reason;
}

}  // namespace
}  // namespace calisim::profiler
