#include "simulator/pipeline_schedule.h"

#include <algorithm>
#include <limits>
#include <cstdint>
#include <stdexcept>

namespace calisim {
namespace {

// Megatron-Core's schedule table (get_schedule_table): micro-batches go in groups of g; within a
// group every chunk runs the group's micro-batches in a row, chunk 0 first. The last group is the
// first whose end reaches m and holds what is left (1..g micro-batches). The k-th backward unit
// of a rank takes the k-th entry with the chunk order reversed (its micro-batch is the oldest one
// that chunk has in flight, which is the same entry's).
ScheduleUnit forward_unit(int k, int v, int m, int g) {
  const int full_groups = (m - 1) / g;
  const int before_last = full_groups * g * v;
  if (k < before_last) {
    const int in_group = k % (g * v);
    return {in_group / g, (k / (g * v)) * g + in_group % g, true};
  }
  const int last = last_micro_batch_group(m, g);
  const int in_group = k - before_last;
  return {in_group / last, full_groups * g + in_group % last, true};
}

ScheduleUnit backward_unit(int k, int v, int m, int g) {
  ScheduleUnit u = forward_unit(k, v, m, g);
  u.chunk = v - 1 - u.chunk;
  u.forward = false;
  return u;
}

// A rank's schedule in closed form: warm-up forwards, steady 1F1B pairs, cool-down backwards.
struct RankSchedule {
  int v, m, g, warmup, total;
  int size() const { return 2 * total; }
  ScheduleUnit at(int idx) const {
    auto fwd = [&](int k) { return v == 1 ? ScheduleUnit{0, k, true} : forward_unit(k, v, m, g); };
    auto bwd = [&](int k) { return v == 1 ? ScheduleUnit{0, k, false} : backward_unit(k, v, m, g); };
    if (idx < warmup) return fwd(idx);
    const int steady = 2 * (total - warmup);
    if (idx < warmup + steady) {
      const int off = idx - warmup;
      return off % 2 == 0 ? fwd(warmup + off / 2) : bwd(off / 2);
    }
    return bwd(total - warmup + (idx - warmup - steady));
  }
};

RankSchedule rank_schedule(int rank, int p, int v, int m, int group, int extra_warmup) {
  const int total = m * v;
  const int g = group > 0 ? group : p;
  int warmup;
  if (v == 1) {
    warmup = std::min(p - rank - 1 + (p == 1 ? extra_warmup : 0), m);
  } else {
    // Megatron-Core's get_pp_rank_microbatches: all forwards first only where this reaches the
    // total. Older releases also ran every rank all-forwards-first when m == p; current ones do
    // that on the early ranks alone.
    warmup = std::min((p - rank - 1) * 2 + (v - 1) * g + extra_warmup, total);
  }
  return {v, m, g, warmup, total};
}

}  // namespace

std::vector<ScheduleUnit> schedule_order(int rank, int p, int v, int m, int group, int extra_warmup) {
  const RankSchedule rs = rank_schedule(rank, p, v, m, group, extra_warmup);
  std::vector<ScheduleUnit> order;
  order.reserve(static_cast<std::size_t>(rs.size()));
  for (int i = 0; i < rs.size(); ++i) order.push_back(rs.at(i));
  return order;
}

namespace {

// A schedule compiled for the event loop: every unit of every rank with its slot in the
// completion-time table and the slot it waits for. Depends only on (p, v, m), so it is built
// once per shape and reused across simulations (strategy search simulates many candidates that
// share it).
struct CompiledUnit {
  std::int32_t self;   // completion slot: F at j·m + mb, B at S·m + j·m + mb (S = p·v)
  std::int32_t dep;    // slot this unit waits for, -1 for none
  std::int16_t stage;  // virtual stage j
  std::int16_t chunk;
  std::int32_t micro_batch;
  bool forward;
  bool via_p2p;        // the dependency crosses a pipeline hop
  bool paired;         // a steady-state 1F1B unit (not warm-up or cool-down)
};

struct CompiledSchedule {
  int p = 0, v = 0, m = 0, group = 0, extra_warmup = 0;
  std::vector<CompiledUnit> units;  // rank 0's units, then rank 1's, ...
  std::vector<int> begin;           // per rank: first unit; begin[p] = units.size()
};

CompiledSchedule compile(int p, int v, int m, int group, int extra_warmup) {
  CompiledSchedule c;
  c.p = p, c.v = v, c.m = m, c.group = group, c.extra_warmup = extra_warmup;
  const int S = p * v;
  const std::int32_t b_base = S * m;
  for (int r = 0; r < p; ++r) {
    c.begin.push_back(static_cast<int>(c.units.size()));
    const RankSchedule rs = rank_schedule(r, p, v, m, group, extra_warmup);
    for (int i = 0; i < rs.size(); ++i) {
      const ScheduleUnit u = rs.at(i);
      const int j = u.chunk * p + r;
      CompiledUnit cu{};
      cu.stage = static_cast<std::int16_t>(j);
      cu.chunk = static_cast<std::int16_t>(u.chunk);
      cu.micro_batch = u.micro_batch;
      cu.forward = u.forward;
      cu.paired = i >= rs.warmup && i < rs.warmup + 2 * (rs.total - rs.warmup);
      const std::int32_t f_slot = j * m + u.micro_batch;
      if (u.forward) {
        cu.self = f_slot;
        cu.dep = j == 0 ? -1 : f_slot - m;
        cu.via_p2p = j != 0;
      } else {
        cu.self = b_base + f_slot;
        cu.dep = j == S - 1 ? f_slot : b_base + f_slot + m;
        cu.via_p2p = j != S - 1;
      }
      c.units.push_back(cu);
    }
  }
  c.begin.push_back(static_cast<int>(c.units.size()));
  return c;
}

const CompiledSchedule& compiled_schedule(int p, int v, int m, int group, int extra_warmup) {
  thread_local std::vector<CompiledSchedule> cache;  // small: a search touches few shapes
  for (const auto& c : cache) {
    if (c.p == p && c.v == v && c.m == m && c.group == group && c.extra_warmup == extra_warmup) return c;
  }
  if (cache.size() >= 64) cache.erase(cache.begin());
  cache.push_back(compile(p, v, m, group, extra_warmup));
  return cache.back();
}

}  // namespace

namespace {

// Earliest start of rank r (micro-batch 0 crossing the chunk-0 stages before it) and its busy time.
void rank_bounds(const PipelineSpec& s, int r, double* start, double* busy, double* tail) {
  double st = 0, tl = 0, b = 0;
  for (int j = 0; j < r; ++j) {
    st += s.fwd_s[j] + s.p2p_s;
    tl += s.bwd_s[j] + s.p2p_s;
  }
  for (int c = 0; c < s.v; ++c) b += s.fwd_s[c * s.p + r] + s.bwd_s[c * s.p + r];
  *start = st;
  *busy = b * s.m;
  *tail = tl;
}

// Activation peaks from the unit order alone: +act on each forward, -act on each backward. A rank
// whose chunks keep equal bytes peaks right after its warm-up plus one forward (1F1B and
// interleaved alike), so only ranks with unequal chunks (embedding, LM head, uneven or explicit layouts) are scanned.
void activation_peaks(const PipelineSpec& s, PipelineResult& res) {
  const bool track_act = !s.act_bytes.empty();
  for (int r = 0; r < s.p; ++r) {
    const RankSchedule rs = rank_schedule(r, s.p, s.v, s.m, s.group, s.extra_warmup);
    const int most = rs.warmup >= rs.total ? rs.total : rs.warmup + 1;
    res.max_in_flight[r] = most;
    bool uniform = true;
    const double a0 = track_act ? s.act_bytes[r] : 0.0;
    for (int c = 1; c < s.v && track_act; ++c) uniform = uniform && s.act_bytes[c * s.p + r] == a0;
    if (uniform) {
      res.peak_act_bytes[r] = most * a0;
      continue;
    }
    double bytes = 0, peak = 0;
    for (int i = 0; i < rs.size(); ++i) {
      const ScheduleUnit u = rs.at(i);
      const double a = s.act_bytes[u.chunk * s.p + r];
      if (u.forward) {
        bytes += a;
        peak = std::max(peak, bytes);
      } else {
        bytes -= a;
      }
    }
    res.peak_act_bytes[r] = peak;
  }
}

}  // namespace

double pipeline_lower_bound_s(const PipelineSpec& s) {
  double lb = 0;
  for (int r = 0; r < s.p; ++r) {
    double start, busy, tail;
    rank_bounds(s, r, &start, &busy, &tail);
    lb = std::max(lb, start + busy + tail);
  }
  return lb;
}

PipelineResult simulate_pipeline(const PipelineSpec& s, bool record_events) {
  const int p = s.p, v = s.v, m = s.m;
  const int stages = p * v;
  if (!record_events && s.cutoff_s < std::numeric_limits<double>::infinity()) {
    const double lb = pipeline_lower_bound_s(s);
    if (lb > s.cutoff_s) {
      PipelineResult res;
      res.bounded = true;
      res.rank_finish_s.assign(p, 0);
      res.rank_busy_s.assign(p, 0);
      res.rank_p2p_wait_s.assign(p, 0);
      res.rank_unpaired_extra_s.assign(p, 0);
      res.max_in_flight.assign(p, 0);
      res.peak_act_bytes.assign(p, 0);
      for (int r = 0; r < p; ++r) {
        double start, busy, tail;
        rank_bounds(s, r, &start, &busy, &tail);
        res.rank_busy_s[r] = busy;
        res.rank_finish_s[r] = r == 0 ? std::max(lb, start + busy) : start + busy;
      }
      res.makespan_s = lb;
      activation_peaks(s, res);
      return res;
    }
  }
  const CompiledSchedule& cs =
      compiled_schedule(p, v, m, v > 1 ? s.group : 0, v > 1 || p == 1 ? s.extra_warmup : 0);
  const bool unpaired_extra = !s.fwd_unpaired_extra_s.empty();
  const double unset = -1.0;
  thread_local std::vector<double> done;  // completion time per slot
  done.assign(static_cast<std::size_t>(2) * stages * m, unset);
  thread_local std::vector<int> next;
  next.assign(cs.begin.begin(), cs.begin.end() - 1);

  PipelineResult res;
  res.rank_finish_s.assign(p, 0);
  res.rank_busy_s.assign(p, 0);
  res.rank_p2p_wait_s.assign(p, 0);
  res.rank_unpaired_extra_s.assign(p, 0);
  res.max_in_flight.assign(p, 0);
  res.peak_act_bytes.assign(p, 0);
  if (record_events) res.events.reserve(cs.units.size());

  double* const fin = done.data();
  int* const nx = next.data();
  const CompiledUnit* const units = cs.units.data();
  std::size_t remaining = cs.units.size();
  while (remaining > 0) {
    bool progressed = false;
    for (int r = 0; r < p; ++r) {
      const int end_unit = cs.begin[r + 1];
      int i = nx[r];
      if (i == end_unit) continue;
      double free_at = res.rank_finish_s[r];
      double busy = res.rank_busy_s[r], wait = res.rank_p2p_wait_s[r];
      const int first = i;
      for (; i < end_unit; ++i) {
        const CompiledUnit& u = units[i];
        double ready = 0;
        if (u.dep >= 0) {
          ready = fin[u.dep];
          if (ready == unset) break;
          if (u.via_p2p) {
            ready += s.p2p_s;
            // Idle time spent on the transfer itself (not on the producer's compute).
            if (ready > free_at) wait += std::min(ready - free_at, s.p2p_s);
          }
        }
        double dur = u.forward ? s.fwd_s[u.stage] : s.bwd_s[u.stage];
        if (unpaired_extra && !u.paired) {
          const double extra = u.forward ? s.fwd_unpaired_extra_s[u.stage] : s.bwd_unpaired_extra_s[u.stage];
          dur += extra;
          res.rank_unpaired_extra_s[r] += extra;
        }
        const double start = std::max(free_at, ready);
        free_at = start + dur;
        busy += dur;
        fin[u.self] = free_at;
        if (record_events) res.events.push_back({r, u.chunk, u.micro_batch, u.forward, start, free_at});
      }
      if (i == first) continue;
      res.rank_finish_s[r] = free_at;
      res.rank_busy_s[r] = busy;
      res.rank_p2p_wait_s[r] = wait;
      remaining -= static_cast<std::size_t>(i - first);
      nx[r] = i;
      progressed = true;
    }
    if (!progressed) throw std::logic_error("pipeline schedule deadlocked (schedule order bug)");
  }
  activation_peaks(s, res);
  for (int r = 0; r < p; ++r) res.makespan_s = std::max(res.makespan_s, res.rank_finish_s[r]);
  return res;
}

}  // namespace calisim
