"""Golden outputs for refactors: record the CLI's JSON over a fixed grid, then compare two recordings.

    python scripts/golden.py record DIR            # one file per request
    python scripts/golden.py compare OLD NEW [--rtol 1e-9]

The grid (issue 9): `plan --json` for every shipped model on every catalog system at batch
1/8/64/256 and context 1024/8192 (also --nodes 2 where the system has a network), `allreduce --json`
on every system at 2/4/8 GPUs from 8 B to 1 GiB with both --impl values, and `explain --json`.
Issue 18 adds `deploy --json` (dense, MoE, PCIe, speculative, disaggregated, multi-node, each engine),
the text of `plan`, `explain` and `deploy` at a fixed width, and the bytes of `report` and `demo` HTML.
Each command runs in-process through `shardbudget.cli.main`, so its stdout is exactly the CLI's.
Requests the CLI refuses are recorded as their one-line error, so a refusal that changes shows up.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import sys
import tempfile
from pathlib import Path

from shardbudget import cli, list_models, load_catalog

BATCHES = ("1", "8", "64", "256")
CONTEXTS = ("1024", "8192")


DEPLOYS = {
    "dense_h100_16": ["--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "16"],
    "dense_h100_64": ["--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "64"],
    "moe_h200_16": ["--model", "deepseek-v3", "--system", "hgx-h200", "--gpus", "16"],
    "pcie_8b": ["--model", "llama-3.1-8b", "--system", "l40s-pcie-nps1-degraded", "--gpus", "8"],
    "spec_eagle": ["--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "8", "--speculative", "eagle"],
    "spec_mtp_sglang": [
        "--model",
        "deepseek-v3",
        "--system",
        "hgx-h200",
        "--gpus",
        "8",
        "--speculative",
        "mtp",
        "--engine",
        "sglang",
    ],
    "disagg": ["--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "16", "--disaggregate", "8:8"],
    "trtllm_b200": ["--model", "qwen3-235b-a22b", "--system", "hgx-b200", "--gpus", "8", "--engine", "trtllm"],
    "budgets": [
        "--model",
        "llama-3.1-8b",
        "--system",
        "hgx-h100",
        "--gpus",
        "8",
        "--budget",
        "10ms",
        "--ttft-budget",
        "200ms",
        "--input-len",
        "4096",
        "--output-len",
        "256",
    ],
    "nvl72": ["--model", "llama-3.1-405b", "--system", "gb200-nvl72", "--gpus", "72", "--dtype", "fp8"],
}
TEXTS = {
    "plan_text_h100": ["plan", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--batch", "1", "--batch", "64"],
    "plan_text_moe": ["plan", "--model", "deepseek-v3", "--system", "hgx-h200", "--batch", "1", "--batch", "64"],
    "plan_text_pcie2": [
        "plan",
        "--model",
        "llama-3.1-8b",
        "--system",
        "l40s-pcie-nps1-degraded",
        "--nodes",
        "2",
        "--memory",
    ],
    "explain_text": ["explain", "--model", "llama-3.1-70b"],
    "explain_text_two": ["explain", "--model", "deepseek-v3", "--system", "hgx-h200", "--system", "mi300x"],
    "deploy_text_dense": ["deploy", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "16"],
    "deploy_text_moe": ["deploy", "--model", "deepseek-v3", "--system", "hgx-h200", "--gpus", "16"],
    "allreduce_text": ["allreduce", "--system", "hgx-h100", "--gpus", "8"],
    "fabrics_text": ["fabrics"],
}
# Issue 32 (one request): every option the shared group carries, on every command that answers a
# planning question, so that moving the options into one request shows any change of meaning.
OPTIONS = {
    "plan_served": [
        "plan",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "-b",
        "1",
        "-b",
        "32",
        "--input-len",
        "2048",
        "--output-len",
        "256",
        "--json",
    ],
    "plan_require": [
        "plan",
        "-m",
        "llama-3.1-70b",
        "-s",
        "l40s-pcie-nps1-degraded",
        "-b",
        "8",
        "--require-tp",
        "8",
        "--json",
    ],
    "plan_knobs": [
        "plan",
        "-m",
        "llama-3.1-8b",
        "-s",
        "hgx-h100",
        "-b",
        "8",
        "--kv-dtype",
        "fp8",
        "--overlap",
        "tbo",
        "--sequence-parallel",
        "--gpu-memory-utilization",
        "0.8",
        "--json",
    ],
    "plan_nccl": [
        "plan",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "--nodes",
        "2",
        "-b",
        "16",
        "--nccl",
        "2.27",
        "--nccl-symmetric",
        "--json",
    ],
    "plan_impl_sglang": [
        "plan",
        "-m",
        "qwen3-235b-a22b",
        "-s",
        "hgx-h200",
        "-b",
        "4",
        "--impl",
        "custom",
        "--engine",
        "sglang",
        "--dtype",
        "fp8",
        "--json",
    ],
    "plan_eager_ttft": [
        "plan",
        "-m",
        "llama-3.1-8b",
        "-s",
        "l40s-pcie-p2p",
        "-b",
        "2",
        "--engine",
        "eager",
        "--ttft-budget",
        "1s",
        "--budget",
        "20ms",
        "--comm-threshold",
        "0.2",
        "--knee-threshold",
        "0.05",
        "--pp-all",
        "--json",
    ],
    "deploy_rate": ["deploy", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--rate", "20", "--json"],
    "deploy_users": ["deploy", "-m", "llama-3.1-8b", "-s", "l40s-pcie-nps1-degraded", "--users", "64", "--json"],
    "deploy_knobs": [
        "deploy",
        "-m",
        "llama-3.1-8b",
        "-s",
        "hgx-h100",
        "--gpus",
        "8",
        "--kv-dtype",
        "fp8",
        "--overlap",
        "tbo",
        "--gpu-memory-utilization",
        "0.8",
        "--impl",
        "custom",
        "--nccl",
        "2.28",
        "--context",
        "8192",
        "--json",
    ],
    "deploy_batch": [
        "deploy",
        "-m",
        "deepseek-v3",
        "-s",
        "gb200-nvl72",
        "--gpus",
        "72",
        "--batch",
        "16",
        "--engine",
        "trtllm",
        "--json",
    ],
    "explain_nvl72": ["explain", "-m", "llama-3.1-405b", "-s", "gb200-nvl72", "--dtype", "fp8", "--json"],
    "explain_pcie": [
        "explain",
        "-m",
        "llama-3.1-70b",
        "-s",
        "l40s-pcie-nps1-degraded",
        "-b",
        "64",
        "--engine",
        "sglang",
        "--json",
    ],
    "explain_nodes": [
        "explain",
        "-m",
        "llama-3.1-8b",
        "-s",
        "hgx-h100",
        "--nodes",
        "2",
        "--budget",
        "10ms",
        "--context",
        "2048",
        "--json",
    ],
    "compare_two": ["compare", "-s", "hgx-h100", "-s", "l40s-pcie-nps1-degraded", "--json"],
    "compare_custom": [
        "compare",
        "-s",
        "hgx-h200",
        "-s",
        "hgx-b200",
        "-m",
        "llama-3.1-8b",
        "-b",
        "1",
        "-b",
        "8",
        "--impl",
        "custom",
        "--json",
    ],
    "compare_nodes": ["compare", "-s", "hgx-h100", "-s", "hgx-b200", "--nodes", "2", "--json"],
    "compare_text": ["compare", "-s", "hgx-h100", "-s", "l40s-pcie-nps1-degraded"],
    "allreduce_engine": [
        "allreduce",
        "-s",
        "hgx-h100",
        "--gpus",
        "8",
        "--impl",
        "sglang",
        "--size",
        "8B:64MiB",
        "--json",
    ],
}
REPORTS = {
    "report_two": ["report", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--system", "l40s-pcie-nps1-degraded"],
    "report_moe": ["report", "--model", "deepseek-v3", "--system", "hgx-h200", "--system", "hgx-h200:2"],
    "demo": ["demo"],
    "report_options": [
        "report",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "-s",
        "l40s-pcie-p2p",
        "--engine",
        "sglang",
        "--impl",
        "custom",
        "--dtype",
        "fp8",
        "-b",
        "8",
        "--context",
        "2048",
        "--budget",
        "40ms",
        "--budget-steps",
        "6",
    ],
}


def _run(argv: list[str]) -> dict:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    if code != 0:
        return {"exit": code, "error": err.getvalue().strip()}
    if "--json" in argv:
        return {"exit": 0, "json": json.loads(out.getvalue())}
    return {"exit": 0, "text": out.getvalue()}


def _run_html(argv: list[str]) -> dict:
    """A report's bytes: written to a temporary file, read back whole."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "report.html"
        result = _run([*argv, "--out", str(path)])
        if result["exit"] == 0:
            result["text"] = result["text"].replace(str(path), "REPORT.html")
            result["html"] = path.read_text(encoding="utf-8")
        return result


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
                    out[key] = [
                        "plan",
                        "--model",
                        model,
                        "--system",
                        system,
                        "--nodes",
                        str(nodes),
                        "--context",
                        ctx,
                        "--json",
                        *batch_args,
                    ]
        for gpus in (2, 4, 8):
            if gpus > cat.system(system).gpus_per_node:
                continue
            for impl in ("nccl", "custom"):
                key = f"allreduce__{system}__g{gpus}__{impl}"
                out[key] = [
                    "allreduce",
                    "--system",
                    system,
                    "--gpus",
                    str(gpus),
                    "--impl",
                    impl,
                    "--size",
                    "8B:1GiB",
                    "--json",
                ]
    for model in ("llama-3.1-70b", "deepseek-v3", "llama-3.1-8b"):
        for batch in ("1", "64"):
            out[f"explain__{model}__b{batch}"] = ["explain", "--model", model, "--batch", batch, "--json"]
    for name, args in DEPLOYS.items():
        out[f"deploy__{name}"] = ["deploy", *args, "--json"]
    out.update(TEXTS)
    out.update(OPTIONS)
    out.update(REPORTS)
    return out


