// calibration/: measured-runs CSV parsing, setting inference, scoring and error statistics.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <fstream>
#include <sstream>

#include "calibration/measured_runs.h"
#include "calibration/run_mapping.h"
#include "calibration/validation.h"
#include "core/error.h"

namespace calisim::calibration {
namespace {

// A compact published-format header: the columns the mapping reads (others are optional).
const std::string kHeader =
    "run_id,source,model,model_class,num_layers,hidden_size,ffn_hidden_size,num_attention_heads,num_kv_heads,"
    "head_dim,vocab_size,seq_len,activation,attention_type,gpu_type,num_gpus,framework,precision,tp,pp,vpp,cp,ep,"
    "sequence_parallel,fsdp,distributed_optimizer,recompute,micro_batch_size,global_batch_size,grad_accum,"
    "step_time_s,tokens_per_sec_per_gpu,mfu_pct,peak_mem_reserved_gib,notes\n";

std::vector<MeasuredRun> parse(const std::string& body) { return parse_measured_runs(kHeader + body, "t.csv"); }

bool contains(const std::vector<std::string>& v, const std::string& needle) {
  return std::any_of(v.begin(), v.end(), [&](const std::string& s) { return s.find(needle) != std::string::npos; });
}

const ModelLoader kNoModels = [](const std::string& name) -> nlohmann::json {
  throw InputError(name, "", "no shipped models in this test");
};

TEST(MeasuredRunsCsv, QuotedCellsAndLineNumbers) {
  const CsvTable t = parse_csv("a,b,c\n1,\"x, \"\"y\"\"\",3\n\n4,\"two\nlines\",6\r\n7,8,9", "f.csv");
  ASSERT_EQ(t.rows.size(), 3u);
  EXPECT_EQ(t.rows[0].cells[1], "x, \"y\"");
  EXPECT_EQ(t.rows[1].line, 4);
  EXPECT_EQ(t.rows[1].cells[1], "two\nlines");
  EXPECT_EQ(t.rows[1].cells[2], "6");
  EXPECT_EQ(t.rows[2].line, 6);
}

TEST(MeasuredRunsCsv, BadRowsNameLineAndColumn) {
  try {
    parse("R1,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n"
          "R2,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,NeMo,bf16,two,1,,,,,,,,1,8,,1.0,,,,\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "line 3, column tp");
    EXPECT_NE(e.problem().find("'two'"), std::string::npos);
  }
  try {
    parse("R1,s,m,dense,2,64,256,4,4,16,1000,128.5,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "line 2, column seq_len");
  }
  try {
    parse("R1,s,m\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "line 2");
    EXPECT_NE(e.problem().find("got 3"), std::string::npos);
  }
  EXPECT_THROW(parse_measured_runs("run_id,source\nR1,s\n", "t.csv"), InputError);  // missing columns
  EXPECT_THROW(parse_csv("a,b\n1,\"open\n", "t.csv"), InputError);               // unterminated quote
}

TEST(RunMapping, NvidiaRecipeInference) {
  const auto runs = parse(
      "R32,NeMo 24.07,LLAMA2-7B,dense,32,4096,11008,32,32,128,32000,4096,swiglu,mha,H100-SXM5-80GB,8,NeMo (Megatron-Core),"
      "fp8,2,1,1,1,,,,,,1,128,,,16934,,,\n");
  ASSERT_EQ(runs.size(), 1u);
  const MappedRun m = map_run(runs[0], kNoModels);
  ASSERT_TRUE(m.ok) << m.reason;
  EXPECT_EQ(m.system, "h100-sxm");
  EXPECT_EQ(m.strategy["zero_state"], 1);
  EXPECT_EQ(m.strategy["enable_sequence_parallel"], true);
  EXPECT_EQ(m.strategy["tp_comm_overlap"], true);
  EXPECT_EQ(m.strategy["overlap_grad_reduce"], true);
  EXPECT_EQ(m.strategy["fp8"], true);
  EXPECT_EQ(m.strategy["fp8_recipe"], "delayed");
  EXPECT_EQ(m.strategy["dtype"], "bf16");
  EXPECT_FALSE(m.strategy.contains("recompute_granularity"));
  EXPECT_EQ(m.model["use_swiglu"], true);
  EXPECT_TRUE(contains(m.inferred, "distributed optimizer on"));
  EXPECT_TRUE(contains(m.inferred, "sequence parallel on"));
  EXPECT_TRUE(contains(m.inferred, "FP8 recipe delayed"));
  EXPECT_TRUE(contains(m.inferred, "no activation recompute"));
  EXPECT_EQ(m.layout, "tp2 pp1 vpp1 cp1 ep1 dp4");
  EXPECT_FALSE(m.strategy.contains("overlap_p2p_comm"));  // pp 1: no pipeline send/recv
}

TEST(RunMapping, MegatronNonInterleavedPipelineBlocksOnSendRecv) {
  // Same recipe row with pp 2 (vpp 1) and with pp 2 vpp 2: only the non-interleaved schedule,
  // which rejects overlap_p2p_comm, gets blocking send/recv.
  const auto runs = parse(
      "R32,NeMo 24.07,LLAMA2-7B,dense,32,4096,11008,32,32,128,32000,4096,swiglu,mha,H100-SXM5-80GB,16,NeMo (Megatron-Core),"
      "bf16,2,2,1,1,,,,,,1,128,,,16934,,,\n"
      "R33,NeMo 24.07,LLAMA2-7B,dense,32,4096,11008,32,32,128,32000,4096,swiglu,mha,H100-SXM5-80GB,16,NeMo (Megatron-Core),"
      "bf16,2,2,2,1,,,,,,1,128,,,16934,,,\n");
  ASSERT_EQ(runs.size(), 2u);
  const MappedRun plain = map_run(runs[0], kNoModels);
  ASSERT_TRUE(plain.ok) << plain.reason;
  EXPECT_EQ(plain.layout, "tp2 pp2 vpp1 cp1 ep1 dp4");
  EXPECT_EQ(plain.strategy["overlap_p2p_comm"], false);
  EXPECT_TRUE(contains(plain.inferred, "blocking pipeline send/recv"));
  const MappedRun interleaved = map_run(runs[1], kNoModels);
  ASSERT_TRUE(interleaved.ok) << interleaved.reason;
  EXPECT_EQ(interleaved.layout, "tp2 pp2 vpp2 cp1 ep1 dp4");
  EXPECT_FALSE(interleaved.strategy.contains("overlap_p2p_comm"));
  EXPECT_FALSE(contains(interleaved.inferred, "blocking pipeline send/recv"));
}

TEST(RunMapping, StatedSettingsAreNotInferred) {
  const auto runs = parse(
      "R21,Korthikanti et al. 2022,GPT 22B,dense,48,6144,24576,64,64,96,51200,2048,gelu,mha,A100-SXM4-80GB,8,"
      "Megatron-LM,fp16,8,1,1,,,yes,,no,selective (attention core),4,4,,1.1,,41.5,,\n"
      "R287,torchtitan,Llama 3.1 8B,dense,32,4096,14336,32,8,128,128256,8192,swiglu,gqa,H100-SXM 96GB HBM2e @500W,8,"
      "torchtitan,fp8 (Float8 linear torchao),1,1,,1,,,8,,full,2,16,,,5762,,82.4,\n");
  const MappedRun k = map_run(runs[0], kNoModels);
  ASSERT_TRUE(k.ok) << k.reason;
  EXPECT_EQ(k.system, "a100-sxm-80g");
  EXPECT_EQ(k.strategy["dtype"], "fp16");
  EXPECT_EQ(k.strategy["zero_state"], 0);
  EXPECT_EQ(k.strategy["recompute_granularity"], "sdp_only");
  EXPECT_EQ(k.strategy["recompute_layer_num"], 48);
  EXPECT_FALSE(k.strategy.value("recompute_early_stop", false));  // Megatron's CheckpointFunction reruns the block
  EXPECT_EQ(k.strategy["use_flash_sdp"], false);
  EXPECT_EQ(k.strategy["tp_comm_overlap"], false);
  EXPECT_EQ(k.model["position_embedding_type"], "learned_absolute");
  EXPECT_FALSE(contains(k.inferred, "sequence parallel"));  // stated "yes"
  EXPECT_FALSE(contains(k.inferred, "distributed optimizer"));

  const MappedRun t = map_run(runs[1], kNoModels);
  ASSERT_TRUE(t.ok) << t.reason;
  EXPECT_EQ(t.system, "h100-sxm");
  EXPECT_DOUBLE_EQ(t.system_patch["device"]["memory_gb"].get<double>(), 102.7);
  EXPECT_TRUE(contains(t.inferred, "96 GB"));
  EXPECT_EQ(t.strategy["zero_state"], 3);
  EXPECT_EQ(t.strategy["fp8_recipe"], "tensorwise");
  EXPECT_EQ(t.strategy["recompute_granularity"], "full_block");
  // torchtitan's non-reentrant checkpoint stops early: each block's last GEMM is not rerun.
  EXPECT_TRUE(t.strategy.value("recompute_early_stop", false));
  EXPECT_TRUE(contains(t.inferred, "recompute stops early"));
  EXPECT_EQ(t.strategy["global_batch_size"], 16);
}

// torchtitan's "selective (op)" is its op-level policy, mapped to selective_op on every block
// and printed as inferred (it reruns matmuls, not only element-wise ops).
TEST(RunMapping, TorchtitanOpLevelCheckpointingIsSelectiveOp) {
  const auto runs = parse(
      "R287,torchtitan,Llama 3.1 8B,dense,32,4096,14336,32,8,128,128256,8192,swiglu,gqa,H100-SXM 96GB HBM2e @500W,8,"
      "torchtitan,bf16,1,1,,1,,,8,,selective (op),2,16,,,5762,,82.4,\n");
  const MappedRun t = map_run(runs[0], kNoModels);
  ASSERT_TRUE(t.ok) << t.reason;
  EXPECT_EQ(t.strategy["recompute_granularity"], "selective_op");
  EXPECT_EQ(t.strategy["recompute_layer_num"], 32);
  EXPECT_TRUE(contains(t.inferred, "selective_op"));
}

// torchtitan's context parallelism is PyTorch's: cp > 1 rows take cp_implementation "pytorch",
// printed; a row without CP does not.
TEST(RunMapping, TorchtitanContextParallelIsPytorchs) {
  const std::string l8 = "Llama 3.1 8B,dense,32,4096,14336,32,8,128,128256,131072,swiglu,gqa,H100-SXM 96GB HBM2e @500W,";
  const std::string tt = "torchtitan benchmark: Llama 3.1 on H100 (Dec 2024) Table ";
  const auto runs = parse("R1," + tt + "2," + l8 + "8,torchtitan,bf16,1,1,,4,,,2,,full,1,,,,1071,,84,\"FSDP 2, CP 4\"\n" +
                          "R2," + tt + "2," + l8 + "8,torchtitan,bf16,1,1,,1,,,8,,full,1,,,,3890,,84,\"FSDP 8, CP 1\"\n");
  ASSERT_EQ(runs.size(), 2u);
  const MappedRun cp = map_run(runs[0], kNoModels);
  const MappedRun no_cp = map_run(runs[1], kNoModels);
  ASSERT_TRUE(cp.ok) << cp.reason;
  ASSERT_TRUE(no_cp.ok) << no_cp.reason;
  EXPECT_EQ(cp.layout, "tp1 pp1 vpp1 cp4 ep1 dp2");
  EXPECT_EQ(cp.strategy.value("cp_implementation", ""), "pytorch");
  EXPECT_TRUE(contains(cp.inferred, "PyTorch's context_parallel"));
  EXPECT_FALSE(no_cp.strategy.contains("cp_implementation"));
  EXPECT_FALSE(contains(no_cp.inferred, "context_parallel"));
}

// torchtitan (Dec 2024 benchmark): a row compiles when its notes or its table's heading say
// torch.compile (Tables 2, 4, 5, 6 name it in the heading); eager rows run unfused RMSNorm, SwiGLU
// and RoPE. Interleaved 1F1B builds two stages per rank and one micro-batch per stage. The
// 96 GB HBM2e part: 2.4 TB/s, peaks midway between H100 SXM and H100 NVL.
TEST(RunMapping, TorchtitanCompileInterleavingAndTheHbm2ePart) {
  const std::string l8 = "Llama 3.1 8B,dense,32,4096,14336,32,8,128,128256,8192,swiglu,gqa,H100-SXM 96GB HBM2e @500W,";
  const std::string tt = "torchtitan benchmark: Llama 3.1 on H100 (Dec 2024) Table ";
  const auto runs = parse(
      "R1," + tt + "1," + l8 + "8,torchtitan,bf16,1,1,,1,,,8,,selective (op),2,16,,,5762,,82.4,FSDP. TPS read\n" +
      "R2," + tt + "1," + l8 + "8,torchtitan,bf16,1,1,,1,,,8,,selective (op),2,16,,,6667,,77,FSDP + torch.compile.\n" +
      "R3," + tt + "6," + l8 + "8,torchtitan,bf16,1,1,,1,,,8,,full,1,,,,3890,,84,\"4D FSDP 8, CP 1, 1F1B.\"\n" +
      "R4," + tt + "5," + l8 + "64,torchtitan,bf16,1,8,,1,,,8,,full,32,,,,128,,72,"
      "\"3D, Interleaved 1F1B schedule, AsyncTP, torch.compile.\"\n" +
      "R5," + tt + "5," + l8 + "64,torchtitan,bf16,1,8,,1,,,8,,full,8,,,,128,,72,\"3D, Interleaved 1F1B schedule\"\n");
  ASSERT_EQ(runs.size(), 5u);
  std::vector<MappedRun> m;
  for (const MeasuredRun& r : runs) m.push_back(map_run(r, kNoModels));
  for (int i = 0; i < 4; ++i) ASSERT_TRUE(m[i].ok) << m[i].reason;
  const auto fused = [](const MappedRun& x, const char* f) { return x.strategy.value(f, true); };
  for (const char* f : {"use_fused_norm", "use_fused_swiglu", "use_fused_rope"}) {
    EXPECT_FALSE(fused(m[0], f)) << f;  // Table 1 "FSDP": eager
    EXPECT_TRUE(fused(m[1], f)) << f;   // "FSDP + torch.compile"
    EXPECT_TRUE(fused(m[2], f)) << f;   // Table 6: torch.compile in the heading
    EXPECT_TRUE(fused(m[3], f)) << f;
  }
  EXPECT_TRUE(contains(m[0].inferred, "eager block (no torch.compile)"));
  EXPECT_FALSE(contains(m[1].inferred, "eager block"));
  // Interleaved 1F1B: vpp 2, 16 micro-batches of 2 from the local batch of 32.
  EXPECT_EQ(m[3].layout, "tp1 pp8 vpp2 cp1 ep1 dp8");
  EXPECT_EQ(m[3].strategy["interleaving_size"], 2);
  EXPECT_EQ(m[3].strategy["micro_batch_num"], 16);
  EXPECT_EQ(m[3].strategy["micro_batch_size"], 2);
  EXPECT_TRUE(contains(m[3].inferred, "vpp 2 (torchtitan's Interleaved 1F1B"));
  EXPECT_FALSE(m[4].ok);  // 8 sequences cannot fill 16 stages
  EXPECT_NE(m[4].reason.find("number of pipeline stages"), std::string::npos) << m[4].reason;
  // The GPU part, as the benchmark describes it.
  const nlohmann::json& dev = m[0].system_patch["device"];
  EXPECT_DOUBLE_EQ(dev["hbm_gb_s"].get<double>(), 2400);
  EXPECT_DOUBLE_EQ(dev["peak_tflops"]["bf16"].get<double>(), 912.25);
  EXPECT_DOUBLE_EQ(dev["peak_tflops"]["fp8"].get<double>(), 1824.75);
  EXPECT_DOUBLE_EQ(dev["memory_gb"].get<double>(), 102.7);
  EXPECT_TRUE(contains(m[0].inferred, "HBM at 2.4 TB/s"));
  // A 96 GB H100 that does not say HBM2e keeps the SXM's figures; only the capacity changes.
  const MappedRun p = map_run(parse("R9,s,Llama 3.1 8B,dense,32,4096,14336,32,8,128,128256,8192,swiglu,gqa,"
                                    "H100 96GB,8,torchtitan,bf16,1,1,,1,,,8,,,2,16,,,5762,,82.4,\n")[0],
                              kNoModels);
  ASSERT_TRUE(p.ok) << p.reason;
  EXPECT_DOUBLE_EQ(p.system_patch["device"]["memory_gb"].get<double>(), 102.7);
  EXPECT_FALSE(p.system_patch["device"].contains("hbm_gb_s"));
  EXPECT_FALSE(p.system_patch["device"].contains("peak_tflops"));
}

// Attention implementation by framework (docs/validation.md): torchtitan's SDPA and llm-foundry
// run FlashAttention-2, selected through the system patch; NVIDIA recipes keep the system default.
TEST(RunMapping, AttentionImplementationByFramework) {
  const auto runs = parse(
      "R287,torchtitan,Llama 3.1 8B,dense,32,4096,14336,32,8,128,128256,8192,swiglu,gqa,H100-SXM 96GB HBM2e @500W,8,"
      "torchtitan,fp8 (Float8 linear torchao),1,1,,1,,,8,,full,2,16,,,5762,,82.4,\n"
      "R32,NeMo 24.07,LLAMA2-7B,dense,32,4096,11008,32,32,128,32000,4096,swiglu,mha,H100-SXM5-80GB,8,NeMo (Megatron-Core),"
      "fp8,2,1,1,1,,,,,,1,128,,,16934,,,\n");
  const MappedRun t = map_run(runs[0], kNoModels);
  ASSERT_TRUE(t.ok) << t.reason;
  EXPECT_EQ(t.system_patch["efficiency"]["attention_implementation"], "flash2");
  EXPECT_TRUE(contains(t.inferred, "attention FlashAttention-2"));
  const MappedRun n = map_run(runs[1], kNoModels);
  ASSERT_TRUE(n.ok) << n.reason;
  EXPECT_FALSE(n.system_patch.contains("efficiency") && n.system_patch["efficiency"].contains("attention_implementation"));
  EXPECT_FALSE(contains(n.inferred, "FlashAttention-2"));
}

// Measured figures must be positive and integers must fit an int: anything else is refused with
// line and column (0 s used to score +inf %, -3 s -111 %, 3e9 GPUs -2147483648); empty stays
// "not given"; 0 is allowed where it means "none".
TEST(MeasuredRunsCsv, NonPositiveFiguresAndOutOfRangeIntegersAreRefused) {
  const std::string ok = "R1,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n";
  EXPECT_NO_THROW(parse(ok));
  const auto refused = [&](const std::string& from, const std::string& to, const std::string& where,
                           const std::string& expected) {
    std::string row = ok;
    row.replace(row.find(from), from.size(), to);
    try {
      parse(row);
      ADD_FAILURE() << "accepted " << row;
    } catch (const InputError& e) {
      EXPECT_EQ(e.where(), where) << e.what();
      EXPECT_NE(e.problem().find(expected), std::string::npos) << e.what();
    }
  };
  refused(",1.0,,,,", ",0,,,,", "line 2, column step_time_s", "expected a positive number, got '0'");
  refused(",1.0,,,,", ",-3,,,,", "line 2, column step_time_s", "expected a positive number, got '-3'");
  refused(",1.0,,,,", ",1.0,,,-5,", "line 2, column peak_mem_reserved_gib", "expected a positive number");
  refused("H100,8,", "H100,3000000000,", "line 2, column num_gpus", "expected an integer from 1 to 2147483647");
  refused("bf16,1,1,", "bf16,-2,1,", "line 2, column tp", "expected an integer from 1 to 2147483647, got '-2'");
  refused("bf16,1,1,", "bf16,0,1,", "line 2, column tp", "got '0'");
  // SimuMax's table: measured and SimuMax throughput.
  const std::string sm_header =
      "model,num_layers,tp,pp,ep,dp,micro_batch_size,micro_batch_num,seq_len,measured_tflops_per_gpu,"
      "simumax_tflops_per_gpu,simumax_step_time_s\n";
  EXPECT_NO_THROW(parse_measured_runs(sm_header + "llama3-8b,4,1,1,1,8,1,8,4096,100,110,2.0\n", "s.csv"));
  EXPECT_THROW(parse_measured_runs(sm_header + "llama3-8b,4,1,1,1,8,1,8,4096,0,110,2.0\n", "s.csv"), InputError);
  EXPECT_THROW(parse_measured_runs(sm_header + "llama3-8b,4,1,1,1,8,1,8,4096,100,0,2.0\n", "s.csv"), InputError);
  // 0 means "none" in the MoE columns.
  EXPECT_NO_THROW(parse_measured_runs(
      "run_id,source,model,gpu_type,num_gpus,tp,pp,seq_len,moe_first_k_dense_layers,moe_shared_expert_ffn_hidden_size\n"
      "R1,s,m,H100,8,1,1,128,0,0\n",
      "t.csv"));
}

// A leading UTF-8 byte-order mark is skipped: the header's first column is run_id, and the file
// is read as the published format (it used to be taken for SimuMax's).
TEST(MeasuredRunsCsv, ByteOrderMarkIsNotPartOfTheHeader) {
  const auto runs = parse_measured_runs(
      "\xEF\xBB\xBF" + kHeader + "R1,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n",
      "bom.csv");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].format, RunFormat::published);
  EXPECT_EQ(runs[0].run_id, "R1");
  EXPECT_EQ(parse_csv("\xEF\xBB\xBF" "a,b\n1,2\n", "f.csv").header[0], "a");
}

// Layout counts the mapping casts to int are checked first, also for a MeasuredRun that did not
// come through parse_measured_runs: the row is not simulated, with a reason, rather than a count
// that wraps round. Products of counts are formed in 64 bits.
TEST(RunMapping, LayoutCountsPastIntAreRefusedNotWrapped) {
  auto runs = parse("R1,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n");
  MeasuredRun r = runs[0];
  r.cells["num_gpus"] = "3000000000";
  MappedRun m = map_run(r, kNoModels);
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.reason.find("num_gpus 3000000000 is not a count from 1 to 2147483647"), std::string::npos) << m.reason;
  EXPECT_EQ(not_simulated(r, m, m.reason).gpus, 0);  // not -2147483648
  r = runs[0];
  r.cells["tp"] = r.cells["pp"] = "65536";
  r.cells["cp"] = "2";
  m = map_run(r, kNoModels);
  EXPECT_FALSE(m.ok);
  EXPECT_NE(m.reason.find("tp·pp·cp = 8589934592"), std::string::npos) << m.reason;
}

TEST(RunMapping, UnsupportedRowsGiveAReason) {
  const auto runs = parse(
      "R1,s,GPT OSS,moe,36,2880,,64,8,64,201088,4096,swiglu,gqa; sliding-window attention,B200,64,"
      "Megatron-Bridge,BF16,1,1,1,1,8,,0,,,4,512,,,8213,,,\n"
      "R2,s,X,dense,2,64,256,4,4,16,,128,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n"
      "R3,s,Y,dense,2,64,256,4,4,16,1000,128,gelu,mha,TPU v5p,8,MaxText,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n");
  const MappedRun a = map_run(runs[0], kNoModels), b = map_run(runs[1], kNoModels), c = map_run(runs[2], kNoModels);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("sliding-window"), std::string::npos);
  EXPECT_FALSE(b.ok);
  EXPECT_NE(b.reason.find("vocab_size"), std::string::npos);
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.reason.find("TPU v5p"), std::string::npos);
}

