// libcalisim_trace.so: records every kernel, memory copy and memset a CUDA program runs, for
// CUDA_INJECTION64_PATH.
//
//   CUDA_INJECTION64_PATH=/path/libcalisim_trace.so CALISIM_TRACE_DB=trace.db python train.py
//
// The CUDA driver loads the library named by CUDA_INJECTION64_PATH when the program initialises
// CUDA and calls its InitializeInjection(). That subscribes the CUPTI Activity API to
// CONCURRENT_KERNEL records (each kernel's name, grid, block, device, stream, start and end),
// MEMCPY / MEMCPY2 (peer) / MEMSET records (bytes, direction or memory kind, device, stream,
// start and end; profiler/trace_copies.h), and the CUPTI callback API to NVTX push/pop ranges
// and kernel-launch API calls: at each launch the innermost NVTX range open on the launching
// thread is remembered under the launch's correlation id, which the kernel record carries
// (copies and memsets: under the driver copy / memset call's id, which their records carry). At exit (atexit) the buffers are flushed
// (cuptiActivityFlushAll, forced), names demangled and classified (kernel_class.h), and one trace
// run per device written into the database named by CALISIM_TRACE_DB (trace_writer.h).
//
// NVTX ranges reach CUPTI only when NVTX's injection points at CUPTI: when NVTX_INJECTION64_PATH
// is unset this library sets it to the libcupti it runs with before the program's first NVTX call
// can read it; set it yourself when the program calls NVTX before CUDA (docs/profiling.md).
// Only one CUPTI client may subscribe per process: under Nsight or torch.profiler the subscription
// fails and the library says so on stderr and records nothing. Records are kept in memory until
// exit, at most CALISIM_TRACE_MAX_KERNELS (kernels, copies and memsets together; default
// 1,000,000; later ones are counted in the run's notes, not stored). A program that leaves
// through _exit or a signal writes nothing.
#include <cuda.h>
#include <cupti.h>
#include <dlfcn.h>
#include <fmt/format.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "generated_nvtx_meta.h"
#include "profiler/cupti_records.h"
#include "profiler/trace_copies.h"
#include "profiler/trace_writer.h"

