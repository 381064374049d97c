#include "profiler/attention_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <stdexcept>
#include <string_view>
#include <vector>

#include "profiler/attention_reference.h"
#include "profiler/device_buffer.h"
#include "profiler/fill_random.h"
#include "profiler/gpu_error.h"

namespace calisim::profiler {
namespace {

std::string cudnn_text(cudnnStatus_t st) {
  char detail[512] = {};
  cudnnGetLastErrorString(detail, sizeof detail);
  return detail[0] ? fmt::format("{} ({})", cudnnGetErrorString(st), detail) : std::string(cudnnGetErrorString(st));
}

void check_cudnn(cudnnStatus_t st, std::string_view what) {
  if (st == CUDNN_STATUS_SUCCESS) return;
  const int family = static_cast<int>(st) / 1000;  // cuDNN 9 groups statuses by thousands
  const auto kind = st == CUDNN_STATUS_INTERNAL_ERROR_DEVICE_ALLOCATION_FAILED ? GpuError::Kind::out_of_memory
                    : family == 3                  ? GpuError::Kind::not_supported  // CUDNN_STATUS_NOT_SUPPORTED*
                                                   : GpuError::Kind::other;
  throw GpuError(fmt::format("cuDNN {}: {}", what, cudnn_text(st)), kind);
}

// One backend descriptor, destroyed with its owner.
class Desc {
 public:
  explicit Desc(cudnnBackendDescriptorType_t type) : type_(type) {
    check_cudnn(cudnnBackendCreateDescriptor(type, &d_), fmt::format("create descriptor type {}", static_cast<int>(type)));
  }
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(const Desc&) = delete;
  Desc& operator=(const Desc&) = delete;
  Desc(Desc&& o) noexcept : type_(o.type_), d_(o.d_) { o.d_ = nullptr; }

  template <class T>
  Desc& set(cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, const T* values, std::int64_t n = 1) {
    if (const cudnnStatus_t st = cudnnBackendSetAttribute(d_, name, type, n, values); st != CUDNN_STATUS_SUCCESS) {
      check_cudnn(st, fmt::format("set attribute {} of descriptor type {}", static_cast<int>(name),
                                  static_cast<int>(type_)));
    }
    return *this;
  }
  Desc& set_desc(cudnnBackendAttributeName_t name, const Desc& other) {
    cudnnBackendDescriptor_t o = other.get();
    return set(name, CUDNN_TYPE_BACKEND_DESCRIPTOR, &o);
  }
  Desc& finalize(const char* what) {
    check_cudnn(cudnnBackendFinalize(d_), what);
    return *this;
  }
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptorType_t type_;
  cudnnBackendDescriptor_t d_ = nullptr;
};

cudnnDataType_t cudnn_type(DType t) {
  if (t == DType::fp8_e4m3) return CUDNN_DATA_FP8_E4M3;
  return t == DType::fp16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16;
}

std::size_t element_bytes(DType t) { return t == DType::fp8_e4m3 ? 1 : 2; }

// Unique ids of the graphs' real (non-virtual) tensors; by-value scalars included.
enum Uid : std::int64_t {
  kQ = 1, kK, kV, kO, kStats, kScale, kMaskValue, kOne,
  kDO, kDQ, kDK, kDV, kSoftmaxSum, kDQAccum, kDKFullHead, kDVFullHead,
  // fp8 forward: per-tensor descales of the inputs and of P, scales of P and O (device fp32
  // scalars), and the amax outputs the next step's scales come from.
  kDescaleQ, kDescaleK, kDescaleV, kDescaleS, kScaleS, kScaleO, kAmaxS, kAmaxO,
  // fp8 backward: descales of O, dO and dP, scales of dP, dQ, dK and dV, and the amax outputs of
  // dQ, dK, dV and dP (what a delayed-scaling recipe reads the next step's scales from).
  kDescaleO, kDescaleDO, kDescaleDP, kScaleDP, kScaleDQ, kScaleDK, kScaleDV, kAmaxDQ, kAmaxDK, kAmaxDV, kAmaxDP,
  kFirstVirtual = 100
};

using Dims = std::vector<std::int64_t>;

Dims dense_strides(const Dims& dim) {
  Dims s(dim.size(), 1);
  for (std::size_t i = dim.size() - 1; i > 0; --i) s[i - 1] = s[i] * dim[i];
  return s;
}

// Owns the descriptors of one operation graph while it is built and finalised.
class GraphBuilder {
 public:
  const Desc& tensor(std::int64_t uid, cudnnDataType_t type, const Dims& dim, const Dims& stride,
                     bool is_virtual = false, bool by_value = false) {
    auto d = std::make_unique<Desc>(CUDNN_BACKEND_TENSOR_DESCRIPTOR);
    const std::int64_t align = 16;
    d->set(CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, &type);
    d->set(CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, dim.data(), static_cast<std::int64_t>(dim.size()));
    d->set(CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, stride.data(), static_cast<std::int64_t>(stride.size()));
    d->set(CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, &uid);
    d->set(CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, &align);
    d->set(CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, &is_virtual);
    if (by_value) d->set(CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, &by_value);
    d->finalize("tensor");
    tensors_.push_back(std::move(d));
    if (!is_virtual) real_uids_.push_back(uid);
    return *tensors_.back();
  }
  const Desc& real(std::int64_t uid, cudnnDataType_t type, const Dims& dim) {
    return tensor(uid, type, dim, dense_strides(dim));
  }
  const Desc& scalar(std::int64_t uid) {
    return tensor(uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}, false, true);
  }
  // A one-element fp32 tensor in device memory (fp8 scales, descales and amax outputs).
  const Desc& device_scalar(std::int64_t uid) { return tensor(uid, CUDNN_DATA_FLOAT, {1, 1, 1, 1}, {1, 1, 1, 1}); }
  const Desc& virt(cudnnDataType_t type, const Dims& dim) {
    return tensor(next_virtual_++, type, dim, dense_strides(dim), true);
  }
  const Desc& virt(cudnnDataType_t type, const Dims& dim, const Dims& stride) {
    return tensor(next_virtual_++, type, dim, stride, true);
  }

  void matmul(const Desc& a, const Desc& b, const Desc& c) {
    auto desc = std::make_unique<Desc>(CUDNN_BACKEND_MATMUL_DESCRIPTOR);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    desc->set(CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &f32).finalize("matmul descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_MATMUL_ADESC, a)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_BDESC, b)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_CDESC, c)
        .set_desc(CUDNN_ATTR_OPERATION_MATMUL_DESC, *desc)
        .finalize("matmul operation");
    helpers_.push_back(std::move(desc));
    ops_.push_back(std::move(op));
  }

  void pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Desc* t, const Desc& y,
                 cudnnDataType_t precision = CUDNN_DATA_FLOAT, const std::int64_t* axis = nullptr) {
    auto desc = std::make_unique<Desc>(CUDNN_BACKEND_POINTWISE_DESCRIPTOR);
    desc->set(CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, &mode);
    desc->set(CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, &precision);
    if (axis) desc->set(CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, axis);
    desc->finalize("pointwise descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, *desc);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_XDESC, x);
    if (b) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_BDESC, *b);
    if (t) op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_TDESC, *t);
    op.set_desc(CUDNN_ATTR_OPERATION_POINTWISE_YDESC, y);
    op.finalize("pointwise operation");
    helpers_.push_back(std::move(desc));
    ops_.push_back(std::move(op));
  }
  const Desc& pointwise(cudnnPointwiseMode_t mode, const Desc& x, const Desc* b, const Dims& out_dim) {
    const Desc& y = virt(CUDNN_DATA_FLOAT, out_dim);
    pointwise(mode, x, b, nullptr, y);
    return y;
  }

