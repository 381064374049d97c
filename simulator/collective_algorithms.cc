#include "simulator/collective_algorithms.h"

#include <algorithm>
#include <array>
#include <cctype>

namespace calisim {

namespace {

// NCCL's tuning constants (NVIDIA/nccl src/graph/tuning.cc, 2.19-2.2x; docs/comm.md lists them).
// Index order of the algorithm axis is CollAlgo's; p2p borrows the ring row (an assumption: NCCL's
// table has no p2p row).
constexpr int kRing = 0, kTree = 1, kNvls = 2, kNvlsTree = 3, kCollnetDirect = 4, kCollnetChain = 5, kP2p = 6;
constexpr int kLL = 0, kLL128 = 1, kSimple = 2;
constexpr int kHwNvlink = 0, kHwPci = 1, kHwNet = 2;

using LatRow = std::array<double, kCollProtoCount>;
// Base latency per launch, µs.
constexpr std::array<LatRow, kCollAlgoCount> kBaseLatUs{{
    {6.6, 14.0, 8.4},  // ring
    {6.8, 14.0, 0.0},  // tree
    {0, 0, 0},         // nvls
    {0, 0, 0},         // nvls_tree
    {0, 0, 0},         // collnet_direct
    {0, 0, 0},         // collnet_chain
    {6.6, 14.0, 8.4},  // p2p (ring's)
}};
// Per-hop hardware latency, µs: [NVLink, PCI, network][algorithm][protocol].
constexpr std::array<std::array<LatRow, kCollAlgoCount>, 3> kHwLatUs{{
    {{{0.6, 1.9, 3.4}, {0.6, 1.25, 4.0}, {0, 0, 25.0}, {0, 0, 25.0}, {0, 0, 3.7}, {0, 0, 2.8}, {0.6, 1.9, 3.4}}},
    {{{1.0, 2.5, 5.7}, {1.0, 1.9, 4.0}, {0, 0, 0}, {0, 0, 0}, {0, 0, 3.7}, {0, 0, 2.8}, {1.0, 2.5, 5.7}}},
    {{{2.7, 4.0, 14.0}, {5.0, 8.5, 14.0}, {0, 0, 18.0}, {0, 0, 20.9}, {0, 0, 31.0}, {0, 0, 30.0}, {2.7, 4.0, 14.0}}},
}};
// LL protocol bus-bandwidth cap, GB/s, by architecture and node count (1, 2, >2); Blackwell = 2x Hopper.
constexpr std::array<std::array<double, 3>, 4> kLlMaxBwGbS{{
    {39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {141.0, 45.0, 35.0}, {282.0, 90.0, 70.0}}};
// NVLS efficiency by architecture (0 = no NVLS) and NCCL's (nChannels - 1) / nChannels with the
// 16 NVLS channels NCCL uses by default on Hopper (an assumption for other generations).
constexpr std::array<double, 4> kNvlsEfficiency{0.0, 0.0, 0.85, 0.74};
constexpr double kNvlsChannelFactor = 15.0 / 16.0;
constexpr double kCollnetArityUs = 0.4;  // CollNet Direct serialization per local rank
constexpr int kCollnetDirectMaxLocal = 8;

// Reciprocals computed at compile time: the selection runs on the hot path.
constexpr std::array<double, 3> kInvRingSimpleHopUs{1.0 / kHwLatUs[kHwNvlink][kRing][kSimple],
                                                    1.0 / kHwLatUs[kHwPci][kRing][kSimple],
                                                    1.0 / kHwLatUs[kHwNet][kRing][kSimple]};
constexpr std::array<std::array<double, 3>, 4> kInvLlMaxBw = [] {
  std::array<std::array<double, 3>, 4> r{};
  for (std::size_t a = 0; a < r.size(); ++a) {
    for (std::size_t b = 0; b < 3; ++b) r[a][b] = 1.0 / kLlMaxBwGbS[a][b];
  }
  return r;
}();

int log2_floor(int x) {
  int r = 0;
  while (x > 1) x >>= 1, ++r;
  return r;
}

bool reduces(CollectiveOp op) {
  return op == CollectiveOp::all_reduce || op == CollectiveOp::all_gather || op == CollectiveOp::reduce_scatter;
}

// Per-call quantities shared by every (algorithm, protocol) of one collective, with the divisions
// done once (the selection evaluates up to 21 pairs per collective on the simulator's hot path).
struct Prepared {
  const CollectiveSetting& c;
  int intra_hw;
  double intra_scale, inter_scale;  // tier latency / NCCL's ring-Simple hop latency of that hardware
  double inv_ll_cap;  // 1 / NCCL's LL bus-bandwidth cap, (GB/s)^-1
  explicit Prepared(const CollectiveSetting& s)
      : c(s),
        intra_hw(s.pcie ? kHwPci : kHwNvlink),
        intra_scale(s.intra_lat_us * kInvRingSimpleHopUs[intra_hw]),
        inter_scale(s.inter_lat_us * kInvRingSimpleHopUs[kHwNet]),
        inv_ll_cap(kInvLlMaxBw[static_cast<int>(s.arch)][s.domains <= 1 ? 0 : s.domains == 2 ? 1 : 2]) {}
  // Per-hop latency of algorithm a / protocol p on the scale-up (intra) or network (inter) tier,
  // scaled so that the ring/Simple entry equals the system file's tier latency.
  double intra_hop_us(int a, int p) const { return kHwLatUs[intra_hw][a][p] * intra_scale; }
  double inter_hop_us(int a, int p) const { return kHwLatUs[kHwNet][a][p] * inter_scale; }
  double nvls_bus_gb_s() const {
    return c.intra_bus_gb_s * kNvlsEfficiency[static_cast<int>(c.arch)] * kNvlsChannelFactor;
  }
};

using Times = std::array<double, kCollProtoCount>;  // per protocol; -1 = not applicable
constexpr Times kNone{-1, -1, -1};

// Ring: bytes / algbw with algbw = busbw · n / steps; LL halves the bus bandwidth (capped), LL128
// keeps 120/128 of it (NCCL uses 0.92; 0.7 with one rank per node). One division for all three.
Times ring_times(const Prepared& q) {
  const CollectiveSetting& c = q.c;
  if (!reduces(c.op)) return kNone;
  const int n = c.ranks, N = c.domains;
  const bool ar = c.op == CollectiveOp::all_reduce;
  const int steps = ar ? 2 * (n - 1) : n - 1;
  const int inter_steps = ar ? 2 * (N - 1) : N - 1;
  const double bus = N > 1 ? c.inter_bus_gb_s : c.intra_bus_gb_s;
  const double x = c.bytes * steps / (n * 1e9);  // seconds · GB/s
  const double t_simple = x / bus;
  Times t;
  for (int p = 0; p < kCollProtoCount; ++p) {
    const double lat = kBaseLatUs[kRing][p] + (steps - inter_steps) * q.intra_hop_us(kRing, p) +
                       inter_steps * q.inter_hop_us(kRing, p);
    double bw_t = t_simple;
    if (p == kLL) bw_t = std::max(2.0 * t_simple, x * q.inv_ll_cap);
    if (p == kLL128) bw_t = t_simple * (c.ranks_per_domain < 2 ? 1.0 / 0.7 : 1.0 / 0.92);
    t[p] = lat * 1e-6 + bw_t;
  }
  if (c.pcie) t[kLL128] = -1;
  return t;
}

// Double binary tree across domains (chains inside): busbw × 0.92, LL / 3.8 (capped), LL128 ×
// 120/128; algorithm bandwidth = busbw / 2.
// Tree all-reduce: a chain through the domain's ranks, and across domains NCCL's double binary
// tree. In one domain it is the chain alone (what NCCL_ALGO=Tree runs inside a node) on the
// scale-up bandwidth; NCCL's model then keeps 7/9 of the bus bandwidth with LL128, not 120/128.
Times tree_times(const Prepared& q) {
  const CollectiveSetting& c = q.c;
  if (c.op != CollectiveOp::all_reduce) return kNone;
  const bool multi = c.domains > 1;
  const double x = c.bytes * 2.0 / 1e9;
  const double t_simple = x / ((multi ? c.inter_bus_gb_s : c.intra_bus_gb_s) * 0.92);
  const double hops_intra = c.ranks_per_domain - 1, hops_inter = log2_floor(c.domains);
  Times t;
  for (int p = 0; p < kCollProtoCount; ++p) {
    const double lat = kBaseLatUs[kTree][p] + 2 * (hops_intra * q.intra_hop_us(kTree, p) + hops_inter * q.inter_hop_us(kTree, p));
    double bw_t = t_simple;
    if (p == kLL) bw_t = std::max(3.8 * t_simple, x * q.inv_ll_cap);
    if (p == kLL128) bw_t = t_simple * (multi ? 128.0 / 120.0 : 9.0 / 7.0);
    t[p] = lat * 1e-6 + bw_t;
  }
  if (c.pcie) t[kLL128] = -1;
  return t;
}

double nvls_time_s(const Prepared& q, int p) {
  const CollectiveSetting& c = q.c;
  if (!reduces(c.op) || p != kSimple || !c.nvls || c.pcie || c.domains != 1) return -1;
  const double bus = q.nvls_bus_gb_s();
  if (bus <= 0) return -1;
  // All-reduce: each GPU pushes its buffer into the switch and reads the reduced buffer back (S per
  // direction); all-gather / reduce-scatter move the ring's (n-1)/n·S.
  const double algbw = c.op == CollectiveOp::all_reduce ? bus : bus * c.ranks / (c.ranks - 1);
  return q.intra_hop_us(kNvls, p) * 1e-6 + c.bytes / (algbw * 1e9);
}

double nvls_tree_time_s(const Prepared& q, int p) {
  const CollectiveSetting& c = q.c;
  if (c.op != CollectiveOp::all_reduce || p != kSimple || !c.nvls || c.pcie || c.domains < 2) return -1;
  const double bus = q.nvls_bus_gb_s();
  if (bus <= 0) return -1;
  const HierarchicalVolumes v = hierarchical_volumes(c.op, c.bytes, c.ranks, c.ranks_per_domain);
  // NVLS reduces/broadcasts inside the domain while each GPU's NIC carries its 1/k shard between
  // domains; NCCL pipelines the two, so the slower one sets the pace.
  const double t_bw = std::max(c.bytes / (bus * 1e9), v.inter_bytes / (c.nic_gb_s * 1e9));
  const double lat = q.intra_hop_us(kNvlsTree, p) + 2 * log2_floor(c.domains) * q.inter_hop_us(kNvlsTree, p);
  return lat * 1e-6 + t_bw;
}

double collnet_time_s(const Prepared& q, int a, int p) {
  const CollectiveSetting& c = q.c;
  if (c.op != CollectiveOp::all_reduce || p != kSimple || !c.collnet || c.domains < 2) return -1;
  const int k = c.ranks_per_domain;
  if (a == kCollnetDirect && k > kCollnetDirectMaxLocal) return -1;
  const HierarchicalVolumes v = hierarchical_volumes(c.op, c.bytes, c.ranks, k);
  // The switch reduces: each GPU's NIC sends its 1/k shard once and receives the result once.
  const double t_bw = std::max(v.intra_bytes / (c.intra_bus_gb_s * 1e9), c.bytes / k / (c.nic_gb_s * 1e9));
  const double lat = a == kCollnetDirect ? 2 * (std::min(1, k - 1) * q.intra_hop_us(a, p) + (k - 1) * kCollnetArityUs) +
                                               q.inter_hop_us(a, p)
                                         : 2 * (k - 1) * q.intra_hop_us(a, p) + q.inter_hop_us(a, p);
  return lat * 1e-6 + t_bw;
}

// Point-to-point (all-to-all, send/recv): LL (half bandwidth, capped) or Simple; no LL128.
Times p2p_times(const Prepared& q) {
  const CollectiveSetting& c = q.c;
  if (reduces(c.op)) return kNone;
  const bool multi = c.domains > 1;
  double t_simple = 0, x = c.bytes / 1e9;
  if (c.op == CollectiveOp::send_recv) {
    t_simple = x / (c.ranks_per_domain >= 2 ? c.intra_bus_gb_s : c.nic_gb_s);
  } else {
    // All-to-all: S/n to each peer; peers in the domain over the scale-up link, the rest through
    // this GPU's NIC share (every GPU of the node sends at once). With PXN, a message for a GPU
    // on another rail first crosses NVLink to the local GPU on that rail.
    const HierarchicalVolumes v = hierarchical_volumes(c.op, c.bytes, c.ranks, c.ranks_per_domain);
    const int k = c.ranks_per_domain;
    const double nvlink_bytes = v.intra_bytes + (c.pxn && multi ? v.inter_bytes * (k - 1) / k : 0.0);
    t_simple = k > 1 ? nvlink_bytes / (c.intra_bus_gb_s * 1e9) : 0.0;
    if (multi) t_simple = std::max(t_simple, v.inter_bytes / (c.a2a_nic_gb_s * 1e9));
    x = (v.intra_bytes + v.inter_bytes) / 1e9;  // the LL cap applies to the bytes this GPU sends
  }
  Times t;
  for (int p : {kLL, kSimple}) {
    const double lat = kBaseLatUs[kP2p][p] + (multi ? q.inter_hop_us(kP2p, p) : q.intra_hop_us(kP2p, p));
    t[p] = lat * 1e-6 + (p == kLL ? std::max(2.0 * t_simple, x * q.inv_ll_cap) : t_simple);
  }
  t[kLL128] = -1;
  return t;
}

Times single(double t_simple) { return {-1, -1, t_simple}; }

Times algo_times(const Prepared& q, int a) {
  switch (static_cast<CollAlgo>(a)) {
    case CollAlgo::ring: return ring_times(q);
    case CollAlgo::tree: return tree_times(q);
    case CollAlgo::nvls: return single(nvls_time_s(q, kSimple));
    case CollAlgo::nvls_tree: return single(nvls_tree_time_s(q, kSimple));
    case CollAlgo::collnet_direct:
    case CollAlgo::collnet_chain: return single(collnet_time_s(q, a, kSimple));
    case CollAlgo::p2p: return p2p_times(q);
  }
  return kNone;
}

// Algorithms that can apply to the collective at all (the rest are never evaluated).
std::uint8_t candidate_algos(const CollectiveSetting& c) {
  if (!reduces(c.op)) return 1u << kP2p;
  std::uint8_t m = 1u << kRing;
  const bool ar = c.op == CollectiveOp::all_reduce, multi = c.domains > 1;
  if (ar && multi) m |= 1u << kTree;
  if (c.nvls && !c.pcie && !multi) m |= 1u << kNvls;
  if (ar && c.nvls && !c.pcie && multi) m |= 1u << kNvlsTree;
  if (ar && c.collnet && multi) m |= (1u << kCollnetDirect) | (1u << kCollnetChain);
  return m;
}

char lower(char ch) { return static_cast<char>(std::tolower(static_cast<unsigned char>(ch))); }

bool iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

template <class Enum, int Count>
std::optional<std::uint8_t> parse_list(std::string_view list, std::string_view* bad, bool algo) {
  bool negate = false;
  if (!list.empty() && list.front() == '^') negate = true, list.remove_prefix(1);
  std::uint8_t bits = 0;
  while (true) {
    const std::size_t comma = list.find(',');
    std::string_view tok = list.substr(0, comma);
    while (!tok.empty() && tok.front() == ' ') tok.remove_prefix(1);
    while (!tok.empty() && tok.back() == ' ') tok.remove_suffix(1);
    bool found = false;
    for (int i = 0; i < Count; ++i) {
      if (algo && i == kP2p) continue;
      if (iequals(tok, to_string(static_cast<Enum>(i)))) bits |= 1u << i, found = true;
    }
    if (algo && iequals(tok, "collnet")) bits |= (1u << kCollnetDirect) | (1u << kCollnetChain), found = true;
    if (!found) {
      if (bad) *bad = tok;
      return std::nullopt;
    }
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  // p2p is not a name users can list (it always runs send/recv), so "^a,b,..." negates within the
  // nameable algorithms: a list that excludes all of them must come out empty (and be refused).
  const std::uint8_t all = static_cast<std::uint8_t>(((1u << Count) - 1) & ~(algo ? 1u << kP2p : 0u));
  return static_cast<std::uint8_t>(negate ? all & ~bits : bits);
}

}  // namespace

std::string_view to_string(CollAlgo a) {
  switch (a) {
    case CollAlgo::ring: return "ring";
    case CollAlgo::tree: return "tree";
    case CollAlgo::nvls: return "nvls";
    case CollAlgo::nvls_tree: return "nvls_tree";
    case CollAlgo::collnet_direct: return "collnet_direct";
    case CollAlgo::collnet_chain: return "collnet_chain";
    case CollAlgo::p2p: return "p2p";
  }
  return "?";
}

std::string_view to_string(CollProto p) {
  switch (p) {
    case CollProto::ll: return "LL";
    case CollProto::ll128: return "LL128";
    case CollProto::simple: return "Simple";
  }
  return "?";
}

std::optional<std::uint8_t> parse_algo_list(std::string_view list, std::string_view* bad) {
  return parse_list<CollAlgo, kCollAlgoCount>(list, bad, true);
}

std::optional<std::uint8_t> parse_proto_list(std::string_view list, std::string_view* bad) {
  return parse_list<CollProto, kCollProtoCount>(list, bad, false);
}

double algorithm_time_s(const CollectiveSetting& c, CollAlgo algo, CollProto proto) {
  if (c.ranks <= 1 || c.bytes <= 0) return 0;
  return algo_times(Prepared(c), static_cast<int>(algo))[static_cast<int>(proto)];
}

AlgorithmChoice select_algorithm(const CollectiveSetting& c, CollectiveChoiceMask mask) {
  AlgorithmChoice best{CollAlgo::ring, CollProto::simple, -1};
  if (c.ranks <= 1 || c.bytes <= 0) return {CollAlgo::ring, CollProto::simple, 0};
  const Prepared q(c);
  std::uint8_t candidates = candidate_algos(c);
  // Inside one domain NCCL builds no tree on its own, but an NCCL_ALGO that names Tree runs the
  // all-reduce over the intra-node chain (nccl issues #532, #919, #1290): a candidate only then.
  if (c.op == CollectiveOp::all_reduce && c.domains <= 1 && mask.allows(CollAlgo::tree) &&
      mask.algos != CollectiveChoiceMask{}.algos) {
    candidates |= 1u << kTree;
  }
  // NCCL_ALGO does not apply to point-to-point operations; a mask that leaves nothing applicable
  // is ignored (second pass), as NCCL applies NCCL_ALGO only where the algorithm exists.
  const std::uint8_t p2p = 1u << kP2p;
  for (int pass = 0; pass < 2 && best.time_s < 0; ++pass) {
    const std::uint8_t algos = pass == 0 ? candidates & (mask.algos | p2p) : candidates;
    const std::uint8_t protos = pass == 0 ? mask.protos : static_cast<std::uint8_t>((1u << kCollProtoCount) - 1);
    for (int a = 0; a < kCollAlgoCount; ++a) {
      if (!((algos >> a) & 1u)) continue;
      const Times times = algo_times(q, a);
      for (int p = 0; p < kCollProtoCount; ++p) {
        if (!((protos >> p) & 1u)) continue;
        const double t = times[p];
        if (t >= 0 && (best.time_s < 0 || t < best.time_s)) best = {static_cast<CollAlgo>(a), static_cast<CollProto>(p), t};
      }
    }
  }
  return best;
}

HierarchicalVolumes hierarchical_volumes(CollectiveOp op, double S, int n, int k) {
  HierarchicalVolumes v;
  if (n <= 1) return v;
  k = std::clamp(k, 1, n);
  const double N = static_cast<double>(n) / k;
  switch (op) {
    case CollectiveOp::all_reduce:
      v.intra_bytes = 2.0 * (k - 1) / k * S;
      v.inter_bytes = 2.0 * (N - 1) / N * S / k;
      break;
    case CollectiveOp::all_gather:
    case CollectiveOp::reduce_scatter:
      v.intra_bytes = static_cast<double>(k - 1) / k * S;
      v.inter_bytes = (N - 1) / N * S / k;
      break;
    case CollectiveOp::all_to_all:
      v.intra_bytes = static_cast<double>(k - 1) / n * S;
      v.inter_bytes = static_cast<double>(n - k) / n * S;
      break;
    case CollectiveOp::send_recv:
      (k >= 2 ? v.intra_bytes : v.inter_bytes) = S;
      break;
  }
  return v;
}

}  // namespace calisim
