#include "profiler/profile_store.h"

#include <fmt/format.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "db/csv.h"
#include "db/profile_log.h"
#include "db/sqlite_handle.h"

namespace calisim::profiler {
namespace {

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

nlohmann::ordered_json state_json(const GpuState& s) {
  if (!s.valid) return nullptr;
  return {{"sm_clock_mhz", s.sm_clock_mhz},       {"mem_clock_mhz", s.mem_clock_mhz},
          {"max_sm_clock_mhz", s.max_sm_clock_mhz}, {"temperature_c", s.temperature_c},
          {"power_w", s.power_w},                 {"event_reasons", s.event_reasons}};
}

// Achieved rate and efficiency of the one row a measurement produced (0 when skipped).
std::pair<double, double> rate_and_efficiency(const db::MeasurementSet& rows) {
  if (!rows.gemm.empty()) return {rows.gemm[0].tflops, rows.gemm[0].efficiency};
  if (!rows.attention.empty()) return {rows.attention[0].tflops, rows.attention[0].efficiency};
  if (!rows.memory.empty()) return {rows.memory[0].gb_s, rows.memory[0].efficiency};
  if (!rows.collective.empty()) return {rows.collective[0].busbw_gb_s, rows.collective[0].efficiency};
  return {0.0, 0.0};
}

}  // namespace

std::string details_json(const Measurement& m) {
  nlohmann::ordered_json j;
  j["timer"] = to_string(m.timer);
  if (!m.timer_note.empty()) j["timer_note"] = m.timer_note;
  if (m.status == MeasurementStatus::measured) {
    j["stop"] = to_string(m.stop);
    j["n"] = m.summary.n;
    j["mean_s"] = m.summary.mean_s;
    j["max_s"] = m.summary.max_s;
    j["rel_stddev"] = m.summary.rel_stddev();
    j["cold_l2"] = m.cold_l2;
    j["warmup_runs"] = m.warmup_runs;
    if (m.kernels_per_op > 0) {
      j["kernels_per_op"] = m.kernels_per_op;
      j["kernel_sum_median_s"] = m.kernel_sum_median_s;
    }
    if (!m.kernel_names.empty()) j["kernel_names"] = m.kernel_names;
  }
  if (!m.algorithm.empty()) j["algorithm"] = m.algorithm;
  if (!m.library.empty()) j["library"] = m.library;
  j["before"] = state_json(m.before);
  j["after"] = state_json(m.after);
  j["throttled"] = m.throttle.throttled;
  if (!m.throttle.why.empty()) j["throttle_why"] = m.throttle.why;
  return j.dump();
}

std::string csv_header() {
  return "device,key,status,reason,median_s,min_s,p90_s,stddev_s,n,rate,efficiency,timer,algorithm,throttled,"
         "sm_clock_before_mhz,sm_clock_after_mhz,temperature_after_c,power_after_w\n";
}

std::string csv_line(const std::string& device, const PlannedKernel& kernel, const Measurement& m,
                     const db::MeasurementSet& rows) {
  const auto [rate, eff] = rate_and_efficiency(rows);
  const bool ok = m.status == MeasurementStatus::measured;
  auto num = [&](double v) { return ok ? fmt::format("{:.6g}", v) : std::string(); };
  return fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}\n", db::csv_field(device),
                     db::csv_field(kernel.key), to_string(m.status), db::csv_field(m.reason), num(m.summary.median_s),
                     num(m.summary.min_s), num(m.summary.p90_s), num(m.summary.stddev_s), ok ? m.summary.n : 0,
                     num(rate), num(eff), to_string(m.timer), db::csv_field(m.algorithm), m.throttle.throttled ? 1 : 0,
                     m.before.valid ? fmt::format("{:.0f}", m.before.sm_clock_mhz) : "",
                     m.after.valid ? fmt::format("{:.0f}", m.after.sm_clock_mhz) : "",
                     m.after.valid ? fmt::format("{:.0f}", m.after.temperature_c) : "",
                     m.after.valid ? fmt::format("{:.1f}", m.after.power_w) : "");
}

ProfileStore::ProfileStore(const std::string& db_path, const db::DeviceRecord& device, const std::string& cuda_name,
                           StoreOptions options)
    : db_(db::EfficiencyDb::open(db_path, db::OpenMode::create)), device_(device.name), options_(std::move(options)) {
  db_.add_device_if_missing(device);
  if (!cuda_name.empty() && cuda_name != device.name) {
    const auto known = db_.find_device(cuda_name);
    if (!known) db_.add_alias(cuda_name, device.name);
  }
  db::ensure_profile_log_table(db_);
  if (!options_.csv_path.empty()) {
    const bool fresh = std::ifstream(options_.csv_path).peek() == std::ifstream::traits_type::eof();
    csv_.open(options_.csv_path, std::ios::app);
    if (!csv_) throw InputError(options_.csv_path, "", "cannot append to the CSV file");
    if (fresh) csv_ << csv_header() << std::flush;
  }
}

bool ProfileStore::done(const PlannedKernel& kernel) {
  for (const auto& hit : db_.lookup(device_, kernel.key)) {
    if (hit.run.source == db::Source::measured) return true;
  }
  if (options_.retry_skipped) return false;
  db::Statement st(db_.connection(),
                   "SELECT 1 FROM calisim_profile_log WHERE device = ? AND key = ? AND status = 'skipped' LIMIT 1");
  st.bind(1, device_).bind(2, kernel.key);
  return st.step();
}

std::int64_t ProfileStore::ensure_run() {
  if (run_id_) return *run_id_;
  db::RunBatch batch;
  batch.run.device = device_;
  batch.run.source = db::Source::measured;
  batch.run.tool_version = db::tool_version();
  batch.run.host = hostname();
  batch.run.started_at = db::now_utc_iso8601();
  batch.run.notes = options_.notes;
  run_id_ = db_.insert_run(batch);
  return *run_id_;
}

void ProfileStore::commit(const PlannedKernel& kernel, const Measurement& m, const db::MeasurementSet& rows) {
  const std::int64_t run = ensure_run();
  {
    db::Transaction tx(db_.connection());
    if (rows.size() > 0) db_.append_rows(run, rows);
    db::append_profile_log(db_, run, device_,
                           {{kernel.key, std::string(to_string(m.status)), m.reason, db::now_utc_iso8601(),
                             details_json(m)}});
    tx.commit();
  }
  if (csv_.is_open()) csv_ << csv_line(device_, kernel, m, rows) << std::flush;
}

}  // namespace calisim::profiler
