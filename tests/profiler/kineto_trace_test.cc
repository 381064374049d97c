// read_kineto_trace(): PyTorch profiler traces into trace records. The fixture
// tests/data/kineto/two_steps.json has Kineto's layout (deviceProperties, distributedInfo,
// CPU ProfilerStep ranges, GPU-side gpu_user_annotation ranges, cudaLaunchKernel events with
// correlation ids, flow events, kernels with grid / block, a memcpy and a memset per step): one
// warm-up kernel before two steps of eight GPU records each.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include <zlib.h>

#include "core/error.h"
#include "profiler/kineto_trace.h"

namespace {

using calisim::profiler::KinetoTrace;
using calisim::profiler::read_kineto_trace;
using nlohmann::json;

const std::string kFixture = std::string(CALISIM_TEST_DATA_DIR) + "/kineto/two_steps.json";

json fixture() {
  std::ifstream in(kFixture);
  return json::parse(in);
}

// The fixture with events removed (or a field changed) by `edit`, written to a temporary file.
std::string edited(const std::string& name, const std::function<void(json&)>& edit) {
  json doc = fixture();
  edit(doc);
  const std::string path = ::testing::TempDir() + name;
  std::ofstream(path) << doc.dump();
  return path;
}

void drop_events(json& doc, const std::function<bool(const json&)>& drop) {
  json& ev = doc["traceEvents"];
  ev.erase(std::remove_if(ev.begin(), ev.end(), drop), ev.end());
}

// `text` gzip-compressed into `path`; `two_members` splits it into two concatenated gzip members
// (what `cat a.gz b.gz` gives, and what gzip -d reads as one file).
void write_gzip(const std::string& path, const std::string& text, bool two_members) {
  const std::size_t half = two_members ? text.size() / 2 : text.size();
  const std::string parts[2] = {text.substr(0, half), text.substr(half)};
  for (int i = 0; i < (two_members ? 2 : 1); ++i) {
    gzFile f = gzopen(path.c_str(), i == 0 ? "wb" : "ab");
    ASSERT_NE(f, nullptr) << path;
    ASSERT_EQ(gzwrite(f, parts[i].data(), static_cast<unsigned>(parts[i].size())), static_cast<int>(parts[i].size()));
    ASSERT_EQ(gzclose(f), Z_OK);
  }
}

std::string error_of(const std::string& path, const std::string& device = "") {
  try {
    read_kineto_trace(path, device);
  } catch (const calisim::InputError& e) {
    return e.what();
  }
  return "";
}

TEST(KinetoTrace, ReadsKernelsCopiesDevicesAndSteps) {
  const KinetoTrace t = read_kineto_trace(kFixture);
  EXPECT_EQ(t.kernels, 13);  // 1 warm-up + 6 per step
  EXPECT_EQ(t.copies, 4);
  ASSERT_EQ(t.records.size(), 17u);
  EXPECT_EQ(t.device_names.at(0), "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(t.rank, 3);
  EXPECT_EQ(t.world_size, 8);
  EXPECT_EQ(t.steps, (std::vector<std::string>{"ProfilerStep#2", "ProfilerStep#3"}));
  EXPECT_EQ(t.step_source, "gpu annotations");
  EXPECT_EQ(t.outside_steps, 1);
  EXPECT_TRUE(std::is_sorted(t.records.begin(), t.records.end(),
                             [](const auto& a, const auto& b) { return a.start_ns < b.start_ns; }));

  const auto& warmup = t.records[0];
  EXPECT_EQ(warmup.start_ns, 500'000u);  // 500 us
  EXPECT_EQ(warmup.end_ns, 510'000u);
  EXPECT_EQ(warmup.kernel_class, "elementwise");
  EXPECT_EQ(warmup.nvtx_range, "");

  const auto& gemm = t.records[1];
  EXPECT_EQ(gemm.kernel_class, "gemm");
  EXPECT_EQ(gemm.nvtx_range, "ProfilerStep#2");
  EXPECT_EQ(gemm.grid_x, 132);
  EXPECT_EQ(gemm.block_x, 384);
  EXPECT_EQ(gemm.stream, 7);
  EXPECT_EQ(gemm.end_ns - gemm.start_ns, 200'000u);

  auto first_of = [&](const std::string& cls) {
    return *std::find_if(t.records.begin(), t.records.end(), [&](const auto& k) { return k.kernel_class == cls; });
  };
  EXPECT_EQ(first_of("attention").grid_y, 16);
  EXPECT_EQ(first_of("nccl").stream, 20);
  const auto copy = first_of("memcpy");
  EXPECT_EQ(copy.copy_kind, "DtoD");
  EXPECT_EQ(copy.bytes, 1048576);
  EXPECT_EQ(copy.name, "[CUDA memcpy DtoD]");
  EXPECT_EQ(copy.grid_x, 0);
  const auto set = first_of("memset");
  EXPECT_EQ(set.copy_kind, "device");
  EXPECT_EQ(set.bytes, 4096);
  const auto in_step3 = std::count_if(t.records.begin(), t.records.end(),
                                      [](const auto& k) { return k.nvtx_range == "ProfilerStep#3"; });
  EXPECT_EQ(in_step3, 8);
}

// Without GPU-side annotations (older traces), a record's step is the CPU ProfilerStep range that
// holds its launch, found through the correlation id: the same steps result.
TEST(KinetoTrace, StepsFromCpuRangesThroughLaunchCorrelation) {
  const std::string path = edited("kineto_cpu_steps.json", [](json& doc) {
    drop_events(doc, [](const json& e) { return e.value("cat", "") == "gpu_user_annotation"; });
  });
  const KinetoTrace t = read_kineto_trace(path);
  EXPECT_EQ(t.step_source, "cpu ranges and launch correlation");
  EXPECT_EQ(t.outside_steps, 1);
  const auto in_step2 = std::count_if(t.records.begin(), t.records.end(),
                                      [](const auto& k) { return k.nvtx_range == "ProfilerStep#2"; });
  EXPECT_EQ(in_step2, 8);
  // The last kernel of step 2 runs at 1590 us, after step 2's CPU range ended (1520 us): it was
  // launched inside it, so it belongs to it.
  const auto late = std::find_if(t.records.begin(), t.records.end(),
                                 [](const auto& k) { return k.start_ns == 1'590'000u; });
  ASSERT_NE(late, t.records.end());
  EXPECT_EQ(late->nvtx_range, "ProfilerStep#2");
}

TEST(KinetoTrace, NoStepRangesLeavesRecordsUnassigned) {
  const std::string path = edited("kineto_no_steps.json", [](json& doc) {
    drop_events(doc, [](const json& e) { return e.value("name", "").rfind("ProfilerStep#", 0) == 0; });
  });
  const KinetoTrace t = read_kineto_trace(path);
  EXPECT_TRUE(t.steps.empty());
  EXPECT_EQ(t.step_source, "");
  EXPECT_EQ(t.outside_steps, 0);
  EXPECT_TRUE(std::all_of(t.records.begin(), t.records.end(), [](const auto& k) { return k.nvtx_range.empty(); }));
}

// A gzip-compressed trace (tensorboard_trace_handler(use_gzip=True)) reads as the plain one, also
// when it is two concatenated gzip members.
TEST(KinetoTrace, ReadsGzipCompressedTraces) {
  const KinetoTrace plain = read_kineto_trace(kFixture);
  for (bool two_members : {false, true}) {
    const std::string gz = ::testing::TempDir() + (two_members ? "kineto_two.pt.trace.json.gz" : "kineto.pt.trace.json.gz");
    write_gzip(gz, fixture().dump(2), two_members);
    const KinetoTrace t = read_kineto_trace(gz);
    ASSERT_EQ(t.records.size(), plain.records.size()) << two_members;
    for (std::size_t i = 0; i < t.records.size(); ++i) {
      EXPECT_EQ(t.records[i].name, plain.records[i].name);
      EXPECT_EQ(t.records[i].start_ns, plain.records[i].start_ns);
      EXPECT_EQ(t.records[i].end_ns, plain.records[i].end_ns);
      EXPECT_EQ(t.records[i].nvtx_range, plain.records[i].nvtx_range);
    }
    EXPECT_EQ(t.steps, plain.steps);
    EXPECT_EQ(t.rank, plain.rank);
    EXPECT_EQ(t.device_names, plain.device_names);
  }
}

TEST(KinetoTrace, DeviceNamesComeFromTheTraceOrTheCaller) {
  const std::string path = edited("kineto_no_props.json", [](json& doc) { doc.erase("deviceProperties"); });
  const std::string err = error_of(path);
  EXPECT_NE(err.find("deviceProperties"), std::string::npos) << err;
  EXPECT_NE(err.find("--device"), std::string::npos) << err;
  const KinetoTrace t = read_kineto_trace(path, "NVIDIA H200");
  EXPECT_EQ(t.device_names.at(0), "NVIDIA H200");
  // A given name wins over the trace's.
  EXPECT_EQ(read_kineto_trace(kFixture, "NVIDIA H200").device_names.at(0), "NVIDIA H200");
}

TEST(KinetoTrace, MalformedInputNamesTheFileAndTheField) {
  // A .gz cut short (a partial copy) stops with zlib's reason, not a JSON parse error.
  const std::string whole = ::testing::TempDir() + "kineto_whole.json.gz";
  write_gzip(whole, fixture().dump(), false);
  std::ifstream in(whole, std::ios::binary);
  const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::string cut = ::testing::TempDir() + "kineto_cut.json.gz";
  std::ofstream(cut, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  EXPECT_NE(error_of(cut).find("gzip: "), std::string::npos) << error_of(cut);
  EXPECT_NE(error_of(cut).find("kineto_cut.json.gz"), std::string::npos) << error_of(cut);

  const std::string text = ::testing::TempDir() + "kineto_text.json";
  std::ofstream(text) << "not json";
  EXPECT_NE(error_of(text).find("not a JSON trace"), std::string::npos) << error_of(text);

  // The legacy autograd profiler's bare array of events (a PyTorch without Kineto) is named as such.
  const std::string legacy = ::testing::TempDir() + "kineto_legacy.json";
  std::ofstream(legacy) << R"([{"name": "aten::mm", "ph": "X", "ts": 1, "dur": 2, "tid": 1, "pid": "CPU functions"}])";
  EXPECT_NE(error_of(legacy).find("legacy autograd profiler"), std::string::npos) << error_of(legacy);

  const std::string no_events = edited("kineto_no_events.json", [](json& doc) { doc.erase("traceEvents"); });
  EXPECT_NE(error_of(no_events).find("traceEvents: expected an array"), std::string::npos) << error_of(no_events);

  // The event's index is the file's, although CPU events before it were dropped while parsing.
  std::size_t bad_index = 0;
  const std::string bad_dur = edited("kineto_bad_dur.json", [&](json& doc) {
    json& ev = doc["traceEvents"];
    for (std::size_t i = 0; i < ev.size(); ++i) {
      if (ev[i].value("cat", "") == "kernel") {
        ev[i]["dur"] = -3;
        bad_index = i;
        break;
      }
    }
  });
  const std::string dur_err = error_of(bad_dur);
  EXPECT_EQ(dur_err.rfind(bad_dur, 0), 0u) << dur_err;  // the message starts with the file
  EXPECT_NE(dur_err.find("traceEvents[" + std::to_string(bad_index) + "].dur"), std::string::npos) << dur_err;
  EXPECT_NE(dur_err.find("non-negative number of microseconds"), std::string::npos) << dur_err;

  const std::string bad_grid = edited("kineto_bad_grid.json", [](json& doc) {
    for (json& e : doc["traceEvents"]) {
      if (e.value("cat", "") == "kernel") {
        e["args"]["grid"] = json::array({1, 2});
        break;
      }
    }
  });
  EXPECT_NE(error_of(bad_grid).find("args.grid: expected [x, y, z]"), std::string::npos) << error_of(bad_grid);

  const std::string cpu_only = edited("kineto_cpu_only.json", [](json& doc) {
    drop_events(doc, [](const json& e) { return e.value("cat", "") == "kernel"; });
  });
  EXPECT_NE(error_of(cpu_only).find("ProfilerActivity.CUDA"), std::string::npos) << error_of(cpu_only);
}

// PyTorch 1.8 / 1.9 traces: capitalised categories and "stream 7" thread ids; the same records.
TEST(KinetoTrace, FirstKinetoCategoryNamesAreRead) {
  const std::string path = edited("kineto_first_categories.json", [](json& doc) {
    for (json& e : doc["traceEvents"]) {
      const std::string cat = e.value("cat", "");
      if (cat == "kernel") e["cat"] = "Kernel";
      if (cat == "gpu_memcpy") e["cat"] = "Memcpy";
      if (cat == "gpu_memset") e["cat"] = "Memset";
      if (cat == "cuda_runtime") e["cat"] = "Runtime";
      if (e.contains("tid") && e["tid"].is_number_integer() && e.value("pid", -1) == 0) {
        e["tid"] = "stream " + std::to_string(e["tid"].get<int>());
      }
    }
  });
  const KinetoTrace t = read_kineto_trace(path);
  EXPECT_EQ(t.kernels, 13);
  EXPECT_EQ(t.copies, 4);
  EXPECT_EQ(t.outside_steps, 1);
  EXPECT_EQ(t.records[1].stream, 7);  // from args.stream
}

// Epoch timestamps (older traces: microseconds since 1970, about 1.7e15, kept by a double to about
// 0.25 us) still give durations exact to the nanosecond.
TEST(KinetoTrace, EpochTimestampsKeepExactDurations) {
  const std::string path = edited("kineto_epoch.json", [](json& doc) {
    for (json& e : doc["traceEvents"]) {
      if (e.contains("ts") && e["ts"].is_number()) e["ts"] = e["ts"].get<double>() + 1740461679470813.0;
      if (e.value("cat", "") == "kernel" && e.value("dur", 0.0) == 200.0) e["dur"] = 1.234;
    }
  });
  const KinetoTrace t = read_kineto_trace(path);
  EXPECT_EQ(t.outside_steps, 1);
  const auto gemm = std::find_if(t.records.begin(), t.records.end(),
                                 [](const auto& k) { return k.kernel_class == "gemm"; });
  ASSERT_NE(gemm, t.records.end());
  EXPECT_EQ(gemm->end_ns - gemm->start_ns, 1234u);
}

}  // namespace
