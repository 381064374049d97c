// Config loading and validation: SimuMax fixtures load as-is, every shipped config is valid, and
// every validation rule fails with the documented file, JSON path and message.
#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/error.h"
#include "simulator/config_loader.h"

namespace calisim {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const std::string kData = CALISIM_TEST_DATA_DIR;
const std::string kConfigs = CALISIM_CONFIG_DIR;

// Runs f and returns the InputError it throws; records a failure when it throws nothing.
InputError expect_input_error(const std::function<void()>& f) {
  try {
    f();
  } catch (const InputError& e) {
    return e;
  }
  ADD_FAILURE() << "expected an InputError";
  return InputError("", "", "");
}

std::vector<std::string> json_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const auto& entry : fs::directory_iterator(dir)) {
    if (entry.is_regular_file() && entry.path().extension() == ".json") out.push_back(entry.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::string stem(const std::string& path) { return fs::path(path).stem().string(); }

ModelConfig load_model(const std::string& path, std::vector<std::string>* not_modeled = nullptr) {
  return parse_model(read_json_file(path), path, not_modeled);
}
StrategyConfig load_strategy(const std::string& path) { return parse_strategy(read_json_file(path), path); }

std::string shipped(const std::string& kind, const std::string& name) { return kConfigs + "/" + kind + "/" + name + ".json"; }

// A small valid dense model (Llama-3-8B shapes) and an 8-GPU strategy to mutate in rule tests.
json base_model() {
  return json{{"hidden_size", 4096}, {"head_num", 32},       {"kv_head_num", 8},     {"head_size", 128},
              {"intermediate_size", 14336}, {"layer_num", 32}, {"vocab_size", 128256}, {"use_swiglu", true}};
}
// The same shapes as a MoE model: 8 experts, top-2.
json base_moe_model() {
  json m = base_model();
  m["model_type"] = "moe";
  m["expert_num"] = 8;
  m["topk"] = 2;
  return m;
}
json base_strategy() {
  return json{{"seq_len", 4096}, {"micro_batch_size", 1}, {"micro_batch_num", 8}, {"world_size", 8},
              {"tp_size", 1},    {"pp_size", 1}};
}
json base_system() { return read_json_file(shipped("systems", "h100-sxm")); }

// parse_strategy + validate_layout on in-memory documents, file names "s.json" / "m.json".
StrategyConfig layout(const json& model_doc, const json& strategy_doc) {
  const ModelConfig m = parse_model(model_doc, "m.json", nullptr);
  StrategyConfig s = parse_strategy(strategy_doc, "s.json");
  validate_layout(m, s, "s.json", "m.json");
  return s;
}

bool contains(const std::string& haystack, const std::string& needle) {
  return haystack.find(needle) != std::string::npos;
}

// Minimal RFC-4180 CSV reader (quoted fields, doubled quotes); returns rows of cells.
std::vector<std::vector<std::string>> read_csv(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::vector<std::string>> rows;
  std::vector<std::string> row;
  std::string cell;
  bool quoted = false;
  char c;
  while (in.get(c)) {
    if (quoted) {
      if (c == '"') {
        if (in.peek() == '"') { cell += '"'; in.get(c); } else { quoted = false; }
      } else {
        cell += c;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      row.push_back(cell);
      cell.clear();
    } else if (c == '\n') {
      row.push_back(cell);
      cell.clear();
      rows.push_back(row);
      row.clear();
    } else if (c != '\r') {
      cell += c;
    }
  }
  if (!cell.empty() || !row.empty()) { row.push_back(cell); rows.push_back(row); }
  return rows;
}

// ------------------------------------------------------------------------------------------------
// (a) SimuMax fixtures load as-is.

TEST(SimuMaxFixtures, EveryModelLoads) {
  const auto files = json_files(kData + "/simumax/models");
  ASSERT_EQ(files.size(), 28u);
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    std::vector<std::string> not_modeled;
    ModelConfig m;
    ASSERT_NO_THROW(m = load_model(f, &not_modeled));
    EXPECT_TRUE(not_modeled.empty());
    EXPECT_GT(m.layer_num, 0);
  }
}

TEST(SimuMaxFixtures, MhaWithFewerKvHeadsIsReadAsGqa) {
  // SimuMax's ling-1T.json says "mha" with 64 query and 8 KV heads.
  const ModelConfig m = load_model(kData + "/simumax/models/ling-1T.json");
  EXPECT_EQ(m.attention_type, AttentionType::gqa);
  EXPECT_EQ(m.kv_head_num, 8);
  EXPECT_TRUE(m.is_moe);
}

TEST(SimuMaxFixtures, ModelFieldsAreRead) {
  const ModelConfig v2 = load_model(kData + "/simumax/models/deepseekv2.json");
  EXPECT_TRUE(v2.is_moe);
  EXPECT_EQ(v2.attention_type, AttentionType::mla);
  EXPECT_EQ(v2.expert_num, 160);
  EXPECT_EQ(v2.topk, 6);
  EXPECT_EQ(v2.dense_layers, 1);
  EXPECT_EQ(v2.moe_ffn_hidden_size, 1536);
  EXPECT_EQ(v2.moe_shared_expert_intermediate_size, 3072);
  EXPECT_EQ(v2.kv_lora_rank, 512);
  const ModelConfig g = load_model(kData + "/simumax/models/gpt3-175b.json");
  EXPECT_FALSE(g.is_moe);  // no model_type and expert_num 1
  EXPECT_EQ(g.attention_type, AttentionType::mha);
  EXPECT_EQ(g.norm_type, NormType::rmsnorm);  // SimuMax files cannot say layernorm; our configs do
}

TEST(SimuMaxFixtures, EveryStrategyLoadsAndValidates) {
  const ModelConfig dense = load_model(kData + "/simumax/models/llama3-8b.json");
  const ModelConfig moe = load_model(kData + "/simumax/models/deepseekv2.json");
  // Accepted SimuMax fields that change nothing: reported, never ignored silently. The
  // dispatcher and pp_comm_async are modeled; only the network-tier selectors remain.
  const std::vector<std::string> dispatcher = {};
  const std::map<std::string, std::vector<std::string>> expected_not_modeled = {
      {"ep4_pp2_dp4_mbs1", dispatcher},
      {"ep4_pp2_dp4_mbs1_full_recompute", dispatcher},
      {"ep4_pp2_dp4_mbs1_selective_recompute", dispatcher},
      {"ep8_pp1_dp8_mbs1", dispatcher},
      {"tp1_pp1_dp8_mbs1", dispatcher},
      {"tp1_pp2_dp4_mbs1", dispatcher},
      {"tp1_pp4_vp2_sync_mbs1_mbc8_no_ckpt",
       {"dp_net", "ep_net", "etp_net", "pp_net", "tp_net"}},
      {"tp2_pp1_dp4_mbs1", dispatcher},
      {"tp2_pp1_dp4_mbs1_full_recompute", dispatcher},
      {"tp2_pp1_dp4_mbs1_selective_recompute", dispatcher},
      {"tp4_pp1_dp2_mbs1", dispatcher},
      {"tp8_pp1_dp1_mbs1", dispatcher},
  };
  const auto files = json_files(kData + "/simumax/strategy");
  ASSERT_EQ(files.size(), expected_not_modeled.size());
  for (const auto& f : files) {
    SCOPED_TRACE(f);
    StrategyConfig s;
    ASSERT_NO_THROW(s = load_strategy(f));
    ASSERT_TRUE(expected_not_modeled.count(stem(f)));
    EXPECT_EQ(s.not_modeled_fields, expected_not_modeled.at(stem(f)));
    // ep_size > 1 needs a MoE model: validate those against DeepSeek-V2, the rest against Llama-3-8B.
    const ModelConfig& m = s.ep_size > 1 ? moe : dense;
    ASSERT_NO_THROW(validate_layout(m, s, f, "model.json"));
    EXPECT_EQ(s.dp_size * s.tp_size * s.pp_size * s.cp_size, s.world_size);
    EXPECT_EQ(s.global_batch_size, s.micro_batch_size * s.micro_batch_num * s.dp_size);
    EXPECT_EQ(s.layers_per_chunk.size(), static_cast<std::size_t>(s.pp_size * s.interleaving_size));
  }
}

TEST(SimuMaxFixtures, EpStrategyNeedsMoeModel) {
  const ModelConfig dense = load_model(kData + "/simumax/models/llama3-8b.json");
  const std::string f = kData + "/simumax/strategy/ep8_pp1_dp8_mbs1.json";
  StrategyConfig s = load_strategy(f);
  const InputError e = expect_input_error([&] { validate_layout(dense, s, f, "llama3-8b.json"); });
  EXPECT_EQ(e.file(), f);
  EXPECT_EQ(e.where(), "ep_size");
  EXPECT_EQ(e.problem(), "expert parallelism needs a MoE model; use 1 for dense models");
}

TEST(SimuMaxFixtures, StrategyDerivedFields) {
  const ModelConfig m = load_model(kData + "/simumax/models/llama3-8b.json");
  const std::string f = kData + "/simumax/strategy/tp1_pp4_vp2_sync_mbs1_mbc8_no_ckpt.json";
  StrategyConfig s = load_strategy(f);
  validate_layout(m, s, f, "llama3-8b.json");
  EXPECT_EQ(s.dp_size, 2);
  EXPECT_EQ(s.micro_batch_num, 8);
  EXPECT_EQ(s.global_batch_size, 16);
  EXPECT_FALSE(s.sequence_parallel);  // SP requested but tp_size is 1
  EXPECT_FALSE(s.recompute_active());  // enable_recompute false
  EXPECT_EQ(s.layers_per_chunk, std::vector<int>(8, 4));

  const std::string sel = kData + "/simumax/strategy/tp2_pp1_dp4_mbs1_selective_recompute.json";
  StrategyConfig t = load_strategy(sel);
  validate_layout(m, t, sel, "llama3-8b.json");
  EXPECT_TRUE(t.sequence_parallel);
  EXPECT_TRUE(t.recompute_active());
  EXPECT_EQ(t.recompute_granularity, RecomputeGranularity::selective);
  EXPECT_TRUE(t.attn_recompute);
  EXPECT_TRUE(t.mlp_recompute);
  EXPECT_EQ(t.recompute_layer_num, 12);
}

TEST(SimuMaxFixtures, SystemFileIsJsonButNotACalisimSystem) {
  // SimuMax's system file is imported by the efficiency database, not loaded as a system config.
  const std::string f = kData + "/simumax/system/a100_pcie.json";
  const json doc = read_json_file(f);
  ASSERT_TRUE(doc.contains("accelerator"));
  const InputError e = expect_input_error([&] { parse_system(doc, f); });
  EXPECT_EQ(e.file(), f);
  EXPECT_EQ(e.where(), "name");
  EXPECT_EQ(e.problem(), "required field is missing (expected a string)");
}

// ------------------------------------------------------------------------------------------------
// (b) Every shipped config parses; shipped strategies validate against the models they are for.

TEST(ShippedConfigs, Models) {
  const std::set<std::string> expected = {"llama2-7b",    "llama2-13b",    "llama2-70b",   "llama3-8b",   "llama3-70b",
                                          "llama3-405b",  "gpt3-175b",     "megatron-22b", "megatron-530b",
                                          "megatron-1t",  "mixtral-8x7b",  "deepseek-v2",  "deepseek-v3",
                                          "qwen3-30b-a3b", "qwen3-235b-a22b", "qwen3-32b", "qwen3-8b",
                                          "gpt-oss-120b", "gpt-oss-20b"};
  std::set<std::string> found;
  for (const auto& f : json_files(kConfigs + "/models")) {
    SCOPED_TRACE(f);
    std::vector<std::string> not_modeled;
    ModelConfig m;
    ASSERT_NO_THROW(m = load_model(f, &not_modeled));
    EXPECT_TRUE(not_modeled.empty());
    EXPECT_EQ(m.model_name, stem(f));
    found.insert(stem(f));
  }
  EXPECT_EQ(found, expected);
}

TEST(ShippedConfigs, ModelShapes) {
  const ModelConfig l405 = load_model(shipped("models", "llama3-405b"));
  EXPECT_EQ(l405.layer_num, 126);
  EXPECT_EQ(l405.kv_head_num, 8);
  EXPECT_EQ(l405.vocab_size, 128256);
  EXPECT_EQ(l405.attention_type, AttentionType::gqa);

  const ModelConfig q = load_model(shipped("models", "qwen3-30b-a3b"));
  EXPECT_TRUE(q.is_moe);
  EXPECT_EQ(q.layer_num, 48);
  EXPECT_EQ(q.hidden_size, 2048);
  EXPECT_EQ(q.head_num * q.head_size, 4096);  // attention width differs from hidden size
  EXPECT_EQ(q.kv_head_num, 4);
  EXPECT_EQ(q.expert_num, 128);
  EXPECT_EQ(q.topk, 8);
  EXPECT_EQ(q.moe_ffn_hidden_size, 768);
  EXPECT_EQ(q.moe_shared_expert_intermediate_size, 0);
  EXPECT_EQ(q.vocab_size, 151936);

  // Qwen3-235B-A22B: the shape of the Megatron-Bridge rows it was measured in (R0139, R0147, R0153).
  const ModelConfig q235 = load_model(shipped("models", "qwen3-235b-a22b"));
  EXPECT_EQ(q235.layer_num, 94);
  EXPECT_EQ(q235.expert_num, 128);
  EXPECT_EQ(q235.moe_ffn_hidden_size, 1536);
  EXPECT_EQ(q235.kv_head_num, 4);
  EXPECT_TRUE(q235.untie_embeddings_and_output_weights);
  for (const char* dense : {"qwen3-32b", "qwen3-8b"}) {
    SCOPED_TRACE(dense);
    const ModelConfig d = load_model(shipped("models", dense));
    EXPECT_FALSE(d.is_moe);
    EXPECT_EQ(d.vocab_size, 151936);
    EXPECT_EQ(d.head_size, 128);
  }

  const ModelConfig mx = load_model(shipped("models", "mixtral-8x7b"));
  EXPECT_TRUE(mx.is_moe);
  EXPECT_EQ(mx.expert_num, 8);
  EXPECT_EQ(mx.topk, 2);
  EXPECT_EQ(mx.moe_ffn_hidden_size, 14336);

  const ModelConfig v3 = load_model(shipped("models", "deepseek-v3"));
  EXPECT_EQ(v3.attention_type, AttentionType::mla);
  EXPECT_EQ(v3.dense_layers, 3);
  EXPECT_EQ(v3.expert_num, 256);

  for (const char* name : {"gpt3-175b", "megatron-22b", "megatron-530b", "megatron-1t"}) {
    SCOPED_TRACE(name);
    const ModelConfig g = load_model(shipped("models", name));
    EXPECT_EQ(g.norm_type, NormType::layernorm);
    EXPECT_EQ(g.position_embedding_type, PositionEmbedding::learned_absolute);
    EXPECT_FALSE(g.untie_embeddings_and_output_weights);
    EXPECT_TRUE(g.add_bias_linear);
    EXPECT_FALSE(g.use_swiglu);
    EXPECT_EQ(g.attention_type, AttentionType::mha);
    EXPECT_EQ(g.vocab_size, 51200);
    EXPECT_EQ(g.intermediate_size, 4 * g.hidden_size);
    EXPECT_EQ(g.head_num * g.head_size, g.hidden_size);
  }
}

TEST(ShippedConfigs, Systems) {
  const std::set<std::string> expected = {"a100-sxm-80g", "a100-pcie-80g", "h100-sxm", "h100-pcie", "h200",
                                          "b200",         "gb200-nvl72",   "b300",     "gb300-nvl72",
                                          "mi300x"};
  std::set<std::string> found;
  for (const auto& f : json_files(kConfigs + "/systems")) {
    SCOPED_TRACE(f);
    const json doc = read_json_file(f);
    SystemConfig s;
    ASSERT_NO_THROW(s = parse_system(doc, f));
    EXPECT_EQ(s.name, stem(f));
    EXPECT_FALSE(s.source.empty());
    ASSERT_TRUE(doc.contains("description"));
    EXPECT_GT(doc["description"].get<std::string>().size(), 100u);
    EXPECT_GT(s.device.peak_tflops_for(DType::bf16), 0);
    EXPECT_GT(s.device.memory_gb, 0);
    EXPECT_GT(s.matmul_efficiency, 0.3);
    EXPECT_LE(s.matmul_efficiency, 0.9);
    EXPECT_DOUBLE_EQ(s.scale_out.gpu_gb_s, s.nic_gb_s * s.nics_per_node / s.gpus_per_node);
    EXPECT_TRUE(s.efficiency_db.empty());
    found.insert(s.name);
  }
  EXPECT_EQ(found, expected);

  const SystemConfig h100 = parse_system(base_system(), "h100-sxm.json");
  EXPECT_DOUBLE_EQ(h100.device.peak_tflops_for(DType::fp8_e4m3), 1979);
  EXPECT_DOUBLE_EQ(h100.device.peak_tflops_for(DType::fp8_e5m2), 1979);
  EXPECT_DOUBLE_EQ(h100.scale_up.gpu_gb_s, 450);
  EXPECT_EQ(h100.scale_up_domain_size, 8);
  EXPECT_DOUBLE_EQ(h100.scale_out.gpu_gb_s, 50);
  const SystemConfig a100 = parse_system(read_json_file(shipped("systems", "a100-sxm-80g")), "a100");
  EXPECT_THROW(a100.device.peak_tflops_for(DType::fp8_e4m3), std::invalid_argument);  // no fp8 on Ampere
  const SystemConfig nvl = parse_system(read_json_file(shipped("systems", "gb200-nvl72")), "nvl");
  EXPECT_EQ(nvl.scale_up_domain_size, 72);
  EXPECT_EQ(nvl.gpus_per_node, 4);
  // GB300 NVL72: the rack part's own peaks (11 % above the HGX B300's), the B300's HBM and NICs,
  // GB200's rack layout and Grace host.
  const SystemConfig gb300 = parse_system(read_json_file(shipped("systems", "gb300-nvl72")), "gb300");
  const SystemConfig b300 = parse_system(read_json_file(shipped("systems", "b300")), "b300");
  EXPECT_DOUBLE_EQ(gb300.device.peak_tflops_for(DType::bf16), 2500);
  EXPECT_DOUBLE_EQ(gb300.device.peak_tflops_for(DType::fp8_e4m3), 5000);
  EXPECT_DOUBLE_EQ(b300.device.peak_tflops_for(DType::bf16), 2250);
  EXPECT_DOUBLE_EQ(gb300.device.hbm_gb_s, b300.device.hbm_gb_s);
  EXPECT_DOUBLE_EQ(gb300.device.memory_gb, b300.device.memory_gb);
  EXPECT_EQ(gb300.scale_up_domain_size, 72);
  EXPECT_EQ(gb300.gpus_per_node, 4);
  EXPECT_DOUBLE_EQ(gb300.scale_out.gpu_gb_s, b300.scale_out.gpu_gb_s);  // one 800 Gb/s NIC per GPU
  EXPECT_DOUBLE_EQ(gb300.host_link_gb_s, nvl.host_link_gb_s);
  EXPECT_DOUBLE_EQ(gb300.host_op_dispatch_us, nvl.host_op_dispatch_us);
  // Its GEMMs: the B300's MAMF scaled by GB200/B200's measured ratio, so faster than the B300's in
  // TFLOP/s but a smaller share of the higher peak.
  EXPECT_GT(gb300.matmul_efficiency * 2500, b300.matmul_efficiency * 2250);
  EXPECT_LT(gb300.matmul_efficiency, b300.matmul_efficiency);
}

TEST(ShippedConfigs, StrategiesValidateAgainstTheirModels) {
  const std::map<std::string, std::vector<std::string>> meant_for = {
      {"llama3-70b-64gpu", {"llama3-70b", "llama2-70b"}},
      {"llama3-70b-1024gpu-vpp5", {"llama3-70b", "llama2-70b"}},
      {"llama3-405b-1024gpu", {"llama3-405b"}},
      {"llama3-8b-8gpu", {"llama3-8b", "llama2-7b"}},
      {"llama3-8b-uneven-pp4", {"llama3-8b", "llama2-7b"}},
      {"tp1_pp1_dp8_mbs1", {"llama3-8b", "llama2-7b", "llama2-13b", "mixtral-8x7b", "qwen3-30b-a3b", "qwen3-8b"}},
      {"tp2_pp2_dp2_mbs1", {"llama3-8b", "llama2-7b", "llama2-13b", "mixtral-8x7b", "qwen3-30b-a3b"}},
      {"tp8_pp1_dp1_mbs1", {"llama3-8b", "llama3-70b", "llama2-70b", "llama2-13b", "mixtral-8x7b", "qwen3-32b"}},
      {"ep8_pp1_dp8_mbs1", {"mixtral-8x7b", "qwen3-30b-a3b", "deepseek-v2", "deepseek-v3"}},
      {"deepseek-v3-1024gpu", {"deepseek-v3"}},
      {"qwen3-235b-a22b-256gpu", {"qwen3-235b-a22b"}},
      {"gpt-oss-120b-64gpu", {"gpt-oss-120b", "gpt-oss-20b"}},
      {"megatron-22b-korthikanti-full", {"megatron-22b"}},
      {"megatron-22b-korthikanti-selective", {"megatron-22b"}},
      {"gpt3-175b-korthikanti-full", {"gpt3-175b"}},
      {"gpt3-175b-korthikanti-selective", {"gpt3-175b"}},
      {"megatron-530b-korthikanti-full", {"megatron-530b"}},
      {"megatron-530b-korthikanti-selective", {"megatron-530b"}},
      {"megatron-1t-korthikanti-full", {"megatron-1t"}},
      {"megatron-1t-korthikanti-selective", {"megatron-1t"}},
  };
  std::set<std::string> found;
  for (const auto& f : json_files(kConfigs + "/strategies")) {
    SCOPED_TRACE(f);
    found.insert(stem(f));
    StrategyConfig parsed;
    ASSERT_NO_THROW(parsed = load_strategy(f));
    EXPECT_TRUE(parsed.not_modeled_fields.empty());
    ASSERT_TRUE(meant_for.count(stem(f))) << "add the new strategy to meant_for";
    for (const auto& model : meant_for.at(stem(f))) {
      SCOPED_TRACE(model);
      StrategyConfig s = parsed;
      const ModelConfig m = load_model(shipped("models", model));
      ASSERT_NO_THROW(validate_layout(m, s, f, shipped("models", model)));
      // Recompute, when on, covers every layer of every chunk.
      if (s.recompute_active()) {
        EXPECT_GE(s.recompute_layer_num, *std::max_element(s.layers_per_chunk.begin(), s.layers_per_chunk.end()));
      }
    }
  }
  EXPECT_EQ(found.size(), meant_for.size());
}

TEST(ShippedConfigs, FlagshipLayouts) {
  {
    StrategyConfig s = load_strategy(shipped("strategies", "llama3-70b-64gpu"));
    validate_layout(load_model(shipped("models", "llama3-70b")), s, "s", "m");
    EXPECT_EQ(s.seq_len, 8192);
    EXPECT_EQ(s.dp_size, 2);
    EXPECT_EQ(s.micro_batch_num, 64);
    EXPECT_EQ(s.global_batch_size, 128);
    EXPECT_EQ(s.interleaving_size, 5);
    EXPECT_TRUE(s.sequence_parallel);
    EXPECT_EQ(s.zero_state, 1);
    EXPECT_TRUE(s.use_flash_sdp);
    EXPECT_FALSE(s.recompute_active());
    EXPECT_EQ(s.dtype, DType::bf16);
    EXPECT_EQ(s.layers_per_chunk, std::vector<int>(20, 4));
  }
  {
    StrategyConfig s = load_strategy(shipped("strategies", "llama3-70b-1024gpu-vpp5"));
    validate_layout(load_model(shipped("models", "llama3-70b")), s, "s", "m");
    EXPECT_EQ(s.dp_size, 16);
    EXPECT_EQ(s.micro_batch_num, 64);
    EXPECT_EQ(s.layers_per_chunk, std::vector<int>(40, 2));
  }
  {
    StrategyConfig s = load_strategy(shipped("strategies", "llama3-405b-1024gpu"));
    validate_layout(load_model(shipped("models", "llama3-405b")), s, "s", "m");
    ASSERT_EQ(s.layers_per_chunk.size(), 16u);
    int total = 0;
    for (int n : s.layers_per_chunk) total += n;
    EXPECT_EQ(total, 126);
    EXPECT_EQ(s.layers_per_chunk[0], 8);   // first stage 16 layers in 2 chunks
    EXPECT_EQ(s.layers_per_chunk[7], 7);   // last stage 14 layers in 2 chunks
    EXPECT_EQ(s.layers_per_chunk[15], 7);
  }
  {
    StrategyConfig s = load_strategy(shipped("strategies", "gpt3-175b-korthikanti-selective"));
    validate_layout(load_model(shipped("models", "gpt3-175b")), s, "s", "m");
    EXPECT_EQ(s.dtype, DType::fp16);
    EXPECT_TRUE(s.sequence_parallel);
    EXPECT_TRUE(s.enable_dropout);
    EXPECT_FALSE(s.use_flash_sdp);
    EXPECT_TRUE(s.use_math_sdp);
    // Korthikanti's selective recompute = core attention only (Megatron's "selective").
    EXPECT_EQ(s.recompute_granularity, RecomputeGranularity::sdp_only);
    EXPECT_FALSE(s.attn_recompute);
    EXPECT_FALSE(s.mlp_recompute);
    EXPECT_EQ(s.micro_batch_num, 64);
    EXPECT_EQ(s.layers_per_chunk, std::vector<int>(24, 4));
  }
  {
    StrategyConfig s = load_strategy(shipped("strategies", "llama3-8b-uneven-pp4"));
    validate_layout(load_model(shipped("models", "llama3-8b")), s, "s", "m");
    EXPECT_EQ(s.layers_per_chunk, (std::vector<int>{9, 9, 9, 5}));
  }
}

// The Korthikanti models and strategies reproduce rows R0020-R0027 of the measured-runs table.
TEST(ShippedConfigs, KorthikantiTable5MatchesModelsAndStrategies) {
  const auto rows = read_csv(kData + "/korthikanti_table5.csv");
  ASSERT_EQ(rows.size(), 9u);
  std::map<std::string, std::size_t> col;
  for (std::size_t i = 0; i < rows[0].size(); ++i) col[rows[0][i]] = i;
  const std::map<std::string, std::string> model_file = {
      {"GPT 22B", "megatron-22b"}, {"GPT 175B", "gpt3-175b"}, {"GPT 530B", "megatron-530b"}, {"GPT 1T", "megatron-1t"}};
  auto num = [&](const std::vector<std::string>& row, const std::string& name) {
    return std::stoll(row.at(col.at(name)));
  };
  for (std::size_t r = 1; r < rows.size(); ++r) {
    const auto& row = rows[r];
    SCOPED_TRACE(row.at(0));
    ASSERT_EQ(row.size(), rows[0].size());
    const std::string model = model_file.at(row.at(col.at("model")));
    const ModelConfig m = load_model(shipped("models", model));
    EXPECT_EQ(m.layer_num, num(row, "num_layers"));
    EXPECT_EQ(m.hidden_size, num(row, "hidden_size"));
    EXPECT_EQ(m.intermediate_size, num(row, "ffn_hidden_size"));
    EXPECT_EQ(m.head_num, num(row, "num_attention_heads"));
    EXPECT_EQ(m.kv_head_num, num(row, "num_kv_heads"));
    EXPECT_EQ(m.head_size, num(row, "head_dim"));
    EXPECT_EQ(m.vocab_size, num(row, "vocab_size"));

    const bool selective = row.at(col.at("recompute")).rfind("selective", 0) == 0;
    const std::string strategy = model + "-korthikanti-" + (selective ? "selective" : "full");
    StrategyConfig s = load_strategy(shipped("strategies", strategy));
    validate_layout(m, s, strategy, model);
    EXPECT_EQ(s.seq_len, num(row, "seq_len"));
    EXPECT_EQ(s.world_size, num(row, "num_gpus"));
    EXPECT_EQ(s.tp_size, num(row, "tp"));
    EXPECT_EQ(s.pp_size, num(row, "pp"));
    EXPECT_EQ(s.interleaving_size, num(row, "vpp"));
    EXPECT_EQ(s.dp_size, num(row, "dp"));
    EXPECT_EQ(s.micro_batch_size, num(row, "micro_batch_size"));
    EXPECT_EQ(s.global_batch_size, num(row, "global_batch_size"));
    EXPECT_EQ(s.sequence_parallel, row.at(col.at("sequence_parallel")) == "yes");
    EXPECT_EQ(s.zero_state, row.at(col.at("distributed_optimizer")) == "yes" ? 1 : 0);
    EXPECT_EQ(s.dtype, DType::fp16);
    EXPECT_EQ(s.recompute_granularity,
              selective ? RecomputeGranularity::sdp_only : RecomputeGranularity::full_block);
  }
}

// ------------------------------------------------------------------------------------------------
// (c) One test per validation rule: exact file, JSON path and message.

TEST(Validation, UnknownField) {
  json doc = base_model();
  doc["hidden_sise"] = 4096;
  const InputError e = expect_input_error([&] { parse_model(doc, "m.json", nullptr); });
  EXPECT_EQ(e.file(), "m.json");
  EXPECT_EQ(e.where(), "hidden_sise");
  EXPECT_TRUE(contains(e.problem(), "unknown field (known fields here: ")) << e.problem();
  EXPECT_TRUE(contains(e.problem(), "hidden_size")) << e.problem();
  EXPECT_TRUE(contains(e.problem(), "see docs/configs.md")) << e.problem();
  EXPECT_EQ(std::string(e.what()), "m.json: hidden_sise: " + e.problem());

  json st = base_strategy();
  st["pipeline_parallel"] = 2;
  const InputError es = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(es.where(), "pipeline_parallel");

  // Nested objects report the full path.
  json sys = base_system();
  sys["device"]["peak_tflops"]["bf17"] = 1;
  const InputError e2 = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e2.file(), "sys.json");
  EXPECT_EQ(e2.where(), "device.peak_tflops.bf17");
  json sys2 = base_system();
  sys2["network"]["scale_up"]["nvlink_count"] = 18;
  EXPECT_EQ(expect_input_error([&] { parse_system(sys2, "sys.json"); }).where(), "network.scale_up.nvlink_count");
  json sys3 = base_system();
  sys3["network"]["scale_out"]["efficiency"]["broadcast"] = 0.9;
  EXPECT_EQ(expect_input_error([&] { parse_system(sys3, "sys.json"); }).where(),
            "network.scale_out.efficiency.broadcast");
}

// The tier's link fields and the topology fields of the same object are read by two readers;
// the unknown-field message lists both (it listed only efficiency and latency_us).
TEST(Validation, UnknownNetworkFieldListsEveryKnownField) {
  json sys = base_system();
  sys["network"]["scale_out"]["gpu_gb_s"] = 50;
  const InputError e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "network.scale_out.gpu_gb_s");
  for (const char* k : {"nic_gb_s", "gpus_per_node", "fabric", "latency_us", "efficiency"}) {
    EXPECT_TRUE(contains(e.problem(), k)) << k << ": " << e.problem();
  }
  json up = base_system();
  up["network"]["scale_up"]["nvlink_gen"] = 4;
  const InputError eu = expect_input_error([&] { parse_system(up, "sys.json"); });
  EXPECT_TRUE(contains(eu.problem(), "domain_size")) << eu.problem();
  // A misspelt field of an attention implementation is named, not reported as a missing fraction.
  json impl = base_system();
  impl["efficiency"]["attention_implementations"] = json{{"x", json{{"foo", 1}}}};
  EXPECT_EQ(expect_input_error([&] { parse_system(impl, "sys.json"); }).where(),
            "efficiency.attention_implementations.x.foo");
  impl["efficiency"]["attention_implementations"] = json{{"x", json{{"attention_backward_ratio", 0.9}}}};
  const InputError missing = expect_input_error([&] { parse_system(impl, "sys.json"); });
  EXPECT_EQ(missing.where(), "efficiency.attention_implementations.x.attention");
  EXPECT_TRUE(contains(missing.problem(), "required")) << missing.problem();
}

