// `calisim validate` end to end on tests/data/validation/three_runs.csv: JSON rows, the listed
// not-simulated row, the HTML report, and exit 2 with line and column on a malformed CSV.
#include <gtest/gtest.h>

#include "tests/support/command_output.h"
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

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

const std::string kFixture = std::string(CALISIM_TEST_DATA_DIR) + "/validation/three_runs.csv";

// A file's whole text ("" when it cannot be read: the caller's assertions then fail on it).
std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Two --runs files: their rows together (the JSON lists both files), and a run id present in both
// refused with exit 2 and both files named.
TEST(ValidateCli, SeveralRunsFilesTogether) {
  const std::string b200 = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/nemo_long_sequence_b200.csv";
  const Out r = calisim("validate --runs " + kFixture + " --runs " + b200 + " --json", false);
  ASSERT_EQ(r.code, 0) << r.text;
  const auto j = nlohmann::json::parse(r.text);
  EXPECT_EQ(j["rows"].size(), 11u);
  ASSERT_EQ(j["runs_files"].size(), 2u);
  EXPECT_EQ(j["runs_files"][1], b200);
  EXPECT_FALSE(j.contains("runs_file")) << "runs_file names the one file of a single-file run only";
  EXPECT_EQ(j["summary"]["all"]["count"], 10);
  const Out text = calisim("validate --runs " + kFixture + " --runs " + b200);
  EXPECT_NE(text.text.find("three_runs.csv + "), std::string::npos) << text.text.substr(0, 300);
  const Out dup = calisim("validate --runs " + kFixture + " --runs " + kFixture);
  EXPECT_EQ(dup.code, 2);
  EXPECT_NE(dup.text.find("is already a row of"), std::string::npos) << dup.text;
}

TEST(ValidateCli, JsonRowsAndNotSimulatedReason) {
  const Out r = calisim("validate --runs " + kFixture + " --json", false);
  ASSERT_EQ(r.code, 0) << r.text;
  const auto j = nlohmann::json::parse(r.text);
  ASSERT_EQ(j["rows"].size(), 3u);
  std::map<std::string, nlohmann::json> by_id;
  for (const auto& row : j["rows"]) by_id[row["run_id"]] = row;
  ASSERT_TRUE(by_id.count("R0021") && by_id.count("R0145") && by_id.count("R0287"));
  EXPECT_TRUE(by_id["R0021"]["simulated"].get<bool>()) << by_id["R0021"].dump();
  EXPECT_EQ(by_id["R0021"]["measured_from"], "step_time_s");
  EXPECT_NEAR(by_id["R0021"]["measured_step_s"].get<double>(), 1.1, 1e-12);
  EXPECT_GT(by_id["R0021"]["simulated_step_s"].get<double>(), 0);
  EXPECT_EQ(by_id["R0021"]["system"], "a100-sxm-80g");
  EXPECT_FALSE(by_id["R0145"]["simulated"].get<bool>());
  EXPECT_NE(by_id["R0145"]["reason"].get<std::string>().find("sliding-window"), std::string::npos);
  EXPECT_TRUE(by_id["R0287"]["simulated"].get<bool>()) << by_id["R0287"].dump();
  EXPECT_EQ(by_id["R0287"]["measured_from"], "tokens_per_sec_per_gpu");
  EXPECT_EQ(by_id["R0287"]["memory"]["kind"], "reserved");
  EXPECT_FALSE(by_id["R0287"]["inferred"].empty());
  EXPECT_EQ(j["summary"]["all"]["count"], 2);
  // Every measured run ran: the fit check lists the simulated rows predicted not to fit.
  ASSERT_TRUE(j["summary"].contains("fit_check")) << j["summary"].dump();
  EXPECT_EQ(j["summary"]["fit_check"]["simulated"], 2);
  std::size_t not_fitting = 0;
  for (const auto& row : j["rows"]) not_fitting += row.value("simulated", false) && !row.value("fits_in_memory", true);
  EXPECT_EQ(j["summary"]["fit_check"]["predicted_not_to_fit"].get<std::size_t>(), not_fitting);
  EXPECT_EQ(j["summary"]["fit_check"]["runs"].size(), not_fitting);
  EXPECT_GE(j["summary"]["all"]["mape"].get<double>(), 0);
  // Without --db every kernel lookup is priced by the roofline defaults, and the summary adds up
  // the rows' tallies.
  const auto& sources = j["summary"]["kernels_per_source"];
  EXPECT_EQ(sources["measured"], 0);
  long long roofline = 0;
  for (const auto& row : j["rows"]) {
    if (row.value("simulated", false)) roofline += row["kernels_per_source"]["roofline"].get<long long>();
  }
  EXPECT_GT(roofline, 0);
  EXPECT_EQ(sources["roofline"].get<long long>(), roofline);
}

// The calibrated path end to end (issue target: beat SimuMax's 1.5 % on its own 30 A100-PCIe
// runs): SimuMax's measured efficiency table imported into a database, then validate --db. Every
// kernel lookup is priced from the database (measured or interpolated from its rows), none by the
// roofline, and the step-time MAPE stays under 1.5 %.
TEST(ValidateCli, SimumaxRunsWithTheirEfficiencyTableBeatSimumax) {
  const std::string db = ::testing::TempDir() + "validate_simumax.db";
  std::remove(db.c_str());
  const std::string table = std::string(CALISIM_TEST_DATA_DIR) + "/simumax/system/a100_pcie.json";
  ASSERT_EQ(calisim("db import " + db + " --simumax " + table + " --device \"NVIDIA A100 PCIe 80GB\"").code, 0);
  const std::string runs = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/simumax_a100_pcie.csv";
  const Out r = calisim("validate --runs " + runs + " --db " + db + " --json", false);
  ASSERT_EQ(r.code, 0) << r.text;
  const auto j = nlohmann::json::parse(r.text);
  EXPECT_EQ(j["summary"]["all"]["count"], 30);
  EXPECT_LT(j["summary"]["all"]["mape"].get<double>(), 0.015);
  const auto& sources = j["summary"]["kernels_per_source"];
  EXPECT_GT(sources["measured"].get<long long>(), 0);
  EXPECT_EQ(sources["roofline"], 0) << sources.dump();
  const Out text = calisim("validate --runs " + runs + " --db " + db);
  EXPECT_NE(text.text.find("kernel lookups of the simulated rows: "), std::string::npos);
  EXPECT_NE(text.text.find("0 roofline (0.0%)"), std::string::npos) << text.text;

  // A system that selects another attention kernel is not priced from the database's
  // default-kernel attention rows: attention falls back to that implementation's defaults (the
  // only roofline lookups), GEMMs still come from the database, and a note says so.
  const Out flash2 = calisim("validate --runs " + runs + " --db " + db +
                                 " --set system.efficiency.attention_implementation=flash2 --json",
                             false);
  ASSERT_EQ(flash2.code, 0) << flash2.text;
  const auto f = nlohmann::json::parse(flash2.text);
  EXPECT_GT(f["summary"]["kernels_per_source"]["roofline"].get<long long>(), 0);
  EXPECT_GT(f["summary"]["kernels_per_source"]["measured"].get<long long>(), 0);
  bool noted = false;
  for (const auto& n : f["efficiency_notes"]) noted |= n.get<std::string>().find("'flash2' defaults") != std::string::npos;
  EXPECT_TRUE(noted) << f["efficiency_notes"].dump();
}

