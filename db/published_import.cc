#include "db/published_import.h"

#include <fmt/format.h>

#include <map>
#include <stdexcept>

#include "core/error.h"
#include "db/csv.h"
#include "db/json_file.h"
#include "db/key_text.h"

namespace calisim::db {
namespace {

class Line {
 public:
  Line(const CsvTable& t, const CsvRecord& r, const std::string& file) : t_(t), r_(r), file_(file) {}

  std::string text(const char* column, bool required) const {
    const int c = t_.column(column);
    const std::string v = c < 0 ? "" : r_.fields[c];
    if (required && v.empty()) fail(column, "is required");
    return v;
  }
  double positive(const char* column) const {
    const std::string v = text(column, true);
    try {
      std::size_t used = 0;
      const double d = std::stod(v, &used);
      if (used == v.size() && d > 0) return d;
    } catch (const std::exception&) {
    }
    fail(column, fmt::format("'{}' is not a positive number", v));
  }
  [[noreturn]] void fail(const char* column, const std::string& why) const {
    throw InputError(file_, fmt::format("line {}, field '{}'", r_.line, column), why);
  }

 private:
  const CsvTable& t_;
  const CsvRecord& r_;
  const std::string& file_;
};

double peak_of(const DeviceRecord& d, DType t, const Line& line) {
  const double p = d.peak_tflops[static_cast<int>(t)];
  if (p <= 0) line.fail("device", fmt::format("device '{}' has no {} peak in the database", d.name, to_string(t)));
  return p;
}

PublishedTiming timing_cell(const CsvTable& t, const Line& line) {
  if (t.column("timing") < 0) return PublishedTiming::unknown;
  const std::string v = line.text("timing", true);
  for (auto k : {PublishedTiming::kernel, PublishedTiming::eager_loop, PublishedTiming::unknown}) {
    if (v == to_string(k)) return k;
  }
  line.fail("timing", fmt::format("'{}' is not one of kernel, eager_loop, unknown", v));
}

constexpr const char* kTimingClause = "; timing: ";

}  // namespace

const char* to_string(PublishedTiming t) {
  switch (t) {
    case PublishedTiming::kernel: return "kernel";
    case PublishedTiming::eager_loop: return "eager_loop";
    case PublishedTiming::unknown: return "unknown";
  }
  return "unknown";
}

PublishedTiming published_timing(const RunRecord& run) {
  if (run.source != Source::published) return PublishedTiming::kernel;
  const auto at = run.notes.find(kTimingClause);
  if (at == std::string::npos) return PublishedTiming::unknown;  // imported before the column existed
  const std::string rest = run.notes.substr(at + std::char_traits<char>::length(kTimingClause));
  for (auto k : {PublishedTiming::kernel, PublishedTiming::eager_loop}) {
    const std::string name = to_string(k);
    if (rest.compare(0, name.size(), name) == 0 && (rest.size() == name.size() || rest[name.size()] == ';')) return k;
  }
  return PublishedTiming::unknown;
}

std::vector<RunBatch> read_published_csv(const std::string& path, EfficiencyDb& db) {
  const CsvTable table = parse_csv(read_text_file(path), path);
  for (const char* required : {"device", "key", "source"}) {
    if (table.column(required) < 0) throw InputError(path, "line 1", fmt::format("column '{}' is missing", required));
  }
  std::vector<RunBatch> runs;
  std::map<std::tuple<std::string, std::string>, std::size_t> index;
  std::map<std::string, DeviceRecord> devices;
  const std::string now = now_utc_iso8601();
  for (const CsvRecord& rec : table.records) {
    const Line line(table, rec, path);
    const std::string device_name = line.text("device", true);
    auto dev = devices.find(device_name);
    if (dev == devices.end()) {
      const auto found = db.find_device(device_name);
      if (!found) line.fail("device", fmt::format("no device '{}' in the database (add it first)", device_name));
      dev = devices.emplace(device_name, *found).first;
    }
    const DeviceRecord& d = dev->second;
    const PublishedTiming timing = timing_cell(table, line);
    std::string notes = "source: " + line.text("source", true) + kTimingClause + to_string(timing);
    if (const std::string extra = line.text("notes", false); !extra.empty()) notes += "; " + extra;
    auto [it, inserted] = index.try_emplace({d.name, notes}, runs.size());
    if (inserted) {
      RunBatch b;
      b.run.device = d.name;
      b.run.source = Source::published;
      b.run.tool_version = tool_version();
      b.run.started_at = b.run.ended_at = now;
      b.run.notes = notes;
      runs.push_back(std::move(b));
    }
    MeasurementSet& rows = runs[it->second].rows;
    const std::string key = line.text("key", true);
    try {
      switch (key_kind(key)) {
        case KeyKind::gemm: {
          const GemmKey k = parse_gemm_key(key);
          rows.gemm.push_back(row_from_tflops<GemmRow>(k, line.positive("tflops"), peak_of(d, k.dtype, line)));
          break;
        }
        case KeyKind::attention: {
          const AttentionKey k = parse_attention_key(key);
          rows.attention.push_back(
              row_from_tflops<AttentionRow>(k, line.positive("tflops"), peak_of(d, k.dtype, line)));
          break;
        }
        case KeyKind::memory: {
          MemoryOpRow r;
          r.key = parse_memory_key(key);
          r.gb_s = line.positive("gb_s");
          if (d.hbm_gb_s <= 0) line.fail("device", fmt::format("device '{}' has no HBM bandwidth", d.name));
          r.efficiency = r.gb_s / d.hbm_gb_s;
          const double t = static_cast<double>(r.key.bytes) / (r.gb_s * 1e9);
          r.stats = SampleStats{t, t, t, 0, 0};
          rows.memory.push_back(r);
          break;
        }
        case KeyKind::collective: {
          // A collective's time is the collective's, whatever issued it: no host-loop bound applies.
          if (timing == PublishedTiming::eager_loop) line.fail("timing", "eager_loop applies to gemm, attn and mem keys");
          CollectiveRow r;
          r.key = parse_collective_key(key);
          r.busbw_gb_s = line.positive("busbw_gb_s");
          r.link_gb_s = line.positive("link_gb_s");
          r.efficiency = r.busbw_gb_s / r.link_gb_s;
          const double factor = bus_factor(r.key.op, r.key.ranks);
          r.algbw_gb_s = factor > 0 ? r.busbw_gb_s / factor : 0;
          const double t = r.algbw_gb_s > 0 ? static_cast<double>(r.key.bytes) / (r.algbw_gb_s * 1e9) : 0;
          r.stats = SampleStats{t, t, t, 0, 0};
          rows.collective.push_back(r);
          break;
        }
        case KeyKind::memory_fit:
        case KeyKind::collective_fit: line.fail("key", "published figures are kernel keys, not fits");
      }
    } catch (const std::invalid_argument& e) {
      line.fail("key", e.what());
    }
  }
  return runs;
}

}  // namespace calisim::db
