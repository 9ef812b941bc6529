"""The compute side of the step model against a real GPU: HBM bandwidth, GEMMs, a decode layer.

Run it on a machine with one CUDA GPU (an H200 is what this project is lent):

    python benchmarks/gpu_check.py --system hgx-h200 --out benchmarks/gpu_results/h200.json

It times, with CUDA events and CUDA graphs (as decode engines run), and prints beside each time the
step model's prediction and the ratio:
1. HBM bandwidth: a large device-to-device copy (reads n, writes n);
2. the GEMMs of a Llama-3.1-70B decode step at TP 1/2/4/8 shards and batch 1..256;
3. one whole Llama-style decoder layer (RMSNorm, QKV, SDPA attention over a KV cache, O, RMSNorm,
   gate/up, SiLU, down) at TP shards 1/2/4/8, batch 1/16/64, context 1024/4096.
The predictions come from `shardbudget.step` (price_ops: roofline with its default efficiencies), so a ratio
far from 1 says which default to change. `--smoke` runs tiny shapes on the CPU (used by the tests).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def _timer(torch, device: str, fn, iters: int, graphs: bool) -> float:
    """Median seconds per call of `fn`: CUDA events (optionally a CUDA graph) or perf_counter on CPU."""
    for _ in range(3):
        fn()
    if device == "cpu":
        samples = []
        for _ in range(iters):
            t0 = time.perf_counter()
            fn()
            samples.append(time.perf_counter() - t0)
        return statistics.median(samples)
    torch.cuda.synchronize()
    call = fn
    if graphs:
        g = torch.cuda.CUDAGraph()
        s = torch.cuda.Stream()
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            fn()
        torch.cuda.current_stream().wait_stream(s)
        with torch.cuda.graph(g):
            fn()
        call = g.replay
    samples = []
    for _ in range(iters):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        call()
        end.record()
        end.synchronize()
        samples.append(start.elapsed_time(end) * 1e-3)
    return statistics.median(samples)


def check_hbm(torch, device, model, n_bytes: int, iters: int) -> dict:
    src = torch.empty(n_bytes // 2, dtype=torch.bfloat16, device=device)
    dst = torch.empty_like(src)
    t = _timer(torch, device, lambda: dst.copy_(src), iters, graphs=False)
    measured = 2 * n_bytes / t  # a copy reads n and writes n
    predicted = model.rates[1]  # peak x memory efficiency
    return {
        "what": "hbm copy",
        "bytes": n_bytes,
        "time_s": t,
        "measured_bytes_per_s": measured,
        "predicted_bytes_per_s": predicted,
        "ratio": measured / predicted,
    }


def _op_time(model, flops: float, nbytes: float) -> float:
    flops_per_s, bytes_per_s = model.rates
    return max(flops / flops_per_s, nbytes / bytes_per_s) + model.eff.kernel_launch_s


def check_gemms(torch, device, model, hidden: int, inter: int, tps, batches, iters: int) -> list[dict]:
    rows = []
    for tp in tps:
        for name, k, n in (
            ("qkv", hidden, (hidden + 2 * hidden // 8) // tp),
            ("o", hidden // tp, hidden),
            ("gate_up", hidden, 2 * inter // tp),
            ("down", inter // tp, hidden),
        ):
            w = torch.randn(k, n, dtype=torch.bfloat16, device=device)
            for m in batches:
                x = torch.randn(m, k, dtype=torch.bfloat16, device=device)
                t = _timer(torch, device, lambda: x @ w, iters, graphs=device != "cpu")
                flops = 2.0 * m * n * k
                nbytes = 2.0 * (k * n + m * k + m * n)
                pred = _op_time(model, flops, nbytes)
                rows.append(
                    {
                        "what": f"gemm {name}",
                        "tp": tp,
                        "m": m,
                        "k": k,
                        "n": n,
                        "time_s": t,
                        "predicted_s": pred,
                        "ratio": t / pred,
                        "tflops": flops / t / 1e12,
                    }
                )
    return rows


def decode_layer(torch, device, hidden, heads, kv_heads, head_dim, inter, batch, context):
    """A Llama decoder layer's decode step on one TP shard (heads, kv_heads, inter already divided)."""
    F = torch.nn.functional
    bf = torch.bfloat16
    p = {
        n: torch.randn(*s, dtype=bf, device=device) * 0.02
        for n, s in {
            "qkv": (hidden, (heads + 2 * kv_heads) * head_dim),
            "o": (heads * head_dim, hidden),
            "gate_up": (hidden, 2 * inter),
            "down": (inter, hidden),
        }.items()
    }
    n1 = torch.ones(hidden, dtype=bf, device=device)
    n2 = torch.ones(hidden, dtype=bf, device=device)
    k_cache = torch.randn(batch, kv_heads, context, head_dim, dtype=bf, device=device)
    v_cache = torch.randn_like(k_cache)
    x = torch.randn(batch, hidden, dtype=bf, device=device)

    def rms(t, w):
        return t * torch.rsqrt(t.float().pow(2).mean(-1, keepdim=True) + 1e-5).to(t.dtype) * w

    def step():
        h = rms(x, n1)
        qkv = h @ p["qkv"]
        q, k, v = qkv.split([heads * head_dim, kv_heads * head_dim, kv_heads * head_dim], dim=-1)
        q = q.view(batch, heads, 1, head_dim)
        kk = torch.cat([k_cache, k.view(batch, kv_heads, 1, head_dim)], dim=2)
        vv = torch.cat([v_cache, v.view(batch, kv_heads, 1, head_dim)], dim=2)
        a = F.scaled_dot_product_attention(q, kk, vv, enable_gqa=heads != kv_heads)
        y = x + a.reshape(batch, heads * head_dim) @ p["o"]
        g, u = (rms(y, n2) @ p["gate_up"]).chunk(2, dim=-1)
        return y + (F.silu(g) * u) @ p["down"]

    return step


