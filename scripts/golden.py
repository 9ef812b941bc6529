"""Golden outputs for refactors: record the CLI's JSON over a fixed grid, then compare two recordings.

    python scripts/golden.py record DIR            # plan / allreduce / explain --json, one file each
    python scripts/golden.py compare OLD NEW [--rtol 1e-9]

The grid (issue 9): `plan --json` for every shipped model on every catalog system at batch
1/8/64/256 and context 1024/8192 (also --nodes 2 where the system has a network), `allreduce --json`
on every system at 2/4/8 GPUs from 8 B to 1 GiB with both --impl values, and `explain --json`.
Each command runs in-process through `shardbudget.cli.main`, so its stdout is exactly the CLI's.
Requests the CLI refuses are recorded as their one-line error, so a refusal that changes shows up.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
from pathlib import Path

from shardbudget import cli
from shardbudget.hardware import load_catalog
try:
    from shardbudget.model import list_models
except ImportError:  # before the model/ package existed
    from shardbudget.transformer import list_models

BATCHES = ("1", "8", "64", "256")
CONTEXTS = ("1024", "8192")


def _run(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    if code != 0:
        return {"exit": code, "error": err.getvalue().strip()}
    return {"exit": 0, "json": json.loads(out.getvalue())}


def requests() -> dict[str, list[str]]:
    """Every request of the grid, by file name."""
    cat = load_catalog()
    out: dict[str, list[str]] = {}
    batch_args = [a for b in BATCHES for a in ("--batch", b)]
    for system in sorted(cat.systems):
        node_counts = (1, 2) if cat.system(system).nic_fabric is not None else (1,)
        for model in list_models():
            for ctx in CONTEXTS:
                for nodes in node_counts:
                    key = f"plan__{model}__{system}__ctx{ctx}__n{nodes}"
                    out[key] = ["plan", "--model", model, "--system", system, "--nodes", str(nodes),
                                "--context", ctx, "--json", *batch_args]
        for gpus in (2, 4, 8):
            if gpus > cat.system(system).gpus_per_node:
                continue
            for impl in ("nccl", "custom"):
                key = f"allreduce__{system}__g{gpus}__{impl}"
                out[key] = ["allreduce", "--system", system, "--gpus", str(gpus), "--impl", impl,
                            "--size", "8B:1GiB", "--json"]
    for model in ("llama-3.1-70b", "deepseek-v3", "llama-3.1-8b"):
        for batch in ("1", "64"):
            out[f"explain__{model}__b{batch}"] = ["explain", "--model", model, "--batch", batch, "--json"]
    return out


def record(folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    reqs = requests()
    for i, (key, argv) in enumerate(reqs.items()):
        (folder / f"{key}.json").write_text(json.dumps({"argv": argv, **_run(argv)}, indent=1, sort_keys=True))
        if i % 100 == 0:
            print(f"{i}/{len(reqs)}", file=sys.stderr)
    print(f"recorded {len(reqs)} requests in {folder}", file=sys.stderr)


def differences(a, b, rtol: float, where: str = "") -> list[str]:
    """Paths where two JSON values differ beyond rtol (numbers) or at all (everything else)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = [f"{where}.{k}: only in {'old' if k in a else 'new'}" for k in sorted(set(a) ^ set(b))]
        for k in sorted(set(a) & set(b)):
            out += differences(a[k], b[k], rtol, f"{where}.{k}")
        return out
    if isinstance(a, list) and isinstance(b, list):
        if len(a) != len(b):
            return [f"{where}: {len(a)} items vs {len(b)}"]
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in differences(x, y, rtol, f"{where}[{i}]")]
    numbers = (int, float)
    if isinstance(a, numbers) and isinstance(b, numbers) and not isinstance(a, bool) and not isinstance(b, bool):
        if math.isclose(a, b, rel_tol=rtol, abs_tol=1e-300):
            return []
        return [f"{where}: {a!r} vs {b!r}"]
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


def compare(old: Path, new: Path, rtol: float) -> int:
    changed = 0
    names = sorted({p.name for p in old.glob("*.json")} | {p.name for p in new.glob("*.json")})
    for name in names:
        if not (old / name).exists() or not (new / name).exists():
            print(f"{name}: only in {'old' if (old / name).exists() else 'new'}")
            changed += 1
            continue
        diffs = differences(json.loads((old / name).read_text()), json.loads((new / name).read_text()), rtol)
        if diffs:
            changed += 1
            print(f"{name}: {len(diffs)} differences, e.g. {diffs[0]}")
    print(f"{changed} of {len(names)} outputs differ beyond rtol {rtol:g}")
    return 1 if changed else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    rec = sub.add_parser("record")
    rec.add_argument("folder", type=Path)
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("old", type=Path)
    cmp_.add_argument("new", type=Path)
    cmp_.add_argument("--rtol", type=float, default=1e-9)
    args = ap.parse_args()
    if args.cmd == "record":
        record(args.folder)
        return 0
    return compare(args.old, args.new, args.rtol)


if __name__ == "__main__":
    sys.exit(main())
