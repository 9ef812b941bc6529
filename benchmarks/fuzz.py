"""Fuzz the four places where outside text enters shardbudget, with 100,000 generated inputs.

    python benchmarks/fuzz.py [--n 100000] [--seed 0] [--only units,config,logs,catalog] [--show 10]

The property, for every input: the reader returns a well-formed value or raises `ShardbudgetError`
(one line, no traceback for the user); any other exception is a bug and is printed with the input
that caused it. Targets, and how their inputs are made (seeded `random`, so a failure is
reproducible with the same --seed and --n):

units    strings built from numbers, SI/binary prefixes and units (and wrong ones), mutated
         character by character, plus raw floats/ints/bools, through every parser in `units`.
config   the shipped HF config.json files with fields deleted or set to hostile values (0, -1,
         2**63, NaN, "32", lists, null ...), random dicts of the real field names, and mangled JSON
         bytes through `transformer.load_model`. An accepted config must also size the model.
logs     nccl-tests logs assembled from real rows (data/raw), headers, annotations, noise,
         numeric corruption and truncation, through `measure.logs.read.parse_log_text`.
catalog  user catalog TOML: built-in entries renamed, with fields dropped, retyped or given wrong
         units, NCCL constant overrides, unknown sections, and raw mangled TOML text, through
         `fabric.catalog.load_catalog`. An accepted system must also price an all-reduce.

Prints one line per target and a final ``fuzz: N inputs, F failures``; exits 1 when F > 0.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import functools
import json
import math
import os
import random
import sys
import tempfile
import time
import tomllib
import traceback
from collections.abc import Callable
from importlib import resources
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import tomli_w  # noqa: E402

from shardbudget.fabric import catalog as hardware_catalog
from shardbudget import model as transformer, units  # noqa: E402
from shardbudget.comm.collectives import collective_cost  # noqa: E402
from shardbudget.errors import ShardbudgetError  # noqa: E402
from shardbudget.calibrate.paths import RAW as RAW_DIR  # noqa: E402 (the repository's data/raw)
from shardbudget.measure.logs.read import OPS, parse_log_text, summarize  # noqa: E402

# Each target gets this share of --n.
SHARES = {"units": 0.40, "config": 0.28, "logs": 0.20, "catalog": 0.12}


# --- shared pools of hostile values ------------------------------------------------------------

NUMBERS = [
    "0",
    "1",
    "8",
    "-5",
    "30",
    "1.5",
    ".5",
    "5.",
    "1e9",
    "1e-9",
    "1e999",
    "-1e999",
    "1e-999",
    "nan",
    "NaN",
    "inf",
    "-inf",
    "+inf",
    "1_000",
    "0x10",
    "1e308",
    "9" * 40,
    "-0",
    "1e",
    "e5",
    "--1",
    "1.2.3",
    "",
    " ",
    "٣",
    "１",
]
PREFIXES = [
    "",
    "",
    "",
    "k",
    "K",
    "M",
    "G",
    "T",
    "P",
    "E",
    "Z",
    "Y",
    "m",
    "u",
    "µ",
    "μ",
    "n",
    "p",
    "f",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "Pi",
    "Ei",
    "Zi",
    "Yi",
    "KB",
]
UNITS = [
    "B",
    "b",
    "bit",
    "bits",
    "byte",
    "bytes",
    "B/s",
    "b/s",
    "bps",
    "Bps",
    "bit/s",
    "bytes/s",
    "s",
    "sec",
    "second",
    "seconds",
    "FLOP/s",
    "FLOPS",
    "flops",
    "flop/s",
    "Hz",
    "parsecs",
    "%",
    "",
    "B/s/s",
    "s/B",
    "/s",
    "GB",
    "ms",
    "us",
    "W",
]
SPACES = ["", "", " ", "  ", "\t", "\u00a0", "\n"]
JUNK = list(":,;/()[]{}+-=*eE.#'\"\\ \x00\x1b\u2028\u00b5\u03bc\u200b") + ["1", "0", "B", "s", "é", "💥"]


def hostile_scalar(rng: random.Random):
    """One value of any JSON/TOML scalar type that a careless reader might mishandle."""
    pick = rng.randrange(12)
    if pick == 0:
        return rng.choice([0, 1, -1, 2, 3, 7, 8, 64, 128, 2**31 - 1, 2**31, 2**53 + 1, 2**63 - 1, -(2**63)])
    if pick == 1:
        return rng.randint(-10, 10 ** rng.randint(1, 30))
    if pick == 2:
        return rng.choice([0.0, -0.0, 0.5, 32.0, 1e308, -1e308, 1e-308, math.nan, math.inf, -math.inf])
    if pick == 3:
        return rng.uniform(-1e6, 1e6)
    if pick == 4:
        return rng.choice([True, False])
    if pick == 5:
        return rng.choice(["", "32", "llama", "none", "nan", "1e999", "bf16", "8 GB", "  "])
    if pick == 6:
        return unit_text(rng)
    if pick == 7:
        return "".join(rng.choice(JUNK) for _ in range(rng.randrange(8)))
    if pick == 8:
        return [hostile_scalar(rng) for _ in range(rng.randrange(4))]
    if pick == 9:
        return {rng.choice(["a", "ll", "simple", "x"]): rng.randint(-3, 3) for _ in range(rng.randrange(3))}
    if pick == 10:
        return None
    return rng.randint(1, 200)


def mutate_text(rng: random.Random, text: str, edits: int) -> str:
    """Insert, delete, replace or duplicate characters, or cut the text short."""
    s = list(text)
    for _ in range(edits):
        op = rng.randrange(5)
        i = rng.randrange(len(s) + 1)
        if op == 0:
            s.insert(i, rng.choice(JUNK))
        elif op == 1 and s:
            del s[min(i, len(s) - 1)]
        elif op == 2 and s:
            s[min(i, len(s) - 1)] = rng.choice(JUNK)
        elif op == 3 and s:
            j = min(len(s), i + rng.randrange(1, 12))
            s[i:i] = s[i:j]
        else:
            s = s[:i]
    return "".join(s)


# --- units -------------------------------------------------------------------------------------

GOOD_NUMBERS = ["1", "8", "16", "30", "1.5", "0.6", "2.5e3", "400", "989", "1e-3", "0"]
GOOD_UNITS = {
    "bytes": ["B", "b", "bit", "bytes"],
    "seconds": ["s", "sec", "seconds"],
    "rate": ["B/s", "b/s", "bps", "Bps", "bit/s"],
    "flops": ["FLOP/s", "FLOPS", "flops"],
}


def unit_text(rng: random.Random, kind: str | None = None) -> str:
    """A quantity as someone might type it: well formed for `kind` half the time, else anything."""
    if kind and rng.random() < 0.5:
        return rng.choice(GOOD_NUMBERS) + rng.choice(["", " "]) + rng.choice(PREFIXES) + rng.choice(GOOD_UNITS[kind])
    text = (
        rng.choice(SPACES[:3])
        + rng.choice(NUMBERS)
        + rng.choice(SPACES)
        + rng.choice(PREFIXES)
        + rng.choice(UNITS)
        + rng.choice(SPACES[:3])
    )
    if rng.random() < 0.25:
        text = mutate_text(rng, text, rng.randint(1, 3))
    elif rng.random() < 0.05:
        text = "".join(rng.choice(JUNK) for _ in range(rng.randrange(12)))
    return text


def units_case(rng: random.Random) -> tuple[object, Callable[[], None]]:
    kind = rng.randrange(8)
    unit_kind = {0: "bytes", 1: "seconds", 2: "rate", 3: "flops", 4: "rate"}.get(kind, "bytes")
    r = rng.random()
    value = (
        unit_text(rng, unit_kind)
        if r < 0.85
        else hostile_scalar(rng)
        if r < 0.95
        else rng.choice([None, b"8B", 3j, object()])
    )
    if kind == 0:
        allow_zero, bare_ok = rng.random() < 0.3, rng.random() < 0.7
        return (value, allow_zero, bare_ok), lambda: _check_quantity(
            units.parse_bytes(value, allow_zero=allow_zero, bare_ok=bare_ok), allow_zero
        )
    if kind == 1:
        allow_zero, bare_ok = rng.random() < 0.3, rng.random() < 0.3
        return (value, allow_zero, bare_ok), lambda: _check_quantity(
            units.parse_seconds(value, allow_zero=allow_zero, bare_ok=bare_ok), allow_zero
        )
    if kind == 2:
        return value, lambda: _check_quantity(units.parse_rate(value), False)
    if kind == 3:
        return value, lambda: _check_quantity(units.parse_flops(value), False)
    if kind == 4:
        direction = rng.choice(units.DIRECTIONS * 3 + ("both", "", "per direction"))
        return (value, direction), lambda: _check_quantity(units.vendor_rate_to_bytes_per_s(value, direction), False)
    if kind == 5:
        parts = [
            unit_text(rng, "bytes") if rng.random() < 0.5 else rng.choice(["8B", "1GiB", "64MiB", "1", "8"])
            for _ in range(rng.choice([1, 2, 2, 2, 3, 3, 4]))
        ]
        if len(parts) == 3 and rng.random() < 0.7:
            parts[2] = rng.choice(["2", "4", "1", "0", "1.0000001", "-2", "x", "1e999", "nan", "2.5", ""])
        text = ":".join(parts)
        return text, lambda: _check_range(units.parse_size_range(text))
    if kind == 6:
        items = [
            ",".join(unit_text(rng, "bytes") if rng.random() < 0.6 else "" for _ in range(rng.randrange(4)))
            for _ in range(rng.randrange(3))
        ]
        return items, lambda: [_check_quantity(x, False) for x in units.parse_list(items, units.parse_bytes)]
    return value, lambda: _check_range(units.parse_size_range(value)) if isinstance(value, str) else None


def _check_quantity(x: float, allow_zero: bool) -> None:
    assert isinstance(x, float) and math.isfinite(x), x
    assert x > 0 or (allow_zero and x == 0), x


def _check_range(sizes: list[float]) -> None:
    assert 1 <= len(sizes) <= 200, len(sizes)
    assert all(isinstance(s, float) and math.isfinite(s) and s >= 1 for s in sizes), sizes
    assert sizes == sorted(sizes), sizes


# --- config.json -------------------------------------------------------------------------------


def _shipped_configs() -> list[dict]:
    root = resources.files("shardbudget") / "catalog" / "models"
    return [
        json.loads(p.read_text(encoding="utf-8")) for p in sorted(root.iterdir(), key=str) if p.name.endswith(".json")
    ]


CONFIGS = _shipped_configs()
FIELDS = sorted(
    {k for c in CONFIGS for k in c}
    | {
        "num_experts",
        "num_local_experts",
        "n_routed_experts",
        "n_shared_experts",
        "mlp_only_layers",
        "decoder_sparse_step",
        "moe_layer_freq",
        "shared_expert_intermediate_size",
        "is_encoder_decoder",
        "text_config",
        "head_dim",
        "sliding_window",
    }
)


def config_case(rng: random.Random, tmp: Path) -> tuple[object, Callable[[], None]]:
    r = rng.random()
    if r < 0.75:  # a real config with a few fields broken
        raw = copy.deepcopy(rng.choice(CONFIGS))
        for _ in range(rng.choice([1, 1, 1, 2, 2, 3, 5])):
            key = rng.choice(FIELDS)
            if rng.random() < 0.3:
                raw.pop(key, None)
            else:
                raw[key] = hostile_scalar(rng)
    elif r < 0.85:  # random dicts of the real field names
        raw = {rng.choice(FIELDS): hostile_scalar(rng) for _ in range(rng.randrange(25))}
    elif r < 0.88:
        raw = hostile_scalar(rng)
    else:  # bytes on disk: mangled JSON text, read by load_model as a user would
        text = json.dumps(rng.choice(CONFIGS), indent=rng.choice([None, 2]))
        data = mutate_text(rng, text, rng.randint(1, 6)).encode("utf-8", "surrogatepass")
        if rng.random() < 0.1:
            data = bytes(rng.randrange(256) for _ in range(rng.randrange(64)))
        path = tmp / "config.json"
        path.write_bytes(data)
        return data[:200], lambda: _check_config(transformer.load_model(str(path)))
    return raw, lambda: _check_config(transformer.config_from_dict(raw, name="fuzz"))


def _check_config(cfg) -> None:
    # An accepted config must be one the rest of the tool can size; otherwise the reader let through
    # something that fails later with a worse message.
    for n in (
        transformer.total_params(cfg),
        transformer.active_params(cfg),
        transformer.kv_bytes_per_token(cfg),
        transformer.weight_bytes_per_gpu(cfg, tp=1),
    ):
        assert math.isfinite(n) and n > 0, n


# --- nccl-tests logs ---------------------------------------------------------------------------

HEADER = """\
# nThread 1 nGpus 1 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid  12345 on   node-001 device  0 [0x18] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid  12346 on   node-001 device  1 [0x2a] NVIDIA H100 80GB HBM3
#  Rank  8 Group  0 Pid  22345 on   node-002 device  0 [0x18] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 112.345
#
# Collective test concluded: all_reduce_perf
nccl-tests version 2.13.11 nccl-headers=22203 nccl-library=22203
mpirun -np 16 -npernode 8 ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1
torchrun --nproc_per_node 8 --nnodes 2 all_gather_perf -b 8 -e 128M
./build/alltoall_perf -b 8 -e 1G -f 2 -g 8
#  Rank  0 Group  0 Pid 4 on host device  0 [0000:05:00] AMD Instinct MI300X
# NCCL version 2.21.5+cuda12.4
@source: fuzz
@n_gpus: 8
@n_nodes: 2
@collective: all_gather
@section: second run
[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   busbw #wrong
"""


def _log_pools() -> tuple[list[str], list[str]]:
    rows: list[str] = []
    other: list[str] = HEADER.splitlines()
    for path in sorted(RAW_DIR.glob("*.txt")):
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            (other if line.lstrip().startswith(("@", "#")) or not line.strip() else rows).append(line)
    if not rows:  # an installed copy without data/: a handful of real-shaped rows
        rows = [
            "           8             2     float     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0",
            "     1048576        262144     float     sum      -1    203.2    5.16    9.68      0    207.2    5.06    9.49      0",
            "  8589934592    2147483648     float     sum      -1    47535  180.71  338.82      0    47743  179.92  337.35      0",
            "        1024           256     float    none      -1    20.12    0.05    0.05    N/A    19.87    0.05    0.05    N/A",
        ]
    return rows, other


LOG_ROWS, LOG_OTHER = _log_pools()
BAD_TOKENS = ["nan", "inf", "-1", "0", "1e999", "N/A", "x", "", "99999999999999999999999", "-0.00", "1e-300"]


def log_text(rng: random.Random) -> str:
    lines: list[str] = []
    start = rng.randrange(len(LOG_ROWS))
    for _ in range(rng.randrange(40)):
        r = rng.random()
        if r < 0.55:  # rows mostly in file order, so tables look real
            line = LOG_ROWS[start % len(LOG_ROWS)]
            start += 1 if rng.random() < 0.9 else rng.randrange(len(LOG_ROWS))
            if rng.random() < 0.1:
                tokens = line.split()
                tokens[rng.randrange(len(tokens))] = rng.choice(BAD_TOKENS)
                line = "  ".join(tokens)
        elif r < 0.85:
            line = rng.choice(LOG_OTHER)
        elif r < 0.95:
            line = "".join(rng.choice(JUNK + list("0123456789     ")) for _ in range(rng.randrange(60)))
        else:
            line = json.dumps({"tool": "shardbudget", "results": [{"bytes": hostile_scalar(rng)}]})
        if rng.random() < 0.05:
            line = line[: rng.randrange(len(line) + 1)]
        lines.append(line)
    text = rng.choice(["\n", "\r\n", "\n\n"]).join(lines)
    if rng.random() < 0.2:  # the whole file cut short
        text = text[: rng.randrange(len(text) + 1)]
    if rng.random() < 0.05:
        text = mutate_text(rng, text, rng.randint(1, 10))
    return text


def logs_case(rng: random.Random) -> tuple[object, Callable[[], None]]:
    text = log_text(rng)
    default_op = rng.choice(OPS) if rng.random() < 0.97 else rng.choice(["scatter", "", "all_reduce"])
    n_ranks = None if rng.random() < 0.8 else rng.choice([1, 2, 8, 16, 0, -1])
    data: str | bytes = text.encode("utf-8") if rng.random() < 0.05 else text
    return (text[:300], default_op, n_ranks), lambda: _check_log(
        parse_log_text(data, source="fuzz", default_op=default_op, n_ranks=n_ranks)
    )


def _check_log(ms) -> None:
    assert ms.samples
    for s in ms.samples:
        assert s.op in OPS and s.n_ranks >= 1, s
        assert s.time_s > 0 and math.isfinite(s.time_s) and math.isfinite(s.busbw_bytes_per_s), s
        assert s.msg_bytes >= 0 and math.isfinite(s.msg_bytes), s
    summarize(ms)


# --- catalog -----------------------------------------------------------------------------------


def _builtin_docs() -> dict[str, dict]:
    root = resources.files("shardbudget") / "catalog"
    return {
        n: tomllib.loads((root / n).read_text(encoding="utf-8"))
        for n in ("nccl.toml", "fabrics.toml", "gpus.toml", "systems.toml")
    }


BUILTIN = _builtin_docs()
BUILTIN_TEXT = "\n".join(
    (resources.files("shardbudget") / "catalog" / n).read_text(encoding="utf-8")
    for n in ("fabrics.toml", "gpus.toml", "systems.toml")
)


def _parse_builtins_once() -> None:
    """load_catalog re-reads the built-in TOML (tens of ms) for every new user file; cache those
    parses so the fuzzing time goes into the user files. User text still goes to tomllib."""
    texts = {(resources.files("shardbudget") / "catalog" / n).read_text(encoding="utf-8") for n in BUILTIN}
    cache: dict[str, dict] = {}
    real = hardware_catalog._read_toml
    if getattr(real, "caches_builtins", False):
        return

    def read_toml(path, text=None):
        if text is not None and text in texts:
            if text not in cache:
                cache[text] = real(path, text)
            return _copy_tree(cache[text])
        return real(path, text)

    read_toml.caches_builtins = True
    hardware_catalog._read_toml = read_toml


def _copy_tree(tree):
    """copy.deepcopy for parsed TOML (dicts, lists, immutable scalars), several times faster."""
    if isinstance(tree, dict):
        return {k: _copy_tree(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_copy_tree(v) for v in tree]
    return tree


class _CachedQuantities:
    """While fuzzing the catalog, remember quantiphy's reading of each quantity text: the built-in
    entries are re-read for every user file, and their (unchanged) text need not be re-parsed.
    Same results, a fraction of the time; the units target runs without it."""

    def __enter__(self):
        import quantiphy  # units imports it when a text needs it (the common forms it reads itself)

        real = quantiphy.Quantity

        @functools.lru_cache(maxsize=65536)
        def cached(text, binary=False):
            return real(text, binary=binary)

        def quantity(value, *args, **kw):
            if isinstance(value, str) and not args and set(kw) <= {"binary"}:
                return cached(value, **kw)
            return real(value, *args, **kw)

        self.real, quantiphy.Quantity = real, quantity
        return self

    def __exit__(self, *exc):
        import quantiphy

        quantiphy.Quantity = self.real


def _nccl_override(rng: random.Random) -> dict:
    """One NCCL constant (existing or misspelt path) set to a hostile or a plausible value."""
    node, out = BUILTIN["nccl.toml"]["nccl"], {}
    cur = out
    while True:
        key = rng.choice(sorted(node))
        if rng.random() < 0.1:
            key += rng.choice(["x", "_us", ""])
        sub = node.get(key)
        if isinstance(sub, dict) and rng.random() < 0.85:
            cur[key] = {}
            cur, node = cur[key], sub
            continue
        cur[key] = hostile_scalar(rng) if rng.random() < 0.6 else copy.deepcopy(sub) if sub is not None else 1.0
        return out


def catalog_doc(rng: random.Random) -> dict:
    doc: dict = {}
    for _ in range(rng.choice([1, 1, 2, 3])):
        section = rng.choice(["fabrics", "fabrics", "gpus", "systems", "systems"])
        src = BUILTIN[f"{section}.toml"][section]
        name = rng.choice(sorted(src))
        entry = copy.deepcopy(src[name])
        new_name = name if rng.random() < 0.3 else rng.choice(["mine", "x", "my-node", name + "-2", ""])
        for _ in range(rng.choice([0, 1, 1, 1, 2, 3])):
            keys = sorted(entry) + ["source", "bandwidth", "gpus_per_node", "memory", "hop_latency", "foo"]
            key = rng.choice(keys)
            r = rng.random()
            if r < 0.25:
                entry.pop(key, None)
            elif r < 0.45:
                entry[key] = unit_text(rng)
            elif r < 0.55:  # a name referring elsewhere, possibly misspelt
                entry[key] = mutate_text(
                    rng,
                    rng.choice(sorted(BUILTIN["fabrics.toml"]["fabrics"]) + sorted(BUILTIN["gpus.toml"]["gpus"])),
                    rng.randrange(2),
                )
            else:
                entry[key] = hostile_scalar(rng)
        doc.setdefault(section, {})[new_name] = entry
    if rng.random() < 0.25:
        doc.setdefault("nccl", {}).update(_nccl_override(rng))
    if rng.random() < 0.03:
        doc[rng.choice(["fabric", "meta", "systems"])] = hostile_scalar(rng)
    return doc


def _toml_safe(value):
    """tomli_w cannot write None, and keys must be strings: the closest TOML a user could write."""
    if isinstance(value, dict):
        return {str(k): _toml_safe(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_toml_safe(v) for v in value if v is not None]
    return value


def catalog_case(rng: random.Random, tmp: Path, serial: int) -> tuple[object, Callable[[], None]]:
    if rng.random() < 0.8:
        doc = _toml_safe(catalog_doc(rng))
        try:
            text = tomli_w.dumps(doc)
        except (TypeError, ValueError):  # e.g. a mixed-type array tomli_w refuses: write it as JSON-ish
            text = json.dumps(doc)
    else:  # raw text: a slice of the built-in catalog, mangled
        i = rng.randrange(len(BUILTIN_TEXT))
        text = mutate_text(rng, BUILTIN_TEXT[i : i + rng.randrange(50, 1500)], rng.randint(0, 8))
    path = tmp / f"user-{serial}.toml"  # a fresh name: load_catalog caches per path
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    return text[:400], lambda: _check_catalog(hardware_catalog.load_catalog([str(path)]), text)


def _check_catalog(cat, text: str) -> None:
    # Systems the user file touched must be usable: a loader that lets through an entry the cost
    # model then trips on has not validated it.
    for name, system in cat.systems.items():
        if name not in text:
            continue
        for nodes in (1, 2) if system.nic_fabric else (1,):
            if system.gpus_per_node * nodes < 2:
                continue
            try:
                cost = collective_cost("all-reduce", 2**20, system, nodes=nodes, catalog=cat)
            except ShardbudgetError:
                continue
            assert math.isfinite(cost.time_s) and cost.time_s > 0, (name, nodes, cost)


# --- driver ------------------------------------------------------------------------------------


def _case(target: str, rng: random.Random, tmp: Path, i: int) -> tuple[object, Callable[[], None]]:
    if target == "units":
        return units_case(rng)
    if target == "config":
        return config_case(rng, tmp)
    if target == "logs":
        return logs_case(rng)
    return catalog_case(rng, tmp, i)


def _try(call: Callable[[], None]) -> tuple[str, str]:
    """("accepted" | "refused" | "failed", what went wrong)."""
    try:
        call()
        return "accepted", ""
    except ShardbudgetError as err:
        msg = str(err)
        if "\n" in msg or not msg.strip():
            return "failed", f"ShardbudgetError whose message is not one line: {msg!r}"
        return "refused", ""
    except Exception as err:  # noqa: BLE001 - anything else is what we hunt
        frames = traceback.extract_tb(err.__traceback__)
        ours = [f for f in frames if "shardbudget" in f.filename] or frames
        where = ours[-1]
        return "failed", (
            f"{type(err).__name__}: {str(err)[:300]}\n"
            f"    at {os.path.relpath(where.filename, ROOT)}:{where.lineno} ({where.name})"
        )


def run(n_total: int, seed: int, only: set[str], show: int) -> int:
    _parse_builtins_once()
    total = 0
    failures: list[str] = []
    with tempfile.TemporaryDirectory(prefix="shardbudget-fuzz-") as tmpdir:
        tmp = Path(tmpdir)
        for target, share in SHARES.items():
            if target not in only:
                continue
            rng = random.Random(f"{seed}:{target}")  # one stream per target: --only reproduces it
            n = max(1, round(n_total * share))
            tally = {"accepted": 0, "refused": 0, "failed": 0}
            t0 = time.perf_counter()
            with _CachedQuantities() if target == "catalog" else contextlib.nullcontext():
                for i in range(n):
                    shown, call = _case(target, rng, tmp, i)
                    outcome, problem = _try(call)
                    tally[outcome] += 1
                    if problem:
                        failures.append(f"{target} #{i}: {problem}\n    input: {shown!r}"[:1500])
                    if target == "catalog" and i % 64 == 63:  # keep the temp folder small
                        for p in tmp.glob("user-*.toml"):
                            p.unlink()
            total += n
            print(
                f"{target:8s} {n:7d} inputs ({tally['accepted']} accepted, {tally['refused']} refused "
                f"with ShardbudgetError), {tally['failed']} failures, {time.perf_counter() - t0:.1f} s",
                flush=True,
            )
    for f in failures[:show]:
        print(f"FAIL {f}")
    if len(failures) > show:
        print(f"... and {len(failures) - show} more failures")
    print(f"fuzz: {total} inputs, {len(failures)} failures")
    return 1 if failures else 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=100_000, help="inputs in total, shared out over the targets")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--only", default=",".join(SHARES), help="comma-separated targets")
    ap.add_argument("--show", type=int, default=10, help="failures to print in full")
    args = ap.parse_args(argv)
    only = {t.strip() for t in args.only.split(",") if t.strip()}
    unknown = only - set(SHARES)
    if unknown:
        ap.error(f"unknown target(s) {', '.join(sorted(unknown))}; expected {', '.join(SHARES)}")
    return run(args.n, args.seed, only, args.show)


if __name__ == "__main__":
    sys.exit(main())
