#include "cli/search_mpi.h"

#include <cstdlib>
#include <sstream>
#include <string>

#include "cli/search_csv.h"
#include "core/error.h"

#ifdef CALISIM_HAVE_MPI
#include <mpi.h>
#endif

namespace calisim::cli {
namespace {

int launcher_world_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"}) {
    if (const char* s = std::getenv(v)) return std::atoi(s);
  }
  return 1;
}

}  // namespace

MpiContext::MpiContext() {
  if (launcher_world_size() <= 1) return;
#ifdef CALISIM_HAVE_MPI
  MPI_Init(nullptr, nullptr);
  initialised_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
#else
  throw InputError("mpirun", "", "this calisim was built without MPI (install libopenmpi-dev and rebuild), so under "
                                 "mpirun every rank would search everything; use --shard i/n and `calisim search merge`");
#endif
}

MpiContext::~MpiContext() {
#ifdef CALISIM_HAVE_MPI
  if (initialised_) MPI_Finalize();
#endif
}

std::vector<CandidateResult> MpiContext::gather_top(const std::vector<CandidateResult>& top, int k) {
#ifdef CALISIM_HAVE_MPI
  // Rows travel as CSV lines: exact (%.17g) and independent of struct layout.
  std::string mine;
  for (const auto& r : top) {
    mine += search_csv_row(r);
    mine += '\n';
  }
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size_), offsets(size_);
  MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
  std::string all;
  if (rank_ == 0) {
    int total = 0;
    for (int i = 0; i < size_; ++i) offsets[i] = total, total += lens[i];
    all.resize(total);
  }
  MPI_Gatherv(mine.data(), len, MPI_CHAR, all.data(), lens.data(), offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank_ != 0) return {};
  // Parse through the CSV reader's rules by way of a temporary in-memory stream.
  std::vector<CandidateResult> rows;
  std::istringstream in(all);
  std::string line;
  const std::string path = "<mpi gather>";
  while (std::getline(in, line)) {
    if (line.empty()) continue;
    rows.push_back(parse_search_csv_row(line, path, 0));
  }
  return merge_top(std::move(rows), k);
#else
  (void)k;
  return top;
#endif
}

void MpiContext::sum_counts(SearchResult& r) {
#ifdef CALISIM_HAVE_MPI
  unsigned long long mine[8] = {r.space_size, r.illegal, r.too_big, r.simulated, r.pruned, r.feasible_count,
                                r.equivalent, r.dominated};
  unsigned long long sum[8] = {0, 0, 0, 0, 0, 0, 0, 0};
  MPI_Reduce(mine, sum, 8, MPI_UNSIGNED_LONG_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  double elapsed = 0;
  MPI_Reduce(&r.elapsed_s, &elapsed, 1, MPI_DOUBLE, MPI_MAX, 0, MPI_COMM_WORLD);
  if (rank_ == 0) {
    r.space_size = sum[0], r.illegal = sum[1], r.too_big = sum[2], r.simulated = sum[3], r.pruned = sum[4];
    r.feasible_count = sum[5];
    r.equivalent = sum[6];
    r.dominated = sum[7];
    r.elapsed_s = elapsed;
    if (r.feasible_count > 0) r.explanation.clear();
  }
#else
  (void)r;
#endif
}

}  // namespace calisim::cli
