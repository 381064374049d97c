// The NCCL algorithm / protocol model (simulator/collective_algorithms.h), its topology inputs
// (simulator/topology.h, the system parser) and the published NCCL figures it must reproduce
// (tests/data/nccl/published_figures.csv, docs/comm.md).
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "core/error.h"
#include "simulator/collective_algorithms.h"
#include "simulator/comm_model.h"
#include "simulator/config_loader.h"
#include "simulator/contention.h"
#include "simulator/default_efficiency.h"
#include "test_support.h"

namespace calisim {
namespace {

constexpr std::int64_t kGiB = std::int64_t{1} << 30;

CollectiveChoiceMask only(CollAlgo a) {
  CollectiveChoiceMask m;
  m.algos = static_cast<std::uint8_t>(1u << static_cast<int>(a));
  return m;
}

CollectiveCost cost(const SystemConfig& sys, CollectiveOp op, std::int64_t bytes, int n, int k,
                    CollectiveChoiceMask mask = {}) {
  const DefaultEfficiencyModel eff(sys);
  return collective_cost({op, bytes, n, k, DType::bf16}, sys, eff, mask);
}

struct Figure {
  std::string id, system, op, algo, metric, source;
  int ranks = 0, per_node = 0, nics = 0;
  std::int64_t bytes = 0;
  double published = 0;
};

std::vector<Figure> read_figures() {
  std::ifstream in(std::string(CALISIM_TEST_DATA_DIR) + "/nccl/published_figures.csv");
  std::vector<Figure> out;
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::size_t pos = 0;
    for (int i = 0; i < 10; ++i) {
      const std::size_t comma = line.find(',', pos);
      f.push_back(line.substr(pos, comma - pos));
      pos = comma + 1;
    }
    Figure g;
    g.id = f[0], g.system = f[1], g.op = f[2], g.ranks = std::stoi(f[3]), g.per_node = std::stoi(f[4]);
    g.nics = std::stoi(f[5]), g.algo = f[6], g.bytes = std::stoll(f[7]), g.metric = f[8];
    g.published = std::stod(f[9]);
    g.source = line.substr(pos);
    out.push_back(g);
  }
  return out;
}

TEST(CommAlgorithms, ReproducesPublishedNcclFiguresWithin10Percent) {
  const std::vector<Figure> figures = read_figures();
  ASSERT_GE(figures.size(), 10u);
  std::cout << "figure, published, calisim, error\n";
  for (const Figure& g : figures) {
    SystemConfig sys = testing_support::shipped_system(g.system);
    if (g.nics > 0) sys.nics_per_node = g.nics;
    CollectiveChoiceMask mask;
    if (!g.algo.empty()) {
      std::string_view bad;
      mask.algos = parse_algo_list(g.algo, &bad).value();
    }
    const CollectiveCost c = cost(sys, parse_collective_op(g.op), g.bytes, g.ranks, g.per_node, mask);
    ASSERT_EQ(g.metric, "busbw_gb_s") << g.id;
    const double err = (c.busbw_gb_s - g.published) / g.published;
    std::cout << g.id << ", " << g.published << ", " << c.busbw_gb_s << ", " << 100 * err << "%\n";
    EXPECT_LE(std::fabs(err), 0.10) << g.id << ": published " << g.published << " GB/s, model " << c.busbw_gb_s
                                    << " (" << to_string(c.algo) << "/" << to_string(c.proto) << ")";
  }
}

// The choice is the fastest applicable (algorithm, protocol), as NCCL's tuner picks it.
TEST(CommAlgorithms, SelectionIsTheFastestApplicablePair) {
  for (const char* name : {"h100-sxm", "a100-sxm-80g", "a100-pcie-80g", "gb200-nvl72"}) {
    const SystemConfig sys = testing_support::shipped_system(name);
    for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::all_to_all}) {
      for (auto [n, k] : {std::pair{8, 8}, std::pair{16, 8}, std::pair{64, 1}, std::pair{512, 4}}) {
        for (std::int64_t b = 1024; b <= 4 * kGiB; b *= 8) {
          const CollectiveSetting c = collective_setting({op, b, n, k, DType::bf16}, sys);
          double best = -1;
          for (int a = 0; a < kCollAlgoCount; ++a) {
            for (int p = 0; p < kCollProtoCount; ++p) {
              const double t = algorithm_time_s(c, static_cast<CollAlgo>(a), static_cast<CollProto>(p));
              if (t >= 0 && (best < 0 || t < best)) best = t;
            }
          }
          const AlgorithmChoice ch = select_algorithm(c);
          EXPECT_GT(best, 0) << name;
          EXPECT_DOUBLE_EQ(ch.time_s, best) << name << " " << to_string(op) << " n=" << n << " bytes=" << b;
          EXPECT_DOUBLE_EQ(algorithm_time_s(c, ch.algo, ch.proto), ch.time_s);
        }
      }
    }
  }
}

