// A system file seen by the predictor: the device spec, default efficiencies and both network
// tiers of a SystemConfig as a predictor::DeviceProfile. Used by `calisim predict` (source and
// target devices) and `calisim calibrate` (to complete a device record from its system), so both
// see the same SM count, L2 and links.
#pragma once

#include "predictor/device_profile.h"
#include "simulator/system_config.h"

namespace calisim::calibration {

predictor::LinkSpec link_of(const NetworkTier& tier);
predictor::DeviceProfile profile_of_system(const SystemConfig& system);

}  // namespace calisim::calibration
