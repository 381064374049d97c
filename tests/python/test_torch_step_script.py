"""scripts/torch_step_trace.py (a real PyTorch step profiled for `db import --kineto`) checks its
inputs before it needs PyTorch or a GPU: configs it cannot build and bad arguments exit 2 naming
what is wrong; a buildable config then needs PyTorch and a CUDA device, and says which is missing."""
import os
import subprocess
import sys

from conftest import REPO

SCRIPT = os.path.join(REPO, "scripts", "torch_step_trace.py")
MODELS = os.path.join(REPO, "configs", "models")


def run(*args):
    return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True, timeout=120)


def test_configs_it_cannot_build_are_refused_naming_the_field(tmp_path):
    p = run("--model", os.path.join(MODELS, "deepseek-v3.json"), "--out", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert "model_type = 'moe'" in p.stderr
    p = run("--model", os.path.join(MODELS, "gpt3-175b.json"), "--out", str(tmp_path))
    assert p.returncode == 2, p.stderr
    assert "is not what this script builds" in p.stderr
    p = run("--model", str(tmp_path / "missing.json"), "--out", str(tmp_path))
    assert p.returncode == 2 and "cannot read the model config" in p.stderr
    p = run("--model", os.path.join(MODELS, "llama3-8b.json"), "--seq", "0", "--out", str(tmp_path))
    assert p.returncode == 2 and "--seq: expected a positive integer" in p.stderr


def test_a_buildable_config_needs_pytorch_and_a_gpu(tmp_path):
    p = run("--model", os.path.join(MODELS, "llama3-8b.json"), "--layers", "1", "--seq", "128", "--out", str(tmp_path))
    if p.returncode == 0:  # a machine with PyTorch and a GPU ran the step
        assert os.path.exists(tmp_path / "trace.pt.trace.json.gz")
        return
    assert p.returncode == 2, p.stderr
    assert "needs PyTorch" in p.stderr or "no CUDA device" in p.stderr, p.stderr