TEST(RunMapping, GpuTypesToShippedSystems) {
  EXPECT_EQ(system_for_gpu("A100-SXM4-80GB").system, "a100-sxm-80g");
  EXPECT_EQ(system_for_gpu("A100-80GB").system, "a100-sxm-80g");
  EXPECT_FALSE(system_for_gpu("A100-80GB").note.empty());
  EXPECT_EQ(system_for_gpu("H100-SXM5-80GB").system, "h100-sxm");
  EXPECT_TRUE(system_for_gpu("H100-SXM5-80GB").note.empty());
  EXPECT_EQ(system_for_gpu("B200").system, "b200");
  EXPECT_EQ(system_for_gpu("GB200").system, "gb200-nvl72");
  // The rack part has its own file (its peaks, NVLink domain and Grace host), not a patched HGX B300.
  EXPECT_EQ(system_for_gpu("GB300").system, "gb300-nvl72");
  EXPECT_TRUE(system_for_gpu("GB300").patch.empty());
  EXPECT_EQ(system_for_gpu("B300").system, "b300");
  EXPECT_TRUE(system_for_gpu("B300").patch.empty());
  EXPECT_EQ(system_for_gpu("A100-PCIE-80GB").system, "a100-pcie-80g");
}

TEST(RunMapping, SimuMaxRowsUseShippedModelsCutToTheirLayers) {
  const auto runs = parse_measured_runs(
      "model,num_layers,tp,pp,ep,dp,micro_batch_size,micro_batch_num,seq_len,measured_tflops_per_gpu,"
      "measured_peak_mem_gb,published_mem_err,published_tflops_err,simumax_tflops_per_gpu,simumax_peak_mem_gb,"
      "simumax_step_time_s\n"
      "deepseekv2,4,1,2,4,4,1,8,4096,100,50,-0.8%,-1.5%,110,51,2.0\n",
      "s.csv");
  std::string asked;
  const MappedRun m = map_run(runs[0], [&](const std::string& n) {
    asked = n;
    return nlohmann::json{{"layer_num", 60}, {"hidden_size", 5120}};
  });
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(asked, "deepseek-v2");
  EXPECT_EQ(m.model["layer_num"], 4);
  EXPECT_EQ(m.system, "a100-pcie-80g");
  EXPECT_EQ(m.strategy["world_size"], 8);
  EXPECT_EQ(m.strategy["tp_comm_overlap"], false);
  EXPECT_EQ(m.strategy["cross_entropy_loss_fusion"], false);
  // No compute/communication overlap on this PCIe machine (docs/validation.md), said as inferred.
  EXPECT_DOUBLE_EQ(m.system_patch.at("efficiency").at("comm_compute_slowdown").get<double>(), 1.0);
  // Megatron's non-interleaved 1F1B blocks on its send/recv pairs (pp 2 here), said as inferred.
  EXPECT_EQ(m.strategy["overlap_p2p_comm"], false);
  EXPECT_TRUE(contains(m.inferred, "blocking pipeline send/recv"));
  EXPECT_TRUE(std::any_of(m.inferred.begin(), m.inferred.end(),
                          [](const std::string& i) { return i.find("comm_compute_slowdown 1") != std::string::npos; }));

  // Scoring: SimuMax FLOPs per step = 110 TFLOP/s × 2 s = 220 TFLOP; measured 100 TFLOP/s -> 2.2 s.
  SimulationResult res;
  res.duration_time_per_iter_s = 2.0;
  res.mfu = 0.4;
  res.mfu_causal = 0.35;
  StageReport st;
  st.peak_mem_bytes = 55.0 * 1024 * 1024 * 1024;
  res.stages.push_back(st);
  const RowResult r = score_run(runs[0], m, res);
  EXPECT_NEAR(r.measured_step_s, 2.2, 1e-12);
  EXPECT_NEAR(r.step_error, (2.0 - 2.2) / 2.2, 1e-12);
  EXPECT_NEAR(r.throughput_error, 0.1, 1e-12);  // 110 TFLOP/s simulated vs 100 measured
  ASSERT_TRUE(r.mem_error.has_value());
  EXPECT_NEAR(*r.mem_error, 0.1, 1e-12);
  EXPECT_NEAR(r.mfu_measured_pct, 40 * 2.0 / 2.2, 1e-9);
}

