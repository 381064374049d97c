#!/usr/bin/env python3
"""Writes record_shapes.json: a hand-built PyTorch profiler (Kineto) trace of two training steps
recorded with record_shapes=True, in the layout torch.profiler writes (cpu_op events with
"Input Dims" / "Input type" / "Input Strides" / "Concrete Inputs", cudaLaunchKernel and
cuLaunchKernelEx events with correlation ids, kernels on device 0). Not a measurement: the kernel
durations are chosen so that the tests can compute every efficiency by hand (see
tests/profiler/operator_rows_test.cc). Run it from this directory to regenerate the file."""
import json

events = []
corr = [1000]
ext = [1]
PID, TID, BWD_TID = 4242, 4242, 4250


def cpu_op(name, ts, dur, dims, types, strides=None, concrete=None, tid=TID):
    args = {"External id": ext[0], "Record function id": 0, "Ev Idx": ext[0], "Input Dims": dims, "Input type": types}
    if strides is not None:
        args["Input Strides"] = strides
    if concrete is not None:
        args["Concrete Inputs"] = concrete
    ext[0] += 1
    events.append({"ph": "X", "cat": "cpu_op", "name": name, "pid": PID, "tid": tid, "ts": ts, "dur": dur, "args": args})


def launch(ts, kernel, gpu_ts, gpu_dur, tid=TID, stream=7, driver=False, grid=(132, 1, 1)):
    c = corr[0]
    corr[0] += 1
    events.append({"ph": "X", "cat": "cuda_driver" if driver else "cuda_runtime",
                   "name": "cuLaunchKernelEx" if driver else "cudaLaunchKernel", "pid": PID, "tid": tid,
                   "ts": ts, "dur": 3.0, "args": {"External id": ext[0] - 1, "cbid": 211, "correlation": c}})
    events.append({"ph": "X", "cat": "kernel", "name": kernel, "pid": 0, "tid": stream, "ts": gpu_ts,
                   "dur": gpu_dur, "args": {"External id": ext[0] - 1, "queued": 0, "device": 0, "context": 1,
                                            "stream": stream, "correlation": c, "grid": list(grid),
                                            "block": [384, 1, 1]}})


BF16 = "c10::BFloat16"
GEMM = "nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT"
FLASH_FWD = ("void pytorch_flash::flash_fwd_kernel<Flash_fwd_kernel_traits<128, 128, 64, 4, false, false, "
             "cutlass::bfloat16_t, Flash_kernel_traits<128, 128, 64, 4, cutlass::bfloat16_t> >, false, true, "
             "false, false, true, true, false, false>(pytorch_flash::Flash_fwd_params)")
FLASH_BWD = ("void pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel<Flash_bwd_kernel_traits<128, 64, "
             "128, 8, 2, 4, 2, false, false, cutlass::bfloat16_t, Flash_kernel_traits<128, 64, 128, 8, "
             "cutlass::bfloat16_t> >, false, true, false, false, false, true, true, false>"
             "(pytorch_flash::Flash_bwd_params)")
FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "at::detail::Array<char*, 1> >(int, at::native::FillFunctor<float>, at::detail::Array<char*, 1>)")
NCCL = "ncclDevKernel_ReduceScatter_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)"

