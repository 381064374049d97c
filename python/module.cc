// calisim._core: the C++ core as a Python extension module (pybind11).
//
// Everything crosses the boundary as JSON text (configs in, results out); the pure-Python package
// (python/calisim/) turns it into objects. Long calls (simulate, search) copy their inputs into C++
// values and release the GIL while they run. calisim::InputError becomes calisim.ConfigError (a
// ValueError) with the message the CLI prints and .file, .where, .problem attributes.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <filesystem>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/config_catalog.h"
#include "cli/efficiency_source.h"
#include "cli/megatron_configs.h"
#include "cli/predict_command.h"
#include "cli/validate_command.h"
#include "core/error.h"
#include "python/config_json.h"
#include "python/db_binding.h"
#include "python/run_docs.h"
#include "python/search_binding.h"
#include "simulator/collective_table.h"
#include "simulator/config_loader.h"
#include "simulator/result_json.h"
#include "cli/accuracy_report.h"
#include "cli/trace_import.h"
#include "cli/trace_compare.h"
#include "simulator/simulate.h"
#include "simulator/trace.h"

namespace py = pybind11;
using nlohmann::json;

namespace calisim::python {
namespace {

// Singular or plural, as `calisim configs list` takes them; a ValueError names the valid ones.
cli::ConfigKind parse_kind(const std::string& kind) {
  if (const auto k = cli::parse_config_kind(kind)) return *k;
  throw std::invalid_argument("config kind must be " + std::string(cli::kConfigKindNames) + ", got '" + kind + "'");
}

// JSON text from Python; a syntax error is the caller's bug, reported with the file it names.
json parse_doc(const std::string& text, const std::string& file) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw InputError(file, "(document)", std::string("not valid JSON: ") + e.what());
  }
}

std::string resolve_one(const std::string& kind, const std::string& text, const std::string& file) {
  const json doc = parse_doc(text, file);
  switch (parse_kind(kind)) {
    case cli::ConfigKind::model: {
      ModelConfig m = parse_model(doc, file, nullptr);
      if (m.model_name.empty()) m.model_name = std::filesystem::path(file).stem().string();
      return model_json(m).dump();
    }
    case cli::ConfigKind::strategy: return strategy_json(parse_strategy(doc, file), false).dump();
    case cli::ConfigKind::system: return system_json(parse_system(doc, file)).dump();
  }
  return "{}";
}

struct RunInputs {
  ConfigDoc model, strategy, system;
  std::vector<std::string> overrides;
};

RunInputs run_inputs(const std::vector<std::string>& docs, const std::vector<std::string>& files,
                     std::vector<std::string> overrides) {
  if (docs.size() != 3 || files.size() != 3) throw std::invalid_argument("expected model, strategy and system");
  return {{parse_doc(docs[0], files[0]), files[0]},
          {parse_doc(docs[1], files[1]), files[1]},
          {parse_doc(docs[2], files[2]), files[2]},
          std::move(overrides)};
}

std::string resolve_run(const RunInputs& in) {
  const cli::RunConfigs rc = load_run_docs(in.model, in.strategy, in.system, in.overrides);
  return json{{"model", model_json(rc.model)},
              {"strategy", strategy_json(rc.strategy, true)},
              {"system", system_json(rc.system)},
              {"warnings", rc.warnings}}
      .dump();
}

