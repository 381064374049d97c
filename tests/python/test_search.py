"""calisim.search and PerfLLM's SimuMax search give the CLI's results."""
import csv
import os

import pytest

import calisim
from conftest import cli_json

SPACE = dict(world_size=8, global_batch_size=32, seq_len=4096, tp=[1, 2, 4], mbs=[1, 2], recompute=["none", "full"])


def test_search_equals_cli_json():
    py = calisim.search("llama3-8b", "a100-pcie-80g", top=5, **SPACE)
    cli = cli_json("search", "--model", "llama3-8b", "--system", "a100-pcie-80g", "--world-size", "8",
                   "--global-batch-size", "32", "--seq-len", "4096", "--tp", "1,2,4", "--mbs", "1,2",
                   "--recompute", "none,full", "--top", "5", "--json")
    assert py.to_dict()["top"] == cli["top"]
    assert py.to_dict()["counts"] == cli["counts"]
    assert len(py.top) == 5 and py.top[0].step_time_s <= py.top[-1].step_time_s


def test_expert_tensor_parallel_list_equals_cli_json():
    args = dict(world_size=16, global_batch_size=64, seq_len=4096, tp=[2], pp=[1, 2], vpp=[1], ep=[2, 4, 8],
                etp=[1, 2], mbs=[1], recompute=["full"], top=10)
    py = calisim.search("mixtral-8x7b", "h100-sxm", **args)
    cli = cli_json("search", "--model", "mixtral-8x7b", "--system", "h100-sxm", "--world-size", "16",
                   "--global-batch-size", "64", "--seq-len", "4096", "--tp", "2", "--pp", "1,2", "--vpp", "1",
                   "--ep", "2,4,8", "--etp", "1,2", "--mbs", "1", "--recompute", "full", "--top", "10", "--json")
    assert py.to_dict()["top"] == cli["top"]
    assert {c["etp"] for c in cli["top"]} == {1, 2}
    with pytest.raises(calisim.ConfigError, match="etp"):
        calisim.search("mixtral-8x7b", "h100-sxm", **dict(args, etp=[0]))


def test_cp_comm_type_list_equals_cli_json():
    py = calisim.search("llama3-8b", "h100-sxm", world_size=16, global_batch_size=16, seq_len=32768, tp=[1, 2],
                        pp=[1], vpp=[1], cp=[2, 4], mbs=[1], recompute=["full"],
                        cp_comm_type=["p2p", "a2a", "allgather"], top=10)
    cli = cli_json("search", "--model", "llama3-8b", "--system", "h100-sxm", "--world-size", "16",
                   "--global-batch-size", "16", "--seq-len", "32768", "--tp", "1,2", "--pp", "1", "--vpp", "1",
                   "--cp", "2,4", "--mbs", "1", "--recompute", "full", "--cp-comm-type", "p2p,a2a,allgather",
                   "--top", "10", "--json")
    assert py.to_dict()["top"] == cli["top"]
    with pytest.raises(calisim.ConfigError, match="cp_comm_type"):
        calisim.search("llama3-8b", "h100-sxm", world_size=16, global_batch_size=16, seq_len=32768, cp=[2],
                       cp_comm_type="ring")


def test_nothing_fits_raises_with_explanation():
    with pytest.raises(calisim.NoFeasibleLayout, match="no layout fits") as e:
        calisim.search("llama3-70b", "a100-pcie-80g", world_size=8, global_batch_size=8, seq_len=8192,
                       tp=[1], pp=[1])
    assert e.value.result.smallest is not None


def test_perf_llm_search(tmp_path):
    perf = calisim.PerfLLM()
    perf.configure(strategy_config="llama3-8b-8gpu", model_config="llama3-8b", system_config="a100-pcie-80g")
    all_result = {}
    best = perf.search_best_parallel_strategy_with_recompute(
        world_size=8, gmi_error=6, micro_batch_size=1, global_batch_size=32, all_search_result=all_result,
        tp_search_list=[1, 2, 4], ep_search_list=[1],
        recompute_search_type=["no_recompute", "full_block", "selective_recompute"],
        use_reserved_memory=True, dump_path=str(tmp_path))
    assert best["tp_size"] in (1, 2, 4) and best["mfu"] == max(all_result["mfu"])
    assert set(all_result["recompute"]) <= {"none", "full", "attn+mlp"}
    files = sorted(os.listdir(tmp_path))
    assert any(f.endswith("_best_strategy.csv") for f in files)
    all_csv = [f for f in files if f.endswith("_all_search_strategies.csv")][0]
    with open(tmp_path / all_csv) as f:
        assert len(list(csv.DictReader(f))) == len(all_result["mfu"])
    # The same space through the CLI: vpp 1 and the strategy's ZeRO stage, margin 6 GiB.
    strategy = perf.strategy.parsed()
    cli = cli_json("search", "--model", "llama3-8b", "--system", "a100-pcie-80g", "--strategy", "llama3-8b-8gpu",
                   "--world-size", "8", "--global-batch-size", "32", "--tp", "1,2,4", "--ep", "1", "--mbs", "1",
                   "--vpp", "1", "--zero", str(strategy["zero_state"]), "--cp", str(strategy["cp_size"]),
                   "--recompute", "none,full,attn+mlp", "--memory-margin-gb", repr(6 * 2 ** 30 / 1e9), "--json")
    assert best["duration_time_per_iter"] == cli["top"][0]["step_time_s"]
    assert best["index"] == cli["top"][0]["index"]


