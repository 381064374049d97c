#include "calibration/run_mapping.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <limits>
#include <optional>
#include <regex>

namespace calisim::calibration {
namespace {

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return s;
}
bool has(const std::string& haystack, const std::string& needle) { return haystack.find(needle) != std::string::npos; }

enum class Framework { megatron_legacy, megatron, torchtitan, foundry, maxtext, other };

Framework framework_of(const MeasuredRun& r) {
  const std::string src = lower(r.source), fw = lower(r.text("framework"));
  if (has(src, "korthikanti") || has(src, "narayanan")) return Framework::megatron_legacy;
  if (has(fw, "megatron") || has(fw, "nemo")) return Framework::megatron;
  if (has(fw, "torchtitan")) return Framework::torchtitan;
  if (has(fw, "llm-foundry") || has(fw, "composer")) return Framework::foundry;
  if (has(fw, "maxtext")) return Framework::maxtext;
  return Framework::other;
}

// The NeMo container release a row names ("25.04", "v25.04.01", "NeMo 24.09") in its
// framework_version or version_or_date, as yy * 100 + mm; 0 when none is named.
int nemo_release(const MeasuredRun& r) {
  for (const std::string& v : {r.text("framework_version"), r.text("version_or_date")}) {
    for (std::size_t i = 0; i + 4 < v.size() + 1; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(v[i])) || (i > 0 && std::isdigit(static_cast<unsigned char>(v[i - 1]))))
        continue;
      int yy = 0, mm = 0;
      if (std::sscanf(v.c_str() + i, "%2d.%2d", &yy, &mm) == 2 && yy >= 20 && yy < 100 && mm >= 1 && mm <= 12) {
        return yy * 100 + mm;
      }
    }
  }
  return 0;
}

// NeMo 2 (NeMo-Run recipes, GPTConfig) or Megatron-Bridge: the framework's release is 24.09 or
// later, or the framework is Megatron-Bridge. Their model configs default
// cross_entropy_loss_fusion to True (NeMo's GPTConfig, Megatron-Bridge's GPTModelProvider), where
// Megatron-LM's own flag and NeMo 1's recipes leave it off.
bool nemo2_or_bridge(const MeasuredRun& r) {
  const std::string fw = lower(r.text("framework"));
  if (has(fw, "bridge")) return true;
  return has(fw, "nemo") && nemo_release(r) >= 2409;
}

// A NeMo / Megatron-Bridge container of release 25.09 or later, i.e. Megatron-Core 0.14 or later
// (25.09 ships 0.14, 25.11 ships 0.15), whose all-to-all dispatcher sends the router
// probabilities with the tokens and applies them in the experts' activation (dispatch_probs).
// Megatron-Bridge rows without a release are taken as such (Bridge itself needs Megatron-Core 0.14).
bool megatron_core_0_14_or_later(const MeasuredRun& r) {
  const std::string fw = lower(r.text("framework"));
  if (!has(fw, "nemo") && !has(fw, "bridge")) return false;
  const int release = nemo_release(r);
  return release >= 2509 || (release == 0 && has(fw, "bridge"));
}

// A torchtitan row run without torch.compile. The Dec 2024 benchmark (benchmarks/
// llama3_h100_202412_torchtitan.md) names torch.compile in the headings of Tables 2, 4, 5 and 6,
// so all their rows compile; Tables 1 and 3 name it per row ("FSDP" vs "FSDP + torch.compile").
// A row compiles when its notes or that table heading say so.
bool torchtitan_eager(const MeasuredRun& r) {
  if (has(lower(r.text("notes")), "torch.compile")) return false;
  static const std::regex table_re(R"(table\s+(\d{1,3})\b)");
  const std::string src = lower(r.source);
  std::smatch t;
  if (!std::regex_search(src, t, table_re)) return true;
  const int table = std::stoi(t[1].str());
  return table == 1 || table == 3;
}

MappedRun fail(MappedRun m, std::string reason) {
  m.ok = false;
  m.reason = std::move(reason);
  return m;
}

long long as_int(double v) { return std::llround(v); }

// A layout dimension (GPU count, parallel size) as the int the strategy takes. parse_measured_runs
// bounds integer columns to [1, INT_MAX]; a MeasuredRun built another way is checked here too, so
// an out-of-range count is a row that cannot be simulated, never a cast that wraps round.
std::optional<int> layout_int(double v) {
  if (!(v >= 1 && v <= std::numeric_limits<int>::max()) || v != std::floor(v)) return std::nullopt;
  return static_cast<int>(v);
}

// The MLA parameters written as "mla(q_lora=1536,kv_lora=512,qk_head=128,qk_rope=64,v_head=128)".
bool parse_mla(const std::string& text, nlohmann::json& model) {
  static const std::regex re(R"(q_lora=(\d+),\s*kv_lora=(\d+),\s*qk_head=(\d+),\s*qk_rope=(\d+),\s*v_head=(\d+))");
  std::smatch m;
  if (!std::regex_search(text, m, re)) return false;
  model["attention_type"] = "mla";
  model["q_lora_rank"] = std::stoll(m[1]);
  model["kv_lora_rank"] = std::stoll(m[2]);
  model["qk_head_dim"] = std::stoll(m[3]);
  model["qk_pos_emb_head_dim"] = std::stoll(m[4]);
  model["v_head_dim"] = std::stoll(m[5]);
  return true;
}

// Megatron-Bridge's DeepSeek-V3 pipeline layouts (--pipeline-model-parallel-layout) per (pp, vpp):
// the recipe's layout_map (NVIDIA-NeMo/Megatron-Bridge src/megatron/bridge/recipes/deepseek/
// deepseek_v3.py, used by the performance scripts with layout=None) and the explicit pp_layout of
// its (pp 8, vpp 4) performance config (scripts/performance/configs/deepseek/
// deepseek_workload_base_configs.py, H100). The recipe ends the last stage with "m"·mtp_num_layers
// then "L", so a run without MTP drops the "m". text empty: no published layout; source says why.
struct DeepSeekV3Layout {
  std::string text, source;
};
DeepSeekV3Layout deepseek_v3_bridge_layout(int pp, int vpp, long long layers, bool mtp) {
  const std::string tail = mtp ? "mL" : "L";
  if (layers != 61) {
    return {"", fmt::format("DeepSeek-V3 row with {} layers: Megatron-Bridge's layouts are for 61", layers)};
  }
  const char* recipe = "Megatron-Bridge deepseek_v3.py recipe layout_map";
  if (pp == 4 && vpp == 1) return {"Et*16|t*16|t*16|t*13" + tail, recipe};
  if ((pp == 8 && vpp == 1) || (pp == 4 && vpp == 2)) return {"Et*8|(t*8|)*6t*5" + tail, recipe};
  if ((pp == 16 && vpp == 1) || (pp == 8 && vpp == 2) || (pp == 4 && vpp == 4)) {
    return {"Et*4|(t*4|)*14t" + tail, recipe};
  }
  if (pp == 2 && vpp == 8) {
    // The same 16 chunks of four layers, as the GB300 preset spells it out (pp_layout
    // "Et*4|(t*4|)*14tmL" with pp 2, vpp 8).
    return {"Et*4|(t*4|)*14t" + tail, "Megatron-Bridge performance config pp_layout for DeepSeek-V3 pp 2 vpp 8 "
                                      "(deepseek_workload_base_configs.py, GB300 preset)"};
  }
  if (pp == 8 && vpp == 4) {
    return {"Et|(tt|)*30" + tail, "Megatron-Bridge performance config pp_layout for DeepSeek-V3 pp 8 vpp 4 "
                                  "(deepseek_workload_base_configs.py, H100 preset)"};
  }
  return {"", fmt::format("DeepSeek-V3 (61 layers) over pp {} · vpp {}: Megatron-Bridge's DeepSeek-V3 recipe has no "
                          "pipeline layout for this (pp, vpp) and the row states none; covered: (4,1) (8,1) (4,2) "
                          "(16,1) (8,2) (4,4) (2,8) (8,4)",
                          pp, vpp)};
}