// What `calisim simulate --json [--trace]` computes, from documents.
// accuracy: add "accuracy" (simulate --accuracy; accuracy_runs empty = the shipped runs files).
// compare: `--compare-trace` and its options as JSON text ({"db", "run" | "all_runs", "stage", "rank",
// "steps", "fit_out"}),
// or "" for none: adds "trace_comparison".
std::pair<std::string, std::string> simulate_run(const RunInputs& in, const std::string& db, bool details,
                                                 bool trace, bool accuracy, const std::vector<std::string>& accuracy_runs,
                                                 const std::string& compare) {
  const cli::RunConfigs rc = load_run_docs(in.model, in.strategy, in.system, in.overrides);
  const cli::EfficiencyChoice source = cli::make_efficiency_source(rc.system, rc.system_file, db);
  SimulateOptions opt;
  opt.details = details;
  opt.trace = trace;
  SimulationResult r = simulate(rc.model, rc.strategy, rc.system, *source.model, opt);
  r.efficiency_db = source.database;
  r.strategy_name = std::filesystem::path(rc.strategy_file).stem().string();
  r.warnings.insert(r.warnings.begin(), rc.warnings.begin(), rc.warnings.end());
  r.warnings.insert(r.warnings.end(), source.notes.begin(), source.notes.end());
  if (details) r.collectives = simulation_collectives(rc.model, rc.strategy, rc.system, *source.model);
  json doc = to_json(r);
  if (accuracy) doc["accuracy"] = cli::accuracy_json(cli::accuracy_report(accuracy_runs, db, rc.model, rc.strategy, rc.system, r.duration_time_per_iter_s));
  if (!compare.empty()) {
    const json c = parse_doc(compare, "<compare_trace>");
    cli::TraceCompareRequest q;
    q.db = c.at("db").get<std::string>();
    q.run = c.value("run", std::int64_t{0});
    q.all_runs = c.value("all_runs", false);
    q.stage = c.value("stage", -1);
    q.rank = c.value("rank", -1);
    q.steps = c.value("steps", 0);
    q.system = &rc.system;
    q.model = source.model.get();
    const std::string fit_out = c.value("fit_out", std::string());
    if (!fit_out.empty() && q.all_runs) {
      throw InputError("<simulate>", "trace_fit_out", "needs one trace run, not trace_run=\"all\"");
    }
    if (q.all_runs) {
      doc["trace_comparison"] = cli::trace_comparisons_json(cli::compare_all_trace_runs(q, r));
    } else {
      const cli::TraceComparison one = cli::compare_with_trace(q, r);
      doc["trace_comparison"] = cli::trace_comparison_json(one);
      if (!fit_out.empty()) {
        doc["trace_fit"] = cli::write_trace_fit(fit_out, nlohmann::ordered_json::parse(in.system.doc.dump()),
                                                in.overrides, r, one);
      }
    }
  }
  return {doc.dump(), trace ? chrome_trace(r).dump() : std::string()};
}

void register_errors(py::module_& m) {
  static py::exception<InputError> config_error(m, "ConfigError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const InputError& e) {
      py::object err = py::handle(config_error.ptr())(e.what());
      err.attr("file") = e.file();
      err.attr("where") = e.where();
      err.attr("problem") = e.problem();
      PyErr_SetObject(config_error.ptr(), err.ptr());
    }
  });
}

}  // namespace
}  // namespace calisim::python

