// The join of CUPTI kernel records to timed ops (cupti_attribution.h) on synthetic records, the
// way CuptiTimer::harvest feeds it: records with end <= start are counted, never timed.
#include "profiler/cupti_attribution.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace calisim::profiler {
namespace {

// Correlation ids 1..4 belong to op 10 (1, 2), op 11 (3) and op 12 (4); 9 was launched outside
// any pair.
const std::unordered_map<std::uint32_t, std::uint64_t> kExternalOf{{1, 10}, {2, 10}, {3, 11}, {4, 12}};

TEST(CuptiAttribution, SpansAndSumsCompleteKernelsPerOpInTheOrderAsked) {
  const std::vector<KernelRecordTimes> kernels{
      {1, 1000, 1500, "gemm"}, {2, 1600, 2000, "splitk_reduce"}, {3, 5000, 5300, "copy"}, {9, 0, 99999, "outside"}};
  const KernelAttribution a = attribute_kernels(kernels, kExternalOf, {11, 10});
  ASSERT_EQ(a.ops.size(), 2u);
  EXPECT_TRUE(a.ops[0].seen);
  EXPECT_EQ(a.ops[0].first_ns, 5000u);
  EXPECT_EQ(a.ops[0].last_ns, 5300u);
  EXPECT_EQ(a.ops[0].kernels, 1);
  EXPECT_EQ(a.ops[1].first_ns, 1000u);
  EXPECT_EQ(a.ops[1].last_ns, 2000u);
  EXPECT_EQ(a.ops[1].sum_ns, 900u);  // 500 + 400: the gap between the kernels is not summed
  EXPECT_EQ(a.ops[1].kernels, 2);
  EXPECT_EQ(a.incomplete_records, 0u);
  EXPECT_EQ(a.names, (std::vector<std::string>{"copy", "gemm", "splitk_reduce"}));  // not "outside"
}

// A forced flush can deliver a record whose end is not written yet (end 0) or is otherwise not
// after its start; end - start in unsigned arithmetic would wrap to ~1.8e10 s.
TEST(CuptiAttribution, RecordsWithEndNotAfterStartAreCountedNotTimed) {
  const std::vector<KernelRecordTimes> kernels{
      {1, 1000, 1500, "gemm"},
      {2, 1600, 0, "splitk_reduce"},  // flushed before its end was written
      {3, 7000, 7000, "copy"},        // end == start
      {4, 0, 0, "memset"},            // no timestamps collected
  };
  const KernelAttribution a = attribute_kernels(kernels, kExternalOf, {10, 11, 12});
  EXPECT_EQ(a.incomplete_records, 3u);
  // Op 10 keeps its complete kernel only; the op is marked so the sample can be dropped.
  EXPECT_TRUE(a.ops[0].seen);
  EXPECT_EQ(a.ops[0].kernels, 1);
  EXPECT_EQ(a.ops[0].incomplete, 1);
  EXPECT_EQ(a.ops[0].first_ns, 1000u);
  EXPECT_EQ(a.ops[0].last_ns, 1500u);
  EXPECT_EQ(a.ops[0].sum_ns, 500u);
  // Ops 11 and 12 were seen, but have nothing to time.
  for (int i : {1, 2}) {
    EXPECT_TRUE(a.ops[i].seen);
    EXPECT_EQ(a.ops[i].kernels, 0);
    EXPECT_EQ(a.ops[i].incomplete, 1);
    EXPECT_EQ(a.ops[i].sum_ns, 0u);
    EXPECT_EQ(a.ops[i].last_ns - a.ops[i].first_ns, 0u);
  }
  EXPECT_EQ(a.names, (std::vector<std::string>{"gemm"}));
}

TEST(CuptiAttribution, OpsWithoutRecordsAndOtherOpsKernelsAreLeftApart) {
  // Op 12's kernel belongs to a discarded batch: asked only for 10 and 13, it is ignored, and
  // op 13, whose kernels never arrived, is not seen.
  const std::vector<KernelRecordTimes> kernels{{1, 10, 20, "a"}, {4, 0, 5, "b"}};
  const KernelAttribution a = attribute_kernels(kernels, kExternalOf, {10, 13});
  EXPECT_TRUE(a.ops[0].seen);
  EXPECT_FALSE(a.ops[1].seen);
  EXPECT_EQ(a.incomplete_records, 0u);
  EXPECT_EQ(a.names, (std::vector<std::string>{"a"}));
  EXPECT_TRUE(attribute_kernels({}, kExternalOf, {}).ops.empty());
}

}  // namespace
}  // namespace calisim::profiler