// The public runs validated with roofline defaults and with the shipped H200 measurements
// (calibration/data/h200/: both exports imported into a fresh database `db_name`) predicted to
// each of `targets`: the two `summary` documents, or a test failure naming the step that failed.
struct BeforeAfter {
  nlohmann::json before, after;
};
BeforeAfter validate_with_h200_predicted_to(const std::string& db_name, const std::vector<std::string>& targets) {
  const std::string data = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/";
  const std::string db = ::testing::TempDir() + db_name;
  std::remove(db.c_str());
  for (const char* file : {"h200/rows.json", "h200/sweep.json"}) {
    const Out i = calisim("db import " + db + " --from " + data + file);
    EXPECT_EQ(i.code, 0) << file << ": " << i.text;
  }
  std::string to;
  for (const auto& t : targets) to += (to.empty() ? "" : ",") + t;
  const Out p = calisim("predict --from \"NVIDIA H200 SXM 141GB\" --to " + to + " --db " + db);
  EXPECT_EQ(p.code, 0) << to << ": " << p.text;
  const std::string runs = data + "measured_runs.csv";
  const Out base = calisim("validate --runs " + runs + " --json", false);
  const Out cal = calisim("validate --runs " + runs + " --db " + db + " --json", false);
  EXPECT_EQ(base.code, 0) << base.text;
  EXPECT_EQ(cal.code, 0) << cal.text;
  if (base.code != 0 || cal.code != 0) return {};
  return {nlohmann::json::parse(base.text)["summary"], nlohmann::json::parse(cal.text)["summary"]};
}

// Each GPU's step-time MAPE in a validate summary, by system name.
std::map<std::string, double> mape_by_gpu(const nlohmann::json& summary) {
  std::map<std::string, double> out;
  for (const auto& g : summary["by_gpu"]) out[g["group"]] = g["mape"].get<double>();
  return out;
}

// The share of a GPU's kernel lookups answered by predicted (`scaled`) rows.
double scaled_share(const nlohmann::json& summary, const std::string& gpu) {
  const auto& k = summary["kernels_per_source_by_gpu"][gpu];
  const double scaled = k["scaled"].get<double>(), roofline = k["roofline"].get<double>();
  return scaled / (scaled + roofline);
}

// The shipped H200 measurements priced onto the H100 rows: the H100 rows' kernels then come from
// the scaled rows (collectives stay the NCCL model: one GPU measured none) and their step-time
// error falls; the other systems, which the database does not hold, do not move.
TEST(ValidateCli, MeasuredH200KernelsPriceTheH100Rows) {
  const BeforeAfter r = validate_with_h200_predicted_to("validate_h200.db", {"h100-sxm"});
  ASSERT_FALSE(r.after.is_null());
  const auto before = mape_by_gpu(r.before), after = mape_by_gpu(r.after);
  ASSERT_TRUE(before.count("h100-sxm") && after.count("h100-sxm"));
  for (const auto& g : r.after["by_gpu"]) {
    if (g["group"] == "h100-sxm") {
      EXPECT_EQ(g["count"], 125);
    }
  }
  EXPECT_LT(after.at("h100-sxm"), before.at("h100-sxm") - 0.01) << "measured kernels should bring the H100 rows closer";
  for (const auto& [gpu, mape] : before) {
    if (gpu != "h100-sxm") {
      EXPECT_DOUBLE_EQ(after.at(gpu), mape) << gpu;
    }
  }
  EXPECT_GT(scaled_share(r.after, "h100-sxm"), 0.6) << r.after["kernels_per_source_by_gpu"].dump();
  EXPECT_EQ(r.after["kernels_per_source_by_gpu"]["a100-sxm-80g"]["scaled"], 0);
}

// The predict job against measured runs: the H200-measured kernels scaled by the predictor to
// every other GPU of the public file (Ampere, Hopper, Blackwell, Blackwell Ultra; none of them
// measured) bring each GPU's rows closer than its roofline defaults, and most of each GPU's
// kernel lookups come from the scaled rows.
TEST(ValidateCli, H200KernelsPredictedToEveryGpuBringEachCloser) {
  const std::vector<std::string> targets = {"h100-sxm", "a100-sxm-80g", "b200", "gb200-nvl72", "gb300-nvl72"};
  const BeforeAfter r = validate_with_h200_predicted_to("validate_h200_all.db", targets);
  ASSERT_FALSE(r.after.is_null());
  const auto before = mape_by_gpu(r.before), after = mape_by_gpu(r.after);
  for (const auto& t : targets) {
    ASSERT_TRUE(before.count(t) && after.count(t)) << t;
    EXPECT_LT(after.at(t), before.at(t) - 0.005) << t << ": predicted kernels should bring its rows closer";
    EXPECT_GT(scaled_share(r.after, t), 0.6) << t << ": " << r.after["kernels_per_source_by_gpu"][t].dump();
  }
  EXPECT_LT(r.after["all"]["mape"].get<double>(), r.before["all"]["mape"].get<double>() - 0.015);
}

TEST(ValidateCli, TableAndHtmlReport) {
  const std::string html = ::testing::TempDir() + "validate_report.html";
  std::remove(html.c_str());
  const Out r = calisim("validate --runs " + kFixture + " --report " + html);
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("R0021"), std::string::npos);
  EXPECT_NE(r.text.find("not simulated (1 rows)"), std::string::npos);
  EXPECT_NE(r.text.find("10 worst rows"), std::string::npos);
  EXPECT_NE(r.text.find("FLOP convention"), std::string::npos);
  ASSERT_TRUE(std::ifstream(html).good());
  const std::string page = read_text(html);
  EXPECT_NE(page.find("<svg"), std::string::npos);
  EXPECT_NE(page.find("<circle"), std::string::npos);
  EXPECT_EQ(page.find("<script"), std::string::npos);
}

TEST(ValidateCli, SourceFilterAndBadCsv) {
  const Out f = calisim("validate --runs " + kFixture + " --json --source torchtitan", false);
  ASSERT_EQ(f.code, 0) << f.text;
  EXPECT_EQ(nlohmann::json::parse(f.text)["rows"].size(), 1u);
  EXPECT_EQ(calisim("validate --runs " + kFixture + " --source nothing-matches").code, 2);

  std::ifstream in(kFixture);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::string bad = ::testing::TempDir() + "validate_bad.csv";
  std::ofstream(bad) << header << "\n" << row << "\n" << row.replace(row.find(",DGX-A100,8,"), 12, ",DGX-A100,x8,") << "\n";
  const Out r = calisim("validate --runs " + bad);
  EXPECT_EQ(r.code, 2) << r.text;
  EXPECT_NE(r.text.find("line 3, column"), std::string::npos) << r.text;
  EXPECT_EQ(calisim("validate --runs /nonexistent/runs.csv").code, 2);
}

// Splits one CSV line into cells (quoted cells may hold commas; the fixture has no newlines in cells).
std::vector<std::string> csv_cells(const std::string& line) {
  std::vector<std::string> cells(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    if (c == ',' && !quoted) {
      cells.emplace_back();
    } else {
      cells.back() += c;
    }
  }
  return cells;
}

