"""calisim.simulate and PerfLLM give the CLI's numbers for the same inputs."""
import json
import os

import pytest

import calisim
from conftest import REPO, SIMUMAX, cli_json, run_cli

SHIPPED = ("llama3-8b", "llama3-8b-8gpu", "a100-pcie-80g")


def cli_simulate(model, strategy, system, *sets):
    args = ["simulate", "--model", model, "--strategy", strategy, "--system", system, "--json"]
    for s in sets:
        args += ["--set", s]
    return cli_json(*args)


def test_simulate_equals_cli_json():
    py = calisim.simulate(*SHIPPED)
    assert py.to_dict() == cli_simulate(*SHIPPED)
    assert py.cost.mfu > 0 and py.layout.tp == 1


def test_overrides_equal_cli_set():
    py = calisim.simulate(*SHIPPED, tp_size=2, **{"system.device.memory_gb": 40})
    cli = cli_simulate(*SHIPPED, "strategy.tp_size=2", "system.device.memory_gb=40")
    assert py.to_dict() == cli
    assert py.layout.tp == 2 and py.memory.device_memory_bytes == 40e9
    assert py.to_dict() != calisim.simulate(*SHIPPED).to_dict()


def test_simumax_files_equal_cli():
    model = os.path.join(SIMUMAX, "models", "llama3-8b.json")
    strategy = os.path.join(SIMUMAX, "strategy", "tp1_pp2_dp4_mbs1.json")
    perf = calisim.PerfLLM()
    perf.configure(strategy_config=strategy, model_config=model, system_config="a100-pcie-80g")
    perf.run_estimate()
    cli = cli_simulate(model, strategy, "a100-pcie-80g")
    assert perf.result.to_dict() == cli
    cost, mem = perf.analysis_cost(), perf.analysis_mem()
    assert cost["duration_time_per_iter"] == cli["cost"]["duration_time_per_iter_s"]
    assert cost["mfu"] == cli["cost"]["mfu"]
    assert set(mem.data) == {"first_stage", "last_stage"}
    first = cli["stages"][0]["memory"]
    assert mem["first_stage"]["peak_mem"] == first["peak_mem_bytes"]
    assert mem["first_stage"]["model_mem"] == first["model_mem_bytes"]
    assert mem["last_stage"]["peak_mem_with_reserved"] == cli["stages"][-1]["memory"]["peak_mem_with_reserved_bytes"]


def test_config_objects_and_edits():
    model = calisim.ModelConfig.init_from_config_file("llama3-8b")
    assert model.layer_num == 32 and model.make_vocab_size_divisible_by == 128  # default filled in
    strategy = calisim.StrategyConfig.init_from_config_file("llama3-8b-8gpu")
    system = calisim.SystemConfig.init_from_config_file("a100-pcie-80g")
    assert system.sys_name == system.name and system.device.memory_gb == 85.89
    # Defaults the file does not set are readable: rank order, 1D grids, NCCL choices, topology.
    assert strategy.order == "tp-cp-ep-dp-pp" and strategy.tensor_parallel_mode == "1d"
    assert strategy.context_parallel_mode == "1d" and "ring" in strategy.nccl_algo
    assert system.topology["scale_up_kind"] == "pcie" and system.topology["nvls"] is False
    assert system.topology["pcie_switch_gpus"] == 4
    perf = calisim.PerfLLM()
    perf.configure(strategy_config=strategy, model_config=model, system_config=system)
    assert perf.strategy.dp_size * perf.strategy.tp_size * perf.strategy.pp_size == perf.strategy.world_size
    base = perf.run_estimate().cost.duration_time_per_iter_s
    perf.model_config.layer_num = 16
    perf.strategy.recompute_layer_num = 16
    after = perf.run_estimate()
    assert after.cost.duration_time_per_iter_s < base
    assert after.to_dict() == cli_simulate(*SHIPPED, "model.layer_num=16", "strategy.recompute_layer_num=16")


def test_trace_equals_cli_trace(tmp_path):
    perf = calisim.PerfLLM()
    perf.configure(strategy_config="llama3-8b-uneven-pp4", model_config="llama3-8b", system_config="h100-sxm")
    path = perf.simulate(str(tmp_path / "out"))
    assert path.endswith("trace.json")
    cli_trace = tmp_path / "cli.json"
    run_cli("simulate", "--model", "llama3-8b", "--strategy", "llama3-8b-uneven-pp4", "--system", "h100-sxm",
            "--trace", str(cli_trace), "--json")
    with open(path) as a, open(cli_trace) as b:
        assert json.load(a) == json.load(b)
    mem = perf.analysis_mem()
    assert set(mem.data) == {"first_stage", "middle_stage", "last_stage"}


def test_result_to_dict_and_dataframe():
    r = calisim.simulate(*SHIPPED)
    d = r.to_dict()
    d["cost"]["mfu"] = -1
    assert r.cost.mfu > 0  # to_dict is a copy
    with pytest.raises(AttributeError):
        r.cost.mfu = 1
    try:
        import pandas  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="pandas"):
            r.to_dataframe()
        return
    assert r.to_dataframe()["cost.mfu"][0] == r.cost.mfu
    assert len(r.to_dataframe("stages")) == len(r.stages)


def test_memory_convention_fields_equal_cli():
    # FP8 parameters, bf16 first/last layers and the precision-aware optimizer's dtypes, set from
    # Python as from the CLI; their defaults are readable on the parsed config object.
    fields = {"fp8": True, "fp8_recipe": "tensorwise", "fp8_param_gather": True, "first_last_layers_bf16": True,
              "use_precision_aware_optimizer": True, "exp_avg_dtype": "bf16", "exp_avg_sq_dtype": "bf16"}
    shipped = ("llama3-8b", "llama3-8b-8gpu", "h100-sxm")
    py = calisim.simulate(*shipped, **{"strategy." + k: v for k, v in fields.items()})
    cli = cli_simulate(*shipped, *[f"strategy.{k}={json.dumps(v) if isinstance(v, bool) else v}"
                                   for k, v in fields.items()])
    assert py.to_dict() == cli
    assert py.to_dict() != calisim.simulate(*shipped).to_dict()
    strategy = calisim.StrategyConfig.init_from_config_file("llama3-8b-8gpu")
    assert strategy.fp8_param_gather is False and strategy.use_precision_aware_optimizer is False
    assert strategy.fp8_implementation == "transformer_engine"


def test_accuracy_equals_cli():
    flagship = ("llama3-70b", "llama3-70b-64gpu", "h100-sxm")
    py = calisim.simulate(*flagship, accuracy=True)
    cli = cli_json("simulate", "--model", flagship[0], "--strategy", flagship[1], "--system", flagship[2],
                   "--json", "--accuracy")
    assert py.to_dict() == cli
    assert py.accuracy["available"] and py.accuracy["query"]["model_class"] == "dense"
    assert py.accuracy["expected_step_s"] == pytest.approx(
        py.cost.duration_time_per_iter_s / (1 + py.accuracy["median_error"]))
    assert "accuracy" not in calisim.simulate(*flagship).to_dict()
    with pytest.raises(calisim.ConfigError, match="nope.csv"):
        calisim.simulate(*flagship, accuracy_runs="/nope.csv")
