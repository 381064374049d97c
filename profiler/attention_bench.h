// AttentionBench: flash attention forward and backward through cuDNN's SDPA operation graphs
// (backend C API: cudnnBackend* descriptors; no cudnn-frontend header is needed).
//
// Forward graph (the composition cuDNN's frontend builds and its fused flash engines match):
// S = Q·Kᵀ (matmul, fp32), ×scale (by-value 1/sqrt(dqk)), for causal keys a row >= col mask
// (GEN_INDEX on both axes, CMP_GE, BINARY_SELECT with the lowest float), softmax as max / sub /
// exp / sum / log + add (the Stats training keeps) / div, O = P·V with P in the io type (the
// frontend's form; variant "fwd"). Only when no engine takes it is P tried in fp32 (variant
// "fwd, P in fp32"). Backward graph: softmax_sum = rowsum(dO∘O), P = exp(S·scale − Stats),
// dV = Pᵀ·dO, dS = P∘(dO·Vᵀ − softmax_sum)·scale, dK = dSᵀ·Q, dQ = dS·K via an fp32 accumulator
// (zeroed by the caller before every execution when cuDNN is older than 9.6.0, outside the timed
// region: MeasureLoop's prepare step); a backward measurement first runs the forward once so
// Stats and O are real. Layout [batch, heads, seq, dim] contiguous; GQA keys give K and V
// heads_kv heads (dK, dV of a group summed by a reduction in the backward, over virtual
// full-head tensors as the frontend builds it, variant "bwd"; bound as buffers only as a fallback,
// variant "bwd, full-head dK/dV in memory"); MLA keys give Q, K head_dim_qk and V, O head_dim_v.
// Engines come from the backend heuristics descriptor (mode A); up to kAttentionCandidates that
// finalise are each run once untimed on the measuring stream (and waited for), then timed
// briefly; the fastest is measured with the MeasureLoop; the row records its graph variant,
// engine global index and workspace ("cudnn sdpa <variant> engine <n> workspace <bytes> B ...").
// FLOPs are the key's (AttentionKey::flops(), MODELING.md: backward 2.5x forward).
//
// fp8 (e4m3) forward keys use cuDNN frontend's SDPA_FP8 composition (attention_bench.cc:
// descale_q / descale_k after Q·Kᵀ, amax of P, P × scale_s cast to e4m3, O = P·V × descale_s ×
// descale_v, amax of O, × scale_o into an e4m3 O; all scales 1, device fp32 scalars). cuDNN
// offers it on Hopper and newer (skipped with that reason on older GPUs); which head dims it
// takes depends on the cuDNN version at run time (9.1: 128; newer: up to 256), so other shapes
// are left to cuDNN to refuse, and the skip carries its reason. fp8 backward keys use the
// frontend's SDPA_FP8_BWD composition (build_backward_fp8: descales of Q, K, V, O, dO, S and dP,
// scales of dP, dQ, dK, dV, amax outputs of dQ, dK, dV, dP; e4m3 gradients); keys outside its
// support (cuDNN before 9.1 or 9.10.0; head dims other than 128 / 128 on Hopper) are skipped
// saying so.
//
// Skipped with the reason (cuDNN's status and last error text) when no engine supports the
// shape or buffers do not fit.
#pragma once

#include <cudnn.h>

#include <memory>
#include <string>

#include "core/kernel_keys.h"
#include "profiler/measure_loop.h"
#include "profiler/prepared_kernel.h"

namespace calisim::profiler {

inline constexpr int kAttentionCandidates = 2;

class AttentionBench {
 public:
  explicit AttentionBench(MeasureLoop& loop);
  ~AttentionBench();
  AttentionBench(const AttentionBench&) = delete;
  AttentionBench& operator=(const AttentionBench&) = delete;

  Measurement measure(const AttentionKey& key);
  // The key's graph built, tensors filled (a backward key's O and Stats by one forward pass) and
  // the fastest engine chosen (the autotuning above), kept alive to run again; its prepare_run
  // zeroes the dQ accumulator where cuDNN needs that. skip_reason as measure() would give it.
  Prepared prepare(const AttentionKey& key);

  // For tests: runs the key's forward once (first engine that finalises) on random inputs and
  // returns the largest |O - ref| against the naive reference kernel (attention_reference.h);
  // fp8 keys against a CPU recomputation from the same e4m3 inputs.
  // Throws GpuError (not_supported) when cuDNN has no engine for it.
  double check_against_reference(const AttentionKey& key, cudaStream_t stream);

  // For tests: forward, then the backward twice on random Q, K, V, dO (bf16 / fp16: the dQ
  // accumulator filled with NaN before the first pass, so one not zeroed between executions
  // shows); the largest |error| of dQ, dK and dV relative to the largest |reference| value,
  // against a double-precision CPU recomputation from the same (rounded) inputs. fp8 keys run the
  // backward once more with the gradients' scales set from the earlier passes' amax (448 / amax),
  // and compare the unscaled e4m3 gradients. Keep shapes tiny: O(b·h·sq·skv·d) on the CPU.
  struct GradientErrors {
    double dq = 0, dk = 0, dv = 0;
  };
  GradientErrors check_backward_against_cpu(const AttentionKey& key, cudaStream_t stream);

  static std::string library_version();

 private:
  MeasureLoop& loop_;
  cudnnHandle_t handle_ = nullptr;
};

}  // namespace calisim::profiler