def test_dispatcher_list_equals_cli():
    args = dict(model="qwen3-30b-a3b", system="b200", world_size=8, global_batch_size=64, seq_len=4096,
                tp=[1], pp=[1], vpp=[1], ep=[4, 8], mbs=[1], recompute=["none"], top=6)
    py = calisim.search(dispatcher=["alltoall", "flex"], **args)
    cli = cli_json("search", "--model", "qwen3-30b-a3b", "--system", "b200", "--world-size", "8",
                   "--global-batch-size", "64", "--seq-len", "4096", "--tp", "1", "--pp", "1", "--vpp", "1",
                   "--ep", "4,8", "--mbs", "1", "--recompute", "none", "--dispatcher", "alltoall,flex",
                   "--top", "6", "--json")
    assert [c["moe_dispatcher"] for c in py.top] == [c["moe_dispatcher"] for c in cli["top"]]
    assert {c["moe_dispatcher"] for c in py.top} == {"alltoall", "flex"}
    with pytest.raises(calisim.ConfigError, match="<search>: dispatcher:"):
        calisim.search(dispatcher=["deepep"], **args)


def test_dp_replicate_list_equals_cli():
    args = dict(model="llama3-8b", system="h100-sxm", world_size=32, global_batch_size=64, seq_len=4096,
                tp=[1, 2], pp=[1], vpp=[1], mbs=[1], recompute=["full"], zero=[3], top=8)
    py = calisim.search(dp_replicate=[1, 4], **args)
    cli = cli_json("search", "--model", "llama3-8b", "--system", "h100-sxm", "--world-size", "32",
                   "--global-batch-size", "64", "--seq-len", "4096", "--tp", "1,2", "--pp", "1", "--vpp", "1",
                   "--mbs", "1", "--recompute", "full", "--zero", "3", "--dp-replicate", "1,4", "--top", "8", "--json")
    assert [(c["index"], c["dp_replicate_size"]) for c in py.top] == \
        [(c["index"], c["dp_replicate_size"]) for c in cli["top"]]
    assert {c["dp_replicate_size"] for c in py.top} == {1, 4}
    with pytest.raises(calisim.ConfigError, match="<search>: dp_replicate:"):
        calisim.search(dp_replicate=[0], **args)


def test_accuracy_equals_cli():
    py = calisim.search("llama3-8b", "h100-sxm", 8, 32, seq_len=4096, tp=[1, 2], pp=[1], vpp=[1], mbs=[1],
                        recompute=["none"], top=3, accuracy=True)
    cli = cli_json("search", "--model", "llama3-8b", "--system", "h100-sxm", "--world-size", "8",
                   "--global-batch-size", "32", "--seq-len", "4096", "--tp", "1,2", "--pp", "1", "--vpp", "1",
                   "--mbs", "1", "--recompute", "none", "--top", "3", "--json", "--accuracy")
    assert py.to_dict()["accuracy"] == cli["accuracy"]
    assert py.accuracy["matched_on"] == ["system h100-sxm", "dense", "bf16"]
    assert py.accuracy["simulated_step_s"] == py.top[0]["step_time_s"]
    assert "accuracy" not in calisim.search("llama3-8b", "h100-sxm", 8, 32, seq_len=4096, tp=[1, 2], pp=[1], vpp=[1],
                                            mbs=[1], recompute=["none"], top=1).to_dict()


def test_megatron_recompute_modules_equal_cli():
    args = dict(world_size=8, global_batch_size=64, seq_len=4096, tp=[1], pp=[1], vpp=[1], ep=[8], mbs=[1, 2],
                recompute=["none", "modules:moe_act+layernorm"], overrides=["strategy.moe_grouped_gemm=true"],
                top=5)
    py = calisim.search("qwen3-30b-a3b", "h200", **args)
    cli = cli_json("search", "--model", "qwen3-30b-a3b", "--system", "h200", "--world-size", "8",
                   "--global-batch-size", "64", "--seq-len", "4096", "--tp", "1", "--pp", "1", "--vpp", "1",
                   "--ep", "8", "--mbs", "1,2", "--recompute", "none,modules:moe_act+layernorm",
                   "--set", "strategy.moe_grouped_gemm=true", "--top", "5", "--json")
    assert py.to_dict()["top"] == cli["top"]
    assert py.top[0].to_dict()["recompute"] == "modules:layernorm+moe_act"
    with pytest.raises(calisim.ConfigError, match="unknown Megatron recompute module 'core_attn'"):
        calisim.search("qwen3-30b-a3b", "h200", **dict(args, recompute=["modules:core_attn"]))