// NCCL_ALGO "^..." that excludes every nameable algorithm enables nothing and is refused (p2p,
// which no list names, made the negated mask non-empty).
TEST(Validation, NcclAlgoListThatEnablesNothingIsRefused) {
  json st = base_strategy();
  st["nccl_algo"] = "^ring,tree,nvls,nvls_tree,collnet";
  const InputError e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.where(), "nccl_algo");
  EXPECT_TRUE(contains(e.problem(), "leaves nothing enabled")) << e.problem();
  st["nccl_algo"] = "^ring,tree";
  EXPECT_NO_THROW(parse_strategy(st, "s.json"));
}

TEST(Validation, NotModeledFieldsAreReportedNotIgnored) {
  json doc = base_model();
  doc["orig_vocab_size"] = 128000;
  std::vector<std::string> not_modeled;
  parse_model(doc, "m.json", &not_modeled);
  EXPECT_EQ(not_modeled, std::vector<std::string>{"orig_vocab_size"});

  json st = base_strategy();
  st["fp8"] = false;  // modeled: not reported
  st["pp_schedule"] = "1f1b";
  st["tp_net"] = "high_intra_node";
  EXPECT_EQ(parse_strategy(st, "s.json").not_modeled_fields, (std::vector<std::string>{"pp_schedule", "tp_net"}));
}

