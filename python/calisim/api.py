"""calisim.simulate(), calisim.search() and calisim.validate(): the CLI's `simulate`, `search` and
`validate` as functions.

Both take configs as shipped names, paths, dicts or config objects; both give the same numbers
as the `calisim` executable for the same inputs (the tests compare them).
"""
import json
import math
import numbers
import os

from . import _native
from ._native import ConfigError, _core
from .configs import ModelConfig, StrategyConfig, SystemConfig
from .records import SearchResult, SimulationResult, ValidationResult

_SECTIONS = ("strategy", "model", "system")


def _assignment(key, value):
    return f"{key}={value if isinstance(value, str) else json.dumps(value)}"


def override_list(configs, overrides=None, fields=None):
    """--set style assignments from a list ("strategy.tp_size=4") and keyword fields: a dotted
    name is used as given; a plain name goes to the one config (strategy, model, system) that has
    that field. ConfigError when no config or more than one has it."""
    out = list(overrides or [])
    for key, value in (fields or {}).items():
        if "." in key:
            out.append(_assignment(key, value))
            continue
        owners = [s for s in _SECTIONS if key in configs[s].parsed() or key in configs[s].to_dict()]
        if len(owners) != 1:
            where = "no config has" if not owners else f"{' and '.join(owners)} configs all have"
            raise ConfigError(f"<overrides>: {key}: {where} a field '{key}'; write it as section.{key} "
                              f"(section: strategy, model or system)")
        out.append(_assignment(f"{owners[0]}.{key}", value))
    return out


def _compare_request(compare_trace, trace_run, trace_stage, trace_rank, trace_steps, trace_fit_out=None):
    """The --compare-trace request as JSON text ("" for none), its arguments checked as the CLI's."""
    given = {"trace_run": trace_run, "trace_stage": trace_stage, "trace_rank": trace_rank,
             "trace_steps": trace_steps}
    if compare_trace is None:
        extra = [k for k, v in given.items() if v is not None] + (["trace_fit_out"] if trace_fit_out else [])
        if extra:
            raise ConfigError(f"<simulate>: {extra[0]}: needs compare_trace (a database holding a trace run)")
        return ""
    if trace_stage is not None and trace_rank is not None:
        raise ConfigError("<simulate>: trace_stage: give trace_stage or trace_rank, not both")
    minimum = {"trace_run": 1, "trace_stage": 0, "trace_rank": 0, "trace_steps": 1}
    all_runs = trace_run == "all"
    if all_runs:
        given["trace_run"] = None
    for key, value in given.items():
        if value is None:
            continue
        if not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < minimum[key]:
            also = ' or "all"' if key == "trace_run" else ""
            raise ConfigError(f"<simulate>: {key}: expected a whole number >= {minimum[key]}{also}, got {value!r}")
    request = {"db": os.fspath(compare_trace)}
    if all_runs:
        request["all_runs"] = True
    if trace_fit_out:
        request["fit_out"] = os.fspath(trace_fit_out)
    for key, value in given.items():
        if value is not None:
            request[key[len("trace_"):]] = int(value)
    return json.dumps(request)


def run_simulation(model, strategy, system, db=None, overrides=(), details=True, trace=False, accuracy=False,
                   accuracy_runs=None, compare_trace=None, trace_run=None, trace_stage=None, trace_rank=None,
                   trace_steps=None, trace_fit_out=None):
    """SimulationResult of three config objects (no name resolution), as `calisim simulate`."""
    compare = _compare_request(compare_trace, trace_run, trace_stage, trace_rank, trace_steps, trace_fit_out)
    docs = [_native.dumps(c.to_dict()) for c in (model, strategy, system)]
    files = [c.file for c in (model, strategy, system)]
    runs = [os.fspath(r) for r in ([accuracy_runs] if isinstance(accuracy_runs, (str, os.PathLike))
                                   else (accuracy_runs or []))]
    # The comparison reads the per-op table, so it is computed even when details=False.
    text, trace_text = _core.simulate(docs, files, list(overrides), os.fspath(db or ""), details or bool(compare),
                                      trace, bool(accuracy or runs), runs, compare)
    return SimulationResult(json.loads(text), json.loads(trace_text) if trace_text else None)


