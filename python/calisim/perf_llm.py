"""PerfLLM: SimuMax's driver class on top of calisim's C++ simulator.

    perf_model = PerfLLM()
    perf_model.configure(strategy_config=..., model_config=..., system_config=...)
    perf_model.run_estimate()
    mem_result = perf_model.analysis_mem()
    cost_result = perf_model.analysis_cost()

Differences from SimuMax (docs/python.md): system configs are calisim system files; memory is in
bytes and times in seconds; the search also uses calisim's exact pruned search, not a loop.
"""
import json
import math
import numbers
import os

from . import _native
from ._native import ConfigError, _core
from .api import run_search, run_simulation
from .configs import ModelConfig, StrategyConfig, SystemConfig
from .simumax_results import cost_result, mem_result

_GIB_IN_GB = 2 ** 30 / 1e9

# SimuMax's argument names for the search request's keys, so messages name what the caller wrote.
_SIMUMAX_ARG_NAMES = {"tp": "tp_search_list", "ep": "ep_search_list", "pp": "pp_search_list",
                      "vpp": "vpp_search_list", "mbs": "micro_batch_size", "recompute": "recompute_search_type",
                      "memory_margin_gb": "gmi_error", "top_k": "top_k", "cp": "strategy cp_size",
                      "zero": "strategy zero_state", "seq_len": "strategy seq_len"}