TEST(Validation, WrongType) {
  json doc = base_model();
  doc["hidden_size"] = "4096";
  InputError e = expect_input_error([&] { parse_model(doc, "m.json", nullptr); });
  EXPECT_EQ(e.file(), "m.json");
  EXPECT_EQ(e.where(), "hidden_size");
  EXPECT_EQ(e.problem(), "expected an integer, got string \"4096\"");

  doc = base_model();
  doc["layer_num"] = 32.5;
  EXPECT_EQ(expect_input_error([&] { parse_model(doc, "m.json", nullptr); }).problem(),
            "expected an integer, got number 32.5");
  doc = base_model();
  doc["layer_num"] = 32.0;  // integral floats are accepted
  EXPECT_EQ(parse_model(doc, "m.json", nullptr).layer_num, 32);

  json st = base_strategy();
  st["enable_sequence_parallel"] = 1;
  e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.where(), "enable_sequence_parallel");
  EXPECT_EQ(e.problem(), "expected true or false, got integer 1");

  st = base_strategy();
  st["dtype"] = 16;
  EXPECT_EQ(expect_input_error([&] { parse_strategy(st, "s.json"); }).problem(), "expected a string, got integer 16");

  json sys = base_system();
  sys["device"]["hbm_gb_s"] = "fast";
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "device.hbm_gb_s");
  EXPECT_EQ(e.problem(), "expected a number, got string \"fast\"");

  sys = base_system();
  sys["network"]["scale_up"] = 900;
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "network.scale_up");
  EXPECT_EQ(e.problem(), "expected an object, got integer 900");

  const InputError root = expect_input_error([&] { parse_model(json::array(), "m.json", nullptr); });
  EXPECT_EQ(root.where(), "(document)");
  EXPECT_EQ(root.problem(), "expected a JSON object, got an array");
}

