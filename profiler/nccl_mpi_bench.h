// NcclMpiBench: NCCL collectives across processes and nodes under mpirun, one rank per GPU.
//
// Every rank drives one GPU (its node-local rank modulo the node's GPU count). Rank 0 creates
// the ncclUniqueId and MPI_Bcast's it; ncclCommInitRank forms one communicator over the world.
// Rank 0 runs the profile (plan, database, progress) and is the KernelBench the runner calls:
// measure() broadcasts the key to every rank, then all ranks measure it together; the other
// ranks sit in serve() until rank 0's finish(). Timing is nccl-tests' (host wall clock over a
// loop of `iters` collectives, divided by iters), taken on every rank and reduced with MPI_MAX,
// so a sample is the slowest rank's; the stopping decision uses the reduced samples and the
// slowest rank's elapsed time, so all ranks stop together. Buffers and algbw / busbw follow
// collective_sizes.h. A key whose `ranks` is not the world size is skipped with the reason; an
// allocation failure on any rank skips the key on all.
//
// MPI is initialised by the constructor (MPI_Init_thread, FUNNELED) and finalised by the
// destructor. Built only when CMake finds MPI (CALISIM_HAVE_MPI_PROFILER); this header includes
// no MPI header, so the rest of calisim never needs one.
#pragma once

#include <memory>
#include <string>

#include "profiler/measurement.h"
#include "profiler/runner.h"
#include "profiler/stopping_criterion.h"

namespace calisim::profiler {

class NcclMpiBench final : public KernelBench {
 public:
  // Throws GpuError when MPI, CUDA or NCCL cannot start.
  explicit NcclMpiBench(StoppingRule rule);
  ~NcclMpiBench() override;
  NcclMpiBench(const NcclMpiBench&) = delete;
  NcclMpiBench& operator=(const NcclMpiBench&) = delete;

  int rank() const;
  int size() const;
  int local_size() const;  // ranks on this node (MPI_COMM_TYPE_SHARED)
  int device() const;      // the CUDA device this rank drives

  // Rank 0 only: every rank measures `kernel`; non-collective keys are skipped with the reason.
  Measurement measure(const PlannedKernel& kernel) override;
  // Ranks other than 0: measure what rank 0 broadcasts until finish().
  void serve();
  // Rank 0 only: releases the serving ranks.
  void finish();

 private:
  struct State;
  std::unique_ptr<State> s_;
  Measurement measure_together(const std::string& key);
};

}  // namespace calisim::profiler