// Every row mapped, in order.
std::vector<MappedRun> map_all(const std::vector<MeasuredRun>& runs) {
  std::vector<MappedRun> out;
  for (const auto& r : runs) out.push_back(map_run(r, kNoModels));
  return out;
}

// Success when every row mapped; otherwise the first that did not, with its reason.
testing::AssertionResult all_mapped(const std::vector<MeasuredRun>& runs, const std::vector<MappedRun>& m) {
  for (std::size_t i = 0; i < m.size(); ++i) {
    if (!m[i].ok) return testing::AssertionFailure() << runs[i].run_id << ": " << m[i].reason;
  }
  return testing::AssertionSuccess();
}

// Rows under kHeader's columns plus `extra_columns` (",name,name"), parsed and mapped.
struct MappedRows {
  std::vector<MeasuredRun> runs;
  std::vector<MappedRun> m;
};
MappedRows map_with_columns(const std::string& extra_columns, const std::string& rows) {
  MappedRows out;
  const std::string header = kHeader.substr(0, kHeader.size() - 1) + extra_columns + "\n";
  out.runs = parse_measured_runs(header + rows, "t.csv");
  out.m = map_all(out.runs);
  return out;
}

// DGX Cloud benchmarking's MaxText recipe shards over 128 GPUs from 64 nodes on (dcn_fsdp 16, the
// remaining nodes data-parallel replicas: maxtext/configure.sh); smaller runs shard over all.
TEST(RunMapping, DgxcMaxTextShardsOver128GpusFrom64Nodes) {
  const std::string row = ",NVIDIA dgxc-benchmarking v25.04.01,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,";
  const auto [runs, m] = map_with_columns(
      "", "R1" + row + "2048,MaxText (JAX),bf16,1,1,,,,,2048,,,1,2048,,1.0,,,,\n" +
              "R2" + row + "512,MaxText (JAX),fp8,1,1,,,,,512,,,1,512,,1.0,,,,\n" +
              "R3" + row + "256,MaxText (JAX),bf16,1,1,,,,,256,,,1,256,,1.0,,,,\n" +
              "R4,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,2048,MaxText (JAX),bf16,1,1,,,,,2048,,,1,2048,,"
              "1.0,,,,\n");
  ASSERT_EQ(runs.size(), 4u);
  ASSERT_TRUE(all_mapped(runs, m));
  EXPECT_EQ(m[0].strategy.value("dp_replicate_size", 1), 16);  // 256 nodes: FSDP 128 x 16
  EXPECT_TRUE(contains(m[0].inferred, "FSDP over 128 GPUs x 16 data-parallel replicas"));
  EXPECT_EQ(m[1].strategy.value("dp_replicate_size", 1), 4);  // 64 nodes: FSDP 128 x 4
  EXPECT_FALSE(m[2].strategy.contains("dp_replicate_size"));  // 32 nodes: FSDP over all 256
  EXPECT_FALSE(m[3].strategy.contains("dp_replicate_size"));  // not the DGX Cloud recipe
  for (const MappedRun& x : m) EXPECT_EQ(x.strategy.value("zero_state", -1), 3);
}

