// The EfficiencyModel of a GPU that was never measured: every answer is a source device's
// answer (measured or interpolated there) scaled to the target by cross_device.h.
//
// With several sources the scaled answers are combined by their geometric mean (the mean of log
// time), so no single source dominates. A source whose own model has no data for the key (its
// answer is `roofline`), or that lacks the key's dtype, is skipped; when every source is skipped
// the fallback answers. Collectives are answered only from sources whose scale-up fabric is the
// target's (cross_device.h, collectives_transfer). Answers carry source `scaled`. Calls do not
// allocate, lock or do I/O.
#pragma once

#include <memory>
#include <vector>

#include "core/efficiency_model.h"
#include "predictor/device_profile.h"

namespace calisim::predictor {

struct SourceDevice {
  DeviceProfile profile;                          // with with_row_links applied
  std::shared_ptr<const EfficiencyModel> model;   // its interpolating (or fit-only) model
};

// Throws std::invalid_argument when a source model or the fallback is null.
std::unique_ptr<EfficiencyModel> make_scaled_model(std::vector<SourceDevice> sources, DeviceProfile target,
                                                   std::shared_ptr<const EfficiencyModel> fallback);

}  // namespace calisim::predictor
