// End-to-end: rank-order placement in `calisim search`, `calisim sweep` and `calisim simulate`.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

#include "tests/support/command_output.h"

namespace {

using CmdResult = calisim::testing_support::CommandResult;
using calisim::testing_support::run_calisim;

const std::string kPlacementSearch =
    "search --model llama3-8b --system h100-sxm --world-size 16 --global-batch-size 32 --seq-len 8192 "
    "--tp 2,4 --pp 1,2 --cp 1,2 --vpp 1 --mbs 1 --recompute full "
    "--set system.network.scale_up.domain_size=4 system.network.scale_out.gpus_per_node=4";

TEST(CliPlacement, SearchReportsOrdersAndSkipsEquivalentOnes) {
  const CmdResult all = run_calisim(kPlacementSearch + " --orders all --json");
  ASSERT_EQ(all.code, 0) << all.out;
  const auto j = nlohmann::json::parse(all.out);
  EXPECT_GT(j["counts"]["equivalent_placement"].get<int>(), 0);
  const auto& best = j["top"][0];
  EXPECT_EQ(best["order"].get<std::string>().size(), std::string("tp-cp-ep-dp-pp").size());
  EXPECT_TRUE(best["ranks_per_domain"].contains("tp"));
  EXPECT_FALSE(best["in_domain"].get<std::string>().empty());
  // Megatron's order alone can only be as good as the best over all orders.
  const CmdResult one = run_calisim(kPlacementSearch + " --orders megatron --json");
  ASSERT_EQ(one.code, 0) << one.out;
  const auto m = nlohmann::json::parse(one.out);
  EXPECT_EQ(m["counts"]["equivalent_placement"].get<int>(), 0);
  EXPECT_LE(best["step_time_s"].get<double>(), m["top"][0]["step_time_s"].get<double>());
  EXPECT_EQ(run_calisim(kPlacementSearch + " --orders tp-cp-dp").code, 2);
}

TEST(CliPlacement, SweepOverDomainSizeNamesWhatSitsInTheDomain) {
  const std::string csv = ::testing::TempDir() + "calisim_domain_sweep.csv";
  const CmdResult r = run_calisim("sweep hardware --model llama3-8b --system h100-sxm --world-size 16 "
                                  "--global-batch-size 32 --seq-len 4096 --tp 2,4 --mbs 1 --recompute none,full "
                                  "--vary scaleup_domain=4,8 --csv " + csv);
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("| domain tp"), std::string::npos) << r.out;
  std::ifstream in(csv);
  std::string header;
  std::getline(in, header);
  EXPECT_NE(header.find(",order,in_domain"), std::string::npos) << header;
}

TEST(CliPlacement, StrategyOrderFieldIsCheckedAndUsed) {
  // TP 2 × DP 4 on domains of 4 GPUs: Megatron's order keeps TP pairs inside a domain; putting
  // DP fastest fills each domain with DP replicas and sends TP over the NICs.
  const std::string base = "simulate --model llama3-8b --system h100-sxm --strategy llama3-8b-8gpu --json --set "
                           "strategy.tp_size=2 system.network.scale_up.domain_size=4 "
                           "system.network.scale_out.gpus_per_node=4";
  const CmdResult megatron = run_calisim(base);
  const CmdResult dp_first = run_calisim(base + " strategy.order=dp-tp-cp-ep-pp");
  ASSERT_EQ(megatron.code, 0) << megatron.out;
  ASSERT_EQ(dp_first.code, 0) << dp_first.out;
  const double t_megatron = nlohmann::json::parse(megatron.out)["cost"]["duration_time_per_iter_s"].get<double>();
  const double t_dp_first = nlohmann::json::parse(dp_first.out)["cost"]["duration_time_per_iter_s"].get<double>();
  EXPECT_GT(t_dp_first, t_megatron * 1.05);
  const CmdResult bad = run_calisim(base + " strategy.order=tp-cp-ep-dp");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.out.find("lacks pp"), std::string::npos) << bad.out;
}

}  // namespace
