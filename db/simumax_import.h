// Import of SimuMax system files (configs/system/*.json of MooreThreads/SimuMax).
//
// What is read and how it maps (every row gets run source `imported`):
//   accelerator.op.{matmul,fp8_matmul}.accurate_efficient_factor
//       "b=B, m=M, k=K, n=N, layout=L, accumulate=A, out_dtype=O" -> GemmKey{m=M, n=N, k=K, batch=B,
//       dtype bf16 (fp8_e4m3 for fp8_matmul), layout L, accumulate = (A == True)}. SimuMax's key
//       convention is ours: forward TN (m tokens, k in, n out), dgrad NN, wgrad NT (m out, k tokens).
//   accelerator.op.{group_matmul,fp8_group_matmul}.accurate_efficient_factor
//       "ng=G, M=M, N=N, K=K, dtype=D, ..., stage=S, ..., accumulate=A" (M, N, K are the forward
//       shape of one expert) -> GemmKey with batch = G (the local experts):
//       stage fwd: TN m=M k=K n=N; bwd_grad_act: NN m=M k=N n=K; bwd_grad_w: NT m=N k=M n=K,
//       accumulate = (A == True). FLOPs 2*G*M*N*K in both conventions.
//   accelerator.op.{sdp_fwd,sdp_bwd}.accurate_efficient_factor
//       "batch=B, seq_len=S, head_num=H, kv_head_num=HK, qk_head_dim=DQK, v_head_dim=DV,
//       qkv_contiguous=C" -> AttentionKey{B, H, HK, S, S, DQK, DV, causal, bf16, fwd|bwd}.
//       SimuMax times the causal kernel but counts non-causal FLOPs,
//       2*B*S^2*max(H,HK)*(DQK+DV) forward and 2.5x that backward, while core/kernel_keys.cc
//       halves causal FLOPs; the stored efficiency is rescaled by our_flops / simumax_flops
//       (= 1/2 when H >= HK), which is why SimuMax's values above 1 become ~0.5. Entries with
//       qkv_contiguous=False are used only for shapes that have no contiguous entry.
//   Every efficiency is also rescaled from the table's "tflops" to the device's dense peak for
//   the dtype (equal when the device is created from this file).
//   accelerator.bandwidth.<kind> {gbps, efficient_factor, latency_us} -> MemoryFit (SimuMax
//       divides by gbps * 2^30, so bandwidth_gb_s = gbps * 1.073741824).
//   networks.<name> {bandwidth{gbps, efficient_factor, latency_us}, op{<op>{efficient_factor?,
//       latency_us?}}} -> CollectiveFit per op: tier inter_node when the name starts with
//       "inter", else intra_node; ranks N when the name ends in "_Nx", else 0 (any); the op's
//       efficiency and latency where given, else the network's. dp_fixed_bw (a SimuMax override
//       for data-parallel groups only) is not imported as a row; the result's warnings say so and
//       give the host-bridge bandwidth it implies (pcie_bridge_gb_s below).
// The device: when the database has no device of that name, one is created from the file
// (bf16/fp16 peak = matmul.tflops, fp8 peak = fp8_matmul.tflops, HBM GB/s from the default
// bandwidth, memory from mem_gbs); the file's sys_name becomes an alias of the device.
#pragma once

#include <string>
#include <vector>

#include "db/efficiency_db.h"
#include "db/records.h"

namespace calisim::db {

struct SimumaxImport {
  DeviceRecord device;           // as described by the file
  std::string alias;             // the file's sys_name
  RunBatch batch;                // efficiencies relative to `peaks` given to read_simumax_system
  std::vector<std::string> warnings;
  // The PCIe host bridge (GB/s per direction) that the networks' dp_fixed_bw entries imply, 0 when
  // the file has none: system-file material (network.scale_up.pcie_bridge_gb_s), not a kernel row.
  double pcie_bridge_gb_s = 0;
};

// Parses the file. `device_name` names the device; `peaks_from` is the device whose dense
// peaks the efficiencies are expressed against (nullptr: the file's own peaks). Throws
// InputError naming the file and JSON path of the first malformed entry.
SimumaxImport read_simumax_system(const std::string& path, const std::string& device_name,
                                  const DeviceRecord* peaks_from = nullptr);

// Reads the file and stores it in one transaction: creates the device when missing, records the
// alias, inserts one run. Returns what was stored (batch.run.id set).
SimumaxImport import_simumax_system(EfficiencyDb& db, const std::string& path, const std::string& device_name);

}  // namespace calisim::db