// Megatron-Bridge's DeepSeek-V3 performance presets whose layout is the row's own
// (scripts/performance/configs/deepseek/deepseek_workload_base_configs.py, V1, and the earlier
// per-GPU config functions): what they recompute, which TransformerEngine CUDA-graph scopes they
// capture and which flex dispatcher backend they run. Only exact matches (system, pp, vpp, ep,
// precision) are used; empty modules: no preset matches. Backend "" = the all-to-all dispatcher.
//   GB200 (NVL72): moe_flex_dispatcher_backend "hybridep" in every preset version, and Bridge's
//     apply_flex_dispatcher_backend turns it into the flex dispatcher on GB200 in every helper
//     version (the first ones: "HybridEP is applicable only to MoE models on GB200 GPUs with NVL72").
//   H100 1024 GPUs (tp 2, pp 8, vpp 4, ep 64): enable_deepep=True in every earlier config function
//     (deepseek_v3_h100_1024gpus_bf16_config and its variants) and a flex backend in the presets;
//     DeepEP runs on Hopper under every helper version. Recompute mla_up_proj and mlp in all. The
//     earlier functions also turned on the 1F1B all-to-all overlap, the presets turn it off: not
//     applied (which one a release ran is not established).
//   B200 (pp 16, ep 8): the presets name "hybridep" too, but the first helper versions apply it
//     on GB200 only, and which one a release shipped is not established: all-to-all kept.
struct DeepSeekV3Preset {
  std::vector<std::string> recompute_modules, cuda_graph_scope;
  std::string flex_backend;
};
DeepSeekV3Preset deepseek_v3_bridge_preset(const std::string& system, int pp, int vpp, int ep,
                                           const std::string& precision) {
  if (system == "gb200-nvl72" && pp == 4 && vpp == 4 && ep == 64 && precision == "bf16") {
    return {{"mla_up_proj"}, {"attn", "moe_router", "moe_preprocess"}, "hybridep"};  // DEEPSEEK_V3_..._GB200_BF16_V1
  }
  if (system == "b200" && pp == 16 && vpp == 1 && ep == 8) return {{"mla_up_proj"}, {}, ""};  // ..._B200_V1
  if (system == "h100-sxm" && pp == 8 && vpp == 4 && ep == 64) {
    return {{"mla_up_proj", "mlp"}, {}, "deepep"};  // ..._H100_V1, deepseek_v3_h100_1024gpus_*_config
  }
  return {};
}

// Megatron-Bridge's Llama 3 performance presets (scripts/performance/configs/llama3/
// workload_base_configs.py; two versions agree on these): what a preset adds beyond the layout
// the row states — activation offload of whole layers for the Megatron-FSDP 70B presets, local
// full-iteration CUDA graphs for the 8B (and one 70B) presets. Applied only when the row's layout
// is the preset's (tp 1, pp 1, cp 1, FSDP, and the preset's micro-batch size; the B200 BF16 70B
// preset: tp 2, pp 4, cp 2, vpp 5); `gpu` is "gb300", "gb200", "b200" or "" (no preset).
struct Llama3Preset {
  int cpu_offloading_num_layers = 0;
  bool full_iteration_graph = false;
};
Llama3Preset llama3_bridge_preset(const std::string& gpu, const std::string& key, const std::string& precision,
                                  int tp, int pp, int vpp, int cp, long long mbs, bool fsdp) {
  const bool bf16 = !has(precision, "fp8"), cs = has(precision, "fp8-cs"), mx = has(precision, "fp8-mx");
  const bool flat = tp == 1 && pp == 1 && cp == 1;
  if (key == "llama3_70b") {
    if (flat && fsdp) {
      if (gpu == "gb300" && mbs == 2 && bf16) return {30, false};
      if (gpu == "gb300" && mbs == 2 && cs) return {20, false};
      if (gpu == "gb200" && mbs == 1 && bf16) return {20, false};
      if (gpu == "gb200" && mbs == 2 && cs) return {40, false};
      if (gpu == "b200" && mbs == 1 && cs) return {5, false};
    }
    if (gpu == "b200" && bf16 && tp == 2 && pp == 4 && cp == 2 && vpp == 5) return {0, true};
    return {};
  }
  // Llama 3.1 405B (llama31_workload_base_configs.py, V1; two versions agree): the Megatron-FSDP
  // presets at tp 2, pp 1, cp 1 offload whole layers' activations.
  if (key == "llama31_405b" && tp == 2 && pp == 1 && cp == 1 && fsdp && mbs == 1) {
    if (gpu == "gb300" && bf16) return {40, false};
    if (gpu == "gb300" && cs) return {10, false};
    if (gpu == "gb200" && cs) return {92, false};
    return {};
  }
  if (key == "llama3_8b" && flat && !fsdp) {
    if (gpu == "gb300" && mbs == 4) return {0, true};
    if (gpu == "gb200" && mbs == 2 && (bf16 || mx)) return {0, true};
    if (gpu == "b200" && mbs == 2) return {0, true};
  }
  return {};
}

// Sliding-window attention written as "alternating full / sliding-window(128) attention with
// sinks" (GPT-OSS): the window in tokens, Megatron's window_attn_skip_freq 2 for "alternating"
// (the first layer windowed, as Megatron-Bridge's GPTOSSProvider), sinks when named. Returns
// what is missing, or "" when mapped.
std::string parse_sliding_window(const std::string& text, nlohmann::json& model, std::vector<std::string>& inf) {
  static const std::regex re(R"(sliding[- ]window\s*\(\s*(\d+)\s*\))");
  std::smatch w;
  if (!std::regex_search(text, w, re)) return "sliding-window attention without its window size";
  if (!has(text, "alternating")) return "sliding-window attention without its layer pattern (only \"alternating\" is read)";
  model["attention_window_tokens"] = std::stoll(w[1]);
  model["window_attn_skip_freq"] = 2;
  model["attention_sinks"] = has(text, "sink");
  inf.push_back(fmt::format("sliding window ({}, 0) on layers 1, 3, 5, ... and full causal attention on 2, 4, ... "
                            "(Megatron window_attn_skip_freq 2, as Megatron-Bridge's GPT-OSS provider){}",
                            w[1].str(), has(text, "sink") ? "; learned sinks in the fused kernel (no extra cost)" : ""));
  return "";
}

