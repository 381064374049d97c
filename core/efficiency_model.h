// EfficiencyModel: the one door through which the simulator learns how fast a kernel runs.
//
// Every answer is a fraction of a device ceiling plus where the number came from, so results
// can report how many kernels were measured, interpolated, scaled from another GPU, or fell
// back to roofline (ARCHITECTURE.md, "Efficiency resolution order"):
//   gemm, attention  -> fraction of the device's dense peak for the key's dtype (0 < v <= 1);
//   memory_op        -> fraction of HBM bandwidth;
//   collective       -> fraction of the per-GPU link bandwidth of the slowest tier the group
//                       spans that the collective's bus bandwidth reaches (nccl-tests busbw).
// A source other than `roofline` means the value already includes every real-world loss, so the
// caller uses it alone; `roofline` values are datasheet derates and the caller takes
// max(compute time, memory time).
//
// Implementations must be safe to call concurrently from many threads after construction
// (strategy search shares one instance) and must not do I/O on these calls.
#pragma once

#include <cstdint>
#include <string_view>

#include "core/kernel_keys.h"

namespace calisim {

enum class EfficiencySource : std::uint8_t { measured, interpolated, scaled, roofline };
inline constexpr int kEfficiencySourceCount = 4;
std::string_view to_string(EfficiencySource s);

struct Efficiency {
  double value = 1.0;
  EfficiencySource source = EfficiencySource::roofline;
};

class EfficiencyModel {
 public:
  virtual ~EfficiencyModel() = default;
  virtual Efficiency gemm(const GemmKey& key) const = 0;
  virtual Efficiency attention(const AttentionKey& key) const = 0;
  virtual Efficiency memory_op(const MemoryOpKey& key) const = 0;
  virtual Efficiency collective(const CollectiveKey& key) const = 0;
};

}  // namespace calisim
