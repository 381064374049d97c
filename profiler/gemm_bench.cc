#include "profiler/gemm_bench.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "profiler/fill_random.h"
#include "profiler/gpu_error.h"

namespace calisim::profiler {
namespace {

constexpr int kCandidates = 8;
constexpr int kQuickSamples = 5;

struct Types {
  cudaDataType_t a, b, c, d;
  cublasComputeType_t compute;
  DType c_dtype;  // for reading D back
};

Types types_for(const GemmKey& key) {
  const bool acc = key.accumulate;
  switch (key.dtype) {
    case DType::bf16:
      return {CUDA_R_16BF, CUDA_R_16BF, acc ? CUDA_R_32F : CUDA_R_16BF, acc ? CUDA_R_32F : CUDA_R_16BF,
              CUBLAS_COMPUTE_32F, acc ? DType::fp32 : DType::bf16};
    case DType::fp16:
      return {CUDA_R_16F, CUDA_R_16F, acc ? CUDA_R_32F : CUDA_R_16F, acc ? CUDA_R_32F : CUDA_R_16F,
              CUBLAS_COMPUTE_32F, acc ? DType::fp32 : DType::fp16};
    case DType::tf32:
      return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F_FAST_TF32, DType::fp32};
    case DType::fp32:
      return {CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUDA_R_32F, CUBLAS_COMPUTE_32F, DType::fp32};
    case DType::fp8_e4m3:
      return {CUDA_R_8F_E4M3, CUDA_R_8F_E4M3, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, DType::bf16};
    case DType::fp8_e5m2:
      // e5m2 x e5m2 has no cuBLASLt kernel; gradients in e5m2 meet e4m3 weights, as in TE.
      return {CUDA_R_8F_E4M3, CUDA_R_8F_E5M2, CUDA_R_16BF, CUDA_R_16BF, CUBLAS_COMPUTE_32F, DType::bf16};
  }
  return {};
}

// Storage types of A and B (they differ only for e5m2 keys, whose A is e4m3).
DType a_dtype(const GemmKey& key) { return key.dtype == DType::fp8_e5m2 ? DType::fp8_e4m3 : key.dtype; }
DType b_dtype(const GemmKey& key) { return key.dtype; }

// One GEMM problem: descriptors and buffers, released in the destructor.
struct Problem {
  GemmKey key;
  Types t{};
  cublasLtMatmulDesc_t op = nullptr;
  cublasLtMatrixLayout_t la = nullptr, lb = nullptr, lc = nullptr;
  DeviceBuffer a, b, c, scale;
  float alpha = 1.0f, beta = 0.0f;

  Problem(const Problem&) = delete;
  Problem& operator=(const Problem&) = delete;
  ~Problem() {
    if (la) cublasLtMatrixLayoutDestroy(la);
    if (lb) cublasLtMatrixLayoutDestroy(lb);
    if (lc) cublasLtMatrixLayoutDestroy(lc);
    if (op) cublasLtMatmulDescDestroy(op);
  }