  void reduction(cudnnReduceTensorOp_t mode, const Desc& x, const Desc& y) {
    auto desc = std::make_unique<Desc>(CUDNN_BACKEND_REDUCTION_DESCRIPTOR);
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    desc->set(CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, &mode);
    desc->set(CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, &f32).finalize("reduction descriptor");
    Desc op(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_REDUCTION_XDESC, x)
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_YDESC, y)
        .set_desc(CUDNN_ATTR_OPERATION_REDUCTION_DESC, *desc)
        .finalize("reduction operation");
    helpers_.push_back(std::move(desc));
    ops_.push_back(std::move(op));
  }

  // y re-presents x with other dims / strides / type (the graphs' virtual transposes).
  void reshape(const Desc& x, const Desc& y) {
    Desc op(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR);
    op.set_desc(CUDNN_ATTR_OPERATION_RESHAPE_XDESC, x).set_desc(CUDNN_ATTR_OPERATION_RESHAPE_YDESC, y);
    op.finalize("reshape operation");
    ops_.push_back(std::move(op));
  }

  // The row >= column mask of causal attention over scores [b, h, sq, skv] (top-left aligned):
  // masked entries become the by-value kMaskValue.
  const Desc& causal_mask(const Desc& scores, const Dims& sdim, cudnnDataType_t compare_precision) {
    const Desc& row = virt(CUDNN_DATA_INT32, sdim);
    const Desc& col = virt(CUDNN_DATA_INT32, sdim);
    const std::int64_t row_axis = 2, col_axis = 3;
    pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, row, CUDNN_DATA_INT32, &row_axis);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, scores, nullptr, nullptr, col, CUDNN_DATA_INT32, &col_axis);
    const Desc& keep = virt(CUDNN_DATA_BOOLEAN, sdim);
    pointwise(CUDNN_POINTWISE_CMP_GE, row, &col, nullptr, keep, compare_precision);
    const Desc& mask_value = scalar(kMaskValue);
    const Desc& masked = virt(CUDNN_DATA_FLOAT, sdim);
    pointwise(CUDNN_POINTWISE_BINARY_SELECT, scores, &mask_value, &keep, masked);  // y = t ? x : b
    return masked;
  }

  void finalize(cudnnHandle_t handle) {
    std::vector<cudnnBackendDescriptor_t> ops;
    for (const auto& op : ops_) ops.push_back(op.get());
    graph_.set(CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, &handle);
    graph_.set(CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, ops.data(),
               static_cast<std::int64_t>(ops.size()));
    graph_.finalize("operation graph");
  }
  const Desc& graph() const { return graph_; }
  // The non-virtual tensors (buffers and by-value scalars) a variant pack must bind.
  const std::vector<std::int64_t>& real_uids() const { return real_uids_; }

 private:
  std::vector<std::int64_t> real_uids_;
  std::vector<std::unique_ptr<Desc>> tensors_, helpers_;
  std::vector<Desc> ops_;
  Desc graph_{CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR};
  std::int64_t next_virtual_ = kFirstVirtual;
};

struct Shape {
  std::int64_t b, hq, hk, sq, skv, dqk, dv;
  cudnnDataType_t io;
  explicit Shape(const AttentionKey& k)
      : b(k.batch), hq(k.heads_q), hk(k.heads_kv), sq(k.seq_q), skv(k.seq_kv), dqk(k.head_dim_qk),
        dv(k.head_dim_v), io(cudnn_type(k.dtype)) {}
  Dims q() const { return {b, hq, sq, dqk}; }
  Dims k() const { return {b, hk, skv, dqk}; }
  Dims v() const { return {b, hk, skv, dv}; }
  Dims o() const { return {b, hq, sq, dv}; }
  Dims scores() const { return {b, hq, sq, skv}; }
  Dims rows() const { return {b, hq, sq, 1}; }
};

// The softmax both forward graphs share: row max, exp(x − max), row sum, and Stats = max + log(sum)
// (the log-sum-exp the backward reads); P = exp / sum is left to the caller, whose output type
// differs.
struct Softmax {
  const Desc& exp;
  const Desc& sum;
};
Softmax softmax_with_stats(GraphBuilder& g, const Shape& s, const Desc& logits, const Desc& stats) {
  const Desc& max = g.virt(CUDNN_DATA_FLOAT, s.rows());
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, logits, max);
  const Desc& sub = g.pointwise(CUDNN_POINTWISE_SUB, logits, &max, s.scores());
  const Desc& e = g.pointwise(CUDNN_POINTWISE_EXP, sub, nullptr, s.scores());
  const Desc& sum = g.virt(CUDNN_DATA_FLOAT, s.rows());
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  const Desc& log_sum = g.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, s.rows());
  g.pointwise(CUDNN_POINTWISE_ADD, max, &log_sum, nullptr, stats);
  return {e, sum};
}

// The tensors both forward graphs bind: Q, Kᵀ (a [b, hk, dqk, skv] view of the [b, hk, skv, dqk]
// K buffer), V, O, the fp32 softmax Stats and the attention scale.
struct ForwardIo {
  const Desc& q;
  const Desc& kt;
  const Desc& v;
  const Desc& o;
  const Desc& stats;
  const Desc& scale;
};
ForwardIo forward_io(GraphBuilder& g, const Shape& s) {
  const Desc& q = g.real(kQ, s.io, s.q());
  const Desc& kt = g.tensor(kK, s.io, {s.b, s.hk, s.dqk, s.skv}, {s.hk * s.skv * s.dqk, s.skv * s.dqk, 1, s.dqk});
  const Desc& v = g.real(kV, s.io, s.v());
  const Desc& o = g.real(kO, s.io, s.o());
  const Desc& stats = g.real(kStats, CUDNN_DATA_FLOAT, s.rows());
  const Desc& scale = g.scalar(kScale);
  return {q, kt, v, o, stats, scale};
}

// The forward graph (cuDNN frontend's composition): S = Q·Kᵀ, ×scale, causal mask, softmax
// (max, sub, exp, sum, log + add → Stats, div), O = P·V. P, the second matmul's A operand, has
// the io type as the frontend gives it ("Requirement by cudnn backend to take in bmm2 aType as
// i/o type", scaled_dot_product_flash_attention.h), which is what the fused flash engines match.
// `p_fp32` keeps P in fp32 instead: only a fallback, for a cuDNN whose engines take that form.
void build_forward(GraphBuilder& g, const Shape& s, bool causal, bool p_fp32) {
  const ForwardIo io = forward_io(g, s);
  const Desc &q = io.q, &kt = io.kt, &v = io.v, &o = io.o, &stats = io.stats, &scale = io.scale;
  const Desc& scores = g.virt(CUDNN_DATA_FLOAT, s.scores());
  g.matmul(q, kt, scores);
  const Desc* logits = &g.pointwise(CUDNN_POINTWISE_MUL, scores, &scale, s.scores());
  if (causal) logits = &g.causal_mask(*logits, s.scores(), CUDNN_DATA_BOOLEAN);
  const Softmax sm = softmax_with_stats(g, s, *logits, stats);
  const Desc& p = g.virt(p_fp32 ? CUDNN_DATA_FLOAT : s.io, s.scores());
  g.pointwise(CUDNN_POINTWISE_DIV, sm.exp, &sm.sum, nullptr, p);
  g.matmul(p, v, o);
}