MappedRun map_simumax(const MeasuredRun& r, const ModelLoader& load_model) {
  MappedRun m;
  std::string name = r.model;
  if (name == "deepseekv2") name = "deepseek-v2";
  try {
    m.model = load_model(name);
  } catch (const std::exception& e) {
    return fail(m, fmt::format("no shipped model '{}': {}", name, e.what()));
  }
  const long long layers = as_int(*r.number("num_layers"));
  m.model["layer_num"] = layers;
  int dims[4] = {};
  const char* const dim_names[4] = {"tp", "pp", "ep", "dp"};
  for (int i = 0; i < 4; ++i) {
    const auto v = layout_int(*r.number(dim_names[i]));
    if (!v) return fail(m, fmt::format("{} {} is not a parallel size from 1 to {}", dim_names[i],
                                       *r.number(dim_names[i]), std::numeric_limits<int>::max()));
    dims[i] = *v;
  }
  const int tp = dims[0], pp = dims[1], ep = dims[2], dp = dims[3];
  const long long world = static_cast<long long>(tp) * pp * dp;
  if (world > std::numeric_limits<int>::max()) {
    return fail(m, fmt::format("tp·pp·dp = {} GPUs is more than {}", world, std::numeric_limits<int>::max()));
  }
  m.strategy = {{"seq_len", as_int(*r.number("seq_len"))},
                {"micro_batch_size", as_int(*r.number("micro_batch_size"))},
                {"micro_batch_num", as_int(*r.number("micro_batch_num"))},
                {"dtype", "bf16"},
                {"world_size", world},
                {"tp_size", tp},
                {"pp_size", pp},
                {"ep_size", ep},
                {"etp_size", 1},
                {"enable_sequence_parallel", true},
                {"zero_state", 1},
                {"tp_comm_overlap", false},
                {"cross_entropy_loss_fusion", false},
                {"use_flash_sdp", true},
                // Megatron's non-interleaved 1F1B schedule rejects overlap_p2p_comm: its send/recv
                // pairs block (docs/validation.md).
                {"overlap_p2p_comm", false}};
  const bool moe = m.model.value("model_type", "") == "moe";
  if (moe) m.strategy["moe_grouped_gemm"] = true;  // SimuMax's table prices grouped expert GEMMs
  // Megatron v0.12's chained dense + expert optimizers each gather every parameter when
  // overlap_param_gather is off (Megatron-LM issue #1527; data_parallel.h).
  if (moe) m.strategy["moe_double_param_gather"] = true;
  m.system = "a100-pcie-80g";
  // No compute/communication overlap on this PCIe machine: SimuMax's model of it, which reproduces
  // these runs, exposes every TP collective, and the measured per-micro-batch slope
  // (step(32 mb) - step(4 mb)) / 28 matches that model (docs/validation.md).
  m.system_patch = {{"efficiency", {{"comm_compute_slowdown", 1.0}}}};
  m.inferred = {"overlap_grad_reduce/overlap_param_gather off (Megatron v0.12 defaults; the source does not list them)",
                "no compute/communication overlap on this PCIe machine (comm_compute_slowdown 1: SimuMax's model of "
                "it exposes every TP collective; the measured per-micro-batch slopes agree)",
                "recompute none (not stated)", "etp 1 (Megatron default for these runs: expert TP not stated)"};
  if (pp > 1) {
    m.inferred.push_back("blocking pipeline send/recv (overlap_p2p_comm false: Megatron's non-interleaved 1F1B "
                         "schedule does not overlap p2p communication)");
  }
  if (moe) {
    m.inferred.push_back("MoE grouped GEMM on (SimuMax's table prices grouped expert GEMMs)");
    m.inferred.push_back("parameter all-gather twice per step (Megatron v0.12: the dense and expert optimizers of its "
                         "ChainedOptimizer each call start_param_sync, Megatron-LM issue #1527)");
  }
  m.layout = fmt::format("tp{} pp{} vpp1 cp1 ep{} dp{}", tp, pp, ep, dp);
  m.ok = true;
  return m;
}

}  // namespace

SystemChoice system_for_gpu(const std::string& gpu_type) {
  const std::string g = lower(gpu_type);
  SystemChoice c;
  if (has(g, "gb300")) {
    c.system = "gb300-nvl72";
  } else if (has(g, "b300")) {
    c.system = "b300";
  } else if (has(g, "gb200")) {
    c.system = "gb200-nvl72";
  } else if (has(g, "b200")) {
    c.system = "b200";
  } else if (has(g, "h200")) {
    c.system = "h200";
  } else if (has(g, "h100")) {
    if (has(g, "pcie")) {
      c.system = "h100-pcie";
    } else {
      c.system = "h100-sxm";
      if (has(g, "96gb") && !has(g, "hbm2e")) {
        // A 96 GB H100 of unstated memory: only the capacity is known.
        c.patch = {{"device", {{"memory_gb", 102.7}}}};
        c.note = "96 GB H100 simulated as h100-sxm with memory_gb 102.7 (96 GiB less the driver's share); the "
                 "memory type is not stated: the SXM's peaks and bandwidth assumed";
      } else if (has(g, "96gb")) {
        // 96 GiB of HBM2e less the driver's share on the 80 GiB part (81920 - 81559 MiB): 97943 MiB.
        // The one source of such rows (torchtitan's Dec 2024 benchmark) gives 2.4 TB/s of HBM2e
        // and says the peak lies between the H100 SXM's and the H100 NVL's without knowing it:
        // the midpoint of the two parts' dense figures (gpus.csv) is taken for every dtype.
        c.patch = {{"device",
                    {{"memory_gb", 102.7},
                     {"hbm_gb_s", 2400},
                     {"peak_tflops",
                      {{"bf16", (989 + 835.5) / 2}, {"fp16", (989 + 835.5) / 2}, {"fp8", (1979 + 1670.5) / 2},
                       {"tf32", (494.5 + 417.5) / 2}, {"fp32", (67 + 60) / 2.0}}}}}};
        c.note = "96 GB HBM2e H100 (500 W) simulated as h100-sxm with memory_gb 102.7 (96 GiB less the driver's "
                 "share, as the 80 GB part reports 81559 MiB), HBM at 2.4 TB/s (stated by the source) and peaks "
                 "midway between the H100 SXM's and the H100 NVL's (the source: between the two, exact value "
                 "unknown): bf16 912.25, fp8 1824.75 TFLOP/s";
      } else if (!has(g, "sxm")) {
        c.note = "H100 form factor not stated: SXM 80GB assumed (h100-sxm)";
      } else if (has(g, "assumed")) {
        c.note = "H100 SXM 80GB as assumed by the source (h100-sxm)";
      }
    }
  } else if (has(g, "a100")) {
    if (has(g, "pcie")) {
      c.system = "a100-pcie-80g";
    } else {
      c.system = "a100-sxm-80g";
      if (!has(g, "sxm")) c.note = "A100 form factor not stated: SXM4 80GB assumed (a100-sxm-80g)";
    }
  } else if (has(g, "mi300")) {
    c.system = "mi300x";
  }
  return c;
}