  explicit Problem(const GemmKey& k, cudaStream_t stream) : key(k), t(types_for(k)) {
    const bool ta = to_string(k.layout)[0] == 'T';
    const bool tb = to_string(k.layout)[1] == 'T';
    const cublasOperation_t opa = ta ? CUBLAS_OP_T : CUBLAS_OP_N, opb = tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    check_cublas(cublasLtMatmulDescCreate(&op, t.compute, CUDA_R_32F), "cublasLtMatmulDescCreate");
    check_cublas(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &opa, sizeof opa), "TRANSA");
    check_cublas(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &opb, sizeof opb), "TRANSB");
    // Stored shapes (column-major): A is m x k, or k x m when transposed; B is k x n, or n x k.
    const std::int64_t a_rows = ta ? k.k : k.m, a_cols = ta ? k.m : k.k;
    const std::int64_t b_rows = tb ? k.n : k.k, b_cols = tb ? k.k : k.n;
    check_cublas(cublasLtMatrixLayoutCreate(&la, t.a, a_rows, a_cols, a_rows), "layout A");
    check_cublas(cublasLtMatrixLayoutCreate(&lb, t.b, b_rows, b_cols, b_rows), "layout B");
    check_cublas(cublasLtMatrixLayoutCreate(&lc, t.c, k.m, k.n, k.m), "layout C");
    const std::int64_t a_elems = a_rows * a_cols, b_elems = b_rows * b_cols, c_elems = k.m * k.n;
    if (k.batch > 1) {
      const int count = static_cast<int>(k.batch);
      for (auto [l, stride] : {std::pair{la, a_elems}, std::pair{lb, b_elems}, std::pair{lc, c_elems}}) {
        check_cublas(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof count),
                     "batch count");
        check_cublas(cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                                                      sizeof stride),
                     "batch stride");
      }
    }
    const double ea = bytes_per_element(a_dtype(k)), eb = bytes_per_element(b_dtype(k));
    const double ec = bytes_per_element(t.c_dtype);
    a = DeviceBuffer(static_cast<std::size_t>(ea * a_elems * k.batch));
    b = DeviceBuffer(static_cast<std::size_t>(eb * b_elems * k.batch));
    c = DeviceBuffer(static_cast<std::size_t>(ec * c_elems * k.batch));
    // Uniform in [-1, 1): |A·B| grows like sqrt(k), far from fp8 / bf16 overflow for any k here.
    fill_random(a.get(), a_elems * k.batch, a_dtype(k), 11, 1.0f, stream);
    fill_random(b.get(), b_elems * k.batch, b_dtype(k), 12, 1.0f, stream);
    fill_random(c.get(), c_elems * k.batch, t.c_dtype, 13, 1.0f, stream);
    if (k.accumulate) beta = 1.0f;
    if (k.dtype == DType::fp8_e4m3 || k.dtype == DType::fp8_e5m2) {
      // Per-tensor dequantisation scales live in device memory (fp8 needs them on Hopper).
      scale = DeviceBuffer(sizeof(float));
      const float one = 1.0f;
      check_cuda(cudaMemcpy(scale.get(), &one, sizeof one, cudaMemcpyHostToDevice), "fp8 scale");
      const void* p = scale.get();
      check_cublas(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &p, sizeof p), "A scale");
      check_cublas(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &p, sizeof p), "B scale");
    }
  }

  void run(cublasLtHandle_t h, const cublasLtMatmulAlgo_t& algo, DeviceBuffer& ws, cudaStream_t s) const {
    check_cublas(cublasLtMatmul(h, op, &alpha, a.get(), la, b.get(), lb, &beta, c.get(), lc, c.get(), lc, &algo,
                                ws.get(), ws.bytes(), s),
                 "cublasLtMatmul");
  }
};

std::vector<cublasLtMatmulHeuristicResult_t> heuristics(cublasLtHandle_t h, const Problem& p, std::size_t ws_bytes) {
  cublasLtMatmulPreference_t pref = nullptr;
  check_cublas(cublasLtMatmulPreferenceCreate(&pref), "cublasLtMatmulPreferenceCreate");
  cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &ws_bytes, sizeof ws_bytes);
  std::vector<cublasLtMatmulHeuristicResult_t> results(kCandidates);
  int found = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoGetHeuristic(h, p.op, p.la, p.lb, p.lc, p.lc, pref, kCandidates,
                                                           results.data(), &found);
  cublasLtMatmulPreferenceDestroy(pref);
  if (st != CUBLAS_STATUS_SUCCESS && st != CUBLAS_STATUS_NOT_SUPPORTED) check_cublas(st, "cublasLtMatmulAlgoGetHeuristic");
  results.resize(st == CUBLAS_STATUS_SUCCESS ? static_cast<std::size_t>(found) : 0);
  return results;
}

// One algorithm configuration attribute, read at the width cuBLASLt stores it (cublasLt.h:
// cublasLtMatmulAlgoConfigGetAttribute returns CUBLAS_STATUS_INVALID_VALUE when sizeInBytes
// does not match that storage); "unknown" when the call fails.
template <class T>
std::string algo_attribute(const cublasLtMatmulAlgo_t& algo, cublasLtMatmulAlgoConfigAttributes_t attr) {
  T value{};
  std::size_t written = 0;
  const cublasStatus_t st = cublasLtMatmulAlgoConfigGetAttribute(&algo, attr, &value, sizeof value, &written);
  if (st != CUBLAS_STATUS_SUCCESS || written != sizeof value) return "unknown";
  return fmt::format("{}", value);
}

}  // namespace

std::string describe_cublaslt_algo(const cublasLtMatmulAlgo_t& algo) {
  // Types as cublasLt.h declares them: the id and split-K count int32_t, tile and stages uint32_t.
  return fmt::format("cublasLt algo {} tile {} stages {} splitK {}",
                     algo_attribute<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_ID),
                     algo_attribute<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_TILE_ID),
                     algo_attribute<std::uint32_t>(algo, CUBLASLT_ALGO_CONFIG_STAGES_ID),
                     algo_attribute<std::int32_t>(algo, CUBLASLT_ALGO_CONFIG_SPLITK_NUM));
}

std::string GemmBench::library_version() { return fmt::format("cublasLt {}", cublasLtGetVersion()); }

GemmBench::GemmBench(MeasureLoop& loop) : loop_(loop), workspace_(kGemmWorkspaceBytes) {
  check_cublas(cublasLtCreate(&handle_), "cublasLtCreate");
}

GemmBench::~GemmBench() {
  if (handle_) cublasLtDestroy(handle_);
}

