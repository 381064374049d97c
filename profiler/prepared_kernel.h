// PreparedKernel: one benchmark kernel with its inputs allocated and filled and its algorithm
// chosen (cuBLASLt autotuned, cuDNN engine picked), ready to run again and again on a stream.
//
// The benchmarks (gemm_bench.h, attention_bench.h, memory_bench.h) build one in prepare(key) and
// time it with the MeasureLoop in measure(key); `calisim profile sequence` (sequence_bench.h)
// keeps a layer's worth of them alive at once to run them back to back. A prepared kernel owns
// its device buffers; its run() must be issued on one stream at a time. prepare_run() is the
// per-execution set-up that is not the kernel's time (zeroing cuDNN's dQ accumulator before
// cuDNN 9.6.0); callers issue it before every run(), outside any timed region when timing alone.
#pragma once

#include <cuda_runtime.h>

#include <memory>
#include <string>

#include "profiler/measure_loop.h"

namespace calisim::profiler {

class PreparedKernel {
 public:
  virtual ~PreparedKernel() = default;
  virtual void run(cudaStream_t stream) = 0;
  virtual void prepare_run(cudaStream_t) {}
  virtual bool has_prepare_run() const { return false; }

  std::string algorithm;  // as Measurement::algorithm ("cublasLt algo ...", "cudnn sdpa ...")
  std::string library;    // as Measurement::library
};

// A prepared kernel, or why the key cannot run here (unsupported shape, out of memory).
struct Prepared {
  std::unique_ptr<PreparedKernel> kernel;
  std::string skip_reason;  // set exactly when kernel is null
};

// Times a prepared kernel with the loop (its prepare_run before every sample, outside the time)
// and records its algorithm and library on the result.
inline Measurement measure_prepared(MeasureLoop& loop, PreparedKernel& k) {
  const StreamOp run = [&k](cudaStream_t s) { k.run(s); };
  Measurement m = k.has_prepare_run() ? loop.measure(run, [&k](cudaStream_t s) { k.prepare_run(s); }) : loop.measure(run);
  m.algorithm = k.algorithm;
  m.library = k.library;
  return m;
}

// The same for what prepare(key) returned: skipped with its reason when nothing was prepared.
inline Measurement measure_prepared(MeasureLoop& loop, const Prepared& p) {
  return p.kernel ? measure_prepared(loop, *p.kernel) : Measurement::skipped_because(p.skip_reason);
}

}  // namespace calisim::profiler