// Framework defaults the rows leave unstated: fused cross-entropy (Megatron-Bridge, NeMo 2,
// llm-foundry), bf16 main gradients (NeMo 2 performance scripts; NeMo 1's distributed_fused_adam
// with grad_sync_dtype bf16), MaxText's full remat; NeMo 1 (24.07) and Megatron-LM keep the
// unfused loss, Megatron-LM its fp32 gradients.
TEST(RunMapping, FrameworkDefaultsForLossGradientsAndRemat) {
  const std::string body = "s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,";
  const auto [runs, m] = map_with_columns(
      ",framework_version",
      "R1," + body + "NeMo (Megatron-Core),bf16,1,1,,,,,,,,1,8,,1.0,,,,,25.04\n"
      "R2," + body + "NeMo (Megatron-Core),bf16,1,1,,,,,,,,1,8,,1.0,,,,,24.07\n"
      "R3," + body + "Megatron-Bridge (Megatron-Core),bf16,1,1,,,,,,,,1,8,,1.0,,,,,25.11\n"
      "R4," + body + "llm-foundry / Composer,bf16,1,1,,,,,8,,,1,8,,1.0,,,,,\n"
      "R5," + body + "MaxText (JAX),bf16,1,1,,,,,8,,,1,8,,1.0,,,,,\n"
      "R6," + body + "Megatron-LM,bf16,1,1,,,,,,,,1,8,,1.0,,,,,2025\n"
      "R7,NVIDIA dgxc-benchmarking v25.04.01,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,MaxText (JAX),bf16,1,1,,,,,8,,,"
      "1,8,,1.0,,,,,\n");
  ASSERT_EQ(runs.size(), 7u);
  ASSERT_TRUE(all_mapped(runs, m));
  const auto fused = [](const MappedRun& x) { return x.strategy.value("cross_entropy_loss_fusion", false); };
  const auto fp32_grads = [](const MappedRun& x) { return x.strategy.value("use_fp32_accum_grad", true); };
  EXPECT_TRUE(fused(m[0]));  // NeMo 25.04
  EXPECT_FALSE(fp32_grads(m[0]));
  EXPECT_TRUE(m[0].strategy.value("grad_reduce_in_bf16", false));
  EXPECT_TRUE(contains(m[0].inferred, "grad_reduce_in_fp32 False"));
  EXPECT_FALSE(fused(m[1]));  // NeMo 24.07: NeMo 1, distributed_fused_adam with grad_sync_dtype bf16
  EXPECT_FALSE(fp32_grads(m[1]));
  EXPECT_TRUE(m[1].strategy.value("grad_reduce_in_bf16", false));
  EXPECT_TRUE(contains(m[1].inferred, "grad_sync_dtype bf16"));
  EXPECT_TRUE(fused(m[2]));  // Megatron-Bridge: fused loss, bf16 gradients (grad_reduce_in_fp32 False)
  EXPECT_FALSE(fp32_grads(m[2]));
  EXPECT_TRUE(m[2].strategy.value("grad_reduce_in_bf16", false));
  EXPECT_TRUE(contains(m[2].inferred, "Megatron-Bridge performance configs: grad_reduce_in_fp32 False"));
  EXPECT_TRUE(fp32_grads(m[5]));  // Megatron-LM's default: fp32 main gradients
  EXPECT_EQ(m[3].strategy.value("zero_state", -1), 3);  // FSDP column
  EXPECT_TRUE(fused(m[3]));  // llm-foundry: fused_crossentropy
  EXPECT_TRUE(contains(m[3].inferred, "fused_crossentropy"));
  EXPECT_EQ(m[4].strategy.value("recompute_granularity", ""), "full_block");  // MaxText remat 'full'
  EXPECT_TRUE(contains(m[4].inferred, "remat_policy 'full'"));
  EXPECT_TRUE(m[4].strategy.value("recompute_early_stop", false));  // JAX remat prunes to what backward reads
  EXPECT_TRUE(contains(m[4].inferred, "JAX remat"));
  // DGX Cloud benchmarking's MaxText recipe sets remat_policy save_qkv_proj (maxtext/configure.sh).
  EXPECT_EQ(m[6].strategy.value("recompute_granularity", ""), "save_qkv_proj");
  EXPECT_EQ(m[6].strategy.value("recompute_layer_num", 0), 2);
  EXPECT_TRUE(contains(m[6].inferred, "POLICY=\"save_qkv_proj\""));
  EXPECT_FALSE(fused(m[5]));  // Megatron-LM's own flag defaults off
  // Optimizer state: the NeMo 2 / Bridge BF16 performance scripts' precision-aware optimizer, and
  // NeMo 1's distributed_fused_adam with bf16 remainders; Megatron-LM's default keeps 12 bytes.
  const auto precision_aware = [](const MappedRun& x) { return x.strategy.value("use_precision_aware_optimizer", false); };
  EXPECT_TRUE(precision_aware(m[0]));
  EXPECT_TRUE(precision_aware(m[1]));
  EXPECT_TRUE(contains(m[1].inferred, "distributed_fused_adam keeps it"));
  EXPECT_TRUE(precision_aware(m[2]));
  EXPECT_FALSE(precision_aware(m[5]));
}