TEST(Validation, MissingRequiredField) {
  json doc = base_model();
  doc.erase("layer_num");
  InputError e = expect_input_error([&] { parse_model(doc, "m.json", nullptr); });
  EXPECT_EQ(e.file(), "m.json");
  EXPECT_EQ(e.where(), "layer_num");
  EXPECT_EQ(e.problem(), "required field is missing (expected an integer)");

  doc = base_model();
  doc["vocab_size"] = nullptr;  // null counts as absent
  EXPECT_EQ(expect_input_error([&] { parse_model(doc, "m.json", nullptr); }).where(), "vocab_size");

  json st = base_strategy();
  st.erase("seq_len");
  e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.where(), "seq_len");
  EXPECT_EQ(e.problem(), "required field is missing (expected an integer)");

  st = base_strategy();
  st.erase("micro_batch_num");
  e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.where(), "micro_batch_num");
  EXPECT_EQ(e.problem(), "required: give micro_batch_num or global_batch_size");

  json sys = base_system();
  sys["network"]["scale_out"].erase("latency_us");
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "network.scale_out.latency_us");
  EXPECT_EQ(e.problem(), "required field is missing (expected a number)");

  sys = base_system();
  sys["network"]["scale_up"].erase("gpu_gb_s");
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "network.scale_up.gpu_gb_s");
  EXPECT_EQ(e.problem(), "required field is missing (expected GB/s per GPU, one direction)");

  sys = base_system();
  sys.erase("efficiency");
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "efficiency");
  EXPECT_EQ(e.problem(), "required field is missing (expected an object)");

  sys = base_system();
  sys["device"]["peak_tflops"] = json{{"fp32", 67}};
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "device.peak_tflops.bf16");
  EXPECT_EQ(e.problem(), "a training system needs a bf16 or fp16 peak");
}

