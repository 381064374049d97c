#include "profiler/cupti_timer.h"

#include <cupti.h>
#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <set>
#include <unordered_map>

#include "profiler/cupti_records.h"
#include "profiler/gpu_error.h"

namespace calisim::profiler {
namespace {

using KernelRecord = CuptiKernelRecord;
constexpr std::size_t kBufferBytes = kCuptiBufferBytes;
constexpr std::size_t kAlign = kCuptiBufferAlign;

struct KernelSeen {
  std::uint32_t correlation = 0;
  std::uint64_t start_ns = 0, end_ns = 0;
  std::string name;
};

// CUPTI's buffer callbacks are plain functions called from CUPTI's threads; what they collect
// lives here, behind a mutex, until harvest() takes it.
struct Collected {
  std::mutex mu;
  std::vector<KernelSeen> kernels;
  std::unordered_map<std::uint32_t, std::uint64_t> external_of;  // correlation id -> external id
  std::atomic<std::size_t> dropped{0};
};
Collected& collected() {
  static Collected c;
  return c;
}
std::atomic<bool> g_instance_alive{false};

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;  // as many as fit
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t /*size*/, size_t valid) {
  Collected& c = collected();
  {
    std::lock_guard lock(c.mu);
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
        const auto* k = reinterpret_cast<const KernelRecord*>(rec);
        if (k->start == 0 && k->end == 0) continue;  // timestamps not collected
        c.kernels.push_back({k->correlationId, k->start, k->end, k->name ? k->name : ""});
      } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(rec);
        if (e->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0) c.external_of[e->correlationId] = e->externalId;
      }
    }
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS) c.dropped += dropped;
  std::free(buffer);
}

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return fmt::format("{} ({})", s ? s : "unknown CUPTI error", static_cast<int>(r));
}

const CUpti_ActivityKind kKinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                     CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_ACTIVITY_KIND_RUNTIME};

}  // namespace

std::unique_ptr<CuptiTimer> CuptiTimer::create(std::string* why_not) {
  if (g_instance_alive.exchange(true)) {
    if (why_not) *why_not = "another CuptiTimer is active in this process";
    return nullptr;
  }
  auto fail = [&](const char* step, CUptiResult r) -> std::unique_ptr<CuptiTimer> {
    for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
    g_instance_alive = false;
    if (why_not) {
      *why_not = fmt::format("{} failed: {}", step, cupti_error(r));
      if (r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED) *why_not += " (another CUPTI client holds this process)";
    }
    return nullptr;
  };
  CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) return fail("cuptiActivityRegisterCallbacks", r);
  for (CUpti_ActivityKind k : kKinds) {
    r = cuptiActivityEnable(k);
    if (r != CUPTI_SUCCESS) return fail("cuptiActivityEnable", r);
  }
  return std::unique_ptr<CuptiTimer>(new CuptiTimer());
}

CuptiTimer::~CuptiTimer() {
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind k : kKinds) cuptiActivityDisable(k);
  Collected& c = collected();
  std::lock_guard lock(c.mu);
  c.kernels.clear();
  c.external_of.clear();
  g_instance_alive = false;
}

std::size_t CuptiTimer::dropped_records() const { return collected().dropped.load(); }

void CuptiTimer::begin(cudaStream_t) {
  const std::uint64_t id = next_id_++;
  pending_.push_back(id);
  const CUptiResult r = cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  if (r != CUPTI_SUCCESS) throw GpuError("cuptiActivityPushExternalCorrelationId: " + cupti_error(r), GpuError::Kind::other);
}

void CuptiTimer::end(cudaStream_t) {
  std::uint64_t last = 0;
  const CUptiResult r = cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  if (r != CUPTI_SUCCESS) throw GpuError("cuptiActivityPopExternalCorrelationId: " + cupti_error(r), GpuError::Kind::other);
}

std::vector<OpTiming> CuptiTimer::harvest(cudaStream_t stream) {
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const CUptiResult fr = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (fr != CUPTI_SUCCESS) throw GpuError("cuptiActivityFlushAll: " + cupti_error(fr), GpuError::Kind::other);

  std::vector<KernelSeen> kernels;
  std::unordered_map<std::uint32_t, std::uint64_t> external_of;
  {
    Collected& c = collected();
    std::lock_guard lock(c.mu);
    kernels.swap(c.kernels);
    external_of.swap(c.external_of);
  }
  struct Acc {
    std::uint64_t first = UINT64_MAX, last = 0, sum = 0;
    int n = 0;
  };
  std::unordered_map<std::uint64_t, Acc> by_op;
  std::set<std::string> names;
  for (const KernelSeen& k : kernels) {
    const auto it = external_of.find(k.correlation);
    if (it == external_of.end()) continue;  // launched outside any begin()/end() pair
    Acc& a = by_op[it->second];
    a.first = std::min(a.first, k.start_ns);
    a.last = std::max(a.last, k.end_ns);
    a.sum += k.end_ns - k.start_ns;
    ++a.n;
    names.insert(k.name);
  }
  std::vector<OpTiming> out;
  out.reserve(pending_.size());
  for (std::uint64_t id : pending_) {
    const auto it = by_op.find(id);
    if (it == by_op.end()) {
      pending_.clear();
      throw GpuError(fmt::format("CUPTI delivered no kernel for operation {} (dropped records: {})", id,
                                 dropped_records()),
                     GpuError::Kind::other);
    }
    OpTiming t;
    t.span_s = static_cast<double>(it->second.last - it->second.first) * 1e-9;
    t.kernel_sum_s = static_cast<double>(it->second.sum) * 1e-9;
    t.kernels = it->second.n;
    out.push_back(t);
  }
  pending_.clear();
  names_.assign(names.begin(), names.end());
  return out;
}

}  // namespace calisim::profiler
