"""calisim.validate gives the CLI's `validate --json`, with the fit and a DataFrame view."""
import os

import pytest

import calisim
from conftest import REPO, cli_json

FIXTURE = os.path.join(REPO, "tests", "data", "validation", "three_runs.csv")


def test_validate_equals_cli_json():
    py = calisim.validate(FIXTURE)
    cli = cli_json("validate", "--runs", FIXTURE, "--json")
    assert py.to_dict() == cli
    assert isinstance(py, calisim.ValidationResult)
    assert py.summary.all.count == 2
    assert [r.run_id for r in py.rows] == ["R0021", "R0145", "R0287"]


def test_validate_with_fit_and_overrides(tmp_path):
    out = tmp_path / "fits"
    py = calisim.validate(FIXTURE, fit_system="all", fit="compute", fit_out=out,
                          overrides=["system.efficiency.matmul=0.7"])
    cli = cli_json("validate", "--runs", FIXTURE, "--json", "--fit-system", "all", "--fit", "compute",
                   "--fit-out", str(tmp_path / "fits_cli"), "--set", "system.efficiency.matmul=0.7")
    assert py.fit.rows == cli["fit"]["rows"] == 2
    assert py.fit.step_time.held_out.mape == cli["fit"]["step_time"]["held_out"]["mape"]
    assert sorted(os.listdir(out)) == ["a100-sxm-80g-fit.json", "h100-sxm-fit.json"]


def test_validate_bad_input_raises_config_error():
    with pytest.raises(calisim.ConfigError, match="--fit-system"):
        calisim.validate(FIXTURE, fit_system="mi300x")
    with pytest.raises(calisim.ConfigError):
        calisim.validate(os.path.join(REPO, "no", "such.csv"))


def test_validate_dataframes():
    pd = pytest.importorskip("pandas")
    r = calisim.validate(FIXTURE, fit_system="h100-sxm")
    rows = r.to_dataframe()
    assert len(rows) == 3 and "run_id" in rows.columns
    fit = r.to_dataframe("fit")
    assert list(fit["system"]) == ["h100-sxm"] and isinstance(fit, pd.DataFrame)


def test_validate_several_runs_files():
    b200 = os.path.join(REPO, "calibration", "data", "nemo_long_sequence_b200.csv")
    py = calisim.validate([FIXTURE, b200])
    cli = cli_json("validate", "--runs", FIXTURE, "--runs", b200, "--json")
    assert py.to_dict() == cli
    assert len(py.rows) == 11 and py.rows[-1].run_id == "A0008"
    with pytest.raises(calisim.ConfigError, match="already a row"):
        calisim.validate([FIXTURE, FIXTURE])


def test_validate_components_equal_the_cli(tmp_path):
    korthikanti = os.path.join(REPO, "calibration", "data", "measured_runs.csv")
    py = calisim.validate(korthikanti, source="Korthikanti", components=True)
    cli = cli_json("validate", "--runs", korthikanti, "--source", "Korthikanti", "--json", "--components")
    assert py.to_dict()["components"] == cli["components"]
    only = calisim.validate(korthikanti, source="Korthikanti", components="compute")
    parts = {p.part: p.multiplier for p in only.components.systems[0].parts}
    assert parts["compute"] > 0 and parts["bubble"] is None
    assert "components" not in calisim.validate(FIXTURE).to_dict()
    out = calisim.validate(korthikanti, source="Korthikanti", components="compute", components_out=tmp_path)
    assert os.path.exists(out.components.written["a100-sxm-80g"])
    with pytest.raises(calisim.ConfigError, match="--components"):
        calisim.validate(FIXTURE, components=["flops"])
    # Attention apart, and the parts chosen by cross-validation, as the command line gives them.
    selected = calisim.validate(korthikanti, source="et al.", components=["compute", "attention"], select_parts=True)
    cli_selected = cli_json("validate", "--runs", korthikanti, "--source", "et al.", "--json", "--components",
                            "compute", "attention", "--select-parts")
    assert selected.to_dict()["components"] == cli_selected["components"]
    assert selected.to_dict()["components"]["select_parts"] is True
    apart = calisim.validate(korthikanti, source="et al.", components=["compute", "attention"])
    parts = {p.part: p.multiplier for p in apart.components.systems[0].parts}
    assert parts["attention"] > 0 and parts["attention"] != parts["compute"]
