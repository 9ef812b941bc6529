"""Quantities at the boundary: parse what people type, print what people read.

Inside shardbudget every quantity is an SI float: bytes, seconds, bytes per second, FLOP per second.
This module is the only place where text becomes a number or a number becomes text. Parsing of
SI and binary prefixes is done by `quantiphy`; this module only decides which units are allowed for
which kind of quantity and converts bits to bytes. quantiphy is imported only when it is needed
(issue 24: its import and first quantity cost a `plan` run ~30 ms): the common forms ('30ms',
'16 KiB', '450 GB/s') are read, and finite numbers printed, by `_quick` and `_render` below, which
follow quantiphy's own steps for those forms alone (its scale-factor table, `float(mantissa +
'e-3')`, its rounding and trimming at default preferences) and give the same float and the same
text; everything else goes to quantiphy. tests/unit/test_units_quick.py holds them equal over
every unit string in the shipped data and a grid of forms and values.

Glossary (words with two meanings)
----------------------------------
GB vs GiB
    GB = 1e9 bytes (vendors, link rates, HBM sizes on datasheets); GiB = 2**30 bytes (message sizes in
    nccl-tests style sweeps). Never mixed: ``16KiB`` is 16384 bytes, ``16KB`` is 16000 bytes.
Gbit vs GB
    Network rates are usually quoted in bits: a "400G" NDR port is 400 Gbit/s = 50e9 bytes/s.
    ``b`` / ``bit`` means bits and ``B`` means bytes, always.
per-direction vs bidirectional
    NVLink's "900 GB/s" for H100 is the sum of both directions (450 GB/s each way). Inside the code
    every bandwidth is **per direction**; `vendor_rate_to_bytes_per_s` is the one converter.
per-token vs per-step
    A decode step produces one token for each sequence in the batch; inter-token latency (ITL) is the
    time of one decode step as seen by one sequence. The TPOT (time per output token) is what one
    sequence sees as served: the decode step with the other requests' prompts mixed in (chunked
    prefill), or a speculative step over the tokens it yields; with neither it equals the ITL. A
    budget judges the TPOT where the question serves prompts, else the ITL (request.Workload.judged),
    and a communication share is of the time it judges, the mixed prompts' collectives counted.
per-rank vs total
    Collective message sizes follow nccl-tests' "size" column: for all-reduce and all-to-all the
    buffer of one rank (not the sum over ranks); for all-gather the gathered output and for
    reduce-scatter the whole input (p times one rank's share). A decode step's TP all-reduce is
    tokens x hidden x 2 bytes per rank.
algbw vs busbw
    nccl-tests definitions: algbw = size / time; busbw = algbw x a per-operation factor
    (all-reduce: 2(n-1)/n; all-gather, reduce-scatter, all-to-all: (n-1)/n; broadcast, send/recv: 1).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

from .errors import UnitError

# Units accepted per kind, and the factor that turns one of them into the SI base we use inside.
_BYTE_UNITS: dict[str, float] = {"B": 1.0, "byte": 1.0, "bytes": 1.0}
# A size in bits ("16kb") is refused: no message or memory is counted in bits, and "kb" is far more
# often a typo for KB than a deliberate kilobit.
_BITS = re.compile(r"^\s*([-+0-9.eE]+)\s*([kKmMgGtTpPeE]?)(i?)(b|bit|bits)\s*$")
_TIME_UNITS: dict[str, float] = {"s": 1.0, "sec": 1.0, "second": 1.0, "seconds": 1.0}
_RATE_UNITS: dict[str, float] = {
    "B/s": 1.0,
    "Bps": 1.0,
    "byte/s": 1.0,
    "bytes/s": 1.0,
    "b/s": 1 / 8,
    "bps": 1 / 8,
    "bit/s": 1 / 8,
    "bits/s": 1 / 8,
}
_FLOPS_UNITS: dict[str, float] = {"FLOP/s": 1.0, "FLOPS": 1.0, "flop/s": 1.0, "flops": 1.0}

DIRECTIONS = ("per-direction", "bidirectional")


# --- quantiphy's forms that need no quantiphy ----------------------------------------------------

_SI = {
    "T": "e12",
    "G": "e9",
    "M": "e6",
    "K": "e3",
    "k": "e3",
    "m": "e-3",
    "u": "e-6",
    "n": "e-9",
    "p": "e-12",
    "f": "e-15",
    "a": "e-18",
    "P": "e15",
    "E": "e18",
}
"""quantiphy's MAPPINGS for the prefixes read here (a number + 'e-3' is what it gives float())."""
_BINARY = {"Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "Pi": 1024**5, "Ei": 1024**6}
_KNOWN_UNITS = frozenset(_BYTE_UNITS) | frozenset(_TIME_UNITS) | frozenset(_RATE_UNITS) | frozenset(_FLOPS_UNITS)
_SCALE_LETTERS = frozenset("QRYZEPTGMKk_c%muµμnpfazyrq")
"""Every letter quantiphy reads as a scale factor: a unit starting with one is left to quantiphy."""
_QUICK = re.compile(r"\s*([0-9]+\.?[0-9]*|\.[0-9]+)\s*(Ki|Mi|Gi|Ti|Pi|Ei|[TGMKkmunpfaPE]?)([A-Za-z/]*)\s*")


def _quick(raw: str) -> tuple[float, str] | None:
    """(value, unit) of '30ms', '16 KiB', '450 GB/s', '8' as quantiphy reads them (binary=True), or None
    for any other form (a sign, an exponent, a comma, another unit: quantiphy reads those)."""
    m = _QUICK.fullmatch(raw)
    if m is None:
        return None
    mant, sf, unit = m.groups()
    if unit and unit not in _KNOWN_UNITS:
        return None
    if sf in _BINARY:  # quantiphy tries binary prefixes first: float(mantissa) * 1024**k
        return float(mant) * _BINARY[sf], unit
    if sf:  # then a scale factor and units: float(mantissa + 'e3')
        return float(mant + _SI[sf]), unit
    if unit[:1] in _SCALE_LETTERS:  # 'flops' is femto-'lops' to quantiphy: its answer, not ours
        return None
    return float(mant), unit


def _render(value: float, unit: str, prec: int) -> str:
    """quantiphy's Quantity(value, unit).render(prec=prec, strip_zeros=True) at default preferences,
    for a finite value and a plain unit: SI prefixes T..a, else e-notation in steps of three."""
    mantissa, exp_text = f"{value:.{prec}e}".split("e")
    sign = "-" if mantissa[0] == "-" else ""
    mantissa, exp = mantissa.lstrip("-"), int(exp_text)
    if mantissa.strip("0") == ".":
        sign = ""
    index, shift = exp // 3, exp % 3
    eexp = f"e{exp - shift}"
    sf = eexp
    if index == 0:
        sf = ""
    elif 0 < index <= 4:
        sf = "kMGT"[index - 1]
    elif -6 <= index < 0:
        sf = "munpfa"[-index - 1]
    digits = mantissa.replace(".", "").rstrip("0")
    digits += (shift + 1 - len(digits)) * "0"
    mantissa = (sign + digits[: shift + 1] + "." + digits[shift + 1 :]).rstrip(".")
    return f"{mantissa}{sf} {unit}" if sf == eexp else f"{mantissa} {sf}{unit}"


def _render_binary(number: float, unit: str, prec: int) -> str:
    """quantiphy's Quantity(number, unit).binary(prec=prec, strip_zeros=True), finite number."""
    sf, sf_is_exp, base = "", False, 0.0
    try:
        base = math.log(abs(number), 2) // 10
        if base < 0:
            raise IndexError
        sf = ("_KMGTPEZYRQ"[int(base)] + "i").replace("_i", "")
        mantissa, exp_text = f"{number / (2 ** (10 * base)):0.{prec}e}".split("e")
        exp = int(exp_text)
        whole, frac = (mantissa + ".").split(".")[0:2]
        frac += (exp - prec) * "0"
        mantissa = whole + frac[0:exp] + "." + frac[exp:]
    except (IndexError, ValueError):
        if number and base > 0:  # past 1024 YiB: e-notation
            mantissa, exp_text = f"{number:0.{prec}e}".split("e")
            sf, sf_is_exp = "e" + exp_text, True
        else:  # below 1 (and zero): fixed point
            mantissa, sf = f"{number:0.{prec}f}", ""
    if "." not in mantissa:
        mantissa += "."
    mantissa = mantissa.rstrip("0").rstrip(".")
    return f"{mantissa}{sf} {unit}" if sf_is_exp else f"{mantissa} {sf}{unit}"


def _parse(
    text: str | float | int, what: str, units: dict[str, float], *, example: str, bare_unit: str | None
) -> float:
    """Parse `text` as a quantity whose unit is one of `units`; return it in the SI base."""
    if isinstance(text, bool):
        raise UnitError(f"{what} {text!r} is not a quantity; expected e.g. {example}")
    if isinstance(text, (int, float)):
        value, unit = float(text), bare_unit
    else:
        raw = str(text).strip().replace("μ", "u").replace("µ", "u")
        quick = _quick(raw)
        if quick is None:
            from quantiphy import InvalidNumber, Quantity

            try:
                q = Quantity(raw, binary=True)
            except (InvalidNumber, ValueError, TypeError):
                raise UnitError(f"{what} {str(text).strip()!r} is not a quantity; expected e.g. {example}") from None
            quick = float(q), q.units
        value, unit = quick[0], (quick[1] or bare_unit)
    if not math.isfinite(value):
        raise UnitError(f"{what} {text!r} must be a finite number")
    if unit is None:
        raise UnitError(f"{what} {text!r} has no unit; expected e.g. {example}")
    if unit not in units:
        raise UnitError(
            f"{what} {text!r} has unit {_typed_unit(str(text), unit)!r}, expected one of "
            f"{', '.join(sorted(units))} (e.g. {example})"
        )
    return value * units[unit]


def _typed_unit(raw: str, unit: str) -> str:
    """The unit as the user typed it, prefix letters included: quantiphy reads '10 parsecs' as
    10 pico-'arsecs', and an error quoting 'arsecs' would puzzle the reader."""
    i = raw.rfind(unit)
    if i < 0:
        return unit
    while i > 0 and raw[i - 1].isalpha():
        i -= 1
    return raw[i:].strip()


def _positive(value: float, what: str, text: object, allow_zero: bool) -> float:
    if value < 0 or (value == 0 and not allow_zero):
        bound = "zero or more" if allow_zero else "greater than zero"
        raise UnitError(f"{what} {text!r} must be {bound}")
    return value


MAX_BYTES = 2.0**60
"""1 EiB: no message or memory is larger; a bigger size is a typo (and would overflow int64 counts)."""


def parse_bytes(
    text: str | float | int, *, what: str = "size", allow_zero: bool = False, bare_ok: bool = True
) -> float:
    """'16KiB' -> 16384.0; '1 MB' -> 1e6; '8' -> 8.0 (a bare number is bytes, unless not `bare_ok`).
    Bits are refused with a hint: '16kb' -> "did you mean 16 KB or 16 KiB?"."""
    bits = _BITS.match(text) if isinstance(text, str) else None
    if bits:
        number, prefix = bits.group(1), bits.group(2).upper()
        raise UnitError(
            f"{what} {text!r} is in bits ({bits.group(4)!r}); sizes are bytes: did you mean "
            f"{number} {prefix}B or {number} {prefix}iB?"
            if prefix
            else f"{what} {text!r} is in bits ({bits.group(4)!r}); sizes are bytes: did you mean {number} B?"
        )
    value = _parse(text, what, _BYTE_UNITS, example="16KiB, 1 MB, 2GiB", bare_unit="B" if bare_ok else None)
    if value > MAX_BYTES:
        raise UnitError(f"{what} {text!r} is larger than {format_bytes(MAX_BYTES)}; expected e.g. 16KiB, 2GiB")
    return _positive(value, what, text, allow_zero)


def parse_seconds(
    text: str | float | int, *, what: str = "time", bare_ok: bool = False, allow_zero: bool = False
) -> float:
    """'30ms' -> 0.03; '2 µs' -> 2e-6. A bare number is refused unless `bare_ok` (then seconds)."""
    value = _parse(text, what, _TIME_UNITS, example="30ms, 2us, 1.5 s", bare_unit="s" if bare_ok else None)
    return _positive(value, what, text, allow_zero)


def parse_rate(text: str | float | int, *, what: str = "bandwidth") -> float:
    """'400Gb/s' -> 50e9 bytes/s; '50 GB/s' -> 50e9 bytes/s. A bare number is refused."""
    value = _parse(text, what, _RATE_UNITS, example="400Gb/s, 50 GB/s", bare_unit=None)
    return _positive(value, what, text, allow_zero=False)


def parse_flops(text: str | float | int, *, what: str = "compute rate") -> float:
    """'989 TFLOP/s' -> 9.89e14 FLOP/s."""
    value = _parse(text, what, _FLOPS_UNITS, example="989 TFLOP/s", bare_unit=None)
    return _positive(value, what, text, allow_zero=False)


def vendor_rate_to_bytes_per_s(rate: str | float, direction: str) -> float:
    """Turn a vendor link rate into bytes/s **per direction**.

    Vendors quote bits for networks ("400 Gb/s" NDR = 50e9 B/s) and often the sum of both directions
    for NVLink ("900 GB/s" H100 = 450e9 B/s each way). `direction` says which the figure is.
    """
    if direction not in DIRECTIONS:
        raise UnitError(f"direction {direction!r} must be one of {', '.join(DIRECTIONS)}")
    bytes_per_s = parse_rate(rate)
    return bytes_per_s / 2 if direction == "bidirectional" else bytes_per_s


# --- printing -------------------------------------------------------------------------------


def _fmt(value: float, unit: str, binary: bool = False, prec: int = 3) -> str:
    number = float(value)
    if math.isfinite(number) and unit:
        return _render_binary(number, unit, prec) if binary else _render(number, unit, prec)
    from quantiphy import Quantity  # inf and NaN

    q = Quantity(number, unit)
    return q.binary(prec=prec, strip_zeros=True) if binary else q.render(prec=prec, strip_zeros=True)


def format_bytes(n_bytes: float) -> str:
    """Message sizes in binary prefixes, as nccl-tests sweeps are powers of two: 16384 -> '16 KiB'."""
    return _fmt(n_bytes, "B", binary=True)


def format_decimal_bytes(n_bytes: float) -> str:
    """Memory capacities in decimal prefixes, as datasheets give them: 80e9 -> '80 GB'."""
    return _fmt(n_bytes, "B")


def format_seconds(t_s: float) -> str:
    return _fmt(t_s, "s").replace("us", "µs")


def format_rate(bytes_per_s: float) -> str:
    return _fmt(bytes_per_s, "B/s")


def parse_list(values: list[str], parser: Callable[[str], float]) -> list[float]:
    """Apply `parser` to each value; accepts comma separated items too ('8B,1KiB')."""
    out: list[float] = []
    for v in values:
        out.extend(parser(p) for p in str(v).split(",") if p.strip())
    if not out:
        raise UnitError(
            f"{', '.join(repr(str(v)) for v in values) or 'the list'} holds no values; expected e.g. 8B,1KiB"
        )
    return out


def parse_size_range(text: str) -> list[float]:
    """'8B:64MiB' -> powers of two from 8 B to 64 MiB inclusive; 'a:b:f' uses factor f."""
    parts = text.split(":")
    if len(parts) not in (2, 3):
        raise UnitError(f"size range {text!r} must look like 8B:64MiB or 8B:64MiB:4")
    lo, hi = parse_bytes(parts[0]), parse_bytes(parts[1])
    factor = (
        float(parts[2])
        if len(parts) == 3 and parts[2].strip().replace(".", "", 1).isdigit()
        else (2.0 if len(parts) == 2 else float("nan"))
    )
    if not factor > 1:
        raise UnitError(f"size range {text!r}: the factor must be a number greater than 1")
    if lo < 1:  # sizes are rounded to whole bytes below, and a 0-byte message is no message
        raise UnitError(f"size range {text!r}: the start must be at least 1 B")
    if hi < lo:
        raise UnitError(f"size range {text!r}: the end ({format_bytes(hi)}) is below the start ({format_bytes(lo)})")
    sizes, s = [], lo
    while s <= hi * (1 + 1e-12) and len(sizes) < 200:
        sizes.append(float(round(s)))
        s *= factor
    return sizes
