#include "profiler/aten_operator_keys.h"

#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cstdint>
#include <optional>
#include <utility>
#include <vector>

namespace calisim::profiler {
namespace {

using nlohmann::json;
using Shape = std::vector<std::int64_t>;

// Operand positions in the operator's schema (native_functions.yaml), which is the order of
// Kineto's per-input arrays.
struct GemmOperator {
  std::string_view name;
  int a, b;      // the two matrix operands
  int rank;      // 2: mm-like, 3: batched
  bool scaled;   // _scaled_mm: FP8 operands with scales
};
constexpr std::array<GemmOperator, 5> kGemmOperators{{{"aten::mm", 0, 1, 2, false},
                                                      {"aten::addmm", 1, 2, 2, false},
                                                      {"aten::bmm", 0, 1, 3, false},
                                                      {"aten::baddbmm", 1, 2, 3, false},
                                                      {"aten::_scaled_mm", 0, 1, 2, true}}};

// Grouped GEMMs (MoE experts): groups along the rows of `self` ([T, K] x [G, K, N]: each expert's
// tokens) or along the inner dimension ([M, T] x [T, N] -> [G, M, N]: each expert's weight
// gradient), delimited by `offs` (device-side end offsets whose values the trace does not hold);
// or two batched operands [G, M, K] x [G, K, N].
struct GroupedOperator {
  std::string_view name;
  int a, b, offs;
  bool scaled;
};
constexpr std::array<GroupedOperator, 2> kGroupedOperators{{{"aten::_grouped_mm", 0, 1, 2, false},
                                                            {"aten::_scaled_grouped_mm", 0, 1, 4, true}}};

struct AttentionOperator {
  std::string_view name;
  int q, k, v;
  int causal;    // the is_causal argument
  int mask;      // attn_mask / attn_bias, -1 when the schema has none
  int cum_seq;   // cum_seq_q (variable-length batches), -1 when the schema has none
  bool bshd;     // [batch, seq, heads, dim] (the flash kernels' own layout) instead of [b, h, s, d]
  AttentionDirection direction;
};
constexpr auto kFwd = AttentionDirection::forward;
constexpr auto kBwd = AttentionDirection::backward;
constexpr std::array<AttentionOperator, 9> kAttentionOperators{{
    {"aten::scaled_dot_product_attention", 0, 1, 2, 5, 3, -1, false, kFwd},
    {"aten::_scaled_dot_product_flash_attention", 0, 1, 2, 4, -1, -1, false, kFwd},
    {"aten::_scaled_dot_product_efficient_attention", 0, 1, 2, 6, 3, -1, false, kFwd},
    {"aten::_scaled_dot_product_cudnn_attention", 0, 1, 2, 6, 3, -1, false, kFwd},
    {"aten::_scaled_dot_product_flash_attention_backward", 1, 2, 3, 11, -1, 6, false, kBwd},
    {"aten::_scaled_dot_product_efficient_attention_backward", 1, 2, 3, 11, 4, -1, false, kBwd},
    {"aten::_scaled_dot_product_cudnn_attention_backward", 1, 2, 3, 14, 8, 9, false, kBwd},
    {"aten::_flash_attention_forward", 0, 1, 2, 8, -1, 3, true, kFwd},
    {"aten::_flash_attention_backward", 1, 2, 3, 11, -1, 6, true, kBwd},
}};

OperatorKey no_key(std::string reason) {
  OperatorKey k;
  k.reason = std::move(reason);
  return k;
}

// One of Kineto's per-input arrays ("Input Dims", ...), or nullptr when the trace has none.
const json* input_array(const json& args, const char* field) {
  if (!args.is_object()) return nullptr;
  const auto it = args.find(field);
  return it == args.end() || !it->is_array() ? nullptr : &*it;
}

// Input i's shape; nullopt when the entry is missing or not a list of non-negative integers.
std::optional<Shape> shape_at(const json* arr, int i) {
  if (!arr || i >= static_cast<int>(arr->size())) return std::nullopt;
  const json& v = (*arr)[static_cast<std::size_t>(i)];
  if (!v.is_array()) return std::nullopt;
  Shape s;
  for (const json& d : v) {
    if (!d.is_number_integer() || d.get<std::int64_t>() < 0) return std::nullopt;
    s.push_back(d.get<std::int64_t>());
  }
  return s;
}

std::string text_at(const json* arr, int i) {
  if (!arr || i >= static_cast<int>(arr->size())) return {};
  const json& v = (*arr)[static_cast<std::size_t>(i)];
  return v.is_string() ? v.get<std::string>() : std::string();
}

// PyTorch's scalar type names as the profiler writes them: operators' "Input type" as C++ type
// names ("c10::BFloat16", "float"), record_param_comms' dtype as c10::ScalarType names
// ("BFloat16", "Float").
std::optional<DType> dtype_of(std::string_view type) {
  if (type.starts_with("c10::")) type.remove_prefix(5);
  if (type == "BFloat16") return DType::bf16;
  if (type == "Half") return DType::fp16;
  if (type == "Float8_e4m3fn") return DType::fp8_e4m3;
  if (type == "Float8_e5m2") return DType::fp8_e5m2;
  if (type == "float" || type == "Float") return DType::fp32;
  return std::nullopt;
}

bool is_fp8(DType t) { return t == DType::fp8_e4m3 || t == DType::fp8_e5m2; }

// The storage order of a matrix operand (its last two dims): 'N' row-major, 'T' a transposed
// view (column-major), 0 neither (cuBLAS could not take it as is).
char matrix_order(const Shape& dims, const Shape& strides) {
  const std::size_t n = dims.size();
  const std::int64_t r = dims[n - 2], c = dims[n - 1], sr = strides[n - 2], sc = strides[n - 1];
  if (sc == 1 && (sr >= c || r == 1)) return 'N';
  if (sr == 1 && (sc >= r || c == 1)) return 'T';
  return 0;
}

// The key's input dtype from the two operands' types (no key: the reason).
std::optional<DType> gemm_dtype(const json* types, int a, int b, bool scaled, std::string& reason) {
  const auto ta = dtype_of(text_at(types, a)), tb = dtype_of(text_at(types, b));
  if (!ta || !tb) {
    reason = fmt::format("input types '{}', '{}'", text_at(types, a), text_at(types, b));
    return std::nullopt;
  }
  DType dtype = *ta;
  if (scaled) {
    if (!is_fp8(*ta) || !is_fp8(*tb)) {
      reason = "a scaled GEMM without FP8 operands";
      return std::nullopt;
    }
    // calisim keys an FP8 GEMM by its gradient format when one operand is E5M2 (core/kernel_keys.h).
    if (*tb == DType::fp8_e5m2) dtype = DType::fp8_e5m2;
  } else if (*ta != *tb) {
    reason = "operands of different types";
    return std::nullopt;
  }
  if (dtype == DType::fp32) {
    reason = "fp32 inputs (whether TF32 ran is not in the trace)";
    return std::nullopt;
  }
  return dtype;
}

// The layout from the storage order of A's and B's last two dims (no key: the reason).
std::optional<GemmLayout> gemm_layout(const json* strides, int a, int b, const Shape& da, const Shape& db,
                                      std::string& reason) {
  if (!strides) {
    reason = "no Input Strides (PyTorch before 2.1): the layout is unknown";
    return std::nullopt;
  }
  const auto sa = shape_at(strides, a), sb = shape_at(strides, b);
  if (!sa || !sb || sa->size() != da.size() || sb->size() != db.size()) {
    reason = "operand strides missing";
    return std::nullopt;
  }
  const char oa = matrix_order(da, *sa), ob = matrix_order(db, *sb);
  if (!oa || !ob) {
    reason = "an operand is neither row- nor column-major";
    return std::nullopt;
  }
  if (oa == 'N' && ob == 'T') return GemmLayout::TN;
  if (oa == 'N' && ob == 'N') return GemmLayout::NN;
  if (oa == 'T' && ob == 'N') return GemmLayout::NT;
  reason = "both operands transposed (a layout calisim does not key)";
  return std::nullopt;
}

// `shape` (m, n, k, batch) completed with the operands' dtype and layout (operands a and b, dims da
// and db), or no key with the reason.
OperatorKey gemm_with_type_and_layout(const json& args, int a, int b, bool scaled, const Shape& da, const Shape& db,
                                      GemmKey shape) {
  std::string reason;
  const auto dtype = gemm_dtype(input_array(args, "Input type"), a, b, scaled, reason);
  if (!dtype) return no_key(reason);
  const auto layout = gemm_layout(input_array(args, "Input Strides"), a, b, da, db, reason);
  if (!layout) return no_key(reason);
  OperatorKey out;
  out.kind = OperatorKey::Kind::gemm;
  out.gemm = shape;
  out.gemm.dtype = *dtype;
  out.gemm.layout = *layout;
  return out;
}

OperatorKey grouped_key(const GroupedOperator& op, const json& args) {
  const json* dims = input_array(args, "Input Dims");
  const json* types = input_array(args, "Input type");
  if (!dims || !types) return no_key("no Input Dims / Input type (profile with record_shapes=True)");
  const auto a = shape_at(dims, op.a), b = shape_at(dims, op.b), offs = shape_at(dims, op.offs);
  if (!a || !b) return no_key("grouped GEMM operands are not matrices");
  const bool has_offs = offs && offs->size() == 1;
  std::int64_t m = 0, n = 0, k = 0, groups = 0;
  if (a->size() == 2 && b->size() == 3 && has_offs) {  // [T, K] x [G, K, N]: tokens split among G experts
    groups = (*b)[0];
    if ((*offs)[0] != groups) return no_key("offsets and expert count differ");
    if ((*a)[1] != (*b)[1]) return no_key(fmt::format("inner dimensions differ ({} and {})", (*a)[1], (*b)[1]));
    m = groups > 0 ? ((*a)[0] + groups - 1) / groups : 0, k = (*a)[1], n = (*b)[2];
  } else if (a->size() == 2 && b->size() == 2 && has_offs) {  // [M, T] x [T, N] -> [G, M, N]
    groups = (*offs)[0];
    if ((*a)[1] != (*b)[0]) return no_key(fmt::format("inner dimensions differ ({} and {})", (*a)[1], (*b)[0]));
    m = (*a)[0], n = (*b)[1], k = groups > 0 ? ((*a)[1] + groups - 1) / groups : 0;
  } else if (a->size() == 3 && b->size() == 3 && !has_offs) {  // [G, M, K] x [G, K, N]
    groups = (*a)[0];
    if ((*b)[0] != groups || (*a)[2] != (*b)[1]) return no_key("batched operands disagree");
    m = (*a)[1], k = (*a)[2], n = (*b)[2];
  } else {
    return no_key("a grouped GEMM form calisim does not key (operand ranks and offsets)");
  }
  if (m == 0 || n == 0 || k == 0 || groups == 0) return no_key("an empty operand");
  return gemm_with_type_and_layout(args, op.a, op.b, op.scaled, *a, *b, GemmKey{m, n, k, groups});
}

OperatorKey gemm_key(const GemmOperator& op, const json& args) {
  const json* dims = input_array(args, "Input Dims");
  const json* types = input_array(args, "Input type");
  if (!dims || !types) return no_key("no Input Dims / Input type (profile with record_shapes=True)");
  const auto a = shape_at(dims, op.a), b = shape_at(dims, op.b);
  const auto rank = static_cast<std::size_t>(op.rank);
  if (!a || !b || a->size() != rank || b->size() != rank) {
    return no_key(fmt::format("operands are not {}-D matrices", op.rank));
  }
  const std::int64_t m = (*a)[rank - 2], k = (*a)[rank - 1], k2 = (*b)[rank - 2], n = (*b)[rank - 1];
  const std::int64_t batch = rank == 3 ? (*a)[0] : 1;
  if (k != k2) return no_key(fmt::format("inner dimensions differ ({} and {})", k, k2));
  if (rank == 3 && (*b)[0] != batch) return no_key("batch dimensions differ");
  if (m == 0 || n == 0 || k == 0 || batch == 0) return no_key("an empty operand");
  return gemm_with_type_and_layout(args, op.a, op.b, op.scaled, *a, *b, GemmKey{m, n, k, batch});
}

OperatorKey attention_key(const AttentionOperator& op, const json& args) {
  const json* dims = input_array(args, "Input Dims");
  const json* types = input_array(args, "Input type");
  const json* concrete = input_array(args, "Concrete Inputs");
  if (!dims || !types) return no_key("no Input Dims / Input type (profile with record_shapes=True)");
  const auto q = shape_at(dims, op.q), k = shape_at(dims, op.k), v = shape_at(dims, op.v);
  if (!q || !k || !v || q->size() != 4 || k->size() != 4 || v->size() != 4) {
    return no_key("query, key and value are not 4-D");
  }
  if (op.mask >= 0) {
    const auto mask = shape_at(dims, op.mask);
    if (mask && !mask->empty()) return no_key("an explicit attention mask or bias");
  }
  if (op.cum_seq >= 0) {
    const auto cum = shape_at(dims, op.cum_seq);
    if (cum && !cum->empty()) return no_key("variable-length sequences (cumulative lengths given)");
  }
  if (!concrete) return no_key("no Concrete Inputs (PyTorch before 2.1): causal or not is unknown");
  const std::string causal = text_at(concrete, op.causal);
  if (causal != "True" && causal != "False") {
    return no_key(fmt::format("is_causal (input {}) reads '{}', not True / False: an operator schema "
                              "calisim does not know",
                              op.causal, causal));
  }
  const auto dtype = dtype_of(text_at(types, op.q));
  if (!dtype) return no_key(fmt::format("query type '{}'", text_at(types, op.q)));
  if (*dtype == DType::fp32) return no_key("fp32 query");

  // [b, h, s, d], or [b, s, h, d] for the flash kernels' own operators.
  const int h = op.bshd ? 2 : 1, s = op.bshd ? 1 : 2;
  AttentionKey key;
  key.batch = (*q)[0];
  key.heads_q = (*q)[h];
  key.heads_kv = (*k)[h];
  key.seq_q = (*q)[s];
  key.seq_kv = (*k)[s];
  key.head_dim_qk = (*q)[3];
  key.head_dim_v = (*v)[3];
  key.causal = causal == "True";
  key.dtype = *dtype;
  key.direction = op.direction;
  if ((*k)[0] != key.batch || (*v)[0] != key.batch || (*k)[3] != key.head_dim_qk) {
    return no_key("query and key disagree in batch or head dim");
  }
  if (key.batch == 0 || key.heads_q == 0 || key.heads_kv == 0 || key.seq_q == 0 || key.seq_kv == 0) {
    return no_key("an empty operand");
  }
  if (key.heads_q % key.heads_kv != 0) return no_key("query heads are not a multiple of key heads");
  OperatorKey out;
  out.kind = OperatorKey::Kind::attention;
  out.attention = key;
  return out;
}

constexpr std::string_view kParamComms = "record_param_comms";

// c10d's collective names (lower case) -> the op calisim prices; send and recv apart (their size
// is the sent and the received buffer).
std::optional<CollectiveOp> collective_op(std::string name) {
  for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::array<std::pair<std::string_view, CollectiveOp>, 19> kNames{{
      {"allreduce", CollectiveOp::all_reduce},
      {"all_reduce", CollectiveOp::all_reduce},
      {"allreduce_coalesced", CollectiveOp::all_reduce},
      {"allgather", CollectiveOp::all_gather},
      {"all_gather", CollectiveOp::all_gather},
      {"_allgather_base", CollectiveOp::all_gather},
      {"all_gather_into_tensor", CollectiveOp::all_gather},
      {"allgather_into_tensor_coalesced", CollectiveOp::all_gather},
      {"allgather_coalesced", CollectiveOp::all_gather},
      {"reduce_scatter", CollectiveOp::reduce_scatter},
      {"reducescatter", CollectiveOp::reduce_scatter},
      {"_reduce_scatter_base", CollectiveOp::reduce_scatter},
      {"reduce_scatter_tensor", CollectiveOp::reduce_scatter},
      {"reduce_scatter_tensor_coalesced", CollectiveOp::reduce_scatter},
      {"all_to_all", CollectiveOp::all_to_all},
      {"alltoall", CollectiveOp::all_to_all},
      {"alltoall_base", CollectiveOp::all_to_all},
      {"send", CollectiveOp::send_recv},
      {"recv", CollectiveOp::send_recv},
  }};
  for (const auto& [n, op] : kNames) {
    if (n == name) return op;
  }
  return std::nullopt;
}

std::optional<std::int64_t> int_field(const json& args, const char* field) {
  const auto it = args.find(field);
  if (it == args.end()) return std::nullopt;
  if (it->is_number_integer()) return it->get<std::int64_t>();
  if (it->is_string()) {
    try {
      std::size_t used = 0;
      const std::int64_t v = std::stoll(it->get<std::string>(), &used);
      if (used == it->get_ref<const std::string&>().size()) return v;
    } catch (const std::exception&) {
    }
  }
  return std::nullopt;
}

// "Process Group Ranks": a JSON list, or its text ("[0, 1, 2, 3]").
std::vector<std::int64_t> group_ranks(const json& args) {
  const auto it = args.find("Process Group Ranks");
  if (it == args.end()) return {};
  json list = *it;
  if (it->is_string()) list = json::parse(it->get<std::string>(), nullptr, false);
  std::vector<std::int64_t> ranks;
  if (!list.is_array()) return {};
  for (const json& r : list) {
    if (!r.is_number_integer() || r.get<std::int64_t>() < 0) return {};
    ranks.push_back(r.get<std::int64_t>());
  }
  return ranks;
}

OperatorKey collective_key(const json& args) {
  if (!args.is_object()) return no_key("a collective without its arguments");
  const auto name = args.find("Collective name");
  if (name == args.end() || !name->is_string()) return no_key("a collective without \"Collective name\"");
  const std::string collective = name->get<std::string>();
  const auto op = collective_op(collective);
  // A send or receive runs between two ranks of its group; which peer (hence which link) is not in
  // the record, and calisim keys point-to-point transfers by that pair.
  if (op == CollectiveOp::send_recv) {
    return no_key(fmt::format("point-to-point '{}' (its peer, hence its link, is not in the trace)", collective));
  }
  if (!op) return no_key(fmt::format("collective '{}' (calisim keys all-reduce, all-gather, reduce-scatter "
                                     "and all-to-all from a trace)",
                                     collective));
  const auto type = args.find("dtype");
  const auto dtype = type != args.end() && type->is_string() ? dtype_of(type->get<std::string>()) : std::nullopt;
  if (!dtype) {
    return no_key(fmt::format("collective element type '{}'",
                              type != args.end() && type->is_string() ? type->get<std::string>() : ""));
  }
  const auto ranks = int_field(args, "Group size");
  if (!ranks || *ranks < 2) return no_key("a collective without a group of two or more (\"Group size\")");
  const auto in = int_field(args, "In msg nelems"), out = int_field(args, "Out msg nelems");
  const bool total_is_output = *op == CollectiveOp::all_gather;
  const auto nelems = total_is_output ? out : in;
  if (!nelems || *nelems <= 0) return no_key("a collective without its message size (\"In / Out msg nelems\")");
  OperatorKey k;
  k.kind = OperatorKey::Kind::collective;
  k.collective.op = *op;
  k.collective.bytes = *nelems * static_cast<std::int64_t>(bytes_per_element(*dtype));
  k.collective.ranks = static_cast<int>(*ranks);
  k.collective.ranks_per_node = 0;
  k.collective.dtype = *dtype;
  k.group_ranks = group_ranks(args);
  return k;
}

}  // namespace

bool is_collective_operator(std::string_view name) { return name == kParamComms; }

bool is_keyed_operator(std::string_view name) {
  if (name == kParamComms) return true;
  for (const auto& op : kGemmOperators) {
    if (op.name == name) return true;
  }
  for (const auto& op : kGroupedOperators) {
    if (op.name == name) return true;
  }
  for (const auto& op : kAttentionOperators) {
    if (op.name == name) return true;
  }
  return false;
}

OperatorKey operator_key(std::string_view name, const nlohmann::json& args) {
  if (name == kParamComms) return collective_key(args);
  for (const auto& op : kGemmOperators) {
    if (op.name == name) return gemm_key(op, args);
  }
  for (const auto& op : kGroupedOperators) {
    if (op.name == name) return grouped_key(op, args);
  }
  for (const auto& op : kAttentionOperators) {
    if (op.name == name) return attention_key(op, args);
  }
  return no_key(fmt::format("'{}' is not an operator calisim keys", name));
}

}  // namespace calisim::profiler