// Writes kFixture's header and first row (R0021) with the given columns set; returns the path.
std::string fixture_with(const std::vector<std::pair<std::string, std::string>>& edits, const std::string& name) {
  std::ifstream in(kFixture);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::vector<std::string> names = csv_cells(header);
  std::vector<std::string> cells = csv_cells(row);
  EXPECT_EQ(names.size(), cells.size());
  for (const auto& [column, value] : edits) {
    const auto it = std::find(names.begin(), names.end(), column);
    EXPECT_NE(it, names.end()) << column;
    if (it != names.end()) cells[static_cast<std::size_t>(it - names.begin())] = value;
  }
  std::string edited;
  for (std::size_t i = 0; i < cells.size(); ++i) edited += (i ? "," : "") + cells[i];
  const std::string csv = ::testing::TempDir() + name;
  std::ofstream(csv) << header << "\n" << edited << "\n";
  return csv;
}

// A row whose global batch is not micro-batch x dp x gradient accumulation is simulated as stated
// and listed under "warnings:" in the table output (and in its JSON row).
TEST(ValidateCli, RowWhoseBatchColumnsDisagreeIsWarned) {
  // The fixture row's dp is not 7.
  const std::string csv = fixture_with({{"micro_batch_size", "1"}, {"grad_accum", "1"}, {"global_batch_size", "7"}},
                                       "validate_batch_disagrees.csv");
  const std::string html = ::testing::TempDir() + "validate_batch_disagrees.html";
  const Out r = calisim("validate --runs " + csv + " --report " + html);
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(read_text(html).find("warning: the row&#39;s batch columns disagree"), std::string::npos);
  EXPECT_NE(r.text.find("warnings:\n  R0021: the row's batch columns disagree: global_batch_size 7 != "
                        "micro_batch_size 1 x dp"),
            std::string::npos)
      << r.text;
  const Out j = calisim("validate --json --runs " + csv, false);
  ASSERT_EQ(j.code, 0) << j.text;
  const auto warnings = nlohmann::json::parse(j.text)["rows"][0]["warnings"];
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(warnings[0].get<std::string>().find("batch columns disagree"), std::string::npos);
}

// --fit-system fits the system's defaults to its rows: the fitted factor reproduces the one row,
// the JSON and the table report it, --fit-out writes a system file that simulates, and the
// options are checked.
// --components: per system, the multipliers of the simulated step's parts that the rows' measured
// steps want (calibration/step_components.h), held out row by row for one source. The parts add up
// to each row's simulated step, so multipliers of 1 give back validate's own errors; the fit can
// only lower the error on the rows it saw; a named subset keeps the other parts at 1; an unknown
// part is refused before any row is simulated.
TEST(ValidateCli, ComponentsOfTheStepPerSystem) {
  const std::string runs = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/measured_runs.csv";
  const Out r = calisim("validate --runs " + runs + " --source Korthikanti --json --components", false);
  ASSERT_EQ(r.code, 0) << r.text;
  const auto doc = nlohmann::json::parse(r.text);
  std::map<std::string, double> simulated;
  for (const auto& row : doc["rows"])
    if (row["simulated"].get<bool>()) simulated[row["run_id"]] = row["simulated_step_s"].get<double>();
  ASSERT_EQ(simulated.size(), 8u);
  const auto& systems = doc["components"]["systems"];
  ASSERT_EQ(systems.size(), 1u);
  const auto& a100 = systems[0];
  EXPECT_EQ(a100["system"], "a100-sxm-80g");
  EXPECT_EQ(a100["rows"], 8);
  EXPECT_EQ(a100["cross_validation"], "leave one row out");
  ASSERT_EQ(a100["parts"].size(), 6u);
  double shares = 0;
  for (const auto& part : a100["parts"]) {
    shares += part["share"].get<double>();
    if (!part["multiplier"].is_null()) {
      EXPECT_GE(part["multiplier"].get<double>(), 0) << part.dump();
    }
  }
  EXPECT_NEAR(shares, 1.0, 1e-9);
  EXPECT_EQ(a100["parts"][0]["part"], "compute");
  EXPECT_GT(a100["parts"][0]["share"].get<double>(), 0.5);
  EXPECT_EQ(a100["parts"][1]["part"], "attention");
  EXPECT_GT(a100["parts"][1]["share"].get<double>(), 0.0);
  ASSERT_EQ(a100["per_row"].size(), 8u);
  for (const auto& row : a100["per_row"]) {
    EXPECT_NEAR(row["simulated_step_s"].get<double>(), simulated.at(row["run_id"]), 1e-9 * simulated.at(row["run_id"]));
  }
  const auto& steps = a100["step_time"];
  EXPECT_NEAR(steps["simulated"]["mape"].get<double>(), doc["summary"]["all"]["mape"].get<double>(), 1e-9);
  EXPECT_LT(steps["fitted"]["mape"].get<double>(), steps["simulated"]["mape"].get<double>());
  EXPECT_EQ(a100["folds"].size(), 8u);

  const std::string html = ::testing::TempDir() + "validate_components.html";
  const Out compute = calisim("validate --runs " + runs + " --source Korthikanti --components compute --report " + html);
  ASSERT_EQ(compute.code, 0) << compute.text;
  const std::string page_text = read_text(html);
  EXPECT_NE(page_text.find("<h2>Step components: measured step = sum of multiplier &times; simulated part</h2>"),
            std::string::npos);
  EXPECT_NE(page_text.find("<h3>a100-sxm-80g: 8 rows, held out row by row (one source)</h3>"), std::string::npos);
  EXPECT_NE(compute.text.find("a100-sxm-80g: 8 rows, held out row by row (one source)"), std::string::npos)
      << compute.text;
  EXPECT_NE(compute.text.find("1 (kept)"), std::string::npos) << compute.text;
  // --components-out: the compute multiplier written as the system's sustained kernel speed; the
  // rows re-simulated with that speed land where the multiplier put them.
  const std::string dir = ::testing::TempDir() + "insitu";
  const Out written = calisim("validate --runs " + runs + " --source Korthikanti --json --components compute "
                                  "--components-out " + dir, false);
  ASSERT_EQ(written.code, 0) << written.text;
  const auto wdoc = nlohmann::json::parse(written.text)["components"];
  const std::string file = dir + "/a100-sxm-80g-insitu.json";
  EXPECT_EQ(wdoc["written"]["a100-sxm-80g"], file);
  const double m = wdoc["systems"][0]["parts"][0]["multiplier"].get<double>();
  std::ifstream sys_in(file);
  ASSERT_TRUE(sys_in.good());
  const auto sys_doc = nlohmann::json::parse(sys_in);
  const double speed = sys_doc["efficiency"]["sustained_kernel_speed"].get<double>();
  EXPECT_NEAR(speed, 1 / m, 1e-4);
  EXPECT_FALSE(sys_doc.contains("efficiency_db")) << "no --db priced these rows";
  EXPECT_NE(sys_doc["description"].get<std::string>().find("--components compute"), std::string::npos);
  EXPECT_EQ(calisim("simulate --model llama3-8b --strategy llama3-8b-8gpu --no-ops --system " + file).code, 0);
  const Out again = calisim("validate --runs " + runs + " --source Korthikanti --json --set "
                                "system.efficiency.sustained_kernel_speed=" + std::to_string(speed), false);
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_NEAR(nlohmann::json::parse(again.text)["summary"]["all"]["mape"].get<double>(),
              wdoc["systems"][0]["step_time"]["fitted"]["mape"].get<double>(), 0.01);
  const Out needs = calisim("validate --runs " + runs + " --components --components-out " + dir);
  EXPECT_EQ(needs.code, 2);
  EXPECT_NE(needs.text.find("it needs --components compute, or --components compute attention"), std::string::npos)
      << needs.text;

  // Systems of one row each (the fixture): nothing is held out, and the total says so.
  const Out one = calisim("validate --runs " + kFixture + " --json --components compute", false);
  ASSERT_EQ(one.code, 0) << one.text;
  const auto one_all = nlohmann::json::parse(one.text)["components"]["all"];
  EXPECT_EQ(one_all["systems_without_cross_validation"], 2);
  EXPECT_TRUE(one_all["step_time"]["held_out"].is_null()) << one_all.dump();
  const Out one_text = calisim("validate --runs " + kFixture + " --components compute");
  EXPECT_NE(one_text.text.find("(2 system(s) of one row: no cross-validation)"), std::string::npos) << one_text.text;
  EXPECT_EQ(one_text.text.find("held out"), std::string::npos) << one_text.text;

  const Out bad = calisim("validate --runs " + runs + " --components compute,flops");
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("--components: expected compute, attention, model_parallel_comm, data_parallel_comm, bubble "
                          "or other, got 'flops'"),
            std::string::npos)
      << bad.text;
  EXPECT_EQ(bad.text.find("calisim validate:"), std::string::npos) << "refused before any row ran";
}

