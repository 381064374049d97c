#include "profiler/device_match.h"
#include "profiler/gpu_state.h"
#include "profiler/kernel_class.h"

#include <gtest/gtest.h>

namespace calisim::profiler {
namespace {

TEST(KernelClass, RealKernelNames) {
  // Names as CUPTI / Nsight report them for cuBLAS, cuDNN, FlashAttention, NCCL, PyTorch, Triton.
  EXPECT_EQ(classify_kernel("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1_"
                            "execute_segment_k_off_kernel__5x_cublas"),
            KernelClass::gemm);
  EXPECT_EQ(classify_kernel("nvjet_tst_256x128_64x4_1x2_h_bz_coopB_NNT"), KernelClass::gemm);
  EXPECT_EQ(classify_kernel("void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_64x4_tn_align8>"),
            KernelClass::gemm);
  EXPECT_EQ(classify_kernel("triton_tem_fused_mm_0"), KernelClass::gemm);
  EXPECT_EQ(classify_kernel("void flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4>, true>"),
            KernelClass::attention);
  EXPECT_EQ(classify_kernel("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_7_64x128x128_4x1x1_"
                            "kernel0_0"),
            KernelClass::attention);
  // A CUTLASS-based attention kernel names "gemm" in its template, but it is attention.
  EXPECT_EQ(classify_kernel("fmha_cutlassF_bf16_aligned_64x128_rf_sm80 (gemm)"), KernelClass::attention);
  EXPECT_EQ(classify_kernel("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            KernelClass::nccl);
  EXPECT_EQ(classify_kernel("void at::native::vectorized_elementwise_kernel<4, at::native::CUDAFunctor_add<c10::BFloat16>>"),
            KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("void at::native::(anonymous namespace)::cunn_SoftMaxForward<4, float>"),
            KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("triton_poi_fused_add_mul_silu_3"), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("triton_red_fused__to_copy_mean_pow_rsqrt_0"), KernelClass::elementwise);
  EXPECT_EQ(classify_kernel("void at::native::radixSortKVInPlace<-2, -1, 32, 4>"), KernelClass::other);
  // Communication that bypasses NCCL: counted as compute it would hide exposed communication.
  for (const char* comm : {"void userbuffers_fp16_sum_inplace_gpu_rr_rs_oop<__nv_bfloat16, 8>(int, int, int)",
                           "kuserbuffers_pushsend(int*, int*, int4*, int4*, int)",
                           "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*)",
                           "void nvshmemi_transfer_rma_kernel<int>(void*)",
                           "void c10d::symmetric_memory::one_shot_all_reduce_kernel<__nv_bfloat16, 8>(...)"}) {
    EXPECT_EQ(classify_kernel(comm), KernelClass::nccl) << comm;
  }
  EXPECT_EQ(classify_kernel(""), KernelClass::other);
}

// The collective a communication kernel runs, for the comparison's per-collective rows.
TEST(KernelClass, CollectivesAreReadFromNcclAndUserbufferNames) {
  using calisim::profiler::nccl_collective;
  using calisim::profiler::NcclCollective;
  EXPECT_EQ(nccl_collective("ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            NcclCollective::all_reduce);
  EXPECT_EQ(nccl_collective("ncclDevKernel_ReduceScatter_Sum_f32_RING_LL"), NcclCollective::reduce_scatter);
  EXPECT_EQ(nccl_collective("ncclKernel_AllGather_RING_LL_Sum_int8_t"), NcclCollective::all_gather);
  EXPECT_EQ(nccl_collective("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"), NcclCollective::send_recv);
  EXPECT_EQ(nccl_collective("ncclDevKernel_Broadcast_RING_LL"), NcclCollective::other);
  EXPECT_EQ(nccl_collective("void userbuffers_fp16_sum_inplace_gpu_rr_rs_oop_fp8<__nv_fp8_e4m3, 8>(int)"),
            NcclCollective::reduce_scatter);
  EXPECT_EQ(nccl_collective("userbuffers_fp16_sum_inplace_gpu_rr_rs"), NcclCollective::reduce_scatter);
  EXPECT_EQ(nccl_collective("void userbuffers_fp16_sum_inplace_gpu_rw_ag<8>(int, int)"), NcclCollective::all_gather);
  EXPECT_EQ(nccl_collective("void userbuffers_fp16_sum_inplace_gpu_rw<8>(int, int)"), NcclCollective::all_reduce);
  EXPECT_EQ(nccl_collective("kuserbuffers_pushrecv(int, int, int*)"), NcclCollective::send_recv);
  EXPECT_EQ(nccl_collective("void deep_ep::internode::combine<true, 8>(int4*)"), NcclCollective::send_recv);
  EXPECT_EQ(nccl_collective("void c10d::symmetric_memory::multimem_all_gather_kernel<16>(...)"),
            NcclCollective::all_gather);
}

TEST(DeviceMatch, CudaNamesMapToShippedSystems) {
  EXPECT_EQ(system_for_cuda_device("NVIDIA H100 80GB HBM3"), "h100-sxm");
  EXPECT_EQ(system_for_cuda_device("NVIDIA H100 PCIe"), "h100-pcie");
  EXPECT_EQ(system_for_cuda_device("NVIDIA H200"), "h200");
  EXPECT_EQ(system_for_cuda_device("NVIDIA A100-SXM4-80GB"), "a100-sxm-80g");
  EXPECT_EQ(system_for_cuda_device("NVIDIA A100 80GB PCIe"), "a100-pcie-80g");
  EXPECT_EQ(system_for_cuda_device("NVIDIA GB200"), "gb200-nvl72");
  EXPECT_EQ(system_for_cuda_device("NVIDIA GB300"), "gb300-nvl72");
  EXPECT_EQ(system_for_cuda_device("NVIDIA B300 SXM6 AC"), "b300");
  EXPECT_EQ(system_for_cuda_device("NVIDIA B200"), "b200");
  EXPECT_EQ(system_for_cuda_device("NVIDIA GeForce RTX 4090"), "");
}

TEST(Throttling, SlowdownReasonsAndLowClocksAreFlagged) {
  GpuState fine{true, 1980, 2619, 1980, 55, 650, 0};
  EXPECT_FALSE(judge_throttling(fine).throttled);

  GpuState power = fine;
  power.event_reasons = kNvmlReasonSwPowerCap | 0x1;  // power cap (+ idle, which does not count)
  const ThrottleVerdict v = judge_throttling(power);
  EXPECT_TRUE(v.throttled);
  EXPECT_NE(v.why.find("sw_power_cap"), std::string::npos);

  GpuState idle_only = fine;
  idle_only.event_reasons = 0x1;
  EXPECT_FALSE(judge_throttling(idle_only).throttled);

  GpuState slow = fine;
  slow.sm_clock_mhz = 1200;  // < 75 % of 1980
  EXPECT_TRUE(judge_throttling(slow).throttled);
  EXPECT_NE(judge_throttling(slow).why.find("1200"), std::string::npos);

  GpuState unknown;  // NVML unavailable: never flagged
  EXPECT_FALSE(judge_throttling(unknown).throttled);
  EXPECT_EQ(describe_reasons(kNvmlReasonHwThermalSlowdown | kNvmlReasonSwPowerCap), "sw_power_cap,hw_thermal");
}

}  // namespace
}  // namespace calisim::profiler
