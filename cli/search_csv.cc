#include "cli/search_csv.h"

#include <fmt/format.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "core/error.h"

namespace calisim::cli {
namespace {

const char* const kColumns[] = {"index", "tp", "pp", "vpp", "cp", "ep", "mbs", "dp", "zero", "recompute",
                                "micro_batch_num", "first_stage_layers", "middle_stage_layers",
                                "last_stage_layers", "step_time_s", "mfu", "tokens_per_s_per_gpu", "bubble_fraction",
                                "tp_comm_s", "pp_comm_s", "dp_comm_s", "recompute_s", "first_stage_peak_gb",
                                "last_stage_peak_gb", "max_peak_gb", "order", "tp_per_domain", "cp_per_domain",
                                "dp_cp_per_domain", "ep_per_domain", "etp_per_domain", "edp_per_domain",
                                "pp_per_domain", "pp_next_per_domain", "pp_ends_per_domain", "tp_2d_rows",
                                "tp_2d_cols", "cp_2d_rows", "cp_2d_cols", "etp", "cp_comm_type",
                                "moe_dispatcher", "dp_replicate"};
constexpr int kColumnCount = sizeof(kColumns) / sizeof(kColumns[0]);

// The candidate's effective dispatcher (search results always carry it; -1 only in hand-made rows).
const char* dispatcher_name(const Candidate& c) {
  return moe_dispatcher_name(c.dispatcher >= 0 ? static_cast<MoeDispatcher>(c.dispatcher) : MoeDispatcher::all_to_all);
}

nlohmann::json placement_json(const RankPlacement& p) {
  return {{"tp", p.tp}, {"cp", p.cp}, {"dp_cp", p.dense_dp}, {"ep", p.ep}, {"etp", p.etp}, {"edp", p.expert_dp},
          {"pp", p.pp}, {"pp_next", p.pp_next}, {"pp_ends", p.pp_ends}};
}

}  // namespace

nlohmann::json search_candidate_json(const CandidateResult& r) {
  const Candidate& c = r.candidate;
  return {{"index", r.index}, {"tp", c.tp}, {"pp", c.pp}, {"vpp", c.vpp}, {"cp", c.cp}, {"ep", c.ep},
          {"micro_batch_size", c.mbs}, {"dp", r.dp}, {"zero_state", c.zero}, {"recompute", to_string(c.recompute)},
          {"micro_batch_num", r.micro_batch_num}, {"first_stage_layers", r.first_stage_layers},
          {"middle_stage_layers", r.middle_stage_layers}, {"last_stage_layers", r.last_stage_layers},
          {"step_time_s", r.step_time_s}, {"mfu", r.mfu},
          {"tokens_per_s_per_gpu", r.tokens_per_s_per_gpu}, {"bubble_fraction", r.bubble_fraction},
          {"tp_comm_exposed_s", r.tp_comm_s}, {"pp_comm_exposed_s", r.pp_comm_s}, {"dp_comm_exposed_s", r.dp_comm_s},
          {"recompute_s", r.recompute_s}, {"first_stage_peak_gb", r.first_stage_peak_gb},
          {"last_stage_peak_gb", r.last_stage_peak_gb}, {"max_peak_gb", r.max_peak_gb},
          {"order", to_string(c.order)}, {"in_domain", domain_summary(r.placement, c.order)},
          {"ranks_per_domain", placement_json(r.placement)},
          // 0, 0 for 1D, as the CSV columns (a 1 x t grid would read as a real 2D grid of one row).
          {"tensor_parallel_mode", c.tp_2d_rows ? "2d" : "1d"}, {"tp_2d_rows", c.tp_2d_rows},
          {"tp_2d_cols", c.tp_2d_rows ? c.tp / c.tp_2d_rows : 0},
          {"context_parallel_mode", c.cp_2d_rows ? "2d" : "1d"}, {"cp_2d_rows", c.cp_2d_rows},
          {"cp_2d_cols", c.cp_2d_rows ? c.cp / c.cp_2d_rows : 0}, {"etp", c.etp},
          {"cp_comm_type", c.cp_comm >= 0 ? cp_comm_type_name(static_cast<CpCommType>(c.cp_comm)) : "p2p"},
          {"moe_dispatcher", dispatcher_name(c)}, {"dp_replicate_size", std::max(1, c.dp_replicate)}};
}

std::string layout_label(const CandidateResult& r) {
  const Candidate& c = r.candidate;
  std::string split;
  if (c.pp > 1 && (r.first_stage_layers != r.middle_stage_layers || r.last_stage_layers != r.middle_stage_layers)) {
    split = fmt::format("[{}|{}|{}]", r.first_stage_layers, r.middle_stage_layers, r.last_stage_layers);
  }
  const std::string grid = c.tp_2d_rows ? fmt::format("({}x{} 2d)", c.tp_2d_rows, c.tp / c.tp_2d_rows) : "";
  const std::string cp_grid = c.cp_2d_rows ? fmt::format("({}x{} 2d)", c.cp_2d_rows, c.cp / c.cp_2d_rows) : "";
  // Expert TP is shown when it is not 1 (most layouts): "ep8 etp2".
  const std::string etp = c.etp > 1 ? fmt::format(" etp{}", c.etp) : "";
  // A CP communication other than the ring is shown after cp: "cp4/a2a".
  const std::string cp_comm = c.cp > 1 && c.cp_comm > 0 && !c.cp_2d_rows
                                  ? std::string("/") + cp_comm_type_name(static_cast<CpCommType>(c.cp_comm))
                                  : "";
  // A MoE dispatcher other than the all-to-all is shown after ep: "ep8/flex".
  const std::string dispatcher =
      c.ep > 1 && c.dispatcher >= 0 && c.dispatcher != static_cast<int>(MoeDispatcher::all_to_all)
          ? std::string("/") + moe_dispatcher_name(static_cast<MoeDispatcher>(c.dispatcher))
          : "";
  // Hybrid sharding is shown after dp as the replica count: "dp256/r16" (16 replicas of 16 ranks).
  const std::string replicas = c.dp_replicate > 1 ? fmt::format("/r{}", c.dp_replicate) : "";
  return fmt::format("tp{}{} pp{}{} vpp{} cp{}{}{} ep{}{}{} dp{}{}", c.tp, grid, c.pp, split, c.vpp, c.cp, cp_grid,
                     cp_comm, c.ep, dispatcher, etp, r.dp, replicas);
}

std::string search_csv_header() {
  std::string h;
  for (int i = 0; i < kColumnCount; ++i) {
    if (i) h += ',';
    h += kColumns[i];
  }
  return h;
}

std::string search_csv_row(const CandidateResult& r) {
  const Candidate& c = r.candidate;
  // %.17g keeps doubles exact so merged shards rank exactly as one run would.
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},{:.17g},"
                     "{:.17g},{:.17g},{:.17g},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
                     r.index, c.tp, c.pp, c.vpp, c.cp, c.ep, c.mbs, r.dp, c.zero, to_string(c.recompute),
                     r.micro_batch_num, r.first_stage_layers, r.middle_stage_layers, r.last_stage_layers,
                     r.step_time_s, r.mfu, r.tokens_per_s_per_gpu, r.bubble_fraction, r.tp_comm_s,
                     r.pp_comm_s, r.dp_comm_s, r.recompute_s, r.first_stage_peak_gb, r.last_stage_peak_gb,
                     r.max_peak_gb, to_string(c.order), r.placement.tp, r.placement.cp, r.placement.dense_dp,
                     r.placement.ep, r.placement.etp, r.placement.expert_dp, r.placement.pp, r.placement.pp_next,
                     r.placement.pp_ends, c.tp_2d_rows, c.tp_2d_rows ? c.tp / c.tp_2d_rows : 0, c.cp_2d_rows,
                     c.cp_2d_rows ? c.cp / c.cp_2d_rows : 0, c.etp,
                     c.cp_comm >= 0 ? cp_comm_type_name(static_cast<CpCommType>(c.cp_comm)) : "p2p",
                     dispatcher_name(c), std::max(1, c.dp_replicate));
}

