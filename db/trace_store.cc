#include "db/trace_store.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <stdexcept>

namespace calisim::db {

std::int64_t write_trace_run(EfficiencyDb& db, const RunRecord& run, const std::vector<TraceKernel>& kernels) {
  if (run.source != Source::trace) throw std::invalid_argument("write_trace_run: the run's source must be 'trace'");
  for (const auto& k : kernels) {
    if (k.end_ns < k.start_ns) {
      throw std::invalid_argument(fmt::format("trace kernel '{}' ends ({}) before it starts ({})", k.name, k.end_ns,
                                              k.start_ns));
    }
  }
  Connection& conn = db.connection();
  Transaction tx(conn);  // insert_run's own transaction nests as a savepoint inside this one
  const std::int64_t run_id = db.insert_run(RunBatch{run, {}});
  Statement st(conn,
               "INSERT INTO trace_kernels (run_id, name, class, device, stream, grid_x, grid_y, grid_z, block_x, "
               "block_y, block_z, start_ns, end_ns, duration_s, nvtx_range) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  for (const auto& k : kernels) {
    Binder(st, 1)(run_id)(k.name)(k.kernel_class)(k.device)(k.stream)(k.grid_x)(k.grid_y)(k.grid_z)(k.block_x)(
        k.block_y)(k.block_z)(static_cast<std::int64_t>(k.start_ns))(static_cast<std::int64_t>(k.end_ns))(
        k.duration_s())(k.nvtx_range);
    st.run();
  }
  tx.commit();
  return run_id;
}

TraceSummary summarize_trace(EfficiencyDb& db, std::int64_t run_id) {
  TraceSummary s;
  s.run_id = run_id;
  Statement st(db.connection(),
               "SELECT class, COUNT(*), SUM(duration_s), MIN(start_ns), MAX(end_ns) FROM trace_kernels "
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
    s.kernels += c.count;
    s.total_s += c.total_s;
    s.classes.push_back(c);
  }
  if (s.kernels > 0) s.wall_s = static_cast<double>(last - first) * 1e-9;
  for (auto& c : s.classes) c.share = s.total_s > 0 ? c.total_s / s.total_s : 0.0;
  std::sort(s.classes.begin(), s.classes.end(), [](const auto& a, const auto& b) {
    return a.total_s != b.total_s ? a.total_s > b.total_s : a.kernel_class < b.kernel_class;
  });
  return s;
}

std::vector<TraceKernel> load_trace_kernels(EfficiencyDb& db, std::int64_t run_id) {
  Statement st(db.connection(),
               "SELECT name, class, device, stream, grid_x, grid_y, grid_z, block_x, block_y, block_z, start_ns, "
               "end_ns, nvtx_range FROM trace_kernels WHERE run_id = ? ORDER BY start_ns, id");
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
    out.push_back(std::move(k));
  }
  return out;
}

}  // namespace calisim::db
