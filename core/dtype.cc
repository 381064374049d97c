#include "core/dtype.h"

#include <stdexcept>
#include <string>

namespace calisim {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp8_e4m3: return "fp8_e4m3";
    case DType::fp8_e5m2: return "fp8_e5m2";
  }
  return "unknown";
}

DType parse_dtype(std::string_view name) {
  if (name == "fp32" || name == "float32") return DType::fp32;
  if (name == "tf32") return DType::tf32;
  if (name == "bf16" || name == "bfloat16") return DType::bf16;
  if (name == "fp16" || name == "float16") return DType::fp16;
  // "fp8" alone means the forward-pass format of mixed FP8 training (E4M3).
  if (name == "fp8" || name == "fp8_e4m3" || name == "e4m3") return DType::fp8_e4m3;
  if (name == "fp8_e5m2" || name == "e5m2") return DType::fp8_e5m2;
  throw std::invalid_argument("unknown dtype '" + std::string(name) +
                              "' (expected one of fp32, tf32, bf16, fp16, fp8, fp8_e4m3, fp8_e5m2)");
}

}  // namespace calisim