for step, t0 in ((1, 10000.0), (2, 20000.0)):
    g0 = t0 + 100.0  # the GPU runs 100 us behind the host
    events.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{step}", "pid": PID, "tid": TID,
                   "ts": t0, "dur": 9000.0, "args": {"External id": ext[0]}})
    events.append({"ph": "X", "cat": "gpu_user_annotation", "name": f"ProfilerStep#{step}", "pid": 0, "tid": 7,
                   "ts": g0, "dur": 9000.0, "args": {"External id": ext[0]}})
    ext[0] += 1
    # Forward linear: aten::linear > aten::t + aten::matmul > aten::mm, X[4096, 4096] @ W^T (a transposed
    # view): TN. 200 us: 2 * 4096^3 / 200e-6 = 687.2 TFLOP/s.
    cpu_op("aten::linear", t0 + 10, 40, [[2, 2048, 4096], [4096, 4096], []], [BF16, BF16, ""],
           [[8388608, 4096, 1], [4096, 1], []], ["", "", ""])
    cpu_op("aten::mm", t0 + 20, 20, [[4096, 4096], [4096, 4096]], [BF16, BF16], [[4096, 1], [1, 4096]], ["", ""])
    launch(t0 + 30, GEMM, g0, 200.0, driver=True)
    # Linear with bias: aten::addmm(bias, X[4096, 1024], W^T[1024, 4096]): TN m 4096 n 4096 k 1024, 60 us.
    cpu_op("aten::addmm", t0 + 60, 20, [[4096], [4096, 1024], [1024, 4096], [], []], [BF16, BF16, BF16, "Scalar", "Scalar"],
           [[1], [1024, 1], [1, 1024], [], []], ["", "", "", "1", "1"])
    launch(t0 + 70, GEMM, g0 + 210, 60.0, driver=True)
    # Attention: aten::scaled_dot_product_attention > _scaled_dot_product_flash_attention >
    # _flash_attention_forward, q [1, 32, 4096, 128], 8 kv heads, causal; the flash kernel (300 us)
    # and a fill kernel (5 us) both belong to the outer operator.
    cpu_op("aten::scaled_dot_product_attention", t0 + 100, 60,
           [[1, 32, 4096, 128], [1, 8, 4096, 128], [1, 8, 4096, 128], [], [], [], [], []],
           [BF16, BF16, BF16, "", "Scalar", "Scalar", "", "Scalar"],
           [[16777216, 128, 4096, 1], [4194304, 128, 1024, 1], [4194304, 128, 1024, 1], [], [], [], [], []],
           ["", "", "", "", "0.", "True", "", "True"])
    cpu_op("aten::_scaled_dot_product_flash_attention", t0 + 105, 50,
           [[1, 32, 4096, 128], [1, 8, 4096, 128], [1, 8, 4096, 128], [], [], [], []],
           [BF16, BF16, BF16, "Scalar", "Scalar", "Scalar", ""],
           [[16777216, 128, 4096, 1], [4194304, 128, 1024, 1], [4194304, 128, 1024, 1], [], [], [], []],
           ["", "", "", "0.", "True", "False", ""])
    cpu_op("aten::_flash_attention_forward", t0 + 110, 40,
           [[1, 4096, 32, 128], [1, 4096, 8, 128], [1, 4096, 8, 128], [], [], [], [], [], [], [], []],
           [BF16, BF16, BF16, "", "", "Scalar", "Scalar", "Scalar", "Scalar", "Scalar", ""],
           [[16777216, 4096, 128, 1], [4194304, 1024, 128, 1], [4194304, 1024, 128, 1], [], [], [], [], [], [], [], []],
           ["", "", "", "", "", "4096", "4096", "0.", "True", "False", ""])
    launch(t0 + 115, FILL, g0 + 280, 5.0)
    launch(t0 + 120, FLASH_FWD, g0 + 290, 300.0, grid=(32, 32, 1))
    # An fp32 matmul: no key (whether TF32 ran is not in the trace).
    cpu_op("aten::mm", t0 + 200, 20, [[256, 256], [256, 256]], ["float", "float"], [[256, 1], [256, 1]], ["", ""])
    launch(t0 + 210, "ampere_sgemm_64x64_nn", g0 + 600, 10.0)
    # A TransformerEngine-style GEMM launched outside any aten operator: counted, not keyed.
    launch(t0 + 300, GEMM, g0 + 620, 100.0, driver=True)

    # Backward on the autograd thread.
    b0 = t0 + 1000
    gb = g0 + 1000
    # Data gradient: dY[4096, 4096] @ W[4096, 4096], both row-major: NN, 210 us.
    cpu_op("aten::mm", b0 + 10, 20, [[4096, 4096], [4096, 4096]], [BF16, BF16], [[4096, 1], [4096, 1]], ["", ""],
           tid=BWD_TID)
    launch(b0 + 20, GEMM, gb, 210.0, tid=BWD_TID, driver=True)
    # Weight gradient: dY^T (a transposed view) @ X: NT m 4096 n 4096 k 4096, 220 us.
    cpu_op("aten::mm", b0 + 40, 20, [[4096, 4096], [4096, 4096]], [BF16, BF16], [[1, 4096], [4096, 1]], ["", ""],
           tid=BWD_TID)
    launch(b0 + 50, GEMM, gb + 220, 220.0, tid=BWD_TID, driver=True)
    # Attention backward (flash), 800 us.
    cpu_op("aten::_scaled_dot_product_flash_attention_backward", b0 + 100, 50,
           [[1, 32, 4096, 128], [1, 32, 4096, 128], [1, 8, 4096, 128], [1, 8, 4096, 128], [1, 32, 4096, 128],
            [1, 32, 4096], [], [], [], [], [], [], [], [], []],
           [BF16, BF16, BF16, BF16, BF16, "float", "", "", "Scalar", "Scalar", "Scalar", "Scalar", "long int",
            "long int", "Scalar"],
           [[16777216, 128, 4096, 1], [16777216, 128, 4096, 1], [4194304, 128, 1024, 1], [4194304, 128, 1024, 1],
            [16777216, 128, 4096, 1], [131072, 4096, 1], [], [], [], [], [], [], [], [], []],
           ["", "", "", "", "", "", "", "", "4096", "4096", "0.", "True", "", "", "0.088388347648318433"],
           tid=BWD_TID)
    launch(b0 + 110, FLASH_BWD, gb + 450, 800.0, tid=BWD_TID, grid=(32, 32, 1))
    # The forward GEMM's shape again, while a reduce-scatter runs on another stream: 260 us, overlapped,
    # so its row keeps the two calls above (200 us each) that ran alone.
    cpu_op("aten::mm", b0 + 200, 20, [[4096, 4096], [4096, 4096]], [BF16, BF16], [[4096, 1], [1, 4096]], ["", ""],
           tid=BWD_TID)
    launch(b0 + 210, GEMM, gb + 1300, 260.0, tid=BWD_TID, driver=True)
    # The reduce-scatter's c10d record (what torch.distributed writes for every collective call):
    # 64 MiB of bf16 gradients over the 8 GPUs of node 0. 400 us: busbw 167.8 x 7/8 = 146.8 GB/s.
    events.append({"ph": "X", "cat": "cpu_op", "name": "record_param_comms", "pid": PID, "tid": BWD_TID,
                   "ts": b0 + 225, "dur": 12, "args": {
                       "External id": ext[0], "Record function id": 0, "Ev Idx": ext[0],
                       "Collective name": "_reduce_scatter_base", "dtype": "BFloat16",
                       "In msg nelems": 33554432, "Out msg nelems": 4194304, "Group size": 8,
                       "Process Group Name": "0", "Process Group Description": "default_pg",
                       "Process Group Ranks": "[0, 1, 2, 3, 4, 5, 6, 7]",
                       "In split size": "[]", "Out split size": "[]",
                       "Input Dims": [[4194304], [33554432], [], [], [], [], [], [], [], [], [], []],
                       "Input type": [BF16, BF16, "Int", "Int", "Int", "Int", "Int", "", "", "GenericList",
                                      "GenericList", "Int"]}})
    ext[0] += 1
    launch(b0 + 230, NCCL, gb + 1250, 400.0, tid=BWD_TID, stream=20, grid=(24, 1, 1))

doc = {
    "schemaVersion": 1,
    "deviceProperties": [{"id": 0, "name": "NVIDIA H100 80GB HBM3", "totalGlobalMem": 85045870592, "computeMajor": 9,
                          "computeMinor": 0, "numSms": 132}],
    "distributedInfo": {"backend": "nccl", "rank": 0, "world_size": 8},
    "record_shapes": 1,
    "traceEvents": events,
    "traceName": "rank0.pt.trace.json",
    "displayTimeUnit": "ms",
    "baseTimeNanoseconds": 1732780800000000000,
}
with open("record_shapes.json", "w") as f:
    json.dump(doc, f, indent=None, separators=(", ", ": "))
    f.write("\n")
