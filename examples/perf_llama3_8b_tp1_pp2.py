"""SimuMax's examples/perf_llama3_8b_tp1_pp2.py with `simumax` replaced by `calisim` in the
imports. SimuMax's get_simu_*_config() helpers are replaced by paths: SimuMax's own model and
strategy files (tests/data/simumax/) and calisim's A100 PCIe system file.

Run: PYTHONPATH=build/python python3 examples/perf_llama3_8b_tp1_pp2.py
"""
import os

from calisim.core.config import ModelConfig, StrategyConfig, SystemConfig
from calisim.core.perf_llm import PerfLLM

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def set_megatron_config(perf_model: PerfLLM):
    perf_model.model_config.padded_vocab_size = True
    perf_model.model_config.make_vocab_size_divisible_by = 128


def main():
    strategy_config_file = os.path.join(REPO, "tests/data/simumax/strategy/tp1_pp2_dp4_mbs1.json")
    model_config_file = os.path.join(REPO, "tests/data/simumax/models/llama3-8b.json")
    system_config_file = os.path.join(REPO, "configs/systems/a100-pcie-80g.json")

    perf_model = PerfLLM()
    perf_model.configure(
        strategy_config=StrategyConfig.init_from_config_file(strategy_config_file),
        model_config=ModelConfig.init_from_config_file(model_config_file),
        system_config=SystemConfig.init_from_config_file(system_config_file),
    )

    model_name = perf_model.model_config.model_name
    system_name = perf_model.system.sys_name
    set_megatron_config(perf_model)
    perf_model.run_estimate()
    perf_model.analysis(f'{model_name}_{system_name}')


if __name__ == "__main__":
    main()
