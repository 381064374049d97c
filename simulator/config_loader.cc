#include "simulator/config_loader.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <optional>

#include "core/error.h"
#include "simulator/json_fields.h"
#include "simulator/layer_placement.h"
#include "simulator/rank_placement.h"

namespace calisim {
namespace {

// Hybrid sharding's replicas each hold a sharded copy of the state: with zero_state 0 nothing is
// sharded. The problem in words, or "" when the pair is valid.
std::string replicas_without_sharding(const StrategyConfig& s) {
  if (s.dp_replicate_size <= 1 || s.zero_state != 0) return "";
  return fmt::format("{} replicas of a sharded state need zero_state 1, 2 or 3 (zero_state 0 replicates everything "
                     "already); use 1",
                     s.dp_replicate_size);
}

}  // namespace

// Sliding-window attention and sinks (model_config.h): attention_window_tokens W (Megatron
// --window-size W,0), which layers are windowed (window_attn_skip_freq N: Megatron's 1-based
// layer_number % N != 0 is windowed, so N = 2 windows layers 1, 3, 5, ... = 0-based 0, 2, 4, ...;
// or attention_layer_types, Hugging Face's per-layer list; neither: every layer), attention_sinks.
void read_attention_window(FieldReader& r, ModelConfig& m) {
  m.attention_window_tokens = r.nonneg_int_or("attention_window_tokens", 0);
  m.attention_sinks = r.bool_or("attention_sinks", false);
  const std::optional<std::int64_t> freq = r.opt_int("window_attn_skip_freq");
  const nlohmann::json* types = r.opt_array("attention_layer_types");
  if (m.attention_window_tokens == 0) {
    if (freq) r.fail("window_attn_skip_freq", "needs attention_window_tokens > 0 (no window is set)");
    if (types) r.fail("attention_layer_types", "needs attention_window_tokens > 0 (no window is set)");
    return;
  }
  if (freq && types) r.fail("attention_layer_types", "give either window_attn_skip_freq or attention_layer_types, not both");
  const auto layers = static_cast<std::size_t>(m.layer_num);
  m.window_layers.assign(layers, true);
  if (freq) {
    if (*freq < 1) r.fail("window_attn_skip_freq", fmt::format("expected an integer >= 1, got {}", *freq));
    for (std::size_t l = 0; l < layers; ++l) m.window_layers[l] = static_cast<std::int64_t>(l + 1) % *freq != 0;
  } else if (types) {
    if (types->size() != layers) {
      r.fail("attention_layer_types", fmt::format("expected one entry per layer (layer_num = {}), got {}", layers,
                                                  types->size()));
    }
    for (std::size_t l = 0; l < layers; ++l) {
      const nlohmann::json& t = (*types)[l];
      if (t == "sliding_attention") m.window_layers[l] = true;
      else if (t == "full_attention") m.window_layers[l] = false;
      else r.fail(fmt::format("attention_layer_types[{}]", l),
                  "expected \"sliding_attention\" or \"full_attention\", got " + describe_json(t));
    }
  }
}

ModelConfig parse_model(const nlohmann::json& doc, const std::string& file, std::vector<std::string>* not_modeled) {
  FieldReader r(doc, file, "");
  ModelConfig m;
  m.model_name = r.string_or("model_name", "");
  const std::string type = r.string_or("model_type", "");
  m.hidden_size = r.req_positive_int("hidden_size");
  m.head_num = r.req_positive_int("head_num");
  m.kv_head_num = r.positive_int_or("kv_head_num", m.head_num);
  m.head_size = r.positive_int_or("head_size", m.hidden_size / m.head_num);
  m.intermediate_size = r.req_positive_int("intermediate_size");
  m.layer_num = r.req_positive_int("layer_num");
  m.vocab_size = r.req_positive_int("vocab_size");
  m.make_vocab_size_divisible_by = r.positive_int_or("make_vocab_size_divisible_by", 128);
  m.use_swiglu = r.bool_or("use_swiglu", false);
  m.expert_num = r.positive_int_or("expert_num", 1);
  m.topk = r.nonneg_int_or("topk", 0);
  m.moe_ffn_hidden_size = r.positive_int_or("moe_ffn_hidden_size", m.intermediate_size);
  m.moe_shared_expert_intermediate_size = r.nonneg_int_or("moe_shared_expert_intermediate_size", 0);
  m.dense_layers = r.nonneg_int_or("dense_layers", 0);
  m.capacity = r.positive_number_or("capacity", 1.0);
  m.moe_pad_expert_input_to_capacity = r.bool_or("moe_pad_expert_input_to_capacity", false);
  m.q_lora_rank = r.nonneg_int_or("q_lora_rank", 0);
  m.kv_lora_rank = r.nonneg_int_or("kv_lora_rank", 0);
  m.qk_head_dim = r.nonneg_int_or("qk_head_dim", 0);
  m.qk_pos_emb_head_dim = r.nonneg_int_or("qk_pos_emb_head_dim", 0);
  m.v_head_dim = r.nonneg_int_or("v_head_dim", 0);
  m.untie_embeddings_and_output_weights = r.bool_or("untie_embeddings_and_output_weights", true);
  m.add_bias_linear = r.bool_or("add_bias_linear", false);
  m.max_position_embeddings = r.nonneg_int_or("max_position_embeddings", 0);
  m.mtp_num_layers = r.nonneg_int_or("mtp_num_layers", 0);
  read_attention_window(r, m);

  const std::string norm = r.string_or("norm_type", "rmsnorm");
  if (norm == "rmsnorm") m.norm_type = NormType::rmsnorm;
  else if (norm == "layernorm") m.norm_type = NormType::layernorm;
  else r.fail("norm_type", "expected \"rmsnorm\" or \"layernorm\", got \"" + norm + "\"");

  const std::string pos = r.string_or("position_embedding_type", "rope");
  if (pos == "rope") m.position_embedding_type = PositionEmbedding::rope;
  else if (pos == "learned_absolute") m.position_embedding_type = PositionEmbedding::learned_absolute;
  else r.fail("position_embedding_type", "expected \"rope\" or \"learned_absolute\", got \"" + pos + "\"");

  const std::string attn = r.string_or("attention_type", m.kv_head_num == m.head_num ? "mha" : "gqa");
  if (attn == "mha") m.attention_type = AttentionType::mha;
  else if (attn == "gqa") m.attention_type = AttentionType::gqa;
  else if (attn == "mla") m.attention_type = AttentionType::mla;
  else r.fail("attention_type", "expected \"mha\", \"gqa\" or \"mla\", got \"" + attn + "\"");

  // Documentation for readers (what the numbers are and where they come from), as in system files.
  r.opt_string("description");
  r.opt_string("source");
  // SimuMax bookkeeping fields that describe nothing we simulate differently.
  r.accept_not_modeled({"orig_vocab_size", "group_linear_mode"});
  auto nm = r.finish();
  if (not_modeled) not_modeled->insert(not_modeled->end(), nm.begin(), nm.end());

  if (type.empty()) m.is_moe = m.expert_num > 1;
  else if (type == "dense") m.is_moe = false;
  else if (type == "moe") m.is_moe = true;
  else r.fail("model_type", "expected \"dense\" or \"moe\", got \"" + type + "\"");

  if (m.head_num % m.kv_head_num != 0) {
    r.fail("kv_head_num", fmt::format("head_num ({}) must be a multiple of kv_head_num ({})", m.head_num, m.kv_head_num));
  }
  // SimuMax writes "mha" for every non-MLA attention and expresses grouping through kv_head_num
  // (e.g. its ling-1T.json): read "mha" with fewer KV heads as GQA.
  if (m.attention_type == AttentionType::mha && m.kv_head_num != m.head_num) m.attention_type = AttentionType::gqa;
  if (m.is_moe) {
    if (m.expert_num < 2) r.fail("expert_num", "a \"moe\" model needs expert_num >= 2");
    if (m.topk < 1 || m.topk > m.expert_num) {
      r.fail("topk", fmt::format("expected 1 <= topk <= expert_num ({}), got {}", m.expert_num, m.topk));
    }
    if (m.dense_layers > m.layer_num) {
      r.fail("dense_layers", fmt::format("dense_layers ({}) exceeds layer_num ({})", m.dense_layers, m.layer_num));
    }
  } else if (m.expert_num > 1) {
    r.fail("expert_num", "expert_num > 1 requires model_type \"moe\"");
  }
  if (m.attention_type == AttentionType::mla && m.attention_window_tokens > 0) {
    r.fail("attention_window_tokens", "sliding-window attention is modelled for MHA/GQA only, not MLA");
  }
  if (m.attention_type == AttentionType::mla) {
    if (m.kv_lora_rank <= 0) r.fail("kv_lora_rank", "MLA needs kv_lora_rank > 0");
    if (m.qk_head_dim <= 0) r.fail("qk_head_dim", "MLA needs qk_head_dim > 0");
    if (m.v_head_dim <= 0) r.fail("v_head_dim", "MLA needs v_head_dim > 0");
  }
  return m;
}

StrategyConfig parse_strategy(const nlohmann::json& doc, const std::string& file) {
  FieldReader r(doc, file, "");
  StrategyConfig s;
  s.seq_len = r.req_positive_int("seq_len");
  s.micro_batch_size = r.positive_int_or("micro_batch_size", 1);
  s.micro_batch_num = r.positive_int_or("micro_batch_num", 0);
  s.global_batch_size = r.positive_int_or("global_batch_size", 0);
  if (s.micro_batch_num == 0 && s.global_batch_size == 0) {
    r.fail("micro_batch_num", "required: give micro_batch_num or global_batch_size");
  }
  const std::string dtype = r.string_or("dtype", "bf16");
  try {
    s.dtype = parse_dtype(dtype);
  } catch (const std::invalid_argument&) {
    r.fail("dtype", "expected \"bf16\" or \"fp16\", got \"" + dtype + "\"");
  }
  if (s.dtype != DType::bf16 && s.dtype != DType::fp16) {
    r.fail("dtype", "expected \"bf16\" or \"fp16\" (the training dtype; FP8 is the separate \"fp8\" switch), got \"" +
                        dtype + "\"");
  }
  s.world_size = static_cast<int>(r.positive_int_or("world_size", 8));
  s.tp_size = static_cast<int>(r.positive_int_or("tp_size", 1));
  s.pp_size = static_cast<int>(r.positive_int_or("pp_size", 1));
  s.cp_size = static_cast<int>(r.positive_int_or("cp_size", 1));
  s.ep_size = static_cast<int>(r.positive_int_or("ep_size", 1));
  s.etp_size = static_cast<int>(r.positive_int_or("etp_size", 1));
  s.enable_sequence_parallel = r.bool_or("enable_sequence_parallel", true);
  s.interleaving_size = static_cast<int>(r.positive_int_or("interleaving_size", 1));
  s.microbatch_group_size_per_vp_stage =
      static_cast<int>(r.positive_int_or("microbatch_group_size_per_vp_stage", 0));
  s.num_layers_in_first_pipeline_stage = static_cast<int>(r.positive_int_or("num_layers_in_first_pipeline_stage", 0));
  s.num_layers_in_last_pipeline_stage = static_cast<int>(r.positive_int_or("num_layers_in_last_pipeline_stage", 0));
  s.account_for_embedding_in_pipeline_split = r.bool_or("account_for_embedding_in_pipeline_split", false);
  s.account_for_loss_in_pipeline_split = r.bool_or("account_for_loss_in_pipeline_split", false);
  s.pipeline_layout = r.string_or("pipeline_layout", "");
  s.zero_state = static_cast<int>(r.nonneg_int_or("zero_state", 1));
  if (s.zero_state > 3) {
    r.fail("zero_state", fmt::format("expected 0 (replicated optimizer), 1 (distributed optimizer), 2 (+ sharded "
                                     "gradients) or 3 (+ sharded parameters, FSDP), got {}",
                                     s.zero_state));
  }
  // Needs zero_state 1-3 (checked here, and again by validate_layout: a search changes the ZeRO
  // stage after parsing) and a dp·cp group it divides (validate_layout: the layout's sizes).
  s.dp_replicate_size = static_cast<int>(r.positive_int_or("dp_replicate_size", 1));
  if (const std::string why = replicas_without_sharding(s); !why.empty()) r.fail("dp_replicate_size", why);
  const std::string cp_type = r.string_or("cp_comm_type", "p2p");
  // Megatron's hierarchical CP (--cp-comm-type a2a+p2p --hierarchical-context-parallel-sizes A P)
  // is the 2D CP grid with A all-to-all rows and P ring columns; read it in Megatron's terms.
  const nlohmann::json* hierarchical = r.opt_array("hierarchical_context_parallel_sizes");
  bool megatron_hierarchical_cp = false;
  if (parse_cp_comm_type(cp_type, &s.cp_comm_type)) {
    // p2p, a2a, allgather
  } else if (cp_type == "a2a+p2p") {
    s.cp_comm_type = CpCommType::p2p;
    megatron_hierarchical_cp = true;
    if (!hierarchical || hierarchical->size() != 2 || !(*hierarchical)[0].is_number_integer() ||
        !(*hierarchical)[1].is_number_integer() || (*hierarchical)[0].get<std::int64_t>() < 1 ||
        (*hierarchical)[1].get<std::int64_t>() < 1) {
      r.fail("hierarchical_context_parallel_sizes",
             "cp_comm_type \"a2a+p2p\" needs hierarchical_context_parallel_sizes: [a2a_size, p2p_size], two "
             "positive integers whose product is cp_size (Megatron --hierarchical-context-parallel-sizes)");
    }
    s.cp_mode = ContextParallelMode::two_d;
    s.cp_2d_rows = (*hierarchical)[0].get<int>();
    s.cp_2d_cols = (*hierarchical)[1].get<int>();
  } else {
    r.fail("cp_comm_type", "expected \"p2p\" (ring attention), \"a2a\" (Ulysses), \"allgather\" (K/V all-gather, "
                           "also \"all_gather\") or \"a2a+p2p\" (hierarchical, with "
                           "hierarchical_context_parallel_sizes), got \"" +
                               cp_type + "\"");
  }
  {
    const std::string impl = r.string_or("cp_implementation", "transformer_engine");
    if (!parse_cp_implementation(impl, &s.cp_impl)) {
      r.fail("cp_implementation", "expected \"transformer_engine\" (Megatron / NeMo ring attention) or \"pytorch\" "
                                  "(torch.distributed context_parallel, as torchtitan runs it), got \"" + impl + "\"");
    }
  }
  if (hierarchical && !megatron_hierarchical_cp) {
    r.fail("hierarchical_context_parallel_sizes", "only valid with cp_comm_type \"a2a+p2p\"");
  }
  {
    // 2D (SUMMA) tensor parallelism: the grid is explicit so a reader sees which way it is split.
    const std::string mode = r.string_or("tensor_parallel_mode", "1d");
    if (mode == "1d") {
      for (const char* key : {"tp_2d_rows", "tp_2d_cols"}) {
        if (r.opt_int(key)) r.fail(key, "only valid with tensor_parallel_mode: \"2d\"");
      }
    } else if (mode == "2d") {
      s.tp_mode = TensorParallelMode::two_d;
      s.tp_2d_rows = static_cast<int>(r.req_positive_int("tp_2d_rows"));
      s.tp_2d_cols = static_cast<int>(r.req_positive_int("tp_2d_cols"));
    } else {
      r.fail("tensor_parallel_mode",
             "expected \"1d\" (Megatron column/row-parallel) or \"2d\" (SUMMA grid tp_2d_rows x tp_2d_cols), got \"" +
                 mode + "\"");
    }
  }
  {
    // 2D context parallelism (simulator/layer_ops_cp2d.h): the grid is explicit, as for 2D TP.
    const std::string mode = r.string_or("context_parallel_mode", megatron_hierarchical_cp ? "2d" : "1d");
    if (megatron_hierarchical_cp) {
      if (mode != "2d") {
        r.fail("context_parallel_mode", "cp_comm_type \"a2a+p2p\" is 2d context parallelism; got \"" + mode + "\"");
      }
      for (const char* key : {"cp_2d_rows", "cp_2d_cols"}) {
        if (r.opt_int(key)) r.fail(key, "give the grid once: hierarchical_context_parallel_sizes already sets it");
      }
    } else if (mode == "1d") {
      for (const char* key : {"cp_2d_rows", "cp_2d_cols"}) {
        if (r.opt_int(key)) r.fail(key, "only valid with context_parallel_mode: \"2d\"");
      }
    } else if (mode == "2d") {
      s.cp_mode = ContextParallelMode::two_d;
      s.cp_2d_rows = static_cast<int>(r.req_positive_int("cp_2d_rows"));
      s.cp_2d_cols = static_cast<int>(r.req_positive_int("cp_2d_cols"));
    } else {
      r.fail("context_parallel_mode",
             "expected \"1d\" (one CP group, cp_comm_type) or \"2d\" (grid cp_2d_rows x cp_2d_cols: Ulysses "
             "all-to-all along rows, ring along columns), got \"" + mode + "\"");
    }
  }
  {
    // Megatron's rank order (initialize_model_parallel's `order`): which groups share a domain.
    std::string why;
    const auto order = parse_rank_order(r.string_or("order", to_string(kMegatronRankOrder)), &why);
    if (!order) r.fail("order", why);
    s.rank_order = *order;
  }

  // MoE dispatch and overlap.
  const std::string disp = r.string_or("moe_dispatcher_policy", "all2all");
  // SimuMax downgrades the deprecated "all2all-seq" to "all2all"; Megatron spells it "alltoall".
  if (disp == "all2all" || disp == "alltoall" || disp == "all2all-seq") s.moe_dispatcher = MoeDispatcher::all_to_all;
  else if (disp == "allgather") s.moe_dispatcher = MoeDispatcher::all_gather;
  else if (disp == "flex") s.moe_dispatcher = MoeDispatcher::flex;
  else r.fail("moe_dispatcher_policy", "expected \"all2all\", \"allgather\" or \"flex\", got \"" + disp + "\"");
  s.dispatch_probs = r.bool_or("dispatch_probs", false);
  s.moe_token_imbalance_factor = r.positive_number_or("moe_token_imbalance_factor", 1.0);
  if (s.moe_token_imbalance_factor < 1.0) {
    r.fail("moe_token_imbalance_factor", "expected >= 1 (busiest EP rank's routed tokens / the average), got " +
                                             nlohmann::json(s.moe_token_imbalance_factor).dump());
  }
  s.moe_shared_expert_overlap = r.bool_or("moe_shared_expert_overlap", false);
  s.overlap_moe_expert_parallel_comm = r.bool_or("overlap_moe_expert_parallel_comm", false);
  // Megatron's own name for the dispatcher; must agree with moe_dispatcher_policy when both are given.
  if (const auto megatron_disp = r.opt_string("moe_token_dispatcher_type")) {
    MoeDispatcher d = MoeDispatcher::all_to_all;
    if (*megatron_disp == "alltoall") d = MoeDispatcher::all_to_all;
    else if (*megatron_disp == "allgather") d = MoeDispatcher::all_gather;
    else if (*megatron_disp == "flex") d = MoeDispatcher::flex;
    else r.fail("moe_token_dispatcher_type", "expected \"alltoall\", \"allgather\" or \"flex\", got \"" +
                                             *megatron_disp + "\"");
    if (doc.contains("moe_dispatcher_policy") && d != s.moe_dispatcher) {
      r.fail("moe_token_dispatcher_type", "contradicts moe_dispatcher_policy (SimuMax's name for the same switch)");
    }
    s.moe_dispatcher = d;
  }
  // Megatron's older switch for the same thing: --moe-enable-deepep = flex over DeepEP.
  if (r.bool_or("moe_enable_deepep", false)) {
    if ((doc.contains("moe_token_dispatcher_type") || doc.contains("moe_dispatcher_policy")) &&
        s.moe_dispatcher != MoeDispatcher::flex) {
      r.fail("moe_enable_deepep", "needs the flex dispatcher (moe_token_dispatcher_type \"flex\"), which the config "
                                  "sets to another one");
    }
    s.moe_dispatcher = MoeDispatcher::flex;
  }
  if (const auto backend = r.opt_string("moe_flex_dispatcher_backend")) {
    if (*backend == "deepep") s.flex_backend = FlexBackend::deepep;
    else if (*backend == "hybridep") s.flex_backend = FlexBackend::hybridep;
    else r.fail("moe_flex_dispatcher_backend", "expected \"deepep\" or \"hybridep\", got \"" + *backend + "\"");
    if (s.moe_dispatcher != MoeDispatcher::flex) {
      r.fail("moe_flex_dispatcher_backend", "applies to the flex dispatcher only: set moe_token_dispatcher_type "
                                            "\"flex\" (Megatron-Bridge's apply_flex_dispatcher_backend does)");
    }
    if (doc.value("moe_enable_deepep", false) && s.flex_backend != FlexBackend::deepep) {
      r.fail("moe_flex_dispatcher_backend", "contradicts moe_enable_deepep (DeepEP)");
    }
  }
  // Megatron-Core: "moe_shared_expert_overlap only works with alltoall token dispatcher" (recent
  // versions also accept flex).
  if (s.moe_shared_expert_overlap && s.moe_dispatcher == MoeDispatcher::all_gather) {
    r.fail("moe_shared_expert_overlap", "works with the alltoall (or flex) token dispatcher only, not allgather "
                                        "(Megatron-Core refuses it)");
  }
  s.flex_num_sms = s.flex_backend == FlexBackend::hybridep ? 16 : 20;
  for (const char* key : {"moe_deepep_num_sms", "moe_hybridep_num_sms"}) {
    if (!doc.contains(key)) continue;
    const bool mine = (s.flex_backend == FlexBackend::hybridep) == (std::string(key) == "moe_hybridep_num_sms");
    const double v = r.positive_number_or(key, 1);
    if (v != std::floor(v) || v > 1024) r.fail(key, "expected a whole number of SMs (1 to 1024)");
    if (s.moe_dispatcher != MoeDispatcher::flex || !mine) {
      r.fail(key, s.moe_dispatcher != MoeDispatcher::flex
                      ? "applies to the flex dispatcher only (moe_token_dispatcher_type \"flex\")"
                      : "is for the other flex backend than moe_flex_dispatcher_backend selects");
    }
    s.flex_num_sms = static_cast<int>(v);
  }
  s.moe_grouped_gemm = r.bool_or("moe_grouped_gemm", false);
  // CUDA graphs (host_dispatch.h): "none", "full_iteration", or a list of TransformerEngine scopes.
  if (doc.contains("cuda_graph_scope") && !doc["cuda_graph_scope"].is_null()) {
    const char* kScopeHelp = "expected \"none\", \"full_iteration\" or a list of \"attn\", \"mlp\", \"moe_router\", "
                             "\"moe_preprocess\", \"moe\"";
    auto scope_bit = [&](const std::string& name) -> std::uint8_t {
      if (name == "attn") return kGraphAttn;
      if (name == "mlp") return kGraphMlp;
      if (name == "moe_router") return kGraphMoeRouter;
      if (name == "moe_preprocess") return kGraphMoePreprocess;
      if (name == "moe") return kGraphMoe;
      r.fail("cuda_graph_scope", std::string(kScopeHelp) + ", got \"" + name + "\"");
    };
    if (doc["cuda_graph_scope"].is_array()) {
      for (const nlohmann::json& v : *r.opt_array("cuda_graph_scope")) {
        if (!v.is_string()) r.fail("cuda_graph_scope", std::string(kScopeHelp) + ", got " + describe_json(v));
        s.cuda_graph_scope |= scope_bit(v.get<std::string>());
      }
    } else {
      const std::string scope = r.req_string("cuda_graph_scope");
      if (scope == "full_iteration") s.cuda_graph_scope = kGraphFullIteration;
      else if (scope != "none") s.cuda_graph_scope = scope_bit(scope);
    }
  }

  // FP8: SimuMax's boolean "fp8" with Megatron's --fp8-recipe.
  const bool fp8 = r.bool_or("fp8", false);
  const std::string recipe = r.string_or("fp8_recipe", "delayed");
  if (recipe != "delayed" && recipe != "tensorwise" && recipe != "blockwise" && recipe != "mxfp8") {
    r.fail("fp8_recipe", "expected \"delayed\", \"tensorwise\", \"blockwise\" or \"mxfp8\", got \"" + recipe + "\"");
  }
  if (fp8) {
    s.fp8 = recipe == "delayed" ? Fp8Recipe::delayed : recipe == "tensorwise" ? Fp8Recipe::tensorwise
            : recipe == "blockwise"                  ? Fp8Recipe::blockwise
                                                     : Fp8Recipe::mxfp8;
  }
  if (const auto impl = r.opt_string("fp8_implementation")) {
    if (*impl != "transformer_engine" && *impl != "torchao") {
      r.fail("fp8_implementation", "expected \"transformer_engine\" or \"torchao\", got \"" + *impl + "\"");
    }
    if (*impl == "torchao") {
      if (!fp8) r.fail("fp8_implementation", "\"torchao\" needs \"fp8\": true");
      if (s.fp8 != Fp8Recipe::tensorwise) {
        r.fail("fp8_implementation", "\"torchao\" is modelled with fp8_recipe \"tensorwise\" (Float8Linear's dynamic "
                                     "per-tensor scaling), got \"" + recipe + "\"");
      }
      s.fp8_impl = Fp8Implementation::torchao;
    }
  }
  // Optimizer state dtypes (Megatron's precision-aware optimizer flags).
  s.use_precision_aware_optimizer = r.bool_or("use_precision_aware_optimizer", false);
  auto state_dtype = [&](const char* key, std::initializer_list<const char*> allowed) {
    const auto v = r.opt_string(key);
    if (!v) return DType::fp32;
    bool ok = false;
    std::string names;
    for (const char* a : allowed) {
      ok = ok || *v == a;
      names += std::string(names.empty() ? "" : ", ") + "\"" + a + "\"";
    }
    if (!ok) r.fail(key, "expected " + names + ", got \"" + *v + "\"");
    if (*v != "fp32" && !s.use_precision_aware_optimizer) {
      r.fail(key, "needs \"use_precision_aware_optimizer\": true (as Megatron's flag)");
    }
    return *v == "fp8" ? DType::fp8_e4m3 : parse_dtype(*v);
  };
  s.main_params_dtype = state_dtype("main_params_dtype", {"fp32", "fp16"});
  s.exp_avg_dtype = state_dtype("exp_avg_dtype", {"fp32", "fp16", "bf16", "fp8"});
  s.exp_avg_sq_dtype = state_dtype("exp_avg_sq_dtype", {"fp32", "fp16", "bf16", "fp8"});
  s.main_grads_dtype = state_dtype("main_grads_dtype", {"fp32", "bf16"});
  if (const auto rem = r.opt_bool("store_param_remainders")) {
    if (!s.use_precision_aware_optimizer) r.fail("store_param_remainders", "needs \"use_precision_aware_optimizer\": true");
    s.store_param_remainders = *rem;
  }

  // FP8 model parameters and training-dtype first/last layers (Megatron's flags): both need fp8.
  s.fp8_param_gather = r.bool_or("fp8_param_gather", false);
  if (s.fp8_param_gather && !fp8) r.fail("fp8_param_gather", "needs \"fp8\": true (FP8 parameters of FP8 layers)");
  if (s.fp8_param_gather && s.fp8_impl == Fp8Implementation::torchao) {
    r.fail("fp8_param_gather", "is TransformerEngine's FP8 parameters; not modelled with fp8_implementation \"torchao\" "
                               "(its FSDP float8 all-gather keeps high-precision shards)");
  }
  const bool first_last = r.bool_or("first_last_layers_bf16", false);
  auto opt_count = [&r](const char* key) {
    const auto v = r.opt_int(key);
    if (v && *v < 0) r.fail(key, "expected a non-negative integer, got " + std::to_string(*v));
    return v;
  };
  const auto start_bf16 = opt_count("num_layers_at_start_in_bf16");
  const auto end_bf16 = opt_count("num_layers_at_end_in_bf16");
  if (!first_last && (start_bf16 || end_bf16)) {
    r.fail(start_bf16 ? "num_layers_at_start_in_bf16" : "num_layers_at_end_in_bf16",
           "takes effect only with \"first_last_layers_bf16\": true (as Megatron's flag); set it or drop this field");
  }
  if (first_last) {
    if (!fp8) r.fail("first_last_layers_bf16", "needs \"fp8\": true (it keeps some layers out of FP8)");
    if (s.fp8 == Fp8Recipe::delayed) {
      r.fail("first_last_layers_bf16", "is not supported with fp8_recipe \"delayed\" (Megatron asserts: per-layer FP8 "
                                       "contexts break the delayed-scaling amax reduction); use \"tensorwise\", "
                                       "\"blockwise\" or \"mxfp8\"");
    }
    // Megatron's defaults for the two counts are 1.
    s.num_layers_at_start_in_bf16 = static_cast<int>(start_bf16.value_or(1));
    s.num_layers_at_end_in_bf16 = static_cast<int>(end_bf16.value_or(1));
  }

  // Overlap switches, named as Megatron's flags.
  s.overlap_grad_reduce = r.bool_or("overlap_grad_reduce", false);
  s.overlap_param_gather = r.bool_or("overlap_param_gather", false);
  s.moe_double_param_gather = r.bool_or("moe_double_param_gather", false);
  s.bucket_size = r.positive_int_or("bucket_size", 0);
  s.tp_comm_overlap = r.bool_or("tp_comm_overlap", false);
  const auto p2p_overlap = r.opt_bool("overlap_p2p_comm");
  const auto p2p_async = r.opt_bool("pp_comm_async");  // SimuMax's name for the same switch
  if (p2p_overlap && p2p_async && *p2p_overlap != *p2p_async) {
    r.fail("pp_comm_async", "contradicts overlap_p2p_comm (SimuMax's name for the same switch); give one of them");
  }
  // Default as Megatron: its arguments turn overlap_p2p_comm off without interleaving (the
  // non-interleaved 1F1B schedule's send/recv pairs block); an explicit value is a what-if.
  s.overlap_p2p_comm = p2p_overlap.value_or(p2p_async.value_or(s.interleaving_size > 1));
  for (const char* key : {"nccl_algo", "nccl_proto"}) {
    const auto list = r.opt_string(key);
    if (!list) continue;
    const bool algo = std::string(key) == "nccl_algo";
    std::string_view bad;
    const auto bits = algo ? parse_algo_list(*list, &bad) : parse_proto_list(*list, &bad);
    if (!bits || *bits == 0) {
      r.fail(key, std::string(algo ? "expected NCCL_ALGO syntax: names from ring, tree, nvls, nvls_tree, collnet, "
                                     "collnet_direct, collnet_chain, comma-separated, optionally prefixed by ^"
                                   : "expected NCCL_PROTO syntax: names from LL, LL128, Simple, comma-separated, "
                                     "optionally prefixed by ^") +
                      (bits ? " (this leaves nothing enabled)" : ", got unknown name \"" + std::string(bad) + "\""));
    }
    (algo ? s.nccl.algos : s.nccl.protos) = *bits;
  }

  // Offload.
  s.cpu_offloading_num_layers = static_cast<int>(r.nonneg_int_or("cpu_offloading_num_layers", 0));
  s.optimizer_cpu_offload = r.bool_or("optimizer_cpu_offload", false);
  s.optimizer_offload_fraction = r.fraction_or("optimizer_offload_fraction", 1.0);
  s.enable_dropout = r.bool_or("enable_dropout", false);
  s.use_flash_sdp = r.bool_or("use_flash_sdp", true);
  s.use_math_sdp = r.bool_or("use_math_sdp", false);
  if (s.use_flash_sdp && s.use_math_sdp) r.fail("use_math_sdp", "use_flash_sdp and use_math_sdp cannot both be true");
  if (!s.use_flash_sdp && !s.use_math_sdp) s.use_math_sdp = true;  // an attention must run: the unfused one
  s.use_fused_norm = r.bool_or("use_fused_norm", true);
  s.use_fused_swiglu = r.bool_or("use_fused_swiglu", true);
  s.use_fused_rope = r.bool_or("use_fused_rope", true);
  s.use_fp32_accum_grad = r.bool_or("use_fp32_accum_grad", true);
  s.use_fused_grad_accumulation = r.bool_or("use_fused_grad_accumulation", true);
  // SimuMax's name for weight-gradient accumulation fusion.
  if (const auto accm = r.opt_bool("use_accm_weight")) {
    if (doc.contains("use_fused_grad_accumulation") && *accm != s.use_fused_grad_accumulation) {
      r.fail("use_accm_weight", "contradicts use_fused_grad_accumulation (SimuMax's name for the same switch)");
    }
    s.use_fused_grad_accumulation = *accm;
  }
  s.grad_reduce_in_bf16 = r.bool_or("grad_reduce_in_bf16", false);
  s.cross_entropy_loss_fusion = r.bool_or("cross_entropy_loss_fusion", false);
  if (const auto ce = r.opt_string("cross_entropy_implementation")) {
    if (*ce != "megatron" && *ce != "pytorch") {
      r.fail("cross_entropy_implementation", "expected \"megatron\" or \"pytorch\", got \"" + *ce + "\"");
    }
    if (s.cross_entropy_loss_fusion) {
      r.fail("cross_entropy_implementation", "describes the unfused loss; cross_entropy_loss_fusion is true (drop one)");
    }
    s.cross_entropy_impl = *ce == "pytorch" ? CrossEntropyImpl::pytorch : CrossEntropyImpl::megatron;
  }
  if (const auto impl = r.opt_string("cross_entropy_fusion_impl")) {
    if (*impl != "te" && *impl != "native") {
      r.fail("cross_entropy_fusion_impl", "expected \"te\" or \"native\", got \"" + *impl + "\"");
    }
    s.cross_entropy_fusion_impl = *impl == "native" ? CrossEntropyFusionImpl::native : CrossEntropyFusionImpl::te;
  }

  s.enable_recompute = r.bool_or("enable_recompute", true);
  const std::string gran = r.string_or("recompute_granularity", "");
  if (gran.empty()) s.recompute_granularity = RecomputeGranularity::none;
  else if (gran == "full_block" || gran == "full") s.recompute_granularity = RecomputeGranularity::full_block;
  else if (gran == "selective_recompute" || gran == "selective") s.recompute_granularity = RecomputeGranularity::selective;
  else if (gran == "attn_only") s.recompute_granularity = RecomputeGranularity::attn_only;
  else if (gran == "mlp_only") s.recompute_granularity = RecomputeGranularity::mlp_only;
  else if (gran == "sdp_only" || gran == "core_attn") s.recompute_granularity = RecomputeGranularity::sdp_only;
  else if (gran == "selective_op") s.recompute_granularity = RecomputeGranularity::selective_op;
  else if (gran == "save_qkv_proj") s.recompute_granularity = RecomputeGranularity::save_qkv_proj;
  else {
    r.fail("recompute_granularity",
           "expected one of \"full_block\", \"selective_recompute\", \"attn_only\", \"mlp_only\", \"sdp_only\", "
           "\"selective_op\", \"save_qkv_proj\" (or null), got \"" + gran + "\"");
  }
  s.recompute_layer_num = static_cast<int>(r.nonneg_int_or("recompute_layer_num", 0));
  s.attn_recompute = r.bool_or("attn_recompute", false);
  s.mla_rms_recompute = r.bool_or("mla_rms_recompute", false);
  s.mlp_recompute = r.bool_or("mlp_recompute", false);
  s.mlp_rms_recompute = r.bool_or("mlp_rms_recompute", false);
  s.recompute_variance = r.bool_or("recompute_variance", false);
  s.recompute_early_stop = r.bool_or("recompute_early_stop", false);
  if (s.recompute_granularity == RecomputeGranularity::selective) {
    if (s.mla_rms_recompute && !s.attn_recompute) r.fail("mla_rms_recompute", "requires attn_recompute: true");
    if (s.mlp_rms_recompute && !s.mlp_recompute) r.fail("mlp_rms_recompute", "requires mlp_recompute: true");
  }
  // Megatron 0.14 output-discarding recompute: a list of modules instead of the SimuMax switches.
  const bool megatron_rc = r.bool_or("megatron_recompute", false);
  if (const nlohmann::json* mods = r.opt_array("megatron_recompute_modules")) {
    for (const auto& mod : *mods) {
      const std::string name = mod.is_string() ? mod.get<std::string>() : describe_json(mod);
      if (const std::uint8_t bit = megatron_recompute_module_bit(name)) {
        s.megatron_recompute_modules |= bit;
      } else {
        r.fail("megatron_recompute_modules", "expected module names among \"layernorm\", \"mla_up_proj\", "
                                             "\"moe_act\", \"mlp\", \"moe\" (\"core_attn\" is not supported), got " +
                                                 name);
      }
    }
  }
  if (megatron_rc) {
    if (s.recompute_granularity != RecomputeGranularity::selective) {
      r.fail("megatron_recompute", "requires recompute_granularity \"selective_recompute\"");
    }
    if (s.attn_recompute || s.mla_rms_recompute || s.mlp_recompute || s.mlp_rms_recompute || s.recompute_variance) {
      r.fail("megatron_recompute", "is mutually exclusive with attn_recompute / mla_rms_recompute / mlp_recompute / "
                                   "mlp_rms_recompute / recompute_variance (SimuMax's switches)");
    }
    if (s.megatron_recompute_modules == 0) r.fail("megatron_recompute_modules", "megatron_recompute needs modules");
  } else if (s.megatron_recompute_modules != 0) {
    // Megatron reads --recompute-modules only with --recompute-granularity selective; a list
    // without the switch would be ignored, which a user would want to know.
    r.fail("megatron_recompute_modules", "needs megatron_recompute: true (with recompute_granularity "
                                         "\"selective_recompute\"); without it the modules are not recomputed");
  }
  s.mem_factor = r.fraction_or("mem_factor", 0.94);

  // SimuMax / Megatron fields accepted for compatibility that do not change our results: the
  // per-dimension network selectors (calisim picks the tier from the topology).
  r.accept_not_modeled({"tp_net", "pp_net", "dp_net", "ep_net", "etp_net", "edp_net", "cache_groupgemm_col_fp8_inputs",
                        "offload_groupgemm_col_inputs", "pp_schedule", "attention_sparse_ratio"});
  s.not_modeled_fields = r.finish();

  // Values of not-modeled fields that would change results are errors, not warnings.
  if (doc.contains("offload_groupgemm_col_inputs") && doc["offload_groupgemm_col_inputs"].is_boolean() &&
      doc["offload_groupgemm_col_inputs"].get<bool>()) {
    r.fail("offload_groupgemm_col_inputs", "offloading grouped-GEMM inputs alone is not modeled; use "
                                           "cpu_offloading_num_layers (whole layers' activations)");
  }
  if (doc.contains("attention_sparse_ratio") && doc["attention_sparse_ratio"].is_number() &&
      doc["attention_sparse_ratio"].get<double>() != 0.0) {
    r.fail("attention_sparse_ratio", "sparse attention is not modeled; causal masking is applied automatically");
  }
  if (doc.contains("pp_schedule") && doc["pp_schedule"].is_string() && doc["pp_schedule"].get<std::string>() != "1f1b") {
    r.fail("pp_schedule", "only \"1f1b\" (with interleaving_size for the interleaved variant) is modeled");
  }
  return s;
}

namespace {

// `elsewhere`: the tier object's other fields, read by the caller (domain size, topology).
NetworkTier parse_tier(FieldReader& parent, const std::string& key, const std::string& file, bool need_bw,
                       std::initializer_list<const char*> elsewhere) {
  const nlohmann::json& obj = parent.req_object(key);
  FieldReader r(obj, file, parent.path_of(key));
  r.read_elsewhere(elsewhere);
  NetworkTier t;
  if (need_bw) t.gpu_gb_s = r.positive_number_or("gpu_gb_s", 0);
  if (need_bw && t.gpu_gb_s <= 0) r.fail("gpu_gb_s", "required field is missing (expected GB/s per GPU, one direction)");
  t.latency_us = r.req_number("latency_us");
  if (t.latency_us < 0) r.fail("latency_us", "expected a non-negative number of microseconds");
  if (const nlohmann::json* eff = r.opt_object("efficiency")) {
    FieldReader e(*eff, file, r.path_of("efficiency"));
    for (int op = 0; op < kCollectiveOpCount; ++op) {
      const std::string name(to_string(static_cast<CollectiveOp>(op)));
      t.efficiency[op] = e.fraction_or(name, t.efficiency[op]);
    }
    e.finish();
  }
  r.finish();
  return t;
}

}  // namespace


namespace {
// efficiency.attention_backward_ratio and the attention implementation (simulator/attention_shape.h):
// `attention_implementation` names an entry of `attention_implementations`, whose `attention` and
// `attention_backward_ratio` replace the system's own (FlashAttention-2 runs on a system whose
// default is cuDNN fused attention, for instance).
void read_attention_implementation(FieldReader& e, SystemConfig& s) {
  auto ratio = [](FieldReader& r, double fallback) {
    auto v = r.opt_number("attention_backward_ratio");
    if (v && (*v <= 0 || *v > 2)) {
      r.fail("attention_backward_ratio", "expected backward/forward attention efficiency in (0, 2]");
    }
    return v.value_or(fallback);
  };
  s.attention_backward_ratio = ratio(e, s.attention_backward_ratio);
  const nlohmann::json* impls = e.opt_object("attention_implementations");
  const std::string chosen = e.string_or("attention_implementation", "default");
  bool found = chosen == "default";
  if (impls) {
    for (auto it = impls->begin(); it != impls->end(); ++it) {
      const std::string path = e.path_of("attention_implementations." + it.key());
      if (!it->is_object()) {
        throw InputError(e.file(), path, "expected an object with \"attention\" and optional \"attention_backward_ratio\"");
      }
      FieldReader sub(*it, e.file(), path);
      const auto combined = sub.opt_number("attention");
      const double r = ratio(sub, 1.0);
      sub.finish();  // unknown fields first: a misspelt "attention" is named as such
      if (!combined) sub.fail("attention", "required field is missing (expected a fraction in (0, 1])");
      if (*combined <= 0 || *combined > 1) sub.fail("attention", "expected a fraction in (0, 1]");
      if (it.key() == chosen) {
        s.attention_efficiency = *combined;
        s.attention_backward_ratio = r;
        found = true;
      }
    }
  }
  if (!found) {
    e.fail("attention_implementation",
           "\"" + chosen + "\" is not an entry of efficiency.attention_implementations in this system file");
  }
  s.attention_implementation = chosen;
}

// efficiency.matmul_by_dtype: {"<dtype>": fraction of that dtype's peak}. "fp8" covers both FP8
// formats (as device.peak_tflops.fp8 does); "fp8_e4m3" / "fp8_e5m2" set one and win over "fp8".
// A dtype the device has no peak for is rejected: its figure could never be used.
void read_matmul_by_dtype(FieldReader& e, SystemConfig& s) {
  const nlohmann::json* by = e.opt_object("matmul_by_dtype");
  if (!by) return;
  FieldReader r(*by, e.file(), e.path_of("matmul_by_dtype"));
  struct Name {
    const char* key;
    DType first, last;  // the dtypes the key sets (fp8: e4m3 and e5m2)
  };
  static constexpr Name kNames[] = {{"fp32", DType::fp32, DType::fp32},
                                    {"tf32", DType::tf32, DType::tf32},
                                    {"bf16", DType::bf16, DType::bf16},
                                    {"fp16", DType::fp16, DType::fp16},
                                    {"fp8", DType::fp8_e4m3, DType::fp8_e5m2},
                                    {"fp8_e4m3", DType::fp8_e4m3, DType::fp8_e4m3},
                                    {"fp8_e5m2", DType::fp8_e5m2, DType::fp8_e5m2}};
  for (const Name& n : kNames) {  // "fp8" before the single formats, so they override it
    const auto v = r.opt_number(n.key);
    if (!v) continue;
    if (*v <= 0 || *v > 1) {
      r.fail(n.key, fmt::format("expected a fraction in (0, 1] of the {} peak, got {}", n.key, *v));
    }
    for (int t = static_cast<int>(n.first); t <= static_cast<int>(n.last); ++t) {
      if (s.device.peak_tflops[t] <= 0) {
        r.fail(n.key, fmt::format("the device has no {} peak (device.peak_tflops), so no {} GEMM is priced with it",
                                  n.key, n.key));
      }
      s.matmul_efficiency_by_dtype[t] = *v;
    }
  }
  r.finish();  // any other key: "unknown field", listing the dtype names above
}
}  // namespace

SystemConfig parse_system(const nlohmann::json& doc, const std::string& file) {
  FieldReader r(doc, file, "");
  SystemConfig s;
  s.name = r.req_string("name");
  s.source_file = file;
  s.source = r.string_or("source", "");
  s.efficiency_db = r.string_or("efficiency_db", "");
  r.string_or("description", "");

  {
    const nlohmann::json& dev = r.req_object("device");
    FieldReader d(dev, file, "device");
    s.device.name = d.req_string("name");
    const nlohmann::json& peaks = d.req_object("peak_tflops");
    FieldReader p(peaks, file, "device.peak_tflops");
    for (const char* k : {"fp32", "tf32", "bf16", "fp16", "fp8"}) {
      auto v = p.opt_number(k);
      if (v && *v < 0) p.fail(k, "expected a non-negative TFLOP/s figure (0 = not supported)");
      const double x = v.value_or(0);
      if (std::string(k) == "fp8") {
        s.device.peak_tflops[static_cast<int>(DType::fp8_e4m3)] = x;
        s.device.peak_tflops[static_cast<int>(DType::fp8_e5m2)] = x;
      } else {
        s.device.peak_tflops[static_cast<int>(parse_dtype(k))] = x;
      }
    }
    if (s.device.peak_tflops[static_cast<int>(DType::bf16)] <= 0 &&
        s.device.peak_tflops[static_cast<int>(DType::fp16)] <= 0) {
      p.fail("bf16", "a training system needs a bf16 or fp16 peak");
    }
    p.finish();
    s.device.memory_gb = d.req_number("memory_gb");
    if (s.device.memory_gb <= 0) d.fail("memory_gb", "expected a positive number of GB");
    s.device.hbm_gb_s = d.req_number("hbm_gb_s");
    if (s.device.hbm_gb_s <= 0) d.fail("hbm_gb_s", "expected a positive number of GB/s");
    s.device.sm_count = static_cast<int>(d.positive_int_or("sm_count", 0));
    s.device.l2_mb = d.positive_number_or("l2_mb", 0);
    d.finish();
  }
  {
    const nlohmann::json& eff = r.req_object("efficiency");
    FieldReader e(eff, file, "efficiency");
    s.matmul_efficiency = e.fraction_or("matmul", s.matmul_efficiency);
    read_matmul_by_dtype(e, s);
    s.attention_efficiency = e.fraction_or("attention", s.attention_efficiency);
    read_attention_implementation(e, s);
    s.memory_efficiency = e.fraction_or("memory_bound", s.memory_efficiency);
    auto launch = e.opt_number("kernel_launch_us");
    if (launch && *launch < 0) e.fail("kernel_launch_us", "expected a non-negative number of microseconds");
    s.kernel_launch_us = launch.value_or(0);
    auto gemm_fixed = e.opt_number("gemm_fixed_us");
    if (gemm_fixed && *gemm_fixed < 0) e.fail("gemm_fixed_us", "expected a non-negative number of microseconds");
    s.gemm_fixed_us = gemm_fixed.value_or(0);
    auto slow = e.opt_number("comm_compute_slowdown");
    // 1 = no effective overlap (the pair runs back to back), the upper end of overlap.h's contract.
    if (slow && (*slow < 0 || *slow > 1)) {
      e.fail("comm_compute_slowdown", "expected a fraction in [0, 1]: compute slowdown while communication runs beside it");
    }
    s.comm_compute_slowdown = slow.value_or(0);
    auto sustained = e.opt_number("sustained_kernel_speed");
    if (sustained && !(*sustained > 0 && *sustained <= 2)) {
      e.fail("sustained_kernel_speed",
             "expected a number in (0, 2]: compute kernels' speed in a sustained step over their speed alone");
    }
    s.sustained_kernel_speed = sustained.value_or(1);
    auto attention_speed = e.opt_number("sustained_attention_speed");
    if (attention_speed && !(*attention_speed > 0 && *attention_speed <= 2)) {
      e.fail("sustained_attention_speed",
             "expected a number in (0, 2]: attention kernels' speed in a sustained step over their speed alone");
    }
    s.sustained_attention_speed = attention_speed.value_or(0);
    e.finish();
  }
  {
    const nlohmann::json& net = r.req_object("network");
    FieldReader n(net, file, "network");
    const nlohmann::json& up = n.req_object("scale_up");
    {
      FieldReader u(up, file, "network.scale_up");
      s.scale_up_domain_size = static_cast<int>(u.req_positive_int("domain_size"));
      if (auto kind = u.opt_string("kind")) {
        const auto k = parse_scale_up_kind(*kind);
        if (!k) u.fail("kind", "expected \"nvswitch\", \"nvlink\" or \"pcie\", got \"" + *kind + "\"");
        s.topology.scale_up_kind = *k;
      }
      s.topology.nvls = u.bool_or("nvls", false);
      if (s.topology.nvls && s.topology.scale_up_kind != ScaleUpKind::nvswitch) {
        u.fail("nvls", "NVLink SHARP needs an NVSwitch domain (kind \"nvswitch\")");
      }
      // Two-level PCIe boxes (docs/comm.md "PCIe switches"): both fields or neither.
      const auto sw = u.opt_int("pcie_switch_gpus");
      const auto bridge = u.opt_number("pcie_bridge_gb_s");
      if (sw || bridge) {
        if (s.topology.scale_up_kind != ScaleUpKind::pcie) {
          u.fail(sw ? "pcie_switch_gpus" : "pcie_bridge_gb_s", "PCIe switches need kind \"pcie\"");
        }
        if (!sw) u.fail("pcie_switch_gpus", "expected the GPUs under one PCIe switch beside pcie_bridge_gb_s");
        if (!bridge) u.fail("pcie_bridge_gb_s", "expected the bridge's GB/s per direction beside pcie_switch_gpus");
        if (*sw <= 0 || s.scale_up_domain_size % *sw != 0) {
          u.fail("pcie_switch_gpus", "expected a positive divisor of domain_size " +
                                         std::to_string(s.scale_up_domain_size) + ", got " + std::to_string(*sw));
        }
        if (*bridge <= 0) {
          u.fail("pcie_bridge_gb_s", "expected a positive number of GB/s per direction, got " + std::to_string(*bridge));
        }
        s.topology.pcie_switch_gpus = static_cast<int>(*sw);
        s.topology.pcie_bridge_gb_s = *bridge;
      }
    }
    // The tier's link fields (domain_size and the topology fields are read above).
    s.scale_up = parse_tier(n, "scale_up", file, true, {"domain_size", "kind", "nvls", "pcie_switch_gpus", "pcie_bridge_gb_s"});
    const nlohmann::json& out = n.req_object("scale_out");
    {
      FieldReader o(out, file, "network.scale_out");
      s.gpus_per_node = static_cast<int>(o.req_positive_int("gpus_per_node"));
      s.nics_per_node = static_cast<int>(o.req_positive_int("nics_per_node"));
      s.nic_gb_s = o.req_number("nic_gb_s");
      if (s.nic_gb_s <= 0) o.fail("nic_gb_s", "expected a positive number of GB/s per NIC, one direction");
      if (auto fabric = o.opt_string("fabric")) {
        const auto f = parse_fabric_kind(*fabric);
        if (!f) o.fail("fabric", "expected \"rail_optimized\" or \"fat_tree\", got \"" + *fabric + "\"");
        s.topology.fabric = *f;
      }
      if (auto over = o.opt_number("oversubscription")) {
        if (*over < 1) o.fail("oversubscription", "expected a ratio >= 1 (1 = non-blocking), got " + std::to_string(*over));
        s.topology.oversubscription = *over;
      }
      s.topology.in_network_reduction = o.bool_or("in_network_reduction", false);
      s.topology.pxn = o.bool_or("pxn", true);
      s.scale_out = parse_tier(n, "scale_out", file, false,
                               {"gpus_per_node", "nics_per_node", "nic_gb_s", "fabric", "oversubscription",
                                "in_network_reduction", "pxn"});
      s.scale_out.gpu_gb_s = s.nic_gb_s * s.nics_per_node / s.gpus_per_node;
    }
    if (auto arch = n.opt_string("nccl_arch")) {
      const auto a = parse_nccl_arch(*arch);
      if (!a) n.fail("nccl_arch", "expected \"volta\", \"ampere\", \"hopper\" or \"blackwell\", got \"" + *arch + "\"");
      s.topology.arch = *a;
    }
    n.finish();
  }
  std::optional<double> grouped_gemm_expert_us;
  if (const nlohmann::json* host = r.opt_object("host")) {
    FieldReader hr(*host, file, "host");
    s.host_link_name = hr.string_or("link", "");
    s.host_link_gb_s = hr.positive_number_or("link_gb_s", 0);
    s.host_link_efficiency = hr.fraction_or("link_efficiency", s.host_link_efficiency);
    s.host_adam_params_per_s = hr.positive_number_or("adam_params_per_s", 0);
    // Host dispatch (simulator/host_dispatch.h): absent = not modeled; 0 is a legal value.
    for (const char* key : {"op_dispatch_us", "sync_us"}) {
      const auto v = hr.opt_number(key);
      if (v && *v < 0) hr.fail(key, "expected a non-negative number of microseconds");
      (std::string(key) == "sync_us" ? s.host_sync_us : s.host_op_dispatch_us) = v.value_or(0);
    }
    if (const auto v = hr.opt_number("grouped_gemm_expert_us")) {
      if (*v < 0) hr.fail("grouped_gemm_expert_us", "expected a non-negative number of microseconds");
      grouped_gemm_expert_us = *v;
    }
    hr.finish();
  }
  // Absent: one C++ launch per expert, the launch gap the efficiency block gives.
  s.host_grouped_gemm_expert_us = grouped_gemm_expert_us.value_or(s.kernel_launch_us);
  if (auto cv = r.opt_number("straggler_cv")) {
    if (*cv < 0) r.fail("straggler_cv", "expected a non-negative coefficient of variation (0 = off)");
    s.straggler_cv = *cv;
  }
  r.finish();
  return s;
}

namespace {

// 2D tensor parallelism (simulator/layer_ops_tp2d.h): the grid, and what it is modeled for.
void validate_tp_2d(const ModelConfig& model, const StrategyConfig& s, const std::string& sfile,
                    const std::string& mfile) {
  auto fail = [&](const std::string& field, const std::string& problem) { throw InputError(sfile, field, problem); };
  const int rows = s.tp_2d_rows, cols = s.tp_2d_cols;
  if (rows * cols != s.tp_size) {
    fail("tp_2d_rows", fmt::format("tp_2d_rows x tp_2d_cols ({} x {} = {}) must equal tp_size ({})", rows, cols,
                                   rows * cols, s.tp_size));
  }
  if (model.is_moe || model.attention_type == AttentionType::mla || model.mtp_num_layers > 0) {
    fail("tensor_parallel_mode", fmt::format("2d tensor parallelism is modeled for dense MHA/GQA models without MTP; "
                                             "{} is MoE, MLA or has MTP layers (use \"1d\")", mfile));
  }
  if (s.cp_size > 1) fail("cp_size", "2d tensor parallelism with context parallelism is not modeled; use cp_size 1");
  if (!s.use_flash_sdp) fail("use_flash_sdp", "2d tensor parallelism needs use_flash_sdp: true");
  if (s.tp_size > 1 && !s.sequence_parallel) {
    fail("enable_sequence_parallel", "2d tensor parallelism shards activations over the whole grid (it includes "
                                     "sequence parallelism); set enable_sequence_parallel: true");
  }
  if (rows > 1 && s.seq_len % (2 * rows * cols) != 0) {
    fail("seq_len", fmt::format("seq_len ({}) must be divisible by 2 x tp_2d_rows x tp_2d_cols = {} (the column group "
                                "splits each sequence into 2 x rows causal chunks, the row group splits those)",
                                s.seq_len, 2 * rows * cols));
  }
  if (model.hidden_size % s.tp_size != 0 || model.intermediate_size % s.tp_size != 0) {
    fail("tp_2d_rows", fmt::format("hidden_size ({}) and intermediate_size ({}) of {} must be divisible by "
                                   "tp_size ({}) for the 2d weight blocks",
                                   model.hidden_size, model.intermediate_size, mfile, s.tp_size));
  }
}

// 2D context parallelism (simulator/layer_ops_cp2d.h): the grid, and what it is modeled for.
void validate_cp_2d(const ModelConfig& model, const StrategyConfig& s, const std::string& sfile,
                    const std::string& mfile) {
  auto fail = [&](const std::string& field, const std::string& problem) { throw InputError(sfile, field, problem); };
  const int rows = s.cp_2d_rows, cols = s.cp_2d_cols;
  if (rows * cols != s.cp_size) {
    fail("cp_2d_rows", fmt::format("cp_2d_rows x cp_2d_cols ({} x {} = {}) must equal cp_size ({})", rows, cols,
                                   rows * cols, s.cp_size));
  }
  if (s.tp_mode == TensorParallelMode::two_d) {
    fail("context_parallel_mode", "2d context parallelism with 2d tensor parallelism is not modeled; use one of them");
  }
  if (s.cp_comm_type != CpCommType::p2p) {
    fail("cp_comm_type", "must be \"p2p\" (or absent) with context_parallel_mode \"2d\": the grid runs all-to-all "
                         "along cp_2d_rows and the ring along cp_2d_cols");
  }
  if (model.attention_type == AttentionType::mla) {
    fail("context_parallel_mode", fmt::format("2d context parallelism is modeled for MHA/GQA attention; {} uses MLA "
                                              "(use \"1d\")", mfile));
  }
  const std::int64_t heads = model.head_num / s.tp_size, kv_heads = model.kv_head_num / s.tp_size;
  if (heads % rows != 0 || kv_heads % rows != 0) {
    fail("cp_2d_rows", fmt::format("head_num/tp ({}) and kv_head_num/tp ({}) of {} must be divisible by cp_2d_rows "
                                   "({}): the all-to-all along the rows splits the heads",
                                   heads, kv_heads, mfile, rows));
  }
}

}  // namespace

void validate_layout(const ModelConfig& model, StrategyConfig& s, const std::string& sfile, const std::string& mfile) {
  auto fail = [&](const std::string& field, const std::string& problem) { throw InputError(sfile, field, problem); };
  const int model_parallel = s.tp_size * s.pp_size * s.cp_size;
  if (s.world_size % model_parallel != 0) {
    fail("world_size", fmt::format("world_size ({}) must be divisible by tp_size*pp_size*cp_size = {}*{}*{} = {}",
                                   s.world_size, s.tp_size, s.pp_size, s.cp_size, model_parallel));
  }
  s.dp_size = s.world_size / model_parallel;
  if (model.head_num % s.tp_size != 0) {
    fail("tp_size", fmt::format("head_num ({}, {}) must be divisible by tp_size ({})", model.head_num, mfile, s.tp_size));
  }
  if (model.kv_head_num % s.tp_size != 0) {
    fail("tp_size",
         fmt::format("kv_head_num ({}, {}) must be divisible by tp_size ({})", model.kv_head_num, mfile, s.tp_size));
  }
  s.sequence_parallel = s.enable_sequence_parallel && s.tp_size > 1;
  if (s.sequence_parallel && s.seq_len % s.tp_size != 0) {
    fail("seq_len", fmt::format("seq_len ({}) must be divisible by tp_size ({}) with sequence parallelism", s.seq_len,
                                s.tp_size));
  }
  if (s.cp_size > 1) {
    // Ring and all-gather attention with causal load balancing split the sequence into 2·cp chunks.
    const bool chunked = s.cp_comm_type != CpCommType::a2a;
    const std::int64_t parts = (chunked ? 2 : 1) * s.cp_size * (s.sequence_parallel ? s.tp_size : 1);
    if (s.seq_len % parts != 0) {
      fail("seq_len", fmt::format("seq_len ({}) must be divisible by {} with cp_size {}{}", s.seq_len, parts, s.cp_size,
                                  s.cp_comm_type == CpCommType::p2p ? " (ring attention splits it into 2·cp chunks)"
                                  : chunked ? " (all-gather attention's causal load balancing splits it into 2·cp chunks)"
                                            : ""));
    }
    if (!s.use_flash_sdp) fail("cp_size", "context parallelism needs use_flash_sdp: true (Megatron runs CP in TE's flash attention)");
    // Ring CP hands each rank K/V chunks of the whole sequence; a window would need only the
    // neighbour's last W keys, which the ring model does not describe. TE also has no backend for
    // sinks under p2p CP (TransformerEngine issue 2541). Ulysses (a2a) attends the full sequence.
    const bool ring = s.cp_comm_type != CpCommType::a2a || s.cp_mode == ContextParallelMode::two_d;
    if (ring && (model.attention_window_tokens > 0 || model.attention_sinks)) {
      fail("cp_comm_type", fmt::format("the model ({}) has {}; ring (p2p / 2D) and all-gather context parallelism "
                                       "are not modelled for it: use cp_comm_type \"a2a\" or cp_size 1",
                                       mfile, model.attention_window_tokens > 0 ? "sliding-window attention" : "attention sinks"));
    }
    if (s.cp_comm_type == CpCommType::a2a &&
        ((model.head_num / s.tp_size) % s.cp_size != 0 || (model.kv_head_num / s.tp_size) % s.cp_size != 0)) {
      fail("cp_comm_type", fmt::format("a2a (Ulysses) needs head_num/tp ({}) and kv_head_num/tp ({}) divisible by cp_size ({})",
                                       model.head_num / s.tp_size, model.kv_head_num / s.tp_size, s.cp_size));
    }
  }
  if (s.tp_mode == TensorParallelMode::two_d) validate_tp_2d(model, s, sfile, mfile);
  if (s.cp_mode == ContextParallelMode::two_d) validate_cp_2d(model, s, sfile, mfile);
  if (s.cp_impl == CpImplementation::pytorch && s.cp_size > 1) {
    // PyTorch's context_parallel is a ring over the flash op of MHA/GQA attention; its merging
    // is modelled for that case only.
    if (s.cp_comm_type != CpCommType::p2p || s.cp_mode == ContextParallelMode::two_d) {
      fail("cp_implementation", "\"pytorch\" (torch.distributed context_parallel) is a ring: it needs cp_comm_type "
                                "\"p2p\" and context_parallel_mode \"1d\"");
    }
    if (model.attention_type == AttentionType::mla) {
      fail("cp_implementation", fmt::format("\"pytorch\" is modelled for MHA/GQA attention; the model ({}) uses MLA",
                                            mfile));
    }
  }
  if (s.recompute_granularity == RecomputeGranularity::selective_op) {
    // The op-level policy is defined on the matmul order of torchtitan's Llama block (q, k, v, o,
    // w1, w3, w2); other layer kinds have no such published order.
    std::string why;
    if (model.is_moe) why = fmt::format("the model ({}) is a MoE model", mfile);
    else if (model.attention_type == AttentionType::mla) why = fmt::format("the model ({}) uses MLA attention", mfile);
    else if (model.mtp_num_layers > 0) why = fmt::format("the model ({}) has multi-token prediction layers", mfile);
    else if (!s.use_flash_sdp) why = "the strategy runs unfused attention (use_flash_sdp false)";
    if (!why.empty()) {
      fail("recompute_granularity",
           fmt::format("\"selective_op\" (torchtitan's op-level selective checkpointing) is modelled for dense MHA/GQA "
                       "layers with flash attention; {}: use another recompute_granularity",
                       why));
    }
  }
  if (s.recompute_granularity == RecomputeGranularity::save_qkv_proj && model.attention_type == AttentionType::mla) {
    // MaxText names MLA's projections differently (wq_a, wkv_a, ...); which of them the policy
    // saves is not modelled.
    fail("recompute_granularity",
         fmt::format("\"save_qkv_proj\" (MaxText's remat policy) is modelled for MHA/GQA attention; the model ({}) "
                     "uses MLA: use another recompute_granularity",
                     mfile));
  }
  if (s.megatron_recompute_modules && s.recompute_granularity == RecomputeGranularity::selective) {
    // Megatron-Core's TransformerConfig refuses these two (the modules that do nothing for a
    // model are a warning of simulate's instead: Megatron accepts them).
    if ((s.megatron_recompute_modules & kRecomputeMlaUpProj) && model.attention_type != AttentionType::mla) {
      fail("megatron_recompute_modules",
           fmt::format("\"mla_up_proj\" needs MLA attention; the model ({}) has none (Megatron refuses it too)", mfile));
    }
    if ((s.megatron_recompute_modules & kRecomputeMoeAct) && !s.moe_grouped_gemm) {
      fail("megatron_recompute_modules",
           "\"moe_act\" needs moe_grouped_gemm: true (Megatron: \"moe_act in recompute_modules is only supported with "
           "moe_grouped_gemm\")");
    }
  }
  if (s.tp_comm_overlap && s.tp_size > 1 && !s.sequence_parallel) {
    fail("tp_comm_overlap", "TP communication overlap needs sequence parallelism (enable_sequence_parallel: true)");
  }
  s.edp_size = 1;
  if (model.is_moe) {
    if (model.expert_num % s.ep_size != 0) {
      fail("ep_size", fmt::format("expert_num ({}) must be divisible by ep_size ({})", model.expert_num, s.ep_size));
    }
    const int expert_parallel = s.ep_size * s.etp_size * s.pp_size;
    if (s.world_size % expert_parallel != 0) {
      fail("ep_size", fmt::format("world_size ({}) must be divisible by ep_size*etp_size*pp_size = {}", s.world_size,
                                  expert_parallel));
    }
    s.edp_size = s.world_size / expert_parallel;
    if (model.moe_ffn_hidden_size % s.etp_size != 0) {
      fail("etp_size", fmt::format("moe_ffn_hidden_size ({}, {}) must be divisible by etp_size ({})",
                                   model.moe_ffn_hidden_size, mfile, s.etp_size));
    }
    if (s.tp_size > 1 && !s.sequence_parallel) {
      fail("enable_sequence_parallel", "MoE layers with tp_size > 1 need sequence parallelism (Megatron requires it)");
    }
    // Megatron's flex dispatcher exchanges tokens over the combined expert-TP x EP group; calisim
    // models its exchange over the EP group only.
    if (s.moe_dispatcher == MoeDispatcher::flex && s.etp_size > 1) {
      fail("etp_size", "the flex (DeepEP / HybridEP) dispatcher with expert tensor parallelism (etp_size > 1) is not "
                       "modeled; use etp_size 1 or the alltoall dispatcher");
    }
  } else if (s.ep_size != 1 || s.etp_size != 1) {
    fail(s.ep_size != 1 ? "ep_size" : "etp_size", "expert parallelism needs a MoE model; use 1 for dense models");
  }
  if (s.dp_replicate_size > 1) {
    if (const std::string why = replicas_without_sharding(s); !why.empty()) fail("dp_replicate_size", why);
    // Every replica holds a whole copy of the sharded state: the replicas split the dense dp·cp
    // group, and the expert-data-parallel group, evenly.
    const int dense_dp = s.dp_size * s.cp_size;
    if (dense_dp % s.dp_replicate_size != 0) {
      fail("dp_replicate_size", fmt::format("the data-parallel ranks dp_size*cp_size = {} (world_size {} / "
                                            "(tp_size*pp_size) {}) must be divisible by dp_replicate_size ({})",
                                            dense_dp, s.world_size, s.tp_size * s.pp_size, s.dp_replicate_size));
    }
    if (model.is_moe && s.edp_size % s.dp_replicate_size != 0) {
      fail("dp_replicate_size", fmt::format("the expert-data-parallel size ({} = world_size / (ep*etp*pp)) must be "
                                            "divisible by dp_replicate_size ({})",
                                            s.edp_size, s.dp_replicate_size));
    }
  }
  if (s.overlap_moe_expert_parallel_comm) {
    // Megatron-Core's TransformerConfig refuses these combinations (its EP all-to-all overlap runs
    // the combined 1F1B schedule, which needs them).
    std::string why;
    if (!model.is_moe || s.ep_size == 1) {
      why = "needs expert parallelism (a MoE model with ep_size > 1)";
    } else if (s.moe_dispatcher == MoeDispatcher::all_gather) {
      why = "needs the alltoall or flex token dispatcher, not allgather";
    } else if (s.pp_size > 1 && s.interleaving_size == 1) {
      why = "with pp_size > 1 runs only in the interleaved schedule: set interleaving_size > 1";
    } else if (s.recompute_active() && s.recompute_granularity == RecomputeGranularity::full_block) {
      why = "cannot be combined with full recompute (recompute_granularity \"full_block\")";
    } else if (s.moe_shared_expert_overlap) {
      why = "replaces moe_shared_expert_overlap; set only one of them";
    }
    if (!why.empty()) fail("overlap_moe_expert_parallel_comm", why + " (Megatron-Core refuses it otherwise)");
  }
  if (model.is_moe && pipeline_stride(s) != expert_pipeline_stride(s)) {
    fail("order", fmt::format("\"{}\" gives dense layers pipeline stages {} ranks apart but expert layers {} (the "
                              "product of the sizes ordered before pp: tp, cp, dp for dense layers; etp, ep, edp for "
                              "experts); Megatron needs one set of pipeline groups: order pp after ep and dp",
                              to_string(s.rank_order), pipeline_stride(s), expert_pipeline_stride(s)));
  }
  if (model.attention_type == AttentionType::mla && model.head_num % s.tp_size != 0) {
    fail("tp_size", fmt::format("head_num ({}, {}) must be divisible by tp_size ({})", model.head_num, mfile, s.tp_size));
  }

  // Batch arithmetic: global = mbs * m * dp.
  const std::int64_t per_step = s.micro_batch_size * s.dp_size;
  if (s.micro_batch_num == 0) {
    if (s.global_batch_size % per_step != 0) {
      fail("global_batch_size", fmt::format("global_batch_size ({}) must be divisible by micro_batch_size*dp = {}*{}",
                                            s.global_batch_size, s.micro_batch_size, s.dp_size));
    }
    s.micro_batch_num = s.global_batch_size / per_step;
  } else if (s.global_batch_size != 0 && s.global_batch_size != s.micro_batch_num * per_step) {
    fail("global_batch_size",
         fmt::format("global_batch_size ({}) != micro_batch_size*micro_batch_num*dp = {}*{}*{} = {}",
                     s.global_batch_size, s.micro_batch_size, s.micro_batch_num, s.dp_size,
                     s.micro_batch_num * per_step));
  }
  s.global_batch_size = s.micro_batch_num * per_step;

  // Pipeline split.
  const int p = s.pp_size, v = s.interleaving_size;
  const int L = static_cast<int>(model.layer_num);
  if (v > 1 && p == 1) fail("interleaving_size", "interleaving_size > 1 requires pp_size > 1");
  if (v > 1) {
    // Megatron-Core's interleaved schedule: micro-batches go in groups of g per chunk, p ≤ g ≤ m;
    // a last, smaller group must hold at least p (fewer would stall the pipeline, and Megatron
    // refuses it).
    const std::int64_t m = s.micro_batch_num;
    const int g = s.microbatch_group();
    if (s.microbatch_group_size_per_vp_stage > 0 && (g < p || g > m)) {
      fail("microbatch_group_size_per_vp_stage",
           fmt::format("{} is outside [pp_size, micro_batch_num] = [{}, {}] (Megatron's interleaved schedule refuses it)",
                       g, p, m));
    }
    const std::int64_t rest = m % g;
    if (g == p && rest != 0) {
      fail("micro_batch_num",
           fmt::format("with interleaving, micro_batch_num ({}) must be a multiple of pp_size ({}), or set "
                       "microbatch_group_size_per_vp_stage so that the last group of micro-batches holds at least "
                       "pp_size",
                       m, p));
    }
    if (rest != 0 && rest < p) {
      fail("micro_batch_num",
           fmt::format("with interleaving in groups of microbatch_group_size_per_vp_stage = {}, micro_batch_num ({}) "
                       "leaves a last group of {}, fewer than pp_size ({}); Megatron refuses that",
                       g, m, rest, p));
    }
  }
  int first = s.num_layers_in_first_pipeline_stage, last = s.num_layers_in_last_pipeline_stage;
  const bool emb = s.account_for_embedding_in_pipeline_split, loss = s.account_for_loss_in_pipeline_split;
  if (!s.pipeline_layout.empty()) {
    // Megatron's --pipeline-model-parallel-layout names every virtual stage's layers; it excludes
    // the uneven-split and account_for_* knobs (Megatron asserts the same).
    if (first || last || emb || loss) {
      fail("pipeline_layout", "cannot be combined with num_layers_in_first/last_pipeline_stage or "
                              "account_for_embedding/loss_in_pipeline_split (Megatron rejects both)");
    }
    std::vector<LayoutStage> stages;
    try {
      stages = parse_pipeline_layout(s.pipeline_layout);
    } catch (const std::invalid_argument& e) {
      fail("pipeline_layout", fmt::format("\"{}\": {}", s.pipeline_layout, e.what()));
    }
    const std::string bad = check_pipeline_layout(stages, p, v, L, static_cast<int>(model.mtp_num_layers));
    if (!bad.empty()) {
      const bool about_model = bad.find("the model's") != std::string::npos;
      fail("pipeline_layout", fmt::format("\"{}\" {}{}", s.pipeline_layout, bad, about_model ? " (" + mfile + ")" : ""));
    }
    s.layers_per_chunk.clear();
    for (const LayoutStage& st : stages) s.layers_per_chunk.push_back(st.decoder);
  }
  if (s.pipeline_layout.empty() && (first || last) && p == 1) {
    fail(first ? "num_layers_in_first_pipeline_stage" : "num_layers_in_last_pipeline_stage",
         "uneven pipeline stages need pp_size > 1");
  }
  if (s.pipeline_layout.empty() && (emb || loss)) {
    // Megatron: (layer_num + embedding + loss) / (pp·vpp) layers per virtual chunk, one fewer in
    // the first chunk (embedding) and the last chunk (loss); a chunk may be left with none.
    const char* field = emb ? "account_for_embedding_in_pipeline_split" : "account_for_loss_in_pipeline_split";
    if (p == 1) fail(field, "counting the embedding or the loss as a layer needs pp_size > 1");
    if (first || last) fail(field, "cannot be combined with num_layers_in_first/last_pipeline_stage (Megatron rejects both)");
    const int chunks = p * v, counted = L + (emb ? 1 : 0) + (loss ? 1 : 0);
    if (counted % chunks != 0) {
      fail(field, fmt::format("layer_num {} plus the embedding/loss ({} in all) does not divide over pp_size * "
                              "interleaving_size = {} chunks",
                              L, counted, chunks));
    }
    s.layers_per_chunk.assign(static_cast<std::size_t>(chunks), counted / chunks);
    if (emb) --s.layers_per_chunk.front();
    if (loss) --s.layers_per_chunk.back();
    if (L < 1 || *std::min_element(s.layers_per_chunk.begin(), s.layers_per_chunk.end()) < 0) {
      fail(field, "not enough layers for the embedding/loss chunks");
    }
  }
  std::vector<int> stage_layers(p, 0);
  const bool chunks_set = emb || loss || !s.pipeline_layout.empty();
  if (chunks_set) {
    // layers_per_chunk is set above.
  } else if (!first && !last) {
    if (L % p != 0) {
      fail("pp_size", fmt::format("layer_num ({}) is not divisible by pp_size ({}); set "
                                  "num_layers_in_first/last_pipeline_stage for an uneven split",
                                  L, p));
    }
    for (int i = 0; i < p; ++i) stage_layers[i] = L / p;
  } else {
    const int fixed = (first ? 1 : 0) + (last ? 1 : 0);
    const int middle_stages = p - fixed;
    const int rest = L - first - last;
    if (rest < 0 || (middle_stages == 0 && rest != 0) || (middle_stages > 0 && (rest <= 0 || rest % middle_stages))) {
      fail(first ? "num_layers_in_first_pipeline_stage" : "num_layers_in_last_pipeline_stage",
           fmt::format("uneven split does not add up: layer_num {} - first {} - last {} = {} layers must divide evenly "
                       "over the {} remaining stage(s)",
                       L, first, last, rest, middle_stages));
    }
    for (int i = 0; i < p; ++i) stage_layers[i] = middle_stages > 0 ? rest / middle_stages : 0;
    if (first) stage_layers[0] = first;
    if (last) stage_layers[p - 1] = last;
  }
  for (int i = 0; i < p && !chunks_set; ++i) {
    if (stage_layers[i] % v != 0) {
      fail("interleaving_size", fmt::format("pipeline stage {} has {} layers, not divisible into interleaving_size {} "
                                            "chunks",
                                            i, stage_layers[i], v));
    }
  }
  if (!chunks_set) {
    s.layers_per_chunk.assign(static_cast<std::size_t>(p) * v, 0);
    for (int c = 0; c < v; ++c) {
      for (int i = 0; i < p; ++i) s.layers_per_chunk[static_cast<std::size_t>(c) * p + i] = stage_layers[i] / v;
    }
  }
  if (s.num_layers_at_start_in_bf16 + s.num_layers_at_end_in_bf16 > L) {
    fail("num_layers_at_start_in_bf16",
         fmt::format("num_layers_at_start_in_bf16 + num_layers_at_end_in_bf16 ({} + {}) exceeds the model's {} layers ({})",
                     s.num_layers_at_start_in_bf16, s.num_layers_at_end_in_bf16, L, mfile));
  }
  if (s.cpu_offloading_num_layers > 0) {
    int fewest = L;
    for (int n : s.layers_per_chunk) fewest = std::min(fewest, n);
    if (s.cpu_offloading_num_layers >= fewest) {
      fail("cpu_offloading_num_layers", fmt::format("must be smaller than the layers of every model chunk ({} in the "
                                                    "smallest); the last layer's activations are used at once",
                                                    fewest));
    }
  }
}

void apply_override(const std::string& assignment, nlohmann::json& model, nlohmann::json& strategy,
                    nlohmann::json& system) {
  const std::string where = "--set " + assignment;
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw InputError("<--set>", where, "expected section.key=value, e.g. strategy.tp_size=4");
  }
  const std::string path = assignment.substr(0, eq);
  const std::string value = assignment.substr(eq + 1);
  const auto dot = path.find('.');
  if (dot == std::string::npos) {
    throw InputError("<--set>", where, "expected section.key=value with section model, strategy or system");
  }
  const std::string section = path.substr(0, dot);
  nlohmann::json* doc = section == "model" ? &model : section == "strategy" ? &strategy : section == "system" ? &system
                                                                                                              : nullptr;
  if (!doc) throw InputError("<--set>", where, "unknown section '" + section + "' (expected model, strategy or system)");
  nlohmann::json parsed;
  try {
    parsed = nlohmann::json::parse(value);
  } catch (const nlohmann::json::parse_error&) {
    parsed = value;  // bare words are strings: strategy.recompute_granularity=full_block
  }
  nlohmann::json* node = doc;
  std::string rest = path.substr(dot + 1);
  while (true) {
    const auto d = rest.find('.');
    const std::string key = rest.substr(0, d);
    if (key.empty()) throw InputError("<--set>", where, "empty key in path");
    if (!node->is_object()) throw InputError("<--set>", where, "'" + key + "' is inside a non-object value");
    if (d == std::string::npos) {
      (*node)[key] = parsed;
      break;
    }
    node = &(*node)[key];
    if (node->is_null()) *node = nlohmann::json::object();
    rest = rest.substr(d + 1);
  }
}

}  // namespace calisim
