#include "profiler/nccl_mpi_bench.h"

#include <fmt/format.h>
#include <mpi.h>
#include <nccl.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "db/key_text.h"
#include "profiler/collective_sizes.h"
#include "profiler/device_buffer.h"
#include "profiler/fill_random.h"
#include "profiler/gpu_error.h"
#include "profiler/nccl_common.h"
#include "profiler/statistics.h"

namespace calisim::profiler {
namespace {

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING] = {};
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw GpuError(fmt::format("{}: {}", what, text), GpuError::Kind::other);
}

// Broadcasts a string from rank 0 (length first).
std::string bcast_string(const std::string& s, int rank) {
  long long n = rank == 0 ? static_cast<long long>(s.size()) : 0;
  check_mpi(MPI_Bcast(&n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD), "MPI_Bcast");
  std::string out = rank == 0 ? s : std::string(static_cast<std::size_t>(n), '\0');
  if (n > 0) check_mpi(MPI_Bcast(out.data(), static_cast<int>(n), MPI_CHAR, 0, MPI_COMM_WORLD), "MPI_Bcast");
  return out;
}

double max_over_ranks(double v) {
  double out = 0;
  check_mpi(MPI_Allreduce(&v, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD), "MPI_Allreduce");
  return out;
}

constexpr const char* kStop = "";  // the key rank 0 broadcasts to end serve()

}  // namespace

struct NcclMpiBench::State {
  StoppingRule rule;
  int rank = 0, size = 1, local_rank = 0, local_size = 1, device = 0;
  bool mpi_owned = false;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
};

