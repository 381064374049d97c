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
  // Optional {"tp": "tp_search_list", ...}: the caller's names for the space and option keys, used
  // in messages (default: calisim.search's keywords).
  nlohmann::json arg_names;
};

// Returns the document of `calisim search --json` for the same inputs: {"model", "system",
// "world_size", "global_batch_size", "seq_len", "efficiency_db", "counts", "elapsed_s",
// "candidates_per_s", "top": [...], "feasible", "explanation", "smallest", "warnings"} with
// candidates in the CLI's --json form; "feasible" is every feasible candidate with
// options.keep_all, else null; "smallest" the legal layout needing the least memory when nothing
// fits, else null; "accuracy" when asked (and a layout fits).
// Throws InputError naming the argument (space key, or its arg_names entry) for: a size below 1
// (tp, pp, vpp, cp, ep, etp, mbs), a ZeRO stage outside 0..3, an empty list, a fraction or bool
// where a whole number belongs, world_size / global_batch_size / seq_len / top_k below 1, threads
// below 0, a memory_margin_gb that is negative, not finite or not below the device memory, an
// unknown objective, recompute, cp_comm_type or dispatcher name, and bad configs. Lists lose
// repeats. "Nothing fits" is not an error here: "explanation" says why and "top" is empty.
nlohmann::json run_search_request(const SearchRequest& request);

}  // namespace calisim::python
