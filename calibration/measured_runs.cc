#include "calibration/measured_runs.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <string_view>

#include "core/error.h"

namespace calisim::calibration {
namespace {

const std::vector<std::string> kPublishedIntColumns = {
    "num_layers", "hidden_size", "ffn_hidden_size", "num_attention_heads", "num_kv_heads", "head_dim",
    "vocab_size", "seq_len", "moe_num_experts", "moe_topk", "moe_ffn_hidden_size",
    "moe_shared_expert_ffn_hidden_size", "moe_first_k_dense_layers", "num_gpus", "gpus_per_node", "nvlink_domain",
    "tp", "pp", "vpp", "cp", "ep", "etp", "dp", "micro_batch_size", "global_batch_size", "grad_accum"};
const std::vector<std::string> kPublishedRealColumns = {
    "step_time_s", "tokens_per_sec_per_gpu", "tokens_per_sec_total", "tflops_per_gpu", "mfu_pct", "hfu_pct",
    "util_peak_tflops_basis", "peak_mem_alloc_gib", "peak_mem_reserved_gib", "derived_tokens_per_sec_per_gpu",
    "derived_dp"};
const std::vector<std::string> kSimuMaxIntColumns = {"num_layers", "tp", "pp", "ep", "dp", "micro_batch_size",
                                                     "micro_batch_num", "seq_len"};
const std::vector<std::string> kSimuMaxRealColumns = {"measured_tflops_per_gpu", "measured_peak_mem_gb",
                                                      "simumax_tflops_per_gpu", "simumax_peak_mem_gb",
                                                      "simumax_step_time_s"};

// Integer columns where 0 means "none" (no shared expert, no leading dense layers, a dense
// model's MoE columns); every other integer column is a count or size of at least 1.
const std::vector<std::string> kZeroAllowedIntColumns = {"moe_num_experts", "moe_topk", "moe_ffn_hidden_size",
                                                         "moe_shared_expert_ffn_hidden_size",
                                                         "moe_first_k_dense_layers"};

bool is_int_column(RunFormat f, const std::string& c) {
  const auto& v = f == RunFormat::published ? kPublishedIntColumns : kSimuMaxIntColumns;
  return std::find(v.begin(), v.end(), c) != v.end();
}

// Smallest value an integer column takes. Integers are read into `int` by the mapping, so the
// largest is INT_MAX: a larger value is refused here rather than wrapping round in a cast.
int min_int(RunFormat f, const std::string& c) {
  return f == RunFormat::published && std::find(kZeroAllowedIntColumns.begin(), kZeroAllowedIntColumns.end(), c) !=
                                          kZeroAllowedIntColumns.end()
             ? 0
             : 1;
}

std::optional<double> to_number(const std::string& s) {
  if (s.empty()) return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (errno != 0 || end != s.c_str() + s.size() || !std::isfinite(v)) return std::nullopt;
  return v;
}

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t") - b + 1);
}

}  // namespace

CsvTable parse_csv(const std::string& text_with_bom, const std::string& file) {
  // Spreadsheet programs save "CSV UTF-8" with a byte-order mark; it is not part of the first
  // column's name (which would otherwise read as "\xEF\xBB\xBFrun_id", and the file as another format).
  constexpr std::string_view kBom = "\xEF\xBB\xBF";
  const std::string_view text =
      std::string_view(text_with_bom).substr(std::string_view(text_with_bom).starts_with(kBom) ? kBom.size() : 0);
  std::vector<CsvRow> records;
  CsvRow cur;
  std::string cell;
  bool quoted = false, any = false;
  int line = 1, quote_line = 0;
  cur.line = 1;
  auto end_record = [&] {
    cur.cells.push_back(cell);
    cell.clear();
    const bool blank = cur.cells.size() == 1 && cur.cells[0].empty() && !any;
    if (!blank) records.push_back(cur);
    cur = CsvRow{};
    any = false;
  };
  for (std::size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (quoted) {
      if (c == '"' && i + 1 < text.size() && text[i + 1] == '"') {
        cell += '"';
        ++i;
      } else if (c == '"') {
        quoted = false;
      } else {
        if (c == '\n') ++line;
        cell += c;
      }
      continue;
    }
    if (cur.cells.empty() && cell.empty() && !any) cur.line = line;
    if (c == '"') {
      quoted = true;
      any = true;
      quote_line = line;
    } else if (c == ',') {
      cur.cells.push_back(cell);
      cell.clear();
      any = true;
    } else if (c == '\n') {
      end_record();
      ++line;
    } else if (c != '\r') {
      cell += c;
      any = true;
    }
  }
  if (quoted) throw InputError(file, fmt::format("line {}", quote_line), "unterminated quoted cell");
  if (!cell.empty() || !cur.cells.empty() || any) end_record();
  if (records.empty()) throw InputError(file, "line 1", "empty file: expected a header row");

  CsvTable t;
  t.header = records.front().cells;
  for (auto& h : t.header) h = trim(h);
  for (std::size_t r = 1; r < records.size(); ++r) {
    if (records[r].cells.size() != t.header.size()) {
      throw InputError(file, fmt::format("line {}", records[r].line),
                       fmt::format("expected {} cells (one per header column), got {}", t.header.size(),
                                   records[r].cells.size()));
    }
    t.rows.push_back(std::move(records[r]));
  }
  return t;
}

const std::string& MeasuredRun::text(const std::string& column) const {
  static const std::string empty;
  const auto it = cells.find(column);
  return it == cells.end() ? empty : it->second;
}

