// A naive attention kernel: the reference the GPU test compares cuDNN's SDPA output with.
//
// O[b,h,i,:] = softmax_j(scale · Q[b,h,i,:] · K[b,g,j,:]) · V[b,g,j,:] with g = h / (hq / hkv)
// over j < skv (j <= i when causal), computed in fp32 from bf16 or fp16 inputs, one thread per
// query row. Layout: [batch, heads, seq, head_dim], contiguous. Keep shapes small (seq <= a few
// hundred): it is O(sq · skv · d) per row with no tiling. `out` is fp32, batch·hq·sq·dv values.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>

namespace calisim::profiler {

// The shape of an AttentionKey in plain C++17 (this header is also compiled by nvcc).
struct AttentionRefShape {
  long long batch = 1, heads_q = 1, heads_kv = 1, seq_q = 1, seq_kv = 1, head_dim_qk = 64, head_dim_v = 64;
  bool causal = false;
  bool bf16 = true;  // else fp16
};

// Throws std::invalid_argument when heads_q is not a multiple of heads_kv.
void launch_attention_reference(const AttentionRefShape& shape, const void* q, const void* k, const void* v,
                                float scale, float* out, cudaStream_t stream);

}  // namespace calisim::profiler
