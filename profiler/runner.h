// The profile run loop: plan in, one committed measurement per kernel out.
//
// For each planned kernel, in plan order: skip it when the store says it is done (resume);
// otherwise ask the bench to measure it, turn a measured result into rows (row_builder.h), and
// commit result and log entry in one transaction (profile_store.h). Kernels the bench cannot run
// (unsupported shape, out of memory, too few GPUs) and rows without an efficiency (no peak for
// the dtype) are committed as `skipped` with the reason. An exception from the bench is recorded
// the same way; after `max_consecutive_failures` of them in a row the run stops with an error
// (a dead CUDA context would fail everything that follows). `stop_requested` (set from a SIGINT
// handler) is checked between kernels: the kernel in flight is finished and committed first.
#pragma once

#include <atomic>
#include <cstddef>
#include <string>
#include <vector>

#include "core/device_spec.h"
#include "profiler/measurement.h"
#include "profiler/profile_plan.h"
#include "profiler/profile_store.h"
#include "profiler/progress.h"
#include "profiler/row_builder.h"

namespace calisim::profiler {

// A benchmark backend: measures one kernel, in this process, on the configured device(s).
class KernelBench {
 public:
  virtual ~KernelBench() = default;
  // Never returns a `measured` result without samples; reports inability as skipped_because().
  virtual Measurement measure(const PlannedKernel& kernel) = 0;
};

struct RunnerOptions {
  int max_consecutive_failures = 3;
  const std::atomic<bool>* stop_requested = nullptr;
  ProgressPrinter* progress = nullptr;
};

struct RunReport {
  std::size_t planned = 0, already_done = 0, measured = 0, skipped = 0;
  bool interrupted = false;
  double elapsed_s = 0;
  std::vector<std::string> skips;      // "key: reason" for this process's skips
  std::vector<std::string> throttled;  // keys whose measurement was flagged throttled
};

RunReport run_plan(const ProfilePlan& plan, KernelBench& bench, ProfileStore& store, const DeviceSpec& device,
                   const LinkBandwidth& links, const RunnerOptions& options = {});

}  // namespace calisim::profiler