// The fp8 (e4m3) forward graph, cuDNN frontend's SDPA_FP8 composition: S = Q·Kᵀ in fp32, ×scale,
// ×descale_q, ×descale_k, causal mask, softmax with Stats as above, amax_s = AMAX(P), P × scale_s
// cast to e4m3, then O = P·V in fp32, ×descale_s, ×descale_v, amax_o = AMAX of that, ×scale_o
// cast to e4m3 into O. The scales are device fp32 scalars (Tensors sets them to 1: the inputs
// are uniform in [-1, 1), far inside e4m3's range).
void build_forward_fp8(GraphBuilder& g, const Shape& s, bool causal) {
  const ForwardIo io = forward_io(g, s);
  const Desc &q = io.q, &kt = io.kt, &v = io.v, &o = io.o, &stats = io.stats, &scale = io.scale;
  const Desc& descale_q = g.device_scalar(kDescaleQ);
  const Desc& descale_k = g.device_scalar(kDescaleK);
  const Desc& descale_v = g.device_scalar(kDescaleV);
  const Desc& descale_s = g.device_scalar(kDescaleS);
  const Desc& scale_s = g.device_scalar(kScaleS);
  const Desc& scale_o = g.device_scalar(kScaleO);
  const Desc& amax_s = g.device_scalar(kAmaxS);
  const Desc& amax_o = g.device_scalar(kAmaxO);

  const Desc& scores = g.virt(CUDNN_DATA_FLOAT, s.scores());
  g.matmul(q, kt, scores);
  const Desc& scaled = g.pointwise(CUDNN_POINTWISE_MUL, scores, &scale, s.scores());
  const Desc& dq_scaled = g.pointwise(CUDNN_POINTWISE_MUL, scaled, &descale_q, s.scores());
  const Desc* logits = &g.pointwise(CUDNN_POINTWISE_MUL, dq_scaled, &descale_k, s.scores());
  if (causal) logits = &g.causal_mask(*logits, s.scores(), CUDNN_DATA_BOOLEAN);
  const Softmax sm = softmax_with_stats(g, s, *logits, stats);
  const Desc& p = g.pointwise(CUDNN_POINTWISE_DIV, sm.exp, &sm.sum, s.scores());
  g.reduction(CUDNN_REDUCE_TENSOR_AMAX, p, amax_s);
  const Desc& p8 = g.virt(s.io, s.scores());
  g.pointwise(CUDNN_POINTWISE_MUL, p, &scale_s, nullptr, p8);

  const Desc& pv = g.virt(CUDNN_DATA_FLOAT, s.o());
  g.matmul(p8, v, pv);
  const Desc& pv_s = g.pointwise(CUDNN_POINTWISE_MUL, pv, &descale_s, s.o());
  const Desc& pv_sv = g.pointwise(CUDNN_POINTWISE_MUL, pv_s, &descale_v, s.o());
  g.pointwise(CUDNN_POINTWISE_MUL, pv_sv, &scale_o, nullptr, o);
  g.reduction(CUDNN_REDUCE_TENSOR_AMAX, pv_sv, amax_o);
}

// Pᵀ-style view: [b, h, x, y] dense → [b, h, y, x], in the io type.
const Desc& transposed(GraphBuilder& g, const Desc& x, const Dims& dim, cudnnDataType_t io) {
  const std::int64_t b = dim[0], h = dim[1], r = dim[2], c = dim[3];
  const Desc& y = g.virt(io, {b, h, c, r}, {h * r * c, r * c, 1, c});
  g.reshape(x, y);
  return y;
}

// The tensors both backward graphs bind: Q, Kᵀ and Vᵀ (views of the [b, hk, skv, d] buffers),
// O and dO, the fp32 softmax Stats of the forward, the attention scale, and dQ, dK, dV.
struct BackwardIo {
  const Desc& q;
  const Desc& kt;
  const Desc& vt;
  const Desc& o;
  const Desc& d_o;
  const Desc& stats;
  const Desc& scale;
  const Desc& dq;
  const Desc& dk;
  const Desc& dv;
};
BackwardIo backward_io(GraphBuilder& g, const Shape& s) {
  const Desc& q = g.real(kQ, s.io, s.q());
  const Desc& kt = g.tensor(kK, s.io, {s.b, s.hk, s.dqk, s.skv}, {s.hk * s.skv * s.dqk, s.skv * s.dqk, 1, s.dqk});
  const Desc& vt = g.tensor(kV, s.io, {s.b, s.hk, s.dv, s.skv}, {s.hk * s.skv * s.dv, s.skv * s.dv, 1, s.dv});
  const Desc& o = g.real(kO, s.io, s.o());
  const Desc& d_o = g.real(kDO, s.io, s.o());
  const Desc& stats = g.real(kStats, CUDNN_DATA_FLOAT, s.rows());
  const Desc& scale = g.scalar(kScale);
  const Desc& dq = g.real(kDQ, s.io, s.q());
  const Desc& dk = g.real(kDK, s.io, s.k());
  const Desc& dv = g.real(kDV, s.io, s.v());
  return {q, kt, vt, o, d_o, stats, scale, dq, dk, dv};
}

// rowsum(dO ∘ O) in fp32, [b, hq, sq, 1]: the softmax-gradient term both backward graphs start from.
const Desc& rowsum_do_o(GraphBuilder& g, const Shape& s, const BackwardIo& io) {
  const Desc& doo = g.pointwise(CUDNN_POINTWISE_MUL, io.d_o, &io.o, s.o());
  const Desc& row_sum = g.virt(CUDNN_DATA_FLOAT, s.rows());
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, doo, row_sum);
  return row_sum;
}

// K as [b, hk, skv, dqk] again (a reshape of the Kᵀ view) for dQ = dS·K.
const Desc& k_from_kt(GraphBuilder& g, const Shape& s, const Desc& kt) {
  const Desc& k_view = g.virt(s.io, s.k(), dense_strides(s.k()));
  g.reshape(kt, k_view);
  return k_view;
}

// The backward graph the fused flash-attention backward engines match: softmax_sum =
// rowsum(dO∘O)·1, P = exp(S·scale − Stats) (causal mask before the exp), dV = Pᵀ·dO,
// dS = P∘(dO·Vᵀ − softmax_sum)·scale, dK = dSᵀ·Q, dQ = dS·K accumulated in fp32 (dQ_accum)
// and cast by an identity. GQA: dK and dV are computed per query head ([b, hq, skv, d], io type)
// and summed over each group by a reduction. The full-head tensors are virtual, as cuDNN's
// frontend keeps them for dense layouts (it makes them real workspace tensors only for ragged
// ones); `real_full_heads` binds them as buffers instead, the fallback for a cuDNN that wants them.
void build_backward(GraphBuilder& g, const Shape& s, bool causal, bool real_full_heads) {
  const BackwardIo io = backward_io(g, s);
  const Desc &q = io.q, &kt = io.kt, &vt = io.vt, &d_o = io.d_o, &stats = io.stats, &scale = io.scale;
  const Desc &dq = io.dq, &dk = io.dk, &dv = io.dv;
  const Desc& one = g.scalar(kOne);
  const Desc& softmax_sum = g.real(kSoftmaxSum, CUDNN_DATA_FLOAT, s.rows());
  const Desc& dq_accum = g.real(kDQAccum, CUDNN_DATA_FLOAT, s.q());

  const Desc& row_sum = rowsum_do_o(g, s, io);
  g.pointwise(CUDNN_POINTWISE_MUL, row_sum, &one, nullptr, softmax_sum);  // the dropout-scale slot

  const Desc& scores = g.virt(CUDNN_DATA_FLOAT, s.scores());
  g.matmul(q, kt, scores);
  const Desc& scaled = g.pointwise(CUDNN_POINTWISE_MUL, scores, &scale, s.scores());
  const Desc* shifted = &g.pointwise(CUDNN_POINTWISE_SUB, scaled, &stats, s.scores());
  if (causal) shifted = &g.causal_mask(*shifted, s.scores(), CUDNN_DATA_INT32);
  const Desc& p = g.pointwise(CUDNN_POINTWISE_EXP, *shifted, nullptr, s.scores());

  const bool grouped = s.hk != s.hq;
  const Desc& pt = transposed(g, p, s.scores(), s.io);
  const Dims dv_full_dim{s.b, s.hq, s.skv, s.dv}, dk_full_dim{s.b, s.hq, s.skv, s.dqk};
  if (grouped) {
    const Desc& dv_full = real_full_heads ? g.real(kDVFullHead, s.io, dv_full_dim) : g.virt(s.io, dv_full_dim);
    g.matmul(pt, d_o, dv_full);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, dv_full, dv);
  } else {
    g.matmul(pt, d_o, dv);
  }
  const Desc& dp = g.virt(CUDNN_DATA_FLOAT, s.scores());
  g.matmul(d_o, vt, dp);
  const Desc& dps = g.pointwise(CUDNN_POINTWISE_SUB, dp, &softmax_sum, s.scores());
  const Desc& ds0 = g.pointwise(CUDNN_POINTWISE_MUL, dps, &p, s.scores());
  const Desc& ds = g.pointwise(CUDNN_POINTWISE_MUL, ds0, &scale, s.scores());

  const Desc& dst = transposed(g, ds, s.scores(), s.io);
  if (grouped) {
    const Desc& dk_full = real_full_heads ? g.real(kDKFullHead, s.io, dk_full_dim) : g.virt(s.io, dk_full_dim);
    g.matmul(dst, q, dk_full);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, dk_full, dk);
  } else {
    g.matmul(dst, q, dk);
  }
  g.matmul(ds, k_from_kt(g, s, kt), dq_accum);
  g.pointwise(CUDNN_POINTWISE_IDENTITY, dq_accum, nullptr, nullptr, dq);
}

