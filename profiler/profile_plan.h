// A profile plan: the kernel keys one `calisim profile run` measures, and its file format.
//
// Plans come from `calisim profile plan` (the keys a simulation needs) or from a built-in sweep
// (profiler/sweep.h). The file is JSON:
//   {"calisim_profile_plan": 1, "description": "...",
//    "gemm": ["gemm m=... acc=0", ...], "attention": [...], "collective": [...], "memory": [...]}
// Keys are canonical strings (core/kernel_keys.h). read_plan() canonicalises every key, drops
// repeats, and throws InputError naming the file and the offending entry for malformed input.
#pragma once

#include <string>
#include <vector>

#include "core/kernel_keys.h"
#include "db/key_text.h"

namespace calisim::profiler {

struct PlannedKernel {
  db::KeyKind kind = db::KeyKind::gemm;
  std::string key;  // canonical
  bool operator==(const PlannedKernel&) const = default;
};

struct ProfilePlan {
  std::string description;
  std::vector<PlannedKernel> kernels;  // in measuring order, no key twice

  // Appends the key unless the plan already holds it.
  void add(const GemmKey& k);
  void add(const AttentionKey& k);
  void add(const CollectiveKey& k);
  void add(const MemoryOpKey& k);
  std::size_t count(db::KeyKind kind) const;
};

// JSON text of a plan (keys grouped by kind, each group in plan order).
std::string plan_to_json(const ProfilePlan& plan);
// Parses plan JSON; `file` names the source in errors. Order: gemm, attention, memory, collective
// (collectives last: they need every GPU of the node, the others one).
ProfilePlan plan_from_json(const std::string& text, const std::string& file);
ProfilePlan read_plan_file(const std::string& path);
void write_plan_file(const ProfilePlan& plan, const std::string& path);

}  // namespace calisim::profiler
