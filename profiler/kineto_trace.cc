#include "profiler/kineto_trace.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <functional>
#include <iterator>
#include <limits>
#include <stdexcept>
#include <nlohmann/json.hpp>
#include <string_view>
#include <tuple>
#include <unordered_map>

#include "core/error.h"
#include "profiler/gzip_input.h"
#include "profiler/trace_copies.h"
#include "profiler/trace_writer.h"

namespace calisim::profiler {
namespace {

using nlohmann::json;

class EventReader {
 public:
  EventReader(const std::string& path, const json& e, long long index)
      : path_(path), e_(e), where_(fmt::format("traceEvents[{}]", index)) {}
  const std::string& where() const { return where_; }

  [[noreturn]] void fail(const std::string& field, const std::string& what) const {
    throw InputError(path_, field.empty() ? where_ : where_ + "." + field, what);
  }
  std::string str(const char* field) const {
    const auto it = e_.find(field);
    if (it == e_.end() || !it->is_string()) fail(field, "expected a string");
    return it->get<std::string>();
  }
  // ts / dur: microseconds, as Kineto writes them (three decimals carry nanoseconds).
  double micros(const char* field) const {
    const auto it = e_.find(field);
    if (it == e_.end() || !it->is_number() || !std::isfinite(it->get<double>()) || it->get<double>() < 0) {
      fail(field, "expected a non-negative number of microseconds");
    }
    return it->get<double>();
  }
  const json* arg(const char* field) const {
    const auto a = e_.find("args");
    if (a == e_.end()) return nullptr;
    if (!a->is_object()) fail("args", "expected an object");
    const auto it = a->find(field);
    return it == a->end() || it->is_null() ? nullptr : &*it;
  }
  std::int64_t int_arg(const char* field, std::int64_t fallback) const {
    const json* v = arg(field);
    if (!v) return fallback;
    if (!v->is_number_integer()) fail(std::string("args.") + field, "expected an integer");
    return v->get<std::int64_t>();
  }
  // args.grid / args.block: [x, y, z].
  void dims(const char* field, int& x, int& y, int& z) const {
    const json* v = arg(field);
    if (!v) return;
    if (!v->is_array() || v->size() != 3 || !std::all_of(v->begin(), v->end(), [](const json& d) {
          return d.is_number_integer() && d.get<std::int64_t>() >= 0;
        })) {
      fail(std::string("args.") + field, "expected [x, y, z], three non-negative integers");
    }
    x = (*v)[0].get<int>();
    y = (*v)[1].get<int>();
    z = (*v)[2].get<int>();
  }
  // The GPU of a device record: args.device, else the event's pid (Kineto's GPU rows are one
  // "process" per device).
  int device() const {
    const std::int64_t d = int_arg("device", -1);
    if (d >= 0) return static_cast<int>(d);
    const auto pid = e_.find("pid");
    if (pid != e_.end() && pid->is_number_integer() && pid->get<std::int64_t>() >= 0) return pid->get<int>();
    fail("args.device", "expected the GPU's ordinal (args.device or an integer pid)");
  }
  std::int64_t stream() const {
    const auto tid = e_.find("tid");
    const std::int64_t fallback =
        tid != e_.end() && tid->is_number_integer() ? tid->get<std::int64_t>() : std::int64_t{0};
    return int_arg("stream", fallback);
  }

