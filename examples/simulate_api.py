"""calisim.simulate with overrides, result fields, and an optional pandas table.

Run: PYTHONPATH=build/python python3 examples/simulate_api.py
"""
import calisim


def main():
    r = calisim.simulate(model="llama3-70b", strategy="llama3-70b-64gpu", system="h100-sxm")
    print(f"{r.model} on {r.layout.world_size} GPUs: {r.cost.duration_time_per_iter_s:.3f} s/step, "
          f"MFU {r.cost.mfu:.3f}, peak {max(s.memory.peak_mem_bytes for s in r.stages) / 1e9:.1f} GB")

    # Any field can be overridden without editing a file (as `calisim simulate --set`).
    r2 = calisim.simulate(model="llama3-70b", strategy="llama3-70b-64gpu", system="h100-sxm",
                          enable_recompute=True, recompute_granularity="full_block", recompute_layer_num=4,
                          **{"system.device.memory_gb": 141})
    print(f"with full recompute: {r2.cost.duration_time_per_iter_s:.3f} s/step, hfu {r2.cost.hfu:.3f}")

    try:
        print(r.to_dataframe("stages")[["stage", "layers", "memory.peak_mem_bytes"]])
    except ImportError as e:
        print(f"(no pandas: {e})")


if __name__ == "__main__":
    main()
