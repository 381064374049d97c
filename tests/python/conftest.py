"""Shared helpers of the Python API tests: the repository, the `calisim` binary built beside the
module, and a way to run it. ctest sets CALISIM_BINARY and CALISIM_SOURCE_DIR (tests/CMakeLists.txt);
run by hand: PYTHONPATH=build/python CALISIM_BINARY=build/cli/calisim python3 -m pytest tests/python
"""
import json
import os
import subprocess
import sys

import pytest

REPO = os.environ.get("CALISIM_SOURCE_DIR") or os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SIMUMAX = os.path.join(REPO, "tests", "data", "simumax")


def cli_binary():
    path = os.environ.get("CALISIM_BINARY")
    if not path or not os.path.exists(path):
        pytest.fail("set CALISIM_BINARY to the built calisim executable (ctest does)")
    return path


def run_cli(*args, expect_rc=0):
    """Runs the calisim binary; returns (stdout, stderr)."""
    p = subprocess.run([cli_binary(), *args], capture_output=True, text=True, timeout=300)
    assert p.returncode == expect_rc, f"calisim {' '.join(args)}: rc {p.returncode}\n{p.stderr}"
    return p.stdout, p.stderr


def cli_json(*args):
    return json.loads(run_cli(*args)[0])


def run_python(script, *args, cwd=None):
    """Runs a script with this interpreter and the calisim package under test; returns stdout."""
    import calisim
    env = dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(os.path.abspath(calisim.__file__))))
    p = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=300, cwd=cwd,
                       env=env)
    assert p.returncode == 0, f"{script}: rc {p.returncode}\n{p.stdout}\n{p.stderr}"
    return p.stdout