// The target on the public measured runs (step-time MAPE <= 10 % with calibrated
// efficiencies where the device has data), as docs/validation.md reproduces it: the H200's
// measured kernels (calibration/data/h200) predicted to the H100, then each source predicted from
// in-situ speeds fitted on the other sources, attention kernels apart. Held out by source, so a
// change to the simulator that only fits these rows better cannot pass it; every row is simulated.
TEST(ValidateCli, PublicRunsHeldOutMeetTheTarget) {
  const std::string repo = std::string(CALISIM_TEST_DATA_DIR) + "/../..";
  const std::string db = ::testing::TempDir() + "validate_public_h200.db";
  std::remove(db.c_str());
  ASSERT_EQ(calisim("db import " + db + " --from " + repo + "/calibration/data/h200/rows.json").code, 0);
  ASSERT_EQ(calisim("db import " + db + " --from " + repo + "/calibration/data/h200/sweep.json").code, 0);
  ASSERT_EQ(calisim("predict --from \"NVIDIA H200 SXM 141GB\" --to h100-sxm --db " + db).code, 0);
  const Out r = calisim("validate --runs " + repo + "/calibration/data/measured_runs.csv --db " + db +
                            " --json --components compute attention",
                        false);
  ASSERT_EQ(r.code, 0) << r.text;
  const auto j = nlohmann::json::parse(r.text);
  EXPECT_EQ(j["summary"]["all"]["count"], 194);
  const auto& all = j["components"]["all"];
  EXPECT_EQ(all["rows"], 194);
  EXPECT_EQ(all["systems_without_cross_validation"], 0);
  EXPECT_LE(all["step_time"]["held_out"]["mape"].get<double>(), 0.10) << all.dump();
  // The H100 rows are priced from the measured kernels.
  for (const auto& sys : j["components"]["systems"]) {
    if (sys["system"] == "h100-sxm") EXPECT_EQ(sys["rows"], 125);
  }
  EXPECT_GT(j["summary"]["kernels_per_source"]["scaled"].get<long long>(), 0);
}

// --components compute attention: the attention kernels (each row's compute_split) get their own
// multiplier; with compute alone they follow compute's. --components-out writes both speeds and
// the rows re-simulated with them land where the multipliers put them. --select-parts keeps, per
// system, the subset of the asked parts that cross-validation supports.
TEST(ValidateCli, AttentionApartAndSelectedParts) {
  const std::string runs = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/measured_runs.csv";
  const std::string dir = ::testing::TempDir() + "insitu_attention";
  // "et al.": Korthikanti et al. and Narayanan et al., A100 SXM, two sources.
  const Out r = calisim("validate --runs " + runs + " --source 'et al.' --json --components compute attention "
                            "--components-out " + dir, false);
  ASSERT_EQ(r.code, 0) << r.text;
  const auto doc = nlohmann::json::parse(r.text);
  for (const auto& row : doc["rows"]) {
    const double attention = row["compute_split"]["attention_kernel_s"].get<double>();
    EXPECT_GT(attention, 0) << row["run_id"];
    EXPECT_NEAR(attention + row["compute_split"]["other_kernel_s"].get<double>(),
                row["breakdown"]["compute_s"].get<double>() + row["breakdown"]["recompute_s"].get<double>(),
                1e-9 * row["simulated_step_s"].get<double>())
        << row["run_id"];
  }
  const auto& sys = doc["components"]["systems"][0];
  EXPECT_FALSE(sys["attention_tied"].get<bool>());
  const double mc = sys["parts"][0]["multiplier"].get<double>(), ma = sys["parts"][1]["multiplier"].get<double>();
  EXPECT_GT(ma, mc) << "older attention kernels: the A100 rows' attention runs slower than its other kernels";
  std::ifstream in(dir + "/a100-sxm-80g-insitu.json");
  ASSERT_TRUE(in.good());
  const auto file = nlohmann::json::parse(in);
  const double speed = file["efficiency"]["sustained_kernel_speed"].get<double>();
  const double attention_speed = file["efficiency"]["sustained_attention_speed"].get<double>();
  EXPECT_NEAR(speed, 1 / mc, 1e-4);
  EXPECT_NEAR(attention_speed, 1 / ma, 1e-4);
  EXPECT_NE(file["description"].get<std::string>().find("--components compute attention"), std::string::npos);
  const Out again = calisim("validate --runs " + runs + " --source 'et al.' --json --set system.efficiency."
                                "sustained_kernel_speed=" + std::to_string(speed) +
                                " system.efficiency.sustained_attention_speed=" + std::to_string(attention_speed),
                            false);
  ASSERT_EQ(again.code, 0) << again.text;
  EXPECT_NEAR(nlohmann::json::parse(again.text)["summary"]["all"]["mape"].get<double>(),
              sys["step_time"]["fitted"]["mape"].get<double>(), 0.01);

  // Compute alone: the attention kernels take its multiplier, in the JSON and the table.
  const Out tied = calisim("validate --runs " + runs + " --source 'et al.' --json --components compute", false);
  ASSERT_EQ(tied.code, 0) << tied.text;
  const auto tsys = nlohmann::json::parse(tied.text)["components"]["systems"][0];
  EXPECT_TRUE(tsys["attention_tied"].get<bool>());
  EXPECT_EQ(tsys["parts"][1]["multiplier"], tsys["parts"][0]["multiplier"]);
  for (const auto& fold : tsys["folds"]) EXPECT_EQ(fold["multipliers"]["attention"], fold["multipliers"]["compute"]);
  const Out tied_text = calisim("validate --runs " + runs + " --source 'et al.' --components compute");
  EXPECT_NE(tied_text.text.find("= compute"), std::string::npos) << tied_text.text;

  // --select-parts: the choice is reported, and each fold fits only parts it was allowed.
  const Out sel = calisim("validate --runs " + runs + " --source 'et al.' --json --components compute attention "
                              "--select-parts", false);
  ASSERT_EQ(sel.code, 0) << sel.text;
  const auto sdoc = nlohmann::json::parse(sel.text)["components"];
  EXPECT_TRUE(sdoc["select_parts"].get<bool>());
  for (const auto& fold : sdoc["systems"][0]["folds"]) {
    for (const char* part : {"model_parallel_comm", "data_parallel_comm", "bubble", "other"}) {
      EXPECT_TRUE(fold["multipliers"][part].is_null()) << fold.dump();
    }
  }
  const Out sel_text = calisim("validate --runs " + runs + " --source 'et al.' --components compute attention "
                                   "--select-parts");
  EXPECT_NE(sel_text.text.find("parts chosen per system by cross-validation (--select-parts)"), std::string::npos)
      << sel_text.text;

  const Out alone = calisim("validate --runs " + runs + " --select-parts");
  EXPECT_EQ(alone.code, 2);
  EXPECT_NE(alone.text.find("--select-parts: chooses among the parts of --components"), std::string::npos)
      << alone.text;
  const Out not_kernels = calisim("validate --runs " + runs + " --components compute bubble --components-out " + dir);
  EXPECT_EQ(not_kernels.code, 2);
  EXPECT_NE(not_kernels.text.find("--components-out"), std::string::npos) << not_kernels.text;
}

