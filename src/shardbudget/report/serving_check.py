"""`check` on a serving benchmark, in the terminal: per run, what was priced, measured against priced
per metric, the likely causes when a metric is off, and the outcome. Reads decide.serving_check's
records; never prices."""

from __future__ import annotations

import textwrap

from ..quoting import terminal
from ..units import format_seconds

WIDTH = 100
SHOWN_CAUSES = 4
"""Causes listed per run: the ones that explain the difference, else the best-ranked few."""


def _value(metric: str, v: float) -> str:
    return f"{v:,.0f} tok/s" if metric == "output tok/s" else format_seconds(v)


def _head(c) -> list[str]:
    run = c.run
    flight = f"{c.batch:g}" if c.batch == int(c.batch) else f"{c.batch:.1f}"
    per = " per replica" if c.replicas > 1 else ""
    return [
        f"{terminal(run.label)} ({run.tool})",
        f"  priced: {c.model} on {c.system}, {c.plan} under {c.engine}, {c.input_len} in / {c.output_len} out,",
        f"          {flight} requests in flight{per} ({c.batch_basis})",
    ]


def _metrics(c) -> list[str]:
    out = [f"  {'metric':<18}{'measured':>12}{'priced':>12}{'ratio':>8}  verdict"]
    for m in c.metrics:
        word = "ok" if m.verdict == "ok" else f"{m.verdict.upper()} (band x{1 + m.band:g})"
        out.append(
            f"  {m.metric + ' ' + m.stat:<18}{_value(m.metric, m.measured):>12}"
            f"{_value(m.metric, m.predicted):>12}{'x' + format(m.ratio, '.2f'):>8}  {word}"
        )
    return out


def _causes(c) -> list[str]:
    if not c.causes:
        return []
    explaining = [x for x in c.causes if x.explains]
    shown = (explaining or list(c.causes))[:SHOWN_CAUSES]
    head = (
        "  likely cause, most likely first:"
        if explaining
        else "  no single cause explains it; the closest, most likely first:"
    )
    return [head] + [
        line
        for i, x in enumerate(shown, start=1)
        for line in textwrap.wrap(terminal(x.text), WIDTH, initial_indent=f"    {i}. ", subsequent_indent="       ")
    ]


def format_serving_check(result) -> str:
    """The terminal report of a ServingCheckResult."""
    out: list[str] = []
    for c in result.checks:
        notes = [
            line
            for n in c.notes
            for line in textwrap.wrap(terminal(n), WIDTH, initial_indent="  ", subsequent_indent="    ")
        ]
        out += _head(c) + _metrics(c) + _causes(c) + notes + [""]
    out.append(f"check: {result.outcome} (exit {result.exit_code})")
    return "\n".join(out)


__all__ = ["format_serving_check"]
