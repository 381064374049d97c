#include "simulator/trace.h"

#include <fmt/format.h>

namespace calisim {

nlohmann::json chrome_trace(const SimulationResult& r) {
  using nlohmann::json;
  json events = json::array();
  const double us = 1e6;
  for (const StageReport& s : r.stages) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", s.rank},
                      {"args", {{"name", fmt::format("pp stage {} ({} layers)", s.rank, s.layers)}}}});
  }
  for (const PipelineEvent& e : r.events) {
    events.push_back({{"name", fmt::format("{} mb{} c{}", e.forward ? "F" : "B", e.micro_batch, e.chunk)},
                      {"cat", e.forward ? "forward" : "backward"},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", e.rank},
                      {"ts", e.start_s * us},
                      {"dur", (e.end_s - e.start_s) * us},
                      {"args", {{"micro_batch", e.micro_batch}, {"chunk", e.chunk}}}});
  }
  for (const StageReport& s : r.stages) {
    if (s.dp_comm_s > 0) {
      events.push_back({{"name", "dp grad sync"}, {"cat", "communication"}, {"ph", "X"}, {"pid", 0}, {"tid", s.rank},
                        {"ts", s.pipeline_finish_s * us}, {"dur", s.dp_comm_s * us}});
    }
    const double opt_start = r.duration_time_per_iter_s - r.optimizer_s;
    events.push_back({{"name", "optimizer step"}, {"cat", "optimizer"}, {"ph", "X"}, {"pid", 0}, {"tid", s.rank},
                      {"ts", opt_start * us}, {"dur", s.optimizer_s * us}});
  }
  return json{{"traceEvents", events}, {"displayTimeUnit", "ms"},
              {"otherData", {{"model", r.model_name}, {"strategy", r.strategy_name}, {"system", r.system_name}}}};
}

}  // namespace calisim
