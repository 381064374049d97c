#!/usr/bin/env python3
"""A real PyTorch training step on one GPU, profiled the way calisim reads it.

Builds a Llama-style decoder (RMSNorm, RoPE, grouped-query attention through
F.scaled_dot_product_attention, SwiGLU or GeLU MLP, untied LM head, no biases) from a calisim
model config, trains it for a few steps in bf16 on random tokens, and writes into --out:

  trace.pt.trace.json.gz  torch.profiler trace of --steps steps (record_shapes=True), for
                          `calisim db import DB --kineto` (its shape rows and trace runs)
  model.json              the model config as run (layer_num = --layers)
  strategy.json           the run as a calisim strategy: one GPU, one micro-batch per step
  steps.json              step times measured outside the profiler (CUDA events), peak memory,
                          versions, the attention backend, and the calisim commands that set the
                          trace beside its simulation

Shapes follow calisim's kernel keys: the Q, K, V projections are one fused linear (calisim's
qkv_proj), SwiGLU's gate and up one linear of width 2f (fc1). Parameters, gradients and AdamW
state are bf16 (no fp32 master copy, so the optimizer step is not Megatron's; compare the
forward and backward kernel classes). The loss is F.cross_entropy on an fp32 copy of the logits
(calisim's cross_entropy_implementation "pytorch", torchtitan's convention).

Dense Llama-style models only; anything else (MoE, MLA, LayerNorm, learned positions, biases,
tied embeddings, sliding windows) is refused with the field that is not supported.

  python3 scripts/torch_step_trace.py --model configs/models/llama3-8b.json --layers 4 \\
      --seq 8192 --mbs 1 --attention cudnn --out torch-step
"""

import argparse
import json
import math
import os
import platform
import statistics
import sys
import time

try:
    import torch
    import torch.nn.functional as F
    from torch import nn
    Module = nn.Module
except ImportError:  # the config and argument checks still run; training needs PyTorch
    torch = F = nn = None
    Module = object

BACKENDS = ("auto", "cudnn", "flash", "efficient", "math")


def fail(message):
    print(f"torch_step_trace: {message}", file=sys.stderr)
    sys.exit(2)


def read_model(path, layers):
    try:
        with open(path) as f:
            cfg = json.load(f)
    except (OSError, json.JSONDecodeError) as e:
        fail(f"{path}: cannot read the model config: {e}")
    refused = {
        "model_type": lambda v: v != "dense",
        "attention_type": lambda v: v == "mla",
        "norm_type": lambda v: v != "rmsnorm",
        "position_embedding_type": lambda v: v != "rope",
        "add_bias_linear": bool,
        "untie_embeddings_and_output_weights": lambda v: not v,
        "attention_window_tokens": bool,
        "window_size": bool,
    }
    for key, bad in refused.items():
        if key in cfg and bad(cfg[key]):
            fail(f"{path}: {key} = {cfg[key]!r} is not what this script builds (dense Llama-style models only)")
    for key in ("hidden_size", "head_num", "layer_num", "vocab_size", "intermediate_size"):
        if not isinstance(cfg.get(key), int) or cfg[key] <= 0:
            fail(f"{path}: {key}: expected a positive integer")
    cfg.setdefault("kv_head_num", cfg["head_num"])
    cfg.setdefault("head_size", cfg["hidden_size"] // cfg["head_num"])
    if cfg["head_num"] % cfg["kv_head_num"]:
        fail(f"{path}: head_num {cfg['head_num']} is not a multiple of kv_head_num {cfg['kv_head_num']}")
    if layers:
        cfg["layer_num"] = layers
    return cfg


def rms_norm(x, weight, eps=1e-5):
    if hasattr(F, "rms_norm"):  # PyTorch 2.4+
        return F.rms_norm(x, (x.shape[-1],), weight, eps)
    return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps).to(x.dtype) * weight


class Block(Module):
    def __init__(self, cfg):
        super().__init__()
        h, d = cfg["hidden_size"], cfg["head_size"]
        self.hq, self.hkv, self.d = cfg["head_num"], cfg["kv_head_num"], d
        self.swiglu = bool(cfg.get("use_swiglu", False))
        f = cfg["intermediate_size"]
        self.norm1 = nn.Parameter(torch.ones(h))
        self.norm2 = nn.Parameter(torch.ones(h))
        self.qkv = nn.Linear(h, (self.hq + 2 * self.hkv) * d, bias=False)
        self.out = nn.Linear(self.hq * d, h, bias=False)
        self.fc1 = nn.Linear(h, 2 * f if self.swiglu else f, bias=False)
        self.fc2 = nn.Linear(f, h, bias=False)

    def forward(self, x, cos, sin, backend):
        b, s, _ = x.shape
        q, k, v = self.qkv(rms_norm(x, self.norm1)).split(
            [self.hq * self.d, self.hkv * self.d, self.hkv * self.d], dim=-1)
        q = q.view(b, s, self.hq, self.d).transpose(1, 2)
        k = k.view(b, s, self.hkv, self.d).transpose(1, 2)
        v = v.view(b, s, self.hkv, self.d).transpose(1, 2)
        q, k = rope(q, cos, sin), rope(k, cos, sin)
        o = attention(q, k, v, backend)
        x = x + self.out(o.transpose(1, 2).reshape(b, s, self.hq * self.d))
        y = self.fc1(rms_norm(x, self.norm2))
        if self.swiglu:
            gate, up = y.chunk(2, dim=-1)
            y = F.silu(gate) * up
        else:
            y = F.gelu(y, approximate="tanh")
        return x + self.fc2(y)


