// Numeric formats used by training kernels, with their storage size.
//
// Contract: parse_dtype() accepts the lower-case names used in configs and the database
// ("fp32", "tf32", "bf16", "fp16", "fp8", "fp8_e4m3", "fp8_e5m2") and throws std::invalid_argument
// for anything else; to_string() returns the canonical name, so parse(to_string(x)) == x.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace calisim {

enum class DType : std::uint8_t { fp32, tf32, bf16, fp16, fp8_e4m3, fp8_e5m2 };

inline constexpr int kDTypeCount = 6;

// Bytes per element in memory. tf32 is stored as fp32; both fp8 variants take one byte.
constexpr double bytes_per_element(DType t) {
  switch (t) {
    case DType::fp32:
    case DType::tf32: return 4.0;
    case DType::bf16:
    case DType::fp16: return 2.0;
    case DType::fp8_e4m3:
    case DType::fp8_e5m2: return 1.0;
  }
  return 0.0;
}

std::string_view to_string(DType t);
DType parse_dtype(std::string_view name);

}  // namespace calisim
