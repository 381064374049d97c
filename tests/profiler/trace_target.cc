// A small CUDA program for the trace test: after initialising CUDA, inside the NVTX range
// "calisim_trace_target" it runs a cuBLASLt GEMM (through GemmBench's reference check), fills
// (fill_random) and kStreamLaunches copy kernels (launch_stream_kernel); then one copy outside
// any range, and the copies and memset the trace test looks for: 1 MiB host to device, a 1 MiB
// memset, 4 KiB device to host. Exits 0 on success.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <exception>
#include <vector>

#include "profiler/cuda_timer.h"
#include "profiler/device_buffer.h"
#include "profiler/fill_random.h"
#include "profiler/gemm_bench.h"
#include "profiler/gpu_error.h"
#include "profiler/l2flush.h"
#include "profiler/stream_kernel.h"

int main() {
  using namespace calisim::profiler;
  constexpr int kStreamLaunches = 5;
  try {
    // CUDA first: initialising it loads libcalisim_trace.so, which points NVTX at CUPTI before
    // the first NVTX call reads NVTX_INJECTION64_PATH (as in a PyTorch program).
    check_cuda(cudaFree(nullptr), "cudaFree");
    nvtxRangePushA("calisim_trace_target");
    CudaEventTimer timer;
    NvmlMonitor nvml(0);
    L2Flush flush(0);
    MeasureLoop loop(nullptr, timer, nvml, flush, LoopOptions{});
    GemmBench gemm(loop);
    const double err = gemm.check_against_cpu({64, 64, 64, 1, calisim::DType::bf16, calisim::GemmLayout::TN, false},
                                              nullptr);
    const std::int64_t n = 1 << 20;
    DeviceBuffer in(n * 2), out(n * 2);
    fill_random(in.get(), n, calisim::DType::bf16, 1, 1.0f, nullptr);
    const void* ins[] = {in.get()};
    void* outs[] = {out.get()};
    for (int i = 0; i < kStreamLaunches; ++i) launch_stream_kernel(ins, 1, outs, 1, n, 2, nullptr);
    nvtxRangePop();
    launch_stream_kernel(ins, 1, outs, 1, n, 2, nullptr);
    std::vector<char> host(1 << 20, 1);
    check_cuda(cudaMemcpy(in.get(), host.data(), host.size(), cudaMemcpyHostToDevice), "cudaMemcpy HtoD");
    check_cuda(cudaMemset(out.get(), 0, 1 << 20), "cudaMemset");
    check_cuda(cudaMemcpy(host.data(), out.get(), 4096, cudaMemcpyDeviceToHost), "cudaMemcpy DtoH");
    check_cuda(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
    std::printf("gemm relative error %.3g\n", err);
    return err < 1e-2 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trace target: %s\n", e.what());
    return 1;
  }
}
