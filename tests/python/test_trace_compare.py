"""calisim.import_kineto / import_nsys and simulate(compare_trace=...) give `calisim db import
--kineto / --nsys` and `calisim simulate --compare-trace`'s results (fixture:
tests/data/kineto/two_steps.json; an Nsight Systems SQLite export built here)."""
import gzip
import os
import sqlite3

import pytest

import calisim
from conftest import REPO, cli_json, run_cli

TRACE = os.path.join(REPO, "tests", "data", "kineto", "two_steps.json")
CONFIG = ("llama3-8b", "tp2_pp2_dp2_mbs1", "h100-sxm")


def test_trace_with_shapes_gives_the_clis_efficiency_rows(tmp_path):
    trace = os.path.join(REPO, "tests", "data", "kineto", "record_shapes.json")
    py = calisim.import_kineto(trace, tmp_path / "py.db")["kernel_rows"]
    cli = cli_json("db", "import", str(tmp_path / "cli.db"), "--kineto", trace, "--json")["kernel_rows"]
    assert py == cli
    (dev,) = py["devices"]
    assert dev["device"] == "NVIDIA H100 SXM5 80GB" and dev["gemm_rows"] == 4 and dev["attention_rows"] == 2
    assert dev["collective_rows"] == 1
    tn = next(k for k in dev["keys"] if k["key"] == "gemm m=4096 n=4096 k=4096 batch=1 dtype=bf16 layout=TN acc=0")
    assert tn["calls"] == 4 and tn["used"] == 2
    assert tn["efficiency"] == pytest.approx(2 * 4096**3 / 200e-6 / 989e12)
    # The shapes beside the simulation's time for them, as `simulate --compare-trace`.
    sim = calisim.simulate("llama3-8b", "tp1_pp1_dp8_mbs1", "h100-sxm", seq_len=4096,
                           compare_trace=tmp_path / "py.db")
    want = cli_json("simulate", "--model", "llama3-8b", "--strategy", "tp1_pp1_dp8_mbs1", "--system", "h100-sxm",
                    "--set", "strategy.seq_len=4096", "--json", "--compare-trace", str(tmp_path / "cli.db"))
    assert sim.to_dict()["trace_comparison"]["shapes"] == want["trace_comparison"]["shapes"]
    assert len(want["trace_comparison"]["shapes"]["keys"]) == 7
    # kernel_rows=False: the trace only, as --no-kernel-rows.
    bare = calisim.import_kineto(trace, tmp_path / "bare.db", kernel_rows=False)["kernel_rows"]
    assert bare["stored"] is False and bare["devices"][0]["run"] is None


