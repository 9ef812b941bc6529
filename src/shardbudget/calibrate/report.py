"""The validation report's lists: the model's known defects (`defect_records`, printed by
`known_defects`, `python -m shardbudget.calibrate --report` and `make bench`'s
benchmarks/known_defects.py: every fall of KNOWN, with its system, GPUs, library, op, kernels, size
and the model's times either side) and the two
lists of data/falls.csv as a scan finds them today (`scanned_falls`, which `--falls` writes after a
pricing change).
"""

from __future__ import annotations

from types import MappingProxyType

from ..units import format_bytes
from .edge_rows import measured_at_edge, measured_fall
from .falls import Falls, known
from .switches import model_switch, scan


def scanned_falls() -> Falls:
    """MEASURED and KNOWN as a scan finds them today: every fall of scan(), with the measured rows at
    its edge where they fall too (MEASURED, quoted), else what they say (KNOWN)."""
    measured, defects = {}, {}
    for key, (sw, _, _) in sorted(scan().items(), key=lambda kv: str(kv[0])):
        m = measured_at_edge(sw)
        if measured_fall(sw):
            measured[key] = m[2]
        else:
            defects[key] = (
                "no rows measured at this release"
                if m is None
                else f"measured {m[0]:.2f} -> {m[1]:.2f} us at the edge, no fall"
            )
    return Falls(MappingProxyType(measured), MappingProxyType(defects))


def defect_records() -> list[dict]:
    """Every known defect (KNOWN) as a record: where the model's time falls at a kernel switch that no
    measurement shows (issue 20), the model's times either side, and what the data say there."""
    out = []
    for key, why in sorted(known().items(), key=lambda kv: str(kv[0])):
        sw, before_us, after_us = model_switch(key)
        out.append(
            {
                "key": list(key),
                "system": sw.system,
                "gpus": sw.gpus,
                "library": sw.impl,
                "op": sw.op,
                "switch": f"{sw.before} -> {sw.after}",
                "edge_bytes": sw.edge_bytes,
                "at": format_bytes(sw.edge_bytes),
                "before_us": before_us,
                "after_us": after_us,
                "data": why,
            }
        )
    return out


def known_defects(records: list[dict] | None = None) -> list[str]:
    """One line per known defect (`defect_records`), under a header that counts them."""
    records = defect_records() if records is None else records
    lines = [
        f"known defects: {len(records)} kernel switches where the model's time falls as the message grows "
        "and no measurement does (issue 20)",
        f"  {'system':<22} {'GPUs':>4}  {'library':<10} {'op':<14} {'switch':<40} {'at':>10}  "
        f"{'model (us)':>19}  what the data say",
    ]
    for r in records:
        lines.append(
            f"  {r['system']:<22} {r['gpus']:>4}  {r['library']:<10} {r['op']:<14} {r['switch']:<40} "
            f"{r['at']:>10}  {r['before_us']:>8.2f} -> {r['after_us']:>8.2f}  {r['data']}"
        )
    return lines