// One fp8 matmul of the backward as cuDNN frontend's matmul_fp8 node composes it: C = A·B in
// fp32 (a GQA gradient summed over each group's query heads when A and B carry hq heads and C
// hk), × descale_a × descale_b, AMAX of that into amax_c, × scale_c cast into C.
void matmul_fp8(GraphBuilder& g, const Desc& a, const Desc& b, const Dims& full_dim, const Dims& out_dim,
                const Desc& descale_a, const Desc& descale_b, const Desc& scale_c, const Desc& c, const Desc& amax_c) {
  const Desc& product = g.virt(CUDNN_DATA_FLOAT, full_dim);
  g.matmul(a, b, product);
  const Desc* summed = &product;
  if (full_dim != out_dim) {
    const Desc& group_sum = g.virt(CUDNN_DATA_FLOAT, out_dim);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, product, group_sum);
    summed = &group_sum;
  }
  const Desc& da = g.pointwise(CUDNN_POINTWISE_MUL, *summed, &descale_a, out_dim);
  const Desc& dab = g.pointwise(CUDNN_POINTWISE_MUL, da, &descale_b, out_dim);
  g.pointwise(CUDNN_POINTWISE_MUL, dab, &scale_c, nullptr, c);
  g.reduction(CUDNN_REDUCE_TENSOR_AMAX, dab, amax_c);
}

// The fp8 (e4m3) backward graph, cuDNN frontend's SDPA_FP8_BWD composition with per-tensor scales:
// D = rowsum(dO∘O) × descale_dO × descale_O; S = Q·Kᵀ × scale × descale_q × descale_k, causal
// mask, P = exp(S − Stats); dV = matmul_fp8(P × scale_s as e4m3, transposed; dO; descale_s,
// descale_dO, scale_dV); dP = (dO·Vᵀ × descale_dO × descale_V − D) ∘ P × scale, amax_dP, × scale_dP
// as e4m3; dQ = matmul_fp8(dP, K; descale_dP, descale_K, scale_dQ); dK = matmul_fp8(dPᵀ, Q;
// descale_dP, descale_Q, scale_dK). dQ, dK, dV are e4m3 (Hopper's engines write no other type).
void build_backward_fp8(GraphBuilder& g, const Shape& s, bool causal) {
  const BackwardIo io = backward_io(g, s);
  const Desc &q = io.q, &kt = io.kt, &vt = io.vt, &d_o = io.d_o, &stats = io.stats, &scale = io.scale;
  const Desc &dq = io.dq, &dk = io.dk, &dv = io.dv;
  const Desc& descale_q = g.device_scalar(kDescaleQ);
  const Desc& descale_k = g.device_scalar(kDescaleK);
  const Desc& descale_v = g.device_scalar(kDescaleV);
  const Desc& descale_o = g.device_scalar(kDescaleO);
  const Desc& descale_do = g.device_scalar(kDescaleDO);
  const Desc& descale_s = g.device_scalar(kDescaleS);
  const Desc& descale_dp = g.device_scalar(kDescaleDP);
  const Desc& scale_s = g.device_scalar(kScaleS);
  const Desc& scale_dp = g.device_scalar(kScaleDP);
  const Desc& scale_dq = g.device_scalar(kScaleDQ);
  const Desc& scale_dk = g.device_scalar(kScaleDK);
  const Desc& scale_dv = g.device_scalar(kScaleDV);
  const Desc& amax_dq = g.device_scalar(kAmaxDQ);
  const Desc& amax_dk = g.device_scalar(kAmaxDK);
  const Desc& amax_dv = g.device_scalar(kAmaxDV);
  const Desc& amax_dp = g.device_scalar(kAmaxDP);

  // D = rowsum(dO ∘ O), descaled.
  const Desc& row_do = g.pointwise(CUDNN_POINTWISE_MUL, rowsum_do_o(g, s, io), &descale_do, s.rows());
  const Desc& softmax_sum = g.pointwise(CUDNN_POINTWISE_MUL, row_do, &descale_o, s.rows());

  // P = exp(S·scale·descales − Stats), the mask before the subtraction as the frontend orders it.
  const Desc& scores = g.virt(CUDNN_DATA_FLOAT, s.scores());
  g.matmul(q, kt, scores);
  const Desc& scaled = g.pointwise(CUDNN_POINTWISE_MUL, scores, &scale, s.scores());
  const Desc& dq_scaled = g.pointwise(CUDNN_POINTWISE_MUL, scaled, &descale_q, s.scores());
  const Desc* logits = &g.pointwise(CUDNN_POINTWISE_MUL, dq_scaled, &descale_k, s.scores());
  if (causal) logits = &g.causal_mask(*logits, s.scores(), CUDNN_DATA_INT32);
  const Desc& shifted = g.pointwise(CUDNN_POINTWISE_SUB, *logits, &stats, s.scores());
  const Desc& p = g.pointwise(CUDNN_POINTWISE_EXP, shifted, nullptr, s.scores());

  // dV from P in e4m3, transposed.
  const Desc& p8 = g.virt(s.io, s.scores());
  g.pointwise(CUDNN_POINTWISE_MUL, p, &scale_s, nullptr, p8);
  const Desc& pt = transposed(g, p8, s.scores(), s.io);
  matmul_fp8(g, pt, d_o, {s.b, s.hq, s.skv, s.dv}, s.v(), descale_s, descale_do, scale_dv, dv, amax_dv);

  // dP = (dO·Vᵀ − D) ∘ P × scale, its amax, then e4m3.
  const Desc& dpv = g.virt(CUDNN_DATA_FLOAT, s.scores());
  g.matmul(d_o, vt, dpv);
  const Desc& dpv_do = g.pointwise(CUDNN_POINTWISE_MUL, dpv, &descale_do, s.scores());
  const Desc& dpv_v = g.pointwise(CUDNN_POINTWISE_MUL, dpv_do, &descale_v, s.scores());
  const Desc& dps = g.pointwise(CUDNN_POINTWISE_SUB, dpv_v, &softmax_sum, s.scores());
  const Desc& ds0 = g.pointwise(CUDNN_POINTWISE_MUL, dps, &p, s.scores());
  const Desc& ds = g.pointwise(CUDNN_POINTWISE_MUL, ds0, &scale, s.scores());
  g.reduction(CUDNN_REDUCE_TENSOR_AMAX, ds, amax_dp);
  const Desc& ds8 = g.virt(s.io, s.scores());
  g.pointwise(CUDNN_POINTWISE_MUL, ds, &scale_dp, nullptr, ds8);

  // dQ = dP·K, dK = dPᵀ·Q.
  matmul_fp8(g, ds8, k_from_kt(g, s, kt), s.q(), s.q(), descale_dp, descale_k, scale_dq, dq, amax_dq);
  const Desc& dst = transposed(g, ds8, s.scores(), s.io);
  matmul_fp8(g, dst, q, {s.b, s.hq, s.skv, s.dqk}, s.k(), descale_dp, descale_q, scale_dk, dk, amax_dk);
}