 private:
  const std::string& path_;
  const json& e_;
  std::string where_;
};

// Today's category names; the first Kineto traces (PyTorch 1.8, 1.9) said "Kernel", "Memcpy",
// "Memset" and "Runtime".
std::string category(std::string cat) {
  std::transform(cat.begin(), cat.end(), cat.begin(), [](unsigned char c) { return std::tolower(c); });
  if (cat == "memcpy") return "gpu_memcpy";
  if (cat == "memset") return "gpu_memset";
  if (cat == "runtime") return "cuda_runtime";
  return cat;
}

std::uint64_t to_ns(double micros) { return static_cast<std::uint64_t>(std::llround(micros * 1e3)); }

// "Memcpy HtoD (Pageable -> Device)" -> "HtoD".
std::string_view memcpy_direction(std::string_view name) {
  if (!name.starts_with("Memcpy ")) return {};
  const std::string_view rest = name.substr(7);
  return rest.substr(0, rest.find(' '));
}

// "Memset (Device)" -> "Device".
std::string_view memset_memory(std::string_view name) {
  const auto open = name.find('('), close = name.rfind(')');
  if (open == std::string_view::npos || close == std::string_view::npos || close <= open + 1) return {};
  return name.substr(open + 1, close - open - 1);
}

struct Range {
  std::uint64_t start_ns, end_ns;
  std::string name;
};

// The CPU thread of an event: (pid, tid), Kineto's integers (0 where a trace writes something else).
using Thread = std::pair<std::int64_t, std::int64_t>;
Thread thread_of(const json& e) {
  auto id = [&](const char* f) -> std::int64_t {
    const auto it = e.find(f);
    return it != e.end() && it->is_number_integer() ? it->get<std::int64_t>() : 0;
  };
  return {id("pid"), id("tid")};
}

struct Launch {
  std::uint64_t ns;
  Thread thread;
};

// A keyed operator's CPU span on its thread.
struct OperatorSpan {
  std::uint64_t start_ns, end_ns;
  std::string name;
  OperatorKey key;
};

// The outermost spans of one thread, sorted by start (spans on one thread nest or are disjoint: a call inside a keyed call is dropped).
std::vector<OperatorSpan> outermost(std::vector<OperatorSpan> spans) {
  std::sort(spans.begin(), spans.end(), [](const OperatorSpan& a, const OperatorSpan& b) {
    return a.start_ns != b.start_ns ? a.start_ns < b.start_ns : a.end_ns > b.end_ns;
  });
  std::vector<OperatorSpan> out;
  for (auto& s : spans) {
    if (!out.empty() && s.start_ns < out.back().end_ns) continue;  // nested in the previous outer span
    out.push_back(std::move(s));
  }
  return out;
}

// Index of the span of `spans` (sorted, disjoint) whose [start, end] holds t, or -1.
std::ptrdiff_t span_at(const std::vector<OperatorSpan>& spans, std::uint64_t t) {
  auto it = std::upper_bound(spans.begin(), spans.end(), t,
                             [](std::uint64_t v, const OperatorSpan& s) { return v < s.start_ns; });
  if (it == spans.begin()) return -1;
  --it;
  return t <= it->end_ns ? it - spans.begin() : -1;
}

// Sorted, merged [start, end) intervals; overlaps() tells whether one of them meets [a, b).
class Intervals {
 public:
  void add(std::uint64_t a, std::uint64_t b) { raw_.emplace_back(a, b); }
  void finish() {
    std::sort(raw_.begin(), raw_.end());
    for (const auto& [a, b] : raw_) {
      if (!merged_.empty() && a <= merged_.back().second) merged_.back().second = std::max(merged_.back().second, b);
      else merged_.emplace_back(a, b);
    }
    raw_.clear();
  }
  bool overlaps(std::uint64_t a, std::uint64_t b) const {
    auto it = std::upper_bound(merged_.begin(), merged_.end(), std::pair{a, std::numeric_limits<std::uint64_t>::max()});
    if (it != merged_.begin() && std::prev(it)->second > a) return true;
    return it != merged_.end() && it->first < b;
  }

 private:
  std::vector<std::pair<std::uint64_t, std::uint64_t>> raw_, merged_;
};

// The range of `ranges` (sorted by start, not overlapping) that holds t, or nullptr.
const Range* range_at(const std::vector<Range>& ranges, std::uint64_t t) {
  auto it = std::upper_bound(ranges.begin(), ranges.end(), t, [](std::uint64_t v, const Range& r) {
    return v < r.start_ns;
  });
  if (it == ranges.begin()) return nullptr;
  --it;
  return t < it->end_ns ? &*it : nullptr;
}

// Streams the file: each element of the top-level "traceEvents" array is built as a small JSON
// value, handed to `on_event` and dropped, so memory does not grow with the trace's CPU events
// (most of a trace); the other top-level members are kept whole in `top`. (nlohmann's filtering
// parse callback rescans the kept array on every discarded element: quadratic on large traces.)
class StreamingTrace final : public json::json_sax_t {
 public:
  using EventFn = std::function<void(const json&, long long)>;
  explicit StreamingTrace(EventFn on_event) : on_event_(std::move(on_event)) {}