namespace {

using calisim::db::TraceKernel;

using calisim::profiler::CuptiKernelRecord;
using calisim::profiler::CuptiMemcpyRecord;
using calisim::profiler::CuptiMemsetRecord;
using calisim::profiler::CuptiPeerCopyRecord;
using KernelRecord = CuptiKernelRecord;

// trace_copies.h names CUPTI's copy and memory kinds by their numbers.
static_assert(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD == 1 && CUPTI_ACTIVITY_MEMCPY_KIND_DTOH == 2 &&
              CUPTI_ACTIVITY_MEMCPY_KIND_HTOA == 3 && CUPTI_ACTIVITY_MEMCPY_KIND_DTOD == 8 &&
              CUPTI_ACTIVITY_MEMCPY_KIND_HTOH == 9 && CUPTI_ACTIVITY_MEMCPY_KIND_PTOP == 10);
static_assert(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE == 1 && CUPTI_ACTIVITY_MEMORY_KIND_PINNED == 2 &&
              CUPTI_ACTIVITY_MEMORY_KIND_DEVICE == 3 && CUPTI_ACTIVITY_MEMORY_KIND_MANAGED == 5 &&
              CUPTI_ACTIVITY_MEMORY_KIND_MANAGED_STATIC == 7);
constexpr std::size_t kBufferBytes = calisim::profiler::kCuptiBufferBytes;
constexpr std::size_t kAlign = calisim::profiler::kCuptiBufferAlign;
// Kernels kept in memory until exit (~64 bytes each plus each distinct name once); more are
// counted, not stored. A long
// training run should be traced for a few steps, not whole (CALISIM_TRACE_MAX_KERNELS).
constexpr std::size_t kDefaultMaxKernels = 1'000'000;

// One kernel as collected (~64 bytes): names are interned, full records are built at exit.
struct RawKernel {
  std::uint64_t start_ns, end_ns;
  std::uint32_t name, range;  // indexes into Trace::names / range_names; range kNoRange = none
  std::uint32_t device, stream;
  std::int32_t grid[3], block[3];
};
constexpr std::uint32_t kNoRange = UINT32_MAX;

struct Trace {
  std::mutex mu;
  std::vector<RawKernel> kernels;
  std::vector<TraceKernel> copies;  // memcpy and memset records, complete (trace_copies.h)
  std::vector<std::string> names;
  std::unordered_map<std::string, std::uint32_t> name_index;
  std::unordered_map<std::uint32_t, std::uint32_t> range_of;  // correlation id -> index in range_names
  std::vector<std::string> range_names;                        // interned NVTX range names
  std::unordered_map<std::string, std::uint32_t> range_index;
  std::atomic<std::size_t> dropped{0};
  std::size_t max_kernels = kDefaultMaxKernels;
  std::size_t over_cap = 0;  // kernels seen after max_kernels were stored
  std::atomic<bool> nvtx_seen{false};
  std::string db_path, started_at;
  std::string missing_kinds;  // activity kinds CUPTI refused to enable (noted on the run)
  CUpti_SubscriberHandle subscriber = nullptr;
  bool active = false;
};
Trace& trace() {
  static Trace* t = new Trace();  // never destroyed: the atexit handler may run after static destructors
  return *t;
}

// NVTX push/pop ranges open on this thread, innermost last.
thread_local std::vector<std::string> t_ranges;
// Runtime API calls in progress on this thread: a driver launch inside one is the same launch.
thread_local int t_runtime_depth = 0;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(kAlign, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream_id, uint8_t* buffer, size_t, size_t valid) {
  Trace& t = trace();
  {
    std::lock_guard lock(t.mu);
    CUpti_Activity* rec = nullptr;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
      const bool copy = rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY || rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY2 ||
                        rec->kind == CUPTI_ACTIVITY_KIND_MEMSET;
      if (copy) {
        // Copies and memsets carry the driver call's correlation id (CUPTI's record docs).
        const std::uint32_t correlation = rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY
                                              ? reinterpret_cast<const CuptiMemcpyRecord*>(rec)->correlationId
                                          : rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY2
                                              ? reinterpret_cast<const CuptiPeerCopyRecord*>(rec)->correlationId
                                              : reinterpret_cast<const CuptiMemsetRecord*>(rec)->correlationId;
        const auto range = t.range_of.find(correlation);
        const std::uint32_t range_index = range != t.range_of.end() ? range->second : kNoRange;
        if (range != t.range_of.end()) t.range_of.erase(range);
        if (t.kernels.size() + t.copies.size() >= t.max_kernels) {
          ++t.over_cap;
          continue;
        }
        if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY) {
          const auto* c = reinterpret_cast<const CuptiMemcpyRecord*>(rec);
          t.copies.push_back(calisim::profiler::copy_record(
              {c->copyKind, c->bytes, c->start, c->end, static_cast<int>(c->deviceId), c->streamId, -1, -1}));
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_MEMCPY2) {
          const auto* c = reinterpret_cast<const CuptiPeerCopyRecord*>(rec);
          t.copies.push_back(calisim::profiler::copy_record({c->copyKind, c->bytes, c->start, c->end,
                                                             static_cast<int>(c->deviceId), c->streamId,
                                                             static_cast<int>(c->srcDeviceId),
                                                             static_cast<int>(c->dstDeviceId)}));
        } else {
          const auto* m = reinterpret_cast<const CuptiMemsetRecord*>(rec);
          t.copies.push_back(calisim::profiler::memset_record(
              {m->memoryKind, m->bytes, m->start, m->end, static_cast<int>(m->deviceId), m->streamId}));
        }
        if (range_index != kNoRange) t.copies.back().nvtx_range = t.range_names[range_index];
        continue;
      }
      if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && rec->kind != CUPTI_ACTIVITY_KIND_KERNEL) continue;
      const auto* k = reinterpret_cast<const KernelRecord*>(rec);
      if (t.kernels.size() + t.copies.size() >= t.max_kernels) {
        ++t.over_cap;
        t.range_of.erase(k->correlationId);
        continue;
      }
      RawKernel out{};
      const std::string name = k->name ? k->name : "";  // demangled and classified at exit, once per name
      const auto [it, added] = t.name_index.try_emplace(name, static_cast<std::uint32_t>(t.names.size()));
      if (added) t.names.push_back(name);
      out.name = it->second;
      out.device = k->deviceId;
      out.stream = k->streamId;
      out.grid[0] = k->gridX, out.grid[1] = k->gridY, out.grid[2] = k->gridZ;
      out.block[0] = k->blockX, out.block[1] = k->blockY, out.block[2] = k->blockZ;
      out.start_ns = k->start;
      out.end_ns = k->end >= k->start ? k->end : k->start;
      out.range = kNoRange;
      const auto r = t.range_of.find(k->correlationId);
      if (r != t.range_of.end()) {
        out.range = r->second;
        t.range_of.erase(r);
      }
      t.kernels.push_back(out);
    }
  }
  std::size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(ctx, stream_id, &dropped) == CUPTI_SUCCESS) t.dropped += dropped;
  std::free(buffer);
}

