"""calisim.Database.query equals `calisim db query --json`; calisim.predict answers from the file;
Database.predict_gpus writes what `calisim predict --from … --to …` writes."""
import os

import pytest

import calisim
from conftest import SIMUMAX, cli_json, run_cli

DEVICE = "NVIDIA A100 PCIe 80GB"
KEY = "gemm m=4096 n=4096 k=4096 batch=1 dtype=bf16 layout=TN acc=0"


@pytest.fixture(scope="module")
def db(tmp_path_factory):
    path = str(tmp_path_factory.mktemp("db") / "eff.db")
    run_cli("db", "import", path, "--simumax", os.path.join(SIMUMAX, "system", "a100_pcie.json"), "--device", DEVICE)
    return path


def test_query_equals_cli(db):
    d = calisim.Database(db)
    assert any(name.startswith(DEVICE) for name in d.devices())
    near = d.query(KEY, device=DEVICE, nearest=3)
    assert near == cli_json("db", "query", db, DEVICE, KEY, "--nearest", "3", "--json")
    assert len(near) == 3 and near[0]["distance"] <= near[-1]["distance"]
    exact = d.query(near[0]["key"])  # one device in the file: device may be left out
    assert exact == cli_json("db", "query", db, DEVICE, near[0]["key"], "--json")
    assert exact and exact[0]["key"] == near[0]["key"]


def test_predict(db):
    measured_key = calisim.Database(db).query(KEY, nearest=1)[0]["key"]
    p = calisim.predict(measured_key, db=db)
    assert p["source"] == "measured" and 0 < p["efficiency"] <= 1
    unmeasured = calisim.predict("gemm m=3000 n=5000 k=7000 batch=1 dtype=bf16 layout=TN acc=0", db=db)
    assert unmeasured["source"] in ("interpolated", "roofline") and 0 < unmeasured["efficiency"] <= 1
    with pytest.raises(ValueError):
        calisim.predict("gemm m=oops", db=db)
    with pytest.raises(calisim.ConfigError):
        calisim.Database(db).query(KEY, device="no such GPU")


def test_predict_gpus_equals_cli(db, tmp_path):
    out_py, out_cli = str(tmp_path / "py.db"), str(tmp_path / "cli.db")
    docs = calisim.Database(db).predict_gpus(["h100-sxm", "b200", "h100-sxm"], out=out_py)
    cli = cli_json("predict", "--from", DEVICE, "--to", "h100-sxm,b200", "--db", db, "--out", out_cli, "--json")
    assert [d["target"] for d in docs] == ["NVIDIA H100 SXM5 80GB", "NVIDIA B200"]
    strip = lambda d: {k: v for k, v in d.items() if k != "database"}
    assert [strip(d) for d in docs] == [strip(d) for d in cli]
    assert all(d["database"] == out_py and d["rows"] > 0 for d in docs)
    # The predicted GPUs are in the written file, and simulate prices from them.
    assert {n.split(" (")[0] for n in calisim.Database(out_py).devices()} == {"NVIDIA H100 SXM5 80GB", "NVIDIA B200"}
    r = calisim.simulate("llama3-8b", "llama3-8b-8gpu", "b200", db=out_py)
    assert r["efficiency_sources"]["kernels_per_source"]["scaled"] > 0
    # One target, sources named: a list of one document.
    one = calisim.Database(db).predict_gpus("a100-sxm-80g", sources=DEVICE, out=out_py)
    assert len(one) == 1 and one[0]["target"] == "NVIDIA A100 SXM4 80GB"
    with pytest.raises(calisim.ConfigError, match="--to: no shipped systems config named 'b2000'"):
        calisim.Database(db).predict_gpus(["b200", "b2000"], out=out_py)
    with pytest.raises(calisim.ConfigError, match="targets: an empty list"):
        calisim.Database(db).predict_gpus([], out=out_py)