TEST(CommAlgorithms, SelectionBoundaries) {
  const SystemConfig h100 = testing_support::shipped_system("h100-sxm");
  // One NVSwitch domain: LL for small messages, NVLS once bandwidth matters.
  EXPECT_EQ(cost(h100, CollectiveOp::all_reduce, 1024, 8, 8).proto, CollProto::ll);
  EXPECT_EQ(cost(h100, CollectiveOp::all_reduce, 4 * kGiB, 8, 8).algo, CollAlgo::nvls);
  // The switch from ring/LL to NVLS happens once: where NVLS's 25 us latency is paid back.
  int switches = 0;
  CollAlgo last = cost(h100, CollectiveOp::all_reduce, 1024, 8, 8).algo;
  std::int64_t switch_at = 0;
  for (std::int64_t b = 2048; b <= 4 * kGiB; b *= 2) {
    const CollAlgo a = cost(h100, CollectiveOp::all_reduce, b, 8, 8).algo;
    if (a != last) ++switches, switch_at = b;
    last = a;
  }
  EXPECT_EQ(switches, 1);
  EXPECT_GE(switch_at, std::int64_t{1} << 20);
  EXPECT_LE(switch_at, std::int64_t{8} << 20);
  // Several domains: the log-depth tree for small messages, NVLS-tree for large ones.
  EXPECT_EQ(cost(h100, CollectiveOp::all_reduce, 1024, 64, 8).algo, CollAlgo::tree);
  EXPECT_EQ(cost(h100, CollectiveOp::all_reduce, 4 * kGiB, 64, 8).algo, CollAlgo::nvls_tree);
  // Without NVLS (A100) large multi-node all-reduces run on the ring, small ones on the tree.
  const SystemConfig a100 = testing_support::shipped_system("a100-sxm-80g");
  EXPECT_EQ(cost(a100, CollectiveOp::all_reduce, 4 * kGiB, 64, 8).algo, CollAlgo::ring);
  EXPECT_EQ(cost(a100, CollectiveOp::all_reduce, 1024, 64, 8).algo, CollAlgo::tree);
  // All-gather has no tree: ring (or NVLS) only.
  EXPECT_EQ(cost(a100, CollectiveOp::all_gather, 1024, 64, 8).algo, CollAlgo::ring);
  // PCIe-only nodes: no LL128 and no NVLS, whatever the size.
  const SystemConfig pcie = testing_support::shipped_system("a100-pcie-80g");
  for (std::int64_t b = 1024; b <= 4 * kGiB; b *= 4) {
    const CollectiveCost c = cost(pcie, CollectiveOp::all_reduce, b, 8, 8);
    EXPECT_NE(c.proto, CollProto::ll128);
    EXPECT_NE(c.algo, CollAlgo::nvls);
  }
  // In-network reduction: CollNet takes large multi-node all-reduces.
  SystemConfig sharp = a100;
  sharp.topology.in_network_reduction = true;
  const CollAlgo big = cost(sharp, CollectiveOp::all_reduce, 4 * kGiB, 64, 8).algo;
  EXPECT_TRUE(big == CollAlgo::collnet_direct || big == CollAlgo::collnet_chain) << to_string(big);
  // All-to-all and send/recv are point-to-point.
  EXPECT_EQ(cost(h100, CollectiveOp::all_to_all, kGiB, 64, 8).algo, CollAlgo::p2p);
  EXPECT_EQ(cost(h100, CollectiveOp::send_recv, kGiB, 2, 1).algo, CollAlgo::p2p);
}