std::optional<double> MeasuredRun::number(const std::string& column) const { return to_number(text(column)); }

const std::vector<std::string>& numeric_columns(RunFormat format) {
  static const std::vector<std::string> pub = [] {
    auto v = kPublishedIntColumns;
    v.insert(v.end(), kPublishedRealColumns.begin(), kPublishedRealColumns.end());
    return v;
  }();
  static const std::vector<std::string> sm = [] {
    auto v = kSimuMaxIntColumns;
    v.insert(v.end(), kSimuMaxRealColumns.begin(), kSimuMaxRealColumns.end());
    return v;
  }();
  return format == RunFormat::published ? pub : sm;
}

std::vector<MeasuredRun> parse_measured_runs(const std::string& text, const std::string& file) {
  const CsvTable t = parse_csv(text, file);
  const std::set<std::string> cols(t.header.begin(), t.header.end());
  const RunFormat format = cols.count("run_id") ? RunFormat::published : RunFormat::simumax;
  const std::vector<std::string> required =
      format == RunFormat::published
          ? std::vector<std::string>{"run_id", "source", "model", "gpu_type", "num_gpus", "tp", "pp", "seq_len"}
          : std::vector<std::string>{"model", "num_layers", "tp", "pp", "ep", "dp", "micro_batch_size",
                                     "micro_batch_num", "seq_len", "measured_tflops_per_gpu",
                                     "simumax_tflops_per_gpu", "simumax_step_time_s"};
  for (const auto& c : required) {
    if (!cols.count(c)) {
      throw InputError(file, "line 1",
                       fmt::format("missing column '{}' (expected the measured_runs.csv or simumax_a100_pcie.csv "
                                   "header; see calibration/data/README.md)",
                                   c));
    }
  }
  std::vector<MeasuredRun> out;
  std::map<std::string, int> line_of_id;
  for (const CsvRow& row : t.rows) {
    MeasuredRun r;
    r.line = row.line;
    r.format = format;
    for (std::size_t i = 0; i < t.header.size(); ++i) r.cells[t.header[i]] = trim(row.cells[i]);
    for (const auto& c : numeric_columns(format)) {
      const std::string& s = r.text(c);
      if (s.empty()) continue;
      const auto v = to_number(s);
      const bool want_int = is_int_column(format, c);
      const std::string where = fmt::format("line {}, column {}", row.line, c);
      if (!v || (want_int && *v != std::floor(*v))) {
        throw InputError(file, where, fmt::format("expected {}, got '{}'", want_int ? "an integer" : "a number", s));
      }
      if (want_int && (*v < min_int(format, c) || *v > std::numeric_limits<int>::max())) {
        throw InputError(file, where,
                         fmt::format("expected an integer from {} to {}, got '{}'", min_int(format, c),
                                     std::numeric_limits<int>::max(), s));
      }
      // Every real column is a measured or published time, rate, share or size: 0 or less would
      // turn into an infinite or negative error (or a memory figure read as "not measured").
      if (!want_int && *v <= 0) {
        throw InputError(file, where,
                         fmt::format("expected a positive number, got '{}' (leave the cell empty when the source "
                                     "does not give it)",
                                     s));
      }
    }
    if (format == RunFormat::published) {
      r.run_id = r.text("run_id");
      r.source = r.text("source");
      r.model = r.text("model");
      r.gpu_type = r.text("gpu_type");
      if (r.run_id.empty()) throw InputError(file, fmt::format("line {}, column run_id", row.line), "empty run_id");
      if (const auto [it, fresh] = line_of_id.emplace(r.run_id, row.line); !fresh) {
        throw InputError(file, fmt::format("line {}, column run_id", row.line),
                         fmt::format("run_id '{}' repeats line {}'s (each run needs its own id)", r.run_id, it->second));
      }
    } else {
      r.run_id = fmt::format("S{:02d}", out.size() + 1);
      r.source = "SimuMax A100-PCIe (MooreThreads/SimuMax)";
      r.model = r.text("model");
      r.gpu_type = "A100-PCIE-80GB";
      if (r.model.empty()) throw InputError(file, fmt::format("line {}, column model", row.line), "empty model");
    }
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<MeasuredRun> read_measured_runs(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputError(path, "", "cannot read the runs file");
  std::stringstream ss;
  ss << in.rdbuf();
  return parse_measured_runs(ss.str(), path);
}

std::vector<MeasuredRun> read_measured_runs(const std::vector<std::string>& paths) {
  if (paths.empty()) throw InputError("<command line>", "--runs", "no runs file given");
  std::vector<MeasuredRun> out;
  std::map<std::string, std::string> file_of_id;
  int generated = 0;
  for (const std::string& path : paths) {
    for (MeasuredRun& r : read_measured_runs(path)) {
      if (r.format == RunFormat::simumax) {
        r.run_id = fmt::format("S{:02d}", ++generated);
      } else if (const auto [it, fresh] = file_of_id.emplace(r.run_id, path); !fresh) {
        throw InputError(path, fmt::format("line {}, column run_id", r.line),
                         fmt::format("run_id '{}' is already a row of {} (run ids must be unique across --runs files)",
                                     r.run_id, it->second));
      }
      out.push_back(std::move(r));
    }
  }
  return out;
}

std::string runs_files_label(const std::vector<std::string>& paths, const std::string& separator) {
  std::vector<std::string> names;
  for (const auto& p : paths) names.push_back(std::filesystem::path(p).filename().string());
  return fmt::format("{}", fmt::join(names, separator));
}

}  // namespace calisim::calibration
