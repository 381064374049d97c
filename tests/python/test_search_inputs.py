"""calisim.search and PerfLLM's search check their arguments as the CLI checks its flags, name
the Python argument in the message, and give the CLI's document; list_configs takes both kind
spellings. A size of 0 used to kill the interpreter (SIGFPE), so each bad call runs in a child
process first: a crash fails the test instead of ending the run."""
import math
import subprocess
import sys

import pytest

import calisim
from conftest import cli_json, run_cli

SPACE = dict(world_size=8, global_batch_size=32, seq_len=4096, tp=[1, 2, 4], mbs=[1, 2], recompute=["none", "full"])
CLI_SPACE = ["--model", "llama3-8b", "--system", "a100-pcie-80g", "--world-size", "8", "--global-batch-size", "32",
             "--seq-len", "4096", "--tp", "1,2,4", "--mbs", "1,2", "--recompute", "none,full"]


def survives(code):
    """Runs `code` (calisim imported) in a child interpreter; its exit status (negative: a signal)."""
    return subprocess.run([sys.executable, "-c", "import calisim\nfrom math import inf, nan\n" + code], capture_output=True, timeout=300).returncode


def search_error(**changes):
    """The ConfigError message of calisim.search with SPACE changed by `changes`."""
    args = dict(SPACE, **changes)
    assert survives(f"try:\n calisim.search('llama3-8b', 'a100-pcie-80g', **{args!r})\nexcept ValueError:\n pass") == 0
    with pytest.raises(calisim.ConfigError) as e:
        calisim.search("llama3-8b", "a100-pcie-80g", **args)
    return str(e.value)


@pytest.mark.parametrize("arg", ["tp", "pp", "vpp", "cp", "ep", "etp", "mbs"])
@pytest.mark.parametrize("value", [[0], [-2], [2, 0]])
def test_sizes_below_one_name_the_argument(arg, value):
    msg = search_error(**{arg: value})
    assert msg.startswith(f"<search>: {arg}: expected whole numbers >= 1"), msg
    assert "max_size" not in msg


def test_fractions_bools_and_empty_lists_are_refused():
    assert "tp: expected whole numbers >= 1" in search_error(tp=[1.5])
    assert "mbs: expected whole numbers >= 1" in search_error(mbs=[True])
    assert "pp: an empty list searches nothing" in search_error(pp=[])
    assert "zero: expected whole numbers from 0 to 3" in search_error(zero=[4])


def test_scalar_arguments_name_themselves():
    msg = search_error(top=0)
    assert msg.startswith("<search>: top: expected a positive number"), msg
    assert "--top" not in msg
    msg = search_error(seq_len=-5)
    assert msg.startswith("<search>: seq_len: expected a positive number of tokens, got -5"), msg
    assert search_error(threads=-1).startswith("<search>: threads:")
    assert search_error(world_size=0).startswith("<search>: world_size:")
    assert search_error(global_batch_size=-32).startswith("<search>: global_batch_size:")


@pytest.mark.parametrize("margin", [-1.0, math.nan, math.inf, 85.9, 1000])
def test_memory_margin_must_be_finite_non_negative_and_below_the_device(margin):
    msg = search_error(memory_margin_gb=margin)
    assert msg.startswith("<search>: memory_margin_gb:"), msg


def test_lists_lose_repeats_as_on_the_command_line():
    once = calisim.search("llama3-8b", "a100-pcie-80g", **dict(SPACE, tp=[2, 4], mbs=[1], recompute=["full"]))
    twice = calisim.search("llama3-8b", "a100-pcie-80g",
                           **dict(SPACE, tp=[2, 4, 2, 4], mbs=[1, 1], recompute=["full", "full"]))
    assert twice.counts.to_dict() == once.counts.to_dict()
    assert twice.to_dict()["top"] == once.to_dict()["top"]


