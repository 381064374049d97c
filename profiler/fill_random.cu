#include "profiler/fill_random.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <vector>

#include "profiler/gpu_error.h"

namespace calisim::profiler {
namespace {

// SplitMix64 finaliser: a good 64-bit mix, cheap on both CPU and GPU.
__host__ __device__ inline std::uint64_t mix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__host__ __device__ inline float uniform(std::uint64_t seed, std::uint64_t i, float scale) {
  const std::uint64_t h = mix64(seed ^ mix64(i));
  // Top 24 bits -> [0, 1) exactly representable in fp32.
  const float u = static_cast<float>(h >> 40) * (1.0f / 16777216.0f);
  return (2.0f * u - 1.0f) * scale;
}

template <class T>
__device__ inline T convert(float v);
template <> __device__ inline float convert<float>(float v) { return v; }
template <> __device__ inline __nv_bfloat16 convert<__nv_bfloat16>(float v) { return __float2bfloat16(v); }
template <> __device__ inline __half convert<__half>(float v) { return __float2half(v); }
template <> __device__ inline __nv_fp8_e4m3 convert<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }
template <> __device__ inline __nv_fp8_e5m2 convert<__nv_fp8_e5m2>(float v) { return __nv_fp8_e5m2(v); }

template <class T>
__global__ void fill_kernel(T* out, std::int64_t n, std::uint64_t seed, float scale) {
  const std::int64_t stride = static_cast<std::int64_t>(gridDim.x) * blockDim.x;
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    out[i] = convert<T>(uniform(seed, static_cast<std::uint64_t>(i), scale));
  }
}

template <class T>
void launch(void* ptr, std::int64_t n, std::uint64_t seed, float scale, cudaStream_t stream) {
  const int threads = 256;
  const std::int64_t want = (n + threads - 1) / threads;
  const int blocks = static_cast<int>(want < 65536 ? (want > 0 ? want : 1) : 65536);
  fill_kernel<T><<<blocks, threads, 0, stream>>>(static_cast<T*>(ptr), n, seed, scale);
  check_cuda(cudaGetLastError(), "fill_random launch");
}

}  // namespace

template <class T>
void widen(const void* device_ptr, std::int64_t count, double* out) {
  std::vector<T> host(static_cast<std::size_t>(count));
  check_cuda(cudaMemcpy(host.data(), device_ptr, sizeof(T) * count, cudaMemcpyDeviceToHost), "copy to host");
  for (std::int64_t i = 0; i < count; ++i) out[i] = static_cast<double>(static_cast<float>(host[i]));
}

void copy_to_host_as_double(const void* device_ptr, std::int64_t count, DType dtype, double* out) {
  switch (dtype) {
    case DType::fp32:
    case DType::tf32: return widen<float>(device_ptr, count, out);
    case DType::bf16: return widen<__nv_bfloat16>(device_ptr, count, out);
    case DType::fp16: return widen<__half>(device_ptr, count, out);
    case DType::fp8_e4m3: return widen<__nv_fp8_e4m3>(device_ptr, count, out);
    case DType::fp8_e5m2: return widen<__nv_fp8_e5m2>(device_ptr, count, out);
  }
}

float random_uniform(std::uint64_t seed, std::uint64_t index, float scale) { return uniform(seed, index, scale); }

void fill_random(void* ptr, std::int64_t count, DType dtype, std::uint64_t seed, float scale, cudaStream_t stream) {
  switch (dtype) {
    case DType::fp32:
    case DType::tf32: return launch<float>(ptr, count, seed, scale, stream);
    case DType::bf16: return launch<__nv_bfloat16>(ptr, count, seed, scale, stream);
    case DType::fp16: return launch<__half>(ptr, count, seed, scale, stream);
    case DType::fp8_e4m3: return launch<__nv_fp8_e4m3>(ptr, count, seed, scale, stream);
    case DType::fp8_e5m2: return launch<__nv_fp8_e5m2>(ptr, count, seed, scale, stream);
  }
}

}  // namespace calisim::profiler
