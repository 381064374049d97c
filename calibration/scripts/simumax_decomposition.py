#!/usr/bin/env python3
"""Split the SimuMax A100-PCIe rows into a fixed part and a per-micro-batch slope.

Every (model, layout) of calibration/data/simumax_a100_pcie.csv is measured with 4, 8 and 32
micro-batches, so step = fixed + micro_batches x per_micro_batch. The fit on the 4 and 32
micro-batch rows separates the per-micro-batch work (compute, TP/EP communication) from the fixed
work (DP communication, optimizer) for the measurement, SimuMax's published step and calisim.
With --project it also prints the step error calisim would have if its exposed DP time on the
dense tp 2 / tp 4 rows were priced as SimuMax prices it (dp_fixed_bw of the 8x PCIe network,
bucketed reduce-scatter of fp32 gradients and all-gather of bf16 parameters): a projection by
substitution, not a calisim result (docs/validation.md).

Usage (from the repository root, after `calisim validate ... --dump-inputs DIR`):
  calibration/scripts/simumax_decomposition.py CALISIM DIR [--db FILE] [--project]
"""
import argparse
import csv
import json
import subprocess

CSV = "calibration/data/simumax_a100_pcie.csv"
DP_FIXED_GIB_S = {"all_gather": {2: 4.0, 4: 7.65}, "reduce_scatter": {2: 3.9, 4: 7.0}}  # a100_pcie.json


def simulate(calisim, inputs, run_id, db):
    cmd = [calisim, "simulate", "--json", "--no-ops"]
    for kind in ("model", "strategy", "system"):
        cmd += [f"--{kind}", f"{inputs}/{run_id}.{kind}.json"]
    if db:
        cmd += ["--db", db]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def simumax_dp_s(total_params, tp, dp):
    params = total_params / tp
    bucket = max(4e7, 1e6 * dp) * 4

    def one(op, size):
        buckets = int((size - 1) // bucket) + 1
        return buckets * bucket * (dp - 1) / dp / (DP_FIXED_GIB_S[op][dp] * 2**30)

    return one("reduce_scatter", params * 4) + one("all_gather", params * 2)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("calisim")
    ap.add_argument("inputs")
    ap.add_argument("--db", default="")
    ap.add_argument("--project", action="store_true")
    a = ap.parse_args()
    rows = list(csv.DictReader(open(CSV)))
    groups, errors, projected = {}, [], []
    for i, r in enumerate(rows):
        rid = f"S{i + 1:02d}"
        d = simulate(a.calisim, a.inputs, rid, a.db)
        flops = float(r["simumax_tflops_per_gpu"]) * float(r["simumax_step_time_s"])
        measured = flops / float(r["measured_tflops_per_gpu"])
        sim = d["cost"]["duration_time_per_iter_s"]
        errors.append(sim / measured - 1)
        tp, dp = int(r["tp"]), int(r["dp"])
        if tp in (2, 4) and dp in (2, 4):
            sim_p = sim - d["breakdown"]["dp_comm_exposed_s"] + simumax_dp_s(d["model_stats"]["total_params"], tp, dp)
        else:
            sim_p = sim
        projected.append(sim_p / measured - 1)
        key = "/".join((r["model"], "tp" + r["tp"], "pp" + r["pp"], "ep" + r["ep"]))
        groups.setdefault(key, []).append((int(r["micro_batch_num"]), measured, float(r["simumax_step_time_s"]), sim))
    print(f"{'group':26} {'measured fixed s, per-mb ms':>28} {'SimuMax':>18} {'calisim':>18}")
    for key, v in groups.items():
        v.sort()
        (m0, *x0), (m1, *x1) = v[0], v[-1]
        cells = []
        for a0, a1 in zip(x0, x1):
            per = (a1 - a0) / (m1 - m0)
            cells.append(f"{a0 - m0 * per:8.3f} {per * 1e3:8.1f}")
        print(f"{key:26} {cells[0]:>28} {cells[1]:>18} {cells[2]:>18}")
    mape = lambda e: 100 * sum(abs(x) for x in e) / len(e)
    print(f"step MAPE {mape(errors):.1f}%")
    if a.project:
        print(f"projected step MAPE with SimuMax's dp_fixed_bw DP pricing on the tp2/tp4 rows: {mape(projected):.1f}%")


if __name__ == "__main__":
    main()
