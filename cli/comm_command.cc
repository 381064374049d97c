// `calisim comm`: the simulator's collective model (simulator/comm_model.h) as an nccl-tests-style
// table (size, time, algbw, busbw) per rank count, and `--compare FILE` against an nccl-tests output
// file (error of the predicted time vs the measured out-of-place time, per size, and the MAPE), with the
// NCCL algorithm and protocol the model picks per size; --algo / --proto restrict the choice.
// Conventions: docs/comm.md. This reads the model only; it changes no simulator numerics.
#include <fmt/format.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/config_catalog.h"
#include "cli/efficiency_source.h"
#include "cli/table.h"
#include "core/error.h"
#include "simulator/comm_model.h"
#include "simulator/config_loader.h"

namespace calisim::cli {
namespace {

struct CommArgs {
  std::string system, op = "all_reduce", ranks = "8", sizes = "1K..4G", db, compare, dtype = "bf16";
  std::string algo, proto;  // NCCL_ALGO / NCCL_PROTO-style overrides (empty = NCCL's choice)
  int ranks_per_node = 0;  // 0 = min(ranks, scale-up domain)
  bool json = false;
};

// "1024", "1K", "64M", "4G", "1T" (binary multiples, as nccl-tests' -b/-e flags).
std::int64_t parse_size(const std::string& s, const std::string& flag) {
  std::size_t pos = 0;
  std::int64_t v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (const std::exception&) {
    throw InputError("", flag, "'" + s + "' is not a size (expected e.g. 1K, 64M, 4G or a byte count)");
  }
  std::string suffix = s.substr(pos);
  std::int64_t mult = 1;
  if (suffix == "K" || suffix == "k") mult = 1LL << 10;
  else if (suffix == "M" || suffix == "m") mult = 1LL << 20;
  else if (suffix == "G" || suffix == "g") mult = 1LL << 30;
  else if (suffix == "T" || suffix == "t") mult = 1LL << 40;
  else if (!suffix.empty())
    throw InputError("", flag, "'" + s + "': unknown suffix '" + suffix + "' (expected K, M, G or T)");
  if (v <= 0) throw InputError("", flag, "'" + s + "': sizes must be positive");
  return v * mult;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, sep)) out.push_back(item);
  return out;
}

// "1K..4G" (doubling, as nccl-tests -f 2) or a comma list "1K,1M".
std::vector<std::int64_t> parse_sizes(const std::string& s) {
  std::vector<std::int64_t> out;
  const auto dots = s.find("..");
  if (dots != std::string::npos) {
    const std::int64_t lo = parse_size(s.substr(0, dots), "--sizes");
    const std::int64_t hi = parse_size(s.substr(dots + 2), "--sizes");
    if (hi < lo) throw InputError("", "--sizes", "'" + s + "': the range must run from small to large");
    for (std::int64_t v = lo; v <= hi; v *= 2) out.push_back(v);
  } else {
    for (const auto& item : split(s, ',')) out.push_back(parse_size(item, "--sizes"));
  }
  if (out.empty()) throw InputError("", "--sizes", "no sizes given");
  return out;
}

std::vector<int> parse_ranks(const std::string& s) {
  std::vector<int> out;
  for (const auto& item : split(s, ',')) {
    std::size_t pos = 0;
    int v = 0;
    try {
      v = std::stoi(item, &pos);
    } catch (const std::exception&) {
      pos = 0;
    }
    if (pos == 0 || pos != item.size() || v < 2)
      throw InputError("", "--ranks", "'" + item + "' is not a rank count of at least 2");
    out.push_back(v);
  }
  if (out.empty()) throw InputError("", "--ranks", "no rank counts given");
  return out;
}

// nccl-tests bus-bandwidth factor (profiling_notes.md §2.1).
double busbw_factor(CollectiveOp op, int n) { return bus_factor(op, n); }

std::string size_label(std::int64_t b) {
  if (b >= (1LL << 30) && b % (1LL << 30) == 0) return fmt::format("{}G", b >> 30);
  if (b >= (1LL << 20) && b % (1LL << 20) == 0) return fmt::format("{}M", b >> 20);
  if (b >= (1LL << 10) && b % (1LL << 10) == 0) return fmt::format("{}K", b >> 10);
  return std::to_string(b);
}

