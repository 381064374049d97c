// Turning a measurement into database rows: achieved rates and efficiencies.
//
// Conventions (db/records.h): GEMM and attention efficiency = achieved TFLOP/s (key.flops() over
// the median time) / the device's dense peak for the key's dtype; memory efficiency = key.bytes
// over the median / HBM bandwidth; collective efficiency = busbw / link_gb_s of the tier the
// group ran over. Throws InputError when the device has no peak for the dtype (say fp8 on an
// A100), so the caller records the kernel as skipped instead of storing a meaningless row.
#pragma once

#include "core/device_spec.h"
#include "db/records.h"
#include "profiler/measurement.h"
#include "profiler/profile_plan.h"

namespace calisim::profiler {

struct LinkBandwidth {
  double intra_node_gb_s = 0;  // per GPU, scale-up domain (NVLink)
  double inter_node_gb_s = 0;  // per GPU share of the node's NICs
};

// Requires m.status == measured and a positive median.
db::MeasurementSet rows_for(const PlannedKernel& kernel, const Measurement& m, const DeviceSpec& device,
                            const LinkBandwidth& links);

}  // namespace calisim::profiler
