// Whether this process was started by mpirun, and its place in the job, from the launcher's
// environment (no MPI call: a binary without MPI can still tell it is under mpirun and refuse).
//
// Contract: mpi_launch_from_env() reads Open MPI's OMPI_COMM_WORLD_SIZE / _RANK / _LOCAL_RANK /
// _LOCAL_SIZE (falling back to PMI_SIZE / PMI_RANK, which Slurm and MPICH set, with the local
// values unknown = 0). `getenv` is injectable for tests. size <= 1 means not an MPI job (a
// single-rank mpirun is treated like a plain launch). Malformed numbers read as 0.
#pragma once

#include <functional>

namespace calisim::profiler {

struct MpiLaunch {
  int size = 1, rank = 0;
  int local_rank = 0, local_size = 0;  // 0 = unknown
  bool active() const { return size > 1; }
};

using GetEnv = std::function<const char*(const char*)>;
MpiLaunch mpi_launch_from_env(const GetEnv& getenv_fn);
MpiLaunch mpi_launch_from_env();  // the process environment

}  // namespace calisim::profiler
