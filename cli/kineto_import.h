// `calisim db import DB --kineto FILE [--device NAME]` (and the Python API's import_kineto): one
// rank's PyTorch profiler trace read by profiler/kineto_trace.h and stored as trace runs.
//
// Contract: the whole file is read before the database is touched (a malformed trace creates and
// changes nothing); one trace run per GPU in the trace (profiler::store_trace), with tool
// "calisim db import --kineto", host "unknown", no dates, and notes naming the file, rank, steps
// and a fingerprint of the records; a trace already imported into that database (same
// fingerprint) is refused with InputError. Files over 64 MB say on stderr what is being read.
// Returns what was stored as a JSON document and as text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>

namespace calisim::cli {

struct KinetoImportReport {
  nlohmann::ordered_json doc;
  std::string text;
};

KinetoImportReport import_kineto_trace(const std::string& db_path, const std::string& file,
                                       const std::string& device = "");

}  // namespace calisim::cli