TEST(CommAlgorithms, StrategyMaskOverridesTheChoice) {
  const SystemConfig h100 = testing_support::shipped_system("h100-sxm");
  EXPECT_EQ(cost(h100, CollectiveOp::all_reduce, 4 * kGiB, 8, 8, only(CollAlgo::ring)).algo, CollAlgo::ring);
  EXPECT_GT(cost(h100, CollectiveOp::all_reduce, 4 * kGiB, 8, 8, only(CollAlgo::ring)).time_s,
            cost(h100, CollectiveOp::all_reduce, 4 * kGiB, 8, 8).time_s);
  CollectiveChoiceMask ll;
  ll.protos = 1u << static_cast<int>(CollProto::ll);
  EXPECT_EQ(cost(h100, CollectiveOp::all_reduce, 4 * kGiB, 8, 8, ll).proto, CollProto::ll);
  // NCCL_ALGO=tree inside one node runs the all-reduce over the intra-node chain: tree busbw =
  // 0.92 x the scale-up bus, algbw = busbw / 2, against the ring's busbw · n / 2(n-1); at 4 GiB
  // (latency negligible) the chain takes (8/14) / 0.46 = 1.242 x the ring's time. Not a default
  // candidate inside one node (NCCL builds no tree there on its own).
  const auto tree8 = cost(h100, CollectiveOp::all_reduce, 4 * kGiB, 8, 8, only(CollAlgo::tree));
  EXPECT_EQ(tree8.algo, CollAlgo::tree);
  EXPECT_NEAR(tree8.time_s / cost(h100, CollectiveOp::all_reduce, 4 * kGiB, 8, 8, only(CollAlgo::ring)).time_s,
              (8.0 / 14.0) / 0.46, 0.005);
  EXPECT_NE(cost(h100, CollectiveOp::all_reduce, 1 << 20, 2, 2).algo, CollAlgo::tree);
  // NCCL_ALGO=tree does not exist for all-gather: the choice falls back to all algorithms.
  EXPECT_EQ(cost(h100, CollectiveOp::all_gather, kGiB, 16, 8, only(CollAlgo::tree)).algo, CollAlgo::ring);
  // NCCL_ALGO does not apply to point-to-point.
  EXPECT_EQ(cost(h100, CollectiveOp::all_to_all, kGiB, 16, 8, only(CollAlgo::ring)).algo, CollAlgo::p2p);

  std::string_view bad;
  const auto not_nvls = parse_algo_list("^NVLS,nvls_tree", &bad);
  ASSERT_TRUE(not_nvls);
  CollectiveChoiceMask m;
  m.algos = *not_nvls;
  EXPECT_FALSE(m.allows(CollAlgo::nvls));
  EXPECT_FALSE(m.allows(CollAlgo::nvls_tree));
  EXPECT_TRUE(m.allows(CollAlgo::ring));
  EXPECT_EQ(parse_algo_list("collnet", &bad).value(),
            (1u << static_cast<int>(CollAlgo::collnet_direct)) | (1u << static_cast<int>(CollAlgo::collnet_chain)));
  EXPECT_FALSE(parse_algo_list("ring,bogus", &bad));
  EXPECT_EQ(bad, "bogus");
  EXPECT_FALSE(parse_algo_list("p2p", &bad));
  EXPECT_EQ(parse_proto_list("ll128, simple", &bad).value(), 0b110);
}

TEST(CommAlgorithms, HierarchicalDecompositionVolumes) {
  // All-reduce of S over 2 domains of 8: reduce-scatter + all-gather inside (2·7/8·S), the 1/8
  // shard all-reduced across the 2 domains (2·1/2·S/8).
  const HierarchicalVolumes v = hierarchical_volumes(CollectiveOp::all_reduce, 1600, 16, 8);
  EXPECT_DOUBLE_EQ(v.intra_bytes, 2800);
  EXPECT_DOUBLE_EQ(v.inter_bytes, 200);
  // For every op the two levels move exactly the flat ring's wire bytes per rank.
  for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::all_gather, CollectiveOp::reduce_scatter,
                          CollectiveOp::all_to_all}) {
    for (auto [n, k] : {std::pair{16, 8}, std::pair{64, 8}, std::pair{72, 72}, std::pair{1024, 4}, std::pair{8, 1}}) {
      const HierarchicalVolumes h = hierarchical_volumes(op, 1e9, n, k);
      EXPECT_NEAR(h.intra_bytes + h.inter_bytes, wire_bytes_per_rank(op, 1e9, n), 1e-3) << to_string(op) << " " << n;
      if (k == n) {
        EXPECT_DOUBLE_EQ(h.inter_bytes, 0);
      }
      if (k == 1) {
        EXPECT_DOUBLE_EQ(h.intra_bytes, 0);
      }
    }
  }
  // All-to-all: peers outside the domain are (n - k)/n of the buffer.
  EXPECT_DOUBLE_EQ(hierarchical_volumes(CollectiveOp::all_to_all, 1600, 16, 8).inter_bytes, 800);
}

