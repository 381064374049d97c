#include "profiler/cupti_timer.h"

#include <cupti.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <utility>

#include "profiler/cupti_attribution.h"
#include "profiler/cupti_records.h"
#include "profiler/gpu_error.h"

namespace calisim::profiler {
namespace {

using KernelRecord = CuptiKernelRecord;
constexpr std::size_t kBufferBytes = kCuptiBufferBytes;
constexpr std::size_t kAlign = kCuptiBufferAlign;

// CUPTI's buffer callbacks are plain functions called from CUPTI's threads; what they collect
// lives here, behind a mutex, until harvest() takes it.
struct Collected {
  std::mutex mu;
  std::vector<KernelRecordTimes> kernels;  // every kernel record, complete or not
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
        // Kept even when end <= start (no timestamps, or flushed before the end was written):
        // attribute_kernels() counts such records against their op instead of timing them.
        const auto* k = reinterpret_cast<const KernelRecord*>(rec);
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

void CuptiTimer::set_collecting(bool on) {
  if (on == collecting_) return;
  // Recorded first: after a partial failure a later call still walks every kind again.
  collecting_ = on;
  for (CUpti_ActivityKind k : kKinds) {
    const CUptiResult r = on ? cuptiActivityEnable(k) : cuptiActivityDisable(k);
    if (r != CUPTI_SUCCESS) {
      throw GpuError(fmt::format("{} (kind {}): {}", on ? "cuptiActivityEnable" : "cuptiActivityDisable",
                                 static_cast<int>(k), cupti_error(r)),
                     GpuError::Kind::other);
    }
  }
}

void CuptiTimer::begin(cudaStream_t) {
  const std::uint64_t id = next_id_++;
  const CUptiResult r = cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  if (r != CUPTI_SUCCESS) throw GpuError("cuptiActivityPushExternalCorrelationId: " + cupti_error(r), GpuError::Kind::other);
  pending_.push_back(id);  // only once pushed: a failed begin() leaves no op to wait for
}

void CuptiTimer::end(cudaStream_t) {
  std::uint64_t last = 0;
  const CUptiResult r = cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
  if (r != CUPTI_SUCCESS) throw GpuError("cuptiActivityPopExternalCorrelationId: " + cupti_error(r), GpuError::Kind::other);
}

std::vector<OpTiming> CuptiTimer::harvest(cudaStream_t stream) {
  // Take the pending ops first: a throw below must not leave them for the next harvest.
  const std::vector<std::uint64_t> ids = std::exchange(pending_, {});
  check_cuda(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
  const CUptiResult fr = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (fr != CUPTI_SUCCESS) throw GpuError("cuptiActivityFlushAll: " + cupti_error(fr), GpuError::Kind::other);

  std::vector<KernelRecordTimes> kernels;
  std::unordered_map<std::uint32_t, std::uint64_t> external_of;
  {
    Collected& c = collected();
    std::lock_guard lock(c.mu);
    kernels.swap(c.kernels);
    external_of.swap(c.external_of);
  }
  const KernelAttribution a = attribute_kernels(kernels, external_of, ids);
  incomplete_ += a.incomplete_records;
  std::vector<OpTiming> out;
  out.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    const OpKernelTimes& op = a.ops[i];
    if (!op.seen) {
      throw GpuError(fmt::format("CUPTI delivered no kernel for operation {} (dropped records: {}, records without "
                                 "a valid end so far: {})",
                                 ids[i], dropped_records(), incomplete_),
                     GpuError::Kind::other);
    }
    OpTiming t;
    if (op.kernels > 0) {
      t.span_s = static_cast<double>(op.last_ns - op.first_ns) * 1e-9;
      t.kernel_sum_s = static_cast<double>(op.sum_ns) * 1e-9;
    }
    t.kernels = op.kernels;
    t.incomplete_kernels = op.incomplete;
    out.push_back(t);
  }
  names_ = a.names;
  return out;
}

}  // namespace calisim::profiler