void write_search_csv(const std::string& path, const std::vector<CandidateResult>& rows) {
  std::ofstream out(path);
  if (!out) throw InputError(path, "", "cannot open for writing");
  out << search_csv_header() << "\n";
  for (const auto& r : rows) out << search_csv_row(r) << "\n";
  if (!out) throw InputError(path, "", "write failed");
}

std::vector<CandidateResult> read_search_csv(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw InputError(path, "", "cannot open file");
  std::string line;
  if (!std::getline(in, line) || line != search_csv_header()) {
    throw InputError(path, "line 1", "expected the header written by `calisim search --out/--csv`: " +
                                         search_csv_header());
  }
  std::vector<CandidateResult> rows;
  int lineno = 1;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty()) continue;
    rows.push_back(parse_search_csv_row(line, path, lineno));
  }
  return rows;
}

CandidateResult parse_search_csv_row(const std::string& line, const std::string& path, int lineno) {
  std::vector<std::string> f;
  std::stringstream ss(line);
  std::string cell;
  while (std::getline(ss, cell, ',')) f.push_back(cell);
  if (static_cast<int>(f.size()) != kColumnCount) {
    throw InputError(path, fmt::format("line {}", lineno), fmt::format("expected {} columns, got {}", kColumnCount, f.size()));
  }
  CandidateResult r;
  int col = 0;
  auto num = [&](auto& dst) {
    const std::string& s = f[col];
    try {
      std::size_t used = 0;
      if constexpr (std::is_floating_point_v<std::remove_reference_t<decltype(dst)>>) dst = std::stod(s, &used);
      else dst = static_cast<std::remove_reference_t<decltype(dst)>>(std::stoll(s, &used));
      if (used != s.size()) throw std::invalid_argument(s);
    } catch (const std::exception&) {
      throw InputError(path, fmt::format("line {}, column {}", lineno, kColumns[col]), "expected a number, got '" + s + "'");
    }
    ++col;
  };
  Candidate& c = r.candidate;
  num(r.index), num(c.tp), num(c.pp), num(c.vpp), num(c.cp), num(c.ep), num(c.mbs), num(r.dp), num(c.zero);
  try {
    c.recompute = parse_recompute_choice(f[col]);
  } catch (const std::invalid_argument& e) {
    throw InputError(path, fmt::format("line {}, column recompute", lineno), e.what());
  }
  ++col;
  num(r.micro_batch_num), num(r.first_stage_layers), num(r.middle_stage_layers), num(r.last_stage_layers);
  num(r.step_time_s), num(r.mfu), num(r.tokens_per_s_per_gpu), num(r.bubble_fraction);
  num(r.tp_comm_s), num(r.pp_comm_s), num(r.dp_comm_s), num(r.recompute_s), num(r.first_stage_peak_gb);
  num(r.last_stage_peak_gb), num(r.max_peak_gb);
  std::string why;
  const auto order = parse_rank_order(f[col], &why);
  if (!order) throw InputError(path, fmt::format("line {}, column order", lineno), why);
  c.order = *order;
  ++col;
  RankPlacement& p = r.placement;
  num(p.tp), num(p.cp), num(p.dense_dp), num(p.ep), num(p.etp), num(p.expert_dp), num(p.pp), num(p.pp_next);
  num(p.pp_ends);
  num(c.tp_2d_rows);
  int cols = 0;
  num(cols);
  if ((c.tp_2d_rows == 0) != (cols == 0) || (c.tp_2d_rows && c.tp_2d_rows * cols != c.tp)) {
    throw InputError(path, fmt::format("line {}, column tp_2d_rows", lineno),
                     "expected 0,0 (1D tensor parallelism) or a grid whose rows x cols equals tp");
  }
  num(c.cp_2d_rows);
  int cp_cols = 0;
  num(cp_cols);
  if ((c.cp_2d_rows == 0) != (cp_cols == 0) || (c.cp_2d_rows && c.cp_2d_rows * cp_cols != c.cp)) {
    throw InputError(path, fmt::format("line {}, column cp_2d_rows", lineno),
                     "expected 0,0 (1D context parallelism) or a grid whose rows x cols equals cp");
  }
  num(c.etp);
  if (c.etp < 1) {
    throw InputError(path, fmt::format("line {}, column etp", lineno), "expected an expert TP size of at least 1");
  }
  CpCommType cp_comm;
  if (!parse_cp_comm_type(f[col], &cp_comm)) {
    throw InputError(path, fmt::format("line {}, column cp_comm_type", lineno),
                     "expected p2p, a2a or allgather, got '" + f[col] + "'");
  }
  c.cp_comm = static_cast<int>(cp_comm);
  ++col;
  MoeDispatcher dispatcher;
  if (!parse_moe_dispatcher(f[col], &dispatcher)) {
    throw InputError(path, fmt::format("line {}, column moe_dispatcher", lineno),
                     "expected alltoall, allgather or flex, got '" + f[col] + "'");
  }
  c.dispatcher = static_cast<int>(dispatcher);
  ++col;
  num(c.dp_replicate);
  if (c.dp_replicate < 1) {
    throw InputError(path, fmt::format("line {}, column dp_replicate", lineno),
                     "expected a replica count of at least 1");
  }
  return r;
}

}  // namespace calisim::cli