def import_kineto(trace, db, device=None, kernel_rows=True):
    """Stores one rank's PyTorch profiler trace (Kineto's Chrome-trace JSON, plain or .json.gz) in
    the efficiency database db (created when missing) as trace runs, as `calisim db import DB
    --kineto TRACE` (docs/profiling.md). device names the GPU when the trace's deviceProperties do
    not. Returns the command's --json document: "kernels", "copies", "steps", "step_source",
    "outside_steps", "rank", "world_size", "runs" (one per GPU: "device_ordinal", "device",
    "run"), "warnings", and "kernel_rows": with record_shapes=True, the GEMM / attention / collective
    efficiency rows its aten operators gave ("devices": per GPU the rows run, "keys" with
    "key", "calls", "median_s", "efficiency", and "not_keyed" reasons; "kernels_outside_operators";
    docs/profiling.md "Kernel efficiencies from a trace"); kernel_rows=False stores the trace only
    (`--no-kernel-rows`: the rows are reported, "stored": false). Raises ConfigError naming the
    file and field for a malformed trace, and for a trace already imported into db.

    trace may be a directory (tensorboard_trace_handler's, one file per rank): each *.json /
    *.json.gz in it is imported in name order, those already in db skipped; the document is then
    {"directory", "imports": [one document per file], "skipped": [{"file",
    "already_imported_as_run"}]}."""
    return json.loads(_core.import_kineto(os.fspath(db), os.fspath(trace), device or "", bool(kernel_rows)))


def import_nsys(report, db, device=None, nvtx_steps=None):
    """Stores an Nsight Systems report exported to SQLite (`nsys export --type sqlite`) in the
    efficiency database db (created when missing), one trace run per GPU it shows, as `calisim db
    import DB --nsys REPORT` (docs/profiling.md). The report has no ProfilerStep ranges: compare it
    with simulate(..., compare_trace=db, trace_run=..., trace_steps=<steps captured>), or give
    nvtx_steps, the prefix of the program's own NVTX step ranges ("iteration" for
    torch.cuda.nvtx.range_push(f"iteration{i}")), which then are the steps (`--nvtx-steps`).
    Returns the command's --json document ("kernels", "copies", "untimed", "steps",
    "outside_steps", "runs", "warnings"); for a directory of exports (one per node) each is
    imported, those already in db skipped: {"directory", "imports", "skipped"}."""
    return json.loads(_core.import_nsys(os.fspath(db), os.fspath(report), device or "", nvtx_steps or ""))


def simulate(model, strategy, system, db=None, overrides=None, details=True, trace=False, accuracy=False,
             accuracy_runs=None, compare_trace=None, trace_run=None, trace_stage=None, trace_rank=None,
             trace_steps=None, trace_fit_out=None, **fields):
    """Simulates one training iteration.

    model, strategy, system: shipped names, paths, dicts or config objects.
    db: efficiency database (default: the system file's efficiency_db, else roofline defaults).
    overrides: --set style strings; **fields: more overrides by field name
    (``tp_size=4``, or ``**{"system.device.memory_gb": 141}``).
    details: include the per-op table; trace: also return the Perfetto trace (``result.trace``).
    accuracy: also validate the shipped measured runs (or accuracy_runs: one path or a list) with
    the same efficiencies and give ``result.accuracy``: the step-time errors of the runs of this
    configuration's class and the step time they imply (`calisim simulate --accuracy`).
    compare_trace: a database holding a trace of this configuration's training step (see
    import_kineto); gives ``result.trace_comparison`` as `calisim simulate --compare-trace` (with
    trace_run, trace_stage or trace_rank, trace_steps as its --trace-* options; trace_run="all"
    compares every trace run with its own rank's stage: {"database", "runs": [...]}).
    trace_fit_out: with compare_trace, write the system file with its kernel efficiencies scaled to
    the trace (`--trace-fit-out`); ``result.trace_fit`` says with which factors.
    Raises ConfigError (a ValueError) with the CLI's message on bad input.
    """
    configs = {"model": ModelConfig.load(model), "strategy": StrategyConfig.load(strategy),
               "system": SystemConfig.load(system)}
    sets = override_list(configs, overrides, fields)
    return run_simulation(configs["model"], configs["strategy"], configs["system"], db, sets, details, trace,
                          accuracy, accuracy_runs, compare_trace, trace_run, trace_stage, trace_rank, trace_steps,
                          trace_fit_out)


class NoFeasibleLayout(ConfigError):
    """No layout of the space fits in memory; ``.result`` holds the search (its explanation and
    the smallest layout)."""


