"""Property tests for the four readers of outside text: whatever the input, each returns a
well-formed value or raises `ShardbudgetError` with a one-line message, never anything else.

* units: strings made of numbers, SI/binary prefixes and units (right and wrong), raw Python values;
* catalog: random TOML text, slices of the built-in catalog mangled, and built-in entries renamed with
  fields dropped, retyped or given wrong units, plus NCCL constant overrides. A user system the
  loader accepts must also price an all-reduce (else the loader let a broken entry through);
* config.json: the shipped configs with fields deleted or set to hostile values, random dicts of the
  real field names, mangled JSON bytes on disk. An accepted config must also size the model;
* nccl-tests logs: real rows (data/raw), headers, annotations, noise, corrupted
  numbers and truncation.

benchmarks/fuzz.py drives the same properties for 100,000 inputs; these keep a few hundred each.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import tomllib
from importlib import resources
from pathlib import Path

import pytest
from shardbudget.calibrate.paths import RAW as _RAW
import tomli_w
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from shardbudget.fabric import catalog as hardware_catalog, hardware
from shardbudget import model as transformer, units
from shardbudget.comm.collectives import collective_cost
from shardbudget.errors import ShardbudgetError
from shardbudget.measure.logs.read import OPS, MeasurementSet, parse_log_text, summarize

FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def value_or_our_error(call):
    """call() -> (True, value) or (False, None) for a ShardbudgetError with a one-line message.
    Any other exception propagates and fails the test with the input hypothesis shrank to."""
    try:
        return True, call()
    except ShardbudgetError as err:
        msg = str(err)
        assert msg.strip() and "\n" not in msg, f"message must be one line: {msg!r}"
        return False, None


# --- units ---------------------------------------------------------------------------------------

NUMBERS = [
    "0",
    "1",
    "8",
    "30",
    "-5",
    "1.5",
    ".5",
    "5.",
    "2.5e3",
    "1e-9",
    "1e999",
    "-1e999",
    "1e-999",
    "nan",
    "inf",
    "-inf",
    "1_000",
    "0x10",
    "9" * 40,
    "1e",
    "--1",
    "1.2.3",
    "",
    "٣",
]
PREFIXES = ["", "", "k", "K", "M", "G", "T", "E", "Y", "m", "u", "µ", "μ", "n", "p", "Ki", "Mi", "Gi", "Ei"]
UNIT_WORDS = [
    "B",
    "b",
    "bit",
    "bits",
    "bytes",
    "B/s",
    "b/s",
    "bps",
    "Bps",
    "bit/s",
    "s",
    "sec",
    "seconds",
    "FLOP/s",
    "FLOPS",
    "flops",
    "Hz",
    "parsecs",
    "%",
    "",
    "s/B",
    "GB",
    "ms",
]
JUNK = st.text(alphabet=st.sampled_from(list(":,;/()[]+-=eE. #'\"\\\x00\u2028µμ\u200b10Bsé")), max_size=6)

quantity_text = st.builds(
    lambda *parts: "".join(parts),
    st.sampled_from(["", " "]),
    st.sampled_from(NUMBERS),
    st.sampled_from(["", " ", "\t", "\u00a0"]),
    st.sampled_from(PREFIXES),
    st.sampled_from(UNIT_WORDS),
    JUNK | st.just(""),
)
quantity_input = quantity_text | st.text(max_size=20) | st.floats() | st.integers() | st.booleans()


def _quantity(x: float, allow_zero: bool = False) -> float:
    assert isinstance(x, float) and math.isfinite(x), x
    assert x > 0 or (allow_zero and x == 0), x
    return x


@FAST
@given(quantity_input, st.booleans(), st.booleans())
def test_units_parsers(value, allow_zero, bare_ok):
    for call in (
        lambda: _quantity(units.parse_bytes(value, allow_zero=allow_zero, bare_ok=bare_ok), allow_zero),
        lambda: _quantity(units.parse_seconds(value, allow_zero=allow_zero, bare_ok=bare_ok), allow_zero),
        lambda: _quantity(units.parse_rate(value)),
        lambda: _quantity(units.parse_flops(value)),
        lambda: _quantity(units.vendor_rate_to_bytes_per_s(value, "bidirectional")),
    ):
        value_or_our_error(call)


def test_units_parser_examples_the_fuzzing_found():
    # quantiphy reads "10 parsecs" as 10 pico-"arsecs": the message quotes what was typed
    with pytest.raises(ShardbudgetError, match="unit 'parsecs'"):
        units.parse_seconds("10 parsecs")
    with pytest.raises(ShardbudgetError, match="larger than 1 EiB"):
        units.parse_bytes("1e300B")
    with pytest.raises(ShardbudgetError, match="at least 1 B"):  # would round to 0-byte sizes
        units.parse_size_range("0.1B:8B")
    with pytest.raises(ShardbudgetError, match="holds no values"):
        units.parse_list([","], units.parse_bytes)


@FAST
@given(
    st.lists(
        quantity_text | st.sampled_from(["8B", "1GiB", "64MiB", "2", "1.0000001", "x"]), min_size=1, max_size=4
    ).map(":".join)
)
def test_size_ranges(text):
    ok, sizes = value_or_our_error(lambda: units.parse_size_range(text))
    if ok:
        assert 1 <= len(sizes) <= 200 and sizes == sorted(sizes)
        assert all(isinstance(s, float) and math.isfinite(s) and s >= 1 for s in sizes), sizes


@FAST
@given(st.lists(st.lists(quantity_text | st.just(""), max_size=3).map(",".join), max_size=3))
def test_size_lists(items):
    ok, sizes = value_or_our_error(lambda: units.parse_list(items, units.parse_bytes))
    if ok:
        assert sizes and all(_quantity(s) for s in sizes)


# --- catalog -------------------------------------------------------------------------------------

_CATALOG_DIR = resources.files("shardbudget") / "catalog"
BUILTIN = {
    n: tomllib.loads((_CATALOG_DIR / f"{n}.toml").read_text(encoding="utf-8"))
    for n in ("nccl", "fabrics", "gpus", "systems")
}
BUILTIN_TEXT = "\n".join(
    (_CATALOG_DIR / f"{n}.toml").read_text(encoding="utf-8") for n in ("fabrics", "gpus", "systems")
)
_serial = itertools.count()

hostile = st.deferred(
    lambda: st.one_of(
        st.integers(-3, 10) | st.sampled_from([2**31, 2**63 - 1, -(2**63), 10**6]),
        st.floats(allow_nan=True, allow_infinity=True),
        st.booleans(),
        st.sampled_from(["", "32", "bf16", "none", "nan", "8 GB", "hgx-h100", "nvlink4"]),
        quantity_text,
        st.lists(st.integers(-2, 9) | st.floats(0, 100), max_size=4),
        st.dictionaries(st.sampled_from(["ll", "ll128", "simple", "x"]), quantity_text | st.floats(-1, 20), max_size=3),
    )
)


@st.composite
def catalog_entries(draw):
    """A built-in entry, renamed or not, with a few fields dropped or replaced."""
    section = draw(st.sampled_from(["fabrics", "gpus", "systems"]))
    name = draw(st.sampled_from(sorted(BUILTIN[section][section])))
    entry = dict(BUILTIN[section][section][name])
    keys = sorted(entry) + ["source", "foo", "hop_latency", "gpus_per_node", "memory", "bandwidth"]
    for key in draw(st.lists(st.sampled_from(keys), max_size=3)):
        if draw(st.booleans()):
            entry.pop(key, None)
        else:
            entry[key] = draw(hostile)
    new_name = draw(st.sampled_from([name, "mine", name + "-2"]))
    return section, new_name, entry


@st.composite
def nccl_overrides(draw):
    """One NCCL constant, at a real or misspelt path, set to a plausible or hostile value."""
    node, path = BUILTIN["nccl"]["nccl"], []
    while True:
        key = draw(st.sampled_from(sorted(node)))
        if draw(st.integers(0, 9)) == 0:
            key += "x"
        path.append(key)
        sub = node.get(key)
        if isinstance(sub, dict) and draw(st.integers(0, 5)):
            node = sub
            continue
        value = draw(hostile | st.just(sub if sub is not None else 1.0))
        break
    doc: dict = {"nccl": {}}
    cur = doc["nccl"]
    for k in path[:-1]:
        cur = cur.setdefault(k, {})
    cur[path[-1]] = value
    return doc


def _toml_ready(value):
    if isinstance(value, dict):
        return {str(k): _toml_ready(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_toml_ready(v) for v in value if v is not None]
    return value


def _load_user_catalog(tmp_dir: Path, text: str):
    path = tmp_dir / f"user-{next(_serial)}.toml"  # a new name each time: load_catalog caches by path
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    try:
        ok, cat = value_or_our_error(lambda: hardware_catalog.load_catalog([str(path)]))
    finally:
        path.unlink()
    if ok:
        assert isinstance(cat, hardware.Catalog)
        for name, system in cat.systems.items():  # an accepted user system can be priced
            if name in text and system.gpus_per_node > 1:
                priced, cost = value_or_our_error(lambda: collective_cost("all-reduce", 2**20, system, catalog=cat))
                assert not priced or (math.isfinite(cost.time_s) and cost.time_s > 0), (name, cost)
    return ok


class _ParsedOnce:
    """tomllib for hardware, remembering its parse of the built-in files: load_catalog re-reads them
    for every new user file, and the fuzzing time should go into the user files. User text still
    goes to tomllib itself."""

    TOMLDecodeError = tomllib.TOMLDecodeError
    parsed = {
        text: tomllib.loads(text)
        for text in ((_CATALOG_DIR / f"{n}.toml").read_text(encoding="utf-8") for n in BUILTIN)
    }

    @classmethod
    def loads(cls, text, **kw):
        return copy.deepcopy(cls.parsed[text]) if text in cls.parsed else tomllib.loads(text, **kw)


@pytest.fixture(scope="module")
def catalog_dir(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        if getattr(hardware, "tomllib", None) is tomllib:
            mp.setattr(hardware, "tomllib", _ParsedOnce)
        yield tmp_path_factory.mktemp("fuzz-catalog")


@SLOW
@given(st.lists(catalog_entries(), min_size=1, max_size=3), st.none() | nccl_overrides())
def test_catalog_structures(catalog_dir, entries, nccl):
    doc: dict = dict(nccl or {})
    for section, name, entry in entries:
        doc.setdefault(section, {})[name] = entry
    try:
        text = tomli_w.dumps(_toml_ready(doc))
    except (TypeError, ValueError):  # a value TOML cannot hold: not an input a user can write
        assume(False)
    _load_user_catalog(catalog_dir, text)


@SLOW
@given(
    st.integers(0, len(BUILTIN_TEXT) - 1),
    st.integers(0, 1500),
    st.lists(st.tuples(st.integers(0, 1500), st.text(max_size=4)), max_size=4),
)
def test_catalog_mangled_text(catalog_dir, start, length, edits):
    text = BUILTIN_TEXT[start : start + length]
    for at, junk in edits:  # splice junk in, cutting nothing: the shapes a hand edit goes wrong in
        text = text[:at] + junk + text[at:]
    _load_user_catalog(catalog_dir, text)


@SLOW
@given(st.text(alphabet=st.sampled_from(list('[]."=\n #{},:-_ abcfgilmnorstuy0123456789')), max_size=120))
def test_catalog_random_toml_text(catalog_dir, text):
    _load_user_catalog(catalog_dir, text)


def test_catalog_examples_the_fuzzing_found(tmp_path):
    def load(text):
        p = tmp_path / f"c{next(_serial)}.toml"
        p.write_text(text)
        return hardware_catalog.load_catalog([str(p)])

    # a partial [nccl] override keeps the other built-in constants (it used to replace the table)
    cat = load("[nccl.calibrated]\nnvls_latency_us = 5.0\n")
    assert cat.nccl.nvls_latency_s == pytest.approx(5.0e-6)
    assert cat.nccl.net_overhead_s == hardware_catalog.load_catalog().nccl.net_overhead_s
    for text, match in [
        ("[nccl]\nhw_latency_us = 3\n", "expected a table, got 3"),
        ("[nccl.base_latency_us.ring]\nll = -5.0\n", "finite number > 0.*got -5.0"),
        ("[nccl.calibrated]\nnvls_latncy_us = 5.0\n", "did you mean 'nvls_latency_us'"),
        ("[nccl.ll_max_bw_gbps]\nintel = [1.0]\n", "list of finite numbers > 0"),
        (
            "[systems.big]\ngpu = 'h100-sxm'\ngpus_per_node = 1000000000000\ntopology = 'switch'\n"
            "intra_fabric = 'nvswitch-gen3'\nsource = 'x'\n",
            "must be at most 100000",
        ),
        (
            "[gpus.g]\narch = 'hopper'\nmemory = 80\nmemory_bandwidth = '3 TB/s'\n"
            "bf16_dense = '989 TFLOP/s'\nsource = 'x'\n",
            "memory 80 has no unit",
        ),
    ]:
        with pytest.raises(ShardbudgetError, match=match):
            load(text)


# --- config.json ---------------------------------------------------------------------------------

CONFIGS = [
    json.loads(p.read_text(encoding="utf-8"))
    for p in sorted((_CATALOG_DIR / "models").iterdir(), key=str)
    if p.name.endswith(".json")
]
FIELDS = sorted(
    {k for c in CONFIGS for k in c}
    | {
        "num_experts",
        "num_local_experts",
        "n_routed_experts",
        "mlp_only_layers",
        "decoder_sparse_step",
        "moe_layer_freq",
        "shared_expert_intermediate_size",
        "is_encoder_decoder",
        "head_dim",
    }
)
json_value = hostile | st.none() | st.lists(st.integers(-1, 200), max_size=5)


def _sized(cfg) -> None:
    assert isinstance(cfg, transformer.ModelConfig)
    for n in (
        transformer.total_params(cfg),
        transformer.active_params(cfg),
        transformer.kv_bytes_per_token(cfg),
        transformer.weight_bytes_per_gpu(cfg, tp=1),
    ):
        assert math.isfinite(n) and n > 0, n


@FAST
@given(
    st.sampled_from(CONFIGS),
    st.dictionaries(st.sampled_from(FIELDS), json_value, max_size=4),
    st.sets(st.sampled_from(FIELDS), max_size=3),
)
def test_config_real_with_broken_fields(base, changes, dropped):
    raw = {k: v for k, v in base.items() if k not in dropped} | changes
    ok, cfg = value_or_our_error(lambda: transformer.config_from_dict(raw, name="fuzz"))
    if ok:
        _sized(cfg)


@FAST
@given(st.dictionaries(st.sampled_from(FIELDS), json_value, max_size=30) | json_value)
def test_config_random_dicts(raw):
    ok, cfg = value_or_our_error(lambda: transformer.config_from_dict(raw, name="fuzz"))
    if ok:
        _sized(cfg)


@SLOW
@given(st.sampled_from(CONFIGS), st.integers(0, 4000), st.binary(max_size=8))
def test_config_mangled_json_on_disk(tmp_path_factory, base, cut, junk):
    data = json.dumps(base).encode()
    data = data[:cut] + junk + data[cut:] if junk else data[:cut]
    path = tmp_path_factory.getbasetemp() / "fuzz-config.json"
    path.write_bytes(data)
    ok, cfg = value_or_our_error(lambda: transformer.load_model(str(path)))
    if ok:
        _sized(cfg)


def test_config_huge_layer_count_is_refused_quickly():
    # 2**31 - 1 layers once passed, and listing the dense layers one by one took minutes
    raw = dict(next(c for c in CONFIGS if c.get("model_type") == "deepseek_v3"), num_hidden_layers=2**31 - 1)
    with pytest.raises(ShardbudgetError, match="num_hidden_layers"):
        transformer.config_from_dict(raw, name="fuzz")


# --- nccl-tests logs -----------------------------------------------------------------------------

_RAW_LINES = [ln for p in sorted(_RAW.glob("*.txt")) for ln in p.read_text(errors="replace").splitlines()]
ROWS = [ln for ln in _RAW_LINES if ln.strip() and not ln.lstrip().startswith(("@", "#"))] or [
    "           8             2     float     sum      -1    135.8    0.00    0.00      0    123.5    0.00    0.00      0",
    "     1048576        262144     float     sum      -1    203.2    5.16    9.68      0    207.2    5.06    9.49      0",
    "        1024           256     float    none      -1    20.12    0.05    0.05    N/A    19.87    0.05    0.05    N/A",
]
OTHER = sorted({ln for ln in _RAW_LINES if ln.lstrip().startswith(("@", "#"))})[:200] + [
    "# nThread 1 nGpus 8 minBytes 8 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
    "#  Rank  0 Group  0 Pid  12345 on   node-001 device  0 [0x18] NVIDIA H100 80GB HBM3",
    "#                                                              out-of-place                       in-place",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : 112.345",
    "#",
    "mpirun -np 16 -npernode 8 ./build/all_reduce_perf -b 8 -e 8G -f 2 -g 1",
    "./build/alltoall_perf -b 8 -e 1G -f 2 -g 8",
    "# NCCL version 2.21.5+cuda12.4",
]
BAD_TOKENS = ["nan", "inf", "-1", "0", "1e999", "1e-300", "N/A", "x", "", "9" * 25]


@st.composite
def log_lines(draw):
    kind = draw(st.integers(0, 9))
    if kind < 5:
        line = draw(st.sampled_from(ROWS))
        if kind == 0:  # one number corrupted
            tokens = line.split()
            tokens[draw(st.integers(0, len(tokens) - 1))] = draw(st.sampled_from(BAD_TOKENS))
            line = "  ".join(tokens)
    elif kind < 8:
        line = draw(st.sampled_from(OTHER))
    else:
        line = draw(st.text(max_size=40))
    if draw(st.integers(0, 19)) == 0:
        line = line[: draw(st.integers(0, len(line)))]
    return line


@FAST
@given(
    st.lists(log_lines(), max_size=30),
    st.none() | st.integers(0, 5000),
    st.sampled_from(OPS),
    st.none() | st.sampled_from([1, 2, 8, 16]),
)
def test_logs(lines, cut, default_op, n_ranks):
    text = "\n".join(lines)
    if cut is not None:  # the file ends mid-write
        text = text[:cut]
    ok, ms = value_or_our_error(lambda: parse_log_text(text, source="fuzz", default_op=default_op, n_ranks=n_ranks))
    if ok:
        assert isinstance(ms, MeasurementSet) and ms.samples
        for s in ms.samples:
            assert s.op in OPS and s.n_ranks >= 1
            assert s.time_s > 0 and math.isfinite(s.busbw_bytes_per_s)
            assert math.isfinite(s.msg_bytes) and s.msg_bytes >= 0
        summarize(ms)


def test_logs_example_the_fuzzing_found():
    # a time of 1e-300 us made busbw infinite; such a result is dropped like a time of 0
    rows = "\n".join(
        f"{n:12d} {n // 4:12d}  float  sum  -1  {t}  0.00  0.00  0  {t}  0.00  0.00  0"
        for n, t in ((1024, "20.1"), (2048, "1e-300"), (4096, "21.5"), (8192, "22.0"))
    )
    ms = parse_log_text(rows, source="fuzz", n_ranks=8)
    assert {s.msg_bytes for s in ms.samples} == {1024, 4096, 8192}
    assert any("too small" in w for w in ms.warnings)