TEST(Validation, NonPositiveSizes) {
  json doc = base_model();
  doc["hidden_size"] = 0;
  InputError e = expect_input_error([&] { parse_model(doc, "m.json", nullptr); });
  EXPECT_EQ(e.where(), "hidden_size");
  EXPECT_EQ(e.problem(), "expected a positive integer, got 0");

  doc = base_model();
  doc["kv_head_num"] = -8;
  EXPECT_EQ(expect_input_error([&] { parse_model(doc, "m.json", nullptr); }).problem(),
            "expected a positive integer, got -8");

  doc = base_model();
  doc["dense_layers"] = -1;
  EXPECT_EQ(expect_input_error([&] { parse_model(doc, "m.json", nullptr); }).problem(),
            "expected a non-negative integer, got -1");

  json st = base_strategy();
  st["tp_size"] = -2;
  e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "tp_size");
  EXPECT_EQ(e.problem(), "expected a positive integer, got -2");

  st = base_strategy();
  st["micro_batch_size"] = 0;
  EXPECT_EQ(expect_input_error([&] { parse_strategy(st, "s.json"); }).where(), "micro_batch_size");

  st = base_strategy();
  st["mem_factor"] = 1.5;
  e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.where(), "mem_factor");
  EXPECT_EQ(e.problem(), "expected a fraction in (0, 1], got 1.5");

  json sys = base_system();
  sys["device"]["memory_gb"] = 0;
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "device.memory_gb");
  EXPECT_EQ(e.problem(), "expected a positive number of GB");

  sys = base_system();
  sys["network"]["scale_out"]["nic_gb_s"] = -50;
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "network.scale_out.nic_gb_s");
  EXPECT_EQ(e.problem(), "expected a positive number of GB/s per NIC, one direction");

  sys = base_system();
  sys["network"]["scale_up"]["latency_us"] = -1;
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "network.scale_up.latency_us");
  EXPECT_EQ(e.problem(), "expected a non-negative number of microseconds");

  sys = base_system();
  sys["device"]["peak_tflops"]["fp8"] = -1;
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "device.peak_tflops.fp8");
  EXPECT_EQ(e.problem(), "expected a non-negative TFLOP/s figure (0 = not supported)");

  sys = base_system();
  sys["efficiency"]["matmul"] = 1.2;
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "efficiency.matmul");
  EXPECT_EQ(e.problem(), "expected a fraction in (0, 1], got 1.2");

  sys = base_system();
  EXPECT_EQ(parse_system(sys, "sys.json").sustained_kernel_speed, 1.0);  // absent: kernels as fast as alone
  sys["efficiency"]["sustained_kernel_speed"] = 0.85;
  EXPECT_EQ(parse_system(sys, "sys.json").sustained_kernel_speed, 0.85);
  // The attention core's own in-situ speed: absent, it follows sustained_kernel_speed.
  sys["efficiency"]["sustained_kernel_speed"] = 0.9;
  EXPECT_EQ(parse_system(sys, "sys.json").sustained_attention_speed, 0.0);
  EXPECT_EQ(parse_system(sys, "sys.json").attention_kernel_speed(), 0.9);
  sys["efficiency"]["sustained_attention_speed"] = 0.65;
  EXPECT_EQ(parse_system(sys, "sys.json").attention_kernel_speed(), 0.65);
  EXPECT_EQ(parse_system(sys, "sys.json").sustained_kernel_speed, 0.9);
  for (const char* field : {"sustained_kernel_speed", "sustained_attention_speed"}) {
    nlohmann::json bad_sys = base_system();
    for (double bad : {0.0, -0.5, 2.5}) {
      bad_sys["efficiency"][field] = bad;
      e = expect_input_error([&] { parse_system(bad_sys, "sys.json"); });
      EXPECT_EQ(e.where(), std::string("efficiency.") + field);
      EXPECT_NE(e.problem().find("(0, 2]"), std::string::npos) << e.problem();
    }
  }

  sys = base_system();
  sys["network"]["scale_up"]["efficiency"]["all_to_all"] = 0;
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "network.scale_up.efficiency.all_to_all");
  EXPECT_EQ(e.problem(), "expected a fraction in (0, 1], got 0.0");

  sys = base_system();
  sys["network"]["scale_up"]["domain_size"] = 0;
  e = expect_input_error([&] { parse_system(sys, "sys.json"); });
  EXPECT_EQ(e.where(), "network.scale_up.domain_size");
  EXPECT_EQ(e.problem(), "expected a positive integer, got 0");
}

TEST(Validation, WorldSizeNotDivisibleByModelParallel) {
  json st = base_strategy();
  st["world_size"] = 12;
  st["tp_size"] = 8;
  const InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "world_size");
  EXPECT_EQ(e.problem(), "world_size (12) must be divisible by tp_size*pp_size*cp_size = 8*1*1 = 8");
}

TEST(Validation, HeadsNotDivisibleByTp) {
  json m = base_model();
  m["head_num"] = 12;
  m["kv_head_num"] = 12;
  json st = base_strategy();
  st["tp_size"] = 8;
  const InputError e = expect_input_error([&] { layout(m, st); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "tp_size");
  EXPECT_EQ(e.problem(), "head_num (12, m.json) must be divisible by tp_size (8)");
}

TEST(Validation, KvHeadsNotDivisibleByTp) {
  json m = base_model();
  m["kv_head_num"] = 4;  // 32 query heads split over 8, but 4 KV heads do not
  json st = base_strategy();
  st["tp_size"] = 8;
  const InputError e = expect_input_error([&] { layout(m, st); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "tp_size");
  EXPECT_EQ(e.problem(), "kv_head_num (4, m.json) must be divisible by tp_size (8)");
}

TEST(Validation, LayersNotSplittableOverPp) {
  json m = base_model();
  m["layer_num"] = 30;
  json st = base_strategy();
  st["pp_size"] = 4;
  const InputError e = expect_input_error([&] { layout(m, st); });
  EXPECT_EQ(e.where(), "pp_size");
  EXPECT_EQ(e.problem(), "layer_num (30) is not divisible by pp_size (4); set "
                         "num_layers_in_first/last_pipeline_stage for an uneven split");
}

TEST(Validation, LayersPerStageNotDivisibleByVpp) {
  json st = base_strategy();
  st["pp_size"] = 4;
  st["interleaving_size"] = 3;  // 8 layers per stage
  const InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "interleaving_size");
  EXPECT_EQ(e.problem(), "pipeline stage 0 has 8 layers, not divisible into interleaving_size 3 chunks");

  // An uneven last stage that the chunks do not divide.
  st["interleaving_size"] = 2;
  st["num_layers_in_last_pipeline_stage"] = 5;  // 9 + 9 + 9 + 5
  EXPECT_EQ(expect_input_error([&] { layout(base_model(), st); }).problem(),
            "pipeline stage 0 has 9 layers, not divisible into interleaving_size 2 chunks");

  json one = base_strategy();
  one["interleaving_size"] = 2;
  const InputError e2 = expect_input_error([&] { layout(base_model(), one); });
  EXPECT_EQ(e2.where(), "interleaving_size");
  EXPECT_EQ(e2.problem(), "interleaving_size > 1 requires pp_size > 1");
}

// Megatron's account_for_embedding/loss_in_pipeline_split: (L + 2) / (pp·vpp) layers per virtual
// chunk, one fewer in the first chunk (stage 0, chunk 0) and the last (stage pp-1, chunk vpp-1).
TEST(Validation, EmbeddingAndLossCountedInThePipelineSplit) {
  json st = base_strategy();  // 32 layers
  st["world_size"] = 2;
  st["pp_size"] = 2;
  st["interleaving_size"] = 17;
  st["micro_batch_num"] = 4;
  st["account_for_embedding_in_pipeline_split"] = true;
  st["account_for_loss_in_pipeline_split"] = true;
  std::vector<int> want(34, 1);  // 34 chunks of (32 + 2) / 34 = 1 layer...
  want.front() = 0;              // ...the embedding's chunk holds none
  want.back() = 0;               // ...nor the loss's
  EXPECT_EQ(layout(base_model(), st).layers_per_chunk, want);

  st["interleaving_size"] = 1;  // 34 / 2 = 17: stages of 16 and 16
  EXPECT_EQ(layout(base_model(), st).layers_per_chunk, (std::vector<int>{16, 16}));

  st["interleaving_size"] = 2;  // 34 / 4 is not whole
  InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.where(), "account_for_embedding_in_pipeline_split");
  EXPECT_EQ(e.problem(), "layer_num 32 plus the embedding/loss (34 in all) does not divide over pp_size * "
                         "interleaving_size = 4 chunks");

  st["interleaving_size"] = 1;
  st["num_layers_in_first_pipeline_stage"] = 15;
  e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.problem(), "cannot be combined with num_layers_in_first/last_pipeline_stage (Megatron rejects both)");

  json loss_only = base_strategy();
  loss_only["account_for_loss_in_pipeline_split"] = true;
  e = expect_input_error([&] { layout(base_model(), loss_only); });
  EXPECT_EQ(e.where(), "account_for_loss_in_pipeline_split");
  EXPECT_EQ(e.problem(), "counting the embedding or the loss as a layer needs pp_size > 1");
}

