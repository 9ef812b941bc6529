"""Soak: the harness over every size for many iterations, repeated; the planner over a million configs.

Reports, for the harness (gloo, 2 and 4 processes, 8 B to 64 MiB), the spread of each size's median
across repeats and the peak memory of the workers per repeat (it must stay flat); for the planner,
the memory growth while evaluating 1,000,000 configurations in chunks (bound: 256 MiB).

    python benchmarks/soak.py [--repeats 3] [--iters 20] [--quick]
Exits non-zero if memory grows past its bound or a run fails.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import threading
import tracemalloc
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

PLANNER_BOUND_BYTES = 256 * 2**20
WORKER_GROWTH_BOUND = 0.10  # the workers' peak RSS may not grow more than 10% from the first repeat to the last


def _descendants_rss_bytes(root: int) -> int:
    """Sum of VmRSS over every live descendant of `root` (the harness's worker processes)."""
    parents: dict[int, int] = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                parents[int(d)] = int(Path(f"/proc/{d}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                pass
    tree, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - tree
        tree |= frontier
    total = 0
    for pid in tree:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            pass
    return total


class RssSampler(threading.Thread):
    """Samples the workers' total RSS twice a second while a run is going."""

    def __init__(self):
        super().__init__(daemon=True)
        self.samples: list[int] = []
        self.stop = threading.Event()

    def run(self):
        while not self.stop.wait(0.5):
            rss = _descendants_rss_bytes(os.getpid())
            if rss:
                self.samples.append(rss)


def soak_harness(nproc: int, repeats: int, iters: int, sizes: str) -> dict:
    from shardbudget.measure.harness.run import run_measure
    from shardbudget.units import parse_size_range

    sizes_bytes = parse_size_range(sizes)
    medians: list[list[float]] = []
    per_repeat_samples: list[list[int]] = []
    for k in range(repeats):
        t0 = time.monotonic()
        sampler = RssSampler()
        sampler.start()
        result = run_measure(
            backend="gloo",
            nproc=nproc,
            op="all-reduce",
            sizes_bytes=sizes_bytes,
            iters=iters,
            warmup=3,
            progress=False,
            timeout_s=300,
        )
        sampler.stop.set()
        sampler.join()
        medians.append([r.median_s for r in result.results])
        per_repeat_samples.append(sampler.samples)
        peak = max(sampler.samples, default=0)
        print(
            f"  nproc {nproc} repeat {k + 1}/{repeats}: {len(result.results)} sizes in {time.monotonic() - t0:.1f} s, "
            f"workers' RSS peak {peak / 2**20:.0f} MiB",
            flush=True,
        )
    per_size = np.array(medians)  # repeats x sizes
    spread = (per_size.max(axis=0) - per_size.min(axis=0)) / np.median(per_size, axis=0)
    # flat memory: each repeat starts fresh workers that grow with the buffer sizes; a leak shows as
    # a peak that climbs from repeat to repeat
    peaks = [max(chunk, default=0) for chunk in per_repeat_samples]
    first, last = peaks[0], peaks[-1]
    return {
        "nproc": nproc,
        "sizes": [int(s) for s in sizes_bytes],
        "medians_s": medians,
        "spread_median": float(np.median(spread)),
        "spread_max": float(spread.max()),
        "worst_size": int(sizes_bytes[int(spread.argmax())]),
        "rss_peak_per_repeat_bytes": peaks,
        "rss_growth": (last - first) / first if first else 0.0,
    }


def soak_planner(total_configs: int = 1_000_000) -> dict:
    """Evaluate `total_configs` (plan x batch x context) in chunks and watch the heap."""
    from shardbudget.fabric.catalog import load_catalog
    from shardbudget.model import Plan, load_model
    from shardbudget.step.compose import compile_step

    cat = load_catalog()
    cfg = load_model("llama-3.1-70b")
    system = cat.system("hgx-h100")
    models = [compile_step(cfg, system, Plan(tp), cat) for tp in (1, 2, 4, 8)]
    batch = np.arange(1, 251, dtype=float)[:, None]
    tracemalloc.start()
    done, peaks = 0, []
    while done < total_configs:
        for sm in models:
            context = np.linspace(128, 32768, 250)[None, :]  # 250 x 250 = 62,500 configs per call
            out = sm.evaluate(batch, context)
            done += out.total_s.size
        peaks.append(tracemalloc.get_traced_memory()[1])
    tracemalloc.stop()
    return {
        "configs": done,
        "peak_heap_bytes": max(peaks),
        "first_peak_bytes": peaks[0],
        "bound_bytes": PLANNER_BOUND_BYTES,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--sizes", default="8B:64MiB")
    ap.add_argument("--quick", action="store_true", help="2 repeats, 5 iterations, up to 1 MiB (for a smoke run)")
    args = ap.parse_args(argv)
    if args.quick:
        args.repeats, args.iters, args.sizes = 2, 5, "8B:1MiB"
    ok = True
    report: dict = {"harness": [], "planner": None}
    for nproc in (2, 4):
        print(f"soak: harness, gloo, {nproc} processes, {args.sizes}, {args.iters} iterations x {args.repeats} repeats")
        r = soak_harness(nproc, args.repeats, args.iters, args.sizes)
        report["harness"].append(r)
        flat = r["rss_growth"] <= WORKER_GROWTH_BOUND
        ok &= flat
        print(
            f"soak: nproc {nproc}: spread of per-size medians across repeats: median {100 * r['spread_median']:.1f}%, "
            f"worst {100 * r['spread_max']:.1f}% (at {r['worst_size']} B); workers' peak RSS per repeat "
            f"{', '.join(f'{x / 2**20:.0f}' for x in r['rss_peak_per_repeat_bytes'])} MiB: "
            f"{'flat' if flat else 'GROWING'}"
        )
    p = soak_planner()
    report["planner"] = p
    within = p["peak_heap_bytes"] <= PLANNER_BOUND_BYTES
    ok &= within
    print(
        f"soak: planner evaluated {p['configs']:,} configurations; peak heap {p['peak_heap_bytes'] / 2**20:.1f} MiB "
        f"(first chunk {p['first_peak_bytes'] / 2**20:.1f} MiB, bound {PLANNER_BOUND_BYTES / 2**20:.0f} MiB): "
        f"{'within bound' if within else 'OVER BOUND'}"
    )
    out = Path(__file__).with_name("soak_results.json")
    from shardbudget.atomic import write_atomic

    write_atomic(out, json.dumps(report, indent=1), force=True)
    print(f"soak: {'PASS' if ok else 'FAIL'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