// DGX Cloud benchmarking's Nemotron4-340B recipe interleaves 12 virtual stages on pp 8; its v25.04
// tables leave VP out, so an unstated vpp takes the recipe's. A stated vpp, or another source, is
// left alone.
TEST(RunMapping, DgxcNemotron340bTakesTheRecipesVirtualStages) {
  const std::string body = "Nemotron4 340b,dense,96,18432,73728,96,8,192,256000,4096,squared_relu,gqa,H100,1024,";
  const auto [runs, m] = map_with_columns(
      ",model_key",
      "R1,NVIDIA dgxc-benchmarking v25.04.01," + body + "NeMo (Megatron-Core),bf16,8,8,,,,,,,,1,256,,4.41,,,,,nemotron4_340b\n" +
          "R2,NVIDIA dgxc-benchmarking v25.05.04," + body + "NeMo (Megatron-Core),bf16,8,8,6,,,,,,,1,256,,4.41,,,,,nemotron4_340b\n" +
          "R3,Some other benchmark," + body + "NeMo (Megatron-Core),bf16,8,8,,,,,,,,1,256,,4.41,,,,,nemotron4_340b\n");
  ASSERT_EQ(runs.size(), 3u);
  ASSERT_TRUE(all_mapped(runs, m));
  EXPECT_EQ(m[0].strategy.value("interleaving_size", 0), 12);
  EXPECT_TRUE(contains(m[0].inferred, "vpp 12 (DGX Cloud benchmarking Nemotron4-340B recipe"));
  EXPECT_EQ(m[1].strategy.value("interleaving_size", 0), 6);  // stated
  EXPECT_EQ(m[2].strategy.value("interleaving_size", 1), 1);  // not the dgxc recipe
}

