#include "predictor/interpolating_model.h"

#include <stdexcept>

#include "db/db_efficiency_model.h"
#include "db/efficiency_db.h"

namespace calisim::predictor {
namespace {

class FitModel final : public EfficiencyModel {
 public:
  FitModel(std::shared_ptr<const DeviceFit> fit, std::shared_ptr<const EfficiencyModel> fallback)
      : fit_(std::move(fit)), fallback_(std::move(fallback)) {
    if (!fit_ || !fallback_) throw std::invalid_argument("make_fit_model: fit and fallback must not be null");
  }
  Efficiency gemm(const GemmKey& key) const override { return answer(fit_->gemm(key), &EfficiencyModel::gemm, key); }
  Efficiency attention(const AttentionKey& key) const override {
    return answer(fit_->attention(key), &EfficiencyModel::attention, key);
  }
  Efficiency memory_op(const MemoryOpKey& key) const override {
    return answer(fit_->memory_op(key), &EfficiencyModel::memory_op, key);
  }
  Efficiency collective(const CollectiveKey& key) const override {
    return answer(fit_->collective(key), &EfficiencyModel::collective, key);
  }

 private:
  template <class Key>
  Efficiency answer(std::optional<double> v, Efficiency (EfficiencyModel::*miss)(const Key&) const,
                    const Key& key) const {
    if (v && *v > 0) return {*v, EfficiencySource::interpolated};
    return (fallback_.get()->*miss)(key);
  }

  std::shared_ptr<const DeviceFit> fit_;
  std::shared_ptr<const EfficiencyModel> fallback_;
};

class NoDataModel final : public EfficiencyModel {
 public:
  Efficiency gemm(const GemmKey&) const override { return {}; }
  Efficiency attention(const AttentionKey&) const override { return {}; }
  Efficiency memory_op(const MemoryOpKey&) const override { return {}; }
  Efficiency collective(const CollectiveKey&) const override { return {}; }
};

}  // namespace

std::shared_ptr<const EfficiencyModel> no_data_model() {
  static const auto model = std::make_shared<const NoDataModel>();
  return model;
}

std::unique_ptr<EfficiencyModel> make_fit_model(std::shared_ptr<const DeviceFit> fit,
                                                std::shared_ptr<const EfficiencyModel> fallback) {
  return std::make_unique<FitModel>(std::move(fit), std::move(fallback));
}

std::unique_ptr<EfficiencyModel> make_interpolating_model(const DeviceSpec& device, const db::DeviceRecord& record,
                                                          const std::vector<db::RunBatch>& runs,
                                                          std::shared_ptr<const EfficiencyModel> fallback) {
  return make_interpolating_model(std::make_shared<const DeviceFit>(device, group_rows(runs)), record, runs,
                                  std::move(fallback));
}

std::unique_ptr<EfficiencyModel> make_interpolating_model(std::shared_ptr<const DeviceFit> fit,
                                                          const db::DeviceRecord& record,
                                                          const std::vector<db::RunBatch>& runs,
                                                          std::shared_ptr<const EfficiencyModel> fallback) {
  std::shared_ptr<const EfficiencyModel> fits = make_fit_model(std::move(fit), std::move(fallback));
  return db::make_db_efficiency_model(record, runs, std::move(fits));
}

std::unique_ptr<EfficiencyModel> load_interpolating_model(const std::string& db_path, const std::string& device_name,
                                                          std::shared_ptr<const EfficiencyModel> fallback) {
  auto file = db::EfficiencyDb::open(db_path, db::OpenMode::read_only);
  const db::DeviceRecord record = file.device(device_name);
  return make_interpolating_model(record.to_spec(), record, file.load_runs(record.name), std::move(fallback));
}

}  // namespace calisim::predictor
