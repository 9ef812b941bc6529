"""Numbers as short text, for figure titles, the report's prose and its tables.

Three significant digits in titles and sentences ('29.9 µs', '67.2 KiB'): enough to compare two
fabrics, few enough to read. Table cells have fixed decimals so that columns line up.
"""

from __future__ import annotations

import math

from ..units import format_seconds


def fmt_seconds(t_s: float) -> str:
    """Seconds with three significant digits: '29.9 µs'."""
    return format_seconds(float(f"{t_s:.3g}"))


def fmt_bytes(n_bytes: float) -> str:
    """Bytes in binary prefixes with three significant digits: '67.2 KiB' (nccl-tests sweeps are
    powers of two, so binary prefixes give round numbers)."""
    exp = 0 if n_bytes < 1024 else min(int(math.log(n_bytes, 1024)), 5)
    value = float(f"{n_bytes / 1024**exp:.3g}")
    return f"{value:g} {('B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB')[exp]}"


def fmt_ms(t_s: float | None) -> str:
    """A table cell in milliseconds with two decimals; '–' where there is no finite time."""
    return "–" if t_s is None or not math.isfinite(t_s) else f"{t_s * 1e3:.2f}"


def fmt_pct(share: float | None) -> str:
    """A share (0..1) as a whole percentage; '–' where there is none."""
    return "–" if share is None else f"{100 * share:.0f}%"


def fmt_tp(tp: int | None) -> str:
    """'TP8', or 'none' where no TP degree qualifies."""
    return "none" if tp is None else f"TP{tp}"


__all__ = ["fmt_bytes", "fmt_ms", "fmt_pct", "fmt_seconds", "fmt_tp"]
