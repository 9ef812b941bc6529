"""The validation report's lists: the model's known defects (`known_defects`: every fall of KNOWN,
with its system, GPUs, library, op, kernels, size and the model's times either side) and the two
lists of falls.py as a scan finds them today (`falls_tables`, to paste after a pricing change).
"""

from __future__ import annotations

from ..units import format_bytes
from .edge_rows import measured_at_edge, measured_fall
from .falls import KNOWN
from .switches import model_switch, scan


def falls_tables() -> str:
    """MEASURED and KNOWN as falls.py holds them, from scan() and the data."""
    measured, known = [], []
    for key, (sw, _, _) in sorted(scan().items(), key=lambda kv: str(kv[0])):
        m = measured_at_edge(sw)
        if measured_fall(sw):
            measured.append(f"    {key!r}:\n        {m[2]!r},")
        else:
            why = "no rows measured at this release" if m is None else \
                f"measured {m[0]:.2f} -> {m[1]:.2f} us at the edge, no fall"
            known.append(f"    {key!r}: {why!r},")
    return "\n".join(["MEASURED = {", *measured, "}", "KNOWN = {", *known, "}"])


def known_defects() -> list[str]:
    """One line per known defect: where the model's time falls at a kernel switch that no measurement
    shows (issue 20), and what the data say there."""
    lines = [f"known defects: {len(KNOWN)} kernel switches where the model's time falls as the message grows "
             "and no measurement does (issue 20)",
             f"  {'system':<22} {'GPUs':>4}  {'library':<10} {'op':<14} {'switch':<40} {'at':>10}  "
             f"{'model (us)':>19}  what the data say"]
    for key, why in sorted(KNOWN.items(), key=lambda kv: str(kv[0])):
        sw, before_us, after_us = model_switch(key)
        lines.append(f"  {sw.system:<22} {sw.gpus:>4}  {sw.impl:<10} {sw.op:<14} {sw.before + ' -> ' + sw.after:<40} "
                     f"{format_bytes(sw.edge_bytes):>10}  {before_us:>8.2f} -> {after_us:>8.2f}  {why}")
    return lines