bool is_launch(CUpti_CallbackDomain domain, CUpti_CallbackId cbid) {
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    return cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_ptsz_v7000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_v11060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernelExC_ptsz_v11060 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_v9000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaLaunchCooperativeKernel_ptsz_v9000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000 ||
           cbid == CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_ptsz_v10000;
  }
  return cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx || cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuLaunchCooperativeKernel_ptsz || cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch ||
         cbid == CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz;
}

void CUPTIAPI on_callback(void*, CUpti_CallbackDomain domain, CUpti_CallbackId cbid, const void* data) {
  Trace& t = trace();
  if (domain == CUPTI_CB_DOMAIN_NVTX) {
    const auto* nv = static_cast<const CUpti_NvtxData*>(data);
    switch (cbid) {
      case CUPTI_CBID_NVTX_nvtxRangePushA: {
        const auto* p = static_cast<const nvtxRangePushA_params*>(nv->functionParams);
        t_ranges.emplace_back(p && p->message ? p->message : "");
        t.nvtx_seen = true;
        break;
      }
      case CUPTI_CBID_NVTX_nvtxRangePushEx:
      case CUPTI_CBID_NVTX_nvtxDomainRangePushEx: {
        const nvtxEventAttributes_t* a =
            cbid == CUPTI_CBID_NVTX_nvtxRangePushEx
                ? static_cast<const nvtxRangePushEx_params*>(nv->functionParams)->eventAttrib
                : static_cast<const nvtxDomainRangePushEx_params*>(nv->functionParams)->core.eventAttrib;
        const bool ascii = a && a->messageType == NVTX_MESSAGE_TYPE_ASCII && a->message.ascii;
        t_ranges.emplace_back(ascii ? a->message.ascii : "");
        t.nvtx_seen = true;
        break;
      }
      case CUPTI_CBID_NVTX_nvtxRangePop:
      case CUPTI_CBID_NVTX_nvtxDomainRangePop:
        if (!t_ranges.empty()) t_ranges.pop_back();
        break;
      default:
        break;
    }
    return;
  }
  const auto* cb = static_cast<const CUpti_CallbackData*>(data);
  const bool enter = cb->callbackSite == CUPTI_API_ENTER;
  // Copies and memsets are matched at the driver call, even inside a runtime call: their
  // records carry the driver call's correlation id.
  const bool copy = domain == CUPTI_CB_DOMAIN_DRIVER_API && cb->functionName &&
                    calisim::profiler::is_copy_api(cb->functionName);
  if (domain == CUPTI_CB_DOMAIN_RUNTIME_API) {
    if (!enter) {
      --t_runtime_depth;
      return;
    }
    ++t_runtime_depth;
  } else if (t_runtime_depth > 0 && !copy) {
    return;  // the driver half of a runtime launch: the kernel carries the runtime call's id
  }
  if (!enter || t_ranges.empty() || !(copy || is_launch(domain, cbid))) return;
  std::lock_guard lock(t.mu);
  const auto [it, added] = t.range_index.try_emplace(t_ranges.back(), static_cast<std::uint32_t>(t.range_names.size()));
  if (added) t.range_names.push_back(t_ranges.back());
  t.range_of[cb->correlationId] = it->second;
}

