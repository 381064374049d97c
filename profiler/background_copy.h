// BackgroundCopy: a copy kernel that holds a fixed number of SMs and streams HBM traffic until it
// is told to stop, the stand-in for communication kernels beside compute in `calisim profile
// sequence` (sequence_bench.h).
//
// NCCL runs each channel as one CTA resident on its own SM for the whole collective, moving data
// through HBM while GEMMs and attention share the rest of the GPU; the slowdown that costs compute
// is what `comm_compute_slowdown` in a system file stands for. This kernel reproduces the two
// mechanisms on one GPU: `ctas` CTAs, each reserving more than half an SM's shared memory so that
// no two share an SM (and compute kernels needing most of an SM's shared memory cannot co-reside
// with it, as with an NCCL CTA), each copying 16-byte vectors between two device arrays, sweep
// after sweep, until the host sets the stop flag (or `max_sweeps` ends it: a stop flag that is
// never seen cannot hang the GPU). It is not NCCL: its traffic is local HBM only, unthrottled, and
// its rate is reported, not chosen.
//
// Use: start(stream) launches it and returns once every CTA is resident (or throws GpuError after
// 10 s); stop() sets the flag, waits for the kernel, and returns the bytes it moved (reads plus
// writes) and its duration in seconds. One run at a time; the object owns its arrays, flags and
// events.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>

#include "profiler/device_buffer.h"

namespace calisim::profiler {

class BackgroundCopy {
 public:
  // `array_bytes` per array (two arrays; default 256 MiB, far above any L2); throws GpuError when
  // they do not fit, std::invalid_argument for ctas outside 1..SM count.
  BackgroundCopy(int ctas, std::size_t array_bytes = std::size_t{256} << 20);
  ~BackgroundCopy();
  BackgroundCopy(const BackgroundCopy&) = delete;
  BackgroundCopy& operator=(const BackgroundCopy&) = delete;

  // max_sweeps bounds the run (each sweep moves 2 x array_bytes).
  void start(cudaStream_t stream, std::int64_t max_sweeps);
  struct Result {
    double bytes = 0;    // read + written
    double seconds = 0;  // kernel start to end (CUDA events around it)
    bool hit_max_sweeps = false;
  };
  Result stop();

  int ctas() const { return ctas_; }
  double bytes_per_sweep() const { return 2.0 * static_cast<double>(array_bytes_); }  // read + written

 private:
  int ctas_ = 0;
  std::size_t array_bytes_ = 0;
  int smem_bytes_ = 0;
  DeviceBuffer in_, out_;
  volatile int* flags_ = nullptr;       // host-mapped: [0] stop, [1 + b] CTA b resident
  unsigned long long* sweeps_ = nullptr;  // device: sweeps completed, summed over CTAs
  cudaEvent_t begin_ = nullptr, end_ = nullptr;
  cudaStream_t stream_ = nullptr;
  std::int64_t max_sweeps_ = 0;
};

}  // namespace calisim::profiler
