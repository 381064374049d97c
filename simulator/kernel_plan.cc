#include "simulator/kernel_plan.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_set>

#include "simulator/default_efficiency.h"
#include "simulator/simulate.h"

namespace calisim {
namespace {

// Answers like the roofline model and remembers every key it was asked about. The simulator may
// call from several threads, so the sets are guarded.
class RecordingEfficiencyModel final : public EfficiencyModel {
 public:
  explicit RecordingEfficiencyModel(const SystemConfig& system) : roofline_(system) {}

  Efficiency gemm(const GemmKey& key) const override {
    std::lock_guard lock(mu_);
    gemm_.insert(key);
    return roofline_.gemm(key);
  }
  Efficiency attention(const AttentionKey& key) const override {
    std::lock_guard lock(mu_);
    attention_.insert(key);
    return roofline_.attention(key);
  }
  Efficiency memory_op(const MemoryOpKey& key) const override {
    std::lock_guard lock(mu_);
    memory_.insert(key);
    return roofline_.memory_op(key);
  }
  Efficiency collective(const CollectiveKey& key) const override {
    std::lock_guard lock(mu_);
    if (key.ranks > 1) collective_.insert(key);
    return roofline_.collective(key);
  }

  KernelPlan plan() const {
    std::lock_guard lock(mu_);
    KernelPlan p;
    p.gemm = sorted(gemm_);
    p.attention = sorted(attention_);
    p.collective = sorted(collective_);
    p.memory = sorted(memory_);
    return p;
  }

 private:
  template <class Key>
  static std::vector<Key> sorted(const std::unordered_set<Key>& set) {
    std::vector<Key> v(set.begin(), set.end());
    std::sort(v.begin(), v.end(), [](const Key& a, const Key& b) { return to_string(a) < to_string(b); });
    return v;
  }

  DefaultEfficiencyModel roofline_;
  mutable std::mutex mu_;
  mutable std::unordered_set<GemmKey> gemm_;
  mutable std::unordered_set<AttentionKey> attention_;
  mutable std::unordered_set<MemoryOpKey> memory_;
  mutable std::unordered_set<CollectiveKey> collective_;
};

}  // namespace

KernelPlan plan_kernels(const ModelConfig& model, const StrategyConfig& strategy, const SystemConfig& system) {
  RecordingEfficiencyModel recorder(system);
  SimulateOptions options;
  options.details = false;
  simulate(model, strategy, system, recorder, options);
  return recorder.plan();
}

}  // namespace calisim
