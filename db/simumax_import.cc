#include "db/simumax_import.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>

#include "core/error.h"
#include "db/json_file.h"

namespace calisim::db {
namespace {

using nlohmann::json;

// SimuMax bandwidths are GiB/s ("gbps" * 1024^3 bytes/s); ours are GB/s.
constexpr double kGiBPerGB = 1.073741824;

// Parses "a=1, b=x, ..." into a map; `where` names the entry in errors.
class ShapeFields {
 public:
  ShapeFields(const std::string& file, std::string where, const std::string& text)
      : file_(file), where_(std::move(where)) {
    std::size_t pos = 0;
    while (pos <= text.size()) {
      std::size_t end = text.find(',', pos);
      if (end == std::string::npos) end = text.size();
      std::string part = text.substr(pos, end - pos);
      const auto first = part.find_first_not_of(' ');
      const auto last = part.find_last_not_of(' ');
      part = first == std::string::npos ? "" : part.substr(first, last - first + 1);
      if (!part.empty()) {
        const auto eq = part.find('=');
        if (eq == std::string::npos) fail(fmt::format("'{}' is not name=value", part));
        values_[part.substr(0, eq)] = part.substr(eq + 1);
      }
      pos = end + 1;
    }
  }

  const std::string& str(const std::string& name) const {
    auto it = values_.find(name);
    if (it == values_.end()) fail(fmt::format("field '{}' is missing", name));
    return it->second;
  }
  std::string str_or(const std::string& name, const std::string& dflt) const {
    auto it = values_.find(name);
    return it == values_.end() ? dflt : it->second;
  }
  std::int64_t integer(const std::string& name) const {
    const std::string& s = str(name);
    try {
      std::size_t used = 0;
      const long long v = std::stoll(s, &used);
      if (used == s.size() && v > 0) return v;
    } catch (const std::exception&) {
    }
    fail(fmt::format("field '{}' = '{}' is not a positive integer", name, s));
  }
  bool boolean(const std::string& name) const {
    const std::string& s = str(name);
    if (s == "True" || s == "true") return true;
    if (s == "False" || s == "false") return false;
    fail(fmt::format("field '{}' = '{}' is not True or False", name, s));
  }
  [[noreturn]] void fail(const std::string& why) const { throw InputError(file_, where_, why); }