def test_perf_llm_search_names_simumax_arguments():
    perf = calisim.PerfLLM()
    perf.configure(strategy_config="llama3-8b-8gpu", model_config="llama3-8b", system_config="a100-pcie-80g")
    base = dict(world_size=8, gmi_error=0, micro_batch_size=1, global_batch_size=32, tp_search_list=[1, 2])
    code = ("perf = calisim.PerfLLM()\nperf.configure(strategy_config='llama3-8b-8gpu', model_config='llama3-8b', "
            "system_config='a100-pcie-80g')\ntry:\n perf.search_best_parallel_strategy_with_recompute(**{!r})\n"
            "except ValueError:\n pass")
    for change, name in [(dict(tp_search_list=[0]), "tp_search_list"), (dict(micro_batch_size=0), "micro_batch_size"),
                         (dict(pp_search_list=[-1]), "pp_search_list"), (dict(vpp_search_list=[0]), "vpp_search_list"),
                         (dict(gmi_error=-1), "gmi_error"), (dict(gmi_error=math.nan), "gmi_error"),
                         (dict(gmi_error=1000), "gmi_error")]:
        args = dict(base, **change)
        if not any(isinstance(v, float) and not math.isfinite(v) for v in args.values()):
            assert survives(code.format(args)) == 0, change
        with pytest.raises(calisim.ConfigError) as e:
            perf.search_best_parallel_strategy_with_recompute(**args)
        assert f": {name}:" in str(e.value), (change, str(e.value))


def without_timing(doc):
    return {k: v for k, v in doc.items() if k not in ("elapsed_s", "candidates_per_s")}


def test_search_document_equals_cli_json_including_nulls():
    py = calisim.search("llama3-8b", "a100-pcie-80g", top=5, **SPACE).to_dict()
    cli = cli_json("search", *CLI_SPACE, "--top", "5", "--json")
    assert without_timing(py) == without_timing(cli)
    assert py["feasible"] is None and py["smallest"] is None and py["warnings"] == []
    assert py["top"][0]["tp_2d_rows"] == 0 and py["top"][0]["cp_2d_cols"] == 0
    # keep_all fills feasible; everything else stays the CLI's.
    kept = calisim.search("llama3-8b", "a100-pcie-80g", top=5, keep_all=True, **SPACE).to_dict()
    assert len(kept["feasible"]) == kept["counts"]["feasible"] > 0
    assert without_timing(dict(kept, feasible=None, counts=None)) == without_timing(dict(cli, counts=None))
    # Nothing fits: both name the smallest layout.
    small = dict(world_size=8, global_batch_size=8, seq_len=8192, tp=[1], pp=[1])
    with pytest.raises(calisim.NoFeasibleLayout) as e:
        calisim.search("llama3-70b", "a100-pcie-80g", **small)
    out, _ = run_cli("search", "--model", "llama3-70b", "--system", "a100-pcie-80g", "--world-size", "8",
                     "--global-batch-size", "8", "--seq-len", "8192", "--tp", "1", "--pp", "1", "--json", expect_rc=2)
    import json
    cli_none = json.loads(out)
    assert e.value.result.to_dict()["smallest"] == cli_none["smallest"] is not None
    assert without_timing(e.value.result.to_dict()) == without_timing(cli_none)


def test_not_modeled_override_is_a_warning_as_in_the_cli():
    py = calisim.search("llama3-8b", "a100-pcie-80g", top=2, overrides=['strategy.tp_net="x"'], **SPACE)
    cli = cli_json("search", *CLI_SPACE, "--top", "2", "--json", "--set", 'strategy.tp_net="x"')
    assert py.warnings == cli["warnings"]
    assert any("tp_net" in w and "not modeled" in w for w in py.warnings)


def test_list_configs_takes_singular_and_plural_kinds():
    assert calisim.list_configs("models") == calisim.list_configs("model")
    assert "h100-sxm" in calisim.list_configs("systems")
    assert calisim.list_configs("strategies") == calisim.list_configs("strategy")
    assert calisim.resolve_config("models", "llama3-8b") == calisim.resolve_config("model", "llama3-8b")
    with pytest.raises(ValueError, match="model.*strategy.*system.*'bogus'"):
        calisim.list_configs("bogus")
    with pytest.raises(ValueError, match="'bogus'"):
        calisim.resolve_config("bogus", "llama3-8b")
