#include "profiler/mpi_launch.h"

#include <charconv>
#include <cstdlib>
#include <cstring>

namespace calisim::profiler {
namespace {

int read_int(const GetEnv& env, const char* name) {
  const char* v = env(name);
  if (!v) return 0;
  int out = 0;
  const char* end = v + std::strlen(v);
  const auto r = std::from_chars(v, end, out);
  return r.ec == std::errc() && r.ptr == end && out >= 0 ? out : 0;
}

}  // namespace

MpiLaunch mpi_launch_from_env(const GetEnv& env) {
  MpiLaunch m;
  if (env("OMPI_COMM_WORLD_SIZE")) {
    m.size = read_int(env, "OMPI_COMM_WORLD_SIZE");
    m.rank = read_int(env, "OMPI_COMM_WORLD_RANK");
    m.local_rank = read_int(env, "OMPI_COMM_WORLD_LOCAL_RANK");
    m.local_size = read_int(env, "OMPI_COMM_WORLD_LOCAL_SIZE");
  } else if (env("PMI_SIZE")) {
    m.size = read_int(env, "PMI_SIZE");
    m.rank = read_int(env, "PMI_RANK");
  }
  if (m.size < 1) m.size = 1;
  return m;
}

MpiLaunch mpi_launch_from_env() {
  return mpi_launch_from_env([](const char* n) -> const char* { return std::getenv(n); });
}

}  // namespace calisim::profiler