class PerfLLM:
    """Performance model of one LLM training run (SimuMax's interface)."""

    def __init__(self, db=None):
        self.strategy = None
        self.model_config = None
        self.system = None
        self.db = db
        self.is_configured = False
        self._result = None

    # --- configuration ---------------------------------------------------------------------
    def configure(self, strategy_config=None, model_config=None, system_config=None, pp_scheduling_config=None,
                  disturbance_config=None, debug_points=None, debug_points_last_stage=None, db=None):
        """Takes each config as a config object, a path or a shipped name, and validates the three
        together (ConfigError with file, field path and what was expected)."""
        if pp_scheduling_config is not None or disturbance_config is not None:
            raise ConfigError("configure: pp_scheduling_config and disturbance_config are SimuMax features calisim "
                              "does not model; set the schedule with the strategy's interleaving_size")
        if strategy_config is None or model_config is None or system_config is None:
            raise ConfigError("configure: give strategy_config, model_config and system_config")
        self.strategy = StrategyConfig.load(strategy_config)
        self.model_config = ModelConfig.load(model_config)
        self.system = SystemConfig.load(system_config)
        if db is not None:
            self.db = db
        self._validate()
        self.is_configured = True
        self._result = None

    def _configs(self):
        return (self.model_config, self.strategy, self.system)

    def _validate(self):
        docs = [_native.dumps(c.to_dict()) for c in self._configs()]
        view = json.loads(_core.resolve_run(docs, [c.file for c in self._configs()], []))
        self.model_config._set_parsed(view["model"])
        self.strategy._set_parsed(view["strategy"])
        self.system._set_parsed(view["system"])
        return view

    def _require_configured(self):
        if not self.is_configured:
            raise RuntimeError("call configure() first")

    # --- simulation ------------------------------------------------------------------------
    def run_estimate(self, capture_graph=False, save_path="./"):
        """Simulates one iteration with the current configs (edits made to them since configure()
        included) and returns the full result (also kept for analysis_*())."""
        self._require_configured()
        self._validate()
        self._result = run_simulation(*self._configs(), db=self.db)
        return self._result

    @property
    def result(self):
        """The SimulationResult of the last run_estimate() (every field of `calisim simulate --json`)."""
        if self._result is None:
            raise RuntimeError("call run_estimate() first")
        return self._result

    def analysis_mem(self):
        """SimuMax's memory result (bytes): one stage for pp 1, else first / (middle) / last."""
        return mem_result(self.result.to_dict(), self.strategy.mem_factor)

    def analysis_cost(self):
        """SimuMax's cost result (seconds, fractions, tokens)."""
        return cost_result(self.result.to_dict())

    def analysis(self, save_path=None, console_log=True):
        """Both analyses; with save_path, writes them (and the configs and calisim's full result)
        as JSON files into that directory. Returns SimuMax's summary dict."""
        mem, cost = self.analysis_mem(), self.analysis_cost()
        result = self.result
        if save_path is not None:
            os.makedirs(save_path, exist_ok=True)
            files = {"mem_result.json": mem.data, "compute_result.json": cost.data,
                     "strategy_config.json": self.strategy.to_dict(), "model_config.json": self.model_config.to_dict(),
                     "system_config.json": self.system.to_dict(), "calisim_result.json": result.to_dict()}
            for name, data in files.items():
                with open(os.path.join(save_path, name), "w") as f:
                    json.dump(data, f, indent=2)
        stages = mem.data if "first_stage" in mem.data else {"stage": mem.data}
        peak = {k: v["peak_mem"] for k, v in stages.items()}
        peak_reserved = {k: v["peak_mem_with_reserved"] for k, v in stages.items()}
        summary = {
            "model": result.model, "model_type": self.model_config.model_type,
            "params": cost["param_numel_info"]["all"], "system": result.system,
            "peak_mem": peak if len(peak) > 1 else peak["stage"],
            "peak_mem_with_reserved": peak_reserved if len(peak) > 1 else peak_reserved["stage"],
            "duration_time_per_iter": cost["duration_time_per_iter"],
            "TFLOPS": cost["throughput per GPU (TFLOP/s/GPU)"],
            "TGS_per_gpu": cost["throughput_per_accelerator"],
            "mfu": cost["mfu_6nd_with_attn"],
            "parallelism": "tp{tp}.pp{pp}.vpp{vpp}.cp{cp}.ep{ep}.dp{dp}".format(**result.layout.to_dict()),
            "recompute": result.layout.recompute,
        }
        if console_log:
            print(f"------------- calisim summary {summary['model']} ({summary['params'] / 1e9:.2f} B params) "
                  f"{summary['parallelism']} -------------")
            print(f"- system = {summary['system']}, recompute = {summary['recompute']}")
            print(f"- mfu = {summary['mfu']:.4f}, TFLOPS = {summary['TFLOPS']:.2f}, "
                  f"duration = {summary['duration_time_per_iter']:.4f} s")
            print(f"- peak_alloc_mem = {_gb(summary['peak_mem'])}, "
                  f"with reserved = {_gb(summary['peak_mem_with_reserved'])}")
            print(f"- TGS_per_gpu = {summary['TGS_per_gpu']:.1f}")
            if save_path is not None:
                print(f"- results written to {save_path}")
        return summary

    def simulate(self, save_path):
        """Simulates one iteration and writes its Chrome/Perfetto trace: to save_path when it ends
        in .json, else to save_path/trace.json. Returns the trace file's path."""
        self._require_configured()
        self._validate()
        path = os.fspath(save_path)
        if not path.endswith(".json"):
            os.makedirs(path, exist_ok=True)
            path = os.path.join(path, "trace.json")
        self._result = run_simulation(*self._configs(), db=self.db, trace=True)
        with open(path, "w") as f:
            json.dump(self._result.trace, f)
        return path

    # --- search ----------------------------------------------------------------------------
    def search_best_parallel_strategy_with_recompute(self, world_size, gmi_error, micro_batch_size, global_batch_size,
                                                     all_search_result=None, tp_search_list=None, ep_search_list=None,
                                                     pp_search_list=None, use_etp=False,
                                                     recompute_search_type=("no_recompute", "full_block",
                                                                            "selective_recompute"),
                                                     use_reserved_memory=True, dump_path=None, vpp_search_list=(1,),
                                                     top_k=10):
        """SimuMax's search, run by calisim's exact search (docs/search.md, "Coming from SimuMax").

        gmi_error: GiB per GPU to leave free. micro_batch_size: an int or a list. The current
        strategy gives everything the search does not vary (seq_len, dtype, ZeRO stage, cp, ...).
        all_search_result: a dict, filled with one list per column over every feasible layout
        (pandas.DataFrame(all_search_result) reads it). dump_path: writes the top K and every
        feasible layout as CSV files (the CLI's --out / --csv format). Returns the best layout as a
        dict, or {} when nothing fits (the reason is printed). The GIL is released while it runs.
        """
        self._require_configured()
        if use_etp:
            raise ConfigError("search: use_etp is not searched by calisim (expert tensor parallelism follows etp_size)")
        if (not isinstance(gmi_error, numbers.Real) or isinstance(gmi_error, bool) or not math.isfinite(gmi_error)
                or gmi_error < 0):
            raise ConfigError(f"<search>: gmi_error: expected a finite number of GiB >= 0, got {gmi_error!r}")
        strategy = self.strategy.parsed()
        is_moe = self.model_config.model_type == "moe"
        tp = tp_search_list if tp_search_list is not None else ([1] if is_moe else [1, 2, 4, 8])
        ep = ep_search_list if ep_search_list is not None else ([1, 2, 4, 8] if is_moe else [1])
        recompute = [recompute_search_type] if isinstance(recompute_search_type, str) else list(recompute_search_type)
        keep_all = all_search_result is not None or dump_path is not None
        csv_path = out_path = None
        if dump_path is not None:
            os.makedirs(dump_path, exist_ok=True)
            stem = (f"{self.model_config.model_name}_{self.system.name}_seqlen{strategy['seq_len']}"
                    f"_worldsize{world_size}_gbs{global_batch_size}")
            out_path = os.path.join(dump_path, stem + "_best_strategy.csv")
            csv_path = os.path.join(dump_path, stem + "_all_search_strategies.csv")
        res = run_search(self.model_config, self.system, world_size, global_batch_size, strategy=self.strategy,
                         tp=tp, pp=pp_search_list, vpp=vpp_search_list, cp=[strategy["cp_size"]], ep=ep,
                         mbs=micro_batch_size, recompute=recompute, zero=[strategy["zero_state"]],
                         memory_margin_gb=gmi_error * _GIB_IN_GB, allocated_memory=not use_reserved_memory,
                         top=top_k, keep_all=keep_all, csv=csv_path, out=out_path, db=self.db,
                         _arg_names=_SIMUMAX_ARG_NAMES)
        if all_search_result is not None:
            for row in res.to_dict()["feasible"]:
                for key, value in _simumax_row(row).items():
                    all_search_result.setdefault(key, []).append(value)
        if res.explanation:
            print(f"calisim search: {res.explanation}")
            return {}
        return _simumax_row(res.to_dict()["top"][0])


def _simumax_row(c):
    """A search candidate with SimuMax's column names first, then calisim's."""
    row = {"tp_size": c["tp"], "ep_size": c["ep"], "pp_size": c["pp"], "dp_size": c["dp"],
           "vpp_size": c["vpp"], "cp_size": c["cp"], "micro_batch_size": c["micro_batch_size"],
           "micro_batch_num": c["micro_batch_num"], "recompute": c["recompute"], "zero_state": c["zero_state"],
           "mfu": c["mfu"], "duration_time_per_iter": c["step_time_s"],
           "throughput_per_accelerator": c["tokens_per_s_per_gpu"], "peak_mem_gb": c["max_peak_gb"]}
    row.update({k: v for k, v in c.items() if k not in row})
    return row


def _gb(value):
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {v / 1e9:.2f} GB" for k, v in value.items()) + "}"
    return f"{value / 1e9:.2f} GB"


__all__ = ["PerfLLM"]