def rope_tables(seq, d, device, dtype, theta=500000.0):
    inv = 1.0 / (theta ** (torch.arange(0, d, 2, device=device, dtype=torch.float32) / d))
    ang = torch.outer(torch.arange(seq, device=device, dtype=torch.float32), inv)
    return torch.cat([ang, ang], -1).cos().to(dtype), torch.cat([ang, ang], -1).sin().to(dtype)


def rope(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def attention(q, k, v, backend):
    if not hasattr(F, "scaled_dot_product_attention"):  # PyTorch < 2.0: the unfused math
        k, v = expand_kv(q, k, v)
        s = q.shape[2]
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(q.shape[-1])
        mask = torch.ones(s, s, dtype=torch.bool, device=q.device).triu(1)
        return scores.masked_fill(mask, float("-inf")).softmax(-1) @ v
    gqa = q.shape[1] != k.shape[1]
    if gqa and (GQA_EXPANDED[0] or not sdpa_takes_gqa()):
        k, v = expand_kv(q, k, v)
        gqa = False
    kwargs = {"is_causal": True}
    if gqa:
        kwargs["enable_gqa"] = True
    if backend == "auto":
        return F.scaled_dot_product_attention(q, k, v, **kwargs)
    from torch.nn.attention import SDPBackend, sdpa_kernel
    chosen = {"cudnn": SDPBackend.CUDNN_ATTENTION, "flash": SDPBackend.FLASH_ATTENTION,
              "efficient": SDPBackend.EFFICIENT_ATTENTION, "math": SDPBackend.MATH}[backend]
    with sdpa_kernel([chosen]):
        try:
            return F.scaled_dot_product_attention(q, k, v, **kwargs)
        except RuntimeError:
            if not gqa:
                raise
            # The backend takes no grouped K, V (enable_gqa): repeat them per query head, as
            # frameworks do for such kernels, and say so in steps.json.
            GQA_EXPANDED[0] = True
            k, v = expand_kv(q, k, v)
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)


GQA_EXPANDED = [False]  # set once a backend refused grouped K, V


def expand_kv(q, k, v):
    rep = q.shape[1] // k.shape[1]
    return k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)


def sdpa_takes_gqa():
    import inspect
    if not hasattr(F, "scaled_dot_product_attention"):
        return False
    try:
        return "enable_gqa" in inspect.signature(F.scaled_dot_product_attention).parameters
    except (TypeError, ValueError):  # a builtin without a signature: enable_gqa came with 2.5
        return tuple(int(p) for p in torch.__version__.split("+")[0].split(".")[:2]) >= (2, 5)


class Decoder(Module):
    def __init__(self, cfg):
        super().__init__()
        h, V = cfg["hidden_size"], cfg["vocab_size"]
        self.embed = nn.Embedding(V, h)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg["layer_num"]))
        self.norm = nn.Parameter(torch.ones(h))
        self.head = nn.Linear(h, V, bias=False)
        self.d = cfg["head_size"]

    def forward(self, tokens, labels, backend):
        x = self.embed(tokens)
        cos, sin = rope_tables(tokens.shape[1], self.d, x.device, x.dtype)
        for blk in self.blocks:
            x = blk(x, cos, sin, backend)
        logits = self.head(rms_norm(x, self.norm))
        return F.cross_entropy(logits.float().view(-1, logits.shape[-1]), labels.view(-1))