// FP8 parameters and the other memory conventions of the frameworks' recipes (docs/validation.md).
TEST(RunMapping, Fp8ParametersLossAndShardingConventions) {
  const std::string l8 = "s,m,dense,32,4096,14336,32,8,128,128256,8192,swiglu,gqa,";
  const auto [runs, m] = map_with_columns(
      ",framework_version,source_ref",
      "R1," + l8 + "GB200,8,Megatron-Bridge (Megatron-Core),FP8-CS,1,1,,1,,,0,,,2,128,,,30000,,,,25.11,x\n" +
          "R2," + l8 + "GB200,8,Megatron-Bridge (Megatron-Core),FP8-MX,1,1,,1,,,0,,,2,128,,,30000,,,,25.11,x\n" +
          "R3," + l8 + "H100,8,NeMo (Megatron-Core),fp8,1,1,,1,,,,,,1,128,,,14000,,,,25.04,x\n" +
          "R4," + l8 + "H100,8,Megatron-LM (Megatron-Core),fp8 (hybrid format),1,1,,2,,,,,,1,128,,,14000,,,,2025,"
          "NVIDIA/Megatron-LM examples/llama/README.md\n" +
          "R5," + l8 + "H100-SXM 96GB HBM2e @500W,64,torchtitan,fp8 (Float8 linear torchao),2,4,,1,,,8,,full,8,,,,100,,,,,x\n");
  ASSERT_EQ(runs.size(), 5u);
  ASSERT_TRUE(all_mapped(runs, m));
  const auto gather = [](const MappedRun& x) { return x.strategy.value("fp8_param_gather", false); };
  EXPECT_FALSE(m[0].strategy.value("use_precision_aware_optimizer", false));  // FP8 rows: the scripts' BF16-only switch
  EXPECT_TRUE(gather(m[0]));  // Bridge current scaling: bf16_with_fp8_current_scaling_mixed
  EXPECT_TRUE(contains(m[0].inferred, "fp8_param_gather"));
  EXPECT_FALSE(gather(m[1]));  // MXFP8: the recipes' versions disagree, left off
  EXPECT_TRUE(gather(m[2]));   // NeMo 2 delayed: bf16_with_fp8_mixed
  EXPECT_TRUE(gather(m[3]));   // Megatron-LM examples/llama: --fp8-param-gather
  EXPECT_TRUE(m[3].strategy.value("grad_reduce_in_bf16", false));
  EXPECT_TRUE(m[3].strategy.value("cross_entropy_loss_fusion", false));
  // The script passes no --cross-entropy-fusion-impl: Megatron's default native kernel. NeMo 2 and
  // Bridge rows keep calisim's default, TransformerEngine's (their performance scripts set "te").
  EXPECT_EQ(m[3].strategy.value("cross_entropy_fusion_impl", ""), "native");
  EXPECT_FALSE(m[0].strategy.contains("cross_entropy_fusion_impl"));
  EXPECT_FALSE(m[2].strategy.contains("cross_entropy_fusion_impl"));
  EXPECT_TRUE(contains(m[3].inferred, "examples/llama"));
  // torchtitan: PyTorch's loss, torchao's Float8Linear, FSDP under PP kept unsharded (ZeRO-1).
  EXPECT_EQ(m[4].strategy.value("cross_entropy_implementation", ""), "pytorch");
  EXPECT_EQ(m[4].strategy.value("fp8_implementation", ""), "torchao");
  EXPECT_FALSE(gather(m[4]));
  EXPECT_EQ(m[4].strategy.value("zero_state", -1), 1);
  EXPECT_TRUE(contains(m[4].inferred, "FSDP under pipeline parallelism as ZeRO-1"));
}

