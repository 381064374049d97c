"""DeepSeek-V2 (MoE, MLA) cut to 4 layers, ep 4 pp 2 dp 4 on 8 A100 PCIe, with SimuMax's
selective recompute (attn / mla_rms / mlp / mlp_rms switches) — SimuMax's
examples/perf_deepseekv2_layer4_ep4_pp2_selective_recompute.py in calisim's API.

Run: PYTHONPATH=build/python python3 examples/perf_deepseekv2_selective_recompute.py
"""
import os

import calisim

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main():
    perf_model = calisim.PerfLLM()
    perf_model.configure(
        strategy_config=os.path.join(REPO, "tests/data/simumax/strategy/ep4_pp2_dp4_mbs1_selective_recompute.json"),
        model_config=os.path.join(REPO, "tests/data/simumax/models/deepseekv2.json"),
        system_config="a100-pcie-80g",
    )
    # As SimuMax's example: 4 layers, expert inputs padded to capacity 1.
    perf_model.model_config.layer_num = 4
    perf_model.model_config.moe_pad_expert_input_to_capacity = True
    perf_model.model_config.capacity = 1
    perf_model.run_estimate()

    cost = perf_model.analysis_cost()
    mem = perf_model.analysis_mem()
    print(f"recompute: {perf_model.result.layout.recompute}")
    print(f"step time {cost['duration_time_per_iter']:.4f} s, MFU {cost['mfu']:.3f}, "
          f"recompute {cost['breakdown_result']['recompute']:.4f} s")
    for stage in ("first_stage", "last_stage"):
        print(f"{stage}: peak {mem[stage]['peak_mem'] / 1e9:.2f} GB ({mem[stage]['peak_path']})")


if __name__ == "__main__":
    main()
