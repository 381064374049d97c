#include "profiler/collective_sizes.h"

#include <stdexcept>
#include <string>

#include "db/records.h"

namespace calisim::profiler {

CollectiveBuffers collective_buffers(const CollectiveKey& key) {
  if (key.ranks < 1) throw std::invalid_argument("collective with fewer than one rank");
  const auto elt = static_cast<std::int64_t>(bytes_per_element(key.dtype));
  const std::int64_t n = key.ranks;
  // Per-rank (per-peer) shares are multiples of 16 bytes, as nccl-tests rounds them.
  const std::int64_t align_elems = 16 / elt;
  CollectiveBuffers b;
  switch (key.op) {
    case CollectiveOp::all_reduce:
    case CollectiveOp::send_recv:
      b.count = key.bytes / elt;
      b.send_bytes = b.recv_bytes = b.effective_bytes = b.count * elt;
      break;
    case CollectiveOp::all_gather:
      b.count = (key.bytes / elt / n) & ~(align_elems - 1);
      b.send_bytes = b.count * elt;
      b.recv_bytes = b.effective_bytes = b.count * elt * n;
      break;
    case CollectiveOp::reduce_scatter:
      b.count = (key.bytes / elt / n) & ~(align_elems - 1);
      b.recv_bytes = b.count * elt;
      b.send_bytes = b.effective_bytes = b.count * elt * n;
      break;
    case CollectiveOp::all_to_all:
      b.count = (key.bytes / elt / n) & ~(align_elems - 1);
      b.send_bytes = b.recv_bytes = b.effective_bytes = b.count * elt * n;
      break;
  }
  if (b.count < 1) {
    throw std::invalid_argument("collective of " + std::to_string(key.bytes) + " bytes over " + std::to_string(n) +
                                " ranks leaves less than one 16-byte share per rank");
  }
  return b;
}

double algbw_gb_s(const CollectiveKey& key, double time_s) {
  return static_cast<double>(collective_buffers(key).effective_bytes) / time_s / 1e9;
}

double busbw_gb_s(const CollectiveKey& key, double time_s) {
  return algbw_gb_s(key, time_s) * db::bus_factor(key.op, key.ranks);
}

}  // namespace calisim::profiler