// Megatron-Bridge Llama 3 presets: applied only where the row's layout is the preset's.
TEST(RunMapping, BridgeLlama3PresetsOffloadAndGraphs) {
  const std::string l70 = "LLAMA3_70B,dense,80,8192,28672,64,8,128,128256,8192,swiglu,gqa,";
  const std::string l8 = "LLAMA3_8B,dense,32,4096,14336,32,8,128,128256,8192,swiglu,gqa,";
  const std::string bridge = "Megatron-Bridge (Megatron-Core),";
  const auto [runs, m] = map_with_columns(
      ",model_key",
      "R1,s," + l70 + "GB200,64," + bridge + "FP8-CS,1,1,1,1,,,64,,,2,256,,,4312,,,,llama3_70b\n" +
          "R2,s," + l70 + "GB300,64," + bridge + "FP8-CS,1,1,1,1,,,64,,,2,256,,,4520,,,,llama3_70b\n" +
          "R3,s," + l8 + "B200,8," + bridge + "FP8-CS,1,1,1,1,,,0,,,2,128,,,30624,,,,llama3_8b\n" +
          "R4,s," + l8 + "GB300,8," + bridge + "FP8-CS,1,1,1,1,,,0,,,2,128,,,37556,,,,llama3_8b\n");
  ASSERT_EQ(runs.size(), 4u);
  ASSERT_TRUE(all_mapped(runs, m));
  EXPECT_EQ(m[0].strategy.value("cpu_offloading_num_layers", 0), 40);  // GB200 FP8-CS preset
  EXPECT_EQ(m[1].strategy.value("cpu_offloading_num_layers", 0), 20);  // GB300 FP8-CS preset
  EXPECT_EQ(m[1].system, "gb300-nvl72");                                 // Grace C2C host link, not PCIe
  EXPECT_EQ(m[2].strategy.value("cuda_graph_scope", ""), "full_iteration");
  EXPECT_TRUE(contains(m[2].inferred, "full-iteration CUDA graph"));
  EXPECT_FALSE(m[3].strategy.contains("cuda_graph_scope"));  // the GB300 8B preset runs mbs 4, the row 2
}

// TFLOP/s rows: a row that publishes HFU and no MFU (Narayanan et al. 2021, whose FLOP count
// includes the recomputed forward) is converted with calisim's HFU count, the others with its
// model FLOPs.
TEST(Scoring, TflopsWithHfuAndNoMfuCountTheRecomputedForward) {
  const std::string header = kHeader.substr(0, kHeader.size() - 1) + ",tflops_per_gpu,hfu_pct\n";
  const auto runs = parse_measured_runs(
      header +
          "R10,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,A100,8,Megatron-LM,fp16,1,1,,,,,,,full,1,8,,,,,,,137,44\n"
          "R11,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,A100,8,Megatron-LM,fp16,1,1,,,,,,,full,1,8,,,,41,,,137,\n",
      "t.csv");
  ASSERT_EQ(runs.size(), 2u);
  SimulationResult res;
  res.duration_time_per_iter_s = 2.0;
  res.tflops_per_gpu = 100;  // model FLOPs
  res.mfu = 0.3;
  res.hfu = 0.4;  // a third more FLOPs with the recomputed forward
  const RowResult hw = score_run(runs[0], MappedRun{}, res);
  EXPECT_NEAR(hw.measured_step_s, 2.0 * (100 * 0.4 / 0.3) / 137, 1e-12);
  EXPECT_NE(hw.measured_from.find("hardware FLOPs"), std::string::npos) << hw.measured_from;
  const RowResult model = score_run(runs[1], MappedRun{}, res);
  EXPECT_NEAR(model.measured_step_s, 2.0 * 100 / 137, 1e-12);
  EXPECT_NE(model.measured_from.find("model FLOPs"), std::string::npos) << model.measured_from;
}

TEST(RunMapping, SimuMaxMoeRowsGatherParametersTwice) {
  // Megatron v0.12's chained dense + expert optimizers each all-gather every parameter when
  // overlap_param_gather is off (Megatron-LM issue #1527): MoE rows only, said as inferred.
  const auto runs = parse_measured_runs(
      "model,num_layers,tp,pp,ep,dp,micro_batch_size,micro_batch_num,seq_len,measured_tflops_per_gpu,"
      "measured_peak_mem_gb,published_mem_err,published_tflops_err,simumax_tflops_per_gpu,simumax_peak_mem_gb,"
      "simumax_step_time_s\n"
      "deepseekv2,4,1,1,8,8,1,8,4096,100,50,-0.8%,-1.5%,110,51,2.0\n"
      "llama3-8b,32,2,1,1,4,1,8,4096,100,50,-0.8%,-1.5%,110,51,2.0\n",
      "s.csv");
  const MappedRun moe = map_run(runs[0], [](const std::string&) {
    return nlohmann::json{{"layer_num", 60}, {"model_type", "moe"}};
  });
  ASSERT_TRUE(moe.ok);
  EXPECT_EQ(moe.strategy.value("moe_double_param_gather", false), true);
  EXPECT_TRUE(contains(moe.inferred, "parameter all-gather twice per step"));
  const MappedRun dense = map_run(runs[1], [](const std::string&) {
    return nlohmann::json{{"layer_num", 32}, {"model_type", "dense"}};
  });
  ASSERT_TRUE(dense.ok);
  EXPECT_FALSE(dense.strategy.contains("moe_double_param_gather"));
  EXPECT_FALSE(contains(dense.inferred, "parameter all-gather twice per step"));
}