def test_import_and_comparison_equal_the_cli(tmp_path):
    py_db, cli_db = tmp_path / "py.db", tmp_path / "cli.db"
    imported = calisim.import_kineto(TRACE, py_db)
    assert imported["kernels"] == 13 and imported["copies"] == 4
    assert imported["steps"] == ["ProfilerStep#2", "ProfilerStep#3"]
    assert imported["rank"] == 3 and imported["world_size"] == 8
    assert imported["runs"] == [{"device_ordinal": 0, "device": "NVIDIA H100 80GB HBM3", "run": 1}]
    assert cli_json("db", "import", str(cli_db), "--kineto", TRACE, "--json")["runs"] == imported["runs"]
    with pytest.raises(calisim.ConfigError, match="already imported"):
        calisim.import_kineto(TRACE, py_db)

    r = calisim.simulate(*CONFIG, compare_trace=py_db)
    cli = cli_json("simulate", "--model", CONFIG[0], "--strategy", CONFIG[1], "--system", CONFIG[2], "--json",
                   "--compare-trace", str(cli_db))
    py = r.to_dict()["trace_comparison"]
    want = cli["trace_comparison"]
    assert py["rows"] == want["rows"] and py["top_kernels"] == want["top_kernels"]
    assert py["stage"] == want["stage"] == 0
    assert py["stage_from"] == want["stage_from"] == "the trace's rank 3 of 8, order tp-cp-ep-dp-pp"
    gemm = next(row for row in py["rows"] if row["quantity"] == "GEMM kernels")
    assert gemm["traced_s"] == pytest.approx(370e-6)
    # The traced rank given: rank 6 runs stage 1 of tp 2 · pp 2 · dp 2.
    assert calisim.simulate(*CONFIG, compare_trace=py_db, trace_rank=6).trace_comparison.stage == 1
    # Every trace run at once, as `--trace-run all`.
    every = calisim.simulate(*CONFIG, compare_trace=py_db, trace_run="all").to_dict()["trace_comparison"]
    cli_every = cli_json("simulate", "--model", CONFIG[0], "--strategy", CONFIG[1], "--system", CONFIG[2], "--json",
                         "--compare-trace", str(cli_db), "--trace-run", "all")["trace_comparison"]
    assert len(every["runs"]) == 1 and every["runs"][0]["rows"] == cli_every["runs"][0]["rows"]
    with pytest.raises(calisim.ConfigError, match='trace_run: expected a whole number >= 1 or "all"'):
        calisim.simulate(*CONFIG, compare_trace=py_db, trace_run="latest")
    # A system file calibrated to the trace, as `--trace-fit-out`.
    fitted = calisim.simulate(*CONFIG, compare_trace=py_db, trace_fit_out=tmp_path / "fit.json")
    assert fitted.trace_fit["file"] == str(tmp_path / "fit.json")
    cli_fit = cli_json("simulate", "--model", CONFIG[0], "--strategy", CONFIG[1], "--system", CONFIG[2], "--json",
                       "--compare-trace", str(cli_db), "--trace-fit-out", str(tmp_path / "cli_fit.json"))["trace_fit"]
    assert fitted.trace_fit["matmul"] == pytest.approx(cli_fit["matmul"])
    assert calisim.simulate(CONFIG[0], CONFIG[1], tmp_path / "fit.json").cost.duration_time_per_iter_s > 0
    with pytest.raises(calisim.ConfigError, match="trace_fit_out: needs compare_trace"):
        calisim.simulate(*CONFIG, trace_fit_out=tmp_path / "x.json")
    # The comparison needs the per-op table, so it is there even with details=False.
    assert calisim.simulate(*CONFIG, details=False, compare_trace=py_db).trace_comparison.rows


def test_gzip_trace_directory_equals_the_cli(tmp_path):
    """A directory with a gzip-compressed trace (tensorboard_trace_handler(use_gzip=True)) imports
    as the CLI's does; a second import skips it."""
    traces = tmp_path / "traces"
    traces.mkdir()
    with open(TRACE, "rb") as src, gzip.open(traces / "host.1.pt.trace.json.gz", "wb") as dst:
        dst.write(src.read())
    doc = calisim.import_kineto(traces, tmp_path / "py.db")
    cli = cli_json("db", "import", str(tmp_path / "cli.db"), "--kineto", str(traces), "--json")
    # Equal but for the warnings, which name each database ("… had no device …: added it").
    for d in (doc, cli):
        for i in d["imports"]:
            i.pop("warnings")
    assert doc == cli
    assert [i["kernels"] for i in doc["imports"]] == [13] and doc["skipped"] == []
    again = calisim.import_kineto(traces, tmp_path / "py.db")
    assert again["imports"] == [] and again["skipped"][0]["already_imported_as_run"] == 1


def test_bad_trace_arguments_are_refused(tmp_path):
    db = tmp_path / "t.db"
    calisim.import_kineto(TRACE, db)
    with pytest.raises(calisim.ConfigError, match="trace_run: needs compare_trace"):
        calisim.simulate(*CONFIG, trace_run=1)
    with pytest.raises(calisim.ConfigError, match="not both"):
        calisim.simulate(*CONFIG, compare_trace=db, trace_stage=0, trace_rank=1)
    with pytest.raises(calisim.ConfigError, match="trace_steps: expected a whole number >= 1"):
        calisim.simulate(*CONFIG, compare_trace=db, trace_steps=0)
    with pytest.raises(calisim.ConfigError, match="run 7 holds no trace records"):
        calisim.simulate(*CONFIG, compare_trace=db, trace_run=7)
    with pytest.raises(calisim.ConfigError, match="cannot open the file"):
        calisim.import_kineto(tmp_path / "missing.json", tmp_path / "other.db")
    run_cli("db", "init", str(tmp_path / "empty.db"))
    with pytest.raises(calisim.ConfigError, match="holds no trace run"):
        calisim.simulate(*CONFIG, compare_trace=tmp_path / "empty.db")


