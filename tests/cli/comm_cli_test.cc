// `calisim comm` end to end: the nccl-tests busbw/algbw relation, monotone and continuous time in
// message size, placement across the scale-up domain, the --compare parser on
// tests/data/nccl/h100_8gpu_all_reduce.txt (a hand-written fixture: it tests parsing, not accuracy),
// and exit 2 on bad input.
#include <gtest/gtest.h>

#include "tests/support/command_output.h"
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

namespace {

struct Out {
  int code;
  std::string text;
};

Out calisim(const std::string& args, bool with_stderr = true) {
  const auto r = calisim::testing_support::run_shell(std::string(CALISIM_EXE) + " " + args +
                                                     (with_stderr ? " 2>&1" : " 2>/dev/null"));
  return {r.code, r.out};
}

nlohmann::json comm_json(const std::string& args) {
  const Out r = calisim("comm " + args + " --json", false);
  EXPECT_EQ(r.code, 0) << r.text;
  return nlohmann::json::parse(r.text);
}

const std::string kFixture = std::string(CALISIM_TEST_DATA_DIR) + "/nccl/h100_8gpu_all_reduce.txt";

double factor(const std::string& op, int n) {
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  if (op == "send_recv") return 1.0;
  return static_cast<double>(n - 1) / n;
}

TEST(CommCli, BusbwAlgbwRelationMonotoneAndContinuous) {
  for (const std::string op : {"all_reduce", "all_gather", "reduce_scatter", "all_to_all", "send_recv"}) {
    const auto j = comm_json("--system h100-sxm --op " + op + " --ranks 8,64,1024 --sizes 1K..4G");
    ASSERT_EQ(j["tables"].size(), 3u) << op;
    for (const auto& t : j["tables"]) {
      const int n = t["ranks"];
      const auto& rows = t["rows"];
      ASSERT_EQ(rows.size(), 23u) << op;  // 1K, 2K, ..., 4G
      EXPECT_EQ(rows.front()["bytes"], 1024);
      EXPECT_EQ(rows.back()["bytes"], 4LL << 30);
      for (std::size_t i = 0; i < rows.size(); ++i) {
        const double bytes = rows[i]["bytes"], t_us = rows[i]["time_us"];
        const double algbw = rows[i]["algbw_gb_s"], busbw = rows[i]["busbw_gb_s"];
        ASSERT_GT(t_us, 0) << op << " n=" << n;
        EXPECT_NEAR(algbw, bytes / (t_us * 1e-6) / 1e9, 1e-9 * algbw) << op;
        EXPECT_NEAR(busbw, algbw * factor(op, n), 1e-9 * busbw) << op;
        if (i == 0) continue;
        // Doubling the size: time grows (monotone) but at most doubles (no jumps; latency only softens it).
        const double prev = rows[i - 1]["time_us"];
        EXPECT_GE(t_us, prev) << op << " n=" << n << " bytes=" << bytes;
        EXPECT_LE(t_us, 2.0 * prev * (1 + 1e-12)) << op << " n=" << n << " bytes=" << bytes;
        EXPECT_GE(busbw, static_cast<double>(rows[i - 1]["busbw_gb_s"]) * (1 - 1e-12)) << op;
      }
      // Large messages are bandwidth-bound: the last doubling nearly doubles the time (checked up to
      // 64 ranks, where 4G is far past every algorithm's latency term).
      if (n > 64) continue;
      const double last = rows[rows.size() - 1]["time_us"], before = rows[rows.size() - 2]["time_us"];
      EXPECT_GT(last / before, 1.9) << op << " n=" << n;
    }
  }
}

TEST(CommCli, PlacementAndTable) {
  const auto j = comm_json("--system h100-sxm --ranks 8,64 --sizes 1G");
  EXPECT_EQ(j["tables"][0]["ranks_per_node"], 8);
  EXPECT_EQ(j["tables"][1]["ranks_per_node"], 8);
  EXPECT_NE(j["tables"][0]["tier"].get<std::string>().find("scale-up"), std::string::npos);
  EXPECT_NE(j["tables"][1]["tier"].get<std::string>().find("scale-out"), std::string::npos);
  // Spreading 64 ranks one per node leaves each ring with one GPU's NIC share: slower than 8 per node.
  const auto spread = comm_json("--system h100-sxm --ranks 64 --ranks-per-node 1 --sizes 1G");
  EXPECT_GT(spread["tables"][0]["rows"][0]["time_us"].get<double>(),
            j["tables"][1]["rows"][0]["time_us"].get<double>());
  const Out t = calisim("comm --system h100-sxm --op all_gather --ranks 8 --sizes 1K,64M");
  ASSERT_EQ(t.code, 0) << t.text;
  EXPECT_NE(t.text.find("busbw GB/s"), std::string::npos);
  EXPECT_NE(t.text.find("64M"), std::string::npos);
}

TEST(CommCli, AlgorithmProtocolColumnsAndOverrides) {
  const auto j = comm_json("--system h100-sxm --ranks 8 --sizes 1K,4G");
  const auto& rows = j["tables"][0]["rows"];
  EXPECT_EQ(rows[0]["algorithm"], "ring");
  EXPECT_EQ(rows[0]["protocol"], "LL");
  EXPECT_EQ(rows[1]["algorithm"], "nvls");
  EXPECT_EQ(rows[1]["protocol"], "Simple");
  const auto ring = comm_json("--system h100-sxm --ranks 8 --sizes 4G --algo ring --proto Simple");
  EXPECT_EQ(ring["tables"][0]["rows"][0]["algorithm"], "ring");
  EXPECT_GT(ring["tables"][0]["rows"][0]["time_us"].get<double>(), rows[1]["time_us"].get<double>());
  const auto t = calisim("comm --system h100-sxm --ranks 8 --sizes 1K");
  ASSERT_EQ(t.code, 0) << t.text;
  EXPECT_NE(t.text.find("proto"), std::string::npos);
  EXPECT_EQ(calisim("comm --system h100-sxm --algo bogus").code, 2);
  EXPECT_EQ(calisim("comm --system h100-sxm --proto ^LL,LL128,Simple").code, 2);
}

TEST(CommCli, CompareReadsNcclTestsOutput) {
  const auto j = comm_json("--system h100-sxm --ranks 8 --compare " + kFixture);
  ASSERT_EQ(j["rows"].size(), 8u);
  EXPECT_EQ(j["rows"][0]["bytes"], 1024);
  EXPECT_NEAR(j["rows"][0]["measured_time_us"].get<double>(), 13.8, 1e-9);
  EXPECT_EQ(j["rows"][7]["bytes"], 1073741824);
  EXPECT_NEAR(j["rows"][7]["measured_time_us"].get<double>(), 3862.5, 1e-9);  // out-of-place, not in-place
  EXPECT_NEAR(j["rows"][7]["measured_busbw_gb_s"].get<double>(), 486.48, 1e-9);
  double sum = 0;
  for (const auto& r : j["rows"]) {
    const double m = r["measured_time_us"], p = r["predicted_time_us"];
    EXPECT_NEAR(r["error"].get<double>(), (p - m) / m, 1e-12);
    sum += std::fabs((p - m) / m);
  }
  EXPECT_NEAR(j["mape"].get<double>(), sum / 8, 1e-12);
  const Out t = calisim("comm --system h100-sxm --ranks 8 --compare " + kFixture);
  ASSERT_EQ(t.code, 0) << t.text;
  EXPECT_NE(t.text.find("MAPE"), std::string::npos);
}

TEST(CommCli, BadInputExitsTwo) {
  EXPECT_EQ(calisim("comm --system h100-sxm --op broadcast").code, 2);
  EXPECT_EQ(calisim("comm --system h100-sxm --ranks 1").code, 2);
  EXPECT_EQ(calisim("comm --system h100-sxm --ranks 8,x").code, 2);
  EXPECT_EQ(calisim("comm --system h100-sxm --sizes 4G..1K").code, 2);
  EXPECT_EQ(calisim("comm --system h100-sxm --sizes 1Q").code, 2);
  EXPECT_EQ(calisim("comm --system h100-sxm --ranks 8 --ranks-per-node 16").code, 2);
  EXPECT_EQ(calisim("comm --system no-such-system").code, 2);
  EXPECT_EQ(calisim("comm --system h100-sxm --ranks 8,64 --compare " + kFixture).code, 2);
  EXPECT_EQ(calisim("comm --system h100-sxm --ranks 8 --compare /no/such/file.txt").code, 2);

  // A truncated row names its line.
  const std::string bad = ::testing::TempDir() + "comm_bad_nccl.txt";
  {
    std::ofstream out(bad);
    out << "#       size         count      type   redop    root     time   algbw   busbw #wrong\n"
        << "        1024           256     float     sum      -1    13.8    0.07    0.13      0    13.6    0.08    0.13      0\n"
        << "        2048           512     float     sum      -1    oops\n";
  }
  const Out r = calisim("comm --system h100-sxm --ranks 8 --compare " + bad);
  EXPECT_EQ(r.code, 2) << r.text;
  EXPECT_NE(r.text.find("line 3"), std::string::npos) << r.text;
  {
    std::ofstream out(bad);
    out << "# only comments\n#\n";
  }
  EXPECT_EQ(calisim("comm --system h100-sxm --ranks 8 --compare " + bad).code, 2);
  {
    std::ofstream out(bad);
    out << "        1024           256     float     sum      -1    -3.0    0.07    0.13      0    13.6    0.08    0.13      0\n";
  }
  const Out neg = calisim("comm --system h100-sxm --ranks 8 --compare " + bad);
  EXPECT_EQ(neg.code, 2);
  EXPECT_NE(neg.text.find("line 1"), std::string::npos) << neg.text;
}

// A full-width row with a bad size says the size is wrong; it used to say "expected 13 columns
// ... got 13 fields".
TEST(CommCli, CompareNamesABadSizeNotTheColumnCount) {
  const std::string bad = ::testing::TempDir() + "comm_bad_size.txt";
  for (const char* size : {"-8192", "x1024", "1.5"}) {
    {
      std::ofstream out(bad);
      out << "        1024           256     float     sum      -1    13.8    0.07    0.13      0    13.6    0.08    0.13      0\n"
          << "        " << size << "           512     float     sum      -1    13.8    0.07    0.13      0    13.6    0.08    0.13      0\n";
    }
    const Out r = calisim("comm --system h100-sxm --ranks 8 --compare " + bad);
    EXPECT_EQ(r.code, 2) << r.text;
    EXPECT_NE(r.text.find(std::string("line 2: size '") + size + "' is not a positive byte count"), std::string::npos)
        << r.text;
    EXPECT_EQ(r.text.find("columns"), std::string::npos) << r.text;
  }
  // A row of the wrong width still says so.
  {
    std::ofstream out(bad);
    out << "        1024           256     float     sum      -1    13.8    0.07    0.13      0\n";
  }
  const Out narrow = calisim("comm --system h100-sxm --ranks 8 --compare " + bad);
  EXPECT_EQ(narrow.code, 2);
  EXPECT_NE(narrow.text.find("expected 13 columns"), std::string::npos) << narrow.text;
  EXPECT_NE(narrow.text.find("got 9 fields"), std::string::npos) << narrow.text;
}

}  // namespace
