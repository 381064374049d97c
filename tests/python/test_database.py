"""calisim.Database.query equals `calisim db query --json`; calisim.predict answers from the file."""
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