def _whole(value):
    """An integer as JSON takes it (numpy integers included); anything else goes as it is, for the
    C++ side to refuse with the argument's name (1.5 is not silently 1, True not 1)."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return value


def _int_list(values):
    if values is None:
        return None
    if isinstance(values, (numbers.Number, str)):
        return [_whole(values)]
    return [_whole(v) for v in values]


# calisim.search's keywords where they differ from the request's keys (messages name them).
_SEARCH_ARG_NAMES = {"top_k": "top", "moe_dispatcher": "dispatcher"}


def run_search(model, system, world_size, global_batch_size, strategy=None, seq_len=None, tp=None, pp=None,
               vpp=None, cp=None, ep=None, etp=None, cp_comm_type=None, mbs=None, recompute=None, zero=None, memory_margin_gb=0.0,
               dispatcher=None, dp_replicate=None,
               allocated_memory=False, top=10, threads=0, keep_all=False, csv=None, out=None, db=None,
               overrides=None, objective="mfu", accuracy=False, accuracy_runs=None, _arg_names=None):
    """SearchResult of config objects (strategy may be None: calisim's defaults). _arg_names maps
    request keys to the caller's argument names for messages (PerfLLM's tp_search_list, ...)."""
    names = dict(_SEARCH_ARG_NAMES, **(_arg_names or {}))
    if isinstance(memory_margin_gb, numbers.Real) and not math.isfinite(memory_margin_gb):
        # JSON has no NaN or infinity; said here, with the argument's name, rather than by json.dumps.
        raise ConfigError(f"<search>: {names.get('memory_margin_gb', 'memory_margin_gb')}: expected a finite "
                          f"number of GB >= 0, got {memory_margin_gb}")
    strategy_doc = strategy.to_dict() if strategy is not None else {}
    request = {
        "model_doc": model.to_dict(), "model_file": model.file,
        "strategy_doc": strategy_doc, "strategy_file": strategy.file if strategy is not None else "<search defaults>",
        "system_doc": system.to_dict(), "system_file": system.file,
        "overrides": list(overrides or []),
        "space": {"world_size": _whole(world_size), "global_batch_size": _whole(global_batch_size),
                  "seq_len": None if seq_len is None else _whole(seq_len), "tp": _int_list(tp), "pp": _int_list(pp), "vpp": _int_list(vpp),
                  "cp": _int_list(cp), "ep": _int_list(ep), "etp": _int_list(etp),
                  "cp_comm_type": [cp_comm_type] if isinstance(cp_comm_type, str) else cp_comm_type, "zero": _int_list(zero), "mbs": _int_list(mbs),
                  "moe_dispatcher": [dispatcher] if isinstance(dispatcher, str) else dispatcher,
                  "dp_replicate": _int_list(dp_replicate),
                  "recompute": [recompute] if isinstance(recompute, str) else recompute},
        "options": {"top_k": _whole(top), "threads": _whole(threads),
                    "memory_margin_gb": (float(memory_margin_gb) if isinstance(memory_margin_gb, numbers.Real)
                                         and not isinstance(memory_margin_gb, bool) else memory_margin_gb),
                    "use_reserved_memory": not allocated_memory, "keep_all": bool(keep_all),
                    "objective": objective, "accuracy": bool(accuracy or accuracy_runs),
                    "accuracy_runs": [os.fspath(r) for r in ([accuracy_runs] if isinstance(accuracy_runs, (str, os.PathLike))
                                                             else (accuracy_runs or []))]},
        "db": os.fspath(db or ""), "csv_path": os.fspath(csv or ""), "out_path": os.fspath(out or ""),
        "arg_names": names,
    }
    if objective not in ("mfu", "tokens"):
        raise ConfigError(f"<search>: objective: expected mfu or tokens, got '{objective}'")
    return SearchResult(json.loads(_core.search(_native.dumps(request))))


def search(model, system, world_size, global_batch_size, strategy=None, **options):
    """Finds the fastest parallel layouts that fit in memory (`calisim search`).

    model, system, strategy (the base for non-layout fields): names, paths, dicts or objects.
    options: seq_len, tp, pp, vpp, cp, ep, etp, mbs (lists; None = calisim's defaults), cp_comm_type
    (names p2p / a2a / allgather; None = the strategy's), dispatcher (MoE token dispatchers:
    alltoall / allgather / flex; None = the strategy's), dp_replicate (hybrid-sharding replica
    counts, strategy field dp_replicate_size; None = the strategy's), recompute
    (names: none, selective, attn, mlp, attn+mlp, full or SimuMax's), zero, memory_margin_gb,
    allocated_memory, top, threads, keep_all, csv, out, db, overrides, objective, accuracy /
    accuracy_runs (``result.accuracy``: the best layout beside the validated runs of its class, as
    `calisim search --accuracy`).
    The result is `calisim search --json`'s document: ``feasible`` is every feasible candidate with
    keep_all=True, else None; ``smallest`` is None unless nothing fits; ``warnings`` lists config
    fields accepted but not modeled. Sizes must be whole numbers >= 1 (zero 0..3), lists lose
    repeats, seq_len / top must be positive, memory_margin_gb finite, >= 0 and below the device
    memory: ConfigError naming the argument otherwise.
    The GIL is released while it runs. Raises NoFeasibleLayout when nothing fits.
    """
    result = run_search(ModelConfig.load(model), SystemConfig.load(system), world_size, global_batch_size,
                        StrategyConfig.load(strategy) if strategy is not None else None, **options)
    if result.explanation:
        err = NoFeasibleLayout(f"search: {result.explanation}")
        err.result = result
        raise err
    return result


def validate(runs, db=None, source=None, overrides=None, fit_system=None, fit=None, fit_out=None, report=None,
             dump_inputs=None, components=None, components_out=None, select_parts=False):
    """`calisim validate --json` (docs/validation.md): every row of the measured-runs CSV `runs`
    (a path, or a list of paths whose rows are taken together) mapped, simulated and scored. db: efficiency database; source: only rows whose source contains
    it; overrides: "section.key=value" strings applied to every mapped row; fit_system: a shipped
    system name or "all" to fit the defaults to the rows (fit: groups among "compute", "comm",
    "memory", "fp8", default ["compute"];
    fit_out: file or directory for the fitted system files); report: HTML report path;
    dump_inputs: directory for each row's mapped configs; components: True, or a list of parts among
    "compute", "attention", "model_parallel_comm", "data_parallel_comm", "bubble", "other", for the
    multipliers of the simulated step's parts that the rows want, per system, held out by source
    (`--components`; attention takes compute's multiplier unless listed); select_parts: per system,
    fit only the subset of those parts that cross-validation keeps (`--select-parts`);
    components_out: with components "compute" (or ["compute", "attention"]), a directory for each
    system's in-situ file (`--components-out`).
    The GIL is released while it runs. Returns a ValidationResult (to_dataframe("rows" | "fit" |
    "components"))."""
    runs_files = [os.fspath(runs)] if isinstance(runs, (str, os.PathLike)) else [os.fspath(r) for r in runs]
    request = {"runs": runs_files, "db": os.fspath(db or ""), "source": source or "",
               "overrides": list(overrides or []), "fit_system": fit_system or "",
               "fit": [fit] if isinstance(fit, str) else (list(fit) if fit is not None else None),
               "fit_out": os.fspath(fit_out or ""), "report": os.fspath(report or ""),
               "dump_inputs": os.fspath(dump_inputs or ""),
               "components": None if components in (None, False) else
               (True if components is True else [components] if isinstance(components, str) else list(components)),
               "components_out": os.fspath(components_out or ""), "select_parts": bool(select_parts)}
    return ValidationResult(json.loads(_core.validate(_native.dumps(request))))


def import_megatron(script, world_size=None, vocab_size=None, vars=None):
    """A Megatron-LM launch script (or a file of its flags) read as `calisim configs
    import-megatron --json` reads it (docs/configs.md, "Megatron-LM launch scripts"): a dict with
    "model" and "strategy" (config dicts that simulate() and search() take), "settings" (each
    field's value and origin), "not_modelled", "not_read" and "warnings". world_size: GPUs when
    the script's launcher lines do not give them; vocab_size: the tokenizer's vocabulary when the
    script cannot tell it; vars: {"NAME": value} for shell variables the script uses but does not
    set (or whose assignment to override). Raises ConfigError naming the line and the flag."""
    pairs = [f"{k}={v}" for k, v in (vars or {}).items()]
    return json.loads(_core.import_megatron(os.fspath(script), None if world_size is None else int(world_size),
                                            None if vocab_size is None else int(vocab_size), pairs))
