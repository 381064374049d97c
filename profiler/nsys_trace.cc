#include "profiler/nsys_trace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <initializer_list>
#include <filesystem>
#include <set>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "core/error.h"
#include "db/sqlite_handle.h"
#include "profiler/trace_copies.h"
#include "profiler/trace_writer.h"

namespace calisim::profiler {
namespace {

// The table's column names; empty when the report has no such table.
std::set<std::string> columns(db::Connection& c, const std::string& table) {
  std::set<std::string> out;
  db::Statement st(c, "SELECT name FROM pragma_table_info(?)");
  st.bind(1, std::string_view(table));
  while (st.step()) out.insert(st.text(0));
  return out;
}

// "x" when the table has the column, else the SQL literal `fallback`.
std::string column_or(const std::set<std::string>& cols, const std::string& name, const std::string& fallback) {
  return cols.count(name) ? name : fallback;
}

// nsys serialises the process id into globalTid / globalPid: pid = id / 2^24 % 2^24.
constexpr const char* kPidOf = " / 16777216 % 16777216";

// A record's launch: (pid, correlationId); pid kNoPid when its table has no globalPid column
// (the launch is then found by the correlation id alone).
constexpr std::int64_t kNoPid = 0xffffff + 1;
std::uint64_t launch_key(std::int64_t pid, std::int64_t correlation) {
  return (static_cast<std::uint64_t>(pid) << 32) ^ static_cast<std::uint64_t>(correlation & 0xffffffff);
}

struct StepRange {
  std::int64_t start, end;
  std::string text;
};

// The program's NVTX ranges whose text starts with `prefix`, per process, in time order.
std::map<std::int64_t, std::vector<StepRange>> nvtx_step_ranges(db::Connection& c, const std::string& path,
                                                                 const std::string& prefix) {
  const std::set<std::string> nc = columns(c, "NVTX_EVENTS");
  if (nc.empty()) {
    throw InputError(path, "NVTX_EVENTS", "no NVTX ranges in the report: profile with nsys --trace=cuda,nvtx");
  }
  for (const char* need : {"start", "end", "globalTid"}) {
    if (!nc.count(need)) throw InputError(path, "NVTX_EVENTS", fmt::format("expected a column '{}'", need));
  }
  if (!nc.count("text") && !nc.count("textId")) {
    throw InputError(path, "NVTX_EVENTS", "expected a column 'text' or 'textId'");
  }
  const std::string text = nc.count("text") && nc.count("textId") ? "COALESCE(e.text, s.value)"
                           : nc.count("text")                      ? "e.text"
                                                                   : "s.value";
  const std::string sql = fmt::format(
      "SELECT e.start, e.end, e.globalTid{}, {} FROM NVTX_EVENTS AS e {} WHERE e.end IS NOT NULL AND e.end > e.start "
      "AND e.start >= 0{} ORDER BY e.start",
      kPidOf, text, nc.count("textId") ? "LEFT JOIN StringIds AS s ON s.id = e.textId" : "",
      nc.count("eventType") ? " AND e.eventType IN (59, 60)" : "");
  db::Statement st(c, sql);
  std::map<std::int64_t, std::vector<StepRange>> out;
  std::set<std::string> seen;  // other range names, for the error message
  while (st.step()) {
    std::string name = st.text(3);
    if (name.starts_with(prefix)) {
      out[st.int64(2)].push_back({st.int64(0), st.int64(1), std::move(name)});
    } else if (seen.size() < 8) {
      seen.insert(std::move(name));
    }
  }
  if (out.empty()) {
    throw InputError(path, "NVTX_EVENTS",
                     fmt::format("no NVTX range whose text starts with '{}' (ranges in the report include: {})",
                                 prefix, seen.empty() ? "none" : fmt::format("{}", fmt::join(seen, ", "))));
  }
  return out;
}

// Each record's step (ProfilerStep#k of its process's k-th range) by its launch's time.
void assign_nvtx_steps(db::Connection& c, const std::string& path, const std::string& prefix, NsysTrace& t,
                       const std::vector<std::uint64_t>& record_launch) {
  const auto ranges = nvtx_step_ranges(c, path, prefix);
  const std::set<std::string> rc = columns(c, "CUPTI_ACTIVITY_KIND_RUNTIME");
  for (const char* need : {"start", "correlationId", "globalTid"}) {
    if (!rc.count(need)) {
      throw InputError(path, "CUPTI_ACTIVITY_KIND_RUNTIME",
                       rc.empty() ? "no CUDA runtime calls in the report: profile with nsys --trace=cuda"
                                  : fmt::format("expected a column '{}'", need));
    }
  }
  std::unordered_map<std::uint64_t, std::pair<std::int64_t, std::int64_t>> launch;  // key -> (pid, start)
  db::Statement st(c, fmt::format("SELECT correlationId, globalTid{}, start FROM CUPTI_ACTIVITY_KIND_RUNTIME", kPidOf));
  while (st.step()) {
    launch[launch_key(st.int64(1), st.int64(0))] = {st.int64(1), st.int64(2)};
    launch.emplace(launch_key(kNoPid, st.int64(0)), std::pair{st.int64(1), st.int64(2)});  // by correlation alone
  }
  for (std::size_t i = 0; i < t.records.size(); ++i) {
    const auto l = launch.find(record_launch[i]);
    const auto r = l == launch.end() ? ranges.end() : ranges.find(l->second.first);
    const StepRange* in = nullptr;
    if (r != ranges.end()) {
      const auto& v = r->second;
      auto it = std::upper_bound(v.begin(), v.end(), l->second.second,
                                 [](std::int64_t x, const StepRange& s) { return x < s.start; });
      if (it != v.begin() && l->second.second < std::prev(it)->end) in = &*std::prev(it);
    }
    if (in) {
      t.records[i].nvtx_range = fmt::format("{}{}", db::kProfilerStepPrefix, in - r->second.data() + 1);
    } else {
      ++t.outside_steps;
    }
  }
  for (const StepRange& s : ranges.begin()->second) t.steps.push_back(s.text);
}

}  // namespace

NsysTrace read_nsys_sqlite(const std::string& path, const std::string& device_name_override,
                           const std::string& nvtx_step_prefix) {
  if (!std::filesystem::is_regular_file(path)) throw InputError(path, "", "no such report file");
  db::Connection c(path, db::OpenMode::read_only);
  try {
    c.query_int("SELECT count(*) FROM sqlite_master");
  } catch (const std::exception&) {
    throw InputError(path, "",
                     "not an SQLite file (export the report with: nsys export --type sqlite REPORT.nsys-rep)");
  }
  if (columns(c, "StringIds").empty()) {
    throw InputError(path, "StringIds", "not an Nsight Systems SQLite export (nsys export --type sqlite)");
  }
  const std::string kernel_table = "CUPTI_ACTIVITY_KIND_KERNEL";
  const std::set<std::string> kc = columns(c, kernel_table);
  if (kc.empty()) throw InputError(path, kernel_table, "no CUDA kernels in the report: profile with nsys --trace=cuda");
  for (const char* need : {"start", "end", "deviceId", "streamId"}) {
    if (!kc.count(need)) throw InputError(path, kernel_table, fmt::format("expected a column '{}'", need));
  }
  const std::string name_col = kc.count("demangledName") ? "demangledName" : kc.count("shortName") ? "shortName" : "";
  if (name_col.empty()) {
    throw InputError(path, kernel_table, "expected a kernel name column (demangledName or shortName)");
  }

  NsysTrace t;
  std::vector<std::uint64_t> record_launch;  // per record: (pid, correlationId) of its launch
  auto timed = [&t](std::int64_t start, std::int64_t end) {
    if (start == 0 && end == 0) {
      ++t.untimed;
      return false;
    }
    return true;
  };
  {
    const std::string sql = fmt::format(
        "SELECT k.start, k.end, k.deviceId, k.streamId, COALESCE(s.value, ''), {}, {}, {}, {}, {}, {}, {}, {} "
        "FROM {} AS k LEFT JOIN StringIds AS s ON s.id = k.{}",
        column_or(kc, "gridX", "1"), column_or(kc, "gridY", "1"), column_or(kc, "gridZ", "1"),
        column_or(kc, "blockX", "1"), column_or(kc, "blockY", "1"), column_or(kc, "blockZ", "1"),
        kc.count("correlationId") ? "k.correlationId" : "0", kc.count("globalPid") ? std::string("k.globalPid") + kPidOf : std::to_string(kNoPid),
        kernel_table, name_col);
    db::Statement st(c, sql);
    while (st.step()) {
      if (!timed(st.int64(0), st.int64(1))) continue;
      db::TraceKernel k;
      k.start_ns = static_cast<std::uint64_t>(std::max<std::int64_t>(0, st.int64(0)));
      k.end_ns = std::max(k.start_ns, static_cast<std::uint64_t>(std::max<std::int64_t>(0, st.int64(1))));
      k.device = static_cast<int>(st.int64(2));
      k.stream = st.int64(3);
      k.name = st.text(4);
      k.grid_x = static_cast<int>(st.int64(5)), k.grid_y = static_cast<int>(st.int64(6));
      k.grid_z = static_cast<int>(st.int64(7));
      k.block_x = static_cast<int>(st.int64(8)), k.block_y = static_cast<int>(st.int64(9));
      k.block_z = static_cast<int>(st.int64(10));
      finish_trace_kernel(k);
      t.records.push_back(std::move(k));
      record_launch.push_back(launch_key(st.int64(12), st.int64(11)));
      ++t.kernels;
    }
  }
  if (t.kernels == 0) throw InputError(path, kernel_table, "holds no timed kernel: profile with nsys --trace=cuda");

  // Copies and memsets: the same six columns, the kind column named per table (and per nsys version).
  auto transfers = [&](const std::string& table, std::initializer_list<const char*> kind_names, auto make_record) {
    const std::set<std::string> cols = columns(c, table);
    if (cols.empty()) return;  // no such table: nothing of that kind was captured
    std::string kind = "0";
    for (const char* n : kind_names) {
      if (cols.count(n)) {
        kind = n;
        break;
      }
    }
    db::Statement st(c, fmt::format("SELECT start, end, deviceId, {}, {}, {}, {}, {} FROM {}",
                                    column_or(cols, "streamId", "0"), column_or(cols, "bytes", "0"), kind,
                                    column_or(cols, "correlationId", "0"),
                                    cols.count("globalPid") ? std::string("globalPid") + kPidOf : std::to_string(kNoPid), table));
    while (st.step()) {
      if (!timed(st.int64(0), st.int64(1))) continue;
      auto u64 = [&st](int col) { return static_cast<std::uint64_t>(std::max<std::int64_t>(0, st.int64(col))); };
      t.records.push_back(make_record(u64(0), u64(1), static_cast<int>(st.int64(2)), st.int64(3), u64(4),
                                      static_cast<int>(st.int64(5))));
      record_launch.push_back(launch_key(st.int64(7), st.int64(6)));
      ++t.copies;
    }
  };
  transfers("CUPTI_ACTIVITY_KIND_MEMCPY", {"copyKind"},
            [](std::uint64_t start, std::uint64_t end, int device, std::int64_t stream, std::uint64_t bytes, int kind) {
              return copy_record({kind, bytes, start, end, device, stream, -1, -1});
            });
  transfers("CUPTI_ACTIVITY_KIND_MEMSET", {"memKind", "memoryKind"},
            [](std::uint64_t start, std::uint64_t end, int device, std::int64_t stream, std::uint64_t bytes, int kind) {
              return memset_record({kind, bytes, start, end, device, stream});
            });

  // Device names: nsys numbers GPUs its own way (TARGET_INFO_GPU.id); TARGET_INFO_CUDA_DEVICE maps
  // them to the CUDA ordinals the activity records carry.
  {
    const std::set<std::string> gc = columns(c, "TARGET_INFO_GPU"), dc = columns(c, "TARGET_INFO_CUDA_DEVICE");
    const bool mapped = dc.count("cudaId") && dc.count("gpuId");
    if (gc.count("id") && gc.count("name")) {
      db::Statement st(c, mapped ? "SELECT DISTINCT d.cudaId, g.name FROM TARGET_INFO_CUDA_DEVICE AS d "
                                   "JOIN TARGET_INFO_GPU AS g ON g.id = d.gpuId"
                                 : "SELECT id, name FROM TARGET_INFO_GPU");
      while (st.step()) t.device_names[static_cast<int>(st.int64(0))] = st.text(1);
    }
  }
  name_trace_devices(t.records, t.device_names, device_name_override, path, "TARGET_INFO_GPU");
  if (!nvtx_step_prefix.empty()) assign_nvtx_steps(c, path, nvtx_step_prefix, t, record_launch);
  std::stable_sort(t.records.begin(), t.records.end(),
                   [](const db::TraceKernel& a, const db::TraceKernel& b) { return a.start_ns < b.start_ns; });
  return t;
}

}  // namespace calisim::profiler