std::string program_name() {
  std::ifstream f("/proc/self/cmdline", std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  for (char& c : all) {
    if (c == '\0') c = ' ';
  }
  while (!all.empty() && all.back() == ' ') all.pop_back();
  return all.size() > 200 ? all.substr(0, 200) + "..." : all;
}

void write_at_exit() {
  Trace& t = trace();
  if (!t.active) return;
  t.active = false;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                   CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET}) {
    cuptiActivityDisable(kind);
  }
  if (t.subscriber) cuptiUnsubscribe(t.subscriber);
  std::vector<RawKernel> raw;
  std::vector<TraceKernel> copies;
  {
    std::lock_guard lock(t.mu);
    raw.swap(t.kernels);
    copies.swap(t.copies);
  }
  // Demangle and classify each distinct name once.
  std::vector<TraceKernel> named(t.names.size());
  for (std::size_t i = 0; i < t.names.size(); ++i) {
    named[i].name = t.names[i];
    calisim::profiler::finish_trace_kernel(named[i]);
  }
  std::vector<TraceKernel> kernels;
  kernels.reserve(raw.size() + copies.size());
  std::map<int, std::string> names;
  const auto name_device = [&](int device) {
    if (names.count(device) != 0) return;
    char buf[256] = {};
    CUdevice dev = 0;
    // The driver is still loaded at exit (it loaded this library); the name needs no context.
    if (cuDeviceGet(&dev, device) == CUDA_SUCCESS && cuDeviceGetName(buf, sizeof buf, dev) == CUDA_SUCCESS) {
      names[device] = buf;
    }
  };
  for (TraceKernel& c : copies) {
    name_device(c.device);
    kernels.push_back(std::move(c));
  }
  for (const RawKernel& r : raw) {
    TraceKernel k;
    k.name = named[r.name].name;
    k.kernel_class = named[r.name].kernel_class;
    k.device = static_cast<int>(r.device);
    k.stream = r.stream;
    k.grid_x = r.grid[0], k.grid_y = r.grid[1], k.grid_z = r.grid[2];
    k.block_x = r.block[0], k.block_y = r.block[1], k.block_z = r.block[2];
    k.start_ns = r.start_ns;
    k.end_ns = r.end_ns;
    if (r.range != kNoRange) k.nvtx_range = t.range_names[r.range];
    name_device(k.device);
    kernels.push_back(std::move(k));
  }
  std::string notes = fmt::format("trace of `{}`", program_name());
  if (const auto rank = calisim::profiler::launcher_rank([](const char* v) { return std::getenv(v); })) {
    notes += fmt::format("; rank {} of {}", rank->first, rank->second);
  }
  if (t.dropped > 0) notes += fmt::format("; CUPTI dropped {} activity records (buffers full)", t.dropped.load());
  if (!t.nvtx_seen) notes += "; no NVTX ranges seen";
  if (!t.missing_kinds.empty()) notes += fmt::format("; not traced (CUPTI refused): {}", t.missing_kinds);
  if (t.over_cap > 0) {
    notes += fmt::format(
        "; {} more kernels / copies ran after the first {} and were not stored (CALISIM_TRACE_MAX_KERNELS)", t.over_cap,
        t.max_kernels);
    std::fprintf(stderr, "calisim_trace: %zu records beyond CALISIM_TRACE_MAX_KERNELS=%zu were not stored\n",
                 t.over_cap, t.max_kernels);
  }
  try {
    const auto r = calisim::profiler::store_trace(t.db_path, std::move(kernels), names,
                                                  {notes, t.started_at});
    for (const auto& w : r.warnings) std::fprintf(stderr, "calisim_trace: %s\n", w.c_str());
    for (const auto& [device, run] : r.run_by_device) {
      std::fprintf(stderr, "calisim_trace: CUDA device %d: trace run %lld in %s (calisim db show %s DEVICE)\n", device,
                   static_cast<long long>(run), t.db_path.c_str(), t.db_path.c_str());
    }
    if (r.run_by_device.empty()) std::fprintf(stderr, "calisim_trace: the program ran no kernels; nothing written\n");
  } catch (const std::exception& e) {
    std::fprintf(stderr, "calisim_trace: could not write the trace to %s: %s\n", t.db_path.c_str(), e.what());
  }
}

