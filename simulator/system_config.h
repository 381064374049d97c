// System configuration: one accelerator type and the network that joins many of them.
//
// Numbers come from datasheets (configs/systems/*.json name their sources); the default
// efficiencies are what the roofline fallback multiplies peaks by when no measurement exists.
#pragma once

#include <array>
#include <string>

#include "core/device_spec.h"
#include "core/kernel_keys.h"
#include "simulator/topology.h"

namespace calisim {

inline constexpr int kCollectiveOpCount = 5;

// One network tier: per-GPU bandwidth, a per-step latency, and per-collective bus-bandwidth
// efficiencies (achieved busbw / link bandwidth, indexed by CollectiveOp). latency_us is the tier's
// ring step latency with NCCL's Simple protocol; the other algorithms and protocols scale it by
// NCCL's hardware-latency table (simulator/collective_algorithms.h).
struct NetworkTier {
  double gpu_gb_s = 0;       // unidirectional bandwidth available to one GPU, GB/s
  double latency_us = 0;     // per algorithm step
  std::array<double, kCollectiveOpCount> efficiency{0.8, 0.8, 0.8, 0.7, 0.8};
};

struct SystemConfig {
  std::string name;
  std::string source_file;  // the file it was parsed from (error messages); empty when built in code
  // What an input error about this system names: its file, else (built in code) its name.
  const std::string& error_label() const { return source_file.empty() ? name : source_file; }
  std::string source;        // where the numbers come from
  DeviceSpec device;

  double matmul_efficiency = 0.7;        // fraction of dense peak for GEMMs
  // Per-input-dtype override of matmul_efficiency (`efficiency.matmul_by_dtype`), as a fraction of
  // that dtype's own peak; 0 = not given, the GEMM uses matmul_efficiency. Why: the best FP8 shape
  // reaches a smaller share of the (2x) FP8 peak than BF16 does of its peak (H100 SXM MAMF 70.9 %
  // vs 80.3 %), so one figure for all dtypes prices FP8 GEMMs above any published benchmark.
  std::array<double, kDTypeCount> matmul_efficiency_by_dtype{};
  // The matmul efficiency a GEMM whose inputs are `dtype` is priced at.
  double matmul_efficiency_for(DType dtype) const {
    const double e = matmul_efficiency_by_dtype[static_cast<int>(dtype)];
    return e > 0 ? e : matmul_efficiency;
  }
  double attention_efficiency = 0.5;     // fraction of dense peak for flash attention
  // Backward / forward efficiency of the attention kernels at the reference shape (causal, head
  // dim 128, sequence 4k-8k); attention_efficiency is their combined fwd+bwd figure there
  // (simulator/attention_shape.h). 1 = the system file gives no split.
  double attention_backward_ratio = 1.0;
  // The attention implementation the two numbers above describe: "default" (the system file's
  // own) or the name of an `efficiency.attention_implementations` entry picked by
  // `efficiency.attention_implementation` (e.g. "flash2" for FlashAttention-2 runs).
  std::string attention_implementation = "default";
  double memory_efficiency = 0.85;       // fraction of HBM bandwidth for element-wise kernels
  double kernel_launch_us = 0;           // fixed cost added to every bandwidth-bound kernel
  // Fixed time of one GEMM kernel priced by the roofline (launch, prologue, epilogue, the first
  // tiles' pipeline fill), added per kernel in series (LayerOp::gemm_serial_kernels); measured and
  // database-priced GEMMs already contain it. 0 = none.
  double gemm_fixed_us = 0;

  int scale_up_domain_size = 8;          // GPUs joined by NVLink/NVSwitch (72 on NVL72)
  NetworkTier scale_up;                  // gpu_gb_s = per-GPU NVLink bandwidth, one direction
  int gpus_per_node = 8;                 // GPUs sharing one node's NICs
  int nics_per_node = 8;
  double nic_gb_s = 50;                  // one NIC, one direction
  NetworkTier scale_out;                 // gpu_gb_s derived: nics_per_node * nic_gb_s / gpus_per_node
  // Kind of scale-up domain, NVLS, fabric, in-network reduction, NCCL architecture (simulator/topology.h).
  Topology topology;

  // Fraction by which compute kernels slow down while communication kernels run beside them
  // (NCCL / userbuffer kernels occupy SMs and memory bandwidth); charged on every overlapped
  // pair as slowdown × hidden communication time. In [0, 1); 0 = free overlap.
  double comm_compute_slowdown = 0;
  // Speed of compute kernels (GEMM, attention, bandwidth-bound) in a sustained training step
  // relative to the efficiencies, which describe kernels timed alone for a second or two (a
  // database's rows, the published figures behind the defaults): every such kernel takes its time
  // / this. 1 = as measured alone; below 1 where a step settles at the power limit or leaves gaps
  // between kernels, above 1 where kernels back to back run faster (warm caches). `calisim profile
  // sequence` measures it for a layer (its "alone sum / pass"). In (0, 2].
  double sustained_kernel_speed = 1;
  // The same for the attention core's kernels (fused or unfused attention, the CP ring's merge)
  // when they run at another in-situ speed than the rest: attention kernels change more between
  // software releases (FlashAttention 1 / 2 / 3, cuDNN versions) than GEMMs do, so runs on an older
  // stack time them slower than a database measured on a newer one. 0 = absent: the attention
  // core runs at sustained_kernel_speed. `calisim validate --components compute attention
  // --components-out` writes it. In (0, 2] when set.
  double sustained_attention_speed = 0;
  double attention_kernel_speed() const {
    return sustained_attention_speed > 0 ? sustained_attention_speed : sustained_kernel_speed;
  }

  // Host link used by activation and optimizer offload (PCIe, NVLink-C2C), one direction.
  std::string host_link_name;
  double host_link_gb_s = 0;             // 0 = unknown: offload is rejected
  double host_link_efficiency = 0.8;     // achieved pinned-memory copy bandwidth / link bandwidth
  double host_adam_params_per_s = 0;     // CPU Adam throughput per GPU (parameters/s); 0 = unknown
  // Host dispatch (simulator/host_dispatch.h): CPU time to issue one framework op (eager op
  // dispatch + launch) and one device-to-host synchronisation. Both 0 = the host side is not modeled.
  double host_op_dispatch_us = 0;
  double host_sync_us = 0;
  // Host time per local expert of one expert GEMM: the library submission (TransformerEngine's
  // GroupedLinear issues one cuBLASLt GEMM per expert, across streams; SequentialMLP one per
  // expert too). The loader sets it to kernel_launch_us when the file gives none.
  double host_grouped_gemm_expert_us = 0;

  // Per-GPU step-time coefficient of variation; the step waits for the slowest of N GPUs:
  // × (1 + cv·sqrt(2·ln N)). 0 = off (the default).
  double straggler_cv = 0;

  std::string efficiency_db;             // optional path to an efficiency database (empty = none)
};

}  // namespace calisim
