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
// Values scaled from another GPU (rows of source `predicted` in the database) also say which
// device(s) they came from: a small integer `origin` the model resolves with origin(id). An id
// rather than a string keeps Efficiency a 16-byte value on the simulator's hot path.
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

// Origin ids are 0 (no other device: this device's own data, or the roofline) or
// 1 .. kOriginIdCount - 1; models with more distinct origins share the last id among them.
inline constexpr int kOriginIdCount = 8;

struct Efficiency {
  double value = 1.0;
  EfficiencySource source = EfficiencySource::roofline;
  std::uint16_t origin = 0;  // 0, or an id for EfficiencyModel::origin()
};

class EfficiencyModel {
 public:
  virtual ~EfficiencyModel() = default;
  virtual Efficiency gemm(const GemmKey& key) const = 0;
  virtual Efficiency attention(const AttentionKey& key) const = 0;
  virtual Efficiency memory_op(const MemoryOpKey& key) const = 0;
  virtual Efficiency collective(const CollectiveKey& key) const = 0;
  // The device(s) behind an origin id of this model's answers, e.g. "NVIDIA A100 PCIe 80GB";
  // empty for 0 and for ids the model never gives. Not on the hot path (reports call it).
  virtual std::string_view origin(std::uint32_t id) const {
    (void)id;
    return {};
  }
};

}  // namespace calisim
