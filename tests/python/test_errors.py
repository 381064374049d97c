"""Bad input raises calisim.ConfigError (a ValueError) with the CLI's message."""
import json

import pytest

import calisim
from conftest import run_cli


def cli_error(*args):
    _, err = run_cli(*args, expect_rc=2)
    return err.strip().removeprefix("error: ")


def test_bad_field_names_file_path_and_expected(tmp_path):
    doc = calisim.StrategyConfig.read_json_file(calisim.resolve_config("strategy", "llama3-8b-8gpu"))
    doc["tp_size"] = "two"
    bad = tmp_path / "bad_strategy.json"
    bad.write_text(json.dumps(doc))
    with pytest.raises(calisim.ConfigError) as e:
        calisim.simulate("llama3-8b", str(bad), "a100-pcie-80g")
    assert isinstance(e.value, ValueError)
    assert e.value.file == str(bad) and e.value.where == "tp_size"
    assert "expected" in e.value.problem
    msg = cli_error("simulate", "--model", "llama3-8b", "--strategy", str(bad), "--system", "a100-pcie-80g")
    assert msg.endswith(str(e.value)), (msg, str(e.value))


def test_unknown_field_and_layout_errors():
    with pytest.raises(calisim.ConfigError, match="unknown field"):
        calisim.simulate("llama3-8b", "llama3-8b-8gpu", "a100-pcie-80g", **{"strategy.no_such_field": 1})
    perf = calisim.PerfLLM()
    with pytest.raises(calisim.ConfigError, match="tp_size"):
        model = calisim.ModelConfig.init_from_config_file("llama3-8b")
        strategy = calisim.StrategyConfig.init_from_config_file("llama3-8b-8gpu")
        strategy.tp_size = 3  # 32 heads do not split over 3
        perf.configure(strategy_config=strategy, model_config=model, system_config="a100-pcie-80g")


def test_unknown_name_bad_json_and_ambiguous_override(tmp_path):
    with pytest.raises(calisim.ConfigError, match="no shipped models config named 'nope'"):
        calisim.ModelConfig.init_from_config_file("nope")
    broken = tmp_path / "broken.json"
    broken.write_text('{"hidden_size": 4096,,}')
    with pytest.raises(calisim.ConfigError, match="line 1"):
        calisim.ModelConfig.init_from_config_file(str(broken))
    with pytest.raises(calisim.ConfigError, match="no config has a field 'warp_speed'"):
        calisim.simulate("llama3-8b", "llama3-8b-8gpu", "a100-pcie-80g", warp_speed=9)
    with pytest.raises(AttributeError, match="no field 'hidden_sizes'"):
        calisim.ModelConfig.init_from_config_file("llama3-8b").hidden_sizes


def test_misuse_of_perf_llm():
    perf = calisim.PerfLLM()
    with pytest.raises(RuntimeError, match="configure"):
        perf.run_estimate()
    perf.configure(strategy_config="llama3-8b-8gpu", model_config="llama3-8b", system_config="a100-pcie-80g")
    with pytest.raises(RuntimeError, match="run_estimate"):
        perf.analysis_cost()