namespace {

class PreparedGemm final : public PreparedKernel {
 public:
  PreparedGemm(std::unique_ptr<Problem> p, const cublasLtMatmulAlgo_t& algo, cublasLtHandle_t h, DeviceBuffer& ws)
      : p_(std::move(p)), algo_(algo), handle_(h), workspace_(ws) {}
  void run(cudaStream_t s) override { p_->run(handle_, algo_, workspace_, s); }

 private:
  std::unique_ptr<Problem> p_;
  cublasLtMatmulAlgo_t algo_;
  cublasLtHandle_t handle_;
  DeviceBuffer& workspace_;
};

}  // namespace

Prepared GemmBench::prepare(const GemmKey& key) {
  std::unique_ptr<Problem> p;
  try {
    p = std::make_unique<Problem>(key, nullptr);
  } catch (const GpuError& e) {
    if (e.out_of_memory() || e.not_supported()) return {nullptr, e.what()};
    throw;
  }
  check_cuda(cudaDeviceSynchronize(), "GEMM input fill");
  const auto candidates = heuristics(handle_, *p, workspace_.bytes());
  if (candidates.empty()) {
    return {nullptr, fmt::format("cuBLASLt offers no algorithm for {} {} on this GPU", calisim::to_string(key.dtype),
                                 to_string(key.layout))};
  }
  // Autotune: each candidate briefly, after one untimed run that may fail for this shape. The
  // trial runs on the measuring stream and is waited for: on the legacy default stream it could
  // overlap the first timed samples (the measuring stream is non-blocking) and share the workspace.
  double best_s = INFINITY;
  const cublasLtMatmulAlgo_t* best = nullptr;
  std::string last_error;
  const cudaStream_t stream = loop_.stream();
  for (const auto& c : candidates) {
    try {
      p->run(handle_, c.algo, workspace_, stream);
      check_cuda(cudaStreamSynchronize(stream), "cuBLASLt trial run");
      const double t = loop_.quick_median_s([&](cudaStream_t s) { p->run(handle_, c.algo, workspace_, s); },
                                            kQuickSamples);
      if (t < best_s) {
        best_s = t;
        best = &c.algo;
      }
    } catch (const GpuError& e) {
      last_error = e.what();
    }
  }
  if (!best) return {nullptr, "every cuBLASLt candidate failed; last: " + last_error};
  auto k = std::make_unique<PreparedGemm>(std::move(p), *best, handle_, workspace_);
  k->algorithm = describe_cublaslt_algo(*best) + fmt::format(" (fastest of {})", candidates.size());
  k->library = library_version();
  return {std::move(k), ""};
}

Measurement GemmBench::measure(const GemmKey& key) {
  return measure_prepared(loop_, prepare(key));
}

double GemmBench::check_against_cpu(const GemmKey& key, cudaStream_t stream) {
  Problem p(key, stream);
  const auto candidates = heuristics(handle_, p, workspace_.bytes());
  if (candidates.empty()) throw GpuError("no cuBLASLt algorithm for the check", GpuError::Kind::not_supported);
  const bool ta = to_string(key.layout)[0] == 'T', tb = to_string(key.layout)[1] == 'T';
  const std::int64_t m = key.m, n = key.n, k = key.k, batch = key.batch;
  std::vector<double> a(m * k * batch), b(k * n * batch), c0(m * n * batch), d(m * n * batch);
  check_cuda(cudaStreamSynchronize(stream), "fill");
  copy_to_host_as_double(p.a.get(), m * k * batch, a_dtype(key), a.data());
  copy_to_host_as_double(p.b.get(), k * n * batch, b_dtype(key), b.data());
  copy_to_host_as_double(p.c.get(), m * n * batch, p.t.c_dtype, c0.data());
  p.run(handle_, candidates.front().algo, workspace_, stream);
  check_cuda(cudaStreamSynchronize(stream), "cublasLtMatmul");
  copy_to_host_as_double(p.c.get(), m * n * batch, p.t.c_dtype, d.data());
  double err = 0, norm = 0;
  for (std::int64_t q = 0; q < batch; ++q) {
    const double* A = a.data() + q * m * k;
    const double* B = b.data() + q * k * n;
    for (std::int64_t j = 0; j < n; ++j) {
      for (std::int64_t i = 0; i < m; ++i) {
        double ref = key.accumulate ? c0[q * m * n + j * m + i] : 0.0;
        for (std::int64_t l = 0; l < k; ++l) {
          const double av = ta ? A[i * k + l] : A[l * m + i];  // op(A)[i, l]
          const double bv = tb ? B[l * n + j] : B[j * k + l];  // op(B)[l, j]
          ref += av * bv;
        }
        const double got = d[q * m * n + j * m + i];
        if (!std::isfinite(got)) return INFINITY;
        err += (got - ref) * (got - ref);
        norm += ref * ref;
      }
    }
  }
  return std::sqrt(err / std::max(norm, 1e-300));
}

}  // namespace calisim::profiler