struct Point {
  std::int64_t bytes = 0;
  double time_us = 0, algbw = 0, busbw = 0;
  std::string algo, proto;
};

struct Setup {
  SystemConfig system;
  std::shared_ptr<const EfficiencyModel> eff;
  std::string database;
  CollectiveOp op = CollectiveOp::all_reduce;
  DType dtype = DType::bf16;
  CollectiveChoiceMask mask;
};

int placement(const CommArgs& a, const Setup& s, int ranks) {
  if (a.ranks_per_node == 0) return std::min(ranks, s.system.scale_up_domain_size);
  if (a.ranks_per_node < 1 || a.ranks_per_node > ranks)
    throw InputError("", "--ranks-per-node",
                     fmt::format("{} must be between 1 and the rank count {}", a.ranks_per_node, ranks));
  return a.ranks_per_node;
}

Point predict(const Setup& s, int ranks, int per_node, std::int64_t bytes) {
  CollectiveKey k;
  k.op = s.op;
  k.bytes = bytes;
  k.ranks = ranks;
  k.ranks_per_node = per_node;
  k.dtype = s.dtype;
  Point p;
  p.bytes = bytes;
  const CollectiveCost c = collective_cost(k, s.system, *s.eff, s.mask);
  const double t = c.time_s;
  p.time_us = t * 1e6;
  p.algbw = t > 0 ? static_cast<double>(bytes) / t / 1e9 : 0;
  p.busbw = p.algbw * busbw_factor(s.op, ranks);
  p.algo = std::string(to_string(c.algo));
  p.proto = std::string(to_string(c.proto));
  if (c.efficiency.source != EfficiencySource::roofline) p.proto += fmt::format(" ({})", to_string(c.efficiency.source));
  return p;
}

std::string tier_name(const Setup& s, int ranks, int per_node) {
  CollectiveKey k;
  k.op = s.op;
  k.ranks = ranks;
  k.ranks_per_node = per_node;
  const LinkChoice l = link_for(k, s.system);
  return fmt::format("{} ({:.4g} GB/s per GPU)", l.spans_domains ? "scale-out" : "scale-up", l.gb_s);
}

// One measured row of an nccl-tests output file: size and the out-of-place time/algbw/busbw.
struct Measured {
  int line = 0;
  std::int64_t bytes = 0;
  double time_us = 0, algbw = 0, busbw = 0;
};

