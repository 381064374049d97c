#include "profiler/runner.h"

#include <chrono>
#include <stdexcept>

#include "core/error.h"

namespace calisim::profiler {

RunReport run_plan(const ProfilePlan& plan, KernelBench& bench, ProfileStore& store, const DeviceSpec& device,
                   const LinkBandwidth& links, const RunnerOptions& options) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  RunReport report;
  report.planned = plan.kernels.size();
  ProgressState progress;
  progress.total = plan.kernels.size();
  int failures_in_a_row = 0;

  for (const PlannedKernel& kernel : plan.kernels) {
    if (options.stop_requested && options.stop_requested->load()) {
      report.interrupted = true;
      break;
    }
    if (store.done(kernel)) {
      ++report.already_done;
      ++progress.done;
      continue;
    }
    progress.current = kernel.key;
    progress.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (options.progress) options.progress->update(progress);

    Measurement m;
    bool failed = false;
    try {
      m = bench.measure(kernel);
    } catch (const std::exception& e) {
      m = Measurement::skipped_because(std::string("failed: ") + e.what());
      failed = true;
    }
    db::MeasurementSet rows;
    if (m.status == MeasurementStatus::measured) {
      try {
        rows = rows_for(kernel, m, device, links);
      } catch (const InputError& e) {
        m.status = MeasurementStatus::skipped;
        m.reason = e.problem();
      }
    }
    store.commit(kernel, m, rows);
    if (m.status == MeasurementStatus::measured) {
      ++report.measured;
      if (m.throttle.throttled) report.throttled.push_back(kernel.key + ": " + m.throttle.why);
    } else {
      ++report.skipped;
      report.skips.push_back(kernel.key + ": " + m.reason);
    }
    ++progress.done;
    ++progress.timed;
    failures_in_a_row = failed ? failures_in_a_row + 1 : 0;
    if (failures_in_a_row >= options.max_consecutive_failures) {
      throw std::runtime_error("stopping: " + std::to_string(failures_in_a_row) +
                               " measurements in a row failed; the last: " + m.reason);
    }
  }
  report.elapsed_s = std::chrono::duration<double>(Clock::now() - t0).count();
  progress.elapsed_s = report.elapsed_s;
  if (options.progress) options.progress->finish(progress);
  return report;
}

}  // namespace calisim::profiler