// The chosen time is continuous and non-decreasing in the message size (the minimum of
// continuous per-algorithm times); only the algorithm label jumps at a switch.
TEST(CommAlgorithms, TimeIsContinuousInMessageSize) {
  for (const char* name : {"h100-sxm", "a100-sxm-80g", "a100-pcie-80g", "gb200-nvl72"}) {
    const SystemConfig sys = testing_support::shipped_system(name);
    for (CollectiveOp op : {CollectiveOp::all_reduce, CollectiveOp::reduce_scatter, CollectiveOp::all_to_all,
                            CollectiveOp::send_recv}) {
      for (auto [n, k] : {std::pair{8, 8}, std::pair{16, 8}, std::pair{256, 8}, std::pair{2, 1}}) {
        if (op == CollectiveOp::send_recv && n != 2) continue;
        double prev = cost(sys, op, 1024, n, k).time_s;
        for (double b = 1024 * 1.01; b < 4.0 * kGiB; b *= 1.01) {
          const double t = cost(sys, op, static_cast<std::int64_t>(b), n, k).time_s;
          ASSERT_GE(t, prev * (1 - 1e-12)) << name << " " << to_string(op) << " n=" << n << " bytes=" << b;
          ASSERT_LE(t, prev * 1.0101) << name << " " << to_string(op) << " n=" << n << " bytes=" << b;
          prev = t;
        }
      }
    }
  }
}

// nccl-tests' all-to-all busbw over N domains is about N/(N-1) × the per-GPU network bandwidth:
// 2x on 2 nodes, 1x at scale (sjeaugey, nccl-tests #130; profiling_notes.md §2).
TEST(CommAlgorithms, AllToAllBusbwInterpretation) {
  const SystemConfig sys = testing_support::shipped_system("h100-sxm");
  const double nic = nic_share_gb_s(sys) * sys.scale_out.efficiency[static_cast<int>(CollectiveOp::all_to_all)];
  const double two = cost(sys, CollectiveOp::all_to_all, 4 * kGiB, 16, 8).busbw_gb_s / nic;
  const double many = cost(sys, CollectiveOp::all_to_all, 4 * kGiB, 1024, 8).busbw_gb_s / nic;
  EXPECT_NEAR(two, 15.0 / 8, 0.01);
  EXPECT_NEAR(many, 1.0, 0.02);
}

TEST(CommAlgorithms, FabricOversubscriptionAndPxn) {
  SystemConfig sys = testing_support::shipped_system("h100-sxm");
  const double ring = cost(sys, CollectiveOp::all_gather, 4 * kGiB, 64, 8, only(CollAlgo::ring)).time_s;
  const double a2a = cost(sys, CollectiveOp::all_to_all, 4 * kGiB, 64, 8).time_s;
  sys.topology.oversubscription = 2;
  // Rail-optimized: rings stay on their rails; all-to-all too thanks to PXN.
  EXPECT_DOUBLE_EQ(cost(sys, CollectiveOp::all_gather, 4 * kGiB, 64, 8, only(CollAlgo::ring)).time_s, ring);
  EXPECT_DOUBLE_EQ(cost(sys, CollectiveOp::all_to_all, 4 * kGiB, 64, 8).time_s, a2a);
  sys.topology.pxn = false;
  EXPECT_GT(cost(sys, CollectiveOp::all_to_all, 4 * kGiB, 64, 8).time_s, 1.9 * a2a);
  // Fat-tree 2:1: every cross-node byte shares the spine.
  sys.topology.pxn = true;
  sys.topology.fabric = FabricKind::fat_tree;
  EXPECT_GT(cost(sys, CollectiveOp::all_gather, 4 * kGiB, 64, 8, only(CollAlgo::ring)).time_s, 1.9 * ring);
}

