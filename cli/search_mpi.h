// Running `calisim search` under mpirun: every rank searches its shard, rank 0 gathers the
// top-K lists and the counts. Built with MPI when CMake finds Open MPI (optional dependency); a
// binary without MPI refuses to run under mpirun rather than have every rank search everything.
#pragma once

#include <vector>

#include "simulator/search.h"

namespace calisim::cli {

class MpiContext {
 public:
  MpiContext();   // initialises MPI only when launched by mpirun
  ~MpiContext();  // finalises it
  MpiContext(const MpiContext&) = delete;
  MpiContext& operator=(const MpiContext&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  // Collective: every rank passes its top K; rank 0 gets the merged best K (others: empty).
  std::vector<CandidateResult> gather_top(const std::vector<CandidateResult>& top, int k);
  // Collective: rank 0 gets the counts summed over ranks and the elapsed time of the slowest.
  void sum_counts(SearchResult& r);

 private:
  int rank_ = 0, size_ = 1;
  bool initialised_ = false;
};

}  // namespace calisim::cli
