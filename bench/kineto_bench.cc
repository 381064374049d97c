// Reading PyTorch profiler traces (profiler/kineto_trace.h): a synthetic trace in Kineto's layout,
// written once per process, of S training steps with K GEMM kernels each, and per kernel the CPU
// events a real trace carries around it (aten op, Python frame, cudaLaunchKernel, flow start), so
// that most of the file is CPU events the reader drops, as in a real trace. Reports the file size
// and the records read; CALISIM_KINETO_BENCH_KEEP=1 keeps the files (their paths on stderr). The
// gzip case reads the same trace compressed (MB/s counted on the JSON it holds).
#include <benchmark/benchmark.h>
#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <zlib.h>

#include "profiler/kineto_trace.h"

namespace {

// Writes the trace and returns its path (in the temporary directory; rewritten per process).
std::string write_trace(int steps, int kernels_per_step) {
  const auto path = std::filesystem::temp_directory_path() /
                    fmt::format("calisim_kineto_bench_{}x{}.json", steps, kernels_per_step);
  std::ofstream out(path);
  out << "{\"deviceProperties\": [{\"id\": 0, \"name\": \"NVIDIA H100 80GB HBM3\"}],\n"
         "\"distributedInfo\": {\"backend\": \"nccl\", \"rank\": 0, \"world_size\": 8},\n\"traceEvents\": [\n";
  double t = 0;
  long long c = 0;
  bool first = true;
  auto event = [&](const std::string& e) {
    out << (first ? "" : ",\n") << e;
    first = false;
  };
  for (int s = 0; s < steps; ++s) {
    const double span = kernels_per_step * 19.0 + 50;
    event(fmt::format(R"({{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{}", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": {:.3f}}})",
                      s, t, span));
    event(fmt::format(R"({{"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#{}", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": {:.3f}}})",
                      s, t + 10, span));
    for (int i = 0; i < kernels_per_step; ++i, ++c) {
      const double cpu = t + i * 19.0, gpu = t + 10 + i * 19.0;
      event(fmt::format(R"({{"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": 8.0, "args": {{"External id": {}, "Input Dims": [[4096, 4096], [4096, 4096]], "Input type": ["c10::BFloat16", "c10::BFloat16"]}}}})",
                        cpu, c));
      event(fmt::format(R"({{"ph": "X", "cat": "python_function", "name": "torch/nn/modules/linear.py(125): forward", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": 9.0, "args": {{"Python parent id": {}, "Python id": {}}}}})",
                        cpu, c, c + 1));
      event(fmt::format(R"({{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {:.3f}, "dur": 4.0, "args": {{"External id": {}, "cbid": 211, "correlation": {}}}}})",
                        cpu + 1, c, c));
      event(fmt::format(R"({{"ph": "X", "cat": "kernel", "name": "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT", "pid": 0, "tid": 7, "ts": {:.3f}, "dur": 18.0, "args": {{"External id": {}, "device": 0, "stream": 7, "correlation": {}, "grid": [132, 1, 1], "block": [384, 1, 1]}}}})",
                        gpu, c, c));
      event(fmt::format(R"({{"ph": "s", "id": {}, "pid": 1, "tid": 1, "ts": {:.3f}, "cat": "ac2g", "name": "ac2g"}})", c, cpu + 1));
    }
    t += span + 100;
  }
  out << "\n]}\n";
  return path.string();
}

// `path` gzip-compressed beside it (what tensorboard_trace_handler(use_gzip=True) writes).
std::string gzip_copy(const std::string& path) {
  const std::string gz = path + ".gz";
  std::ifstream in(path, std::ios::binary);
  gzFile out = gzopen(gz.c_str(), "wb6");
  std::vector<char> buf(1 << 20);
  while (in.read(buf.data(), static_cast<std::streamsize>(buf.size())) || in.gcount() > 0) {
    gzwrite(out, buf.data(), static_cast<unsigned>(in.gcount()));
  }
  gzclose(out);
  return gz;
}

void BM_ReadKinetoTrace(benchmark::State& state) {
  const std::string plain = write_trace(static_cast<int>(state.range(0)), static_cast<int>(state.range(1)));
  const bool gzip = state.range(2) != 0;
  const std::string path = gzip ? gzip_copy(plain) : plain;
  std::size_t records = 0;
  for (auto _ : state) {
    const auto t = calisim::profiler::read_kineto_trace(path);
    records = t.records.size();
    benchmark::DoNotOptimize(records);
  }
  // Throughput counts the JSON parsed (the plain file's size), also for the .gz.
  const auto bytes = std::filesystem::file_size(plain);
  state.counters["file_MB"] = static_cast<double>(std::filesystem::file_size(path)) / 1e6;
  state.counters["json_MB"] = static_cast<double>(bytes) / 1e6;
  state.counters["kernels"] = static_cast<double>(records);
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations()) * static_cast<std::int64_t>(bytes));
  // CALISIM_KINETO_BENCH_KEEP=1 keeps the file, to time `calisim db import --kineto` on it.
  if (const char* keep = std::getenv("CALISIM_KINETO_BENCH_KEEP"); keep && std::string(keep) == "1") {
    std::fprintf(stderr, "kept %s\n", path.c_str());
  } else {
    std::filesystem::remove(path);
  }
  if (gzip) std::filesystem::remove(plain);
}
// 2 steps of 5,000 kernels (about 9 MB), and 20 steps (about 95 MB, 500,000 events); the third
// argument 1 reads the same trace gzip-compressed.
BENCHMARK(BM_ReadKinetoTrace)
    ->Args({2, 5000, 0})
    ->Args({20, 5000, 0})
    ->Args({20, 5000, 1})
    ->Unit(benchmark::kMillisecond);

}  // namespace