  json top = json::object();   // top-level members other than the traceEvents array
  bool top_is_object = false;
  bool top_is_array = false;  // Chrome's "JSON Array Format": a bare array of events
  bool saw_event_array = false;

  bool null() override { return put(json(nullptr)); }
  bool boolean(bool v) override { return put(json(v)); }
  bool number_integer(number_integer_t v) override { return put(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return put(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return put(json(v)); }
  bool string(string_t& v) override { return put(json(std::move(v))); }
  bool binary(binary_t&) override { return put(json(nullptr)); }
  bool start_object(std::size_t) override { return open(json::object()); }
  bool start_array(std::size_t) override { return open(json::array()); }
  bool key(string_t& k) override {
    if (depth_ == 1 && stack_.empty()) top_key_ = k;
    key_ = std::move(k);
    return true;
  }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    throw std::runtime_error(e.what());
  }

 private:
  // depth_: containers open in the file. Depth 1: inside the top-level object; depth 2 with
  // in_events_: inside the traceEvents array, where each value is one event.
  json* add(json&& v) {
    json& parent = *stack_.back();
    if (parent.is_array()) {
      parent.push_back(std::move(v));
      return &parent.back();
    }
    return &(parent[key_] = std::move(v));
  }
  bool put(json&& v) {
    if (skipping_) return true;
    if (!stack_.empty()) {
      add(std::move(v));
      if (stack_.size() == 1 && (key_ == "cat" || key_ == "name")) decide_skip();
      return true;
    }
    else if (depth_ == 1 && top_is_object) top[top_key_] = std::move(v);
    else if (depth_ == 2 && in_events_) on_event_(v, index_++);  // a scalar event: the reader reports it
    return true;
  }
  bool open(json&& empty) {
    if (skipping_) {
      ++depth_;
      return true;
    }
    if (!stack_.empty()) {
      stack_.push_back(add(std::move(empty)));
    } else if (depth_ == 0) {
      top_is_object = empty.is_object();
      top_is_array = empty.is_array();
    } else if (depth_ == 1 && top_is_object) {
      if (top_key_ == "traceEvents" && empty.is_array()) {
        in_events_ = saw_event_array = true;
      } else {
        json& member = top[top_key_] = std::move(empty);
        stack_.push_back(&member);
      }
    } else if (depth_ == 2 && in_events_) {
      event_ = std::move(empty);
      stack_.push_back(&event_);
    }
    ++depth_;
    return true;
  }
  bool close() {
    --depth_;
    if (skipping_) {
      if (depth_ == 2) {  // the skipped event's own object closed
        skipping_ = false;
        stack_.clear();
        event_ = json();
        ++index_;
      }
      return true;
    }
    if (!stack_.empty()) {
      stack_.pop_back();
      if (stack_.empty() && depth_ == 2 && in_events_) {
        on_event_(event_, index_++);
        event_ = json();
      }
    } else if (depth_ == 1 && in_events_) {
      in_events_ = false;
    }
    return true;
  }

  // Most of a trace is CPU events (operators with their input shapes, Python frames). Kineto writes
  // "cat" and "name" before "args", so once both are known an event the reader has no use for —
  // not a GPU record, a launch or a ProfilerStep range — is skipped without building the rest.
  // (A file with another key order is read whole, only slower.)
  void decide_skip() {
    if (stack_.back() != &event_) return;
    const auto cat = event_.find("cat");
    const auto name = event_.find("name");
    if (cat == event_.end() || name == event_.end() || !cat->is_string() || !name->is_string()) return;
    if (name->get_ref<const std::string&>().starts_with(db::kProfilerStepPrefix)) return;
    const std::string c = category(cat->get<std::string>());
    const bool used = c == "kernel" || c == "gpu_memcpy" || c == "gpu_memset" || c == "cuda_runtime" ||
                      c == "cuda_driver" || (c == "cpu_op" && is_keyed_operator(name->get_ref<const std::string&>()));
    skipping_ = !used;
  }

  EventFn on_event_;
  std::vector<json*> stack_;
  json event_;
  std::string key_, top_key_;
  int depth_ = 0;
  bool in_events_ = false;
  bool skipping_ = false;
  long long index_ = 0;
};

// Each kernel to the outermost keyed operator whose CPU span on the launching thread holds its
// launch; one TracedOperator per call that launched kernels (in launch order), its kernels'
// summed time, and whether one of them met a communication kernel on its device.
void attribute_operators(KinetoTrace& t, const std::vector<std::uint64_t>& record_launch,
                         const std::unordered_map<std::int64_t, Launch>& launches,
                         std::map<Thread, std::vector<OperatorSpan>> spans_by_thread,
                         std::map<Thread, std::vector<OperatorSpan>> comm_by_thread) {
  std::map<int, Intervals> communication;
  for (const db::TraceKernel& k : t.records) {
    if (k.kernel_class == "nccl") communication[k.device].add(k.start_ns, k.end_ns);
  }
  for (auto& [device, iv] : communication) iv.finish();
  for (auto& [thread, spans] : spans_by_thread) spans = outermost(std::move(spans));
  for (auto& [thread, spans] : comm_by_thread) spans = outermost(std::move(spans));

  // span (communication or not, thread, index) -> index in t.operators
  std::map<std::tuple<bool, Thread, std::ptrdiff_t>, std::size_t> call_index;
  std::vector<std::uint64_t> first_launch;  // per call, for the order
  for (std::size_t i = 0; i < t.records.size(); ++i) {
    const db::TraceKernel& k = t.records[i];
    // Copies and memsets belong to no call; communication kernels only to a collective's call, and
    // never to a GEMM's or attention's own time.
    if (k.kernel_class == "memcpy" || k.kernel_class == "memset") continue;
    const bool comm = k.kernel_class == "nccl";
    auto& by_thread = comm ? comm_by_thread : spans_by_thread;
    std::ptrdiff_t span = -1;
    const Launch* launch = nullptr;
    if (record_launch[i] > 0) {
      const auto l = launches.find(static_cast<std::int64_t>(record_launch[i]));
      if (l != launches.end()) {
        launch = &l->second;
        const auto s = by_thread.find(launch->thread);
        if (s != by_thread.end()) span = span_at(s->second, launch->ns);
      }
    }
    if (span < 0) {
      if (k.kernel_class == "gemm" || k.kernel_class == "attention") {
        UnkeyedKernels& u = t.unkeyed[k.kernel_class];
        ++u.count;
        u.total_s += k.duration_s();
      }
      continue;
    }
    const auto [it, fresh] = call_index.emplace(std::tuple{comm, launch->thread, span}, t.operators.size());
    if (fresh) {
      const OperatorSpan& s = by_thread.at(launch->thread)[static_cast<std::size_t>(span)];
      TracedOperator op;
      op.name = s.name;
      op.key = s.key;
      op.device = k.device;
      op.step = k.nvtx_range;
      t.operators.push_back(std::move(op));
      first_launch.push_back(launch->ns);
    }
    TracedOperator& op = t.operators[it->second];
    op.gpu_s += k.duration_s();
    ++op.kernels;
    const auto c = communication.find(k.device);
    if (!comm && c != communication.end() && c->second.overlaps(k.start_ns, k.end_ns)) {
      op.overlaps_communication = true;
    }
  }
  // Launch order (the records were visited in file order).
  std::vector<std::size_t> order(t.operators.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](std::size_t a, std::size_t b) { return first_launch[a] < first_launch[b]; });
  std::vector<TracedOperator> sorted;
  sorted.reserve(order.size());
  for (std::size_t i : order) sorted.push_back(std::move(t.operators[i]));
  t.operators = std::move(sorted);
}

}  // namespace

KinetoTrace read_kineto_trace(const std::string& path, const std::string& device_name_override) {
  GzipInput in(path);  // .json or .json.gz alike

  KinetoTrace t;
  std::vector<std::uint64_t> record_launch;   // per record: the correlation id, 0 when none
  std::unordered_map<std::int64_t, Launch> launches;          // correlation -> CPU launch time and thread
  std::map<Thread, std::vector<OperatorSpan>> operator_spans;  // keyed compute operators' CPU spans, by thread
  std::map<Thread, std::vector<OperatorSpan>> comm_spans;      // record_param_comms spans, by thread
  std::map<int, std::vector<Range>> gpu_steps;                 // device -> GPU-side step ranges
  std::vector<Range> cpu_steps;
  std::map<std::string, std::uint64_t> step_start;             // step name -> earliest start
  const auto consume = [&](const json& e, long long index) {
    const EventReader r(path, e, index);
    if (!e.is_object()) r.fail("", "expected an object (a trace event)");
    const auto ph = e.find("ph");
    if (ph != e.end() && (!ph->is_string() || ph->get_ref<const std::string&>() != "X")) return;  // not a span
    const auto cat_it = e.find("cat");
    const std::string cat = category(cat_it != e.end() && cat_it->is_string() ? cat_it->get<std::string>() : "");
    if (cat == "cuda_runtime" || cat == "cuda_driver") {
      const std::int64_t corr = r.int_arg("correlation", -1);
      if (corr >= 0) launches[corr] = Launch{to_ns(r.micros("ts")), thread_of(e)};
      return;
    }
    if (cat == "cpu_op") {
      const std::string name = r.str("name");
      if (!is_keyed_operator(name)) return;
      const auto args = e.find("args");
      const std::uint64_t start = to_ns(r.micros("ts"));
      ++t.operator_events;
      (is_collective_operator(name) ? comm_spans : operator_spans)[thread_of(e)].push_back(
          OperatorSpan{start, start + to_ns(r.micros("dur")), name,
                       operator_key(name, args != e.end() ? *args : json::object())});
      return;
    }
    const bool gpu_record = cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset";
    if (!gpu_record) {
      // A step range: GPU-side (gpu_user_annotation) or the CPU's record_function range.
      const auto name_it = e.find("name");
      if (name_it == e.end() || !name_it->is_string()) return;
      const std::string& name = name_it->get_ref<const std::string&>();
      if (!name.starts_with(db::kProfilerStepPrefix)) return;
      const double ts = r.micros("ts"), dur = r.micros("dur");
      Range step{to_ns(ts), to_ns(ts) + to_ns(dur), name};
      if (cat == "gpu_user_annotation") gpu_steps[r.device()].push_back(step);
      else cpu_steps.push_back(step);
      auto [it, fresh] = step_start.emplace(name, step.start_ns);
      if (!fresh) it->second = std::min(it->second, step.start_ns);
      return;
    }
    const std::string name = r.str("name");
    const double ts = r.micros("ts"), dur = r.micros("dur");
    // End = start + duration: older traces give ts in microseconds since the epoch (about 1.7e15),
    // where a double keeps only about 0.25 us, while dur is small and exact to the nanosecond.
    const std::uint64_t start_ns = to_ns(ts), end_ns = start_ns + to_ns(dur);
    const int device = r.device();
    const std::int64_t stream = r.stream();
    if (cat == "kernel") {
      db::TraceKernel k;
      k.name = name;
      k.start_ns = start_ns, k.end_ns = end_ns, k.device = device, k.stream = stream;
      r.dims("grid", k.grid_x, k.grid_y, k.grid_z);
      r.dims("block", k.block_x, k.block_y, k.block_z);
      finish_trace_kernel(k);
      t.records.push_back(std::move(k));
      ++t.kernels;
    } else {
      // Copies and memsets as libcalisim_trace.so records them (profiler/trace_copies.h), their
      // kind read back from Kineto's name.
      const std::int64_t bytes = r.int_arg("bytes", 0);
      if (bytes < 0) r.fail("args.bytes", "expected a non-negative integer");
      const auto n = static_cast<std::uint64_t>(bytes);
      t.records.push_back(cat == "gpu_memcpy"
                              ? copy_record({copy_kind_from_name(memcpy_direction(name)), n, start_ns, end_ns,
                                             device, stream, -1, -1})
                              : memset_record({memory_kind_from_name(memset_memory(name)), n, start_ns, end_ns,
                                               device, stream}));
      ++t.copies;
    }
    record_launch.push_back(static_cast<std::uint64_t>(std::max<std::int64_t>(r.int_arg("correlation", 0), 0)));
  };

  StreamingTrace reader(consume);
  try {
    json::sax_parse(in.begin(), in.end(), &reader);
  } catch (const InputError&) {
    throw;
  } catch (const std::exception& e) {
    throw InputError(path, "", fmt::format("not a JSON trace ({})", e.what()));
  }
  if (reader.top_is_array) {
    // What PyTorch's legacy autograd profiler writes (a build without Kineto, such as Debian's
    // python3-torch): CPU operators only, no GPU kernel records to compare or key.
    throw InputError(path, "",
                     "a bare JSON array of events: the trace format of PyTorch's legacy autograd profiler (a "
                     "PyTorch built without Kineto), which records no GPU kernels; record with a PyTorch that has "
                     "Kineto (the pip and conda builds: torch.profiler with ProfilerActivity.CUDA), whose trace is a "
                     "JSON object with \"traceEvents\"");
  }
  if (!reader.top_is_object) throw InputError(path, "", "expected a JSON object with \"traceEvents\"");
  if (!reader.saw_event_array) {
    throw InputError(path, "traceEvents", "expected an array of trace events (a PyTorch profiler trace)");
  }
  const json& doc = reader.top;
  if (const auto props = doc.find("deviceProperties"); props != doc.end()) {
    if (!props->is_array()) throw InputError(path, "deviceProperties", "expected an array");
    for (std::size_t i = 0; i < props->size(); ++i) {
      const json& p = (*props)[i];
      const auto id = p.find("id");
      const auto name = p.find("name");
      if (!p.is_object() || id == p.end() || !id->is_number_integer() || name == p.end() || !name->is_string()) {
        throw InputError(path, fmt::format("deviceProperties[{}]", i), "expected an object with integer id and name");
      }
      t.device_names[id->get<int>()] = name->get<std::string>();
    }
  }
  if (const auto rs = doc.find("record_shapes"); rs != doc.end()) {
    t.record_shapes = rs->is_boolean() ? rs->get<bool>() : rs->is_number() && rs->get<double>() != 0;
  }
  if (const auto dist = doc.find("distributedInfo"); dist != doc.end() && dist->is_object()) {
    const auto rank = dist->find("rank");
    const auto world = dist->find("world_size");
    if (rank != dist->end() && rank->is_number_integer()) t.rank = rank->get<int>();
    if (world != dist->end() && world->is_number_integer()) t.world_size = world->get<int>();
  }
  if (t.kernels == 0) {
    throw InputError(path, "traceEvents",
                     "no GPU kernel events (cat \"kernel\"): was the profiler run with ProfilerActivity.CUDA?");
  }
  name_trace_devices(t.records, t.device_names, device_name_override, path, "deviceProperties");

  std::vector<std::pair<std::uint64_t, std::string>> order;
  for (const auto& [name, start] : step_start) order.emplace_back(start, name);
  std::sort(order.begin(), order.end());
  for (auto& [start, name] : order) t.steps.push_back(std::move(name));

  // Steps: GPU-side ranges when the trace has them, else the CPU range of each record's launch.
  auto by_start = [](const Range& a, const Range& b) { return a.start_ns < b.start_ns; };
  for (auto& [dev, ranges] : gpu_steps) std::sort(ranges.begin(), ranges.end(), by_start);
  std::sort(cpu_steps.begin(), cpu_steps.end(), by_start);
  if (!gpu_steps.empty()) t.step_source = "gpu annotations";
  else if (!cpu_steps.empty()) t.step_source = "cpu ranges and launch correlation";
  for (std::size_t i = 0; i < t.records.size(); ++i) {
    db::TraceKernel& k = t.records[i];
    const Range* step = nullptr;
    if (!gpu_steps.empty()) {
      const auto it = gpu_steps.find(k.device);
      if (it != gpu_steps.end()) step = range_at(it->second, k.start_ns);
    } else if (!cpu_steps.empty() && record_launch[i] > 0) {
      const auto l = launches.find(static_cast<std::int64_t>(record_launch[i]));
      if (l != launches.end()) step = range_at(cpu_steps, l->second.ns);
    }
    if (step) k.nvtx_range = step->name;
    else if (!t.step_source.empty()) ++t.outside_steps;
  }
  attribute_operators(t, record_launch, launches, std::move(operator_spans), std::move(comm_spans));
  std::stable_sort(t.records.begin(), t.records.end(),
                   [](const db::TraceKernel& a, const db::TraceKernel& b) { return a.start_ns < b.start_ns; });
  return t;
}

}  // namespace calisim::profiler
