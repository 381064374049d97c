#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <stdexcept>

#include "profiler/attention_reference.h"

namespace calisim::profiler {
namespace {

__device__ float to_float(__nv_bfloat16 x) { return __bfloat162float(x); }
__device__ float to_float(__half x) { return __half2float(x); }

struct RefArgs {
  const void *q, *k, *v;
  float* out;
  long long batch, hq, hkv, sq, skv, dqk, dv;
  float scale;
  bool causal;
};

// Two passes over the keys per query row: the row maximum, then exp-weighted sums (numerically
// the same softmax as cuDNN's max-subtracted one).
template <class T>
__global__ void attention_reference_kernel(RefArgs a) {
  const long long row = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  if (row >= a.batch * a.hq * a.sq) return;
  const long long i = row % a.sq;
  const long long h = (row / a.sq) % a.hq;
  const long long b = row / (a.sq * a.hq);
  const long long hk = h / (a.hq / a.hkv);
  const T* q = static_cast<const T*>(a.q) + ((b * a.hq + h) * a.sq + i) * a.dqk;
  const T* k = static_cast<const T*>(a.k) + (b * a.hkv + hk) * a.skv * a.dqk;
  const T* v = static_cast<const T*>(a.v) + (b * a.hkv + hk) * a.skv * a.dv;
  float* o = a.out + row * a.dv;
  const long long last = a.causal ? (i < a.skv ? i + 1 : a.skv) : a.skv;
  float m = -INFINITY;
  for (long long j = 0; j < last; ++j) {
    float s = 0;
    for (long long d = 0; d < a.dqk; ++d) s += to_float(q[d]) * to_float(k[j * a.dqk + d]);
    m = fmaxf(m, s * a.scale);
  }
  for (long long d = 0; d < a.dv; ++d) o[d] = 0;
  float sum = 0;
  for (long long j = 0; j < last; ++j) {
    float s = 0;
    for (long long d = 0; d < a.dqk; ++d) s += to_float(q[d]) * to_float(k[j * a.dqk + d]);
    const float p = __expf(s * a.scale - m);
    sum += p;
    for (long long d = 0; d < a.dv; ++d) o[d] += p * to_float(v[j * a.dv + d]);
  }
  for (long long d = 0; d < a.dv; ++d) o[d] = sum > 0 ? o[d] / sum : 0.0f;
}

}  // namespace

void launch_attention_reference(const AttentionRefShape& key, const void* q, const void* k, const void* v,
                                float scale, float* out, cudaStream_t stream) {
  if (key.heads_kv <= 0 || key.heads_q % key.heads_kv != 0) {
    throw std::invalid_argument("attention reference: heads_q must be a multiple of heads_kv");
  }
  const RefArgs a{q, k, v, out, key.batch, key.heads_q, key.heads_kv, key.seq_q, key.seq_kv, key.head_dim_qk,
                  key.head_dim_v, scale, key.causal};
  const long long rows = key.batch * key.heads_q * key.seq_q;
  const int threads = 128;
  const unsigned blocks = static_cast<unsigned>((rows + threads - 1) / threads);
  if (key.bf16) {
    attention_reference_kernel<__nv_bfloat16><<<blocks, threads, 0, stream>>>(a);
  } else {
    attention_reference_kernel<__half><<<blocks, threads, 0, stream>>>(a);
  }
}

}  // namespace calisim::profiler