def strategy_for(args, fused_norm):
    return {
        "seq_len": args.seq, "micro_batch_size": args.mbs, "global_batch_size": args.mbs,
        "world_size": 1, "tp_size": 1, "pp_size": 1, "cp_size": 1, "dtype": "bf16", "zero_state": 0,
        "enable_recompute": False, "use_flash_sdp": True, "use_fused_norm": fused_norm,
        "use_fused_swiglu": False, "use_fused_rope": False, "cross_entropy_implementation": "pytorch",
        "use_fp32_accum_grad": False, "enable_dropout": False,
    }


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", required=True, help="calisim model config (JSON)")
    p.add_argument("--layers", type=int, default=0, help="layers to build (default: the config's)")
    p.add_argument("--seq", type=int, default=8192)
    p.add_argument("--mbs", type=int, default=1)
    p.add_argument("--steps", type=int, default=3, help="profiled steps (default 3)")
    p.add_argument("--timed", type=int, default=10, help="steps timed outside the profiler (default 10)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--attention", choices=BACKENDS, default="auto", help="SDPA backend (default: PyTorch's choice)")
    p.add_argument("--device", default="cuda")
    p.add_argument("--out", required=True, help="directory for the trace, configs and steps.json")
    args = p.parse_args()
    for name in ("layers", "seq", "mbs", "steps", "timed", "warmup"):
        if getattr(args, name) < (0 if name in ("layers", "warmup") else 1):
            fail(f"--{name}: expected a positive integer")
    cfg = read_model(args.model, args.layers)
    if torch is None:
        fail("needs PyTorch (import torch failed): run it where PyTorch is installed, e.g. the GPU machine")
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        fail("no CUDA device (torch.cuda.is_available() is False); --device cpu runs the same step on the CPU")
    os.makedirs(args.out, exist_ok=True)
    dtype = torch.bfloat16

    torch.manual_seed(0)
    model = Decoder(cfg).to(device=device, dtype=dtype)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-5, **({"fused": True} if device.type == "cuda" else {}))
    gen = torch.Generator(device=device).manual_seed(1)
    tokens = torch.randint(0, cfg["vocab_size"], (args.mbs, args.seq), device=device, generator=gen)
    labels = torch.randint(0, cfg["vocab_size"], (args.mbs, args.seq), device=device, generator=gen)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = model(tokens, labels, args.attention)
        loss.backward()
        opt.step()
        return loss

    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    for _ in range(args.warmup):
        step()
    sync()
    times = []
    for _ in range(args.timed):
        if device.type == "cuda":
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            step()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b) / 1e3)
        else:
            t0 = time.perf_counter()
            step()
            times.append(time.perf_counter() - t0)

    from torch.profiler import ProfilerActivity, profile, schedule
    trace = os.path.join(args.out, "trace.pt.trace.json.gz")
    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    with profile(activities=activities, record_shapes=True, schedule=schedule(wait=0, warmup=1, active=args.steps),
                 on_trace_ready=lambda prof: prof.export_chrome_trace(trace)) as prof:
        for _ in range(1 + args.steps):
            step()
            prof.step()
    sync()

    model_out = dict(cfg)
    with open(os.path.join(args.out, "model.json"), "w") as f:
        json.dump(model_out, f, indent=2)
    # F.rms_norm runs one fused kernel on CUDA only where PyTorch has aten::_fused_rms_norm; before
    # that (and on the CPU) it is a composite of element-wise kernels, as the manual fallback.
    fused_norm = device.type == "cuda" and hasattr(F, "rms_norm") and hasattr(torch.ops.aten, "_fused_rms_norm")
    with open(os.path.join(args.out, "strategy.json"), "w") as f:
        json.dump(strategy_for(args, fused_norm), f, indent=2)
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else platform.processor() or "cpu"
    system = "h200" if "H200" in gpu else "h100-sxm"
    flash2 = args.attention == "flash"
    sets = " --set system.efficiency.attention_implementation=flash2" if flash2 else ""
    d = args.out
    summary = {
        "gpu": gpu, "torch": torch.__version__, "cuda": torch.version.cuda,
        "cudnn": torch.backends.cudnn.version() if device.type == "cuda" else None,
        "python": platform.python_version(), "attention_backend": args.attention, "fused_rms_norm": fused_norm,
        "gqa_expanded": GQA_EXPANDED[0] or (cfg["kv_head_num"] != cfg["head_num"] and not sdpa_takes_gqa()),
        "layers": cfg["layer_num"], "seq_len": args.seq, "micro_batch_size": args.mbs,
        "parameters": sum(p.numel() for p in model.parameters()),
        "step_s": times, "step_median_s": statistics.median(times),
        "peak_allocated_gb": torch.cuda.max_memory_allocated(device) / 1e9 if device.type == "cuda" else None,
        "peak_reserved_gb": torch.cuda.max_memory_reserved(device) / 1e9 if device.type == "cuda" else None,
        "profiled_steps": args.steps,
        "calisim": [
            f"calisim db import {d}/trace.db --kineto {trace}",
            f"calisim simulate --model {d}/model.json --strategy {d}/strategy.json --system {system}{sets} "
            f"--compare-trace {d}/trace.db",
        ],
    }
    with open(os.path.join(args.out, "steps.json"), "w") as f:
        json.dump(summary, f, indent=2)
    print(f"{gpu}: {cfg['layer_num']} layers, seq {args.seq} x mbs {args.mbs}, attention {args.attention}: "
          f"step {summary['step_median_s'] * 1e3:.1f} ms (median of {len(times)}); trace {trace}")
    for c in summary["calisim"]:
        print("  " + c)


if __name__ == "__main__":
    main()