def check_layers(torch, device, catalog, system, model_name, tps, batches, contexts, iters, shrink=1) -> list[dict]:
    from shardbudget import model as tf
    from shardbudget.step.compose import compile_step

    cfg = tf.load_model(model_name)
    rows = []
    for tp in tps:
        sm = compile_step(cfg, system, tf.Plan(tp), catalog)
        for b in batches:
            for L in contexts:
                heads, kv = cfg.num_heads // tp, max(1, cfg.num_kv_heads // tp)
                step = decode_layer(
                    torch,
                    device,
                    cfg.hidden_size // shrink,
                    max(1, heads // shrink),
                    max(1, kv // shrink),
                    cfg.head_dim,
                    cfg.intermediate_size // tp // shrink,
                    b,
                    L,
                )
                t = _timer(torch, device, step, iters, graphs=device != "cpu")
                ops = tf.layer_work(cfg, "dense", tokens=b, context=L, tp=tp)
                pred = sum(_op_time(sm, op.flops, op.bytes) for op in ops) / (shrink**2 if shrink > 1 else 1)
                rows.append(
                    {
                        "what": "decode layer",
                        "model": model_name,
                        "tp": tp,
                        "batch": b,
                        "context": L,
                        "time_s": t,
                        "predicted_s": pred,
                        "ratio": t / pred,
                        "kernels_modelled": len(ops),
                    }
                )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--system", default="hgx-h200")
    ap.add_argument("--model", default="llama-3.1-70b")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--out", default=None, help="JSON results (default: $OUT/gpu_check.json or print only)")
    ap.add_argument("--smoke", action="store_true", help="tiny shapes on the CPU, to test this script")
    args = ap.parse_args(argv)
    import torch
    from shardbudget.fabric.catalog import load_catalog
    from shardbudget.model import Plan, load_model
    from shardbudget.step.compose import compile_step

    cat = load_catalog()
    system = cat.system(args.system)
    device = "cpu" if args.smoke or not torch.cuda.is_available() else "cuda"
    if device == "cpu" and not args.smoke:
        print("no CUDA GPU: run with --smoke to test the script on the CPU", file=sys.stderr)
        return 2
    model = compile_step(load_model(args.model), system, Plan(1), cat)
    env = {
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "system": args.system,
        "model": args.model,
        "time_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if args.smoke:
        results = {
            "hbm": check_hbm(torch, device, model, 1 << 20, 3),
            "gemms": check_gemms(torch, device, model, 256, 512, (1, 2), (1, 8), 3),
            "layers": check_layers(torch, device, cat, system, args.model, (8,), (1,), (64,), 3, shrink=32),
        }
    else:
        results = {
            "hbm": check_hbm(torch, device, model, 4 << 30, 20),
            "gemms": check_gemms(torch, device, model, 8192, 28672, (1, 2, 4, 8), (1, 16, 64, 256), args.iters),
            "layers": check_layers(
                torch, device, cat, system, args.model, (1, 2, 4, 8), (1, 16, 64), (1024, 4096), args.iters
            ),
        }
    h = results["hbm"]
    print(
        f"HBM copy: {h['measured_bytes_per_s'] / 1e12:.2f} TB/s measured vs {h['predicted_bytes_per_s'] / 1e12:.2f} "
        f"TB/s modelled (x{h['ratio']:.2f})"
    )
    for r in results["gemms"]:
        print(
            f"{r['what']:<13} tp{r['tp']} m={r['m']:<4} {r['time_s'] * 1e6:9.1f} us  model {r['predicted_s'] * 1e6:9.1f} us"
            f"  x{r['ratio']:.2f}  {r['tflops']:.0f} TFLOP/s"
        )
    for r in results["layers"]:
        print(
            f"layer tp{r['tp']} b={r['batch']:<3} L={r['context']:<5} {r['time_s'] * 1e6:9.1f} us  "
            f"model {r['predicted_s'] * 1e6:9.1f} us  x{r['ratio']:.2f}"
        )
    out = args.out or (os.path.join(os.environ["OUT"], "gpu_check.json") if os.environ.get("OUT") else None)
    if out:
        Path(out).parent.mkdir(parents=True, exist_ok=True)
        from shardbudget.atomic import write_atomic

        write_atomic(out, json.dumps({"env": env, **results}, indent=1), force=True)
        print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
