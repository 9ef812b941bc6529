"""Bad input, command by command: every case must exit 2 with one line on stderr that names the bad
value (and suggests the closest name where there is one), print no traceback and no "internal error",
and leave every file in the working folder exactly as it was (an existing --out is not touched, no
half-written or temporary file is left behind).

The cases marked `SUB` run the real console script in a subprocess (at least one per command); the
others call `shardbudget.cli.main` in-process, the same entry point without the ~1 s interpreter
start, with the working folder switched to the same scratch folder.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shardbudget import cli

SUB = "subprocess"
LLAMA_8B = Path(cli.__file__).parents[1] / "catalog" / "models" / "llama-3.1-8b.json"


def _log(rows: int, ranks: int = 8) -> str:
    """A small nccl-tests all_reduce_perf log of one node, algbw/busbw consistent with size/time."""
    lines = [
        "# nThread 1 nGpus 1 minBytes 8 maxBytes 1048576 step: 4(factor) warmup iters: 5 iters: 20 "
        "agg iters: 1 validation: 1 graph: 0",
        "#",
        "# Using devices",
    ]
    lines += [
        f"#  Rank {r:2d} Group  0 Pid {100 + r:6d} on     node-1 device {r:2d} [0x{r:02x}] NVIDIA H100 80GB HBM3"
        for r in range(ranks)
    ]
    lines += [
        "#",
        "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
        "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
    ]
    for k in range(rows):
        size = 8 * 4**k
        t_us = 20.0 + size / 150e3  # 20 us + size at 150 GB/s
        alg = size / t_us / 1e3
        bus = alg * 2 * (ranks - 1) / ranks
        lines.append(
            f"{size:12d} {size // 4:13d}     float     sum      -1  {t_us:7.2f}  {alg:6.2f}  {bus:6.2f}      0"
            f"  {t_us:7.2f}  {alg:6.2f}  {bus:6.2f}      0"
        )
    lines += ["# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 1.0", "#"]
    return "\n".join(lines) + "\n"


FABRIC = """[fabrics.myfab]
kind = "nvlink"
nccl_link = "nvlink"
bandwidth = "900 GB/s"
bandwidth_direction = "bidirectional"
source = "datasheet"
"""
SYSTEM = """[systems.mysys]
gpu = "h100-sxm"
gpus_per_node = 8
topology = "switch"
intra_fabric = "nvswitch-gen3"
source = "datasheet"
"""
GPU = """[gpus.mygpu]
arch = "hopper"
memory = "80 GB"
memory_bandwidth = "3.35 TB/s"
bf16_dense = "989 TFLOP/s"
source = "datasheet"
"""


def _config(**changes) -> str:
    raw = json.loads(LLAMA_8B.read_text())
    for key, value in changes.items():
        if value is None:
            raw.pop(key, None)
        else:
            raw[key] = value
    return json.dumps(raw)


_GOOD_LOG = _log(6)
_TOPO = (
    "\tGPU0\tGPU1\tGPU2\tGPU3\tCPU Affinity\tNUMA Affinity\n"
    "GPU0\t X \tPIX\tSYS\tSYS\t0-15\t0\nGPU1\tPIX\t X \tSYS\tSYS\t0-15\t0\n"
    "GPU2\tSYS\tSYS\t X \tPIX\t16-31\t1\nGPU3\tSYS\tSYS\tPIX\t X \t16-31\t1\n"
)
FILES: dict[str, str | bytes] = {
    # catalogs
    "malformed.toml": "[fabrics.x\nkind = ",
    "truncated.toml": FABRIC[:70],
    "binary.toml": bytes(range(256)) * 2,
    "wrong-unit.toml": FABRIC.replace('"900 GB/s"', '"900 GHz"'),
    "bare-rate.toml": FABRIC.replace('"900 GB/s"', '"900"'),
    "negative-rate.toml": FABRIC.replace('"900 GB/s"', '"-900 GB/s"'),
    "no-source.toml": FABRIC.replace('source = "datasheet"\n', ""),
    "blank-source.toml": FABRIC.replace('"datasheet"', '"  "'),
    "above-peak.toml": FABRIC + 'achievable_bandwidth = "2000 GB/s"\n',
    "bare-memory.toml": GPU.replace('"80 GB"', "80"),
    "bad-fabric-ref.toml": SYSTEM.replace("nvswitch-gen3", "nvswitch-gen9"),
    "huge-node.toml": SYSTEM.replace("gpus_per_node = 8", "gpus_per_node = 1000000000000"),
    "bad-section.toml": FABRIC.replace("[fabrics.", "[fabric."),
    "nccl-not-table.toml": "[nccl]\nhw_latency_us = 3\n",
    "nccl-typo.toml": "[nccl.calibrated]\nnvls_latncy_us = 5.0\n",
    "nccl-negative.toml": "[nccl.base_latency_us.ring]\nll = -5.0\n",
    # model configs
    "no-layers.json": _config(num_hidden_layers=None),
    "zero-layers.json": _config(num_hidden_layers=0),
    "heads.json": _config(hidden_size=4097),
    "neg-vocab.json": _config(vocab_size=-5),
    "string-int.json": _config(num_hidden_layers="32"),
    "nan.json": _config(hidden_size=float("nan")),  # json.dumps writes the non-standard NaN literal
    "many-layers.json": _config(num_hidden_layers=2**31 - 1),
    "truncated.json": _config()[:60],
    # measurements
    "good.log": _GOOD_LOG,
    "empty.log": "",
    "binary.log": bytes(range(256)) * 4,
    "headers-only.log": _log(0),
    "truncated.log": _GOOD_LOG[: _GOOD_LOG.index("\n", _GOOD_LOG.index("  float")) + 40],  # 1 row, then cut
    "not-nccl.json": '{"model": "resnet50", "results": [{"accuracy": 0.76}]}',
    "nccl-cut.json": '{"version":3,"start_time":"2026-07-10 10:00:00","args":["./all_reduce_perf"',
    # topologies (nvidia-smi topo -m)
    "topo.txt": _TOPO,
    "topo-ragged.txt": _TOPO.replace("GPU2\tSYS\tSYS\t X \tPIX\t16-31\t1", "GPU2\tSYS"),
    "topo-token.txt": _TOPO.replace("GPU1\tPIX\t X \tSYS", "GPU1\tPIX\t X \tFOO"),
    "topo-asym.txt": _TOPO.replace("GPU1\tPIX\t X \tSYS", "GPU1\tSYS\t X \tSYS"),
    "topo-none.txt": "nvidia-smi: command not found\n",
    "topo-partial.txt": _TOPO.replace("GPU0\t X \tPIX\tSYS", "GPU0\t X \tPIX\tNV4").replace(
        "GPU2\tSYS\tSYS", "GPU2\tNV4\tSYS"
    ),
    # outputs that exist and must survive
    "existing.toml": "# a profile written earlier\n",
    "existing.json": '{"earlier": true}\n',
}

# (argv, substrings stderr must contain, how to run). Paths are relative to the scratch folder.
CASES = [
    # unknown names, with the closest suggested
    (
        ["plan", "-m", "llama-3.1-7b", "-s", "hgx-h100"],
        ["unknown model 'llama-3.1-7b'", "did you mean 'llama-3.1-70b'"],
        SUB,
    ),
    (["plan", "-m", "llama-3.1-70b", "-s", "hgx-h10"], ["unknown system 'hgx-h10'", "did you mean 'hgx-h100'"], None),
    (["allreduce", "-s", "hgx-h100", "--op", "all-reduc"], ["'all-reduc'", "did you mean 'all-reduce'"], SUB),
    (["allreduce", "-s", "hgx-h100", "--algo", "rng"], ["unknown algorithm 'rng'", "did you mean 'ring'"], None),
    (["allreduce", "-s", "hgx-h100", "--protocol", "ll129"], ["'ll129'", "did you mean 'll128'"], None),
    (["allreduce", "-s", "hgx-h100", "--dtype", "bf61"], ["unknown dtype 'bf61'", "did you mean 'bf16'"], None),
    (["allreduce", "-s", "hgx-h100", "--impl", "cuda"], ["'cuda'", "did you mean 'custom'"], None),
    (
        ["allreduce", "-s", "l40s-pcie-switch", "--op", "all-to-all", "--algo", "deepep-ll"],
        ["deepep-ll is not possible", "need NVLink"],
        None,
    ),
    (
        ["allreduce", "-s", "hgx-h100", "--op", "all-to-all", "--algo", "deepep-ll", "--protocol", "simple"],
        ["no NCCL protocol", "not simple"],
        None,
    ),
    (
        ["allreduce", "-s", "hgx-h100", "--algo", "deepep-normal"],
        ["deepep-normal runs MoE dispatch", "not all-reduce"],
        None,
    ),
    (
        ["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "16", "--disaggregate", "auto", "--batch", "4"],
        ["--disaggregate auto", "give --batch or --disaggregate, not both"],
        None,
    ),
    (
        [
            "deploy",
            "-m",
            "llama-3.1-8b",
            "-s",
            "hgx-h100",
            "--gpus",
            "16",
            "--disaggregate",
            "auto",
            "--context",
            "4096",
        ],
        ["--disaggregate auto", "not --context"],
        None,
    ),
    (
        ["plan", "-m", "deepseek-v3", "-s", "hgx-h200", "--moe-a2a", "deepep-lowlat"],
        ["unknown MoE all-to-all 'deepep-lowlat'", "did you mean 'deepep-ll'"],
        None,
    ),
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--scheduler-steps", "8"],
        ["--scheduler-steps 8: engine 'vllm' runs one decode step per scheduler call", "vllm-0.6"],
        None,
    ),
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--dtype", "int5"],
        ["unknown dtype 'int5'", "did you mean"],
        None,
    ),
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--kv-dtype", "fp9"],
        ["unknown dtype 'fp9'", "did you mean 'fp8'"],
        None,
    ),
    (
        ["compare", "-s", "hgx-h100", "-s", "l40s-pcei"],
        ["unknown system 'l40s-pcei'", "did you mean 'l40s-pcie-p2p', 'l40s-pcie-switch'"],
        SUB,
    ),
    (
        ["compare", "-s", "hgx-h100", "--model", "qwen3-23b"],
        ["unknown model 'qwen3-23b'", "did you mean 'qwen3-32b'"],
        None,
    ),
    (["explain", "-m", "mixtral-8x7"], ["unknown model 'mixtral-8x7'", "did you mean 'mixtral-8x7b'"], SUB),
    (["explain", "-s", "hgx-h10"], ["unknown system 'hgx-h10'", "did you mean 'hgx-h100'"], SUB),
    (["explain", "-s", "hgx-h100", "-s", "hgx-h100"], ["system listed twice"], None),
    (["explain", "-s", "mi300x", "--nodes", "2", "--engine", "vlm"], ["'vlm'", "did you mean 'vllm'"], None),
    (["explain", "-s", "hgx-h100", "--budget", "30"], ["--budget"], None),
    # issue 34: a release past the catalog's tables was priced silently as the newest
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--nccl", "2.40"],
        ["'2.40' is newer than 2.30", "give 2.30"],
        None,
    ),
    (["allreduce", "-s", "hgx-h100", "--nccl", "2.31.1"], ["'2.31.1' is newer than 2.30"], None),
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--nccl", "2.17"],
        ["'2.17' is older than 2.18", "give a release from 2.18 to 2.30, the newest the catalog knows"],
        None,
    ),
    (
        ["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "8", "--nccl", "3.0"],
        ["only NCCL 2.x releases are modelled", "from 2.18 to 2.30, the newest"],
        None,
    ),
    (["allreduce", "-s", "hgx-h100", "--nccl", "two"], ["not like 2.27 or 2.27.3", "to 2.30, the newest"], None),
    (
        ["fit", "good.log", "--name", "mine", "--base-system", "hgx-h10"],
        ["unknown system 'hgx-h10'", "did you mean 'hgx-h100'"],
        None,
    ),
    (["measure", "--op", "all-reduc", "--gpus", "2"], ["'all-reduc'"], None),
    (["measure", "--backend", "mpi", "--gpus", "2"], ["backend 'mpi'", "gloo"], None),
    (["models", "--bogus"], ["No such option: --bogus"], SUB),
    # catalogs: malformed, truncated, wrong units, negative rates, missing source, bad references
    (
        ["fabrics", "--catalog", "bad-fabric-ref.toml"],
        ["systems.mysys.intra_fabric: unknown fabric 'nvswitch-gen9'", "did you mean", "'nvswitch-gen3'"],
        SUB,
    ),
    (["fabrics", "--catalog", "malformed.toml"], ["malformed.toml", "not valid TOML"], None),
    (["fabrics", "--catalog", "truncated.toml"], ["truncated.toml", "not valid TOML"], None),
    (["fabrics", "--catalog", "binary.toml"], ["binary.toml", "cannot read"], None),
    (["fabrics", "--catalog", "missing.toml"], ["missing.toml", "no such catalog file"], None),
    (["fabrics", "--catalog", "wrong-unit.toml"], ["fabrics.myfab.bandwidth", "'900 GHz'", "unit 'GHz'"], None),
    (["fabrics", "--catalog", "bare-rate.toml"], ["fabrics.myfab.bandwidth", "'900' has no unit"], None),
    (["fabrics", "--catalog", "negative-rate.toml"], ["'-900 GB/s' must be greater than zero"], None),
    (["fabrics", "--catalog", "no-source.toml"], ["fabrics.myfab", "missing field 'source'"], None),
    (["fabrics", "--catalog", "blank-source.toml"], ["fabrics.myfab.source", "must name where"], None),
    (["fabrics", "--catalog", "above-peak.toml"], ["achievable_bandwidth (2 TB/s) exceeds the peak"], None),
    (["fabrics", "--catalog", "bare-memory.toml"], ["gpus.mygpu.memory", "80", "has no unit"], None),
    (["fabrics", "--catalog", "huge-node.toml"], ["gpus_per_node", "1000000000000", "at most"], None),
    (["fabrics", "--catalog", "bad-section.toml"], ["unknown section(s) fabric"], None),
    (
        ["allreduce", "-s", "hgx-h100", "--catalog", "nccl-not-table.toml"],
        ["nccl.hw_latency_us", "expected a table, got 3"],
        None,
    ),
    (
        ["allreduce", "-s", "hgx-h100", "--catalog", "nccl-typo.toml"],
        ["'nvls_latncy_us'", "did you mean 'nvls_latency_us'"],
        None,
    ),
    (["allreduce", "-s", "hgx-h100", "--catalog", "nccl-negative.toml"], ["base_latency_us.ring.ll", "got -5.0"], None),
    # config.json files with missing or absurd fields
    (["plan", "-m", "no-layers.json", "-s", "hgx-h100"], ["missing 'num_hidden_layers'", "no-layers.json"], None),
    (["plan", "-m", "zero-layers.json", "-s", "hgx-h100"], ["'num_hidden_layers'", "got 0"], SUB),
    (
        ["plan", "-m", "heads.json", "-s", "hgx-h100"],
        ["hidden_size (4097) is not divisible by num_attention_heads (32)"],
        None,
    ),
    (["plan", "-m", "neg-vocab.json", "-s", "hgx-h100"], ["'vocab_size'", "got -5"], None),
    (["plan", "-m", "string-int.json", "-s", "hgx-h100"], ["'num_hidden_layers'", "got '32'"], None),
    (["plan", "-m", "nan.json", "-s", "hgx-h100"], ["'hidden_size'", "got nan"], None),
    (["plan", "-m", "many-layers.json", "-s", "hgx-h100"], ["'num_hidden_layers'", "got 2147483647"], None),
    (["explain", "-m", "truncated.json"], ["truncated.json is not valid JSON"], None),
    (["plan", "-m", "no-such-dir/config.json", "-s", "hgx-h100"], ["no model config at no-such-dir/config.json"], None),
    # Hugging Face ids: illegal characters; not cached (offline) says where it looked
    (
        ["plan", "-m", "meta-llama/Llama 3.1@70B", "-s", "hgx-h100"],
        ["'meta-llama/Llama 3.1@70B' is not a Hugging Face model id", "' ', '@' not allowed"],
        SUB,
    ),
    (["deploy", "-m", "org/na--me", "-s", "hgx-h100", "--gpus", "8"], ["is not a Hugging Face model id", "'--'"], None),
    (
        ["plan", "-m", "shardbudget-test/No-Such-Model", "-s", "hgx-h100"],
        [
            "not in the Hugging Face cache",
            "models--shardbudget-test--No-Such-Model/snapshots/*/config.json",
            "--download",
        ],
        None,
    ),
    # sizes, times and budgets with wrong units or signs, NaN, infinity, overflow
    (["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--budget", "30"], ["--budget '30' has no unit"], None),
    (["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--budget", "-5ms"], ["'-5ms' must be greater than zero"], None),
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--budget", "10 parsecs"],
        ["'10 parsecs' has unit 'parsecs'"],
        None,
    ),
    (["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--budget", "nan"], ["'nan' must be a finite number"], None),
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--ttft-budget", "inf"],
        ["--ttft-budget 'inf' must be a finite number"],
        None,
    ),
    (["allreduce", "-s", "hgx-h100", "--size", "1e999 B"], ["'1e999 B' must be a finite number"], None),
    (["allreduce", "-s", "hgx-h100", "--size", "1e300B"], ["'1e300B' is larger than 1 EiB"], None),
    (["allreduce", "-s", "hgx-h100", "--size", "-5KiB"], ["'-5KiB' must be greater than zero"], None),
    (["allreduce", "-s", "hgx-h100", "--size", "8B:1GiB:1"], ["'8B:1GiB:1'", "factor"], None),
    (["allreduce", "-s", "hgx-h100", "--size", "1GiB:8B"], ["'1GiB:8B'", "below the start"], None),
    (["allreduce", "-s", "hgx-h100", "--size", "0.1B:8B"], ["'0.1B:8B'", "at least 1 B"], None),
    (["allreduce", "-s", "hgx-h100", "--size", "16kb"], ["'16kb'", "did you mean 16 KB or 16 KiB?"], None),
    (["allreduce", "-s", "hgx-h100", "--size", ","], ["',' holds no values"], None),
    (["measure", "--size", "30parsecs", "--gpus", "2"], ["'30parsecs' has unit 'parsecs'"], SUB),
    (["measure", "--timeout", "5", "--gpus", "2"], ["--timeout '5' has no unit"], None),
    # counts: zero, negative, beyond the model or the hardware
    (["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--batch", "0"], ["'--batch'", "0 is outside 1..16,384"], None),
    (
        ["plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--context", "10000000"],
        ["context 10000000 exceeds llama-3.1-70b's maximum of 131072"],
        None,
    ),
    (["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--context", "-4"], ["'--context'", "-4 is outside"], None),
    (["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--nodes", "abc"], ["'--nodes'"], None),
    (["plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--require-tp", "0"], ["tp (0)"], None),
    (
        ["plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--require-tp", "3"],
        ["tp (3) must divide num_attention_heads (64)"],
        None,
    ),
    (["plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--require-tp", "16"], ["TP16 needs 16 GPUs", "has 8"], None),
    (["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--comm-threshold", "2"], ["--comm-threshold", "got 2.0"], None),
    (["explain", "--context", "0"], ["'--context'"], None),
    (["compare", "-s", "hgx-h100", "--batch", "0"], ["'--batch'"], None),
    (["allreduce", "-s", "hgx-h100", "--gpus", "16"], ["16 GPUs requested but 1 x hgx-h100 has 8"], None),
    (
        ["allreduce", "-s", "hgx-h100", "--nodes", "2", "--gpus", "3"],
        ["3 GPUs cannot be spread evenly over 2 nodes"],
        None,
    ),
    (["allreduce", "-s", "hgx-h100", "--nodes", "0"], ["'--nodes'", "0 is outside 1.."], None),
    # absurd inputs: refused with the bound and its reason (issue 24)
    (
        ["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "100000000"],
        ["'--gpus'", "outside 1..131,072", "datacenter"],
        None,
    ),
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--batch", "99999999999999"],
        ["'--batch'", "outside 1..16,384", "engine schedules"],
        None,
    ),
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--budget", "1e9s"],
        ["--budget 1e9s", "at most 10 s per token"],
        None,
    ),
    (
        ["plan", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--ttft-budget", "7200s"],
        ["--ttft-budget 7200s", "at most 3600 s"],
        None,
    ),
    (
        ["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "8", "--input-len", "99999999999"],
        ["--input-len", "1..10,000,000 tokens"],
        None,
    ),
    # deploy's prices (issue 39): a price or a power is a finite number above 0
    (
        ["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "8", "--gpu-hour-usd", "-2"],
        ["--gpu-hour-usd", "above 0", "-2.0"],
        None,
    ),
    (
        ["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "8", "--gpu-watts", "nan"],
        ["--gpu-watts", "above 0", "nan"],
        SUB,
    ),
    (
        ["deploy", "-m", "llama-3.1-8b", "-s", "gb300-nvl72", "--gpus", "8", "--objective", "cost"],
        ["no GPU-hour price for gb300-nvl72", "--gpu-hour-usd"],
        None,
    ),
    (["measure", "--gpus", "0"], ["'--gpus'", "0 is outside 1.."], None),
    (["measure", "--iters", "0", "--gpus", "2"], ["iters (0)"], None),
    (["measure", "--port", "99999999", "--gpus", "2"], ["port 99999999"], None),
    # algorithms the hardware does not have; conflicting options
    (["allreduce", "-s", "h100-pcie", "--algo", "nvls"], ["NVLS needs NVSwitch", "h100-pcie"], None),
    (
        ["allreduce", "-s", "l40s-pcie-nps1-degraded", "--algo", "nvls"],
        ["NVLS needs NVSwitch", "l40s-pcie-nps1-degraded"],
        None,
    ),
    (
        ["allreduce", "-s", "hgx-h100", "--nodes", "2", "--impl", "custom", "--algo", "one-shot"],
        ["one-shot", "not across nodes"],
        None,
    ),
    (["allreduce", "-s", "rtx4090-pcie", "--impl", "custom", "--algo", "two-shot"], ["two-shot", "peer-to-peer"], None),
    (
        ["allreduce", "-s", "hgx-h100", "--op", "all-gather", "--algo", "tree"],
        ["no tree algorithm", "all-gather"],
        None,
    ),
    # fit: empty, binary, header-only and truncated logs; outputs that must not be touched
    (["fit", "empty.log", "--name", "mine", "--base-system", "hgx-h100"], ["empty.log", "the file is empty"], SUB),
    (["fit", "binary.log", "--name", "mine", "--base-system", "hgx-h100"], ["binary.log", "binary file"], None),
    (
        ["fit", "headers-only.log", "--name", "mine", "--base-system", "hgx-h100"],
        ["headers-only.log", "no nccl-tests data rows"],
        None,
    ),
    (["fit", "truncated.log", "--name", "mine", "--base-system", "hgx-h100"], ["need at least 3 usable"], None),
    (["fit", "no-such.log", "--name", "mine", "--base-system", "hgx-h100"], ["no-such.log", "no such file"], None),
    (
        ["fit", "not-nccl.json", "--name", "mine", "--base-system", "hgx-h100"],
        ["not-nccl.json", "JSON of another shape", "nccl-tests' -J output"],
        SUB,
    ),
    (
        ["fit", "nccl-cut.json", "--name", "mine", "--base-system", "hgx-h100"],
        ["nccl-cut.json", "not valid JSON"],
        None,
    ),
    (["fit", ".", "--name", "mine", "--base-system", "hgx-h100"], ["is a directory"], None),
    (
        ["fit", "good.log", "--name", "hgx-h100", "--base-system", "hgx-h100"],
        ["'hgx-h100' is already a catalog system"],
        None,
    ),
    (
        ["fit", "good.log", "--name", "mine", "--base-system", "hgx-h100", "--out", "existing.toml"],
        ["existing.toml exists", "--force"],
        SUB,
    ),
    (
        ["fit", "good.log", "--name", "mine", "--base-system", "hgx-h100", "--out", "no-such-dir/p.toml"],
        ["no-such-dir", "does not exist"],
        None,
    ),
    (
        ["fit", "good.log", "--name", "mine", "--base-system", "hgx-h100", "--out", ".", "--force"],
        ["is a folder"],
        None,
    ),
    # check: unknown system, a log of another GPU count, unreadable logs, impossible requests
    (["check", "good.log", "--system", "hgx-h10"], ["unknown system 'hgx-h10'", "did you mean 'hgx-h100'"], SUB),
    (["check", "good.log", "--system", "hgx-h100", "--gpus", "4"], ["good.log is a log of 8 GPUs, not --gpus 4"], SUB),
    (["check", "binary.log", "--system", "hgx-h100"], ["binary.log", "binary file"], None),
    (["check", "empty.log", "--system", "hgx-h100"], ["empty.log", "the file is empty"], None),
    (["check", "no-such.log", "--system", "hgx-h100"], ["no-such.log", "no such file"], None),
    (["check", "headers-only.log", "--system", "hgx-h100"], ["headers-only.log", "no nccl-tests data rows"], None),
    (
        ["check", "good.log", "--system", "hgx-h100", "--tolerance", "0"],
        ["--tolerance must be a fraction above 0", "got 0.0"],
        None,
    ),
    (
        ["check", "good.log", "--system", "hgx-h100", "--nodes", "3"],
        ["good.log (run 0, 8 ranks) does not fit hgx-h100"],
        None,
    ),
    # topo: malformed matrices, no GPU model, bad names; outputs that must not be touched
    (["topo", "topo.txt", "--name", "mine"], ["does not name the GPU model", "--gpu"], SUB),
    (["topo", "topo.txt", "--name", "mine", "--gpu", "l40"], ["unknown GPU 'l40'", "did you mean 'l40s'"], None),
    (
        ["topo", "topo.txt", "--name", "mine", "--gpu", "l40s", "--cpu", "epyc-nsp1"],
        ["unknown CPU 'epyc-nsp1'", "did you mean", "'epyc-nps1-degraded'"],
        None,
    ),
    (
        ["topo", "topo.txt", "--name", "mine", "--gpu", "l40s", "--nic-fabric", "pcie4"],
        ["--nic-fabric 'pcie4'", "not a network"],
        None,
    ),
    (
        ["topo", "topo.txt", "--name", "l40s-pcie-nps1-degraded", "--gpu", "l40s"],
        ["'l40s-pcie-nps1-degraded' is already a catalog system"],
        None,
    ),
    (
        ["topo", "topo-ragged.txt", "--name", "mine", "--gpu", "l40s"],
        ["topo-ragged.txt:4", "row GPU2 has 1 entries"],
        None,
    ),
    (
        ["topo", "topo-token.txt", "--name", "mine", "--gpu", "l40s"],
        ["topo-token.txt:3", "'FOO' is not a topology entry"],
        None,
    ),
    (["topo", "topo-asym.txt", "--name", "mine", "--gpu", "l40s"], ["GPU0-GPU1 and GPU1-GPU0 disagree"], None),
    (
        ["topo", "topo-none.txt", "--name", "mine", "--gpu", "l40s"],
        ["topo-none.txt", "no `nvidia-smi topo -m` matrix"],
        None,
    ),
    (["topo", "topo-partial.txt", "--name", "mine", "--gpu", "a100-sxm"], ["NVLinks join some GPU pairs"], None),
    (["topo", "binary.log", "--name", "mine", "--gpu", "l40s"], ["binary.log", "binary file"], None),
    (["topo", "no-such.txt", "--name", "mine", "--gpu", "l40s"], ["no-such.txt", "no such file"], None),
    (
        ["topo", "topo.txt", "--name", "mine", "--gpu", "l40s", "--out", "existing.toml"],
        ["existing.toml exists", "--force"],
        SUB,
    ),
    (
        ["topo", "topo.txt", "--name", "mine", "--gpu", "l40s", "--out", "no-such-dir/p.toml"],
        ["no-such-dir", "does not exist"],
        None,
    ),
    (["measure", "--out", "existing.json", "--gpus", "2", "--size", "8B"], ["existing.json exists", "--force"], None),
    (
        ["measure", "--out", "no-such-dir/x.json", "--gpus", "2", "--size", "8B"],
        ["no-such-dir", "does not exist"],
        None,
    ),
]


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("bad-input")
    for name, content in FILES.items():
        (d / name).write_bytes(content if isinstance(content, bytes) else content.encode())
    return d


def _snapshot(d: Path) -> dict[str, bytes]:
    return {str(p.relative_to(d)): p.read_bytes() for p in sorted(d.rglob("*")) if p.is_file()}


def _exe() -> str:
    return shutil.which("shardbudget", path=str(Path(sys.executable).parent)) or "shardbudget"


def _run(argv: list[str], how: str | None, cwd: Path, capsys, monkeypatch) -> tuple[int, str, str]:
    if how == SUB:
        env = {k: v for k, v in os.environ.items() if k != "SHARDBUDGET_DEBUG"}
        p = subprocess.run([_exe(), *argv], cwd=cwd, capture_output=True, text=True, timeout=120, env=env)
        return p.returncode, p.stdout, p.stderr
    monkeypatch.chdir(cwd)
    monkeypatch.delenv("SHARDBUDGET_DEBUG", raising=False)
    capsys.readouterr()
    code = cli.main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def test_enough_cases_and_every_command_runs_for_real():
    assert len(CASES) >= 45
    commands = {"fabrics", "allreduce", "compare", "plan", "explain", "models", "measure", "fit", "check", "topo"}
    assert commands <= {argv[0] for argv, _, how in CASES if how == SUB}


@pytest.mark.parametrize(("argv", "expected", "how"), CASES, ids=[" ".join(c[0])[:80] for c in CASES])
def test_bad_input(argv, expected, how, scratch, capsys, monkeypatch):
    before = _snapshot(scratch)
    code, out, err = _run(argv, how, scratch, capsys, monkeypatch)
    lines = err.strip().splitlines()
    assert code == 2, f"exit {code}; stderr: {err!r}"
    assert "Traceback" not in err and "internal error" not in err, err
    assert len(lines) == 1 and lines[0].startswith("error: "), f"stderr must be one 'error:' line: {err!r}"
    for text in expected:
        assert text in lines[0], f"{text!r} not in {lines[0]!r}"
    assert out == "", f"nothing should reach stdout before the error: {out!r}"
    assert _snapshot(scratch) == before, "a file in the working folder was created, changed or removed"


def test_no_command_prints_the_help_not_an_error(capsys):
    # typer >= 0.2x vendors click (typer._click): main() once failed importing click here, exit 1
    assert cli.main([]) == 2
    out, err = capsys.readouterr()
    assert "Usage" in out + err and "error" not in err and "Traceback" not in err
