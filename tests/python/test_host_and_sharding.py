"""The config views expose what the simulator reads for host dispatch (per op, per sync, per expert
of a grouped GEMM) and for hybrid sharding, and the sharding reaches the result."""
import calisim


def test_system_view_has_the_host_dispatch_figures():
    gb300 = calisim.SystemConfig.init_from_config_file("gb300-nvl72")
    assert gb300.host_op_dispatch_us == 27.5  # Grace, as gb200-nvl72
    assert gb300.host_sync_us == 10
    # The per-expert GEMM submission: x86 20 us, Grace the same times 2.75 (the op dispatch ratio).
    assert gb300.host_grouped_gemm_expert_us == 55
    assert calisim.SystemConfig.init_from_config_file("b200").host_grouped_gemm_expert_us == 20
    assert gb300.kernel_launch_us == 2  # the GPU-side launch gap is a separate figure
    assert gb300.gemm_fixed_us == 4  # a GEMM kernel's fixed part (the H200's measured value)
    assert calisim.SystemConfig.init_from_config_file("a100-sxm-80g").gemm_fixed_us == 0
    edited = gb300.copy()
    edited.host.grouped_gemm_expert_us = 30
    assert edited.host_grouped_gemm_expert_us == 30
    assert edited.kernel_launch_us == 2


def test_hybrid_sharding_reaches_the_strategy_view_and_the_result():
    strategy = calisim.StrategyConfig.init_from_config_file("llama3-8b-8gpu")
    assert strategy.dp_replicate_size == 1
    whole = calisim.simulate("llama3-8b", strategy, "h100-sxm")
    strategy.dp_replicate_size = 2
    assert strategy.dp_replicate_size == 2
    hybrid = calisim.simulate("llama3-8b", strategy, "h100-sxm")
    assert whole["layout"]["sharding"] == "ZeRO-1 over 8 ranks"
    assert hybrid["layout"]["sharding"] == "ZeRO-1 over 4 ranks x 2 replicas (hybrid sharding)"
    memory = lambda r: r["stages"][0]["memory"]["optimizer_state_bytes"]
    assert memory(hybrid) == 2 * memory(whole)  # the Adam state shards over half the ranks
