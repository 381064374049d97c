// How the memory benchmark reproduces a bandwidth-bound op: the read and write streams of each
// MemoryOpKey kind the simulator asks about (simulator/layer_ops.cc, simulate.cc).
//
// A kind is measured as a streaming kernel that reads `reads` arrays and writes `writes` arrays
// of equal length, together moving the key's bytes; the bandwidth an op reaches depends mostly
// on its read:write mix and not on the arithmetic it does on each element (norms, activations and
// optimizer updates are all far below the ridge point). "copy" is one read and one write stream
// (a copy kernel, so CUPTI sees it as a kernel like every other op). Unknown kinds use one read
// and one write and say so in `approximated`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/kernel_keys.h"

namespace calisim::profiler {

struct MemoryPattern {
  int reads = 1, writes = 1;
  int element_bytes = 2;        // bf16 activations; fp32 for optimizer state
  bool approximated = false;    // kind not in the table
};

MemoryPattern memory_pattern(std::string_view kind);

// Elements per array so that (reads + writes) arrays move at most key.bytes (at least one element).
std::int64_t elements_per_array(const MemoryOpKey& key, const MemoryPattern& p);

// The kinds the default memory sweep measures.
std::vector<std::string> default_memory_kinds();

}  // namespace calisim::profiler