PYBIND11_MODULE(_core, m) {
  using namespace calisim;
  using namespace calisim::python;
  m.doc() = "calisim C++ core (JSON in, JSON out); use the `calisim` package, not this module";
  register_errors(m);

  m.def("config_root", &cli::config_root, "Directory the shipped configs are looked up in");
  m.def("list_configs", [](const std::string& kind) { return cli::list_configs(parse_kind(kind)); });
  m.def("resolve_config", [](const std::string& kind, const std::string& name) {
    return cli::resolve_config(parse_kind(kind), name);
  });
  m.def("read_json_file", [](const std::string& path) { return read_json_file(path).dump(); },
        "A config file's JSON text; ConfigError with line and column on syntax errors");
  m.def("resolve_config_doc", &resolve_one, py::arg("kind"), py::arg("doc"), py::arg("file"),
        "Parses one config document and returns every field of the parsed config as JSON text");
  m.def(
      "resolve_run",
      [](const std::vector<std::string>& docs, const std::vector<std::string>& files,
         std::vector<std::string> overrides) { return resolve_run(run_inputs(docs, files, std::move(overrides))); },
      py::arg("docs"), py::arg("files"), py::arg("overrides"),
      "Validates model, strategy and system together; their parsed fields (strategy with derived sizes)");
  m.def(
      "simulate",
      [](const std::vector<std::string>& docs, const std::vector<std::string>& files,
         std::vector<std::string> overrides, const std::string& db, bool details, bool trace, bool accuracy,
         const std::vector<std::string>& accuracy_runs, const std::string& compare) {
        const RunInputs in = run_inputs(docs, files, std::move(overrides));
        py::gil_scoped_release release;
        return simulate_run(in, db, details, trace, accuracy, accuracy_runs, compare);
      },
      py::arg("docs"), py::arg("files"), py::arg("overrides"), py::arg("db"), py::arg("details"), py::arg("trace"),
      py::arg("accuracy") = false, py::arg("accuracy_runs") = std::vector<std::string>{},
      py::arg("compare") = std::string(),
      "(result JSON as `calisim simulate --json` prints it, Chrome trace JSON or '')");
  m.def(
      "search",
      [](const std::string& request_text) {
        const json r = parse_doc(request_text, "<search>");
        SearchRequest q;
        q.model = {r.at("model_doc"), r.at("model_file").get<std::string>()};
        q.base_strategy = {r.at("strategy_doc"), r.at("strategy_file").get<std::string>()};
        q.system = {r.at("system_doc"), r.at("system_file").get<std::string>()};
        q.overrides = r.value("overrides", std::vector<std::string>{});
        q.space = r.at("space");
        q.options = r.value("options", json::object());
        q.db = r.value("db", std::string());
        q.csv_path = r.value("csv_path", std::string());
        q.out_path = r.value("out_path", std::string());
        q.arg_names = r.value("arg_names", json::object());
        py::gil_scoped_release release;
        return run_search_request(q).dump();
      },
      py::arg("request"), "Strategy search; request and result as JSON text (python/search_binding.h)");
  m.def(
      "validate",
      [](const std::string& request_text) {
        const json r = parse_doc(request_text, "<validate>");
        cli::ValidateArgs a;
        // One file or a list of files (calisim validate --runs A --runs B).
        a.runs = r.at("runs").is_array() ? r.at("runs").get<std::vector<std::string>>()
                                         : std::vector<std::string>{r.at("runs").get<std::string>()};
        a.db = r.value("db", std::string());
        a.source = r.value("source", std::string());
        a.report = r.value("report", std::string());
        a.dump_dir = r.value("dump_inputs", std::string());
        a.overrides = r.value("overrides", std::vector<std::string>{});
        a.fit_system = r.value("fit_system", std::string());
        a.fit_out = r.value("fit_out", std::string());
        if (r.contains("fit") && !r["fit"].is_null()) a.fit_groups = r["fit"].get<std::vector<std::string>>();
        // components: true (every part) or a list of parts (cli/validate_components.h).
        if (r.contains("components") && !r["components"].is_null()) {
          const json& c = r["components"];
          a.components = c.is_boolean() ? c.get<bool>() : true;
          if (c.is_array()) a.component_parts = c.get<std::vector<std::string>>();
        }
        a.select_parts = r.value("select_parts", false);
        a.components_out = r.value("components_out", std::string());
        py::gil_scoped_release release;
        return cli::validate_document(a).dump();
      },
      py::arg("request"), "`calisim validate --json` as a function; request and result as JSON text");
  m.def(
      "import_megatron",
      [](const std::string& script, std::optional<long long> world_size, std::optional<long long> vocab_size,
         const std::vector<std::string>& vars) {
        cli::MegatronInputs in{script, vars, world_size, vocab_size};
        return cli::megatron_report_json(cli::read_megatron(in), script).dump();
      },
      py::arg("script"), py::arg("world_size"), py::arg("vocab_size"), py::arg("vars"),
      "`calisim configs import-megatron --json` as a function (JSON text)");
  m.def("database_devices", &database_devices, py::arg("path"));
  m.def(
      "import_kineto",
      [](const std::string& db, const std::string& file, const std::string& device, bool kernel_rows) {
        py::gil_scoped_release release;
        return cli::import_kineto_trace(db, file, device, kernel_rows).doc.dump();
      },
      py::arg("db"), py::arg("file"), py::arg("device"), py::arg("kernel_rows"),
      "`calisim db import DB --kineto FILE --json [--no-kernel-rows]` as a function");
  m.def(
      "import_nsys",
      [](const std::string& db, const std::string& file, const std::string& device, const std::string& nvtx_steps) {
        py::gil_scoped_release release;
        return cli::import_nsys_trace(db, file, device, nvtx_steps).doc.dump();
      },
      py::arg("db"), py::arg("file"), py::arg("device"), py::arg("nvtx_steps"),
      "`calisim db import DB --nsys REPORT [--nvtx-steps PREFIX] --json` as a function");
  m.def(
      "query_database",
      [](const std::string& path, const std::string& device, const std::string& key, int nearest) {
        return query_database(path, device, key, nearest).dump();
      },
      py::arg("path"), py::arg("device"), py::arg("key"), py::arg("nearest"));
  m.def(
      "predict_gpus",
      [](const std::string& db, const std::string& from, const std::string& to, const std::string& out,
         std::optional<double> op_dispatch_us) {
        cli::PredictArgs a;
        a.db = db;
        a.from = from;
        a.to = to;
        a.out = out;
        a.op_dispatch_us = op_dispatch_us;
        py::gil_scoped_release release;
        return cli::predict_targets(a).dump();
      },
      py::arg("db"), py::arg("from"), py::arg("to"), py::arg("out"), py::arg("op_dispatch_us"),
      "`calisim predict --from … --to … --json` as a function: JSON text of the per-target documents (an array)");
  m.def(
      "predict_efficiency",
      [](const std::string& path, const std::string& device, const std::string& key) {
        py::gil_scoped_release release;
        return predict_efficiency(path, device, key).dump();
      },
      py::arg("path"), py::arg("device"), py::arg("key"));
}
