// Reading an mpirun launch from the environment (no MPI needed).
#include "profiler/mpi_launch.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace calisim::profiler {
namespace {

GetEnv env_of(std::map<std::string, std::string> vars) {
  return [vars = std::move(vars)](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  };
}

TEST(MpiLaunch, PlainLaunchIsNotMpi) {
  const MpiLaunch m = mpi_launch_from_env(env_of({}));
  EXPECT_FALSE(m.active());
  EXPECT_EQ(m.size, 1);
  EXPECT_EQ(m.rank, 0);
}

TEST(MpiLaunch, OpenMpiVariables) {
  const MpiLaunch m = mpi_launch_from_env(env_of({{"OMPI_COMM_WORLD_SIZE", "16"},
                                                  {"OMPI_COMM_WORLD_RANK", "9"},
                                                  {"OMPI_COMM_WORLD_LOCAL_RANK", "1"},
                                                  {"OMPI_COMM_WORLD_LOCAL_SIZE", "8"}}));
  EXPECT_TRUE(m.active());
  EXPECT_EQ(m.size, 16);
  EXPECT_EQ(m.rank, 9);
  EXPECT_EQ(m.local_rank, 1);
  EXPECT_EQ(m.local_size, 8);
}

TEST(MpiLaunch, PmiFallbackAndSingleRankAndGarbage) {
  const MpiLaunch pmi = mpi_launch_from_env(env_of({{"PMI_SIZE", "4"}, {"PMI_RANK", "3"}}));
  EXPECT_TRUE(pmi.active());
  EXPECT_EQ(pmi.rank, 3);
  EXPECT_EQ(pmi.local_size, 0) << "unknown without Open MPI's variables";
  EXPECT_FALSE(mpi_launch_from_env(env_of({{"OMPI_COMM_WORLD_SIZE", "1"}})).active());
  const MpiLaunch bad = mpi_launch_from_env(env_of({{"OMPI_COMM_WORLD_SIZE", "eight"}}));
  EXPECT_FALSE(bad.active());
  EXPECT_EQ(bad.size, 1);
}

}  // namespace
}  // namespace calisim::profiler
