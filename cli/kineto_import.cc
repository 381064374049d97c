#include "cli/kineto_import.h"

#include <fmt/format.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <string_view>
#include <system_error>

#include "core/error.h"
#include "db/efficiency_db.h"
#include "db/trace_store.h"
#include "profiler/kineto_trace.h"
#include "profiler/trace_writer.h"

namespace calisim::cli {
namespace {
using ordered_json = nlohmann::ordered_json;
constexpr const char* kKinetoTool = "calisim db import --kineto";

}  // namespace

// A PyTorch profiler trace becomes one trace run per GPU it shows (normally one: a trace is one
// rank's). The file is read whole before the database is touched.
KinetoImportReport import_kineto_trace(const std::string& db_path, const std::string& file,
                                       const std::string& device) {
  // A trace of a few training steps runs to hundreds of MB; reading takes about 5 s per 100 MB.
  std::error_code size_ec;
  const auto bytes = std::filesystem::file_size(file, size_ec);
  const bool large = !size_ec && bytes > (64u << 20);
  if (large) fmt::print(stderr, "reading {} ({:.0f} MB) ...\n", file, static_cast<double>(bytes) / 1e6);
  const profiler::KinetoTrace t = profiler::read_kineto_trace(file, device);
  if (large) fmt::print(stderr, "read {} GPU records; storing ...\n", t.records.size());
  std::string notes =
      fmt::format("PyTorch profiler (Kineto) trace {}", std::filesystem::path(file).filename().string());
  if (t.rank >= 0) notes += fmt::format("; rank {} of {}", t.rank, t.world_size);
  if (!t.steps.empty()) {
    notes += fmt::format("; {} step(s) {} .. {} ({})", t.steps.size(), t.steps.front(), t.steps.back(), t.step_source);
  } else {
    notes += "; no ProfilerStep ranges";
  }
  if (t.outside_steps > 0) notes += fmt::format("; {} record(s) outside the steps", t.outside_steps);
  // A fingerprint of the records (FNV-1a over names and times) tells a second import of the same
  // trace from another trace that happens to share its file name.
  std::uint64_t fp = 1469598103934665603ull;
  auto mix = [&fp](std::string_view bytes) {
    for (unsigned char c : bytes) fp = (fp ^ c) * 1099511628211ull;
  };
  for (const db::TraceKernel& k : t.records) {
    mix(k.name);
    mix(fmt::format("{}:{}:{}", k.device, k.start_ns, k.end_ns));
  }
  const std::string fingerprint = fmt::format("fingerprint {:016x}", fp);
  notes += "; " + fingerprint;
  // The same file imported twice would count its kernels twice in every summary and comparison.
  if (std::filesystem::exists(db_path)) {
    auto existing = db::EfficiencyDb::open(db_path, db::OpenMode::read_only);
    for (const db::RunBatch& b : existing.load_runs()) {
      if (b.run.source == db::Source::trace && b.run.tool_version == kKinetoTool &&
          b.run.notes.find(fingerprint) != std::string::npos) {
        throw InputError(file, "db import --kineto",
                         fmt::format("already imported into {} as trace run {}", db_path, b.run.id));
      }
    }
  }
  // The trace carries no wall-clock dates calisim relies on; the host is not recorded either.
  profiler::TraceRunInfo info(notes, "");
  info.ended_at = std::string();
  info.tool = kKinetoTool;
  info.host = "unknown";
  const profiler::TraceWriteResult w = profiler::store_trace(db_path, t.records, t.device_names, info);
  ordered_json runs = ordered_json::array();
  std::string text = fmt::format("imported {}: {} kernels, {} copies / memsets", file, t.kernels, t.copies);
  text += t.steps.empty() ? "; no ProfilerStep ranges (compare with --trace-steps N)\n"
                          : fmt::format("; {} step(s) {} .. {} by {}{}\n", t.steps.size(), t.steps.front(),
                                        t.steps.back(), t.step_source,
                                        t.outside_steps > 0
                                            ? fmt::format(", {} record(s) outside them", t.outside_steps)
                                            : std::string());
  for (const auto& [ordinal, run] : w.run_by_device) {
    const std::string& name = t.device_names.at(ordinal);
    text += fmt::format("  CUDA device {} ({}): trace run {} in {}\n", ordinal, name, run, db_path);
    runs.push_back({{"device_ordinal", ordinal}, {"device", name}, {"run", run}});
  }
  for (const auto& warning : w.warnings) text += "  warning: " + warning + "\n";
  ordered_json doc = {{"file", file},         {"kernels", t.kernels},
                      {"copies", t.copies},       {"steps", t.steps},
                      {"step_source", t.step_source}, {"outside_steps", t.outside_steps},
                      {"rank", t.rank},           {"world_size", t.world_size},
                      {"runs", runs},             {"warnings", w.warnings}};
  return {doc, text};
}

}  // namespace calisim::cli