def test_nsys_report_import_equals_the_cli(tmp_path):
    report = tmp_path / "report.sqlite"
    con = sqlite3.connect(report)
    con.executescript("""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO StringIds VALUES (1, 'nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT');
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
                                                 demangledName INTEGER);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 300000, 0, 7, 1), (400000, 500000, 0, 7, 1);
    """)
    con.commit()
    con.close()
    with pytest.raises(calisim.ConfigError, match="--device"):
        calisim.import_nsys(report, tmp_path / "a.db")
    py = calisim.import_nsys(report, tmp_path / "py.db", device="NVIDIA H100 80GB HBM3")
    cli = cli_json("db", "import", str(tmp_path / "cli.db"), "--nsys", str(report), "--device",
                   "NVIDIA H100 80GB HBM3", "--json")
    assert py["kernels"] == cli["kernels"] == 2 and py["runs"] == cli["runs"]
    r = calisim.simulate(*CONFIG, compare_trace=tmp_path / "py.db", trace_steps=2)
    assert r.trace_comparison.steps_text == "whole trace as 2 steps"


def test_nsys_nvtx_steps_equal_the_cli(tmp_path):
    """import_nsys(nvtx_steps=...) takes the program's NVTX step ranges as `--nvtx-steps` does."""
    report = tmp_path / "steps.sqlite"
    pid = 7 * 16777216  # nsys serialises pid 7 as 7 * 2^24
    con = sqlite3.connect(report)
    con.executescript(f"""
        CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT NOT NULL);
        INSERT INTO StringIds VALUES (1, 'nvjet_hsh_256x128_64x4_2x1_v_bz_coopA_TNT');
        CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INTEGER, end INTEGER, deviceId INTEGER, streamId INTEGER,
                                                 correlationId INTEGER, globalPid INTEGER, demangledName INTEGER);
        INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1000, 201000, 0, 7, 1, {pid}, 1), (301000, 401000, 0, 7, 2, {pid}, 1);
        CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INTEGER, globalTid INTEGER, correlationId INTEGER);
        INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (500, {pid + 7}, 1), (300500, {pid + 9}, 2);
        CREATE TABLE NVTX_EVENTS (start INTEGER, end INTEGER, eventType INTEGER, text TEXT, globalTid INTEGER);
        INSERT INTO NVTX_EVENTS VALUES (0, 300000, 59, 'train_step', {pid + 7}), (300000, 600000, 59, 'train_step', {pid + 7});
    """)
    con.commit()
    con.close()
    py = calisim.import_nsys(report, tmp_path / "py.db", device="NVIDIA H100 80GB HBM3", nvtx_steps="train_step")
    cli = cli_json("db", "import", str(tmp_path / "cli.db"), "--nsys", str(report), "--device",
                   "NVIDIA H100 80GB HBM3", "--nvtx-steps", "train_step", "--json")
    assert py["steps"] == cli["steps"] == ["train_step", "train_step"]
    assert py["outside_steps"] == 0
    r = calisim.simulate(*CONFIG, compare_trace=tmp_path / "py.db")
    assert r.trace_comparison.steps_text == "ProfilerStep#1 .. ProfilerStep#2 (2 steps)"
    with pytest.raises(calisim.ConfigError, match="no NVTX range whose text starts with 'iteration'"):
        calisim.import_nsys(report, tmp_path / "other.db", device="NVIDIA H100 80GB HBM3", nvtx_steps="iteration")
