// GemmBench: GEMM throughput through cuBLASLt, the library Megatron/TransformerEngine call.
//
// Key convention (core/kernel_keys.h): C[m,n] = op(A)[m,k] x op(B)[k,n] with the layout letters
// as cuBLAS transa/transb: forward "TN" (m = tokens, k = in, n = out), dgrad "NN" (m = tokens,
// k = out, n = in), wgrad "NT" (m = out, k = tokens, n = in). Column-major storage as cuBLAS
// expects. `accumulate` = C += A·B into an fp32 C (beta = 1), as Megatron's fused
// gradient-accumulation wgrad does. batch > 1 = a strided batch of equal GEMMs (grouped MoE GEMMs
// with equal expert loads are measured this way).
//
// Types: bf16 / fp16 inputs and outputs, fp32 compute; tf32 = fp32 storage with
// CUBLAS_COMPUTE_32F_FAST_TF32; fp32 = plain fp32; fp8 e4m3 / e5m2 inputs with per-tensor scale
// pointers (1.0), bf16 C and D, fp32 compute (on sm_90 cuBLASLt offers fp8 only for TN).
//
// Method (profiling_notes.md §4.1): 32 MiB workspace; ask the heuristic for the top 8
// algorithms, time each briefly (quick_median_s), keep the fastest, then measure it with the full
// MeasureLoop; the row records the chosen algorithm (id, tile, stages, split-K). A shape with no
// algorithm, or buffers that do not fit, is skipped with the reason. Each candidate's untimed
// trial run goes on the loop's measuring stream and is synchronised before its timed samples.
#pragma once

#include <cublasLt.h>

#include <string>

#include "core/kernel_keys.h"
#include "profiler/device_buffer.h"
#include "profiler/measure_loop.h"
#include "profiler/prepared_kernel.h"

namespace calisim::profiler {

inline constexpr std::size_t kGemmWorkspaceBytes = 32u << 20;

// "cublasLt algo <id> tile <tile> stages <stages> splitK <n>", each attribute read at the width
// cublasLt.h gives it; a field whose read fails says "unknown". Host-only (no GPU needed).
std::string describe_cublaslt_algo(const cublasLtMatmulAlgo_t& algo);

class GemmBench {
 public:
  explicit GemmBench(MeasureLoop& loop);
  ~GemmBench();
  GemmBench(const GemmBench&) = delete;
  GemmBench& operator=(const GemmBench&) = delete;

  Measurement measure(const GemmKey& key);
  // The key's buffers filled and its fastest algorithm chosen (the autotuning above), kept alive
  // to run again; skip_reason as measure() would give it. The kernel shares this bench's
  // workspace: run prepared GEMMs on one stream at a time.
  Prepared prepare(const GemmKey& key);

  // For tests: runs the key once with the heuristic's first algorithm on random inputs and
  // returns ||D - ref|| / ||ref|| against a double-precision CPU product of the same (rounded)
  // inputs. Keep shapes small: the reference is O(m n k) on the CPU.
  double check_against_cpu(const GemmKey& key, cudaStream_t stream);

  static std::string library_version();

 private:
  MeasureLoop& loop_;
  cublasLtHandle_t handle_ = nullptr;
  DeviceBuffer workspace_;
};

}  // namespace calisim::profiler
