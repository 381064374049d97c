#include "profiler/memory_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include "profiler/device_buffer.h"
#include "profiler/fill_random.h"
#include "profiler/gpu_error.h"
#include "profiler/stream_kernel.h"

namespace calisim::profiler {
namespace {

// The arrays of one memory pattern: random inputs, outputs (poisoned with NaN bytes when asked).
struct StreamArrays {
  MemoryPattern p;
  std::int64_t n = 0;
  DType dtype = DType::bf16;
  std::vector<DeviceBuffer> bufs;
  const void* in[kMaxStreamArrays] = {};
  void* out[kMaxStreamArrays] = {};

  StreamArrays(const MemoryOpKey& key, std::uint64_t seed, bool poison, cudaStream_t stream)
      : p(memory_pattern(key.kind)), n(elements_per_array(key, p)),
        dtype(p.element_bytes == 2 ? DType::bf16 : DType::fp32) {
    const std::size_t bytes_each = static_cast<std::size_t>(n) * p.element_bytes;
    for (int i = 0; i < p.reads + p.writes; ++i) bufs.emplace_back(bytes_each);
    for (int r = 0; r < p.reads; ++r) {
      in[r] = bufs[r].get();
      fill_random(bufs[r].get(), n, dtype, seed + r, 1.0f, stream);
    }
    for (int w = 0; w < p.writes; ++w) {
      out[w] = bufs[p.reads + w].get();
      if (poison) check_cuda(cudaMemsetAsync(out[w], 0xFF, bytes_each, stream), "poison outputs");
    }
    check_cuda(cudaStreamSynchronize(stream), "fill inputs");
  }

  void launch(cudaStream_t s) const { launch_stream_kernel(in, p.reads, out, p.writes, n, p.element_bytes, s); }

  std::vector<double> read_back(const void* ptr) const {
    std::vector<double> v(static_cast<std::size_t>(n));
    copy_to_host_as_double(ptr, n, dtype, v.data());
    return v;
  }
};

}  // namespace

namespace {

class PreparedStream final : public PreparedKernel {
 public:
  explicit PreparedStream(std::unique_ptr<StreamArrays> a) : a_(std::move(a)) {}
  void run(cudaStream_t s) override { a_->launch(s); }

 private:
  std::unique_ptr<StreamArrays> a_;
};

}  // namespace

Prepared MemoryBench::prepare(const MemoryOpKey& key) {
  std::unique_ptr<StreamArrays> a;
  try {
    a = std::make_unique<StreamArrays>(key, 1000, false, nullptr);
  } catch (const GpuError& e) {
    if (e.out_of_memory()) return {nullptr, e.what()};
    throw;
  }
  const std::string algorithm =
      fmt::format("stream {}r{}w x {} elements of {} B{}", a->p.reads, a->p.writes, a->n, a->p.element_bytes,
                  a->p.approximated ? " (kind not in the table: 1r1w approximation)" : "");
  auto k = std::make_unique<PreparedStream>(std::move(a));
  k->algorithm = algorithm;
  return {std::move(k), ""};
}

Measurement MemoryBench::measure(const MemoryOpKey& key) {
  return measure_prepared(loop_, prepare(key));
}

double MemoryBench::check_against_cpu(const MemoryOpKey& key, cudaStream_t stream) {
  const StreamArrays a(key, 77, true, stream);
  a.launch(stream);
  check_cuda(cudaStreamSynchronize(stream), "stream kernel");
  // Inputs as stored (rounded to the dtype), read back; the reference sums them in double.
  std::vector<std::vector<double>> ins;
  for (int r = 0; r < a.p.reads; ++r) ins.push_back(a.read_back(a.in[r]));
  double worst = 0;
  for (int w = 0; w < a.p.writes; ++w) {
    const std::vector<double> got = a.read_back(a.out[w]);
    double err = 0, ref_norm = 0;
    for (std::int64_t i = 0; i < a.n; ++i) {
      double ref = 0;
      for (int r = 0; r < a.p.reads; ++r) ref += ins[r][i];
      ref *= (w + 1);
      if (!std::isfinite(got[i])) return INFINITY;  // an element left unwritten (poison) or NaN
      err += (got[i] - ref) * (got[i] - ref);
      ref_norm += ref * ref;
    }
    worst = std::max(worst, std::sqrt(err / std::max(ref_norm, 1e-30)));
  }
  return worst;
}

}  // namespace calisim::profiler