def record(folder: Path, only: str | None = None) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    os.environ["COLUMNS"] = "160"  # the text outputs at one fixed width
    reqs = {k: v for k, v in requests().items() if only is None or re.search(only, k)}
    for i, (key, argv) in enumerate(reqs.items()):
        result = _run_html(argv) if key in REPORTS else _run(argv)
        (folder / f"{key}.json").write_text(json.dumps({"argv": argv, **result}, indent=1, sort_keys=True))
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
    if isinstance(a, str) and isinstance(b, str) and a != b and ("\n" in a or len(a) > 200):
        return [f"{where}: {_text_diff(a, b)}"]
    return [] if a == b else [f"{where}: {a!r} vs {b!r}"]


def _text_diff(a: str, b: str, context: int = 80) -> str:
    """Where two long texts (an HTML page, a table) first differ: a short window of each."""
    i = next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    lo = max(0, i - context)
    return f"at character {i}: ...{a[lo : i + context]!r}... vs ...{b[lo : i + context]!r}..."


def compare(old: Path, new: Path, rtol: float, partial: bool = False) -> int:
    changed = 0
    names = sorted(
        {p.name for p in new.glob("*.json")}
        if partial
        else {p.name for p in old.glob("*.json")} | {p.name for p in new.glob("*.json")}
    )
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
    rec.add_argument("--only", help="record only the requests whose file name matches this regular expression")
    cmp_ = sub.add_parser("compare")
    cmp_.add_argument("old", type=Path)
    cmp_.add_argument("new", type=Path)
    cmp_.add_argument("--rtol", type=float, default=1e-9)
    cmp_.add_argument("--partial", action="store_true", help="compare only the requests NEW recorded (record --only)")
    args = ap.parse_args()
    if args.cmd == "record":
        record(args.folder, args.only)
        return 0
    return compare(args.old, args.new, args.rtol, args.partial)


if __name__ == "__main__":
    sys.exit(main())
