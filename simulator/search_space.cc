#include "simulator/search_space.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

#include "core/error.h"
#include "simulator/config_loader.h"
#include "simulator/rank_placement.h"

namespace calisim {

std::string to_string(RecomputeChoice c) {
  using K = RecomputeChoice::Kind;
  switch (c.kind) {
    case K::none: return "none";
    case K::selective: return "selective";
    case K::attn: return "attn";
    case K::mlp: return "mlp";
    case K::attn_mlp: return "attn+mlp";
    case K::full: return "full";
    case K::modules: return "modules:" + megatron_recompute_module_names(c.modules, "+");
  }
  return "none";
}

RecomputeChoice parse_recompute_choice(const std::string& n) {
  if (n == "none" || n == "no_recompute") return RecomputeChoice::none;
  if (n == "selective" || n == "sdp_only" || n == "core_attn") return RecomputeChoice::selective;
  if (n == "attn") return RecomputeChoice::attn;
  if (n == "mlp") return RecomputeChoice::mlp;
  if (n == "attn+mlp" || n == "selective_recompute") return RecomputeChoice::attn_mlp;
  if (n == "full" || n == "full_block") return RecomputeChoice::full;
  const std::string prefix = "modules:";
  if (n.rfind(prefix, 0) == 0) {
    RecomputeChoice c{RecomputeChoice::Kind::modules, 0};
    std::size_t at = prefix.size();
    while (true) {
      const std::size_t plus = n.find('+', at);
      const std::string name = n.substr(at, plus == std::string::npos ? std::string::npos : plus - at);
      const std::uint8_t bit = megatron_recompute_module_bit(name);
      if (bit == 0) {
        throw std::invalid_argument("unknown Megatron recompute module '" + name + "' in '" + n +
                                    "' (expected layernorm, mla_up_proj, moe_act, mlp or moe, joined by '+'; "
                                    "core_attn alone is 'selective')");
      }
      if (c.modules & bit) throw std::invalid_argument("recompute module '" + name + "' named twice in '" + n + "'");
      c.modules |= bit;
      if (plus == std::string::npos) break;
      at = plus + 1;
    }
    return c;
  }
  throw std::invalid_argument("unknown recompute choice '" + n +
                              "' (expected none, selective, attn, mlp, attn+mlp, full or modules:NAME[+NAME...] with "
                              "Megatron's module names; SimuMax's no_recompute, selective_recompute and full_block are "
                              "accepted)");
}

std::vector<RankOrder> rank_order_list(const std::string& name) {
  if (name == "megatron") return {kMegatronRankOrder};
  std::vector<RankOrder> all = all_rank_orders();
  if (name == "all") return all;
  if (name == "tp_first") {
    std::vector<RankOrder> out;
    for (const RankOrder& o : all) {
      if (o[0] == ParallelDim::tp) out.push_back(o);
    }
    return out;
  }
  std::string why;
  if (const auto one = parse_rank_order(name, &why)) return {*one};
  throw std::invalid_argument("unknown order list '" + name +
                              "' (expected megatron, tp_first, all, or one order such as tp-dp-cp-ep-pp: " + why + ")");
}

void fill_default_lists(SearchSpace& s, const ModelConfig& m, int domain) {
  if (s.tp.empty()) {
    for (int t = 1; t <= 8 && t <= domain && t <= s.world_size; t *= 2) s.tp.push_back(t);
  }
  if (s.pp.empty()) {
    // Every pipeline size that divides the world and has an even or uneven split of the layers.
    for (int p = 1; p <= m.layer_num && p <= s.world_size; ++p) {
      int first = 0, last = 0;
      if (s.world_size % p == 0 && pipeline_split(static_cast<int>(m.layer_num), p, &first, &last)) s.pp.push_back(p);
    }
  }
  if (s.vpp.empty()) s.vpp = {1, 2, 3, 4, 5, 6, 7, 8};
  if (s.cp.empty()) s.cp = {1};
  if (s.ep.empty()) {
    // A MoE model's experts are what expert parallelism splits: every power of two that divides
    // the expert count (Megatron needs num_moe_experts % ep == 0), up to the world size; the
    // layout check rejects the ep that do not fit the rest of the layout. Dense models: ep 1.
    s.ep = {1};
    if (m.is_moe) {
      for (int e = 2; e <= s.world_size && e <= m.expert_num; e *= 2) {
        if (m.expert_num % e == 0) s.ep.push_back(e);
      }
    }
  }
  if (s.mbs.empty()) s.mbs = {1, 2, 4, 8};
  if (s.recompute.empty()) s.recompute = {RecomputeChoice::none, RecomputeChoice::selective, RecomputeChoice::full};
  if (s.zero.empty()) s.zero = {1};
  if (s.orders.empty()) s.orders = rank_order_list("tp_first");
}

bool pipeline_split(int layers, int pp, int* first, int* last) {
  *first = *last = 0;
  if (pp < 1 || pp > layers) return false;
  if (layers % pp == 0) return true;
  if (pp == 2) {
    // The last stage also runs the LM head and loss: give it the smaller half.
    *first = (layers + 1) / 2;
    *last = layers / 2;
    return true;
  }
  // Middle stages get ceil(L/pp) layers; the first and last share the rest, the last (which holds
  // the LM head and loss) taking the smaller part, as in Megatron's uneven-stage recipes.
  const int k = (layers + pp - 1) / pp;
  const int rest = layers - (pp - 2) * k;
  if (rest < 2) return false;
  *last = rest / 2;
  *first = rest - *last;
  return *first <= k;
}

std::uint64_t space_size(const SearchSpace& s) {
  return static_cast<std::uint64_t>(s.tp.size()) * s.pp.size() * s.vpp.size() * s.cp.size() * s.ep.size() *
         s.mbs.size() * s.recompute.size() * s.zero.size() * s.orders.size() *
         std::max<std::size_t>(1, s.tp_2d_rows.size()) * std::max<std::size_t>(1, s.cp_2d_rows.size()) *
         std::max<std::size_t>(1, s.etp.size()) * std::max<std::size_t>(1, s.cp_comm.size()) *
         std::max<std::size_t>(1, s.dispatchers.size()) * std::max<std::size_t>(1, s.dp_replicate.size());
}

Candidate candidate_at(const SearchSpace& s, std::uint64_t i) {
  // Innermost list varies fastest; the order is part of the shard contract.
  Candidate c;
  auto take = [&i](const auto& list) {
    const auto v = list[i % list.size()];
    i /= list.size();
    return v;
  };
  c.order = take(s.orders);
  c.zero = take(s.zero);
  c.recompute = take(s.recompute);
  c.mbs = take(s.mbs);
  c.ep = take(s.ep);
  c.cp = take(s.cp);
  c.vpp = take(s.vpp);
  c.pp = take(s.pp);
  c.tp = take(s.tp);
  c.tp_2d_rows = s.tp_2d_rows.empty() ? 0 : take(s.tp_2d_rows);
  c.cp_2d_rows = s.cp_2d_rows.empty() ? 0 : take(s.cp_2d_rows);
  c.etp = s.etp.empty() ? 0 : take(s.etp);
  c.cp_comm = s.cp_comm.empty() ? -1 : static_cast<int>(take(s.cp_comm));
  c.dispatcher = s.dispatchers.empty() ? -1 : static_cast<int>(take(s.dispatchers));
  c.dp_replicate = s.dp_replicate.empty() ? 0 : take(s.dp_replicate);
  return c;
}

bool make_strategy(const StrategyConfig& base, const ModelConfig& m, const SearchSpace& space, const Candidate& c,
                   StrategyConfig& out, std::string* reason) {
  auto no = [&](std::string why) {
    if (reason) *reason = std::move(why);
    return false;
  };
  // Cheap divisibility checks first: most of a space fails here, without building anything.
  const int mp = c.tp * c.pp * c.cp;
  if (space.world_size % mp != 0) return no("world size not divisible by tp*pp*cp");
  const int dp = space.world_size / mp;
  if (m.head_num % c.tp || m.kv_head_num % c.tp) return no("heads not divisible by tp");
  if (c.tp_2d_rows != 0 && (c.tp_2d_rows < 2 || c.tp % c.tp_2d_rows)) {
    return no("2d grid rows must be at least 2 (a 1 x t grid is 1D TP) and divide tp");
  }
  if (c.cp_2d_rows != 0 && (c.cp_2d_rows < 2 || c.cp % c.cp_2d_rows)) {
    return no("2d CP grid rows must be at least 2 (a 1 x c grid is 1D ring CP) and divide cp");
  }
  int first = 0, last = 0;
  const int L = static_cast<int>(m.layer_num);
  if (!pipeline_split(L, c.pp, &first, &last)) return no("layers cannot be split over pp stages");
  if (first == 0) {
    if ((L / c.pp) % c.vpp) return no("layers per stage not divisible by vpp");
  } else {
    const int middle = c.pp > 2 ? (L - first - last) / (c.pp - 2) : first;
    if (first % c.vpp || last % c.vpp || middle % c.vpp) return no("stage layer counts not divisible by vpp");
  }
  if (c.vpp > 1 && c.pp == 1) return no("vpp > 1 needs pp > 1");
  if (space.global_batch_size % (c.mbs * dp)) return no("global batch not divisible by mbs*dp");
  const std::int64_t micro = space.global_batch_size / (c.mbs * dp);
  if (c.vpp > 1 && micro % c.pp) return no("micro-batches not a multiple of pp with interleaving");
  if (!m.is_moe && c.ep != 1) return no("ep > 1 needs a MoE model");
  if (c.etp < 0) return no("etp must be at least 1");
  if (!m.is_moe && c.etp > 1) return no("etp > 1 needs a MoE model");
  if (c.cp_comm >= 0 && !space.cp_comm.empty() && c.cp_comm != static_cast<int>(space.cp_comm.front())) {
    if (c.cp == 1) return no("the CP communication type only matters with cp > 1 (the list's first one stands for it)");
    if (c.cp_2d_rows) return no("a 2D CP grid fixes its communication (the list's first type stands for it)");
  }
  if (c.dispatcher >= 0 && !space.dispatchers.empty() && c.dispatcher != static_cast<int>(space.dispatchers.front())) {
    if (!m.is_moe) return no("the MoE dispatcher only matters for a MoE model (the list's first one stands for it)");
    if (c.ep == 1) return no("the MoE dispatcher only matters with ep > 1 (the list's first one stands for it)");
  }
  if (c.zero < 0 || c.zero > kMaxModeledZeroStage) {
    return no(fmt::format("ZeRO stage {} is not modeled (0..{})", c.zero, kMaxModeledZeroStage));
  }
  if (c.dp_replicate < 0) return no("dp_replicate must be at least 1");

  out = base;
  out.world_size = space.world_size;
  out.tp_size = c.tp;
  out.pp_size = c.pp;
  out.interleaving_size = c.vpp;
  out.cp_size = c.cp;
  out.ep_size = c.ep;
  if (c.etp > 0) out.etp_size = c.etp;
  if (c.cp_comm >= 0) out.cp_comm_type = static_cast<CpCommType>(c.cp_comm);
  if (c.dispatcher >= 0) out.moe_dispatcher = static_cast<MoeDispatcher>(c.dispatcher);
  if (c.dp_replicate > 0) out.dp_replicate_size = c.dp_replicate;
  if (m.is_moe && out.moe_dispatcher == MoeDispatcher::flex && out.etp_size > 1) {
    return no("the flex dispatcher with expert tensor parallelism (etp > 1) is not modeled");
  }
  out.zero_state = c.zero;
  out.rank_order = c.order;
  out.tp_mode = c.tp_2d_rows ? TensorParallelMode::two_d : TensorParallelMode::one_d;
  out.tp_2d_rows = c.tp_2d_rows ? c.tp_2d_rows : 1;
  out.tp_2d_cols = c.tp_2d_rows ? c.tp / c.tp_2d_rows : 1;
  out.cp_mode = c.cp_2d_rows ? ContextParallelMode::two_d : ContextParallelMode::one_d;
  out.cp_2d_rows = c.cp_2d_rows ? c.cp_2d_rows : 1;
  out.cp_2d_cols = c.cp_2d_rows ? c.cp / c.cp_2d_rows : 1;
  if (c.cp_2d_rows) out.cp_comm_type = CpCommType::p2p;  // the grid fixes both: all-to-all on rows, ring on columns
  out.micro_batch_size = c.mbs;
  out.micro_batch_num = 0;
  out.global_batch_size = space.global_batch_size;
  out.num_layers_in_first_pipeline_stage = first;
  out.num_layers_in_last_pipeline_stage = last;
  out.enable_recompute = c.recompute != RecomputeChoice::none;
  out.attn_recompute = out.mlp_recompute = out.mla_rms_recompute = out.mlp_rms_recompute = false;
  out.recompute_variance = false;
  // Recompute every layer of each chunk (the largest chunk bounds the count).
  const int largest_stage = std::max({first, last, first ? (c.pp > 2 ? (L - first - last) / (c.pp - 2) : 0) : L / c.pp});
  out.recompute_layer_num = c.recompute == RecomputeChoice::none ? 0 : largest_stage / c.vpp;
  out.megatron_recompute_modules = 0;
  using K = RecomputeChoice::Kind;
  switch (c.recompute.kind) {
    case K::none: out.recompute_granularity = RecomputeGranularity::none; break;
    case K::selective: out.recompute_granularity = RecomputeGranularity::sdp_only; break;
    case K::full: out.recompute_granularity = RecomputeGranularity::full_block; break;
    case K::attn:
    case K::mlp:
    case K::attn_mlp:
      out.recompute_granularity = RecomputeGranularity::selective;
      out.attn_recompute = c.recompute != RecomputeChoice::mlp;
      out.mlp_recompute = c.recompute != RecomputeChoice::attn;
      break;
    case K::modules:
      out.recompute_granularity = RecomputeGranularity::selective;
      out.megatron_recompute_modules = c.recompute.modules;
      break;
  }
  try {
    validate_layout(m, out, "search candidate", "model");
  } catch (const InputError& e) {
    return no(e.problem());
  }
  return true;
}

bool order_keeps_pipeline_groups(const ModelConfig& model, const StrategyConfig& st) {
  return !model.is_moe || pipeline_stride(st) == expert_pipeline_stride(st);
}

void classify_orders(const ModelConfig& model, const SearchSpace& space, const StrategyConfig& st, int domain,
                     std::vector<OrderStatus>& out) {
  const std::size_t n = space.orders.size();
  out.assign(n, OrderStatus::keep);
  std::vector<RankPlacement> placed(n);
  StrategyConfig probe = st;
  for (std::size_t i = 0; i < n; ++i) {
    probe.rank_order = space.orders[i];
    if (!order_keeps_pipeline_groups(model, probe)) {
      out[i] = OrderStatus::illegal;
      continue;
    }
    placed[i] = place_ranks(probe, domain);
    for (std::size_t j = 0; j < i; ++j) {
      if (out[j] == OrderStatus::keep && placed[j] == placed[i]) {
        out[i] = OrderStatus::equivalent;
        break;
      }
    }
  }
}

bool equivalent_to_earlier_order(const ModelConfig& model, const SearchSpace& space, const Candidate& c,
                                 const StrategyConfig& st, int domain) {
  std::vector<OrderStatus> status;
  classify_orders(model, space, st, domain, status);
  for (std::size_t i = 0; i < space.orders.size(); ++i) {
    if (space.orders[i] == c.order) return status[i] == OrderStatus::equivalent;
  }
  return false;
}

std::string describe(const Candidate& c, int dp) {
  std::string text = fmt::format("tp {} pp {} vpp {} cp {} ep {} mbs {} dp {} zero {} recompute {} order {}", c.tp,
                                 c.pp, c.vpp, c.cp, c.ep, c.mbs, dp, c.zero, to_string(c.recompute),
                                 to_string(c.order));
  if (c.tp_2d_rows) text += fmt::format(" tp2d {}x{}", c.tp_2d_rows, c.tp / c.tp_2d_rows);
  if (c.cp_2d_rows) text += fmt::format(" cp2d {}x{}", c.cp_2d_rows, c.cp / c.cp_2d_rows);
  if (c.etp > 1) text += fmt::format(" etp {}", c.etp);
  if (c.cp > 1 && c.cp_comm >= 0) text += fmt::format(" cp_comm {}", cp_comm_type_name(static_cast<CpCommType>(c.cp_comm)));
  if (c.ep > 1 && c.dispatcher >= 0) text += fmt::format(" dispatcher {}", moe_dispatcher_name(static_cast<MoeDispatcher>(c.dispatcher)));
  if (c.dp_replicate > 1) text += fmt::format(" replicas {}", c.dp_replicate);
  return text;
}

}  // namespace calisim