NcclMpiBench::NcclMpiBench(StoppingRule rule) : s_(std::make_unique<State>()) {
  s_->rule = rule;
  int initialised = 0;
  MPI_Initialized(&initialised);
  if (!initialised) {
    int provided = 0;
    check_mpi(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
    s_->mpi_owned = true;
  }
  MPI_Comm_rank(MPI_COMM_WORLD, &s_->rank);
  MPI_Comm_size(MPI_COMM_WORLD, &s_->size);
  MPI_Comm local = MPI_COMM_NULL;
  check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, s_->rank, MPI_INFO_NULL, &local),
            "MPI_Comm_split_type");
  MPI_Comm_rank(local, &s_->local_rank);
  MPI_Comm_size(local, &s_->local_size);
  MPI_Comm_free(&local);
  int gpus = 0;
  check_cuda(cudaGetDeviceCount(&gpus), "cudaGetDeviceCount");
  if (gpus < 1) throw GpuError("this rank's node has no CUDA device", GpuError::Kind::not_supported);
  s_->device = s_->local_rank % gpus;
  check_cuda(cudaSetDevice(s_->device), "cudaSetDevice");
  check_cuda(cudaStreamCreateWithFlags(&s_->stream, cudaStreamNonBlocking), "cudaStreamCreate");
  ncclUniqueId id{};
  if (s_->rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  check_mpi(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast(ncclUniqueId)");
  check_nccl(ncclCommInitRank(&s_->comm, s_->size, id, s_->rank), "ncclCommInitRank");
}

NcclMpiBench::~NcclMpiBench() {
  if (s_->comm) ncclCommDestroy(s_->comm);
  if (s_->stream) cudaStreamDestroy(s_->stream);
  if (s_->mpi_owned) MPI_Finalize();
}

int NcclMpiBench::rank() const { return s_->rank; }
int NcclMpiBench::size() const { return s_->size; }
int NcclMpiBench::local_size() const { return s_->local_size; }
int NcclMpiBench::device() const { return s_->device; }

Measurement NcclMpiBench::measure(const PlannedKernel& kernel) {
  if (kernel.kind != db::KeyKind::collective) {
    return Measurement::skipped_because(
        "under mpirun only collectives are measured; run GEMM, attention and memory keys without mpirun");
  }
  return measure_together(bcast_string(kernel.key, s_->rank));
}

void NcclMpiBench::serve() {
  for (;;) {
    const std::string key = bcast_string("", s_->rank);
    if (key == kStop) return;
    measure_together(key);
  }
}

void NcclMpiBench::finish() {
  if (s_->rank == 0) bcast_string(kStop, 0);
}

Measurement NcclMpiBench::measure_together(const std::string& key_text) {
  const CollectiveKey key = db::parse_collective_key(key_text);
  const int n = s_->size, r = s_->rank;
  if (key.ranks != n) {
    return Measurement::skipped_because(
        fmt::format("needs {} ranks; this mpirun job has {} (one rank per GPU)", key.ranks, n));
  }
  CollectiveBuffers sizes;
  try {
    sizes = collective_buffers(key);
  } catch (const std::invalid_argument& e) {
    return Measurement::skipped_because(e.what());
  }
  DeviceBuffer send, recv;
  std::string oom;
  try {
    send = DeviceBuffer(sizes.send_bytes);
    recv = DeviceBuffer(sizes.recv_bytes);
    fill_random(send.get(), sizes.send_bytes / static_cast<std::int64_t>(bytes_per_element(key.dtype)), key.dtype,
                700 + r, 1.0f, s_->stream);
  } catch (const GpuError& e) {
    if (!e.out_of_memory()) throw;
    oom = e.what();
  }
  if (max_over_ranks(oom.empty() ? 0.0 : 1.0) > 0) {
    return Measurement::skipped_because(oom.empty() ? "out of memory on another rank" : oom);
  }
  const ncclDataType_t type = nccl_type(key.dtype);
  const auto count = static_cast<std::size_t>(sizes.count);
  const auto elt = static_cast<std::size_t>(bytes_per_element(key.dtype));
  auto launch = [&]() {
    switch (key.op) {
      case CollectiveOp::all_reduce:
        check_nccl(ncclAllReduce(send.get(), recv.get(), count, type, ncclSum, s_->comm, s_->stream), "ncclAllReduce");
        break;
      case CollectiveOp::all_gather:
        check_nccl(ncclAllGather(send.get(), recv.get(), count, type, s_->comm, s_->stream), "ncclAllGather");
        break;
      case CollectiveOp::reduce_scatter:
        check_nccl(ncclReduceScatter(send.get(), recv.get(), count, type, ncclSum, s_->comm, s_->stream),
                   "ncclReduceScatter");
        break;
      case CollectiveOp::all_to_all:  // grouped send / recv: works on every NCCL 2.x (nccl_common.h)
        nccl_all_to_all(send.get(), recv.get(), count, type, elt, s_->comm, s_->stream);
        break;
      case CollectiveOp::send_recv:
        check_nccl(ncclGroupStart(), "ncclGroupStart");
        check_nccl(ncclSend(send.get(), count, type, (r + 1) % n, s_->comm, s_->stream), "ncclSend");
        check_nccl(ncclRecv(recv.get(), count, type, (r + n - 1) % n, s_->comm, s_->stream), "ncclRecv");
        check_nccl(ncclGroupEnd(), "ncclGroupEnd");
        break;
    }
  };
  auto sync = [&]() { check_cuda(cudaStreamSynchronize(s_->stream), "cudaStreamSynchronize"); };
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  launch();  // connection set-up happens on first use
  sync();
  const auto w0 = Clock::now();
  launch();
  sync();
  // Every rank must run the same number of iterations: size the loop from the slowest rank.
  const double one_s = max_over_ranks(std::chrono::duration<double>(Clock::now() - w0).count());
  const int iters = std::clamp(static_cast<int>(std::ceil(1e-3 / std::max(one_s, 1e-7))), 1, 200);

  Measurement m;
  m.status = MeasurementStatus::measured;
  m.timer = TimerKind::host_wall;
  m.timer_note = fmt::format("nccl-tests method over MPI: wall time of {} iterations / {}, slowest of {} ranks", iters,
                             iters, n);
  m.cold_l2 = false;
  m.warmup_runs = 2;
  StdRelCriterion criterion(s_->rule);
  std::vector<double> samples;
  StopReason stop = StopReason::running;
  while (stop == StopReason::running) {
    check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
    const auto s0 = Clock::now();
    for (int i = 0; i < iters; ++i) launch();
    sync();
    const double t = max_over_ranks(std::chrono::duration<double>(Clock::now() - s0).count() / iters);
    samples.push_back(t);
    criterion.add(t);
    stop = criterion.check(max_over_ranks(std::chrono::duration<double>(Clock::now() - t0).count()));
  }
  m.stop = stop;
  m.summary = summarize(samples);
  m.algorithm = fmt::format("{} ranks over MPI ({} on rank 0's node), count {} per call", n, s_->local_size,
                            sizes.count);
  int v = 0;
  ncclGetVersion(&v);
  m.library = fmt::format("nccl {}", v);
  return m;
}

}  // namespace calisim::profiler
