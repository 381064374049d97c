"""SimuMax's mem_result and cost_result, built from a calisim result document.

Field names are SimuMax's (seeds 000/001); memory is in bytes and time in seconds, as numbers
(SimuMax prints human-readable strings; str() of a Result shows these numbers).
"""
from .records import Result


def stage_memory(stage, mem_factor):
    """SimuMax's per-stage memory fields of one calisim stage."""
    m = stage["memory"]
    return {
        "model_mem": m["model_mem_bytes"],
        "weight_mem": m["weight_bytes"],
        "grad_mem": m["grad_bytes"],
        "state_mem": m["optimizer_state_bytes"],
        "fwd_activation_cache_per_micro_batch": m["fwd_activation_cache_per_micro_batch_bytes"],
        "cached_micro_batch_num": m["max_micro_batches_in_flight"],
        "peak_activation_mem_in_1F1B": m["peak_activation_mem_in_1F1B_bytes"],
        "fwd_peak_allocated_mem": m["fwd_peak_allocated_mem_bytes"],
        "bwd_peak_allocated_mem": m["bwd_peak_allocated_mem_bytes"],
        "peak_mem": m["peak_mem_bytes"],
        "peak_mem_with_reserved": m["peak_mem_with_reserved_bytes"],
        "memory_reserved_ratio": str(mem_factor),
        "peak_path": m["peak_path"],
        "stage": stage["stage"],
        "layers": stage["layers"],
    }


def mem_result(doc, mem_factor):
    """pp = 1: the stage's fields; otherwise {"first_stage", "last_stage"} and, with pp > 2,
    "middle_stage" (the middle stage with the highest peak)."""
    stages = doc["stages"]
    if len(stages) == 1:
        return Result(stage_memory(stages[0], mem_factor))
    data = {"first_stage": stage_memory(stages[0], mem_factor)}
    if len(stages) > 2:
        middle = max(stages[1:-1], key=lambda s: s["memory"]["peak_mem_bytes"])
        data["middle_stage"] = stage_memory(middle, mem_factor)
    data["last_stage"] = stage_memory(stages[-1], mem_factor)
    return Result(data)


def cost_result(doc):
    """SimuMax's cost fields plus calisim's MFU variants and breakdown."""
    c, b, s = doc["cost"], doc["breakdown"], doc["model_stats"]
    return Result({
        "duration_time_per_iter": c["duration_time_per_iter_s"],
        "chunk_time": c["chunk_time_s"],
        "all_tokens_per_iter": c["all_tokens_per_iter"],
        "throughput_per_accelerator": c["throughput_per_accelerator"],
        "throughput per GPU (TFLOP/s/GPU)": c["tflops_per_gpu"],
        "mfu": c["mfu"],
        "mfu_6nd_with_attn": c["mfu_6nd_with_attn"],
        "mfu_6nd": c["mfu_6nd"],
        "mfu_causal": c["mfu_causal"],
        "hfu": c["hfu"],
        "breakdown_result": {
            "compute": b["compute_s"], "recompute": b["recompute_s"], "bubble": b["bubble_s"],
            "tp_comm": b["tp_comm_exposed_s"], "pp_comm": b["pp_comm_exposed_s"],
            "cp_comm": b["cp_comm_exposed_s"], "ep_comm": b["ep_comm_exposed_s"],
            "dp_comm": b["dp_comm_exposed_s"], "offload": b["offload_exposed_s"],
            "straggler": b["straggler_s"], "optimizer": b["optimizer_s"],
            "critical_stage": c["critical_stage"], "bubble_fraction": c["bubble_fraction"],
        },
        "comm_result": dict(doc["comm"]),
        "compute_details": {
            "stages": [{k: v for k, v in st.items() if k != "memory"} for st in doc["stages"]],
            "ops": doc["ops"],
        },
        "param_numel_info": {"all": s["total_params"], "activations": s["active_params"]},
        "flops_info": {"model_flops_per_token": s["model_flops_per_token"],
                       "model_flops_per_token_causal": s["model_flops_per_token_causal"],
                       "flops_6n_per_token": s["flops_6n_per_token"]},
        "efficiency_sources": doc["efficiency_sources"],
    })
