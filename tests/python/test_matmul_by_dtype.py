"""The system view exposes efficiency.matmul_by_dtype: the per-dtype GEMM efficiencies the
simulator uses (only the dtypes a file overrides; the rest use matmul_efficiency)."""
import calisim


def test_fp8_matmul_efficiency_is_exposed_per_format():
    h100 = calisim.SystemConfig.init_from_config_file("h100-sxm")
    assert h100.matmul_efficiency == 0.72
    assert h100.matmul_efficiency_by_dtype == {"fp8_e4m3": 0.638, "fp8_e5m2": 0.638}
    assert h100.efficiency.matmul_by_dtype.fp8 == 0.638  # the document as written
    a100 = calisim.SystemConfig.init_from_config_file("a100-sxm-80g")
    assert a100.matmul_efficiency_by_dtype == {}


def step_s(system, fp8):
    strategy = calisim.StrategyConfig.init_from_config_file("llama3-8b-8gpu")
    if fp8:
        strategy.fp8 = True
        strategy.fp8_recipe = "tensorwise"
    perf = calisim.PerfLLM()
    perf.configure(strategy_config=strategy, model_config="llama3-8b", system_config=system)
    return perf.run_estimate().cost.duration_time_per_iter_s


def test_fp8_matmul_efficiency_edit_changes_only_fp8_runs():
    base = calisim.SystemConfig.init_from_config_file("h100-sxm")
    slower = base.copy()
    slower.efficiency.matmul_by_dtype.fp8 = 0.5
    assert slower.matmul_efficiency_by_dtype["fp8_e4m3"] == 0.5
    assert step_s(slower, fp8=False) == step_s(base, fp8=False)
    assert step_s(slower, fp8=True) > step_s(base, fp8=True)