// --components held out by source: each source's rows with the other sources' multipliers, in the
// text table, the JSON folds and the report; the per-source errors are those of the per-row held-out
// steps, and weighted by rows they add up to the system's held-out error.
TEST(ValidateCli, ComponentsHeldOutPerSource) {
  const std::string runs = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/measured_runs.csv";
  // "et al.": Korthikanti et al. (8 rows) and Narayanan et al. (10 rows), both A100 SXM.
  const Out j = calisim("validate --runs " + runs + " --source 'et al.' --json --components compute", false);
  ASSERT_EQ(j.code, 0) << j.text;
  const auto sys = nlohmann::json::parse(j.text)["components"]["systems"][0];
  EXPECT_EQ(sys["cross_validation"], "leave one source out");
  ASSERT_EQ(sys["folds"].size(), 2u);
  std::map<std::string, std::vector<double>> errors;  // fold -> held-out step errors of its rows
  for (const auto& row : sys["per_row"]) {
    errors[row["fold"]].push_back(row["held_out_step_s"].get<double>() / row["measured_step_s"].get<double>() - 1);
  }
  std::size_t rows = 0;
  double weighted_mape = 0;
  for (const auto& fold : sys["folds"]) {
    const auto& e = errors.at(fold["left_out"].get<std::string>());
    ASSERT_EQ(fold["rows"].get<std::size_t>(), e.size()) << fold.dump();
    double mape = 0, bias = 0;
    for (double x : e) {
      mape += std::abs(x) / static_cast<double>(e.size());
      bias += x / static_cast<double>(e.size());
    }
    EXPECT_NEAR(fold["held_out"]["mape"].get<double>(), mape, 1e-12) << fold.dump();
    EXPECT_NEAR(fold["held_out"]["bias"].get<double>(), bias, 1e-12) << fold.dump();
    // The fold's own rows pull the full fit: without them the multiplier differs from it.
    EXPECT_NE(fold["multipliers"]["compute"].get<double>(), sys["parts"][0]["multiplier"].get<double>());
    rows += e.size();
    weighted_mape += mape * static_cast<double>(e.size());
  }
  EXPECT_EQ(rows, 18u);
  EXPECT_NEAR(weighted_mape / 18, sys["step_time"]["held_out"]["mape"].get<double>(), 1e-12);

  const std::string html = ::testing::TempDir() + "validate_components_sources.html";
  const Out t = calisim("validate --runs " + runs + " --source 'et al.' --components compute --report " + html);
  ASSERT_EQ(t.code, 0) << t.text;
  EXPECT_NE(t.text.find("held-out source"), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("Narayanan et al. 2021"), std::string::npos) << t.text;
  EXPECT_NE(t.text.find("compute 1."), std::string::npos) << t.text;
  EXPECT_NE(read_text(html).find("<th>held-out source</th>"), std::string::npos);
  // Held out row by row (one source): no per-source table.
  const Out one = calisim("validate --runs " + runs + " --source Korthikanti --components compute");
  ASSERT_EQ(one.code, 0) << one.text;
  EXPECT_EQ(one.text.find("held-out source"), std::string::npos) << one.text;
}

TEST(ValidateCli, FitSystemToItsRows) {
  const std::string out = ::testing::TempDir() + "a100-fit.json";
  std::remove(out.c_str());
  const Out j = calisim("validate --runs " + kFixture + " --json --fit-system a100-sxm-80g --fit-out " + out, false);
  ASSERT_EQ(j.code, 0) << j.text;
  const auto report = nlohmann::json::parse(j.text)["fit"];
  ASSERT_EQ(report["systems"].size(), 1u);
  const auto& fit = report["systems"][0];
  EXPECT_EQ(fit["system"], "a100-sxm-80g");
  EXPECT_EQ(fit["rows"], 1);  // R0021; R0287 is an H100 row
  EXPECT_EQ(fit["cross_validation"], "none (one row)");
  const double k = fit["factors"]["compute"].get<double>();
  EXPECT_GT(k, 0.25);
  EXPECT_LT(k, 4.0);
  // One row, one factor: the fit reproduces its step time.
  const auto& row = fit["per_row"][0];
  EXPECT_NEAR(row["fitted_step_s"].get<double>(), row["measured_step_s"].get<double>(),
              3e-3 * row["measured_step_s"].get<double>());
  EXPECT_LT(fit["step_time"]["fitted"]["mape"].get<double>(), fit["step_time"]["defaults"]["mape"].get<double>());
  // The written file is a system that simulates; its description says how it was fitted.
  std::ifstream in(out);
  ASSERT_TRUE(in.good());
  const auto doc = nlohmann::json::parse(in);
  EXPECT_NE(doc["description"].get<std::string>().find("--fit-system a100-sxm-80g"), std::string::npos);
  const Out s = calisim("simulate --model llama3-8b --strategy llama3-8b-8gpu --no-ops --system " + out);
  EXPECT_EQ(s.code, 0) << s.text;
  const Out t = calisim("validate --runs " + kFixture + " --fit-system a100-sxm-80g");
  ASSERT_EQ(t.code, 0) << t.text;
  EXPECT_NE(t.text.find("fit of a100-sxm-80g's efficiencies to its 1 rows (compute): compute x"), std::string::npos)
      << t.text;
  // One row: nothing to hold out (the folds themselves are tested in tests/calibration/run_fit_test.cc).
  EXPECT_EQ(t.text.find("held out"), std::string::npos) << t.text;
  // Refusals: a system no row maps to, --db, --fit without --fit-system, an unknown group.
  const Out none = calisim("validate --runs " + kFixture + " --fit-system mi300x");
  EXPECT_EQ(none.code, 2);
  EXPECT_NE(none.text.find("no simulated row maps to system 'mi300x' (rows map to: a100-sxm-80g, h100-sxm)"),
            std::string::npos)
      << none.text;
  EXPECT_EQ(calisim("validate --runs " + kFixture + " --fit-system h100-sxm --db x.db").code, 2);
  EXPECT_EQ(calisim("validate --runs " + kFixture + " --fit comm").code, 2);
  const Out group = calisim("validate --runs " + kFixture + " --fit-system h100-sxm --fit flops");
  EXPECT_EQ(group.code, 2);
  EXPECT_NE(group.text.find("expected compute, comm, memory or fp8"), std::string::npos) << group.text;

  // all: each system with simulated rows on its own rows, the files in a directory, and the error
  // over every fitted row.
  const std::string dir = ::testing::TempDir() + "fits";
  const Out every = calisim("validate --runs " + kFixture + " --json --fit-system all --fit-out " + dir, false);
  ASSERT_EQ(every.code, 0) << every.text;
  const auto all = nlohmann::json::parse(every.text)["fit"];
  ASSERT_EQ(all["systems"].size(), 2u);
  EXPECT_EQ(all["systems"][0]["system"], "a100-sxm-80g");
  EXPECT_EQ(all["systems"][1]["system"], "h100-sxm");
  EXPECT_EQ(all["rows"], 2);
  EXPECT_LE(all["step_time"]["fitted"]["mape"].get<double>(), all["step_time"]["defaults"]["mape"].get<double>());
  std::ifstream written(dir + "/h100-sxm-fit.json");
  EXPECT_TRUE(written.good());
  const std::string html = ::testing::TempDir() + "validate_fit.html";
  const Out all_text = calisim("validate --runs " + kFixture + " --fit-system all --report " + html);
  EXPECT_NE(all_text.text.find("all 2 fitted rows, each system fitted on its own rows:"), std::string::npos)
      << all_text.text;
  // The HTML report carries the fit's tables after the rows.
  const std::string page = read_text(html);
  EXPECT_NE(page.find("<h2>Fit of the systems' efficiencies to their rows (compute)</h2>"), std::string::npos);
  EXPECT_NE(page.find("<h3>h100-sxm: 1 rows, compute x"), std::string::npos);
  EXPECT_NE(page.find("<h3>All 2 fitted rows</h3>"), std::string::npos);
}

