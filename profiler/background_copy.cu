#include "profiler/background_copy.h"

#include <chrono>
#include <stdexcept>
#include <string>
#include <thread>

#include "profiler/gpu_error.h"

namespace calisim::profiler {
namespace {

constexpr int kThreads = 512;  // NCCL's CTAs run 512-640 threads

// Sweeps `in` into `out` until flags[0] is set or max_sweeps are done; thread 0 of each CTA reads
// the host-mapped flag once per sweep and shares it, marks the CTA resident in its own slot
// flags[1 + blockIdx.x] (plain stores: atomics on host memory need PCIe atomics), and adds the
// CTA's completed sweeps to the device counter *sweeps at the end. The dynamic shared memory is
// only reserved.
__global__ void background_copy_kernel(const uint4* in, uint4* out, long long vecs, volatile int* flags,
                                       unsigned long long* sweeps, long long max_sweeps) {
  extern __shared__ unsigned char reserved[];
  __shared__ int stop;
  if (threadIdx.x == 0) {
    flags[1 + blockIdx.x] = 1;
    __threadfence_system();
    reserved[0] = 0;
  }
  long long done = 0;
  const long long stride = static_cast<long long>(gridDim.x) * blockDim.x;
  for (; done < max_sweeps; ++done) {
    if (threadIdx.x == 0) stop = flags[0];
    __syncthreads();
    if (stop) break;
    for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < vecs; i += stride) {
      out[i] = in[i];
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) atomicAdd(sweeps, static_cast<unsigned long long>(done));
}

}  // namespace

BackgroundCopy::BackgroundCopy(int ctas, std::size_t array_bytes) : ctas_(ctas), array_bytes_(array_bytes) {
  int dev = 0, sms = 0, smem_per_sm = 0, smem_optin = 0;
  check_cuda(cudaGetDevice(&dev), "cudaGetDevice");
  check_cuda(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev), "SM count");
  if (ctas < 1 || ctas > sms) {
    throw std::invalid_argument("background copy CTAs must be 1.." + std::to_string(sms) + " (the SM count), got " +
                                std::to_string(ctas));
  }
  check_cuda(cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev), "smem per SM");
  check_cuda(cudaDeviceGetAttribute(&smem_optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev), "smem opt-in");
  // More than half of an SM's shared memory (with the static bytes and the per-CTA reserve): no
  // second CTA of this kernel fits beside it.
  smem_bytes_ = smem_per_sm / 2 + 4096;
  if (smem_bytes_ > smem_optin) smem_bytes_ = smem_optin;
  check_cuda(cudaFuncSetAttribute(background_copy_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_bytes_),
             "background copy shared memory");
  array_bytes_ -= array_bytes_ % 16;
  in_ = DeviceBuffer(array_bytes_);
  out_ = DeviceBuffer(array_bytes_);
  check_cuda(cudaMemset(in_.get(), 0x3c, array_bytes_), "background copy input");
  void* host = nullptr;
  check_cuda(cudaHostAlloc(&host, (1 + static_cast<std::size_t>(ctas)) * sizeof(int), cudaHostAllocMapped),
             "background copy flags");
  flags_ = static_cast<volatile int*>(host);
  check_cuda(cudaMalloc(reinterpret_cast<void**>(&sweeps_), sizeof(unsigned long long)), "background copy counter");
  check_cuda(cudaEventCreate(&begin_), "cudaEventCreate");
  check_cuda(cudaEventCreate(&end_), "cudaEventCreate");
}

BackgroundCopy::~BackgroundCopy() {
  if (stream_) {  // still running: stop it rather than leave a kernel spinning
    flags_[0] = 1;
    cudaStreamSynchronize(stream_);
  }
  if (begin_) cudaEventDestroy(begin_);
  if (end_) cudaEventDestroy(end_);
  if (sweeps_) cudaFree(sweeps_);
  if (flags_) cudaFreeHost(const_cast<int*>(flags_));
}

void BackgroundCopy::start(cudaStream_t stream, std::int64_t max_sweeps) {
  if (stream_) throw std::logic_error("background copy already running");
  for (int i = 0; i <= ctas_; ++i) flags_[i] = 0;
  check_cuda(cudaMemsetAsync(sweeps_, 0, sizeof(unsigned long long), stream), "background copy counter");
  void* dev_flags = nullptr;
  check_cuda(cudaHostGetDevicePointer(&dev_flags, const_cast<int*>(flags_), 0), "background copy flags");
  max_sweeps_ = max_sweeps < 1 ? 1 : max_sweeps;
  check_cuda(cudaEventRecord(begin_, stream), "cudaEventRecord");
  background_copy_kernel<<<ctas_, kThreads, smem_bytes_, stream>>>(
      static_cast<const uint4*>(in_.get()), static_cast<uint4*>(out_.get()),
      static_cast<long long>(array_bytes_ / 16), static_cast<volatile int*>(dev_flags), sweeps_, max_sweeps_);
  check_cuda(cudaGetLastError(), "background copy launch");
  check_cuda(cudaEventRecord(end_, stream), "cudaEventRecord");
  stream_ = stream;
  // Wait until every CTA is resident, so the work that follows finds its SMs taken.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  auto resident = [&] {
    int n = 0;
    for (int i = 1; i <= ctas_; ++i) n += flags_[i];
    return n;
  };
  while (resident() < ctas_) {
    if (std::chrono::steady_clock::now() > deadline) {
      const int started = resident();
      stop();
      throw GpuError("background copy: only " + std::to_string(started) + " of " + std::to_string(ctas_) +
                         " CTAs became resident within 10 s",
                     GpuError::Kind::other);
    }
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

BackgroundCopy::Result BackgroundCopy::stop() {
  if (!stream_) throw std::logic_error("background copy is not running");
  flags_[0] = 1;
  const cudaStream_t s = stream_;
  stream_ = nullptr;
  check_cuda(cudaStreamSynchronize(s), "background copy");
  unsigned long long sweeps = 0;
  check_cuda(cudaMemcpy(&sweeps, sweeps_, sizeof sweeps, cudaMemcpyDeviceToHost), "background copy counter");
  float ms = 0;
  check_cuda(cudaEventElapsedTime(&ms, begin_, end_), "background copy time");
  Result r;
  // Each CTA copies its share of the arrays per sweep: the CTAs' sweeps over their count are whole
  // sweeps, each reading and writing array_bytes.
  r.bytes = static_cast<double>(sweeps) / ctas_ * 2.0 * static_cast<double>(array_bytes_);
  r.seconds = ms / 1e3;
  r.hit_max_sweeps = sweeps >= static_cast<unsigned long long>(max_sweeps_) * static_cast<unsigned long long>(ctas_);
  return r;
}

}  // namespace calisim::profiler