// A finalised execution plan with its engine's global index and workspace.
struct Plan {
  std::unique_ptr<Desc> plan;
  std::int64_t engine = -1;
  std::int64_t workspace_bytes = 0;
};

// The heuristics' engine configurations, in their order, as finalised plans (those that fail to
// finalise are left out; the last failure's text is kept for the skip reason).
std::vector<Plan> plans_for(cudnnHandle_t handle, const GraphBuilder& g, int wanted, std::string* last_error) {
  Desc heur(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR);
  const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
  heur.set_desc(CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, g.graph());
  heur.set(CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, &mode);
  heur.finalize("engine heuristics");
  std::int64_t available = 0;
  check_cudnn(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0,
                                       &available, nullptr),
              "heuristic result count");
  std::vector<Desc> configs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (std::int64_t i = 0; i < available; ++i) {
    configs.emplace_back(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR);
    raw.push_back(configs.back().get());
  }
  std::int64_t got = 0;
  if (available > 0) {
    check_cudnn(cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                         available, &got, raw.data()),
                "heuristic results");
  }
  std::vector<Plan> plans;
  for (std::int64_t i = 0; i < got && static_cast<int>(plans.size()) < wanted; ++i) {
    try {
      Plan p;
      p.plan = std::make_unique<Desc>(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR);
      p.plan->set(CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, &handle);
      p.plan->set_desc(CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, configs[i]);
      p.plan->finalize("execution plan");
      std::int64_t n = 0;
      check_cudnn(cudnnBackendGetAttribute(p.plan->get(), CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1,
                                           &n, &p.workspace_bytes),
                  "workspace size");
      Desc engine(CUDNN_BACKEND_ENGINE_DESCRIPTOR);
      cudnnBackendDescriptor_t e = engine.get();
      if (cudnnBackendGetAttribute(configs[i].get(), CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n,
                                   &e) == CUDNN_STATUS_SUCCESS) {
        cudnnBackendGetAttribute(e, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &p.engine);
      }
      plans.push_back(std::move(p));
    } catch (const GpuError& err) {
      if (last_error) *last_error = err.what();
    }
  }
  if (plans.empty() && last_error && last_error->empty()) {
    *last_error = fmt::format("the heuristics offered {} engine configuration(s), none usable", got);
  }
  return plans;
}

// A graph with its plans; which variant was built (see build_graph).
struct BuiltGraph {
  std::unique_ptr<GraphBuilder> g;
  std::vector<Plan> plans;
  std::string variant;
};

// Builds the key's graph, trying its variants in order until one has an engine plan:
// forward "fwd" (P in the io type, the frontend's form) then "fwd, P in fp32"; GQA backward
// "bwd" (virtual full-head dK / dV, the frontend's dense form) then "bwd, full-head dK/dV in
// memory"; other backward keys and fp8 have one composition each.
BuiltGraph build_graph(cudnnHandle_t handle, const AttentionKey& key, int wanted) {
  const Shape s(key);
  std::string errors;
  const bool backward = key.direction == AttentionDirection::backward;
  const bool fp8 = key.dtype == DType::fp8_e4m3;
  const bool grouped = s.hk != s.hq;
  const int variants = fp8 ? 1 : backward ? (grouped ? 2 : 1) : 2;
  for (int variant = 0; variant < variants; ++variant) {
    const bool fallback = variant == 1;
    BuiltGraph out;
    out.g = std::make_unique<GraphBuilder>();
    out.variant = fp8 ? (backward ? "bwd fp8" : "fwd fp8")
                  : backward ? (fallback ? "bwd, full-head dK/dV in memory" : "bwd")
                             : (fallback ? "fwd, P in fp32" : "fwd");
    std::string last;
    try {
      if (fp8 && backward) {
        build_backward_fp8(*out.g, s, key.causal);
      } else if (fp8) {
        build_forward_fp8(*out.g, s, key.causal);
      } else if (backward) {
        build_backward(*out.g, s, key.causal, /*real_full_heads=*/fallback);
      } else {
        build_forward(*out.g, s, key.causal, /*p_fp32=*/fallback);
      }
      out.g->finalize(handle);
      out.plans = plans_for(handle, *out.g, wanted, &last);
    } catch (const GpuError& e) {
      if (e.out_of_memory()) throw;
      last = e.what();
    }
    if (!out.plans.empty()) return out;
    errors += fmt::format("{}graph \"{}\": {}", errors.empty() ? "" : "; ", out.variant, last);
  }
  throw GpuError("cuDNN has no SDPA engine for this shape: " + errors, GpuError::Kind::not_supported);
}

// Device tensors of one problem, random inputs; the host scalars the variant pack points at.
// The GQA full-head dK / dV buffers exist only for the graph variant that binds them: bind()
// allocates them on first use, so the preferred (virtual) form costs no memory for them.
struct Tensors {
  std::vector<std::pair<std::int64_t, DeviceBuffer>> buffers;
  float scale = 1, one = 1;
  // Masked logits: the lowest finite float (what cuDNN's own frontend uses), never -inf, so a
  // fully masked row cannot produce NaN.
  float mask_value = std::numeric_limits<float>::lowest();
  Shape shape;