MappedRun map_run(const MeasuredRun& r, const ModelLoader& load_model) {
  if (r.format == RunFormat::simumax) return map_simumax(r, load_model);
  MappedRun m;
  auto& inf = m.inferred;
  const Framework fw = framework_of(r);
  const std::string name = lower(r.model);
  const auto num = [&](const char* c) { return r.number(c); };

  // ---- System.
  const SystemChoice sys = system_for_gpu(r.gpu_type);
  if (sys.system.empty()) return fail(m, fmt::format("no shipped system for gpu_type '{}'", r.gpu_type));
  m.system = sys.system;
  m.system_patch = sys.patch;
  if (!sys.note.empty()) inf.push_back(sys.note);

  // ---- Model.
  for (const char* c : {"num_layers", "hidden_size", "num_attention_heads", "seq_len", "num_gpus"}) {
    if (!num(c)) return fail(m, fmt::format("missing {} (the source does not give it)", c));
  }
  const std::string attn = lower(r.text("attention_type"));
  const bool moe = lower(r.text("model_class")) == "moe";
  nlohmann::json& md = m.model;
  md = {{"model_name", r.model},
        {"layer_num", as_int(*num("num_layers"))},
        {"hidden_size", as_int(*num("hidden_size"))},
        {"head_num", as_int(*num("num_attention_heads"))}};
  if (num("num_kv_heads")) md["kv_head_num"] = as_int(*num("num_kv_heads"));
  if (num("head_dim")) md["head_size"] = as_int(*num("head_dim"));
  const std::string window_problem = has(attn, "sliding") ? parse_sliding_window(attn, m.model, inf) : "";
  if (!window_problem.empty()) return fail(m, window_problem);
  if (has(attn, "mla")) {
    if (!parse_mla(attn, md)) return fail(m, "MLA attention without q_lora/kv_lora/qk_head/qk_rope/v_head parameters");
    if (!num("head_dim")) md["head_size"] = md["qk_head_dim"];
  }
  if (num("vocab_size")) {
    md["vocab_size"] = as_int(*num("vocab_size"));
  } else if (has(name, "gpt")) {
    md["vocab_size"] = 51200;
    inf.push_back("vocab 51200 (GPT-3 BPE as in NeMo's GPT-3 configs)");
  } else if (has(name, "nemotron")) {
    md["vocab_size"] = 256000;
    inf.push_back("vocab 256000 (Nemotron tokenizer)");
  } else if (has(name, "grok")) {
    md["vocab_size"] = 131072;
    inf.push_back("vocab 131072 (Grok-1 tokenizer)");
  } else {
    return fail(m, "missing vocab_size");
  }
  const std::string act = lower(r.text("activation"));
  if (act == "gelu" || act == "squared_relu") {
    md["use_swiglu"] = false;
    if (act == "squared_relu") inf.push_back("squared-ReLU MLP modelled as a two-GEMM MLP (same shapes as GeLU)");
  } else if (has(act, "swiglu") || has(act, "gated")) {
    md["use_swiglu"] = true;
    if (act != "swiglu") inf.push_back(fmt::format("'{}' modelled as a gated (SwiGLU-shaped) MLP", r.text("activation")));
  } else {
    return fail(m, fmt::format("activation '{}' not recognised", r.text("activation")));
  }
  // Architecture family conventions (norm, positions, tied embeddings, biases).
  if (has(name, "gpt") && act == "gelu") {
    md["norm_type"] = "layernorm";
    md["position_embedding_type"] = "learned_absolute";
    md["untie_embeddings_and_output_weights"] = false;
    md["add_bias_linear"] = true;
    inf.push_back("GPT conventions: LayerNorm, learned positions, tied embeddings, biases");
  } else if (has(name, "mpt")) {
    md["norm_type"] = "layernorm";
    md["position_embedding_type"] = "learned_absolute";
    md["untie_embeddings_and_output_weights"] = false;
    inf.push_back("MPT conventions: LayerNorm, learned positions (per notes), tied embeddings, no biases");
  } else if (has(name, "nemotron")) {
    md["norm_type"] = "layernorm";
  } else if (has(name, "gpt oss") || has(name, "gpt-oss")) {
    md["add_bias_linear"] = true;
    inf.push_back("GPT-OSS conventions (Megatron-Bridge GPTOSSProvider): RMSNorm, RoPE, untied embeddings, biases on "
                  "q/k/v/o and expert linear layers");
  }
  if (moe) {
    for (const char* c : {"moe_num_experts", "moe_topk", "moe_ffn_hidden_size"}) {
      if (!num(c)) return fail(m, fmt::format("MoE row without {}", c));
    }
    md["model_type"] = "moe";
    md["expert_num"] = as_int(*num("moe_num_experts"));
    md["topk"] = as_int(*num("moe_topk"));
    md["moe_ffn_hidden_size"] = as_int(*num("moe_ffn_hidden_size"));
    if (num("moe_shared_expert_ffn_hidden_size"))
      md["moe_shared_expert_intermediate_size"] = as_int(*num("moe_shared_expert_ffn_hidden_size"));
    const long long dense = num("moe_first_k_dense_layers") ? as_int(*num("moe_first_k_dense_layers")) : 0;
    md["dense_layers"] = dense;
    // Token policy: a row marked token-dropping (moe_token_policy, or "(tokendrop)" in the model
    // name as Megatron-Bridge's tables write it) runs Megatron-Bridge's apply_moe_token_drop
    // defaults: capacity factor 1.0, each expert's input padded to its capacity (fixed shapes, no
    // routing-count copy to the host). Anything else is dropless, Megatron's default.
    const std::string policy = lower(r.text("moe_token_policy"));
    if (!policy.empty() && !has(policy, "dropless") && !has(policy, "drop")) {
      return fail(m, "moe_token_policy '" + r.text("moe_token_policy") +
                         "' is not understood (expected dropless or tokendrop)");
    }
    const bool token_drop = (has(policy, "drop") && !has(policy, "dropless")) || has(lower(r.model), "tokendrop");
    if (token_drop) {
      md["capacity"] = 1.0;
      md["moe_pad_expert_input_to_capacity"] = true;
      inf.push_back("token dropping as Megatron-Bridge's apply_moe_token_drop sets it: capacity factor 1.0, expert "
                    "inputs padded to capacity");
    }
    if (num("ffn_hidden_size")) {
      md["intermediate_size"] = as_int(*num("ffn_hidden_size"));
    } else if (dense == 0) {
      md["intermediate_size"] = md["moe_ffn_hidden_size"];  // unused: every layer is MoE
    } else {
      return fail(m, "MoE row with dense layers but no ffn_hidden_size");
    }
  } else {
    if (!num("ffn_hidden_size")) return fail(m, "missing ffn_hidden_size");
    md["intermediate_size"] = as_int(*num("ffn_hidden_size"));
  }

  // ---- Strategy: layout.
  // Layout columns as ints, checked before the cast (0 where a value is out of range: refused below).
  const auto layout_dim = [&](const char* c, int dflt) { return num(c) ? layout_int(*num(c)).value_or(0) : dflt; };
  for (const char* c : {"num_gpus", "tp", "pp", "vpp", "cp", "ep", "etp"}) {
    if (num(c) && !layout_int(*num(c))) {
      return fail(m, fmt::format("{} {} is not a count from 1 to {}", c, *num(c), std::numeric_limits<int>::max()));
    }
  }
  const int gpus = layout_dim("num_gpus", 0);
  const int tp = layout_dim("tp", 1), pp = layout_dim("pp", 1);
  int vpp = std::max(1, layout_dim("vpp", 1));
  const int cp = layout_dim("cp", 1), ep = layout_dim("ep", 1);
  if (!num("tp")) inf.push_back("tp 1 (not stated)");
  if (!num("pp")) inf.push_back("pp 1 (not stated)");
  if (!num("vpp") && pp == 8 && has(lower(r.source), "dgxc") && has(lower(r.text("model_key")), "nemotron4_340b")) {
    // DGX Cloud benchmarking's Nemotron4-340B recipe interleaves 12 virtual stages on its pp 8
    // (nemotron/configure.sh: TP=8 PP=8 VP=12; the v25.05 README's H100 table: VP 12); its v25.04
    // README tables leave VP out.
    vpp = 12;
    inf.push_back("vpp 12 (DGX Cloud benchmarking Nemotron4-340B recipe: nemotron/configure.sh VP=12, the v25.05 "
                  "README's VP 12; the v25.04 table leaves it out)");
  }
  if (!num("vpp") && pp > 1 && fw == Framework::torchtitan && has(lower(r.text("notes")), "interleaved 1f1b")) {
    // torchtitan (Dec 2024) builds two stages per rank for a multi-stage schedule such as
    // Interleaved 1F1B when no split points are given (pipelining_utils.generate_split_points:
    // num_stages_per_rank = 2), one for 1F1B.
    vpp = 2;
    inf.push_back("vpp 2 (torchtitan's Interleaved 1F1B: two stages per rank by default, generate_split_points)");
  }
  // Megatron-Bridge rows: the framework's published recipes and performance configs decide what
  // the row leaves unstated (expert TP, DeepSeek-V3's pipeline layout).
  const bool bridge = has(lower(r.text("framework")), "bridge");
  const std::string key = lower(r.text("model_key"));
  int etp = 1;
  if (moe) {
    if (num("etp")) {
      etp = layout_dim("etp", 1);
    } else if (bridge && (key == "deepseek_v3" || key.rfind("qwen3", 0) == 0)) {
      // Megatron-Bridge's performance workloads for these MoE models set expert_tensor_parallel_size=1
      // in their base config (scripts/performance/configs/{deepseek,qwen}/*_workload_base_configs.py).
      etp = 1;
      if (tp > 1) {
        inf.push_back("etp 1 (Megatron-Bridge performance config: expert_tensor_parallel_size=1 for DeepSeek-V3 and "
                      "Qwen3 MoE workloads)");
      }
    } else {
      etp = tp;
      const long long expert_group = static_cast<long long>(ep) * tp * pp;
      if (tp > 1 && expert_group > 0 && gpus % expert_group != 0) {
        // Megatron's default etp = tp would need ep·tp·pp ranks to divide the GPUs; only etp 1 fits.
        etp = 1;
        inf.push_back(fmt::format("etp 1 (expert TP unstated; Megatron's default etp = tp = {} needs ep·etp·pp = {} to "
                                  "divide the {} GPUs)",
                                  tp, expert_group, gpus));
      } else if (tp > 1) {
        inf.push_back(fmt::format("etp {} (Megatron default: expert TP = TP)", tp));
      }
    }
  }
  // In 64 bits: three counts of up to INT_MAX each.
  const long long tp_pp_cp = static_cast<long long>(tp) * pp * cp;
  if (tp_pp_cp <= 0 || gpus % tp_pp_cp != 0)
    return fail(m, fmt::format("{} GPUs are not a multiple of tp·pp·cp = {}", gpus, tp_pp_cp));
  const int dp = static_cast<int>(gpus / tp_pp_cp);
  m.layout = fmt::format("tp{} pp{} vpp{} cp{} ep{} dp{}", tp, pp, vpp, cp, ep, dp);
  nlohmann::json& st = m.strategy;
  st = {{"seq_len", as_int(*num("seq_len"))},
        {"world_size", gpus},
        {"tp_size", tp},
        {"pp_size", pp},
        {"cp_size", cp},
        {"interleaving_size", vpp}};
  // Layer counts that do not divide the pipeline: Megatron's recipes count the embedding and the
  // loss as one layer each (account_for_embedding/loss_in_pipeline_split), so the first and last
  // stages hold one layer fewer.
  const long long L = md["layer_num"].get<long long>();
  if (bridge && key == "deepseek_v3" && pp > 1) {
    // Megatron-Bridge's DeepSeek-V3 runs name every stage's layers instead (deepseek_v3_bridge_layout).
    const bool with_mtp = has(lower(r.model), "w/ mtp") || has(lower(r.text("notes")), "mtp: with mtp");
    if (with_mtp) {
      md["mtp_num_layers"] = 1;  // the recipe's mtp_num_layers = 1
      inf.push_back("one MTP depth (row: with MTP; Megatron-Bridge DeepSeek-V3 recipe mtp_num_layers=1)");
    }
    const DeepSeekV3Layout layout = deepseek_v3_bridge_layout(pp, vpp, L, with_mtp);
    if (layout.text.empty()) return fail(m, layout.source);
    st["pipeline_layout"] = layout.text;
    inf.push_back(fmt::format("pipeline layout \"{}\" ({})", layout.text, layout.source));
  } else if (pp > 1 && L % (static_cast<long long>(pp) * vpp) != 0) {
    const long long ppv = static_cast<long long>(pp) * vpp;
    // Split over the pp·vpp virtual chunks as Megatron does: the first (last) chunk one layer fewer.
    if ((L + 2) % ppv == 0) {
      st["account_for_embedding_in_pipeline_split"] = true;
      st["account_for_loss_in_pipeline_split"] = true;
      inf.push_back("uneven pipeline: embedding and loss counted as one layer each (first/last virtual chunk one "
                    "layer fewer)");
    } else if ((L + 1) % ppv == 0) {
      st["account_for_loss_in_pipeline_split"] = true;
      inf.push_back("uneven pipeline: loss counted as one layer (last virtual chunk one layer fewer)");
    }
  }
  if (moe) {
    st["ep_size"] = ep;
    st["etp_size"] = etp;
    inf.push_back("forced-balanced MoE routing (moe_token_imbalance_factor 1.0)");
    if (fw == Framework::megatron) {
      // Host dispatch (simulator/host_dispatch.h): Megatron-Bridge / NeMo MoE recipes set
      // moe_grouped_gemm True and leave cuda_graph_impl "none"; the row names neither, nor the dispatcher.
      st["moe_grouped_gemm"] = true;
      inf.push_back("MoE grouped GEMM on, all-to-all token dispatcher, no CUDA graphs (Megatron-Bridge/NeMo MoE "
                    "recipe defaults: moe_grouped_gemm True, cuda_graph_impl \"none\"; a DeepSeek-V3 performance "
                    "preset below may name a flex dispatcher instead)");
      if (megatron_core_0_14_or_later(r)) {
        // Megatron-Core 0.14+: the dispatcher carries each routed token's probability and
        // TEGroupedMLP applies it in the (weighted) SwiGLU, so the un-permutation keeps no copy of
        // the expert outputs for the probabilities' gradient.
        st["dispatch_probs"] = true;
        inf.push_back("router probabilities sent with the tokens and applied in the expert activation (Megatron-Core "
                      "0.14 and later, NeMo / Megatron-Bridge containers 25.09 and later): the un-permutation keeps "
                      "no expert outputs");
      }
      if (bridge && key == "qwen3_235b_a22b" && sys.system == "h100-sxm") {
        // Bridge's H100 presets for this model (the row's exact layout: 256 GPUs, tp 2, pp 8, vpp 4,
        // ep 32) set moe_a2a_overlap=True: the EP all-to-all of one micro-batch hides behind the
        // compute of another (Megatron's overlap_moe_expert_parallel_comm).
        st["overlap_moe_expert_parallel_comm"] = true;
        inf.push_back("EP all-to-all overlapped with compute (Megatron-Bridge Qwen3-235B H100 preset: "
                      "moe_a2a_overlap=True, scripts/performance/configs/qwen/qwen3_workload_base_configs.py)");
      }
    }
  } else if (ep > 1) {
    return fail(m, "ep > 1 on a dense model");
  }

  // ---- Batch.
  long long mbs = num("micro_batch_size") ? as_int(*num("micro_batch_size")) : 1;
  if (!num("micro_batch_size")) inf.push_back("micro-batch size 1 (recipe default when unstated)");
  if (fw == Framework::torchtitan && pp > 1) {
    // torchtitan (Dec 2024) splits the local batch into one micro-batch per pipeline stage by
    // default (build_pipeline_schedule: n_microbatches = pp degree x stages per rank).
    const long long stages = static_cast<long long>(pp) * vpp;
    if (mbs % stages != 0) return fail(m, "torchtitan local batch not divisible by the number of pipeline stages");
    inf.push_back(fmt::format("local batch {} split into {} micro-batches of {} (torchtitan default: one per stage)",
                              mbs, stages, mbs / stages));
    st["micro_batch_num"] = stages;
    mbs /= stages;
  } else if (num("global_batch_size")) {
    st["global_batch_size"] = as_int(*num("global_batch_size"));
    if (num("grad_accum") && num("micro_batch_size")) {
      // A row that states all three must satisfy gbs = mbs · dp · grad_accum; when it does not, one
      // of its columns is wrong and the run's actual batch is in doubt: said, never corrected.
      const long long gbs = as_int(*num("global_batch_size")), ga = as_int(*num("grad_accum"));
      if (gbs != mbs * dp * ga) {
        m.warnings.push_back(fmt::format(
            "the row's batch columns disagree: global_batch_size {} != micro_batch_size {} x dp {} x grad_accum {} "
            "(= {}); simulated with the stated global batch and micro-batch size",
            gbs, mbs, dp, ga, mbs * dp * ga));
      }
    }
  } else if (num("grad_accum")) {
    st["micro_batch_num"] = as_int(*num("grad_accum"));
  } else {
    st["micro_batch_num"] = 1;
    inf.push_back("one micro-batch per step (no gradient accumulation stated)");
  }
  st["micro_batch_size"] = mbs;

  // ---- Precision.
  std::string prec = lower(r.text("precision"));
  if (bridge && prec == "fp8") {
    // Megatron-Bridge's 26.02 tables write "FP8" beside "MXFP8" and "NVFP4" where the 25.11 tables
    // wrote "FP8-CS": the same layouts measure within a few percent of their 25.11 FP8-CS figures
    // (H100 Llama 3 70B 1,621 vs 1,602 tok/s/GPU), so bare FP8 is per-tensor current scaling.
    prec = "fp8-cs";
    inf.push_back("FP8 read as FP8-CS, per-tensor current scaling (Megatron-Bridge tables write FP8 for what their "
                  "25.11 tables called FP8-CS; same layouts, figures within a few percent)");
  }
  if (has(prec, "fp4")) {
    return fail(m, "precision '" + r.text("precision") +
                       "': FP4 training (NVFP4) is not modelled (no FP4 GEMM efficiency, recipe or memory format)");
  }
  st["dtype"] = prec.rfind("fp16", 0) == 0 ? "fp16" : "bf16";
  if (prec.empty()) inf.push_back("bf16 (precision not stated)");
  if (has(prec, "fp8")) {
    st["fp8"] = true;
    std::string recipe;
    if (has(prec, "mx")) {
      recipe = "mxfp8";
    } else if (has(prec, "block")) {
      recipe = "blockwise";  // DeepSeek-style 128x128 weight / 1x128 activation scaling
    } else if (has(prec, "-cs") || has(prec, "current scaling") || has(prec, "torchao")) {
      recipe = "tensorwise";
    } else {
      recipe = "delayed";
      inf.push_back("FP8 recipe delayed (the source names none; Megatron/TE default)");
    }
    st["fp8_recipe"] = recipe;
    if (has(prec, "torchao")) {
      // torchao's Float8Linear (torchtitan's float8 converter): dynamic per-tensor scaling,
      // high-precision inputs kept for backward, weights cast on every call.
      st["fp8_implementation"] = "torchao";
      inf.push_back("FP8 linears by torchao's Float8Linear (high-precision inputs saved, no FP8 weight cache)");
    }
  }

  // ---- Sharding and optimizer.
  const std::string fsdp = lower(r.text("fsdp")), dopt = lower(r.text("distributed_optimizer"));
  const bool is_fsdp = !fsdp.empty() && fsdp != "0";
  int zero = 1;
  if (is_fsdp && fw == Framework::torchtitan && pp > 1) {
    // torch.distributed.pipelining runs an FSDP2 stage's backward with gradient sync and
    // resharding off until the last micro-batch (one reduce-scatter per step), and torchtitan
    // sets reshard_after_forward False under PP: parameters stay gathered through the step and
    // fp32 unsharded gradients accumulate; only the optimizer state and master stay sharded.
    zero = 1;
    inf.push_back("FSDP under pipeline parallelism as ZeRO-1 (torchtitan / torch.distributed.pipelining keep the "
                  "stage's parameters and gradients unsharded until the last micro-batch)");
  } else if (is_fsdp) {
    zero = 3;
  } else if (dopt.rfind("no", 0) == 0) {
    zero = 0;
  } else if (dopt.empty()) {
    if (fw == Framework::megatron || fw == Framework::other) {
      inf.push_back("distributed optimizer on (NVIDIA recipe convention)");
    } else if (fw == Framework::megatron_legacy) {
      zero = 0;
      inf.push_back("no distributed optimizer (did not exist in 2021-22 Megatron)");
    } else {
      inf.push_back("distributed optimizer on (not stated)");
    }
  }
  st["zero_state"] = zero;
  if (zero == 3 && fw == Framework::maxtext && has(lower(r.source), "dgxc")) {
    // DGX Cloud benchmarking's MaxText recipe (maxtext/configure.sh, two stored versions agree):
    // ici_fsdp over the node's 8 GPUs and dcn_fsdp over the nodes, except from 64 nodes on, where
    // dcn_fsdp is 16 and dcn_data_parallelism takes the rest: FSDP over 128 GPUs, replicated.
    const int nodes = gpus / 8;
    if (gpus % 8 == 0 && nodes >= 64 && nodes % 16 == 0) {
      st["dp_replicate_size"] = nodes / 16;
      inf.push_back(fmt::format("FSDP over 128 GPUs x {} data-parallel replicas (DGX Cloud benchmarking "
                                "maxtext/configure.sh: dcn_fsdp_parallelism 16 and dcn_data_parallelism nodes / 16 "
                                "from 64 nodes on)",
                                nodes / 16));
    }
  }

  // ---- Sequence parallel.
  const std::string sp = lower(r.text("sequence_parallel"));
  bool sp_on = true;
  if (sp.rfind("yes", 0) == 0) {
    sp_on = true;
  } else if (sp.rfind("no", 0) == 0) {
    sp_on = false;
  } else if (tp > 1) {
    sp_on = fw != Framework::megatron_legacy;
    inf.push_back(sp_on ? "sequence parallel on (tp > 1; recipe convention)" : "sequence parallel off (pre-2022)");
  }
  st["enable_sequence_parallel"] = sp_on;

  // ---- Overlap.
  const std::string notes = lower(r.text("notes"));
  bool grad_overlap = false, tp_overlap = false;
  if (fw == Framework::megatron_legacy) {
    inf.push_back("no DP/TP overlap, no flash attention, dropout on (2021-22 Megatron)");
    st["use_flash_sdp"] = false;
    st["enable_dropout"] = true;
  } else if (fw == Framework::megatron || fw == Framework::other) {
    grad_overlap = true;
    tp_overlap = tp > 1 && sp_on;
    if (has(notes, "--overlap-grad-reduce")) {
      tp_overlap = tp > 1 && sp_on && has(notes, "--tp-comm-overlap");
    } else {
      inf.push_back(tp > 1 ? "overlap_grad_reduce, overlap_param_gather and tp_comm_overlap on (NVIDIA tuned recipe)"
                           : "overlap_grad_reduce and overlap_param_gather on (NVIDIA tuned recipe)");
    }
    const std::string fp8_recipe = st.value("fp8_recipe", "");
    const bool fp8_scaled = st.value("fp8", false) && (fp8_recipe == "delayed" || fp8_recipe == "tensorwise");
    // bf16 main gradients, reduced in bf16 (Megatron's grad_reduce_in_fp32 False).
    const auto bf16_gradients = [&st] {
      st["use_fp32_accum_grad"] = false;
      st["grad_reduce_in_bf16"] = true;
    };
    if (nemo2_or_bridge(r)) {
      st["cross_entropy_loss_fusion"] = true;
      inf.push_back("fused cross-entropy (cross_entropy_loss_fusion: the default of NeMo 2's GPTConfig and "
                    "Megatron-Bridge's GPTModelProvider)");
      // bf16 main gradients, reduced in bf16. NeMo 2's performance scripts build the recipe with
      // performance_mode=True and set trainer.plugins.grad_reduce_in_fp32 = False; Megatron-Bridge's
      // (scripts/performance/configs/<family>/*_llm_pretrain.py, set_<family>_common_configs for
      // Llama 3, Llama 3.1, DeepSeek-V3, Qwen3, GPT-OSS) set mixed_precision.grad_reduce_in_fp32 and
      // ddp.grad_reduce_in_fp32 to False.
      bf16_gradients();
      inf.push_back(has(lower(r.text("framework")), "bridge")
                        ? "bf16 main gradients, reduced in bf16 (Megatron-Bridge performance configs: "
                          "grad_reduce_in_fp32 False in every model family's common settings)"
                        : "bf16 main gradients, reduced in bf16 (NeMo 2 performance recipes: grad_reduce_in_fp32 False)");
      // NeMo 2's bf16_with_fp8_mixed / bf16_with_fp8_current_scaling_mixed and Megatron-Bridge's
      // bf16_with_fp8_{delayed,current}_scaling_mixed set fp8_param_gather = True; the
      // performance scripts keep it (they only turn the current-scaling recipe's BF16 first/last
      // layers off). MXFP8 (the recipes' versions disagree) and blockwise (False) are left off.
      if (fp8_scaled) {
        st["fp8_param_gather"] = true;
        inf.push_back("FP8 parameters, gathered in FP8 (fp8_param_gather: the framework's FP8 " + fp8_recipe +
                      " precision recipe; its performance scripts keep the first/last layers in FP8)");
      }
      // The performance scripts of both (Bridge scripts/performance, NeMo 2's perf helpers) turn
      // Megatron's precision-aware optimizer on for BF16 runs, and off again under Megatron-FSDP.
      if (!st.value("fp8", false) && zero < 3) {
        st["use_precision_aware_optimizer"] = true;
        inf.push_back("precision-aware optimizer (the performance scripts' BF16 setting): TE FusedAdam, fp32 moments, "
                      "master weights as bf16 remainders (10 bytes of state per parameter)");
      }
    } else if (has(lower(r.text("framework")), "nemo")) {
      // NeMo 1 (releases before 24.09): Apex distributed_fused_adam with a contiguous gradient
      // buffer in grad_sync_dtype, which NeMo-Framework-Launcher's performance configs
      // (gpt3/*_performance.yaml) and its H100 examples (examples/training/*/h100/*.sh) set to bf16.
      bf16_gradients();
      inf.push_back("bf16 gradient buffer, reduced in bf16 (NeMo 1 performance configs: distributed_fused_adam "
                    "with grad_sync_dtype bf16)");
      // NeMo 1 builds distributed_fused_adam with fp32 state for bf16 (O2) models and
      // store_param_remainders: the same state bytes and fused update as Megatron's
      // precision-aware optimizer with fp32 moments.
      if (st.value("dtype", "bf16") == "bf16") {
        st["use_precision_aware_optimizer"] = true;
        inf.push_back("optimizer state as Apex distributed_fused_adam keeps it for bf16 models: fp32 moments, master "
                      "weights as bf16 remainders (10 bytes per parameter)");
      }
    } else if (has(lower(r.text("source_ref")), "examples/llama")) {
      // Megatron-LM's examples/llama scripts (train_llama3_8b_h100_fp8.sh): --grad-reduce-in-bf16,
      // --cross-entropy-loss-fusion without --cross-entropy-fusion-impl (Megatron's default,
      // native: an fp32 copy of the logits) and, for FP8, --fp8-param-gather.
      bf16_gradients();
      st["cross_entropy_loss_fusion"] = true;
      st["cross_entropy_fusion_impl"] = "native";
      std::string what = "--grad-reduce-in-bf16, --cross-entropy-loss-fusion (Megatron's default native fused kernel)";
      if (fp8_scaled) {
        st["fp8_param_gather"] = true;
        what += ", --fp8-param-gather";
      }
      inf.push_back("Megatron-LM examples/llama script flags: " + what);
    }
  } else {
    grad_overlap = true;  // FSDP / DDP prefetch and bucketed reduce-scatter behind compute
    inf.push_back("gradient reduce and parameter gather overlapped with compute (FSDP/DDP default)");
    tp_overlap = has(notes, "asynctp") && tp > 1;
    if (fw == Framework::foundry) {
      // llm-foundry's models default loss_fn to 'fused_crossentropy' (flash-attn's cross-entropy
      // kernel), which its gpu-flash2 install provides; torchtitan upcasts the logits (unfused).
      st["cross_entropy_loss_fusion"] = true;
      inf.push_back("fused cross-entropy (llm-foundry's default loss_fn fused_crossentropy, flash-attn's kernel)");
    } else if (fw == Framework::torchtitan) {
      // torchtitan's loss (train.py at the benchmark's commits): F.cross_entropy(pred.float(), labels), eager.
      st["cross_entropy_implementation"] = "pytorch";
      inf.push_back("PyTorch cross-entropy on an fp32 copy of the logits (torchtitan's loss, eager)");
      if (torchtitan_eager(r)) {
        // Without torch.compile the block runs eager: torchtitan's RMSNorm (norm_type "rmsnorm",
        // the llama3 configs' default: fp32 statistics and normalise passes), SiLU and the product
        // as separate kernels, and RoPE as an fp32 complex product between two casts.
        st["use_fused_norm"] = false;
        st["use_fused_swiglu"] = false;
        st["use_fused_rope"] = false;
        inf.push_back("eager block (no torch.compile): unfused RMSNorm (torchtitan norm_type \"rmsnorm\"), SwiGLU and "
                      "RoPE");
      }
    }
  }
  if (has(notes, "tp comm overlap off") || has(notes, "no tp comm overlap")) tp_overlap = false;
  st["overlap_grad_reduce"] = grad_overlap;
  st["overlap_param_gather"] = grad_overlap && zero >= 1;
  st["tp_comm_overlap"] = tp_overlap;
  if ((fw == Framework::megatron || fw == Framework::megatron_legacy) && pp > 1 && vpp == 1) {
    // Megatron's non-interleaved 1F1B schedule rejects overlap_p2p_comm: its send/recv pairs block.
    st["overlap_p2p_comm"] = false;
    inf.push_back("blocking pipeline send/recv (Megatron's non-interleaved 1F1B schedule does not overlap p2p)");
  }

  // ---- Recompute.
  const std::string rc = lower(r.text("recompute"));
  const long long layers = md["layer_num"].get<long long>();
  const long long chunks = static_cast<long long>(pp) * vpp;
  const long long per_chunk = (layers + chunks - 1) / chunks;
  if (rc.rfind("full", 0) == 0) {
    st["recompute_granularity"] = "full_block";
    st["recompute_layer_num"] = per_chunk;
  } else if (has(rc, "attention core")) {
    st["recompute_granularity"] = "sdp_only";
    st["recompute_layer_num"] = per_chunk;
  } else if (has(rc, "selective (op)")) {
    st["recompute_granularity"] = "selective_op";
    st["recompute_layer_num"] = per_chunk;  // torchtitan wraps every transformer block
    inf.push_back("torchtitan op-level selective AC as selective_op: per block the outputs of SDPA and of every other "
                  "matmul are kept, the k, o and w3 projections and all element-wise ops rerun (Float8 linears alike: torchao's mm reaches the policy as aten.mm)");
  } else if (const DeepSeekV3Preset ds = bridge && key == "deepseek_v3" && rc.empty()
                                             ? deepseek_v3_bridge_preset(sys.system, pp, vpp, ep, prec)
                                             : DeepSeekV3Preset{};
             !ds.recompute_modules.empty()) {
    st["recompute_granularity"] = "selective_recompute";
    st["recompute_layer_num"] = per_chunk;  // Megatron's recompute_modules apply to every layer
    st["megatron_recompute"] = true;
    st["megatron_recompute_modules"] = ds.recompute_modules;
    if (!ds.cuda_graph_scope.empty()) st["cuda_graph_scope"] = ds.cuda_graph_scope;
    // Token dropping: Bridge's config functions turn DeepEP off with it ("Using token drop,
    // disabling DeepEP"); such rows keep the all-to-all dispatcher.
    const bool drop = md.value("moe_pad_expert_input_to_capacity", false);
    if (!ds.flex_backend.empty() && !drop) {
      st["moe_token_dispatcher_type"] = "flex";
      st["moe_flex_dispatcher_backend"] = ds.flex_backend;
    }
    inf.push_back(fmt::format("recompute of {}{}, {} (Megatron-Bridge DeepSeek-V3 performance preset of this layout, "
                              "deepseek_workload_base_configs.py and the earlier per-GPU config functions)",
                              fmt::join(ds.recompute_modules, ", "),
                              ds.cuda_graph_scope.empty()
                                  ? std::string()
                                  : fmt::format(", CUDA graphs on {}", fmt::join(ds.cuda_graph_scope, ", ")),
                              ds.flex_backend.empty() || drop
                                  ? std::string(drop ? "all-to-all dispatcher (token dropping: Bridge turns DeepEP off)"
                                                     : "all-to-all dispatcher (the preset's hybridep is applied on "
                                                       "GB200 only by the first Bridge helper versions)")
                                  : fmt::format("flex dispatcher over {}", ds.flex_backend == "deepep" ? "DeepEP"
                                                                                                        : "HybridEP")));
  } else if (rc.empty() && bridge && key == "gpt_oss_120b" && sys.system != "b300" &&
             sys.system != "gb300-nvl72") {
    // Every version of Megatron-Bridge's GPT-OSS 120B performance presets recomputes the norms and
    // the experts' activation on H100, B200 and GB200 (scripts/performance/configs/gpt_oss/
    // gpt_oss_workload_base_configs.py: recompute_modules=["layernorm", "moe_act"]); the GB300 /
    // B300 presets use TransformerEngine CUDA graphs instead and recompute nothing.
    st["recompute_granularity"] = "selective_recompute";
    st["recompute_layer_num"] = per_chunk;  // Megatron's recompute_modules apply to every layer
    st["megatron_recompute"] = true;
    st["megatron_recompute_modules"] = nlohmann::json::array({"layernorm", "moe_act"});
    inf.push_back("recompute of layernorm and moe_act (Megatron-Bridge GPT-OSS 120B performance presets for H100, "
                  "B200, GB200: recompute_modules [\"layernorm\", \"moe_act\"])");
  } else if (rc.empty() && fw == Framework::maxtext && has(lower(r.source), "dgxc")) {
    // DGX Cloud benchmarking's MaxText recipe passes remat_policy=${POLICY} with
    // POLICY="save_qkv_proj" (maxtext/configure.sh, every stored version).
    st["recompute_granularity"] = "save_qkv_proj";
    st["recompute_layer_num"] = per_chunk;
    inf.push_back("MaxText remat_policy save_qkv_proj on every layer (DGX Cloud benchmarking maxtext/configure.sh: "
                  "POLICY=\"save_qkv_proj\"): the block reruns in backward except its Q, K, V projections");
  } else if (rc.empty() && fw == Framework::maxtext) {
    // MaxText's base.yml defaults remat_policy to 'full' (every decoder layer rematerialised).
    st["recompute_granularity"] = "full_block";
    st["recompute_layer_num"] = per_chunk;
    inf.push_back("full recompute of every layer (not stated; MaxText's default remat_policy 'full')");
  } else if (rc.empty()) {
    inf.push_back("no activation recompute (not stated; recipe default)");
  } else if (rc != "none") {
    return fail(m, fmt::format("recompute '{}' not recognised", r.text("recompute")));
  }
  if (fw == Framework::torchtitan && cp > 1) {
    // torchtitan's context parallelism is PyTorch's (torch.distributed.tensor.experimental
    // context_parallel): a ring over the flash op with K, V repeated to the query heads and its
    // merging done as eager fp32 element-wise ops.
    st["cp_implementation"] = "pytorch";
    inf.push_back("context parallelism by PyTorch's context_parallel (torchtitan): ring steps merged by eager fp32 "
                  "element-wise ops, K, V sent at the query heads, dK, dV in fp32");
  }
  if (st.contains("recompute_granularity") && (fw == Framework::torchtitan || fw == Framework::maxtext)) {
    // Neither reruns a block's last GEMM: torchtitan wraps each block in PyTorch's non-reentrant
    // checkpoint (ptd_checkpoint_wrapper), whose early stop (on by default) ends the rerun once
    // every tensor backward saved is back, and torch.compile's partitioner recomputes only what
    // backward reads; JAX's remat prunes the recomputed jaxpr to what backward reads
    // (remat_partial_eval's dce_jaxpr). Megatron's CheckpointFunction reruns the whole block.
    st["recompute_early_stop"] = true;
    inf.push_back(fw == Framework::torchtitan
                      ? "recompute stops early (PyTorch non-reentrant checkpoint / torch.compile): each block's last GEMM "
                        "and residual add are not rerun"
                      : "recompute pruned to what backward reads (JAX remat): each block's last GEMM and residual add "
                        "are not rerun");
  }

  // ---- Megatron-Bridge Llama 3 presets: activation offload and full-iteration CUDA graphs.
  if (bridge && (key == "llama3_70b" || key == "llama3_8b" || key == "llama31_405b")) {
    const std::string g = lower(r.text("gpu_type"));
    const std::string gpu = has(g, "gb300") ? "gb300" : has(g, "gb200") ? "gb200" : has(g, "b200") ? "b200" : "";
    const Llama3Preset p = llama3_bridge_preset(gpu, key, prec, tp, pp, vpp, cp, mbs, st.value("zero_state", 1) == 3);
    if (p.cpu_offloading_num_layers > 0) {
      st["cpu_offloading_num_layers"] = p.cpu_offloading_num_layers;
      inf.push_back(fmt::format("activations of {} layers offloaded to the host (Megatron-Bridge {} {} preset of "
                                "this layout, cpu_offloading_num_layers {})",
                                p.cpu_offloading_num_layers, key == "llama31_405b" ? "Llama 3.1 405B" : "Llama 3 70B",
                                gpu, p.cpu_offloading_num_layers));
    }
    if (p.full_iteration_graph) {
      st["cuda_graph_scope"] = "full_iteration";
      inf.push_back(fmt::format("full-iteration CUDA graph (Megatron-Bridge Llama 3 {} preset of this layout: "
                                "cuda_graph_impl local, scope full_iteration)", gpu));
    }
  }

  // ---- Attention implementation (efficiency.attention_implementations; docs/validation.md).
  // llm-foundry's MPT benchmark script (at the README's commit) installs flash-attn 2 (`.[gpu-flash2]`,
  // attn_impl flash); the tables may predate it (docs/validation.md "llm-foundry's attention kernel":
  // an older kernel fits their sequence trend, but not the other sources' level, so flash2 stays)
  // and torchtitan (Dec 2024) calls PyTorch SDPA, whose flash backend is FlashAttention-2 (cuDNN
  // SDPA is opt-in since pytorch/pytorch#138522; torchtitan #1196 picks cuDNN on B200 only).
  // Megatron/NeMo run Transformer Engine's fused (cuDNN) attention: the system default.
  if ((fw == Framework::foundry || fw == Framework::torchtitan) && st.value("use_flash_sdp", true)) {
    // The shipped systems with a FlashAttention-2 entry (Ampere and Hopper; none for Blackwell/MI300X).
    static const char* const kFlash2Systems[] = {"h100-sxm", "h200", "h100-pcie", "a100-sxm-80g", "a100-pcie-80g"};
    const bool known = std::any_of(std::begin(kFlash2Systems), std::end(kFlash2Systems),
                                   [&](const char* s) { return m.system == s; });
    if (known) {
      m.system_patch["efficiency"]["attention_implementation"] = "flash2";
      inf.push_back(fw == Framework::foundry ? "attention FlashAttention-2 (llm-foundry gpu-flash2, attn_impl flash)"
                                             : "attention FlashAttention-2 (PyTorch SDPA flash backend, torchtitan 2024)");
    } else {
      inf.push_back("attention: FlashAttention-2 run, priced with the system's default attention (no FlashAttention-2 "
                    "figure for " + m.system + ")");
    }
  }
  m.ok = true;
  return m;
}

}  // namespace calisim::calibration