// --dump-inputs writes each simulated row's mapped inputs; `calisim simulate` on them reproduces
// the row's simulated step and its breakdown, which the row carries (critical stage: the
// components add up to no more than the step, and to most of it).
TEST(ValidateCli, DumpedInputsReproduceTheRow) {
  const std::string dir = ::testing::TempDir() + "validate_dump";
  const Out v = calisim("validate --runs " + kFixture + " --json --dump-inputs " + dir, false);
  ASSERT_EQ(v.code, 0) << v.text;
  const auto rows = nlohmann::json::parse(v.text)["rows"];
  int checked = 0;
  for (const auto& row : rows) {
    if (!row.value("simulated", false)) continue;
    const std::string id = row["run_id"].get<std::string>();
    const std::string base = dir + "/" + id;
    const Out s = calisim("simulate --json --no-ops --model " + base + ".model.json --strategy " + base +
                              ".strategy.json --system " + base + ".system.json",
                          false);
    ASSERT_EQ(s.code, 0) << s.text;
    const nlohmann::json sim = nlohmann::json::parse(s.text);
    EXPECT_NEAR(sim["cost"]["duration_time_per_iter_s"].get<double>(), row["simulated_step_s"].get<double>(),
                1e-9 * row["simulated_step_s"].get<double>())
        << id;
    ASSERT_TRUE(row.contains("breakdown")) << id;
    const nlohmann::json& parts = row["breakdown"];
    ASSERT_EQ(parts.size(), sim["breakdown"].size()) << parts.dump();
    double sum_s = 0;
    for (const auto& [name, value] : sim["breakdown"].items()) {
      ASSERT_TRUE(parts.contains(name)) << id << " " << name;
      EXPECT_NEAR(parts[name].get<double>(), value.get<double>(), 1e-9 * (1 + value.get<double>())) << id << " " << name;
      EXPECT_GE(value.get<double>(), 0) << id << " " << name;
      sum_s += value.get<double>();
    }
    EXPECT_GT(parts["compute_s"].get<double>(), 0) << id;
    EXPECT_LE(sum_s, row["simulated_step_s"].get<double>() * (1 + 1e-9)) << id;
    EXPECT_GT(sum_s, 0.5 * row["simulated_step_s"].get<double>()) << id;
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

// --set overrides a field of every mapped row (here the system's matmul efficiency and the
// strategy's recompute), shows in the JSON and in the dumped inputs; a malformed one is refused
// before any row is read.
TEST(ValidateCli, SetOverridesEveryMappedRow) {
  const auto step = [](const std::string& text) {
    const nlohmann::json doc = nlohmann::json::parse(text);
    for (const auto& row : doc["rows"]) {
      if (row["run_id"] == "R0021") return row["simulated_step_s"].get<double>();
    }
    return 0.0;
  };
  const Out base = calisim("validate --runs " + kFixture + " --json --source Korthikanti", false);
  ASSERT_EQ(base.code, 0) << base.text;
  const Out slow =
      calisim("validate --runs " + kFixture + " --json --source Korthikanti --set system.efficiency.matmul=0.36", false);
  ASSERT_EQ(slow.code, 0) << slow.text;
  EXPECT_GT(step(slow.text), 1.3 * step(base.text));
  EXPECT_EQ(nlohmann::json::parse(slow.text)["overrides"][0], "system.efficiency.matmul=0.36");

  const std::string dir = ::testing::TempDir() + "validate_set_dump";
  const Out full = calisim("validate --runs " + kFixture +
                               " --json --source Korthikanti --set strategy.recompute_granularity=full_block"
                               " --dump-inputs " + dir,
                           false);
  ASSERT_EQ(full.code, 0) << full.text;
  EXPECT_GT(step(full.text), step(base.text));
  std::ifstream dumped(dir + "/R0021.strategy.json");
  EXPECT_EQ(nlohmann::json::parse(dumped)["recompute_granularity"], "full_block");

  const Out bad = calisim("validate --runs " + kFixture + " --set nonsense");
  EXPECT_EQ(bad.code, 2) << bad.text;
  EXPECT_NE(bad.text.find("--set nonsense"), std::string::npos) << bad.text;
}

// simulate --accuracy: the flagship beside the shipped runs of its class (h100-sxm, dense, bf16),
// the implied step time is simulated / (1 + median error), the text names the class; a runs file
// with too few runs of the class says so; validate rows carry the class; a missing file is exit 2.
TEST(ValidateCli, SimulateAccuracyAgainstTheShippedRuns) {
  const std::string flagship = "simulate --model llama3-70b --strategy llama3-70b-64gpu --system h100-sxm";
  const Out r = calisim(flagship + " --json --accuracy", false);
  ASSERT_EQ(r.code, 0) << r.text.substr(0, 500);
  const auto j = nlohmann::json::parse(r.text);
  const auto& a = j["accuracy"];
  ASSERT_TRUE(a["available"].get<bool>()) << a.dump();
  EXPECT_EQ(a["query"]["system"], "h100-sxm");
  EXPECT_EQ(a["query"]["model_class"], "dense");
  EXPECT_EQ(a["query"]["precision"], "bf16");
  EXPECT_EQ(a["matched_on"][0], "system h100-sxm") << a.dump();
  EXPECT_GE(a["runs"].get<int>(), 40) << "the public file alone has 55 dense bf16 H100 rows";
  EXPECT_GE(a["runs_files"].size(), 3u);
  const double sim = j["cost"]["duration_time_per_iter_s"].get<double>();
  EXPECT_DOUBLE_EQ(a["simulated_step_s"].get<double>(), sim);
  EXPECT_NEAR(a["expected_step_s"].get<double>(), sim / (1 + a["median_error"].get<double>()), 1e-9 * sim);
  EXPECT_LE(a["expected_step_low_s"].get<double>(), a["expected_step_s"].get<double>());
  EXPECT_GE(a["expected_step_high_s"].get<double>(), a["expected_step_s"].get<double>());
  EXPECT_FALSE(calisim(flagship + " --json", false).text.find("\"accuracy\"") != std::string::npos)
      << "accuracy only on request";

  const Out text = calisim(flagship + " --no-ops --accuracy");
  ASSERT_EQ(text.code, 0) << text.text;
  EXPECT_NE(text.text.find("validated runs (system h100-sxm, dense, bf16)"), std::string::npos) << text.text;
  EXPECT_NE(text.text.find("step time those errors imply for this run"), std::string::npos);

  // The fixture's three rows simulate two: fewer than 5 dense runs, no envelope (and --accuracy-runs
  // alone turns the report on).
  const Out few = calisim(flagship + " --json --accuracy-runs " + kFixture, false);
  ASSERT_EQ(few.code, 0) << few.text.substr(0, 300);
  const auto f = nlohmann::json::parse(few.text)["accuracy"];
  EXPECT_FALSE(f["available"].get<bool>()) << f.dump();
  EXPECT_NE(f["reason"].get<std::string>().find("fewer than 5"), std::string::npos);
  EXPECT_EQ(f["simulated_rows"], 2);

  const Out rows = calisim("validate --runs " + kFixture + " --json", false);
  for (const auto& row : nlohmann::json::parse(rows.text)["rows"]) {
    if (!row["simulated"].get<bool>()) continue;
    EXPECT_EQ(row["model_class"], "dense") << row.dump();
    EXPECT_EQ(row["precision"], "bf16") << row.dump();
  }

  const Out missing = calisim(flagship + " --accuracy-runs /nonexistent/runs.csv");
  EXPECT_EQ(missing.code, 2) << missing.text;
  EXPECT_NE(missing.text.find("/nonexistent/runs.csv"), std::string::npos) << missing.text;
}

// A --db that cannot be read stops the validation (exit 2) before any row is priced; it used to
// be a per-row note, every row priced from the roofline, exit 0. A database that holds another
// device is still a per-row note (those rows use the roofline defaults).
TEST(ValidateCli, UnreadableDatabaseIsAnErrorAnotherDevicesIsANote) {
  const std::string missing = ::testing::TempDir() + "validate_no_such.db";
  std::remove(missing.c_str());
  const Out none = calisim("validate --runs " + kFixture + " --db " + missing);
  EXPECT_EQ(none.code, 2) << none.text;
  EXPECT_NE(none.text.find(missing + ": --db: database file does not exist"), std::string::npos) << none.text;
  const std::string text = ::testing::TempDir() + "validate_not_a.db";
  std::ofstream(text) << "this is not an SQLite file, it is long enough to have a header of sorts............\n";
  const Out garbage = calisim("validate --runs " + kFixture + " --db " + text);
  EXPECT_EQ(garbage.code, 2) << garbage.text;
  EXPECT_NE(garbage.text.find("is not an SQLite database"), std::string::npos) << garbage.text;

  const std::string other = ::testing::TempDir() + "validate_other_device.db";
  std::remove(other.c_str());
  const Out imp = calisim("db import " + other + " --simumax " + std::string(CALISIM_TEST_DATA_DIR) +
                          "/simumax/system/a100_pcie.json --device \"NVIDIA A100 PCIe 80GB\"");
  ASSERT_EQ(imp.code, 0) << imp.text;
  const Out r = calisim("validate --runs " + kFixture + " --db " + other + " --json", false);
  ASSERT_EQ(r.code, 0) << r.text.substr(0, 500);
  const auto j = nlohmann::json::parse(r.text);
  ASSERT_FALSE(j["efficiency_notes"].empty());
  EXPECT_NE(j["efficiency_notes"][0].get<std::string>().find("database not used"), std::string::npos)
      << j["efficiency_notes"];
  EXPECT_EQ(j["summary"]["all"]["count"], 2);
}


// Zero and negative measured figures, and counts past INT_MAX, are refused with line and column
// (they used to give +inf % / -111 % errors, a memory figure read as "not measured", a GPU count
// of -2147483648); an empty cell is still "not given".
TEST(ValidateCli, NonPositiveMeasuredValuesAndHugeCountsAreRefused) {
  const std::pair<const char*, const char*> bad[] = {{"step_time_s", "0"},
                                                     {"step_time_s", "-3"},
                                                     {"peak_mem_reserved_gib", "-5"},
                                                     {"num_gpus", "3000000000"}};
  for (const auto& [column, value] : bad) {
    const std::string csv = fixture_with({{column, value}}, "validate_bad_value.csv");
    const Out r = calisim("validate --runs " + csv);
    EXPECT_EQ(r.code, 2) << column << "=" << value << "\n" << r.text;
    EXPECT_NE(r.text.find(csv + ": line 2, column " + column + ": expected"), std::string::npos) << r.text;
    EXPECT_NE(r.text.find(std::string("got '") + value + "'"), std::string::npos) << r.text;
  }
  const Out empty = calisim("validate --runs " + fixture_with({{"peak_mem_reserved_gib", ""}}, "validate_empty.csv"));
  EXPECT_EQ(empty.code, 0) << empty.text;
  // The SimuMax table's measured and SimuMax figures likewise.
  const std::string simumax = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/simumax_a100_pcie.csv";
  std::ifstream in(simumax);
  std::string header, row;
  std::getline(in, header);
  std::getline(in, row);
  const std::vector<std::string> names = csv_cells(header);
  for (const char* column : {"measured_tflops_per_gpu", "simumax_tflops_per_gpu"}) {
    std::vector<std::string> cells = csv_cells(row);
    cells[static_cast<std::size_t>(std::find(names.begin(), names.end(), column) - names.begin())] = "0";
    std::string edited;
    for (std::size_t i = 0; i < cells.size(); ++i) edited += (i ? "," : "") + cells[i];
    const std::string csv = ::testing::TempDir() + "validate_simumax_zero.csv";
    std::ofstream(csv) << header << "\n" << edited << "\n";
    const Out r = calisim("validate --runs " + csv);
    EXPECT_EQ(r.code, 2) << r.text;
    EXPECT_NE(r.text.find(std::string("line 2, column ") + column + ": expected a positive number"), std::string::npos)
        << r.text;
  }
}

// Output directories under a regular file are bad input (exit 2, the path named), not an
// internal filesystem error (exit 1).
TEST(ValidateCli, OutputDirectoryUnderARegularFileIsAnInputError) {
  const std::string file = ::testing::TempDir() + "validate_plain_file";
  std::ofstream(file) << "x\n";
  const Out dump = calisim("validate --runs " + kFixture + " --dump-inputs " + file + "/x");
  EXPECT_EQ(dump.code, 2) << dump.text;
  EXPECT_NE(dump.text.find(file + "/x: --dump-inputs: cannot create the directory"), std::string::npos) << dump.text;
  const Out fit = calisim("validate --runs " + kFixture + " --fit-system all --fit-out " + file + "/d");
  EXPECT_EQ(fit.code, 2) << fit.text;
  EXPECT_NE(fit.text.find(file + "/d: --fit-out: cannot create the directory"), std::string::npos) << fit.text;
  EXPECT_EQ(fit.text.find("internal error"), std::string::npos) << fit.text;
}

// Nothing simulated is an error, not an empty report with exit 0: a header-only file, a file
// whose rows all fail, and a --set override that breaks every row (said as the override's fault).
TEST(ValidateCli, NothingSimulatedIsAnError) {
  std::ifstream in(kFixture);
  std::string header, row;
  std::getline(in, header);
  const std::string only_header = ::testing::TempDir() + "validate_header_only.csv";
  std::ofstream(only_header) << header << "\n";
  const Out h = calisim("validate --runs " + only_header);
  EXPECT_EQ(h.code, 2) << h.text;
  EXPECT_NE(h.text.find("no data rows"), std::string::npos) << h.text;

  const Out bogus = calisim("validate --runs " + kFixture + " --set system.bogus=1");
  EXPECT_EQ(bogus.code, 2) << bogus.text;
  EXPECT_NE(bogus.text.find("--set system.bogus=1: no row of " + kFixture + " could be simulated with these overrides"),
            std::string::npos)
      << bogus.text;
  EXPECT_NE(bogus.text.find("bogus: unknown field"), std::string::npos) << bogus.text;
  // The JSON API (calisim.validate) gets the same error.
  EXPECT_EQ(calisim("validate --json --runs " + kFixture + " --set system.bogus=1").code, 2);

  // Only the row validate cannot simulate (R0145, sliding-window attention).
  const std::string unsupported = ::testing::TempDir() + "validate_unsupported.csv";
  std::string line;
  std::ofstream out(unsupported);
  out << header << "\n";
  while (std::getline(in, line)) {
    if (line.rfind("R0145,", 0) == 0) out << line << "\n";
  }
  out.close();
  const Out u = calisim("validate --runs " + unsupported);
  EXPECT_EQ(u.code, 2) << u.text;
  EXPECT_NE(u.text.find("none of the 1 rows could be simulated; the first: R0145"), std::string::npos) << u.text;
}

// A UTF-8 byte-order mark (spreadsheet "CSV UTF-8") is not part of the first column's name: the
// file is still the published format (it used to be taken for SimuMax's and refused).
TEST(ValidateCli, ByteOrderMarkIsSkipped) {
  const std::string bom = ::testing::TempDir() + "validate_bom.csv";
  std::ofstream(bom) << "\xEF\xBB\xBF" << read_text(kFixture);
  const Out r = calisim("validate --runs " + bom + " --json", false);
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_EQ(nlohmann::json::parse(r.text)["rows"].size(), 3u);
}

}  // namespace

namespace {

const std::string kPublicRuns = std::string(CALISIM_TEST_DATA_DIR) + "/../../calibration/data/measured_runs.csv";

// `simulate --run FILE:ID`: the row as validate maps and scores it — the same simulated step and
// error as validate's, the inferred settings listed, the measured step beside the simulation; on
// another --system it says the comparison is not a validation; bad references exit 2.
TEST(SimulateRun, APublishedRowSimulatesAsValidateScoresIt) {
  const Out v = calisim("validate --runs " + kPublicRuns + " --json", false);
  ASSERT_EQ(v.code, 0);
  const nlohmann::json vj = nlohmann::json::parse(v.text);
  nlohmann::json row;
  for (const auto& r : vj["rows"]) {
    if (r["run_id"] == "R0146") row = r;
  }
  ASSERT_TRUE(row.is_object());
  const Out s = calisim("simulate --run " + kPublicRuns + ":R0146 --json", false);
  ASSERT_EQ(s.code, 0) << s.text;
  const nlohmann::json sj = nlohmann::json::parse(s.text);
  EXPECT_NEAR(sj["cost"]["duration_time_per_iter_s"].get<double>(), row["simulated_step_s"].get<double>(), 1e-9);
  EXPECT_EQ(sj["measured_run"]["run_id"], "R0146");
  EXPECT_NEAR(sj["measured_run"]["measured_step_s"].get<double>(), row["measured_step_s"].get<double>(), 1e-9);
  EXPECT_NEAR(sj["measured_run"]["step_error"].get<double>(), row["step_error"].get<double>(), 1e-12);
  EXPECT_EQ(sj["measured_run"]["system_replaced"], false);
  EXPECT_EQ(sj["inferred"], row["inferred"]);
  EXPECT_FALSE(sj["inferred"].empty());

  const Out text = calisim("simulate --run " + kPublicRuns + ":R0146 --no-ops");
  ASSERT_EQ(text.code, 0) << text.text;
  EXPECT_NE(text.text.find("settings inferred for R0146"), std::string::npos) << text.text;
  EXPECT_NE(text.text.find("measured (R0146 on b200, from tokens_per_sec_per_gpu): 28.19 s per step"),
            std::string::npos)
      << text.text;

  const Out other = calisim("simulate --run " + kPublicRuns + ":R0146 --system gb200-nvl72 --no-ops");
  ASSERT_EQ(other.code, 0) << other.text;
  EXPECT_NE(other.text.find("system gb200-nvl72 instead of the row's b200"), std::string::npos) << other.text;
  EXPECT_NE(other.text.find("not a validation"), std::string::npos) << other.text;

  const auto refused = [](const std::string& args, const std::string& what) {
    const Out r = calisim(args);
    EXPECT_EQ(r.code, 2) << args;
    EXPECT_NE(r.text.find(what), std::string::npos) << r.text;
  };
  refused("simulate --run " + kPublicRuns + ":R9999", "no row 'R9999'");
  refused("simulate --run " + kPublicRuns + ":R0126", "row R0126: not simulated: ");
  refused("simulate --run R0146", "expected FILE:ID");
  refused("simulate --run " + kPublicRuns + ":R0146 --model llama3-8b", "drop --model");
  refused("simulate --model llama3-8b --strategy llama3-8b-8gpu", "--system: required");
}

// A row that publishes no step time, tokens/s or TFLOP/s simulates on its own and says why there
// is no comparison (it used to print nothing about it).
TEST(SimulateRun, ARowWithoutAMeasurementSaysSo) {
  std::ifstream in(kPublicRuns);
  std::string header, line, r0001;
  std::getline(in, header);
  while (std::getline(in, line)) {
    if (line.rfind("R0001,", 0) == 0) r0001 = line;
  }
  ASSERT_FALSE(r0001.empty());
  // R0001 publishes tflops_per_gpu (and mfu_pct); blank every measured column by its position.
  std::vector<std::string> names, cells;
  for (std::string::size_type a = 0, b; a <= header.size(); a = b + 1) {
    b = header.find(',', a);
    if (b == std::string::npos) b = header.size();
    names.push_back(header.substr(a, b - a));
  }
  std::stringstream row(r0001);
  std::string cell;
  while (std::getline(row, cell, ',')) cells.push_back(cell);
  ASSERT_GE(cells.size(), names.size() - 1) << "R0001 has no quoted commas before its last column";
  for (std::size_t i = 0; i < names.size() && i < cells.size(); ++i) {
    if (names[i] == "step_time_s" || names[i] == "tokens_per_sec_per_gpu" || names[i] == "tflops_per_gpu" ||
        names[i] == "mfu_pct" || names[i] == "hfu_pct" || names[i] == "tokens_per_sec_total" ||
        names[i] == "derived_tokens_per_sec_per_gpu") {
      cells[i].clear();
    }
  }
  std::string blanked;
  for (std::size_t i = 0; i < cells.size(); ++i) blanked += (i ? "," : "") + cells[i];
  const std::string file = ::testing::TempDir() + "simulate_run_unmeasured.csv";
  std::ofstream(file) << header << "\n" << blanked << "\n";
  const Out r = calisim("simulate --run " + file + ":R0001 --no-ops");
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("R0001 is not compared with a measurement: no step time, tokens/s/GPU or TFLOP/s/GPU"),
            std::string::npos)
      << r.text;
  EXPECT_EQ(r.text.find("measured (R0001"), std::string::npos) << r.text;
}

}  // namespace