// A measured (or interpolated) efficiency is the achieved busbw over link_for's link: it
// reproduces the measured time, whatever the formula says.
class FixedEfficiency final : public EfficiencyModel {
 public:
  explicit FixedEfficiency(Efficiency e) : e_(e) {}
  Efficiency gemm(const GemmKey&) const override { return e_; }
  Efficiency attention(const AttentionKey&) const override { return e_; }
  Efficiency memory_op(const MemoryOpKey&) const override { return e_; }
  Efficiency collective(const CollectiveKey&) const override { return e_; }

 private:
  Efficiency e_;
};

TEST(CommAlgorithms, MeasuredEfficiencyDominates) {
  const SystemConfig sys = testing_support::shipped_system("h100-sxm");
  for (EfficiencySource src : {EfficiencySource::measured, EfficiencySource::interpolated}) {
    const FixedEfficiency eff({0.5, src});
    for (const CollectiveKey& k : {CollectiveKey{CollectiveOp::all_reduce, 1 << 20, 8, 8, DType::bf16},
                                   CollectiveKey{CollectiveOp::all_gather, std::int64_t{1} << 30, 64, 8, DType::bf16}}) {
      const CollectiveCost c = collective_cost(k, sys, eff);
      const double expected = wire_bytes_per_rank(k.op, static_cast<double>(k.bytes), k.ranks) /
                              (link_for(k, sys).gb_s * 1e9 * 0.5);
      EXPECT_DOUBLE_EQ(c.time_s, expected);
      EXPECT_NEAR(c.busbw_gb_s, link_for(k, sys).gb_s * 0.5, 1e-9);
      EXPECT_EQ(c.efficiency.source, src);
    }
  }
}

TEST(CommContention, NicSharingChargesTheOverlapOnce) {
  EXPECT_DOUBLE_EQ(nic_contended_s(2.0, 0.0), 2.0);
  EXPECT_DOUBLE_EQ(nic_contended_s(2.0, 0.5), 2.5);   // half rate during the 0.5 s of other traffic
  EXPECT_DOUBLE_EQ(nic_contended_s(2.0, 10.0), 4.0);  // at most the collective's own time again
  EXPECT_DOUBLE_EQ(nic_contended_s(2.0, -1.0), 2.0);
  EXPECT_TRUE(crosses_nics(64, 8));
  EXPECT_FALSE(crosses_nics(8, 8));
  EXPECT_FALSE(crosses_nics(1, 1));
}

nlohmann::json h100_json() {
  return read_json_file(std::string(CALISIM_CONFIG_DIR) + "/systems/h100-sxm.json");
}

void expect_error(const nlohmann::json& doc, const std::string& where_part) {
  try {
    parse_system(doc, "sys.json");
    ADD_FAILURE() << "expected an InputError at " << where_part;
  } catch (const InputError& e) {
    EXPECT_EQ(e.file(), "sys.json");
    EXPECT_NE(e.where().find(where_part), std::string::npos) << e.what();
  }
}

TEST(CommTopology, ParsesFieldsAndDefaults) {
  const SystemConfig h100 = parse_system(h100_json(), "h100.json");
  EXPECT_TRUE(h100.topology.nvls);
  EXPECT_EQ(h100.topology.scale_up_kind, ScaleUpKind::nvswitch);
  EXPECT_EQ(h100.topology.arch, NcclArch::hopper);
  EXPECT_EQ(testing_support::shipped_system("a100-pcie-80g").topology.scale_up_kind, ScaleUpKind::pcie);
  EXPECT_EQ(testing_support::shipped_system("gb200-nvl72").topology.arch, NcclArch::blackwell);
  // A file without the topology fields gets the documented defaults.
  nlohmann::json doc = h100_json();
  for (const char* k : {"kind", "nvls"}) doc["network"]["scale_up"].erase(k);
  for (const char* k : {"fabric", "oversubscription", "in_network_reduction", "pxn"}) doc["network"]["scale_out"].erase(k);
  doc["network"].erase("nccl_arch");
  const Topology t = parse_system(doc, "old.json").topology;
  const Topology d;
  EXPECT_EQ(t.scale_up_kind, d.scale_up_kind);
  EXPECT_EQ(t.nvls, false);
  EXPECT_EQ(t.fabric, FabricKind::rail_optimized);
  EXPECT_DOUBLE_EQ(t.oversubscription, 1.0);
  EXPECT_FALSE(t.in_network_reduction);
  EXPECT_TRUE(t.pxn);
  EXPECT_EQ(t.arch, NcclArch::hopper);
}

