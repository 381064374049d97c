// Parsing of the canonical key strings of core/kernel_keys.h, and the string forms of the
// bandwidth fits, so that text exports (CSV, JSON) can name every row by one string.
//
// Contract: parse_*(to_string(x)) == x for every key. Fields may come in any order but each must
// appear exactly once; a missing, repeated, unknown or malformed field throws
// std::invalid_argument naming it. Fit keys:
//   "memfit kind=default"
//   "collfit op=all_reduce tier=intra_node ranks=8"    (ranks=0: any group size)
#pragma once

#include <string>
#include <string_view>

#include "core/kernel_keys.h"
#include "db/records.h"

namespace calisim::db {

enum class KeyKind : std::uint8_t { gemm, attention, collective, memory, memory_fit, collective_fit };
std::string_view to_string(KeyKind k);

// The kind named by the key's first word ("gemm", "attn", "coll", "mem", "memfit", "collfit").
KeyKind key_kind(std::string_view key);

// Parses any key and writes it back in canonical form (fields in canonical order); throws
// std::invalid_argument like the parsers below.
std::string canonical_key(std::string_view key);

GemmKey parse_gemm_key(std::string_view key);
AttentionKey parse_attention_key(std::string_view key);
CollectiveKey parse_collective_key(std::string_view key);
MemoryOpKey parse_memory_key(std::string_view key);

std::string fit_key(const MemoryFit& f);
std::string fit_key(const CollectiveFit& f);
// Fill only the identifying fields (kind; op, tier, ranks); the numbers come from elsewhere.
MemoryFit parse_memory_fit_key(std::string_view key);
CollectiveFit parse_collective_fit_key(std::string_view key);

}  // namespace calisim::db
