"""units' own reading of common quantity forms and printing of finite numbers (issue 24 start-up:
`plan` runs without importing quantiphy) give exactly what quantiphy gives: the same float, to the
bit, and the same unit for every form `_quick` accepts, and the same text for every number printed.
Checked over every string of the shipped data, a grid of forms, and a grid of values."""

from __future__ import annotations

import json
import math
import random
import tomllib

import numpy as np
import pytest
from quantiphy import Quantity

from shardbudget import units
from shardbudget.datacache import PACKAGE


def _quantiphy(raw: str):
    """What units._parse got from quantiphy before: (float, unit) or None where it raised."""
    try:
        q = Quantity(raw, binary=True)
    except Exception:
        return None
    return float(q), q.units


def _same(raw: str) -> bool:
    """True when `_quick` read `raw` (asserting quantiphy reads it the same), False when it left it."""
    got = units._quick(raw)
    if got is None:
        return False
    want = _quantiphy(raw)
    assert want is not None, f"{raw!r}: quick read {got}, quantiphy refuses it"
    assert got[1] == want[1] and got[0] == want[0] and math.copysign(1, got[0]) == math.copysign(1, want[0]), (
        raw,
        got,
        want,
    )
    return True


def _strings(obj):
    if isinstance(obj, str):
        yield obj
    elif isinstance(obj, dict):
        for v in obj.values():
            yield from _strings(v)
    elif isinstance(obj, list):
        for v in obj:
            yield from _strings(v)


def _shipped_strings() -> list[str]:
    out = []
    for path in sorted(PACKAGE.rglob("*.toml")) + sorted(PACKAGE.rglob("*.json")):
        text = path.read_text(encoding="utf-8")
        doc = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
        out += [s.strip().replace("μ", "u").replace("µ", "u") for s in _strings(doc)]
    return sorted(set(out))


def test_every_unit_string_of_the_shipped_data_reads_as_quantiphy_reads_it():
    strings = _shipped_strings()
    quick = [s for s in strings if _same(s)]
    # the catalog's quantities are the common forms: nearly all of them take the quick path
    parsed_with_our_units = [s for s in strings if (q := _quantiphy(s)) and q[1] in units._KNOWN_UNITS]
    assert len(parsed_with_our_units) > 150  # distinct strings
    missed = sorted(set(parsed_with_our_units) - set(quick))
    assert len(quick) >= 0.95 * len(parsed_with_our_units), missed[:20]


NUMBERS = [
    "0",
    "1",
    "8",
    "30",
    "450",
    "1.5",
    "0.6",
    ".5",
    "5.",
    "3.35",
    "0.001",
    "123456789",
    "1e3",
    "1E3",
    "-2",
    "+2",
    "1_000",
    "1,024",
    "٣",
    "nan",
    "inf",
]
PREFIXES = [
    "",
    "k",
    "K",
    "M",
    "G",
    "T",
    "P",
    "E",
    "m",
    "u",
    "n",
    "p",
    "f",
    "a",
    "c",
    "Ki",
    "Mi",
    "Gi",
    "Ti",
    "Pi",
    "Ei",
    "Zi",
    "_",
    "%",
    "Z",
    "Y",
    "z",
    "y",
    "q",
    "Q",
    "R",
    "r",
    "i",
    "x",
]
UNITS = sorted(units._KNOWN_UNITS) + ["", "b", "bit", "Hz", "in", "ms", "lops", "FLOP", "B/ s", "GB/s/GPU"]
SPACES = ["", " ", "  ", "\t", "\u00a0"]


def test_a_grid_of_forms_reads_as_quantiphy_reads_it():
    read = 0
    for number in NUMBERS:
        for space in SPACES:
            for prefix in PREFIXES:
                for unit in UNITS:
                    read += _same(f"{number}{space}{prefix}{unit}")
    assert read > 5000  # the common forms do take the quick path


@pytest.mark.parametrize(
    "raw",
    [
        "30ms",
        "2us",
        "1.5 s",
        "16KiB",
        "1 MB",
        "2GiB",
        "400Gb/s",
        "50 GB/s",
        "989 TFLOP/s",
        "8",
        "0.6 us",
        "450 GB/s",
        "81559 MiB",
    ],
)
def test_the_documented_examples_take_the_quick_path(raw):
    assert _same(raw)


def _values() -> list[float]:
    rng = random.Random(24)
    edges = [
        1,
        1.5,
        2,
        3.14159,
        5,
        9.995,
        9.9995,
        9.99949,
        9.99951,
        99.95,
        99.949,
        999.5,
        999.4999,
        999.95,
        1.0005,
        1.2345,
        1.00049,
        1023.5,
        1023.95,
        1024,
        1000,
        0.5,
        0.25,
    ]
    out = [0.0, -0.0]
    for exp in range(-24, 25):
        for m in edges:
            out += [m * 10.0**exp, -m * 10.0**exp]
    out += [float(2**k) for k in range(0, 90)] + [float(2**k) - 1 for k in range(1, 70)]
    out += [1024.0**k * f for k in range(0, 10) for f in (0.9995, 0.99951, 1023.96 / 1024, 1.0, 1.5)]
    out += [10 ** rng.uniform(-22, 26) * rng.choice((1, -1)) for _ in range(4000)]
    out += [float(rng.randrange(1, 10**12)) for _ in range(1000)]
    return out


@pytest.mark.parametrize("unit", ["B", "s", "B/s"])
@pytest.mark.parametrize("prec", [2, 3, 4])
def test_numbers_print_as_quantiphy_prints_them(unit, prec):
    for v in _values():
        q = Quantity(v, unit)
        assert units._fmt(v, unit, prec=prec) == q.render(prec=prec, strip_zeros=True), (v, unit, prec)
        assert units._fmt(v, unit, binary=True, prec=prec) == q.binary(prec=prec, strip_zeros=True), (v, unit, prec)


def test_numpy_ints_and_the_non_finite_print_as_before():
    for v in (np.float64(3.5e-3), np.float32(0.25), 7, np.int64(1 << 40), float("inf"), -float("inf"), float("nan")):
        q = Quantity(v, "s")
        assert units._fmt(v, "s") == q.render(prec=3, strip_zeros=True)
        assert units._fmt(v, "B", binary=True) == Quantity(v, "B").binary(prec=3, strip_zeros=True)
    assert units.format_seconds(2.5e-6) == "2.5 µs" and units.format_bytes(16384) == "16 KiB"
    assert units.format_decimal_bytes(80e9) == "80 GB" and units.format_rate(450e9) == "450 GB/s"


def test_forms_left_to_quantiphy_still_read_and_fail_as_before():
    assert units.parse_seconds("1e-3 s") == 1e-3
    assert units.parse_bytes("1,024 B") == 1024.0
    with pytest.raises(units.UnitError, match="is not a quantity"):
        units.parse_seconds("thirty ms")
    with pytest.raises(units.UnitError, match="has unit 'parsecs'"):
        units.parse_seconds("10 parsecs")
    with pytest.raises(units.UnitError, match="has unit 'flops'"):  # quantiphy reads femto-'lops': refused, as before
        units.parse_flops("989 flops")
