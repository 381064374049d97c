// profiler/sequence_stats: what a sustained sequence run reports, from its raw samples.
#include "profiler/sequence_stats.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

namespace calisim::profiler {
namespace {

TEST(SequenceStats, PassTimesGiveMedianPercentilesAndTheDriftOfTheRun) {
  // 20 groups: the first half at 10 ms, the second at 11 ms (a GPU settling at its power cap).
  std::vector<double> pass;
  for (int i = 0; i < 20; ++i) pass.push_back(i < 10 ? 0.010 : 0.011);
  const PassStats s = summarize_passes(pass);
  EXPECT_EQ(s.n, 20);
  EXPECT_DOUBLE_EQ(s.median_s, 0.0105);
  EXPECT_DOUBLE_EQ(s.p10_s, 0.010);
  EXPECT_DOUBLE_EQ(s.p90_s, 0.011);
  EXPECT_DOUBLE_EQ(s.first_tenth_s, 0.010);  // groups 0-1
  EXPECT_DOUBLE_EQ(s.last_tenth_s, 0.011);   // groups 18-19
  EXPECT_NEAR(s.drift(), 1.1, 1e-12);
  // Fewer than ten groups: a tenth is one group.
  const PassStats few = summarize_passes({0.004, 0.002, 0.003});
  EXPECT_DOUBLE_EQ(few.first_tenth_s, 0.004);
  EXPECT_DOUBLE_EQ(few.last_tenth_s, 0.003);
  EXPECT_DOUBLE_EQ(few.median_s, 0.003);
  EXPECT_THROW(summarize_passes({}), std::invalid_argument);
  EXPECT_THROW(summarize_passes({0.001, 0.0}), std::invalid_argument);
}

TEST(SequenceStats, NvmlStatesSkipInvalidReadsAndKeepOnlySlowdownReasons) {
  auto state = [](double clock, double power, double temp, std::uint64_t reasons) {
    GpuState g;
    g.valid = true;
    g.sm_clock_mhz = clock;
    g.max_sm_clock_mhz = 1980;
    g.power_w = power;
    g.temperature_c = temp;
    g.event_reasons = reasons;
    return g;
  };
  std::vector<GpuState> states{state(1980, 400, 50, 0), state(1600, 690, 61, kNvmlReasonSwPowerCap),
                               state(1500, 700, 63, kNvmlReasonSwPowerCap | 0x1), GpuState{}};
  const ClockStats c = summarize_states(states);
  EXPECT_EQ(c.samples, 3);
  EXPECT_DOUBLE_EQ(c.sm_clock_median_mhz, 1600);
  EXPECT_DOUBLE_EQ(c.sm_clock_min_mhz, 1500);
  EXPECT_DOUBLE_EQ(c.max_sm_clock_mhz, 1980);
  EXPECT_DOUBLE_EQ(c.power_median_w, 690);
  EXPECT_DOUBLE_EQ(c.power_max_w, 700);
  EXPECT_DOUBLE_EQ(c.temperature_max_c, 63);
  EXPECT_EQ(c.slowdown_reasons, kNvmlReasonSwPowerCap);  // 0x1 (GPU idle) is not a slowdown
  const ClockStats none = summarize_states({GpuState{}});
  EXPECT_EQ(none.samples, 0);
  EXPECT_EQ(none.sm_clock_median_mhz, 0);
}

}  // namespace
}  // namespace calisim::profiler