double parse_number(const std::string& tok, const std::string& file, int line, const char* what) {
  std::size_t pos = 0;
  double v = 0;
  try {
    v = std::stod(tok, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  if (pos == 0 || pos != tok.size() || !std::isfinite(v) || v < 0)
    throw InputError(file, fmt::format("line {}", line),
                     fmt::format("{} '{}' is not a non-negative number", what, tok));
  return v;
}

std::vector<Measured> read_nccl_tests(const std::string& file) {
  std::ifstream in(file);
  if (!in) throw InputError(file, "", "cannot open the nccl-tests output file");
  std::vector<Measured> rows;
  std::string text;
  int line = 0;
  while (std::getline(in, text)) {
    ++line;
    if (!text.empty() && text.back() == '\r') text.pop_back();
    const auto first = text.find_first_not_of(" \t");
    if (first == std::string::npos || text[first] == '#') continue;
    std::istringstream ss(text);
    std::vector<std::string> tok;
    for (std::string t; ss >> t;) tok.push_back(t);
    const std::string where = fmt::format("line {}", line);
    // The column count and the size are separate checks, so that each message says what is wrong
    // (a row of 13 fields with a negative size is not a row of the wrong width).
    if (tok.size() != 13)
      throw InputError(file, where,
                       fmt::format("expected 13 columns 'size count type redop root time algbw busbw #wrong time "
                                   "algbw busbw #wrong' (nccl-tests table row) or a '#' comment, got {} fields",
                                   tok.size()));
    Measured m;
    m.line = line;
    std::size_t used = 0;
    double size = 0;
    try {
      size = std::stod(tok[0], &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used == 0 || used != tok[0].size() || !std::isfinite(size) || size < 1 || size != std::floor(size))
      throw InputError(file, where, fmt::format("size '{}' is not a positive byte count", tok[0]));
    m.bytes = static_cast<std::int64_t>(size);
    m.time_us = parse_number(tok[5], file, line, "out-of-place time");
    if (m.time_us <= 0) throw InputError(file, where, "out-of-place time must be positive");
    m.algbw = parse_number(tok[6], file, line, "out-of-place algbw");
    m.busbw = parse_number(tok[7], file, line, "out-of-place busbw");
    rows.push_back(m);
  }
  if (rows.empty()) throw InputError(file, "", "no nccl-tests table rows found (lines starting with a size)");
  return rows;
}

void run_compare(const CommArgs& a, const Setup& s, const std::vector<int>& ranks) {
  if (ranks.size() != 1)
    throw InputError("", "--ranks", "--compare needs exactly one rank count (the one the nccl-tests run used)");
  const int n = ranks.front();
  const int per_node = placement(a, s, n);
  const std::vector<Measured> meas = read_nccl_tests(a.compare);
  double sum_abs = 0;
  nlohmann::json jrows = nlohmann::json::array();
  Table t({"size", "measured us", "predicted us", "error", "measured busbw", "predicted busbw", "algo", "proto"});
  for (const Measured& m : meas) {
    const Point p = predict(s, n, per_node, m.bytes);
    const double err = (p.time_us - m.time_us) / m.time_us;
    sum_abs += std::fabs(err);
    t.add_row({std::to_string(m.bytes), fmt::format("{:.2f}", m.time_us), fmt::format("{:.2f}", p.time_us),
               fmt::format("{:+.1f}%", 100 * err), fmt::format("{:.2f}", m.busbw), fmt::format("{:.2f}", p.busbw),
               p.algo, p.proto});
    jrows.push_back({{"bytes", m.bytes}, {"line", m.line}, {"measured_time_us", m.time_us},
                     {"predicted_time_us", p.time_us}, {"error", err}, {"measured_busbw_gb_s", m.busbw},
                     {"predicted_busbw_gb_s", p.busbw}, {"predicted_algbw_gb_s", p.algbw}, {"algorithm", p.algo},
                     {"protocol", p.proto}});
  }
  const double mape = sum_abs / static_cast<double>(meas.size());
  if (a.json) {
    nlohmann::json j = {{"system", s.system.name}, {"op", std::string(to_string(s.op))}, {"ranks", n},
                        {"ranks_per_node", per_node}, {"compare", a.compare},
                        {"error_convention", "(predicted - measured) / measured, on the out-of-place time"},
                        {"rows", jrows}, {"mape", mape}};
    j["database"] = s.database.empty() ? nlohmann::json() : nlohmann::json(s.database);
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("calisim comm --compare {}: {} on {}, {} ranks, {} per node, {}\n", a.compare, to_string(s.op),
             s.system.name, n, per_node, tier_name(s, n, per_node));
  fmt::print("error = (predicted - measured) / measured, on the out-of-place time\n\n{}\n", t.render());
  fmt::print("MAPE {:.1f}% over {} sizes\n", 100 * mape, meas.size());
}

void run(const CommArgs& a) {
  Setup s;
  try {
    s.op = parse_collective_op(a.op);
  } catch (const std::invalid_argument& e) {
    throw InputError("", "--op", e.what());
  }
  try {
    s.dtype = parse_dtype(a.dtype);
  } catch (const std::invalid_argument& e) {
    throw InputError("", "--dtype", e.what());
  }
  const std::string file = resolve_config(ConfigKind::system, a.system);
  s.system = parse_system(read_json_file(file), file);
  const EfficiencyChoice c = make_efficiency_source(s.system, file, a.db);
  s.eff = c.model;
  s.database = c.database;
  std::string_view bad;
  if (!a.algo.empty()) {
    const auto bits = parse_algo_list(a.algo, &bad);
    if (!bits || *bits == 0)
      throw InputError("", "--algo", "'" + a.algo + "': expected NCCL_ALGO syntax (ring, tree, nvls, nvls_tree, collnet, "
                                     "collnet_direct, collnet_chain; comma list, optional ^ prefix)");
    s.mask.algos = *bits;
  }
  if (!a.proto.empty()) {
    const auto bits = parse_proto_list(a.proto, &bad);
    if (!bits || *bits == 0)
      throw InputError("", "--proto", "'" + a.proto + "': expected NCCL_PROTO syntax (LL, LL128, Simple; comma list, "
                                      "optional ^ prefix)");
    s.mask.protos = *bits;
  }
  const std::vector<int> ranks = parse_ranks(a.ranks);
  if (!a.compare.empty()) return run_compare(a, s, ranks);
  const std::vector<std::int64_t> sizes = parse_sizes(a.sizes);

  nlohmann::json jtables = nlohmann::json::array();
  std::string text;
  for (const int n : ranks) {
    const int per_node = placement(a, s, n);
    Table t({"size", "bytes", "time us", "algbw GB/s", "busbw GB/s", "algo", "proto"});
    nlohmann::json jrows = nlohmann::json::array();
    for (const std::int64_t b : sizes) {
      const Point p = predict(s, n, per_node, b);
      t.add_row({size_label(b), std::to_string(b), fmt::format("{:.2f}", p.time_us), fmt::format("{:.2f}", p.algbw),
                 fmt::format("{:.2f}", p.busbw), p.algo, p.proto});
      jrows.push_back({{"bytes", b}, {"time_us", p.time_us}, {"algbw_gb_s", p.algbw}, {"busbw_gb_s", p.busbw},
                       {"algorithm", p.algo}, {"protocol", p.proto}});
    }
    text += fmt::format("{} ranks, {} per node: {}\n{}\n", n, per_node, tier_name(s, n, per_node), t.render());
    jtables.push_back({{"ranks", n}, {"ranks_per_node", per_node}, {"busbw_factor", busbw_factor(s.op, n)},
                       {"tier", tier_name(s, n, per_node)}, {"rows", jrows}});
  }
  if (a.json) {
    nlohmann::json j = {{"system", s.system.name}, {"op", std::string(to_string(s.op))},
                        {"dtype", std::string(to_string(s.dtype))},
                        {"conventions", "algbw = size / time (GB = 1e9); busbw = algbw x nccl-tests factor "
                                        "(2(n-1)/n all_reduce, (n-1)/n all_gather/reduce_scatter/all_to_all, "
                                        "1 send_recv); size = full buffer as nccl-tests prints it"},
                        {"tables", jtables}};
    j["database"] = s.database.empty() ? nlohmann::json() : nlohmann::json(s.database);
    fmt::print("{}\n", j.dump(2));
    return;
  }
  fmt::print("calisim comm: predicted {} on {} ({}; efficiencies: {})\n", to_string(s.op), s.system.name,
             to_string(s.dtype), s.database.empty() ? "system file defaults" : "database " + s.database);
  fmt::print("algbw = size / time, busbw = algbw x nccl-tests factor; NCCL algorithm/protocol model (docs/comm.md)\n\n");
  fmt::print("{}", text);
}

}  // namespace

void register_comm(CLI::App& app) {
  auto args = std::make_shared<CommArgs>();
  CLI::App* sub = app.add_subcommand("comm", "Predicted nccl-tests-style collective table; --compare with nccl-tests output");
  sub->add_option("--system", args->system, "shipped system name or path to a system .json")->required();
  sub->add_option("--op", args->op, "all_reduce, all_gather, reduce_scatter, all_to_all or send_recv")
      ->capture_default_str();
  sub->add_option("--ranks", args->ranks, "comma-separated rank counts, e.g. 8,64,1024")->capture_default_str();
  sub->add_option("--sizes", args->sizes, "sizes in bytes: LO..HI doubling (1K..4G) or a comma list (1K,64M)")
      ->capture_default_str();
  sub->add_option("--ranks-per-node", args->ranks_per_node,
                  "ranks sharing one scale-up domain (default: min(ranks, scale-up domain size))");
  sub->add_option("--dtype", args->dtype, "element type of the efficiency lookup")->capture_default_str();
  sub->add_option("--db", args->db, "efficiency database to take measured collective efficiencies from");
  sub->add_option("--compare", args->compare,
                  "nccl-tests output file: per-size error of the predicted vs the out-of-place time, and MAPE");
  sub->add_option("--algo", args->algo, "NCCL_ALGO-style override, e.g. ring or ^nvls (default: the model's choice)");
  sub->add_option("--proto", args->proto, "NCCL_PROTO-style override, e.g. Simple or LL,LL128");
  sub->add_flag("--json", args->json, "print one JSON document instead of tables");
  sub->callback([args] { run(*args); });
}

}  // namespace calisim::cli
