#include "core/efficiency_model.h"

namespace calisim {

std::string_view to_string(EfficiencySource s) {
  switch (s) {
    case EfficiencySource::measured: return "measured";
    case EfficiencySource::interpolated: return "interpolated";
    case EfficiencySource::scaled: return "scaled";
    case EfficiencySource::roofline: return "roofline";
  }
  return "roofline";
}

}  // namespace calisim