TEST(CommTopology, InvalidValuesNameTheField) {
  nlohmann::json doc = h100_json();
  doc["network"]["scale_up"]["kind"] = "nvswitch2";
  expect_error(doc, "network.scale_up.kind");
  doc = h100_json();
  doc["network"]["scale_up"]["kind"] = "pcie";  // nvls stays true
  expect_error(doc, "network.scale_up.nvls");
  doc = h100_json();
  doc["network"]["scale_out"]["oversubscription"] = 0.5;
  expect_error(doc, "network.scale_out.oversubscription");
  doc = h100_json();
  doc["network"]["scale_out"]["fabric"] = "torus";
  expect_error(doc, "network.scale_out.fabric");
  doc = h100_json();
  doc["network"]["scale_out"]["pxn"] = "yes";
  expect_error(doc, "network.scale_out.pxn");
  doc = h100_json();
  doc["network"]["nccl_arch"] = "kepler";
  expect_error(doc, "network.nccl_arch");
}

// Two-level PCIe boxes: the shipped a100-pcie-80g names its switches; the fields need kind pcie,
// come together, and the switch size divides the domain.
TEST(CommTopology, PcieSwitchFieldsParseAndValidate) {
  const nlohmann::json a100 = read_json_file(std::string(CALISIM_CONFIG_DIR) + "/systems/a100-pcie-80g.json");
  const Topology t = parse_system(a100, "a100.json").topology;
  EXPECT_EQ(t.pcie_switch_gpus, 4);
  EXPECT_DOUBLE_EQ(t.pcie_bridge_gb_s, 16.3);
  EXPECT_EQ(parse_system(h100_json(), "h100.json").topology.pcie_switch_gpus, 0);  // absent: one level
  nlohmann::json doc = h100_json();
  doc["network"]["scale_up"]["pcie_switch_gpus"] = 4;
  doc["network"]["scale_up"]["pcie_bridge_gb_s"] = 16;
  expect_error(doc, "network.scale_up.pcie_switch_gpus");  // kind nvswitch
  doc = a100;
  doc["network"]["scale_up"]["pcie_switch_gpus"] = 3;
  expect_error(doc, "network.scale_up.pcie_switch_gpus");  // does not divide 8
  doc = a100;
  doc["network"]["scale_up"]["pcie_switch_gpus"] = 0;
  expect_error(doc, "network.scale_up.pcie_switch_gpus");
  doc = a100;
  doc["network"]["scale_up"]["pcie_bridge_gb_s"] = 0;
  expect_error(doc, "network.scale_up.pcie_bridge_gb_s");
  doc = a100;
  doc["network"]["scale_up"].erase("pcie_bridge_gb_s");
  expect_error(doc, "network.scale_up.pcie_bridge_gb_s");
  doc = a100;
  doc["network"]["scale_up"].erase("pcie_switch_gpus");
  expect_error(doc, "network.scale_up.pcie_switch_gpus");
}

TEST(CommTopology, StrategyNcclOverrides) {
  const ModelConfig model = testing_support::shipped_model("llama3-8b");
  const StrategyConfig s = testing_support::strategy_from_json(
      R"({"seq_len": 4096, "micro_batch_size": 1, "micro_batch_num": 4, "world_size": 8, "tp_size": 8,
          "nccl_algo": "ring,tree", "nccl_proto": "^LL"})",
      model);
  EXPECT_TRUE(s.nccl.allows(CollAlgo::ring));
  EXPECT_FALSE(s.nccl.allows(CollAlgo::nvls));
  EXPECT_FALSE(s.nccl.allows(CollProto::ll));
  EXPECT_TRUE(s.nccl.allows(CollProto::simple));
  for (const char* bad : {R"({"seq_len": 4096, "micro_batch_num": 1, "world_size": 8, "nccl_algo": "ring,foo"})",
                          R"({"seq_len": 4096, "micro_batch_num": 1, "world_size": 8, "nccl_proto": "^LL,LL128,Simple"})"}) {
    try {
      parse_strategy(nlohmann::json::parse(bad), "s.json");
      ADD_FAILURE() << bad;
    } catch (const InputError& e) {
      EXPECT_NE(e.where().find("nccl_"), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace calisim