std::string cupti_error(CUptiResult r) {
  const char* s = nullptr;
  cuptiGetResultString(r, &s);
  return s ? s : fmt::format("CUPTI error {}", static_cast<int>(r));
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  Trace& t = trace();
  if (t.active) return 1;
  const char* db = std::getenv("CALISIM_TRACE_DB");
  if (!db || !*db) {
    std::fprintf(stderr, "calisim_trace: CALISIM_TRACE_DB is not set (the database to write the trace into); "
                         "tracing nothing\n");
    return 1;
  }
  t.db_path = db;
  if (const char* cap = std::getenv("CALISIM_TRACE_MAX_KERNELS"); cap && *cap) {
    char* end = nullptr;
    const unsigned long long v = std::strtoull(cap, &end, 10);
    if (end && *end == '\0' && v > 0) {
      t.max_kernels = static_cast<std::size_t>(v);
    } else {
      std::fprintf(stderr, "calisim_trace: CALISIM_TRACE_MAX_KERNELS='%s' is not a positive integer; using %zu\n",
                   cap, t.max_kernels);
    }
  }
  t.started_at = calisim::profiler::utc_now_iso();
  if (!std::getenv("NVTX_INJECTION64_PATH")) {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&cuptiSubscribe), &info) != 0 && info.dli_fname) {
      setenv("NVTX_INJECTION64_PATH", info.dli_fname, 0);
    }
  }
  auto fail = [&](const char* step, CUptiResult r) {
    std::fprintf(stderr, "calisim_trace: %s failed: %s%s; tracing nothing\n", step, cupti_error(r).c_str(),
                 r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? " (another CUPTI client holds this process)" : "");
    return 1;
  };
  CUptiResult r = cuptiSubscribe(&t.subscriber, on_callback, nullptr);
  if (r != CUPTI_SUCCESS) return fail("cuptiSubscribe", r);
  for (CUpti_CallbackDomain d : {CUPTI_CB_DOMAIN_NVTX, CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_CB_DOMAIN_DRIVER_API}) {
    r = cuptiEnableDomain(1, t.subscriber, d);
    if (r != CUPTI_SUCCESS) return fail("cuptiEnableDomain", r);
  }
  r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
  if (r != CUPTI_SUCCESS) return fail("cuptiActivityRegisterCallbacks", r);
  r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) return fail("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
  // Copies and memsets: a failure here costs only those records, so trace the kernels anyway.
  for (const auto& [kind, label] : {std::pair{CUPTI_ACTIVITY_KIND_MEMCPY, "MEMCPY"},
                                    std::pair{CUPTI_ACTIVITY_KIND_MEMCPY2, "MEMCPY2"},
                                    std::pair{CUPTI_ACTIVITY_KIND_MEMSET, "MEMSET"}}) {
    r = cuptiActivityEnable(kind);
    if (r != CUPTI_SUCCESS) {
      std::fprintf(stderr, "calisim_trace: cuptiActivityEnable(%s) failed: %s; those records are not traced\n", label,
                   cupti_error(r).c_str());
      t.missing_kinds += std::string(t.missing_kinds.empty() ? "" : ", ") + label;
    }
  }
  t.active = true;
  std::atexit(write_at_exit);
  return 1;
}
