"""Strategy search two ways: SimuMax's PerfLLM.search_best_parallel_strategy_with_recompute and
calisim.search (the `calisim search` command as a function).

Run: PYTHONPATH=build/python python3 examples/search_llama3_8b.py [DUMP_DIR]
"""
import sys

import calisim


def main(dump_path=None):
    perf_model = calisim.PerfLLM()
    perf_model.configure(strategy_config="llama3-8b-8gpu", model_config="llama3-8b", system_config="a100-pcie-80g")
    all_search_result = {}
    best = perf_model.search_best_parallel_strategy_with_recompute(
        world_size=8,
        gmi_error=6,  # GiB per GPU left free
        micro_batch_size=1,
        global_batch_size=32,
        all_search_result=all_search_result,
        tp_search_list=[1, 2, 4],
        ep_search_list=[1],
        recompute_search_type=["no_recompute", "full_block", "selective_recompute"],
        use_reserved_memory=True,
        dump_path=dump_path,
    )
    print(f"SimuMax-style search: best tp {best['tp_size']} pp {best['pp_size']} dp {best['dp_size']} "
          f"recompute {best['recompute']}: {best['duration_time_per_iter']:.3f} s, MFU {best['mfu']:.3f} "
          f"({len(all_search_result['mfu'])} feasible layouts)")

    res = calisim.search("llama3-8b", "a100-pcie-80g", world_size=8, global_batch_size=32, seq_len=8192, top=3)
    print(f"calisim.search: {res.counts.candidates} candidates, {res.counts.feasible} feasible")
    for c in res.top:
        print(f"  tp{c.tp} pp{c.pp} vpp{c.vpp} mbs{c.micro_batch_size} {c.recompute}: "
              f"{c.step_time_s:.3f} s, MFU {c.mfu:.3f}, peak {c.max_peak_gb:.1f} GB")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else None)