  Tensors(const AttentionKey& key, cudaStream_t stream) : shape(key) {
    const Shape& s = shape;
    scale = 1.0f / std::sqrt(static_cast<float>(key.head_dim_qk));
    auto count = [](const Dims& d) { return d[0] * d[1] * d[2] * d[3]; };
    auto add = [&](std::int64_t uid, std::int64_t elements, std::size_t element_bytes) -> void* {
      buffers.emplace_back(uid, DeviceBuffer(static_cast<std::size_t>(elements) * element_bytes));
      return buffers.back().second.get();
    };
    const std::size_t io = element_bytes(key.dtype);
    fill_random(add(kQ, count(s.q()), io), count(s.q()), key.dtype, 21, 1.0f, stream);
    fill_random(add(kK, count(s.k()), io), count(s.k()), key.dtype, 22, 1.0f, stream);
    fill_random(add(kV, count(s.v()), io), count(s.v()), key.dtype, 23, 1.0f, stream);
    add(kO, count(s.o()), io);
    add(kStats, count(s.rows()), 4);
    const bool fp8 = key.dtype == DType::fp8_e4m3, backward = key.direction == AttentionDirection::backward;
    if (fp8) {
      // Every scale and descale starts at 1: the inputs are uniform in [-1, 1), far inside
      // e4m3's range. (check_backward_against_cpu rescales the gradients from their amax.)
      std::vector<std::int64_t> ones{kDescaleQ, kDescaleK, kDescaleV, kDescaleS, kScaleS, kScaleO};
      std::vector<std::int64_t> amax{kAmaxS, kAmaxO};
      if (backward) {
        ones.insert(ones.end(), {kDescaleO, kDescaleDO, kDescaleDP, kScaleDP, kScaleDQ, kScaleDK, kScaleDV});
        amax.insert(amax.end(), {kAmaxDQ, kAmaxDK, kAmaxDV, kAmaxDP});
      }
      for (std::int64_t uid : ones) add(uid, 1, sizeof(float));
      for (std::int64_t uid : amax) add(uid, 1, sizeof(float));
      for (std::int64_t uid : ones) set_scalar(uid, 1.0f, stream);
    }
    if (backward) {
      fill_random(add(kDO, count(s.o()), io), count(s.o()), key.dtype, 24, 1.0f, stream);
      add(kDQ, count(s.q()), io);
      add(kDK, count(s.k()), io);
      add(kDV, count(s.v()), io);
      if (!fp8) {  // the fp8 graph keeps D and the GQA sums virtual, as the frontend's does
        add(kSoftmaxSum, count(s.rows()), 4);
        add(kDQAccum, count(s.q()), 4);
      }
    }
  }
  // Writes one fp32 device scalar (synchronously: the value lives on the caller's stack).
  void set_scalar(std::int64_t uid, float value, cudaStream_t stream) const {
    check_cuda(cudaMemcpyAsync(get(uid), &value, sizeof value, cudaMemcpyHostToDevice, stream), "fp8 attention scale");
    check_cuda(cudaStreamSynchronize(stream), "fp8 attention scale");
  }
  float read_scalar(std::int64_t uid, cudaStream_t stream) const {
    float value = 0;
    check_cuda(cudaMemcpyAsync(&value, get(uid), sizeof value, cudaMemcpyDeviceToHost, stream), "fp8 attention amax");
    check_cuda(cudaStreamSynchronize(stream), "fp8 attention amax");
    return value;
  }
  const DeviceBuffer* buffer(std::int64_t uid) const {
    for (const auto& [u, b] : buffers) {
      if (u == uid) return &b;
    }
    return nullptr;
  }
  void* get(std::int64_t uid) const {
    const DeviceBuffer* b = buffer(uid);
    return b ? b->get() : nullptr;
  }
  // get(), except that the GQA full-head buffers ([b, hq, skv, d] in the io type) are made on
  // first use. nullptr for any other uid without a buffer.
  void* bind(std::int64_t uid) {
    if (void* p = get(uid)) return p;
    if (uid != kDKFullHead && uid != kDVFullHead) return nullptr;
    const Shape& s = shape;
    const std::int64_t d = uid == kDKFullHead ? s.dqk : s.dv;
    const std::size_t io_bytes = s.io == CUDNN_DATA_FP8_E4M3 ? 1 : 2;
    buffers.emplace_back(uid, DeviceBuffer(static_cast<std::size_t>(s.b * s.hq * s.skv * d) * io_bytes));
    return buffers.back().second.get();
  }
};

// cuDNN before 9.6.0 expects the backward's fp32 dQ accumulator zeroed by the caller before every
// execution (cudnn-frontend, collect_tensors_in_workspace_node: "prior to cuDNN 9.6.0, dQ_accum
// needed to be memset by frontend"); from 9.6.0 the engine initialises it itself.
bool caller_zeroes_dq_accum() { return cudnnGetVersion() < 90600; }

// Runs a plan on a stream. The variant pack binds exactly the graph's non-virtual tensors.
// prepare(stream) is the per-execution set-up that is not the attention's time (zeroing the dQ
// accumulator for cuDNN before 9.6.0); call it before every run(), outside any timed region.
class Executor {
 public:
  Executor(cudnnHandle_t handle, const Plan& plan, const GraphBuilder& graph, Tensors& t)
      : handle_(handle), plan_(plan), pack_(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR) {
    if (plan.workspace_bytes > 0) workspace_ = DeviceBuffer(static_cast<std::size_t>(plan.workspace_bytes));
    const std::vector<std::int64_t>& uids = graph.real_uids();
    std::vector<void*> ptrs;
    for (std::int64_t uid : uids) {
      void* p = uid == kScale ? &t.scale : uid == kOne ? &t.one : uid == kMaskValue ? &t.mask_value : t.bind(uid);
      if (!p) throw std::logic_error(fmt::format("SDPA graph tensor {} has no buffer", uid));
      ptrs.push_back(p);
      if (uid == kDQAccum && caller_zeroes_dq_accum()) {
        dq_accum_ = p;  // the device pointer, not the DeviceBuffer: bind() may grow t.buffers
        dq_accum_bytes_ = t.buffer(kDQAccum)->bytes();
      }
    }
    void* ws = workspace_.get();
    pack_.set(CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, uids.data(), static_cast<std::int64_t>(uids.size()));
    pack_.set(CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, ptrs.data(),
              static_cast<std::int64_t>(ptrs.size()));
    pack_.set(CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, &ws);
    pack_.finalize("variant pack");
  }
  void prepare(cudaStream_t stream) const {
    if (dq_accum_) check_cuda(cudaMemsetAsync(dq_accum_, 0, dq_accum_bytes_, stream), "zero dQ accumulator");
  }
  void run(cudaStream_t stream) {
    check_cudnn(cudnnSetStream(handle_, stream), "cudnnSetStream");
    check_cudnn(cudnnBackendExecute(handle_, plan_.plan->get(), pack_.get()), "cudnnBackendExecute");
  }

 private:
  cudnnHandle_t handle_;
  const Plan& plan_;
  DeviceBuffer workspace_;
  Desc pack_;
  void* dq_accum_ = nullptr;  // set when this execution must zero it (prepare)
  std::size_t dq_accum_bytes_ = 0;
};

// Fills O and Stats of `t` with a forward pass (the backward graph reads them).
void run_forward_for(cudnnHandle_t handle, AttentionKey key, Tensors& t, cudaStream_t stream) {
  key.direction = AttentionDirection::forward;
  const BuiltGraph fwd = build_graph(handle, key, 1);
  Executor ex(handle, fwd.plans.front(), *fwd.g, t);
  ex.prepare(stream);
  ex.run(stream);
  check_cuda(cudaStreamSynchronize(stream), "forward pass for the backward");
}

// The fp8 forward's largest |O - reference| (scales are 1, so O is the attention of the e4m3
// inputs), recomputed in double on the CPU from the same e4m3 inputs (the reference kernel reads
// 16-bit inputs only). Keep shapes tiny: O(b·h·sq·skv·d) on the CPU.
double fp8_forward_error(const AttentionKey& key, const Tensors& t, std::int64_t no) {
  const Shape s(key);
  auto host = [&](std::int64_t uid, std::int64_t n) {
    std::vector<double> v(n);
    copy_to_host_as_double(t.get(uid), n, key.dtype, v.data());
    return v;
  };
  const auto q = host(kQ, s.b * s.hq * s.sq * s.dqk), k = host(kK, s.b * s.hk * s.skv * s.dqk);
  const auto v = host(kV, s.b * s.hk * s.skv * s.dv), o = host(kO, no);
  const std::int64_t group = s.hq / s.hk;
  std::vector<double> p(s.skv);
  double worst = 0;
  for (std::int64_t b = 0; b < s.b; ++b) {
    for (std::int64_t h = 0; h < s.hq; ++h) {
      const double* Q = &q[((b * s.hq + h) * s.sq) * s.dqk];
      const double* K = &k[((b * s.hk + h / group) * s.skv) * s.dqk];
      const double* V = &v[((b * s.hk + h / group) * s.skv) * s.dv];
      const double* O = &o[((b * s.hq + h) * s.sq) * s.dv];
      for (std::int64_t i = 0; i < s.sq; ++i) {
        const std::int64_t last = key.causal ? std::min(i + 1, s.skv) : s.skv;
        double m = -INFINITY, sum = 0;
        for (std::int64_t j = 0; j < last; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < s.dqk; ++d) dot += Q[i * s.dqk + d] * K[j * s.dqk + d];
          p[j] = dot * t.scale;
          m = std::max(m, p[j]);
        }
        for (std::int64_t j = 0; j < last; ++j) sum += (p[j] = std::exp(p[j] - m));
        for (std::int64_t d = 0; d < s.dv; ++d) {
          double ref = 0;
          for (std::int64_t j = 0; j < last; ++j) ref += p[j] / sum * V[j * s.dv + d];
          if (!std::isfinite(O[i * s.dv + d])) return INFINITY;
          worst = std::max(worst, std::abs(O[i * s.dv + d] - ref));
        }
      }
    }
  }
  return worst;
}

