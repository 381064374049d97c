"""The scripts in examples/ run as written (in a scratch directory)."""
import os

from conftest import REPO, run_python

EXAMPLES = os.path.join(REPO, "examples")


def test_simumax_script_with_only_the_import_changed(tmp_path):
    out = run_python(os.path.join(EXAMPLES, "perf_llama3_8b_tp1_pp2.py"), cwd=tmp_path)
    assert "mfu" in out
    (folder,) = os.listdir(tmp_path)
    assert {"mem_result.json", "compute_result.json", "calisim_result.json"} <= set(os.listdir(tmp_path / folder))


def test_selective_recompute_example(tmp_path):
    out = run_python(os.path.join(EXAMPLES, "perf_deepseekv2_selective_recompute.py"), cwd=tmp_path)
    assert "step time" in out and "first_stage" in out


def test_search_example(tmp_path):
    out = run_python(os.path.join(EXAMPLES, "search_llama3_8b.py"), str(tmp_path / "dump"), cwd=tmp_path)
    assert "SimuMax-style search: best" in out and "calisim.search" in out
    assert os.listdir(tmp_path / "dump")


def test_simulate_api_example(tmp_path):
    out = run_python(os.path.join(EXAMPLES, "simulate_api.py"), cwd=tmp_path)
    assert "with full recompute" in out


def test_simumax_import_paths():
    import calisim.core.config as config
    import calisim.core.perf_llm as perf_llm
    import calisim
    assert perf_llm.PerfLLM is calisim.PerfLLM and config.ModelConfig is calisim.ModelConfig