 private:
  std::string file_, where_;
  std::map<std::string, std::string> values_;
};

double number(const json& obj, const char* name, const std::string& file, const std::string& where) {
  auto it = obj.find(name);
  if (it == obj.end() || !it->is_number()) {
    throw InputError(file, where + "." + name, "expected a number");
  }
  return it->get<double>();
}

// Reads the "accurate_efficient_factor" table of one op: {key string: efficiency}.
template <class F>
void for_each_entry(const json& ops, const char* op, const std::string& file, F&& f) {
  auto it = ops.find(op);
  if (it == ops.end() || !it->is_object()) return;
  auto table = it->find("accurate_efficient_factor");
  if (table == it->end()) return;
  const std::string base = fmt::format("accelerator.op.{}", op);
  const double op_tflops = number(*it, "tflops", file, base);
  for (auto e = table->begin(); e != table->end(); ++e) {
    const std::string where = fmt::format("{}.accurate_efficient_factor[\"{}\"]", base, e.key());
    if (!e->is_number() || e->get<double>() <= 0) throw InputError(file, where, "expected a positive number");
    f(ShapeFields(file, where, e.key()), e->get<double>() * op_tflops);
  }
}

// A GEMM or attention row from its achieved TFLOP/s in our FLOP convention.
template <class Row, class Key>
Row compute_row(const Key& key, double tflops, const DeviceRecord& peaks, const std::string& file,
                const std::string& where) {
  const double peak = peaks.peak_tflops[static_cast<int>(key.dtype)];
  if (peak <= 0) {
    throw InputError(file, where, fmt::format("device '{}' has no {} peak", peaks.name, to_string(key.dtype)));
  }
  return row_from_tflops<Row>(key, tflops, peak);
}

void read_matmuls(const json& ops, const std::string& file, const DeviceRecord& peaks, MeasurementSet& out) {
  for (const char* op : {"matmul", "fp8_matmul"}) {
    const DType dtype = std::string(op) == "matmul" ? DType::bf16 : DType::fp8_e4m3;
    for_each_entry(ops, op, file, [&](const ShapeFields& f, double sm_tflops) {
      GemmKey k;
      k.batch = f.integer("b");
      k.m = f.integer("m");
      k.n = f.integer("n");
      k.k = f.integer("k");
      k.dtype = dtype;
      try {
        k.layout = parse_gemm_layout(f.str("layout"));
      } catch (const std::invalid_argument& e) {
        f.fail(e.what());
      }
      k.accumulate = f.boolean("accumulate");
      out.gemm.push_back(compute_row<GemmRow>(k, sm_tflops, peaks, file, op));
    });
  }
  for (const char* op : {"group_matmul", "fp8_group_matmul"}) {
    for_each_entry(ops, op, file, [&](const ShapeFields& f, double sm_tflops) {
      const std::int64_t m = f.integer("M"), n = f.integer("N"), kk = f.integer("K");
      GemmKey k;
      k.batch = f.integer("ng");
      try {
        k.dtype = parse_dtype(f.str_or("dtype", "bf16"));
      } catch (const std::invalid_argument& e) {
        f.fail(e.what());
      }
      const std::string stage = f.str("stage");
      if (stage == "fwd") {
        k.layout = GemmLayout::TN, k.m = m, k.k = kk, k.n = n;
      } else if (stage == "bwd_grad_act") {
        k.layout = GemmLayout::NN, k.m = m, k.k = n, k.n = kk;
      } else if (stage == "bwd_grad_w") {
        k.layout = GemmLayout::NT, k.m = n, k.k = m, k.n = kk;
        k.accumulate = f.boolean("accumulate");
      } else {
        f.fail(fmt::format("stage '{}' is not fwd, bwd_grad_act or bwd_grad_w", stage));
      }
      out.gemm.push_back(compute_row<GemmRow>(k, sm_tflops, peaks, file, op));
    });
  }
}

void read_attention(const json& ops, const std::string& file, const DeviceRecord& peaks, MeasurementSet& out) {
  for (const char* op : {"sdp_fwd", "sdp_bwd"}) {
    const bool fwd = std::string(op) == "sdp_fwd";
    std::set<AttentionKey, bool (*)(const AttentionKey&, const AttentionKey&)> contiguous(
        [](const AttentionKey& a, const AttentionKey& b) { return to_string(a) < to_string(b); });
    std::vector<std::pair<AttentionRow, bool>> rows;
    for_each_entry(ops, op, file, [&](const ShapeFields& f, double sm_tflops) {
      AttentionKey k;
      k.batch = f.integer("batch");
      k.seq_q = k.seq_kv = f.integer("seq_len");
      k.heads_q = f.integer("head_num");
      k.heads_kv = f.integer("kv_head_num");
      k.head_dim_qk = f.integer("qk_head_dim");
      k.head_dim_v = f.integer("v_head_dim");
      k.causal = true;
      k.dtype = DType::bf16;
      k.direction = fwd ? AttentionDirection::forward : AttentionDirection::backward;
      const double base = 2.0 * k.batch * static_cast<double>(k.seq_q) * k.seq_kv *
                          std::max(k.heads_q, k.heads_kv) * (k.head_dim_qk + k.head_dim_v);
      const double sm_flops = fwd ? base : 2.5 * base;
      const double tflops = sm_tflops * k.flops() / sm_flops;
      const bool is_contiguous = f.boolean("qkv_contiguous");
      if (is_contiguous) contiguous.insert(k);
      rows.emplace_back(compute_row<AttentionRow>(k, tflops, peaks, file, op), is_contiguous);
    });
    for (auto& [row, is_contiguous] : rows) {
      if (is_contiguous || !contiguous.count(row.key)) out.attention.push_back(std::move(row));
    }
  }
}

void read_memory_fits(const json& accel, const std::string& file, MeasurementSet& out) {
  auto bw = accel.find("bandwidth");
  if (bw == accel.end() || !bw->is_object()) return;
  for (auto e = bw->begin(); e != bw->end(); ++e) {
    const std::string where = "accelerator.bandwidth." + e.key();
    if (!e->is_object()) throw InputError(file, where, "expected an object");
    out.memory_fits.push_back(MemoryFit{e.key(), number(*e, "gbps", file, where) * kGiBPerGB,
                                        number(*e, "efficient_factor", file, where),
                                        number(*e, "latency_us", file, where)});
  }
  // Table kinds that stand for calisim kinds under other names, used only when the table does not
  // measure the calisim kind itself. SimuMax prices the un-permutation (sort_chunks inverse,
  // weighted combine) with the same permute_fwd / permute_bwd bandwidths as the permutation
  // (moe_module.py UnPermutation): one row-gather/scatter kernel family, which calisim keys as
  // unpermute_*. Its cross-entropy (forward and backward) uses the single `ce` bandwidth, which
  // calisim asks for as ce_fwd / ce_bwd (layer_ops.cc); stored under `ce` alone it was never found
  // and the lookup fell to the `default` fit. Aliasing here keeps the lookup one exact kind.
  static constexpr std::pair<const char*, const char*> kAliases[] = {
      {"permute_fwd", "unpermute_fwd"}, {"permute_bwd", "unpermute_bwd"}, {"ce", "ce_fwd"}, {"ce", "ce_bwd"}};
  const auto find = [&](const std::string& kind) {
    return std::find_if(out.memory_fits.begin(), out.memory_fits.end(), [&](const MemoryFit& f) { return f.kind == kind; });
  };
  for (const auto& [from, to] : kAliases) {
    const auto src = find(from);
    if (src == out.memory_fits.end() || find(to) != out.memory_fits.end()) continue;
    MemoryFit copy = *src;
    copy.kind = to;
    out.memory_fits.push_back(std::move(copy));
  }
}

// dp_fixed_bw {"d": GiB/s} of an N-GPU network: SimuMax's rate for a DP group of d ranks spanning
// the N GPUs. Such groups tile the node (N/d of them) and all cross the host bridge between the
// PCIe switches at once, so each entry implies a bridge of (N/d) x rate (docs/comm.md "PCIe
// switches"). Returns the implied GB/s per entry; throws on a malformed entry.
std::vector<double> bridge_from_dp_fixed_bw(const json& o, int ranks, const std::string& file,
                                            const std::string& where) {
  const auto f = o.find("dp_fixed_bw");
  if (!f->is_object()) throw InputError(file, where, "expected an object {\"ranks\": GiB/s}");
  std::vector<double> out;
  for (auto e = f->begin(); e != f->end(); ++e) {
    int d = 0;
    try {
      d = std::stoi(e.key());
    } catch (const std::exception&) {
      d = 0;
    }
    if (d < 2 || (ranks > 0 && ranks % d != 0)) {
      throw InputError(file, where + "." + e.key(), "expected a group size >= 2 dividing the network's ranks");
    }
    const double v = number(*f, e.key().c_str(), file, where);
    if (v <= 0) throw InputError(file, where + "." + e.key(), "expected a positive bandwidth (GiB/s)");
    if (ranks > 0) out.push_back(static_cast<double>(ranks / d) * v * kGiBPerGB);
  }
  return out;
}

void read_networks(const json& root, const std::string& file, MeasurementSet& out,
                   std::vector<std::string>& warnings, double& bridge_gb_s) {
  std::vector<double> bridge;
  auto nets = root.find("networks");
  if (nets == root.end() || !nets->is_object()) return;
  for (auto n = nets->begin(); n != nets->end(); ++n) {
    if (!n->is_object()) continue;  // flags such as "intra_with_pcie"
    const std::string name = n.key();
    const std::string where = "networks." + name;
    auto bw = n->find("bandwidth");
    if (bw == n->end() || !bw->is_object()) throw InputError(file, where + ".bandwidth", "expected an object");
    const double link_gb_s = number(*bw, "gbps", file, where + ".bandwidth") * kGiBPerGB;
    const double net_eff = number(*bw, "efficient_factor", file, where + ".bandwidth");
    const double net_latency = number(*bw, "latency_us", file, where + ".bandwidth");
    const LinkTier tier = name.rfind("inter", 0) == 0 ? LinkTier::inter_node : LinkTier::intra_node;
    int ranks = 0;
    if (const auto x = name.rfind('_'); x != std::string::npos && name.size() > x + 2 && name.back() == 'x') {
      try {
        ranks = std::stoi(name.substr(x + 1, name.size() - x - 2));
      } catch (const std::exception&) {
        ranks = 0;
      }
    }
    auto ops = n->find("op");
    if (ops == n->end() || !ops->is_object()) continue;
    for (auto o = ops->begin(); o != ops->end(); ++o) {
      const std::string owhere = where + ".op." + o.key();
      CollectiveFit fit;
      try {
        fit.op = parse_collective_op(o.key());
      } catch (const std::invalid_argument& e) {
        throw InputError(file, owhere, e.what());
      }
      fit.tier = tier;
      fit.ranks = ranks;
      fit.link_gb_s = link_gb_s;
      fit.efficiency = o->contains("efficient_factor") ? number(*o, "efficient_factor", file, owhere) : net_eff;
      fit.latency_us = o->contains("latency_us") ? number(*o, "latency_us", file, owhere) : net_latency;
      out.collective_fits.push_back(fit);
      if (o->contains("dp_fixed_bw")) {
        const std::vector<double> b = bridge_from_dp_fixed_bw(*o, ranks, file, owhere + ".dp_fixed_bw");
        bridge.insert(bridge.end(), b.begin(), b.end());
        warnings.push_back(fmt::format("{}.dp_fixed_bw not imported: SimuMax applies it to data-parallel "
                                       "groups only, which a kernel key cannot express",
                                       owhere));
      }
    }
  }
  if (!bridge.empty()) {
    double sum = 0;
    for (double b : bridge) sum += b;
    bridge_gb_s = sum / static_cast<double>(bridge.size());
    warnings.push_back(fmt::format("dp_fixed_bw implies a PCIe host bridge of {:.1f} GB/s per direction shared by "
                                   "the data-parallel groups that cross it (mean of (GPUs / group size) x rate over "
                                   "{} entries): the system file's network.scale_up.pcie_bridge_gb_s carries it "
                                   "(docs/comm.md \"PCIe switches\")",
                                   bridge_gb_s, bridge.size()));
  }
}

}  // namespace

SimumaxImport read_simumax_system(const std::string& path, const std::string& device_name,
                                  const DeviceRecord* peaks_from) {
  const json root = read_json_file(path);
  if (!root.is_object()) throw InputError(path, "", "expected a SimuMax system object");
  auto accel = root.find("accelerator");
  if (accel == root.end() || !accel->is_object()) throw InputError(path, "accelerator", "expected an object");
  auto ops = accel->find("op");
  if (ops == accel->end() || !ops->is_object()) throw InputError(path, "accelerator.op", "expected an object");

  SimumaxImport out;
  DeviceRecord& d = out.device;
  d.name = device_name;
  const auto op_tflops = [&](const char* op) {
    auto it = ops->find(op);
    return it != ops->end() && it->is_object() && it->contains("tflops")
               ? number(*it, "tflops", path, std::string("accelerator.op.") + op)
               : 0.0;
  };
  const double bf16 = op_tflops("matmul") > 0 ? op_tflops("matmul") : op_tflops("default");
  const double fp8 = op_tflops("fp8_matmul");
  d.peak_tflops[static_cast<int>(DType::bf16)] = d.peak_tflops[static_cast<int>(DType::fp16)] = bf16;
  d.peak_tflops[static_cast<int>(DType::fp8_e4m3)] = d.peak_tflops[static_cast<int>(DType::fp8_e5m2)] = fp8;
  if (accel->contains("mem_gbs")) d.memory_gb = number(*accel, "mem_gbs", path, "accelerator");
  if (auto bw = accel->find("bandwidth"); bw != accel->end() && bw->contains("default")) {
    d.hbm_gb_s = number((*bw)["default"], "gbps", path, "accelerator.bandwidth.default") * kGiBPerGB;
  }
  if (auto b = accel->find("backend"); b != accel->end() && b->is_string()) d.architecture = b->get<std::string>();
  out.alias = root.value("sys_name", std::string());

  const DeviceRecord& peaks = peaks_from ? *peaks_from : d;
  MeasurementSet& rows = out.batch.rows;
  read_matmuls(*ops, path, peaks, rows);
  read_attention(*ops, path, peaks, rows);
  read_memory_fits(*accel, path, rows);
  read_networks(root, path, rows, out.warnings, out.pcie_bridge_gb_s);

  RunRecord& run = out.batch.run;
  run.device = device_name;
  run.source = Source::imported;
  run.tool_version = tool_version();
  run.started_at = run.ended_at = now_utc_iso8601();
  run.notes = fmt::format("SimuMax system file {} (sys_name {})", std::filesystem::path(path).filename().string(),
                          out.alias.empty() ? "unset" : out.alias);
  return out;
}

SimumaxImport import_simumax_system(EfficiencyDb& db, const std::string& path, const std::string& device_name) {
  const auto existing = db.find_device(device_name);
  SimumaxImport imp = read_simumax_system(path, device_name, existing ? &*existing : nullptr);
  Transaction tx(db.connection());  // device, alias and run together or not at all
  if (!existing) db.put_device(imp.device);
  const std::string name = existing ? existing->name : device_name;
  imp.batch.run.device = name;
  if (!imp.alias.empty() && imp.alias != name) db.add_alias(imp.alias, name);
  imp.batch.run.id = db.insert_run(imp.batch);
  tx.commit();
  return imp;
}

}  // namespace calisim::db