std::string unsupported_reason(const AttentionKey& key) {
  if (key.dtype != DType::bf16 && key.dtype != DType::fp16 && key.dtype != DType::fp8_e4m3) {
    return fmt::format("{} attention is not measured: cuDNN's SDPA graphs take bf16, fp16 or fp8_e4m3",
                       calisim::to_string(key.dtype));
  }
  if (key.dtype == DType::fp8_e4m3) {
    int device = 0, major = 0, minor = 0;
    if (cudaGetDevice(&device) == cudaSuccess &&
        cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, device) == cudaSuccess &&
        cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, device) == cudaSuccess && major < 9) {
      return fmt::format("cuDNN's fp8 SDPA needs Hopper (sm_90) or newer; this GPU is sm_{}{}", major, minor);
    }
    if (key.direction == AttentionDirection::backward) {
      // cuDNN's fp8 backward engines (the frontend's SDPA_FP8_BWD checks): cuDNN 9.1 or newer,
      // not 9.10.0 (a known bug); Hopper takes head dims 128 / 128 only, Blackwell up to 128
      // (multiples of 16) or 192 / 128.
      const std::size_t v = cudnnGetVersion();
      if (v < 90100 || v == 91000) {
        return fmt::format("cuDNN {} has no usable fp8 SDPA backward (needs 9.1.0 or newer, not 9.10.0)", v);
      }
      const bool dims_ok = major == 9 ? key.head_dim_qk == 128 && key.head_dim_v == 128
                                      : (key.head_dim_qk <= 128 && key.head_dim_qk % 16 == 0 && key.head_dim_v <= 128 &&
                                         key.head_dim_v % 16 == 0) ||
                                            (key.head_dim_qk == 192 && key.head_dim_v == 128);
      if (!dims_ok) {
        return fmt::format("cuDNN's fp8 SDPA backward on sm_{}{} takes head dims {}; this key has {} / {}", major, minor,
                           major == 9 ? "128 / 128 only" : "up to 128 (multiples of 16) or 192 / 128",
                           key.head_dim_qk, key.head_dim_v);
      }
    }
  }
  if (key.heads_kv <= 0 || key.heads_q % key.heads_kv != 0) {
    return fmt::format("heads_q {} is not a multiple of heads_kv {}", key.heads_q, key.heads_kv);
  }
  return "";
}

}  // namespace

std::string AttentionBench::library_version() { return fmt::format("cudnn {}", cudnnGetVersion()); }

AttentionBench::AttentionBench(MeasureLoop& loop) : loop_(loop) { check_cudnn(cudnnCreate(&handle_), "cudnnCreate"); }

AttentionBench::~AttentionBench() {
  if (handle_) cudnnDestroy(handle_);
}

namespace {

// The graph, tensors and chosen executor of one key, kept together: the executor points into the
// graph's plans and at the tensors' host scalars, so all three live on the heap and never move.
class PreparedAttention final : public PreparedKernel {
 public:
  PreparedAttention(std::unique_ptr<BuiltGraph> built, std::unique_ptr<Tensors> t, std::unique_ptr<Executor> ex)
      : built_(std::move(built)), t_(std::move(t)), ex_(std::move(ex)) {}
  void run(cudaStream_t s) override { ex_->run(s); }
  void prepare_run(cudaStream_t s) override { ex_->prepare(s); }
  bool has_prepare_run() const override { return caller_zeroes_dq_accum(); }

 private:
  std::unique_ptr<BuiltGraph> built_;
  std::unique_ptr<Tensors> t_;
  std::unique_ptr<Executor> ex_;
};

}  // namespace

Prepared AttentionBench::prepare(const AttentionKey& key) {
  if (const std::string why = unsupported_reason(key); !why.empty()) return {nullptr, why};
  const bool backward = key.direction == AttentionDirection::backward;
  try {
    auto built = std::make_unique<BuiltGraph>(build_graph(handle_, key, kAttentionCandidates));
    auto t = std::make_unique<Tensors>(key, nullptr);
    check_cuda(cudaDeviceSynchronize(), "attention input fill");
    if (backward) run_forward_for(handle_, key, *t, nullptr);
    // Autotune over the heuristics' first candidates, as the GEMM benchmark does. Only the fastest
    // executor so far stays alive (at most two at a time): each holds its own workspace, and keeping
    // every candidate's would turn a long-sequence backward into a spurious out-of-memory skip.
    // Each candidate's untimed trial (it may fail for this shape) runs on the measuring stream and
    // is waited for, so it cannot overlap the timed samples (that stream does not wait for the
    // legacy default stream) nor share tensors with them.
    double best_s = INFINITY;
    std::size_t best = built->plans.size();
    std::unique_ptr<Executor> chosen_ex;
    std::string last_error;
    const cudaStream_t stream = loop_.stream();
    for (std::size_t i = 0; i < built->plans.size(); ++i) {
      try {
        auto ex = std::make_unique<Executor>(handle_, built->plans[i], *built->g, *t);
        ex->prepare(stream);
        ex->run(stream);
        check_cuda(cudaStreamSynchronize(stream), "cuDNN SDPA trial run");
        const double time_s = loop_.quick_median_s([&](cudaStream_t st) { ex->run(st); }, 5,
                                                   [&](cudaStream_t st) { ex->prepare(st); });
        if (time_s < best_s) {
          best_s = time_s;
          best = i;
          chosen_ex = std::move(ex);
        }
      } catch (const GpuError& e) {
        // A candidate that fails (its workspace does not fit, the engine rejects the shape) is
        // left out; a sticky CUDA error would surface again at the next call and end the run.
        last_error = e.what();
      }
    }
    if (!chosen_ex) return {nullptr, "every cuDNN SDPA engine failed; last: " + last_error};
    const std::string algorithm =
        fmt::format("cudnn sdpa {} engine {} workspace {} B (fastest of {})", built->variant,
                    built->plans[best].engine, built->plans[best].workspace_bytes, built->plans.size());
    auto k = std::make_unique<PreparedAttention>(std::move(built), std::move(t), std::move(chosen_ex));
    k->algorithm = algorithm;
    k->library = library_version();
    return {std::move(k), ""};
  } catch (const GpuError& e) {
    if (e.out_of_memory() || e.not_supported()) return {nullptr, e.what()};
    throw;
  }
}

Measurement AttentionBench::measure(const AttentionKey& key) {
  const Prepared p = prepare(key);
  // prepare_run (zeroing dQ_accum before cuDNN 9.6.0) runs before each sample, outside its time.
  try {
    return measure_prepared(loop_, p);
  } catch (const GpuError& e) {
    if (e.out_of_memory() || e.not_supported()) return Measurement::skipped_because(e.what());
    throw;
  }
}

double AttentionBench::check_against_reference(const AttentionKey& key, cudaStream_t stream) {
  if (const std::string why = unsupported_reason(key); !why.empty()) throw GpuError(why, GpuError::Kind::not_supported);
  AttentionKey fwd = key;
  fwd.direction = AttentionDirection::forward;
  Tensors t(fwd, stream);
  run_forward_for(handle_, fwd, t, stream);
  const std::int64_t no = key.batch * key.heads_q * key.seq_q * key.head_dim_v;
  if (key.dtype == DType::fp8_e4m3) return fp8_forward_error(key, t, no);
  DeviceBuffer ref(no * sizeof(float));
  const AttentionRefShape shape{key.batch,       key.heads_q,    key.heads_kv, key.seq_q,
                                key.seq_kv,      key.head_dim_qk, key.head_dim_v, key.causal,
                                key.dtype == DType::bf16};
  launch_attention_reference(shape, t.get(kQ), t.get(kK), t.get(kV), t.scale, ref.as<float>(), stream);
  check_cuda(cudaGetLastError(), "reference attention launch");
  check_cuda(cudaStreamSynchronize(stream), "SDPA and reference");
  std::vector<double> got(no), want(no);
  copy_to_host_as_double(t.get(kO), no, key.dtype, got.data());
  copy_to_host_as_double(ref.get(), no, DType::fp32, want.data());
  double worst = 0;
  for (std::int64_t i = 0; i < no; ++i) {
    if (!std::isfinite(got[i])) return INFINITY;
    worst = std::max(worst, std::abs(got[i] - want[i]));
  }
  return worst;
}

