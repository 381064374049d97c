// Strategy search for the Python API: `calisim search` from documents in memory.
//
// Mirrors cli/search_command.cc: the base strategy gets world_size and global_batch_size from the
// space, loses micro_batch_num, and takes seq_len from `seq_len` when > 0; empty lists get
// fill_default_lists; the efficiency source is chosen as the CLI does (db, else the system file's
// efficiency_db, else roofline). Runs run_search without touching Python objects, so callers may
// release the GIL around it.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "python/run_docs.h"
#include "simulator/search.h"

namespace calisim::python {

struct SearchRequest {
  ConfigDoc model, base_strategy, system;  // base_strategy.doc may be an empty object
  std::vector<std::string> overrides;
  nlohmann::json space;    // world_size, global_batch_size, seq_len, tp, pp, vpp, cp, ep, zero, mbs, recompute
  nlohmann::json options;  // top_k, threads, memory_margin_gb, use_reserved_memory, keep_all, objective,
                           // accuracy, accuracy_runs (the best layout's envelope, cli/accuracy_report.h)
  std::string db;          // efficiency database; empty = the system file's, if any
  std::string csv_path;    // every feasible candidate (implies keep_all), CLI --csv format; empty = none
  std::string out_path;    // the top K, CLI --out format; empty = none
};

// Returns {"model", "system", "world_size", "global_batch_size", "seq_len", "efficiency_db",
// "counts", "elapsed_s", "candidates_per_s", "top": [...], "feasible": [...], "explanation",
// "smallest"} with candidates in the CLI's --json form, and "accuracy" when asked (and a layout fits). Throws InputError for bad configs, an
// unknown recompute name, an unmodeled ZeRO stage or an empty space; "nothing fits" is not an
// error here: "explanation" says why and "top" is empty.
nlohmann::json run_search_request(const SearchRequest& request);

}  // namespace calisim::python
