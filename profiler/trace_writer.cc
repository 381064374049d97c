#include "profiler/trace_writer.h"

#include <cxxabi.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "core/error.h"
#include "db/sqlite_handle.h"
#include "profiler/kernel_class.h"

namespace calisim::profiler {

std::string utc_now_iso() {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {

std::string hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "";
  return buf;
}

}  // namespace

std::string demangle_kernel_name(std::string_view name) {
  if (name.substr(0, 2) != "_Z") return std::string(name);
  const std::string mangled(name);
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status),
                                             std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

void finish_trace_kernel(db::TraceKernel& k) {
  k.name = demangle_kernel_name(k.name);
  k.kernel_class = std::string(to_string(classify_kernel(k.name)));
}

TraceWriteResult store_trace(const std::string& db_path, std::vector<db::TraceKernel> kernels,
                             const std::map<int, std::string>& device_names, const TraceRunInfo& info,
                             const TraceExtras& extras) {
  std::map<int, std::vector<db::TraceKernel>> by_device;
  for (auto& k : kernels) by_device[k.device].push_back(std::move(k));
  TraceWriteResult result;
  auto db = db::EfficiencyDb::open(db_path, db::OpenMode::create);
  db::Transaction tx(db.connection());  // write_trace_run's and insert_run's own transactions nest in it
  for (auto& [ordinal, list] : by_device) {
    std::sort(list.begin(), list.end(), [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; });
    const auto it = device_names.find(ordinal);
    const std::string cuda_name = it != device_names.end() ? it->second : fmt::format("CUDA device {}", ordinal);
    const auto specs = extras.device_specs.find(ordinal);
    std::string device;
    if (const auto found = db.find_device(cuda_name)) {
      device = found->name;
      if (!found->has_peaks() && specs != extras.device_specs.end()) {
        db::DeviceRecord d = specs->second;
        d.name = found->name;
        db.put_device(d);
      }
    } else if (specs != extras.device_specs.end()) {
      db.add_device_if_missing(specs->second);
      device = specs->second.name;
      if (device != cuda_name) db.add_alias(cuda_name, device);
    } else {
      db::DeviceRecord d;
      d.name = cuda_name;
      db.add_device_if_missing(d);
      device = cuda_name;
      result.warnings.push_back(fmt::format(
          "{} had no device '{}': added it without specs (profile it, or add an alias, to attach peaks)", db_path,
          cuda_name));
    }
    db::RunRecord run;
    run.device = device;
    run.source = db::Source::trace;
    run.tool_version = info.tool;
    run.host = info.host.empty() ? hostname() : info.host;
    run.started_at = info.started_at;
    run.ended_at = info.ended_at ? *info.ended_at : utc_now_iso();
    const auto copies = std::count_if(list.begin(), list.end(), [](const db::TraceKernel& k) {
      return k.kernel_class == "memcpy" || k.kernel_class == "memset";
    });
    run.notes = fmt::format("{}; CUDA device {} ({}); {} kernels, {} copies / memsets", info.notes, ordinal, cuda_name,
                            static_cast<std::ptrdiff_t>(list.size()) - copies, copies);
    result.run_by_device[ordinal] = db::write_trace_run(db, run, list);
    result.device_by_ordinal[ordinal] = device;
    if (const auto rows = extras.rows.find(ordinal); rows != extras.rows.end() && rows->second.rows.size() > 0) {
      db::RunBatch batch;
      batch.run = run;
      batch.run.notes = rows->second.notes;
      batch.rows = rows->second.rows;
      result.rows_run_by_device[ordinal] = db.insert_run(batch);
    }
  }
  tx.commit();
  return result;
}

void name_trace_devices(const std::vector<db::TraceKernel>& records, std::map<int, std::string>& names,
                        const std::string& override, const std::string& file, const std::string& where) {
  for (const db::TraceKernel& k : records) {
    if (!override.empty()) {
      names[k.device] = override;
    } else if (!names.count(k.device)) {
      throw InputError(file, where,
                       fmt::format("names no CUDA device {}: pass --device NAME (the GPU the trace ran on)", k.device));
    }
  }
}

std::optional<std::pair<int, int>> launcher_rank(const std::function<const char*(const char*)>& env) {
  static constexpr std::pair<const char*, const char*> kPairs[] = {{"RANK", "WORLD_SIZE"},
                                                                   {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                                                   {"SLURM_PROCID", "SLURM_NTASKS"},
                                                                   {"PMI_RANK", "PMI_SIZE"}};
  auto number = [](const char* text) -> std::optional<long> {
    if (!text || !*text) return std::nullopt;
    char* end = nullptr;
    const long v = std::strtol(text, &end, 10);
    return *end == '\0' ? std::optional<long>(v) : std::nullopt;
  };
  for (const auto& [rank_var, size_var] : kPairs) {
    const auto rank = number(env(rank_var));
    const auto size = number(env(size_var));
    if (rank && size && *rank >= 0 && *rank < *size && *size <= 1'000'000'000L) {
      return std::pair{static_cast<int>(*rank), static_cast<int>(*size)};
    }
  }
  return std::nullopt;
}

}  // namespace calisim::profiler
