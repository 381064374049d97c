#include "simulator/sweep.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace calisim {

const char* to_string(HardwareParam p) {
  switch (p) {
    case HardwareParam::peak_bf16: return "peak_bf16";
    case HardwareParam::hbm_gb_s: return "hbm_gb_s";
    case HardwareParam::memory_gb: return "memory_gb";
    case HardwareParam::scaleup_gb_s: return "scaleup_gb_s";
    case HardwareParam::nic_gb_s: return "nic_gb_s";
    case HardwareParam::scaleup_domain: return "scaleup_domain";
  }
  return "";
}

const char* unit_of(HardwareParam p) {
  switch (p) {
    case HardwareParam::peak_bf16: return "TFLOP/s";
    case HardwareParam::hbm_gb_s:
    case HardwareParam::scaleup_gb_s:
    case HardwareParam::nic_gb_s: return "GB/s";
    case HardwareParam::memory_gb: return "GB";
    case HardwareParam::scaleup_domain: return "GPUs";
  }
  return "";
}

HardwareParam parse_hardware_param(const std::string& n) {
  for (HardwareParam p : {HardwareParam::peak_bf16, HardwareParam::hbm_gb_s, HardwareParam::memory_gb,
                          HardwareParam::scaleup_gb_s, HardwareParam::nic_gb_s, HardwareParam::scaleup_domain}) {
    if (n == to_string(p)) return p;
  }
  throw std::invalid_argument("unknown hardware parameter '" + n +
                              "' (expected peak_bf16, hbm_gb_s, memory_gb, scaleup_gb_s, nic_gb_s or scaleup_domain)");
}

double hardware_value(const SystemConfig& s, HardwareParam p) {
  switch (p) {
    case HardwareParam::peak_bf16: return s.device.peak_tflops[static_cast<int>(DType::bf16)];
    case HardwareParam::hbm_gb_s: return s.device.hbm_gb_s;
    case HardwareParam::memory_gb: return s.device.memory_gb;
    case HardwareParam::scaleup_gb_s: return s.scale_up.gpu_gb_s;
    case HardwareParam::nic_gb_s: return s.nic_gb_s;
    case HardwareParam::scaleup_domain: return s.scale_up_domain_size;
  }
  return 0;
}

SystemConfig with_hardware(const SystemConfig& base, HardwareParam p, double v) {
  if (!std::isfinite(v) || !(v > 0)) {
    throw std::invalid_argument(fmt::format("{} must be a finite positive number, got {}", to_string(p), v));
  }
  SystemConfig s = base;
  switch (p) {
    case HardwareParam::peak_bf16: {
      // Tensor-core peaks move together: a faster bf16 unit is a faster chip.
      const double f = v / base.device.peak_tflops[static_cast<int>(DType::bf16)];
      for (double& x : s.device.peak_tflops) x *= f;
      break;
    }
    case HardwareParam::hbm_gb_s: s.device.hbm_gb_s = v; break;
    case HardwareParam::memory_gb: s.device.memory_gb = v; break;
    case HardwareParam::scaleup_gb_s: s.scale_up.gpu_gb_s = v; break;
    case HardwareParam::nic_gb_s:
      s.nic_gb_s = v;
      s.scale_out.gpu_gb_s = v * s.nics_per_node / s.gpus_per_node;
      break;
    case HardwareParam::scaleup_domain: {
      // A domain holds whole GPUs; a range's geometric points land on whole numbers only up to
      // rounding error, which is all this tolerates (8.5 GPUs would silently become 9 otherwise).
      const long long d = std::llround(v);
      if (std::abs(v - static_cast<double>(d)) > 1e-9 * v) {
        throw std::invalid_argument(fmt::format("scaleup_domain must be a whole number of GPUs, got {:g}", v));
      }
      if (d < 1 || d > std::numeric_limits<int>::max()) {
        throw std::invalid_argument(fmt::format("scaleup_domain must be between 1 and {} GPUs, got {:g}",
                                                std::numeric_limits<int>::max(), v));
      }
      v = static_cast<double>(d);
      s.scale_up_domain_size = static_cast<int>(d);
      break;
    }
  }
  s.name = fmt::format("{} ({}={:g})", base.name, to_string(p), v);
  return s;
}

