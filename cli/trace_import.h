// `calisim db import DB --kineto FILE | --nsys REPORT.sqlite [--device NAME]` (and the Python API's
// import_kineto / import_nsys): a PyTorch profiler trace (profiler/kineto_trace.h) or an Nsight
// Systems SQLite export (profiler/nsys_trace.h) stored as trace runs.
//
// Contract, per trace file: the whole input is read before the database is touched (a malformed
// trace creates and changes nothing); one trace run per GPU in the trace (profiler::store_trace),
// with tool "calisim db import --kineto" / "--nsys", host "unknown", no dates, and notes naming the
// file (Kineto: rank and steps), and a fingerprint of the records; a trace already imported into
// that database by the same tool (same fingerprint) is refused with InputError. Inputs over 64 MB
// say on stderr what is being read. Returns what was stored as a JSON document and as text.
//
// `--kineto` also takes a directory: each *.json / *.json.gz in it, in name order
// (tensorboard_trace_handler writes one file per rank and profiling cycle), each file its own
// transaction, progress on stderr; `--nsys` likewise each *.sqlite (one export per node). There a file already imported is skipped and listed, not
// refused, so the directory can be imported again after files were added; an error stops at that
// file, and the ones before it stay stored (listed on stderr). Its JSON document is
// {"directory", "imports": [each file's document], "skipped": [{"file", "already_imported_as_run"}]}.
// A --kineto directory of several files first reads each for its collective calls and matches them
// across ranks (profiler/collective_matching.h): the collective rows then time each call as the
// fastest rank's, and the document adds "collective_matching" (ranks, calls, matched calls, wait
// removed, why not matched) when any file has collectives.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace calisim::cli {

// Every import's notes carry "fingerprint " and 16 hex digits of its records: what refuses a second
// import of the same trace, and what links a trace run to the efficiency rows of its operators.
inline constexpr std::string_view kFingerprintPrefix = "fingerprint ";
// The fingerprint text in a run's notes ("fingerprint 0123456789abcdef"), or "" when none.
std::string import_fingerprint(const std::string& notes);

struct TraceImportReport {
  nlohmann::ordered_json doc;
  std::string text;
};

// kernel_rows false (--no-kernel-rows): the trace only, no efficiency rows from its operators
// (the report still counts what they would have been).
TraceImportReport import_kineto_trace(const std::string& db_path, const std::string& path,
                                      const std::string& device = "", bool kernel_rows = true);
// nvtx_step_prefix: the program's NVTX ranges whose text starts with it are the steps
// (profiler/nsys_trace.h); empty: the report has no steps.
TraceImportReport import_nsys_trace(const std::string& db_path, const std::string& file,
                                    const std::string& device = "", const std::string& nvtx_step_prefix = "");

}  // namespace calisim::cli