TEST(Validation, UnevenStagesMustAddUp) {
  json st = base_strategy();
  st["pp_size"] = 4;
  st["num_layers_in_first_pipeline_stage"] = 7;
  st["num_layers_in_last_pipeline_stage"] = 6;
  InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "num_layers_in_first_pipeline_stage");
  EXPECT_EQ(e.problem(), "uneven split does not add up: layer_num 32 - first 7 - last 6 = 19 layers must divide "
                         "evenly over the 2 remaining stage(s)");

  st.erase("num_layers_in_first_pipeline_stage");
  st["num_layers_in_last_pipeline_stage"] = 40;
  e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.where(), "num_layers_in_last_pipeline_stage");
  EXPECT_EQ(e.problem(), "uneven split does not add up: layer_num 32 - first 0 - last 40 = -8 layers must divide "
                         "evenly over the 3 remaining stage(s)");

  // pp 2 with both ends given: nothing may be left over.
  json two = base_strategy();
  two["pp_size"] = 2;
  two["num_layers_in_first_pipeline_stage"] = 16;
  two["num_layers_in_last_pipeline_stage"] = 15;
  EXPECT_TRUE(contains(expect_input_error([&] { layout(base_model(), two); }).problem(), "= 1 layers must divide"));
  two["num_layers_in_last_pipeline_stage"] = 16;
  EXPECT_EQ(layout(base_model(), two).layers_per_chunk, (std::vector<int>{16, 16}));

  json flat = base_strategy();
  flat["num_layers_in_first_pipeline_stage"] = 4;
  e = expect_input_error([&] { layout(base_model(), flat); });
  EXPECT_EQ(e.where(), "num_layers_in_first_pipeline_stage");
  EXPECT_EQ(e.problem(), "uneven pipeline stages need pp_size > 1");

  // A valid uneven split, with interleaving: stages 8 / 12 / 12, chunks of 4 / 6 / 6.
  json ok = base_strategy();
  ok["world_size"] = 3;
  ok["pp_size"] = 3;
  ok["micro_batch_num"] = 6;
  ok["interleaving_size"] = 2;
  ok["num_layers_in_first_pipeline_stage"] = 8;
  EXPECT_EQ(layout(base_model(), ok).layers_per_chunk, (std::vector<int>{4, 6, 6, 4, 6, 6}));
}

TEST(Validation, SeqLenNotDivisibleByTpUnderSequenceParallel) {
  json st = base_strategy();
  st["seq_len"] = 4100;
  st["tp_size"] = 8;
  const InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "seq_len");
  EXPECT_EQ(e.problem(), "seq_len (4100) must be divisible by tp_size (8) with sequence parallelism");

  st["enable_sequence_parallel"] = false;  // without SP any length is fine
  const StrategyConfig s = layout(base_model(), st);
  EXPECT_FALSE(s.sequence_parallel);
}

TEST(Validation, MicroBatchNumNotMultipleOfPpWithInterleaving) {
  json st = base_strategy();
  st["pp_size"] = 4;
  st["interleaving_size"] = 2;
  st["micro_batch_num"] = 6;
  const InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "micro_batch_num");
  EXPECT_EQ(e.problem(), "with interleaving, micro_batch_num (6) must be a multiple of pp_size (4), or set "
                         "microbatch_group_size_per_vp_stage so that the last group of micro-batches holds at least "
                         "pp_size");

  st["interleaving_size"] = 1;  // plain 1F1B takes any count
  EXPECT_EQ(layout(base_model(), st).micro_batch_num, 6);
}

// Megatron-Core's interleaved schedule with --microbatch-group-size-per-virtual-pipeline-stage g:
// p ≤ g ≤ m, and m % g is 0 or at least p.
TEST(Validation, MicroBatchGroupSizeFollowsMegatronRules) {
  json st = base_strategy();
  st["pp_size"] = 4;
  st["world_size"] = 8;
  st["interleaving_size"] = 2;
  st["micro_batch_num"] = 10;
  st["microbatch_group_size_per_vp_stage"] = 6;  // groups 6 + 4: the last one holds pp_size
  const StrategyConfig ok = layout(base_model(), st);
  EXPECT_EQ(ok.microbatch_group_size_per_vp_stage, 6);
  EXPECT_EQ(ok.micro_batch_num, 10);

  st["microbatch_group_size_per_vp_stage"] = 8;  // groups 8 + 2: a last group below pp_size
  InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.where(), "micro_batch_num");
  EXPECT_EQ(e.problem(), "with interleaving in groups of microbatch_group_size_per_vp_stage = 8, micro_batch_num (10) "
                         "leaves a last group of 2, fewer than pp_size (4); Megatron refuses that");

  for (int g : {3, 11}) {
    st["microbatch_group_size_per_vp_stage"] = g;
    e = expect_input_error([&] { layout(base_model(), st); });
    EXPECT_EQ(e.where(), "microbatch_group_size_per_vp_stage");
    EXPECT_EQ(e.problem(), fmt::format("{} is outside [pp_size, micro_batch_num] = [4, 10] (Megatron's interleaved "
                                       "schedule refuses it)",
                                       g));
  }
  st["microbatch_group_size_per_vp_stage"] = 0;
  e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.where(), "microbatch_group_size_per_vp_stage");
}

// Megatron-Core's TransformerConfig rules for --overlap-moe-expert-parallel-comm.
TEST(Validation, MoeExpertParallelCommOverlapFollowsMegatronRules) {
  const json moe = base_moe_model();
  json st = base_strategy();
  st["world_size"] = 16;
  st["pp_size"] = 2;
  st["interleaving_size"] = 2;
  st["ep_size"] = 8;
  st["overlap_moe_expert_parallel_comm"] = true;
  EXPECT_TRUE(layout(moe, st).overlap_moe_expert_parallel_comm);

  auto refused = [&](const json& model, const json& strategy, const std::string& why) {
    const InputError e = expect_input_error([&] { layout(model, strategy); });
    EXPECT_EQ(e.where(), "overlap_moe_expert_parallel_comm");
    EXPECT_EQ(e.problem(), why + " (Megatron-Core refuses it otherwise)");
  };
  json bad = st;
  bad["interleaving_size"] = 1;
  refused(moe, bad, "with pp_size > 1 runs only in the interleaved schedule: set interleaving_size > 1");
  bad["pp_size"] = 1;  // without a pipeline, the plain schedule takes it
  EXPECT_TRUE(layout(moe, bad).overlap_moe_expert_parallel_comm);

  bad = st;
  bad["ep_size"] = 1;
  refused(moe, bad, "needs expert parallelism (a MoE model with ep_size > 1)");
  json dense_st = base_strategy();
  dense_st["overlap_moe_expert_parallel_comm"] = true;
  refused(base_model(), dense_st, "needs expert parallelism (a MoE model with ep_size > 1)");

  bad = st;
  bad["moe_dispatcher_policy"] = "allgather";
  refused(moe, bad, "needs the alltoall or flex token dispatcher, not allgather");

  bad = st;
  bad["enable_recompute"] = true;
  bad["recompute_granularity"] = "full_block";
  bad["recompute_layer_num"] = 1;
  refused(moe, bad, "cannot be combined with full recompute (recompute_granularity \"full_block\")");

  bad = st;
  bad["moe_shared_expert_overlap"] = true;
  refused(moe, bad, "replaces moe_shared_expert_overlap; set only one of them");
}

TEST(Validation, GlobalBatchInconsistent) {
  json st = base_strategy();  // dp 8, mbs 1, m 8 -> 64
  st["global_batch_size"] = 100;
  InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "global_batch_size");
  EXPECT_EQ(e.problem(), "global_batch_size (100) != micro_batch_size*micro_batch_num*dp = 1*8*8 = 64");

  st.erase("micro_batch_num");
  e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.where(), "global_batch_size");
  EXPECT_EQ(e.problem(), "global_batch_size (100) must be divisible by micro_batch_size*dp = 1*8");

  st["global_batch_size"] = 128;
  const StrategyConfig s = layout(base_model(), st);
  EXPECT_EQ(s.micro_batch_num, 16);
  st["global_batch_size"] = 128;
  st["micro_batch_num"] = 16;
  EXPECT_EQ(layout(base_model(), st).global_batch_size, 128);
  st.erase("global_batch_size");
  st["micro_batch_num"] = 4;
  EXPECT_EQ(layout(base_model(), st).global_batch_size, 32);  // derived
}

