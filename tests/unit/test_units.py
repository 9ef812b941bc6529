import math

import pytest
from hypothesis import given, strategies as st

from shardbudget import units
from shardbudget.errors import ShardbudgetError, UnitError


@pytest.mark.parametrize(
    "text, expected",
    [
        ("16KiB", 16384),
        ("1 MB", 1e6),
        ("2GiB", 2 * 2**30),
        ("8B", 8),
        ("8", 8),
        ("1KB", 1000),
    ],
)
def test_sizes(text, expected):
    assert units.parse_bytes(text) == expected


@pytest.mark.parametrize(
    "text, hint",
    [
        ("16kb", "did you mean 16 KB or 16 KiB?"),
        ("1 Mb", "did you mean 1 MB or 1 MiB?"),
        ("2 Gbit", "did you mean 2 GB or 2 GiB?"),
        ("8b", "did you mean 8 B?"),
    ],
)
def test_sizes_in_bits_are_refused_with_a_hint(text, hint):
    """'16kb' once meant 16 kilobits (2000 B) without a word; a size is never counted in bits."""
    with pytest.raises(UnitError, match=hint):
        units.parse_bytes(text)


@pytest.mark.parametrize(
    "text, expected",
    [
        ("400Gb/s", 50e9),
        ("400 Gbit/s", 50e9),
        ("50 GB/s", 50e9),
        ("100 Gbps", 12.5e9),
        ("25GBps", 25e9),
    ],
)
def test_rates_bits_are_not_bytes(text, expected):
    assert units.parse_rate(text) == pytest.approx(expected)


@pytest.mark.parametrize(
    "text, expected", [("2us", 2e-6), ("2 µs", 2e-6), ("2 μs", 2e-6), ("30ms", 0.03), ("1.5 s", 1.5)]
)
def test_times(text, expected):
    assert units.parse_seconds(text) == pytest.approx(expected)


@pytest.mark.parametrize("bad", ["-5GB", "fast", "10 parsecs", "nan GB", "inf", "0", "", "5 s", "1e400 B"])
def test_bad_sizes_name_the_value(bad):
    with pytest.raises(UnitError) as err:
        units.parse_bytes(bad)
    assert repr(bad) in str(err.value)


def test_budget_without_unit_is_refused():
    with pytest.raises(UnitError, match="no unit"):
        units.parse_seconds("30")


def test_vendor_rate_direction():
    # NVLink4 "900 GB/s" is bidirectional: 450 GB/s each way; NDR "400 Gb/s" is per direction, in bits
    assert units.vendor_rate_to_bytes_per_s("900 GB/s", "bidirectional") == 450e9
    assert units.vendor_rate_to_bytes_per_s("400 Gb/s", "per-direction") == 50e9
    with pytest.raises(UnitError):
        units.vendor_rate_to_bytes_per_s("400 Gb/s", "both")


def test_gb_is_not_gib():
    assert units.parse_bytes("1 GB") == 1e9
    assert units.parse_bytes("1 GiB") == 2**30


def test_format_roundtrip():
    assert units.format_bytes(16384) == "16 KiB"
    assert units.format_rate(50e9) == "50 GB/s"
    assert units.format_seconds(2.5e-6) == "2.5 µs"


def test_size_range():
    assert units.parse_size_range("8B:64B") == [8, 16, 32, 64]
    assert units.parse_size_range("1KiB:16KiB:4") == [1024, 4096, 16384]
    with pytest.raises(UnitError):
        units.parse_size_range("64B:8B")


@given(st.one_of(st.text(max_size=30), st.floats(allow_nan=True), st.integers(), st.booleans()))
def test_parsers_raise_only_our_error(value):
    for parser in (units.parse_bytes, units.parse_seconds, units.parse_rate, units.parse_flops):
        try:
            out = parser(value)
        except ShardbudgetError:
            continue
        assert isinstance(out, float) and math.isfinite(out) and out > 0
