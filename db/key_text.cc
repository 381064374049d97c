#include "db/key_text.h"

#include <fmt/format.h>

#include <charconv>
#include <map>
#include <stdexcept>
#include <string>

namespace calisim::db {
namespace {

// name=value fields of one key, checked against the fields the key kind expects.
class Fields {
 public:
  Fields(std::string_view key, std::string_view prefix, std::initializer_list<std::string_view> expected) {
    std::size_t pos = 0;
    bool first = true;
    while (pos < key.size()) {
      while (pos < key.size() && key[pos] == ' ') ++pos;
      if (pos >= key.size()) break;
      std::size_t end = key.find(' ', pos);
      if (end == std::string_view::npos) end = key.size();
      const std::string_view tok = key.substr(pos, end - pos);
      pos = end;
      if (first) {
        if (tok != prefix) fail(key, fmt::format("expected it to start with '{}'", prefix));
        first = false;
        continue;
      }
      const std::size_t eq = tok.find('=');
      if (eq == std::string_view::npos || eq == 0) fail(key, fmt::format("'{}' is not name=value", tok));
      const std::string name(tok.substr(0, eq));
      bool known = false;
      for (auto e : expected) known = known || e == name;
      if (!known) fail(key, fmt::format("unknown field '{}'", name));
      if (!values_.emplace(name, std::string(tok.substr(eq + 1))).second) {
        fail(key, fmt::format("field '{}' appears twice", name));
      }
    }
    if (first) fail(key, "the key is empty");
    for (auto e : expected) {
      if (!values_.count(std::string(e))) fail(key, fmt::format("field '{}' is missing", e));
    }
    key_ = key;
  }

  const std::string& str(const char* name) const { return values_.at(name); }

  std::int64_t integer(const char* name) const {
    const std::string& s = str(name);
    std::int64_t v = 0;
    const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || p != s.data() + s.size() || v < 0) {
      fail(key_, fmt::format("field '{}' = '{}' is not a non-negative integer", name, s));
    }
    return v;
  }

  bool flag(const char* name) const {
    const std::string& s = str(name);
    if (s == "0") return false;
    if (s == "1") return true;
    fail(key_, fmt::format("field '{}' = '{}' must be 0 or 1", name, s));
  }

  // Wraps a parser from core (which throws std::invalid_argument) with the key's context.
  template <class F>
  auto parsed(const char* name, F parse) const {
    try {
      return parse(str(name));
    } catch (const std::invalid_argument& e) {
      fail(key_, fmt::format("field '{}': {}", name, e.what()));
    }
  }

  [[noreturn]] static void fail(std::string_view key, const std::string& why) {
    throw std::invalid_argument(fmt::format("bad key '{}': {}", key, why));
  }

 private:
  std::map<std::string, std::string> values_;
  std::string_view key_;
};

DType dtype_field(const Fields& f) {
  return f.parsed("dtype", [](const std::string& s) { return parse_dtype(s); });
}

}  // namespace

std::string_view to_string(KeyKind k) {
  switch (k) {
    case KeyKind::gemm: return "gemm";
    case KeyKind::attention: return "attn";
    case KeyKind::collective: return "coll";
    case KeyKind::memory: return "mem";
    case KeyKind::memory_fit: return "memfit";
    case KeyKind::collective_fit: return "collfit";
  }
  return "gemm";
}

KeyKind key_kind(std::string_view key) {
  const std::string_view word = key.substr(0, key.find(' '));
  for (int i = 0; i <= static_cast<int>(KeyKind::collective_fit); ++i) {
    if (to_string(static_cast<KeyKind>(i)) == word) return static_cast<KeyKind>(i);
  }
  throw std::invalid_argument(
      fmt::format("bad key '{}': expected it to start with gemm, attn, coll, mem, memfit or collfit", key));
}

std::string canonical_key(std::string_view key) {
  switch (key_kind(key)) {
    case KeyKind::gemm: return to_string(parse_gemm_key(key));
    case KeyKind::attention: return to_string(parse_attention_key(key));
    case KeyKind::collective: return to_string(parse_collective_key(key));
    case KeyKind::memory: return to_string(parse_memory_key(key));
    case KeyKind::memory_fit: return fit_key(parse_memory_fit_key(key));
    case KeyKind::collective_fit: return fit_key(parse_collective_fit_key(key));
  }
  return std::string(key);
}

GemmKey parse_gemm_key(std::string_view key) {
  const Fields f(key, "gemm", {"m", "n", "k", "batch", "dtype", "layout", "acc"});
  GemmKey g;
  g.m = f.integer("m");
  g.n = f.integer("n");
  g.k = f.integer("k");
  g.batch = f.integer("batch");
  g.dtype = dtype_field(f);
  g.layout = f.parsed("layout", [](const std::string& s) { return parse_gemm_layout(s); });
  g.accumulate = f.flag("acc");
  return g;
}

AttentionKey parse_attention_key(std::string_view key) {
  const Fields f(key, "attn", {"b", "hq", "hkv", "sq", "skv", "dqk", "dv", "causal", "dtype", "dir"});
  AttentionKey a;
  a.batch = f.integer("b");
  a.heads_q = f.integer("hq");
  a.heads_kv = f.integer("hkv");
  a.seq_q = f.integer("sq");
  a.seq_kv = f.integer("skv");
  a.head_dim_qk = f.integer("dqk");
  a.head_dim_v = f.integer("dv");
  a.causal = f.flag("causal");
  a.dtype = dtype_field(f);
  a.direction = f.parsed("dir", [](const std::string& s) {
    if (s == "fwd") return AttentionDirection::forward;
    if (s == "bwd") return AttentionDirection::backward;
    throw std::invalid_argument("expected fwd or bwd, got '" + s + "'");
  });
  return a;
}

CollectiveKey parse_collective_key(std::string_view key) {
  const Fields f(key, "coll", {"op", "bytes", "ranks", "per_node", "dtype"});
  CollectiveKey c;
  c.op = f.parsed("op", [](const std::string& s) { return parse_collective_op(s); });
  c.bytes = f.integer("bytes");
  c.ranks = static_cast<int>(f.integer("ranks"));
  c.ranks_per_node = static_cast<int>(f.integer("per_node"));
  c.dtype = dtype_field(f);
  return c;
}

MemoryOpKey parse_memory_key(std::string_view key) {
  const Fields f(key, "mem", {"kind", "bytes"});
  return MemoryOpKey{f.str("kind"), f.integer("bytes")};
}

std::string fit_key(const MemoryFit& fit) { return fmt::format("memfit kind={}", fit.kind); }

std::string fit_key(const CollectiveFit& fit) {
  return fmt::format("collfit op={} tier={} ranks={}", to_string(fit.op), to_string(fit.tier), fit.ranks);
}

MemoryFit parse_memory_fit_key(std::string_view key) {
  const Fields f(key, "memfit", {"kind"});
  MemoryFit fit;
  fit.kind = f.str("kind");
  return fit;
}

CollectiveFit parse_collective_fit_key(std::string_view key) {
  const Fields f(key, "collfit", {"op", "tier", "ranks"});
  CollectiveFit fit;
  fit.op = f.parsed("op", [](const std::string& s) { return parse_collective_op(s); });
  fit.tier = f.parsed("tier", [](const std::string& s) { return parse_link_tier(s); });
  fit.ranks = static_cast<int>(f.integer("ranks"));
  return fit;
}

}  // namespace calisim::db
