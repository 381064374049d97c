"""calisim.import_megatron: a Megatron-LM launch script as configs, equal to the CLI's import."""
import os

import pytest

import calisim
from conftest import REPO, cli_json

SCRIPT = os.path.join(REPO, "examples", "megatron", "llama3_70b_64gpu.sh")


def test_import_matches_the_cli_and_simulates_as_the_shipped_configs():
    imp = calisim.import_megatron(SCRIPT, vocab_size=128256)
    cli = cli_json("configs", "import-megatron", SCRIPT, "--vocab-size", "128256", "--json")
    assert imp["model"] == cli["model"] and imp["strategy"] == cli["strategy"]
    assert imp["settings"] == cli["settings"] and imp["not_read"] == cli["not_read"]
    from_script = calisim.simulate(imp["model"], imp["strategy"], "h100-sxm")
    shipped = calisim.simulate("llama3-70b", "llama3-70b-64gpu", "h100-sxm")
    assert from_script.cost.duration_time_per_iter_s == pytest.approx(shipped.cost.duration_time_per_iter_s, rel=1e-12)


def test_variables_and_errors(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("torchrun --nproc_per_node 8 --nnodes $NODES pretrain_gpt.py --num-layers 2 --hidden-size 256 "
                      "--num-attention-heads 4 --seq-length 512 --micro-batch-size 1 --bf16 --vocab-size 1000\n")
    with pytest.raises(calisim.ConfigError) as e:
        calisim.import_megatron(script)
    assert e.value.where == "line 1: --nnodes" and "--var NODES=VALUE" in e.value.problem
    imp = calisim.import_megatron(script, vars={"NODES": 2})
    assert imp["strategy"]["world_size"] == 16
    assert calisim.import_megatron(script, world_size=4)["strategy"]["world_size"] == 4