TEST(ErrorStatistics, HandMadeNumbers) {
  const ErrorStats s = error_stats("g", {{"a", 0.10}, {"b", -0.20}, {"c", 0.05}, {"d", -0.05}});
  EXPECT_EQ(s.count, 4);
  EXPECT_NEAR(s.mape, 0.10, 1e-12);
  EXPECT_NEAR(s.median, 0.075, 1e-12);
  EXPECT_NEAR(s.worst, -0.20, 1e-12);
  EXPECT_EQ(s.worst_run, "b");
  EXPECT_NEAR(s.bias, -0.025, 1e-12);
  EXPECT_EQ(s.over, 2);
  EXPECT_EQ(s.under, 2);
  EXPECT_EQ(bias_label(s.bias), "simulation faster");
  const ErrorStats odd = error_stats("o", {{"a", 0.3}, {"b", 0.1}, {"c", -0.2}});
  EXPECT_NEAR(odd.median, 0.2, 1e-12);
  EXPECT_EQ(error_stats("empty", {}).count, 0);
}

TEST(ErrorStatistics, SummaryGroupsAndWorstRowsSkipUnsimulated) {
  std::vector<RowResult> rows(12);
  for (int i = 0; i < 12; ++i) {
    rows[i].run_id = std::to_string(i);
    rows[i].run_id.insert(0, 1, 'R');
    rows[i].source = i < 6 ? std::string("A") : std::string("B");
    rows[i].system = i % 2 ? "h100-sxm" : "b200";
    rows[i].simulated = i != 11;
    rows[i].fits_in_memory = i != 3 && i != 11;  // R11 is not simulated: not counted
    rows[i].step_error = 0.01 * i * (i % 2 ? -1 : 1);
    rows[i].measured_step_s = 1;
    rows[i].simulated_step_s = 1 + rows[i].step_error;
    rows[i].kernels_per_source = {i, 0, 0, 10};  // measured, interpolated, scaled, roofline
  }
  const ValidationSummary s = summarize(rows);
  // Kernel lookups add up over the simulated rows (R11 left out), and per system.
  EXPECT_EQ(s.kernels_per_source[0], 55);  // 0 + 1 + ... + 10
  EXPECT_EQ(s.kernels_per_source[3], 110);
  EXPECT_EQ(s.kernels_per_source_by_gpu.at("h100-sxm")[0], 1 + 3 + 5 + 7 + 9);
  EXPECT_EQ(kernel_sources_text({1, 0, 0, 3}), "1 measured (25.0%), 0 interpolated (0.0%), 0 scaled (0.0%), 3 roofline (75.0%)");
  EXPECT_EQ(s.all.count, 11);
  ASSERT_EQ(s.by_source.size(), 2u);
  EXPECT_EQ(s.by_source[1].count, 5);
  ASSERT_EQ(s.worst.size(), 10u);
  EXPECT_EQ(s.worst.front()->run_id, "R10");
  ASSERT_EQ(s.not_fitting.size(), 1u);  // every measured run ran: R3 is a false "does not fit"
  EXPECT_EQ(s.not_fitting.front()->run_id, "R3");
  const std::string html = html_report(rows, s, "t <&> \"q\"");
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("t &lt;&amp;&gt; &quot;q&quot;"), std::string::npos);
  EXPECT_NE(html.find("Memory fit check: 1 of 11 simulated rows do not fit"), std::string::npos);
  EXPECT_NE(html.find("Kernel lookups of the simulated rows by efficiency source: 55 measured"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("https://"), std::string::npos);  // nothing fetched from the network
  EXPECT_EQ(html.find(" src="), std::string::npos);
}

TEST(MeasuredRunsCsv, ShippedFilesParse) {
  const std::map<std::string, std::size_t> rows{
      {"measured_runs.csv", 196},
      {"simumax_a100_pcie.csv", 30},
      {"nemo_long_sequence_b200.csv", 8},
      {"megatron_bridge_archive.csv", 60}};
  for (const auto& [f, n] : rows) {
    const auto runs = read_measured_runs(std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/" + f);
    EXPECT_EQ(runs.size(), n) << f;
  }
}

// Each row's published parallel columns multiply to its GPU count (the B200 table's own "# of
// GPUs" column does not, see the file's notes), the lengths run 8K … 1M, and every row maps to b200.
TEST(MeasuredRunsCsv, NemoLongSequenceB200RowsMapToB200) {
  const auto runs =
      read_measured_runs(std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/nemo_long_sequence_b200.csv");
  for (const MeasuredRun& r : runs) {
    EXPECT_EQ(*r.number("tp") * *r.number("pp") * *r.number("cp") * *r.number("dp"), *r.number("num_gpus")) << r.run_id;
    EXPECT_EQ(*r.number("seq_len"), 1024 * std::pow(2.0, 3 + (&r - runs.data()))) << r.run_id;
    const MappedRun m = map_run(r, kNoModels);
    EXPECT_TRUE(m.ok) << r.run_id << ": " << m.reason;
    EXPECT_EQ(m.system, "b200") << r.run_id;
  }
}

TEST(MeasuredRunsCsv, RepeatedRunIdIsRefusedWithBothLines) {
  try {
    parse("R1,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n"
          "R2,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n"
          "R1,s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n");
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.where(), "line 4, column run_id");
    EXPECT_NE(e.problem().find("line 2"), std::string::npos) << e.problem();
  }
}

// Several --runs files: rows in file order, a run_id in two files refused (naming both), SimuMax
// rows (generated ids) numbered on across files.
TEST(MeasuredRunsCsv, SeveralFilesConcatenateWithUniqueIds) {
  const std::string dir = ::testing::TempDir();
  const std::string row = ",s,m,dense,2,64,256,4,4,16,1000,128,gelu,mha,H100,8,NeMo,bf16,1,1,,,,,,,,1,8,,1.0,,,,\n";
  const auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + name) << text;
    return dir + name;
  };
  const std::string a = write("runs_a.csv", kHeader + "R1" + row + "R2" + row);
  const std::string b = write("runs_b.csv", kHeader + "R3" + row);
  const std::string c = write("runs_c.csv", kHeader + "R2" + row);
  const auto both = read_measured_runs(std::vector<std::string>{a, b});
  ASSERT_EQ(both.size(), 3u);
  EXPECT_EQ(both[0].run_id, "R1");
  EXPECT_EQ(both[2].run_id, "R3");
  EXPECT_EQ(runs_files_label({a, b}), "runs_a.csv + runs_b.csv");
  try {
    read_measured_runs(std::vector<std::string>{a, b, c});
    FAIL() << "expected InputError";
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), c);
    EXPECT_EQ(e.where(), "line 2, column run_id");
    EXPECT_NE(e.problem().find("runs_a.csv"), std::string::npos) << e.problem();
  }
  const std::string simumax = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/simumax_a100_pcie.csv";
  const auto twice = read_measured_runs(std::vector<std::string>{simumax, simumax});
  ASSERT_EQ(twice.size(), 60u);
  EXPECT_EQ(twice[30].run_id, "S31");
  EXPECT_EQ(twice[59].run_id, "S60");
  EXPECT_THROW(read_measured_runs(std::vector<std::string>{}), InputError);
}

}  // namespace
}  // namespace calisim::calibration