AttentionBench::GradientErrors AttentionBench::check_backward_against_cpu(const AttentionKey& key, cudaStream_t stream) {
  if (const std::string why = unsupported_reason(key); !why.empty()) throw GpuError(why, GpuError::Kind::not_supported);
  AttentionKey bwd = key;
  bwd.direction = AttentionDirection::backward;
  const Shape s(bwd);
  Tensors t(bwd, stream);
  run_forward_for(handle_, bwd, t, stream);
  const BuiltGraph built = build_graph(handle_, bwd, 1);
  Executor ex(handle_, built.plans.front(), *built.g, t);
  // The dQ accumulator starts as NaN (all bits set) and the backward runs twice: a dQ that is
  // accumulated into an unzeroed accumulator (cuDNN before 9.6.0 without prepare(), or a newer
  // one that did not initialise it) comes out NaN or doubled, not within rounding.
  if (const DeviceBuffer* acc = t.buffer(kDQAccum)) {
    check_cuda(cudaMemsetAsync(acc->get(), 0xFF, acc->bytes(), stream), "poison dQ accumulator");
  }
  for (int pass = 0; pass < 2; ++pass) {
    ex.prepare(stream);
    ex.run(stream);
  }
  check_cuda(cudaStreamSynchronize(stream), "SDPA backward");
  // fp8: gradients of random inputs are far below e4m3's smallest normal (2^-6) at scale 1, so the
  // check runs the way delayed scaling does: a first pass gives the amax of dQ, dK, dV and dP, the
  // scales become 448 / amax (dP's descale its inverse) and a second pass is compared, divided by
  // its scale. A graph that dropped or misplaced a scale is off by that factor, not by rounding.
  std::map<std::int64_t, double> unscale{{kDQ, 1.0}, {kDK, 1.0}, {kDV, 1.0}};
  if (key.dtype == DType::fp8_e4m3) {
    constexpr float kE4m3Max = 448.0f;
    const auto scale_for = [&](std::int64_t amax_uid) {
      const float amax = t.read_scalar(amax_uid, stream);
      if (!std::isfinite(amax) || amax <= 0) {
        throw GpuError(fmt::format("fp8 SDPA backward: amax {} of an output is not positive", amax),
                       GpuError::Kind::other);
      }
      return kE4m3Max / amax;
    };
    const float sq = scale_for(kAmaxDQ), sk = scale_for(kAmaxDK), sv = scale_for(kAmaxDV), sp = scale_for(kAmaxDP);
    t.set_scalar(kScaleDQ, sq, stream);
    t.set_scalar(kScaleDK, sk, stream);
    t.set_scalar(kScaleDV, sv, stream);
    t.set_scalar(kScaleDP, sp, stream);
    t.set_scalar(kDescaleDP, 1.0f / sp, stream);
    unscale = {{kDQ, 1.0 / sq}, {kDK, 1.0 / sk}, {kDV, 1.0 / sv}};
    ex.prepare(stream);
    ex.run(stream);
    check_cuda(cudaStreamSynchronize(stream), "SDPA fp8 backward, rescaled");
  }
  auto host = [&](std::int64_t uid, std::int64_t n) {
    std::vector<double> v(n);
    copy_to_host_as_double(t.get(uid), n, key.dtype, v.data());
    if (const auto u = unscale.find(uid); u != unscale.end()) {
      for (double& x : v) x *= u->second;
    }
    return v;
  };
  const std::int64_t nq = s.b * s.hq * s.sq * s.dqk, nk = s.b * s.hk * s.skv * s.dqk;
  const std::int64_t nv = s.b * s.hk * s.skv * s.dv, no = s.b * s.hq * s.sq * s.dv;
  const auto q = host(kQ, nq), k = host(kK, nk), v = host(kV, nv), d_o = host(kDO, no);
  const auto dq = host(kDQ, nq), dk = host(kDK, nk), dv = host(kDV, nv);
  std::vector<double> rq(nq, 0), rk(nk, 0), rv(nv, 0);
  const double scale = t.scale;
  const std::int64_t group = s.hq / s.hk;
  std::vector<double> p(s.skv), dp(s.skv), o(s.dv);
  for (std::int64_t b = 0; b < s.b; ++b) {
    for (std::int64_t h = 0; h < s.hq; ++h) {
      const std::int64_t g = h / group;
      const double* Q = &q[((b * s.hq + h) * s.sq) * s.dqk];
      const double* K = &k[((b * s.hk + g) * s.skv) * s.dqk];
      const double* V = &v[((b * s.hk + g) * s.skv) * s.dv];
      const double* dO = &d_o[((b * s.hq + h) * s.sq) * s.dv];
      double* dQ = &rq[((b * s.hq + h) * s.sq) * s.dqk];
      double* dK = &rk[((b * s.hk + g) * s.skv) * s.dqk];
      double* dV = &rv[((b * s.hk + g) * s.skv) * s.dv];
      for (std::int64_t i = 0; i < s.sq; ++i) {
        const std::int64_t last = key.causal ? std::min(i + 1, s.skv) : s.skv;
        double m = -INFINITY, sum = 0;
        for (std::int64_t j = 0; j < last; ++j) {
          double dot = 0;
          for (std::int64_t d = 0; d < s.dqk; ++d) dot += Q[i * s.dqk + d] * K[j * s.dqk + d];
          p[j] = dot * scale;
          m = std::max(m, p[j]);
        }
        for (std::int64_t j = 0; j < last; ++j) sum += (p[j] = std::exp(p[j] - m));
        std::fill(o.begin(), o.end(), 0.0);
        for (std::int64_t j = 0; j < last; ++j) {
          p[j] /= sum;
          for (std::int64_t d = 0; d < s.dv; ++d) o[d] += p[j] * V[j * s.dv + d];
        }
        double row = 0;  // rowsum(dO ∘ O)
        for (std::int64_t d = 0; d < s.dv; ++d) row += dO[i * s.dv + d] * o[d];
        for (std::int64_t j = 0; j < last; ++j) {
          dp[j] = 0;
          for (std::int64_t d = 0; d < s.dv; ++d) {
            dp[j] += dO[i * s.dv + d] * V[j * s.dv + d];
            dV[j * s.dv + d] += p[j] * dO[i * s.dv + d];
          }
          const double ds = p[j] * (dp[j] - row) * scale;
          for (std::int64_t d = 0; d < s.dqk; ++d) {
            dQ[i * s.dqk + d] += ds * K[j * s.dqk + d];
            dK[j * s.dqk + d] += ds * Q[i * s.dqk + d];
          }
        }
      }
    }
  }
  auto rel = [](const std::vector<double>& got, const std::vector<double>& want) {
    double worst = 0, peak = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
      if (!std::isfinite(got[i])) return static_cast<double>(INFINITY);
      worst = std::max(worst, std::abs(got[i] - want[i]));
      peak = std::max(peak, std::abs(want[i]));
    }
    return worst / std::max(peak, 1e-30);
  };
  return {rel(dq, rq), rel(dk, rk), rel(dv, rv)};
}

}  // namespace calisim::profiler