TEST(Validation, RejectedStrategyValues) {
  struct Case {
    const char* field;
    json value;
    const char* problem;
  };
  const std::vector<Case> cases = {
      {"fp8_recipe", "nvfp4", "expected \"delayed\", \"tensorwise\", \"blockwise\" or \"mxfp8\", got \"nvfp4\""},
      {"zero_state", 4,
       "expected 0 (replicated optimizer), 1 (distributed optimizer), 2 (+ sharded gradients) or 3 (+ sharded "
       "parameters, FSDP), got 4"},
      {"cp_comm_type", "ring",
       "expected \"p2p\" (ring attention), \"a2a\" (Ulysses), \"allgather\" (K/V all-gather, also \"all_gather\") "
       "or \"a2a+p2p\" (hierarchical, with hierarchical_context_parallel_sizes), got \"ring\""},
      {"hierarchical_context_parallel_sizes", json::array({2, 4}), "only valid with cp_comm_type \"a2a+p2p\""},
      {"moe_dispatcher_policy", "deepep",
       "expected \"all2all\", \"allgather\" or \"flex\", got \"deepep\""},
      {"moe_token_imbalance_factor", 0.5, "expected >= 1 (busiest EP rank's routed tokens / the average), got 0.5"},
      {"offload_groupgemm_col_inputs", true,
       "offloading grouped-GEMM inputs alone is not modeled; use cpu_offloading_num_layers (whole layers' "
       "activations)"},
      {"dtype", "fp8",
       "expected \"bf16\" or \"fp16\" (the training dtype; FP8 is the separate \"fp8\" switch), got \"fp8\""},
      {"dtype", "int4", "expected \"bf16\" or \"fp16\", got \"int4\""},
      {"megatron_recompute", true, "requires recompute_granularity \"selective_recompute\""},
      {"megatron_recompute_modules", json::array({"layernorm", "core_attn"}),
       "expected module names among \"layernorm\", \"mla_up_proj\", \"moe_act\", \"mlp\", \"moe\" (\"core_attn\" "
       "is not supported), got core_attn"},
      {"megatron_recompute_modules", json::array({"layernorm"}),
       "needs megatron_recompute: true (with recompute_granularity \"selective_recompute\"); without it the "
       "modules are not recomputed"},
      {"attention_sparse_ratio", 0.5, "sparse attention is not modeled; causal masking is applied automatically"},
      {"pp_schedule", "zero_bubble",
       "only \"1f1b\" (with interleaving_size for the interleaved variant) is modeled"},
      {"recompute_granularity", "everything",
       "expected one of \"full_block\", \"selective_recompute\", \"attn_only\", \"mlp_only\", \"sdp_only\", "
       "\"selective_op\", \"save_qkv_proj\" "
       "(or null), got \"everything\""},
      {"use_math_sdp", true, "use_flash_sdp and use_math_sdp cannot both be true"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.field);
    json st = base_strategy();
    st[c.field] = c.value;
    const InputError e = expect_input_error([&] { parse_strategy(st, "s.json"); });
    EXPECT_EQ(e.file(), "s.json");
    EXPECT_EQ(e.where(), c.field);
    EXPECT_EQ(e.problem(), c.problem);
  }
  // Selective sub-options need their parent.
  json st = base_strategy();
  st["recompute_granularity"] = "selective_recompute";
  st["mlp_rms_recompute"] = true;
  InputError e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.where(), "mlp_rms_recompute");
  EXPECT_EQ(e.problem(), "requires mlp_recompute: true");
  st.erase("mlp_rms_recompute");
  st["mla_rms_recompute"] = true;
  e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.where(), "mla_rms_recompute");
  EXPECT_EQ(e.problem(), "requires attn_recompute: true");

  // Both sdp switches off means the unfused attention.
  st = base_strategy();
  st["use_flash_sdp"] = false;
  EXPECT_TRUE(parse_strategy(st, "s.json").use_math_sdp);
  // "full" and "selective" are accepted spellings.
  st["recompute_granularity"] = "full";
  EXPECT_EQ(parse_strategy(st, "s.json").recompute_granularity, RecomputeGranularity::full_block);
  st["recompute_granularity"] = nullptr;
  EXPECT_EQ(parse_strategy(st, "s.json").recompute_granularity, RecomputeGranularity::none);
}

TEST(Validation, ContextParallelRules) {
  json st = base_strategy();
  st["cp_size"] = 2;
  st["seq_len"] = 4098;  // ring attention needs 2·cp chunks
  InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.file(), "s.json");
  EXPECT_EQ(e.where(), "seq_len");
  EXPECT_EQ(e.problem(), "seq_len (4098) must be divisible by 4 with cp_size 2 (ring attention splits it into 2·cp chunks)");
  st["seq_len"] = 4096;
  const StrategyConfig ok = layout(base_model(), st);
  EXPECT_EQ(ok.dp_size * ok.cp_size * ok.tp_size * ok.pp_size, ok.world_size);
  st["use_flash_sdp"] = false;
  e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.where(), "cp_size");
  EXPECT_EQ(e.problem(), "context parallelism needs use_flash_sdp: true (Megatron runs CP in TE's flash attention)");
  st["use_flash_sdp"] = true;
  st["cp_comm_type"] = "a2a";
  st["cp_size"] = 16;
  st["world_size"] = 16;
  json m = base_model();
  m["kv_head_num"] = 8;
  e = expect_input_error([&] { layout(m, st); });
  EXPECT_EQ(e.where(), "cp_comm_type");
}

TEST(Validation, OverlapAndMoeRules) {
  json st = base_strategy();
  st["tp_size"] = 2;
  st["enable_sequence_parallel"] = false;
  st["tp_comm_overlap"] = true;
  InputError e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.where(), "tp_comm_overlap");
  EXPECT_EQ(e.problem(), "TP communication overlap needs sequence parallelism (enable_sequence_parallel: true)");

  st = base_strategy();
  st["pp_comm_async"] = false;
  st["overlap_p2p_comm"] = true;
  e = expect_input_error([&] { parse_strategy(st, "s.json"); });
  EXPECT_EQ(e.where(), "pp_comm_async");
  st.erase("overlap_p2p_comm");
  EXPECT_FALSE(parse_strategy(st, "s.json").overlap_p2p_comm);

  const json moe = base_moe_model();
  st = base_strategy();
  st["tp_size"] = 2;
  st["enable_sequence_parallel"] = false;
  e = expect_input_error([&] { layout(moe, st); });
  EXPECT_EQ(e.where(), "enable_sequence_parallel");
  EXPECT_EQ(e.problem(), "MoE layers with tp_size > 1 need sequence parallelism (Megatron requires it)");
  st["enable_sequence_parallel"] = true;
  st["ep_size"] = 2;
  st["etp_size"] = 2;
  const StrategyConfig ok = layout(moe, st);
  EXPECT_EQ(ok.edp_size, ok.world_size / 4);
  st["cpu_offloading_num_layers"] = 1000;
  e = expect_input_error([&] { layout(moe, st); });
  EXPECT_EQ(e.where(), "cpu_offloading_num_layers");
}

TEST(Validation, ExpertParallelRules) {
  const json moe = base_moe_model();
  json st = base_strategy();
  st["ep_size"] = 3;
  st["world_size"] = 6;
  InputError e = expect_input_error([&] { layout(moe, st); });
  EXPECT_EQ(e.where(), "ep_size");
  EXPECT_EQ(e.problem(), "expert_num (8) must be divisible by ep_size (3)");

  st = base_strategy();
  st["ep_size"] = 4;
  st["world_size"] = 6;
  e = expect_input_error([&] { layout(moe, st); });
  EXPECT_EQ(e.where(), "ep_size");
  EXPECT_EQ(e.problem(), "world_size (6) must be divisible by ep_size*etp_size*pp_size = 4");

  st = base_strategy();
  st["etp_size"] = 2;
  e = expect_input_error([&] { layout(base_model(), st); });
  EXPECT_EQ(e.where(), "etp_size");
  EXPECT_EQ(e.problem(), "expert parallelism needs a MoE model; use 1 for dense models");
}

