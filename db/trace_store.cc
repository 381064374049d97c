#include "db/trace_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <stdexcept>

namespace calisim::db {
namespace {

void check_records(const std::vector<TraceKernel>& kernels) {
  for (const auto& k : kernels) {
    if (k.end_ns < k.start_ns) {
      throw std::invalid_argument(fmt::format("trace record '{}' ends ({}) before it starts ({})", k.name, k.end_ns,
                                              k.start_ns));
    }
    if (!is_trace_class(k.kernel_class)) {
      throw std::invalid_argument(fmt::format("trace record '{}' has class '{}'; expected one of {}", k.name,
                                              k.kernel_class, fmt::join(trace_classes(), ", ")));
    }
    if (k.bytes < 0) throw std::invalid_argument(fmt::format("trace record '{}' has negative bytes", k.name));
  }
}

void insert_records(Connection& conn, std::int64_t run_id, const std::vector<TraceKernel>& kernels) {
  Statement st(conn,
               "INSERT INTO trace_kernels (run_id, name, class, device, stream, grid_x, grid_y, grid_z, block_x, "
               "block_y, block_z, start_ns, end_ns, duration_s, nvtx_range, bytes, copy_kind) "
               "VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (const auto& k : kernels) {
    Binder(st, 1)(run_id)(k.name)(k.kernel_class)(k.device)(k.stream)(k.grid_x)(k.grid_y)(k.grid_z)(k.block_x)(
        k.block_y)(k.block_z)(static_cast<std::int64_t>(k.start_ns))(static_cast<std::int64_t>(k.end_ns))(
        k.duration_s())(k.nvtx_range)(k.bytes)(k.copy_kind);
    st.run();
  }
}

}  // namespace

const std::vector<std::string_view>& trace_classes() {
  static const std::vector<std::string_view> classes = {"gemm",   "attention", "nccl", "elementwise",
                                                        "memcpy", "memset",    "other"};
  return classes;
}

bool is_trace_class(std::string_view c) {
  const auto& all = trace_classes();
  return std::find(all.begin(), all.end(), c) != all.end();
}

std::int64_t write_trace_run(EfficiencyDb& db, const RunRecord& run, const std::vector<TraceKernel>& kernels) {
  if (run.source != Source::trace) throw std::invalid_argument("write_trace_run: the run's source must be 'trace'");
  check_records(kernels);
  Connection& conn = db.connection();
  Transaction tx(conn);  // insert_run's own transaction nests as a savepoint inside this one
  const std::int64_t run_id = db.insert_run(RunBatch{run, {}});
  insert_records(conn, run_id, kernels);
  tx.commit();
  return run_id;
}

void append_trace_kernels(EfficiencyDb& db, std::int64_t run_id, const std::vector<TraceKernel>& kernels) {
  check_records(kernels);
  Connection& conn = db.connection();
  Transaction tx(conn);
  Statement exists(conn, "SELECT COUNT(*) FROM runs WHERE id = ?");
  exists.bind(1, run_id);
  if (!exists.step() || exists.int64(0) == 0) {
    throw std::invalid_argument(fmt::format("append_trace_kernels: no run {}", run_id));
  }
  insert_records(conn, run_id, kernels);
  tx.commit();
}

TraceSummary summarize_trace(EfficiencyDb& db, std::int64_t run_id) {
  TraceSummary s;
  s.run_id = run_id;
  Statement st(db.connection(),
               "SELECT class, COUNT(*), SUM(duration_s), MIN(start_ns), MAX(end_ns), SUM(bytes) FROM trace_kernels "
               "WHERE run_id = ? GROUP BY class");
  st.bind(1, run_id);
  std::int64_t first = INT64_MAX, last = 0;
  while (st.step()) {
    TraceClassSummary c;
    c.kernel_class = st.text(0);
    c.count = st.int64(1);
    c.total_s = st.real(2);
    first = std::min(first, st.int64(3));
    last = std::max(last, st.int64(4));
    c.bytes = st.int64(5);
    s.kernels += c.count;
    s.total_s += c.total_s;
    s.classes.push_back(c);
  }
  if (s.kernels > 0) s.wall_s = static_cast<double>(last - first) * 1e-9;
  for (auto& c : s.classes) c.share = s.total_s > 0 ? c.total_s / s.total_s : 0.0;
  std::sort(s.classes.begin(), s.classes.end(), [](const auto& a, const auto& b) {
    return a.total_s != b.total_s ? a.total_s > b.total_s : a.kernel_class < b.kernel_class;
  });
  Statement cp(db.connection(),
               "SELECT class, copy_kind, COUNT(*), SUM(bytes), SUM(duration_s) FROM trace_kernels "
               "WHERE run_id = ? AND class IN ('memcpy', 'memset') GROUP BY class, copy_kind");
  cp.bind(1, run_id);
  while (cp.step()) {
    TraceCopySummary c;
    c.kernel_class = cp.text(0);
    c.copy_kind = cp.text(1);
    c.count = cp.int64(2);
    c.bytes = cp.int64(3);
    c.total_s = cp.real(4);
    s.copies.push_back(c);
  }
  std::sort(s.copies.begin(), s.copies.end(), [](const auto& a, const auto& b) {
    return a.total_s != b.total_s ? a.total_s > b.total_s
                                  : std::tie(a.kernel_class, a.copy_kind) < std::tie(b.kernel_class, b.copy_kind);
  });
  return s;
}

std::vector<TraceKernel> load_trace_kernels(EfficiencyDb& db, std::int64_t run_id) {
  Statement st(db.connection(),
               "SELECT name, class, device, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z, start_ns, "
               "end_ns, nvtx_range, bytes, copy_kind FROM trace_kernels WHERE run_id = ? ORDER BY start_ns, id");
  st.bind(1, run_id);
  std::vector<TraceKernel> out;
  while (st.step()) {
    TraceKernel k;
    k.name = st.text(0);
    k.kernel_class = st.text(1);
    k.device = static_cast<int>(st.int64(2));
    k.stream = st.int64(3);
    k.grid_x = static_cast<int>(st.int64(4));
    k.grid_y = static_cast<int>(st.int64(5));
    k.grid_z = static_cast<int>(st.int64(6));
    k.block_x = static_cast<int>(st.int64(7));
    k.block_y = static_cast<int>(st.int64(8));
    k.block_z = static_cast<int>(st.int64(9));
    k.start_ns = static_cast<std::uint64_t>(st.int64(10));
    k.end_ns = static_cast<std::uint64_t>(st.int64(11));
    k.nvtx_range = st.text(12);
    k.bytes = st.int64(13);
    k.copy_kind = st.text(14);
    out.push_back(std::move(k));
  }
  return out;
}

std::vector<std::int64_t> runs_with_trace_kernels(EfficiencyDb& db) {
  Statement st(db.connection(), "SELECT DISTINCT run_id FROM trace_kernels ORDER BY run_id");
  std::vector<std::int64_t> out;
  while (st.step()) out.push_back(st.int64(0));
  return out;
}

}  // namespace calisim::db