std::vector<double> parse_sweep_values(const std::string& spec, double base_value, int points) {
  auto one = [&](std::string t) {
    bool mult = !t.empty() && (t.back() == 'x' || t.back() == 'X');
    if (mult) t.pop_back();
    std::size_t used = 0;
    double v = 0;
    try {
      v = std::stod(t, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != t.size() || !std::isfinite(v) || !(v > 0)) {
      throw std::invalid_argument("bad sweep value '" + t + "' (expected a finite positive number, or a multiple "
                                  "such as 2x)");
    }
    const double out = mult ? v * base_value : v;
    if (!std::isfinite(out)) throw std::invalid_argument("sweep value '" + t + "x' overflows");
    return out;
  };
  std::vector<double> out;
  const auto dots = spec.find("..");
  if (dots != std::string::npos) {
    const double a = one(spec.substr(0, dots)), b = one(spec.substr(dots + 2));
    if (points < 2) throw std::invalid_argument("a range needs at least 2 points");
    for (int i = 0; i < points; ++i) out.push_back(a * std::pow(b / a, static_cast<double>(i) / (points - 1)));
    return out;
  }
  std::size_t start = 0;
  while (start <= spec.size()) {
    const auto comma = spec.find(',', start);
    out.push_back(one(spec.substr(start, comma == std::string::npos ? std::string::npos : comma - start)));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

std::string bottleneck(const CandidateResult& r) {
  const double pp = r.bubble_s + r.pp_comm_s;
  const std::pair<double, const char*> parts[] = {{r.compute_s, "compute"},
                                                  {r.tp_comm_s, "scale-up (TP communication)"},
                                                  {pp, "pipeline (bubble and send/recv)"},
                                                  {r.dp_comm_s, "data-parallel communication"},
                                                  {r.recompute_s, "recompute"}};
  const auto* top = &parts[0];
  for (const auto& p : parts) {
    if (p.first > top->first) top = &p;
  }
  std::string s = top->second;
  // A layout that pays for recompute does so because the activations would not fit.
  if (r.candidate.recompute != RecomputeChoice::none) s += "; memory capacity forces recompute";
  return s;
}

namespace {

SweepPoint search_point(const ModelConfig& model, const StrategyConfig& base, const SystemConfig& sys,
                        const SearchSpace& space, const SearchOptions& o) {
  const DefaultEfficiencyModel eff(sys);
  SearchSpace sp = space;
  fill_default_lists(sp, model, sys.scale_up_domain_size);
  SearchOptions so = o;
  so.top_k = 1;
  so.keep_all = false;
  so.progress = nullptr;
  const SearchResult r = run_search(model, base, sys, eff, sp, so);
  SweepPoint p;
  p.feasible = !r.top.empty();
  // have_smallest is set by every legal layout, fitting or not.
  p.legal = p.feasible || r.have_smallest;
  if (p.feasible) {
    p.best = r.top.front();
    p.limit = bottleneck(p.best);
  } else {
    p.explanation = r.explanation;
    p.limit = p.legal ? kNothingFits : kNoLegalLayout;
  }
  return p;
}

}  // namespace

std::vector<SweepPoint> sweep_hardware(const ModelConfig& model, const StrategyConfig& base, const SystemConfig& system,
                                       const SearchSpace& space, const std::vector<HardwareParam>& params,
                                       const std::vector<std::vector<double>>& values, const SearchOptions& o) {
  if (params.empty() || params.size() != values.size()) throw std::invalid_argument("one value list per parameter");
  std::vector<std::size_t> idx(params.size(), 0);
  std::vector<SweepPoint> out;
  while (true) {
    SystemConfig s = system;
    std::vector<double> vals;
    for (std::size_t i = 0; i < params.size(); ++i) {
      vals.push_back(values[i][idx[i]]);
      s = with_hardware(s, params[i], vals.back());
    }
    SweepPoint p = search_point(model, base, s, space, o);
    p.values = vals;
    out.push_back(std::move(p));
    if (o.progress) o.progress(out.size(), 0);
    std::size_t k = params.size();
    while (k > 0) {
      --k;
      if (++idx[k] < values[k].size()) break;
      idx[k] = 0;
      if (k == 0) return out;
    }
    if (params.size() == 0) return out;
  }
}

std::vector<ScalePoint> sweep_scale(const ModelConfig& model, const StrategyConfig& base,
                                    const std::vector<SystemConfig>& systems, const std::vector<int>& gpus,
                                    long long gbs, bool weak, double train_tokens, const SearchSpace& lists,
                                    const SearchOptions& o) {
  if (gpus.empty()) throw std::invalid_argument("no GPU counts to scale over");
  for (int n : gpus) {
    if (n < 1) throw std::invalid_argument(fmt::format("GPU counts must be positive, got {}", n));
  }
  if (gbs < 1) throw std::invalid_argument(fmt::format("the global batch must be positive, got {}", gbs));
  if (!std::isfinite(train_tokens) || !(train_tokens > 0)) {
    throw std::invalid_argument(fmt::format("the token budget must be a finite positive number, got {}", train_tokens));
  }
  std::vector<ScalePoint> out;
  for (const SystemConfig& sys : systems) {
    for (int n : gpus) {
      SearchSpace sp = lists;
      sp.world_size = n;
      if (weak && (gbs * n) % gpus.front() != 0) {
        // A batch of 42.67 sequences does not exist; rounding it would study a different batch.
        throw std::invalid_argument(fmt::format("weak scaling from {} GPUs at global batch {} gives {} x {} / {} "
                                                "sequences at {} GPUs, not a whole number",
                                                gpus.front(), gbs, gbs, n, gpus.front(), n));
      }
      sp.global_batch_size = weak ? gbs * n / gpus.front() : gbs;
      ScalePoint s;
      s.system = sys.name;
      s.gpus = n;
      s.global_batch_size = sp.global_batch_size;
      if (!sp.pp.empty()) {
        // Keep only pp sizes that divide this world (lists given for the largest point). None
        // left means no legal layout here: searching other pp sizes would answer another question.
        std::vector<int> keep;
        for (int p : sp.pp) if (n % p == 0) keep.push_back(p);
        if (keep.empty()) {
          s.explanation = fmt::format("no legal layout: none of the pipeline sizes given divides {} GPUs", n);
          out.push_back(s);
          if (o.progress) o.progress(out.size(), systems.size() * gpus.size());
          continue;
        }
        sp.pp = keep;
      }
      StrategyConfig b = base;
      b.global_batch_size = sp.global_batch_size;
      const SweepPoint p = search_point(model, b, sys, sp, o);
      s.feasible = p.feasible;
      s.legal = p.legal;
      s.best = p.best;
      s.explanation = p.explanation;
      if (p.feasible) {
        const double tokens_per_s = p.best.tokens_per_s_per_gpu * n;
        s.time_to_train_s = train_tokens / tokens_per_s;
        s.gpu_hours = s.time_to_train_s * n / 3600.0;
      }
      out.push_back(s);
      if (o.progress) o.progress(out.size(), systems.size() * gpus.size());
    }
  }
  return out;
}

std::vector<LayoutStep> walk_layouts(const ModelConfig& model, const StrategyConfig& base, const SystemConfig& sys,
                                     const EfficiencyModel& eff, const SearchSpace& space, const CandidateResult& best,
                                     const SearchOptions& o) {
  std::vector<LayoutStep> out;
  StrategyConfig st;
  const double capacity = sys.device.memory_gb - o.memory_margin_gb;
  auto try_one = [&](const char* dim, const std::string& value, Candidate c) {
    LayoutStep step;
    step.dimension = dim;
    step.value = value;
    const Candidate& b = best.candidate;
    step.is_best = c.tp == b.tp && c.pp == b.pp && c.vpp == b.vpp && c.mbs == b.mbs && c.recompute == b.recompute &&
                   c.zero == b.zero && c.cp == b.cp && c.ep == b.ep && c.order == b.order &&
                   c.tp_2d_rows == b.tp_2d_rows && c.cp_2d_rows == b.cp_2d_rows &&
                   (c.etp == 0 || c.etp == b.etp) && (c.cp_comm < 0 || c.cp_comm == b.cp_comm) &&
                   (c.dispatcher < 0 || c.dispatcher == b.dispatcher);
    std::string why;
    if (!make_strategy(base, model, space, c, st, &why)) {
      step.why_not = why;
    } else {
      step.legal = true;
      SimulateOptions so;
      so.details = false;
      const SimulationResult r = simulate(model, st, sys, eff, so);
      step.result = summarize(r, c, 0, o.use_reserved_memory);
      step.result.candidate.etp = st.etp_size;
      step.result.candidate.cp_comm = static_cast<int>(st.cp_comm_type);
      step.result.candidate.dispatcher = static_cast<int>(st.moe_dispatcher);
      step.result.placement = place_ranks(st, sys.scale_up_domain_size);
      step.fits = step.result.max_peak_gb <= capacity;
      if (!step.fits) step.why_not = fmt::format("needs {:.1f} GB > {:.1f} GB", step.result.max_peak_gb, capacity);
    }
    out.push_back(std::move(step));
  };
  const Candidate b = best.candidate;
  for (int v : space.tp) { Candidate c = b; c.tp = v; try_one("tp", std::to_string(v), c); }
  for (int v : space.pp) { Candidate c = b; c.pp = v; try_one("pp", std::to_string(v), c); }
  for (int v : space.vpp) { Candidate c = b; c.vpp = v; try_one("vpp", std::to_string(v), c); }
  for (int v : space.cp) { Candidate c = b; c.cp = v; try_one("cp", std::to_string(v), c); }
  for (int v : space.ep) { Candidate c = b; c.ep = v; try_one("ep", std::to_string(v), c); }
  for (int v : space.etp) { Candidate c = b; c.etp = v; try_one("etp", std::to_string(v), c); }
  for (CpCommType v : space.cp_comm) {
    Candidate c = b;
    c.cp_comm = static_cast<int>(v);
    try_one("cp_comm", cp_comm_type_name(v), c);
  }
  for (MoeDispatcher v : space.dispatchers) {
    Candidate c = b;
    c.dispatcher = static_cast<int>(v);
    try_one("dispatcher", moe_dispatcher_name(v), c);
  }
  for (auto v : space.mbs) { Candidate c = b; c.mbs = v; try_one("mbs", std::to_string(v), c); }
  for (auto v : space.recompute) { Candidate c = b; c.recompute = v; try_one("recompute", to_string(v), c); }
  for (int v : space.zero) { Candidate c = b; c.zero = v; try_one("zero", std::to_string(v), c); }
  // Grid rows, when the space tries 2D grids (its lists then hold 0 for 1D as well).
  for (int v : space.tp_2d_rows) { Candidate c = b; c.tp_2d_rows = v; try_one("tp_2d_rows", std::to_string(v), c); }
  for (int v : space.cp_2d_rows) { Candidate c = b; c.cp_2d_rows = v; try_one("cp_2d_rows", std::to_string(v), c); }
  // Placements: one step per distinct way of filling the domain (equivalent orders skipped).
  for (const RankOrder& v : space.orders) {
    Candidate c = b;
    c.order = v;
    StrategyConfig probe;
    if (make_strategy(base, model, space, c, probe, nullptr) &&
        equivalent_to_earlier_order(model, space, c, probe, sys.scale_up_domain_size) && v != b.order) {
      continue;
    }
    try_one("order", to_string(v), c);
  }
  return out;
}

}  // namespace calisim