TEST(Validation, ModelRules) {
  struct Case {
    json patch;
    const char* where;
    const char* problem;
  };
  const std::vector<Case> cases = {
      {{{"kv_head_num", 5}}, "kv_head_num", "head_num (32) must be a multiple of kv_head_num (5)"},
      {{{"model_type", "sparse"}}, "model_type", "expected \"dense\" or \"moe\", got \"sparse\""},
      {{{"norm_type", "batchnorm"}}, "norm_type", "expected \"rmsnorm\" or \"layernorm\", got \"batchnorm\""},
      {{{"position_embedding_type", "alibi"}},
       "position_embedding_type",
       "expected \"rope\" or \"learned_absolute\", got \"alibi\""},
      {{{"attention_type", "linear"}}, "attention_type", "expected \"mha\", \"gqa\" or \"mla\", got \"linear\""},
      {{{"model_type", "dense"}, {"expert_num", 8}}, "expert_num", "expert_num > 1 requires model_type \"moe\""},
      {{{"model_type", "moe"}}, "expert_num", "a \"moe\" model needs expert_num >= 2"},
      {{{"model_type", "moe"}, {"expert_num", 8}, {"topk", 9}}, "topk", "expected 1 <= topk <= expert_num (8), got 9"},
      {{{"model_type", "moe"}, {"expert_num", 8}}, "topk", "expected 1 <= topk <= expert_num (8), got 0"},
      {{{"model_type", "moe"}, {"expert_num", 8}, {"topk", 2}, {"dense_layers", 33}},
       "dense_layers",
       "dense_layers (33) exceeds layer_num (32)"},
      {{{"attention_type", "mla"}}, "kv_lora_rank", "MLA needs kv_lora_rank > 0"},
      {{{"attention_type", "mla"}, {"kv_lora_rank", 512}}, "qk_head_dim", "MLA needs qk_head_dim > 0"},
      {{{"attention_type", "mla"}, {"kv_lora_rank", 512}, {"qk_head_dim", 128}}, "v_head_dim",
       "MLA needs v_head_dim > 0"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.patch.dump());
    json doc = base_model();
    doc.merge_patch(c.patch);
    const InputError e = expect_input_error([&] { parse_model(doc, "m.json", nullptr); });
    EXPECT_EQ(e.file(), "m.json");
    EXPECT_EQ(e.where(), c.where);
    EXPECT_EQ(e.problem(), c.problem);
  }
  // Defaults: kv_head_num = head_num, head_size = hidden/heads, attention type from the head counts.
  json doc = base_model();
  doc.erase("kv_head_num");
  doc.erase("head_size");
  const ModelConfig m = parse_model(doc, "m.json", nullptr);
  EXPECT_EQ(m.kv_head_num, 32);
  EXPECT_EQ(m.head_size, 128);
  EXPECT_EQ(m.attention_type, AttentionType::mha);
  EXPECT_EQ(parse_model(base_model(), "m.json", nullptr).attention_type, AttentionType::gqa);
  EXPECT_EQ(m.padded_vocab(8), 129024);  // 128256 rounded up to a multiple of 128*8
}

// ------------------------------------------------------------------------------------------------
// --set overrides.

TEST(Override, GoodAssignments) {
  json model = base_model(), strategy = base_strategy(), system = base_system();
  apply_override("strategy.tp_size=4", model, strategy, system);
  EXPECT_EQ(strategy["tp_size"], 4);
  EXPECT_TRUE(strategy["tp_size"].is_number_integer());
  apply_override("strategy.recompute_granularity=full_block", model, strategy, system);
  EXPECT_EQ(strategy["recompute_granularity"], "full_block");  // bare word -> string
  apply_override("model.use_swiglu=false", model, strategy, system);
  EXPECT_EQ(model["use_swiglu"], false);
  apply_override("system.network.scale_up.gpu_gb_s=900.5", model, strategy, system);
  EXPECT_DOUBLE_EQ(system["network"]["scale_up"]["gpu_gb_s"].get<double>(), 900.5);
  apply_override("system.efficiency={\"matmul\": 0.5}", model, strategy, system);
  EXPECT_EQ(system["efficiency"], (json{{"matmul", 0.5}}));
  apply_override("model.model_name=\"a=b\"", model, strategy, system);  // first '=' splits
  EXPECT_EQ(model["model_name"], "a=b");
  apply_override("strategy.new.nested.key=1", model, strategy, system);  // missing objects are created
  EXPECT_EQ(strategy["new"]["nested"]["key"], 1);

  // The overridden documents go through the same validation as files.
  json s2 = base_strategy();
  apply_override("strategy.tp_size=0", model, s2, system);
  EXPECT_EQ(expect_input_error([&] { parse_strategy(s2, "s.json"); }).where(), "tp_size");
}

TEST(Override, BadAssignments) {
  json model = base_model(), strategy = base_strategy(), system = base_system();
  struct Case {
    const char* assignment;
    const char* problem;
  };
  const std::vector<Case> cases = {
      {"strategy.tp_size", "expected section.key=value, e.g. strategy.tp_size=4"},
      {"=4", "expected section.key=value, e.g. strategy.tp_size=4"},
      {"tp_size=4", "expected section.key=value with section model, strategy or system"},
      {"cluster.tp_size=4", "unknown section 'cluster' (expected model, strategy or system)"},
      {"strategy.=4", "empty key in path"},
      {"system.network..gpu_gb_s=1", "empty key in path"},
      {"system.device.name.short=1", "'short' is inside a non-object value"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.assignment);
    const InputError e = expect_input_error([&] { apply_override(c.assignment, model, strategy, system); });
    EXPECT_EQ(e.file(), "<--set>");
    EXPECT_EQ(e.where(), std::string("--set ") + c.assignment);
    EXPECT_EQ(e.problem(), c.problem);
  }
}

// ------------------------------------------------------------------------------------------------
// read_json_file.

std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = testing::TempDir() + "/calisim_config_test_" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(ReadJsonFile, SyntaxErrorReportsLineAndColumn) {
  const std::string path = write_temp("syntax.json", "{\n  \"seq_len\": 4096,\n  \"tp_size\": ,\n}\n");
  const InputError e = expect_input_error([&] { read_json_file(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.where(), "line 3, column 14");  // the stray ','
  EXPECT_TRUE(contains(e.problem(), "invalid JSON: ")) << e.problem();
  EXPECT_TRUE(contains(e.problem(), "unexpected ','")) << e.problem();

  const std::string first = write_temp("first.json", "{\"a\": 1,}");
  EXPECT_EQ(expect_input_error([&] { read_json_file(first); }).where(), "line 1, column 9");
  const std::string truncated = write_temp("truncated.json", "{\n\"a\": 1\n");
  EXPECT_EQ(expect_input_error([&] { read_json_file(truncated); }).where(), "line 3, column 1");
  const std::string empty = write_temp("empty.json", "");
  EXPECT_EQ(expect_input_error([&] { read_json_file(empty); }).where(), "line 1, column 1");
}

TEST(ReadJsonFile, MissingFile) {
  const std::string path = testing::TempDir() + "/calisim_config_test_does_not_exist.json";
  const InputError e = expect_input_error([&] { read_json_file(path); });
  EXPECT_EQ(e.file(), path);
  EXPECT_EQ(e.where(), "");
  EXPECT_EQ(e.problem(), "cannot open file (does it exist and is it readable?)");
  EXPECT_EQ(std::string(e.what()), path + ": cannot open file (does it exist and is it readable?)");
}

// nlohmann::json keeps the last of two equal keys; a config that says tp_size twice is a mistake
// the user must hear about, with the key's path (objects by key, arrays by index).
TEST(ReadJsonFile, DuplicateKeyIsRefusedWithItsPath) {
  const std::string top = write_temp("dup_top.json", "{\"tp_size\": 2, \"pp_size\": 2, \"tp_size\": 4}");
  InputError e = expect_input_error([&] { read_json_file(top); });
  EXPECT_EQ(e.file(), top);
  EXPECT_EQ(e.where(), "tp_size");
  EXPECT_TRUE(contains(e.problem(), "given twice")) << e.problem();
  const std::string nested =
      write_temp("dup_nested.json", "{\"network\": {\"scale_up\": {\"latency_us\": 1, \"latency_us\": 2}}}");
  EXPECT_EQ(expect_input_error([&] { read_json_file(nested); }).where(), "network.scale_up.latency_us");
  const std::string in_array = write_temp("dup_array.json", "{\"x\": [{\"k\": 1}, 3, {\"k\": 1, \"k\": 2}]}");
  EXPECT_EQ(expect_input_error([&] { read_json_file(in_array); }).where(), "x[2].k");
  // The same key in different objects is fine.
  const std::string ok = write_temp("dup_ok.json", "{\"a\": {\"k\": 1}, \"b\": {\"k\": 1}, \"c\": [{\"k\": 1}, {\"k\": 2}]}");
  EXPECT_EQ(read_json_file(ok)["c"][1]["k"], 2);
}

TEST(ReadJsonFile, NumberBeyondDoubleAndDirectoryAreInputErrors) {
  const std::string big = write_temp("overflow.json", "{\"seq_len\": 1e400}");
  const InputError e = expect_input_error([&] { read_json_file(big); });
  EXPECT_EQ(e.file(), big);
  EXPECT_TRUE(contains(e.problem(), "number overflow")) << e.problem();
  const InputError d = expect_input_error([&] { read_json_file(testing::TempDir()); });
  EXPECT_TRUE(contains(d.problem(), "is a directory")) << d.problem();
}

TEST(ReadJsonFile, ValidFileRoundTrips) {
  const std::string path = write_temp("ok.json", base_strategy().dump(2));
  EXPECT_EQ(read_json_file(path), base_strategy());
}

}  // namespace
}  // namespace calisim
