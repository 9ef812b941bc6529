"""The single-file HTML report: the verdict in words, the figures inline, the numbers behind them.

One file, nothing to fetch: figures are inline SVG, the CSS is in a <style> element, there is no
JavaScript, no web font and no link to anything. Source URLs from the catalog are shown as text,
never as links or resources, so opening the report makes no network request. Every string that a
user can influence (model name or config path, system and file names, catalog descriptions) goes
through `html.escape`.

`collect` does the work (plans, collective sweeps, explanations, measurements), `render` turns it
into HTML; `build_report` is both, `write_report` writes the result atomically.
"""

from __future__ import annotations

import html as _html
import math
import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import PlanError, ShardbudgetError
from ..units import format_decimal_bytes, format_rate
from . import figures as F

Progress = Callable[[str, int, int], None]
"""progress(what, done, total): called before each long step."""

REPORT_SUFFIXES = (".html", ".htm")
FABRIC_OP = "all-reduce"
# Message sizes of the fabric sweep: 8 B to 1 GiB, 16 points per factor of 2^5 (smooth on a log axis).
SWEEP_MIN_BYTES, SWEEP_MAX_BYTES, SWEEP_POINTS = 8.0, float(2 ** 30), 106
REFERENCE_BYTES = (8.0, float(2 ** 16), float(2 ** 20), float(2 ** 24), float(2 ** 28), float(2 ** 30))


def esc(value: Any) -> str:
    return _html.escape(str(value), quote=True)


# --- what the report is about ---------------------------------------------------------------

@dataclass(frozen=True)
class SystemSpec:
    """A system of the catalog on `nodes` nodes ('hgx-h100:2' on the command line)."""

    name: str
    nodes: int = 1

    @property
    def label(self) -> str:
        return self.name if self.nodes == 1 else f"{self.nodes}× {self.name}"


def parse_system_spec(text: str, default_nodes: int = 1) -> SystemSpec:
    """'hgx-h100' (default_nodes nodes) or 'hgx-h100:2' (two nodes)."""
    if not isinstance(text, str) or not text.strip():
        raise PlanError(f"system {text!r} must be a catalog name, optionally with ':N' nodes (hgx-h100:2)")
    name, sep, count = text.strip().partition(":")
    if not sep:
        return SystemSpec(name, default_nodes)
    if not count.strip().isdigit() or int(count) < 1:
        raise PlanError(f"system {text!r}: the node count after ':' must be a whole number of at least 1 "
                        f"(e.g. hgx-h100:2)")
    return SystemSpec(name.strip(), int(count))


@dataclass
class MeasuredEntry:
    path: str
    measurement: Any  # MeasurementSet
    system: str
    groups: list  # (label, samples, predicted times or None)
    svg: str | None = None
    error: str | None = None


@dataclass
class ReportData:
    """Everything the report shows, computed once (the demo prints its table from the same data)."""

    model: str
    """The model's name as the config reader gives it (a folder name for a config.json path)."""
    model_cfg: Any
    specs: list[SystemSpec]
    plans: list  # PlanResult, one per spec
    fabric: list  # (label, costs, crossover_bytes, group, impl)
    marks: list[tuple[float, str]]
    answers: list  # explain.Answer
    answers_error: str | None
    measured: list[MeasuredEntry]
    settings: dict
    catalog: Any
    colors: dict[str, str] = field(default_factory=dict)


def _noop(what: str, done: int, total: int) -> None:
    return None


def collect(model: str, systems: Sequence[str], *, nodes: int = 1, batches: Sequence[int] = (1, 64),
            context: int = 4096, budget_s: float | None = 0.05, impl: str = "nccl", dtype: str = "bf16",
            measured: Sequence[str | os.PathLike] = (), measured_system: str | None = None,
            catalog=None, progress: Progress | None = None) -> ReportData:
    """Run the planner, the collective sweeps, the explanations and read the measurements."""
    import numpy as np

    from .. import transformer as tf
    from ..collectives import crossover_bytes, make_group, sweep
    from ..compare import effective_impl
    from ..explain import explain
    from ..hardware import load_catalog
    from ..measure.logs import read_log
    from ..planner import message_sizes, plan

    progress = progress or _noop
    if not systems:
        raise PlanError("the report needs at least one system (e.g. --system hgx-h100)")
    if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
        raise PlanError(f"nodes must be a whole number of at least 1, got {nodes!r}")
    batches = list(batches) or [1]
    catalog = catalog or load_catalog()
    specs = [parse_system_spec(s, nodes) for s in systems]
    labels = [s.label for s in specs]
    if len(set(labels)) != len(labels):
        raise PlanError(f"system listed twice: {', '.join(sorted({x for x in labels if labels.count(x) > 1}))}")
    cfg = tf.load_model(model)
    for s in specs:
        catalog.system(s.name)  # unknown names fail here, before any long work, with a suggestion
    measured_system = measured_system or specs[0].name
    catalog.system(measured_system)
    # Read the measurement files first: a typo'd path should not cost a whole sweep.
    sets = [(str(p), read_log(p)) for p in measured]

    total = 2 * len(specs) + 2 + len(sets)
    step = 0
    plans = []
    for s in specs:
        progress(f"planning {cfg.name} on {s.label}", step, total)
        plans.append(plan(cfg, s.name, nodes=s.nodes, batches=batches, context=context, budget_s=budget_s,
                          impl=impl, dtype=dtype, catalog=catalog))
        step += 1

    sizes = [float(x) for x in np.geomspace(SWEEP_MIN_BYTES, SWEEP_MAX_BYTES, SWEEP_POINTS)]
    fabric = []
    for s in specs:
        progress(f"pricing {FABRIC_OP} on {s.label}", step, total)
        group = make_group(s.name, nodes=s.nodes, catalog=catalog)
        use = effective_impl(group, impl)
        costs = sweep(FABRIC_OP, sizes, s.name, nodes=s.nodes, impl=use, catalog=catalog)
        fabric.append((f"{s.label} ×{group.ranks}", costs, crossover_bytes(group, FABRIC_OP, use), group, use))
        step += 1
    # What one decode step sends per all-reduce: batch x hidden x 2 bytes (bf16 activations), and
    # what prefill of one `context`-token prompt sends.
    marks = [(message_sizes(cfg, b), f"decode batch {b}") for b in batches]
    marks.append((message_sizes(cfg, context), f"prefill {context} tokens"))

    progress("answering the three questions", step, total)
    answers, answers_error = [], None
    try:
        answers = explain(model, batch=batches[0], context=context, catalog=catalog)
    except ShardbudgetError as err:
        answers_error = str(err)
    step += 1

    entries = []
    for path, ms in sets:
        progress(f"comparing {os.path.basename(path)} with {measured_system}", step, total)
        groups = [(label, samples, F.predict_samples(samples, measured_system, impl=impl, catalog=catalog))
                  for label, samples in F.measured_groups(ms)]
        entries.append(MeasuredEntry(path=path, measurement=ms, system=measured_system, groups=groups))
        step += 1
    progress("done", total, total)

    settings = {"model": model, "systems": [s.label for s in specs], "batches": batches, "context": context,
                "budget_s": budget_s, "impl": impl, "dtype": dtype, "op": FABRIC_OP}
    colors = F.system_colors(labels)
    return ReportData(model=cfg.name, model_cfg=cfg, specs=specs, plans=plans, fabric=fabric, marks=marks,
                      answers=answers, answers_error=answers_error, measured=entries, settings=settings,
                      catalog=catalog, colors=colors)


# --- the words ------------------------------------------------------------------------------

def _row_at(br, tp):
    return next((r for r in F.tp_line(br.rows) if r.tp == tp), None) if tp is not None else None


def verdict_rows(data: ReportData) -> list[dict]:
    """Per system and batch: min TP, max TP within budget, best TP, ITL and comm share at best, one line."""
    out = []
    for spec, res in zip(data.specs, data.plans):
        for br in res.results:
            best = _row_at(br, br.best_tp)
            far = F.too_far_tps(br)
            out.append({"system": spec.label, "batch": br.batch, "min_tp": br.min_tp_memory,
                        "max_tp": br.max_tp_budget, "best_tp": br.best_tp,
                        "itl_s": best.itl_s if best else None, "comm_share": best.comm_share if best else None,
                        "verdict": _short_verdict(br, res.budget_s, far), "meets": br.max_tp_budget is not None,
                        "too_far": far})
    return out


def _short_verdict(br, budget_s, far: list[int]) -> str:
    if br.min_tp_memory is None:
        return "does not fit in memory at any TP"
    budget = F.fmt_seconds(budget_s) if budget_s else "no budget"
    if budget_s and br.max_tp_budget is None:
        text = f"misses {budget} at every TP"
    elif budget_s:
        text = f"meets {budget} up to TP{br.max_tp_budget}"
    else:
        text = f"latency-optimal at TP{br.best_tp}"
    if far:
        text += f"; TP{far[0]}{'+' if len(far) > 1 else ''} sharded too far"
    else:
        text += "; the fabric is not the limit"
    return text


def _times(x: float) -> str:
    return "twice" if x == 2 else f"{x:g}×"


def recommendations(data: ReportData) -> dict[int, tuple | None]:
    """Per batch: (row, system label) of the fastest plan that meets the budget and is not sharded
    too far; None where there is none."""
    out = {}
    for b in data.settings["batches"]:
        good = []
        for spec, res in zip(data.specs, data.plans):
            br = F.batch_result(res, b)
            if br is not None:
                far = set(F.too_far_tps(br))
                good += [(r, spec.label) for r in F.tp_line(br.rows) if r.meets_budget and r.tp not in far]
        out[b] = min(good, key=lambda c: c[0].itl_s) if good else None
    return out


def headline(data: ReportData) -> str:
    """Two sentences: the plan to pick, and where sharding stops paying."""
    budget = data.settings["budget_s"]
    within = f"Within the {F.fmt_seconds(budget)} budget" if budget else "Among the plans that fit"
    recs = recommendations(data)
    picks: dict[tuple, list[int]] = {}
    for b, rec in recs.items():
        key = (rec[1], rec[0].tp) if rec else None
        picks.setdefault(key, []).append(b)
    parts = []
    for key, bs in picks.items():
        at = "batch " + " and ".join(str(b) for b in bs)
        if key:
            parts.append(f"{key[0]} at TP{key[1]} is the plan to pick at {at}")
        elif any(r.meets_budget for res in data.plans for br in res.results if br.batch in bs for r in br.rows):
            parts.append(f"only plans that are sharded too far make it at {at}")
        else:
            parts.append(f"no system makes it at {at}")
    text = f"{within}, " + "; ".join(parts) + "."
    stops = []
    for res in data.plans:
        hits = [(F.too_far_tps(br)[0], br.batch) for br in res.results if F.too_far_tps(br)]
        if hits:
            tp = min(t for t, _ in hits)
            bs = sorted({b for t, b in hits if t == tp})
            which = "" if len(bs) == len(res.results) else " (batch " + ", ".join(str(b) for b in bs) + ")"
            stops.append(f"TP{tp} on {F.result_label(res)}{which}")
    if stops:
        threshold = float((data.plans[0].assumptions or {}).get("comm_threshold", 0.30))
        text += (f" Sharded too far (communication over {100 * threshold:.0f}% of the token, or past the fastest "
                 "TP): " + ", ".join(stops[:-1]) + (" and " if len(stops) > 1 else "") + stops[-1] + ".")
    else:
        text += " Sharding pays up to the largest TP on every system: the fabric is not the limit here."
    return text


def summary_sentences(data: ReportData) -> list[str]:
    """The verdict in plain words: one sentence per batch size (the plan to pick), then one per
    system (where sharding stops paying). Plain text; the caller escapes it."""
    out = []
    budget = data.settings["budget_s"]
    within = f"the {F.fmt_seconds(budget)} budget" if budget else "memory"
    for b in data.settings["batches"]:
        cands = []  # (row, label, sharded too far)
        for spec, res in zip(data.specs, data.plans):
            br = F.batch_result(res, b)
            if br is None:
                continue
            far = set(F.too_far_tps(br))
            cands += [(r, spec.label, r.tp in far) for r in F.tp_line(br.rows) if r.meets_budget]
        if not cands:
            out.append(_closest_miss(data, b, budget))
            continue
        good = [c for c in cands if not c[2]]
        fastest = min(cands, key=lambda c: c[0].itl_s)
        if good:
            rec = min(good, key=lambda c: c[0].itl_s)
            text = (f"At batch {b}, the best plan within {within} is {rec[1]} at TP{rec[0].tp}: "
                    f"{F.fmt_seconds(rec[0].itl_s)} per token, {100 * rec[0].comm_share:.0f}% of it communication.")
            if fastest is not rec and fastest[2]:
                r = fastest[0]
                text += (f" {fastest[1]} at TP{r.tp} is {100 * (1 - r.itl_s / rec[0].itl_s):.0f}% faster "
                         f"({F.fmt_seconds(r.itl_s)}) on {_times(r.tp / rec[0].tp)} the GPUs, but sharded too far: "
                         f"{100 * r.comm_share:.0f}% of its token is communication.")
            fewest = min(cands, key=lambda c: (c[0].tp, c[0].itl_s))
            if fewest[0].tp < rec[0].tp:
                text += (f" The fewest GPUs that meet it: {fewest[1]} at TP{fewest[0].tp} "
                         f"({F.fmt_seconds(fewest[0].itl_s)}).")
        else:
            r = fastest[0]
            text = (f"At batch {b}, only plans that are sharded too far meet {within}: {fastest[1]} at TP{r.tp} "
                    f"({F.fmt_seconds(r.itl_s)}, {100 * r.comm_share:.0f}% communication).")
        out.append(text)
    for res in data.plans:
        out.append(_stops_paying(res))
    return out


def _closest_miss(data: ReportData, batch: int, budget) -> str:
    rows = [(r, spec.label) for spec, res in zip(data.specs, data.plans)
            for br in res.results if br.batch == batch for r in F.tp_line(br.rows) if r.fits_memory]
    if not rows:
        return f"At batch {batch}, the model does not fit in memory on any system at any TP."
    r, label = min(rows, key=lambda x: x[0].itl_s)
    return (f"At batch {batch}, no system meets the {F.fmt_seconds(budget)} budget: the closest is {label} at "
            f"TP{r.tp} with {F.fmt_seconds(r.itl_s)} per token ({100 * r.comm_share:.0f}% communication).")


def _stops_paying(res) -> str:
    label = F.result_label(res)
    hits = []
    for br in res.results:
        far = F.too_far_tps(br)
        if far:
            r = _row_at(br, far[0])
            hits.append((far[0], br.batch, r, br.best_tp))
    if not hits:
        top = max(r.tp for br in res.results for r in F.tp_line(br.rows))
        return (f"On {label} sharding still pays up to TP{top}: communication stays under the threshold "
                f"and every step up in TP still lowers the latency.")
    # past the latency-optimal TP is the clearest case ('adding GPUs no longer pays'); else the
    # planner's other reason: communication over the threshold even at the fastest TP
    past = [h for h in hits if h[3] is not None and h[0] > h[3]]
    tp, batch, r, best_tp = min(past or hits, key=lambda h: (h[0], h[1]))
    share = (f"communication is {100 * r.comm_share:.0f}% of the token "
             f"({F.fmt_seconds(r.comm_s)} of {F.fmt_seconds(r.itl_s)})")
    if best_tp is not None and tp <= best_tp:
        # the planner's 'comm-bound at the fastest TP': more TP still helps a little, but the fabric
        # now sets the token time
        return (f"On {label} at batch {batch}, TP{tp} is the fastest option but the fabric sets its pace: {share}.")
    return f"On {label} sharding stops paying at TP{tp} (batch {batch}): {share}."


# --- rendering ------------------------------------------------------------------------------

_CSS = """
:root { --ink:#1c2833; --muted:#5d6d7e; --line:#d5dbe1; --ok:#1e8449; --bad:#c0392b; --warn:#b9770e; }
* { box-sizing: border-box; }
body { margin: 0 auto; max-width: 1240px; padding: 28px 32px 64px; color: var(--ink); background: #fff;
  font: 15px/1.55 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", "Liberation Sans", sans-serif; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 40px 0 10px; padding-bottom: 4px; border-bottom: 2px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 6px; }
p.sub { color: var(--muted); margin: 0 0 18px; }
.verdict { border-left: 6px solid #0072B2; background: #f4f8fb; padding: 14px 20px; margin: 16px 0 8px; }
.verdict p { margin: 6px 0; }
.verdict .lead { font-size: 17px; font-weight: 600; }
ul.systems { margin: 8px 0 0; padding-left: 20px; }
ul.systems li { margin: 4px 0; }
.swatch { display: inline-block; width: 11px; height: 11px; border-radius: 2px; margin-right: 6px; vertical-align: -1px; }
table { border-collapse: collapse; margin: 10px 0 6px; font-size: 13px; font-variant-numeric: tabular-nums; }
th, td { border-bottom: 1px solid var(--line); padding: 4px 10px; text-align: right; vertical-align: top; }
th { background: #eef2f6; font-weight: 600; }
td.l, th.l { text-align: left; }
td:first-child { white-space: nowrap; }
tbody tr:nth-child(even) { background: #fafbfc; }
td.ok { color: var(--ok); font-weight: 600; } td.bad { color: var(--bad); font-weight: 600; }
td.warn { color: var(--warn); }
figure { margin: 18px 0 8px; }
figure svg { width: 100%; height: auto; display: block; }
figcaption { color: var(--muted); font-size: 13.5px; margin-top: 6px; }
details { margin: 6px 0 14px; }
summary { cursor: pointer; color: #1f618d; font-size: 13.5px; }
.answer { border: 1px solid var(--line); border-radius: 6px; padding: 10px 16px; margin: 12px 0; }
.answer .take { font-weight: 600; }
.src { color: var(--muted); font-size: 12px; word-break: break-all; }
.note { color: var(--muted); font-size: 13px; }
.err { color: var(--bad); }
code { font-size: 13px; background: #f2f4f6; padding: 0 3px; border-radius: 3px; }
footer { margin-top: 48px; color: var(--muted); font-size: 12.5px; border-top: 1px solid var(--line); padding-top: 10px; }
"""


def _svg_inline(fig, alt: str, fig_id: str) -> str:
    """The figure as inline SVG: no XML prolog, no metadata (its RDF links are not resources), a
    role and an accessible name, and matplotlib's global `*{...}` style scoped to the figure.
    Its element ids are salted with `fig_id`, so that no two figures of the page share one."""
    svg = F.to_svg(fig, id_salt=fig_id)
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = svg.replace("<style type=\"text/css\">*{", "<style type=\"text/css\">svg.sbfig *{", 1)
    return svg.replace("<svg ", f'<svg class="sbfig" role="img" aria-label="{esc(alt)}" ', 1)


def _fig_block(fig_id: str, fig, caption: str) -> str:
    title = fig._suptitle.get_text().replace("\n", " ") if getattr(fig, "_suptitle", None) else caption
    return (f'<figure id="{fig_id}">{_svg_inline(fig, title, fig_id)}'
            f"<figcaption>{esc(caption)}</figcaption></figure>")


_NUMERIC = re.compile(r"^[-+–]?(\d|–$|none$|never$|TP\d)")


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]], *, left: int = 1,
           classes: Sequence[Sequence[str]] | None = None) -> str:
    """A table; the first `left` columns and every column that holds words are left-aligned,
    numbers right-aligned."""
    ncol = len(headers)
    lefts = [i < left or not all(_NUMERIC.match(str(row[i])) for row in rows if i < len(row)) for i in range(ncol)]
    head = "".join(f'<th class="l">{esc(h)}</th>' if lefts[i] else f"<th>{esc(h)}</th>"
                   for i, h in enumerate(headers))
    body = []
    for k, row in enumerate(rows):
        cells = []
        for i, v in enumerate(row):
            cls = ["l"] if lefts[i] else []
            if classes and classes[k][i]:
                cls.append(classes[k][i])
            attr = f' class="{" ".join(cls)}"' if cls else ""
            cells.append(f"<td{attr}>{esc(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"


def _ms(t_s) -> str:
    return "–" if t_s is None or not math.isfinite(t_s) else f"{t_s * 1e3:.2f}"


def _pct(x) -> str:
    return "–" if x is None else f"{100 * x:.0f}%"


def _tp(x) -> str:
    return "none" if x is None else f"TP{x}"


def render(data: ReportData, progress: Progress | None = None) -> str:
    """The report as one HTML document."""
    progress = progress or _noop
    st = data.settings
    budget = F.fmt_seconds(st["budget_s"]) if st["budget_s"] else "none"
    cfg = data.model_cfg
    parts: list[str] = []
    title = f"shardbudget: how far can {data.model} be sharded?"
    parts.append(f"<h1>{esc(title)}</h1>")
    parts.append(f'<p class="sub">{esc(data.model)} ({esc(st["dtype"])} weights), context {st["context"]} tokens, '
                 f"decode batch {esc(', '.join(str(b) for b in st['batches']))}, inter-token latency budget "
                 f"{esc(budget)}, collectives {esc(st['impl'])}; systems: "
                 f"{esc(', '.join(st['systems']))}. All times are predictions of the model "
                 f"unless marked measured.</p>")

    # --- verdict
    parts.append('<section id="verdict" class="verdict">')
    sentences = summary_sentences(data)
    n_batches = len(st["batches"])
    parts.append(f'<p class="lead">{esc(headline(data))}</p>')
    for s in sentences[:n_batches]:
        parts.append(f"<p>{esc(s)}</p>")
    parts.append('<ul class="systems">')
    for spec, res, stop in zip(data.specs, data.plans, sentences[n_batches:]):
        color = data.colors.get(spec.label, "#777")
        parts.append(f'<li><span class="swatch" style="background:{esc(color)}"></span>'
                     f"<b>{esc(F.system_finding(res))}</b>. {esc(stop)}</li>")
    parts.append("</ul></section>")

    rows = verdict_rows(data)
    parts.append('<h2 id="verdict-table">Verdict per system and batch</h2>')
    threshold = float((data.plans[0].assumptions or {}).get("comm_threshold", 0.30))
    cls = [["", "", "", "ok" if r["meets"] else "bad", "", "",
            "bad" if (r["comm_share"] or 0) > threshold else "",
            "ok" if r["meets"] and not r["too_far"] else ("bad" if not r["meets"] else "warn")] for r in rows]
    parts.append(_table(["system", "batch", "min TP (memory)", "max TP (budget)", "best TP", "ITL at best (ms)",
                         "comm share at best", "verdict"],
                        [[r["system"], r["batch"], _tp(r["min_tp"]), _tp(r["max_tp"]), _tp(r["best_tp"]),
                          _ms(r["itl_s"]), _pct(r["comm_share"]), r["verdict"]] for r in rows],
                        left=1, classes=cls))
    parts.append("<details><summary>What the planner says, in full</summary>")
    for res in data.plans:
        for br in res.results:
            parts.append(f"<p>{esc(br.verdict)}</p>")
    parts.append("</details>")

    # --- figures
    sections = [("fabric comparison", _section_fabric), ("where the token goes", _section_token),
                ("communication share", _section_share), ("memory window", _section_memory)]
    if data.measured:
        sections.append(("measured vs predicted", _section_measured))
    for k, (what, section) in enumerate(sections):
        progress(f"drawing {what}", k, len(sections))
        parts.append(section(data))
    progress("figures drawn", len(sections), len(sections))
    parts.append(_section_answers(data))
    parts.append(_section_catalog(data))
    parts.append(_section_assumptions(data))
    from .. import __version__
    parts.append(f"<footer>Written by shardbudget {esc(__version__)}. A single self-contained file: no "
                 f"scripts, no fonts, no links to load. Model config: {esc(cfg.name)} "
                 f"({cfg.num_layers} layers, hidden {cfg.hidden_size}, {cfg.num_heads} heads / "
                 f"{cfg.num_kv_heads} KV heads).</footer>")
    body = "\n".join(parts)
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            # No request may leave the page: the policy blocks any the content might still try.
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "style-src 'unsafe-inline'; img-src data:\">\n"
            f"<title>{esc(title)}</title>\n<style>{_CSS}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n")


def _section_fabric(data: ReportData) -> str:
    ecolors = {label: data.colors[spec.label] for spec, (label, *_rest) in zip(data.specs, data.fabric)}
    fig = F.fabric_comparison([(label, costs, cross) for label, costs, cross, *_ in data.fabric], op=FABRIC_OP,
                              marks=data.marks, colors=ecolors)
    out = ['<h2 id="fabrics">Fabrics: collective time vs message size</h2>',
           _fig_block("fig-fabric", fig, f"{FABRIC_OP} on all GPUs of each system. Solid: predicted time; "
                      "dashed: its latency term, the floor no bandwidth can lower; circles: the crossover where "
                      "the bandwidth term overtakes the latency term. Dotted verticals: the messages decode "
                      "and prefill of the model send.")]
    sizes = sorted(set([m for m, _ in data.marks] + list(REFERENCE_BYTES)))
    names = {m: lbl for m, lbl in data.marks}
    from ..collectives import sweep
    rows = []
    per_system = []
    for spec, (label, costs, cross, group, impl) in zip(data.specs, data.fabric):
        at = sweep(FABRIC_OP, sizes, spec.name, nodes=spec.nodes, impl=impl, catalog=data.catalog)
        per_system.append(at)
    for i, n in enumerate(sizes):
        rows.append([F.fmt_bytes(n), names.get(n, "reference")] +
                    [f"{F.fmt_seconds(a[i].time_s)} ({a[i].algorithm}/{a[i].protocol}, "
                     f"{100 * a[i].latency_share:.0f}% latency)" for a in per_system])
    rows.append(["crossover", "bandwidth term = latency term"] +
                [F.fmt_bytes(cross) if math.isfinite(cross) else "never" for _, _, cross, *_ in data.fabric])
    rows.append(["latency floor", "smallest message"] + [F.fmt_seconds(costs[0].time_s) for _, costs, *_ in data.fabric])
    out.append(_table(["message per rank", "what sends it"] + [label for label, *_ in data.fabric], rows, left=2))
    return "\n".join(out)


def _section_token(data: ReportData) -> str:
    fig = F.where_the_token_goes(data.plans, colors=data.colors)
    out = ['<h2 id="token">Where the token goes</h2>',
           _fig_block("fig-token", fig, "Inter-token latency per TP degree (pure tensor parallelism, PP = 1), "
                      "split into compute and the two terms of communication. Hatched: the plan does not fit in "
                      "GPU memory. Outlined and starred: the latency-optimal TP. Red shading: TPs the planner "
                      "calls sharded too far (communication over the threshold, or past the optimum).")]
    for spec, res in zip(data.specs, data.plans):
        rows, cls = [], []
        for br in res.results:
            for r in br.rows:
                rows.append([br.batch, r.tp, r.pp, r.ep, _ms(r.itl_s), _ms(r.compute_s), _ms(r.comm_latency_s),
                             _ms(r.comm_s - r.comm_latency_s), _pct(r.comm_share), _ms(r.ttft_s),
                             f"{r.mem_bytes_per_gpu / 1e9:.1f}", "yes" if r.fits_memory else "no", r.verdict])
                v = r.verdict
                cls.append([""] * 12 + ["ok" if v in ("ok", "latency-optimal") else
                                        "bad" if v in ("sharded too far", "does not fit") else "warn"])
        out.append(f"<details><summary>Table: every plan on {esc(spec.label)} ({len(rows)} rows)</summary>")
        out.append(_table(["batch", "TP", "PP", "EP", "ITL (ms)", "compute (ms)", "comm latency (ms)",
                           "comm transfer (ms)", "comm share", "TTFT (ms)", "GB per GPU", "fits", "verdict"],
                          rows, left=0, classes=cls))
        out.append("</details>")
    return "\n".join(out)


def _section_share(data: ReportData) -> str:
    fig = F.comm_share(data.plans, colors=data.colors)
    threshold = float((data.plans[0].assumptions or {}).get("comm_threshold", 0.30))
    out = ['<h2 id="share">Communication share of the inter-token latency</h2>',
           _fig_block("fig-share", fig, f"Share of each token spent in collectives, per TP degree. Above "
                      f"{100 * threshold:.0f}% the planner calls the plan sharded too far: the fabric, not the "
                      "GPUs, sets the latency.")]
    tps = sorted({r.tp for res in data.plans for br in res.results for r in F.tp_line(br.rows)})
    rows = []
    for spec, res in zip(data.specs, data.plans):
        for br in res.results:
            by_tp = {r.tp: r for r in F.tp_line(br.rows)}
            rows.append([spec.label, br.batch] + [_pct(by_tp[t].comm_share) + ("" if by_tp[t].fits_memory else " (no fit)")
                                                  if t in by_tp else "–" for t in tps])
    out.append(_table(["system", "batch"] + [f"TP{t}" for t in tps], rows, left=1))
    return "\n".join(out)


def _section_memory(data: ReportData) -> str:
    fig = F.memory_window(data.plans, catalog=data.catalog, colors=data.colors)
    out = ['<h2 id="memory">Memory window</h2>',
           _fig_block("fig-memory", fig, "Weights, KV cache and workspace per GPU against the GPU's memory (solid) "
                      "and the share an engine may use (dashed). Green: the TP degrees that both fit and meet "
                      "the budget.")]
    rows = []
    for spec, res in zip(data.specs, data.plans):
        gpu = data.catalog.system(res.system).gpu
        for br in res.results:
            line = F.tp_line(br.rows)
            ok = [r.tp for r in line if r.meets_budget]
            window = (f"TP{min(ok)}–TP{max(ok)}" if ok and min(ok) != max(ok) else f"TP{ok[0]}" if ok else "none")
            rows.append([spec.label, br.batch, f"{gpu.name} {format_decimal_bytes(gpu.memory_bytes)}",
                         " / ".join(f"TP{r.tp}: {r.mem_bytes_per_gpu / 1e9:.0f}" for r in line),
                         _tp(br.min_tp_memory), _tp(br.max_tp_budget), window])
    out.append(_table(["system", "batch", "GPU", "GB per GPU by TP", "min TP (memory)", "max TP (budget)",
                       "window"], rows, left=1))
    return "\n".join(out)


def _section_measured(data: ReportData) -> str:
    out = ['<h2 id="measured">Measured vs predicted</h2>']
    from ..measure.logs import summarize
    for k, entry in enumerate(data.measured):
        name = os.path.basename(entry.path) or entry.path
        out.append(f"<h3>{esc(name)}</h3>")
        out.append(f'<p class="note">{esc(summarize(entry.measurement))}; read from <code>{esc(entry.path)}</code>'
                   f" ({esc(entry.measurement.tool)}), compared with the model of {esc(entry.system)}.</p>")
        try:
            fig = F.measured_vs_predicted(entry.measurement, entry.system, impl=data.settings["impl"],
                                          catalog=data.catalog)
            out.append(_fig_block(f"fig-measured-{k}", fig, "Points: measured (nccl-tests out-of-place column, or "
                                  "the harness); lines: the model at the same sizes, ranks and nodes. Lower panel: "
                                  "(predicted − measured) / measured."))
        except ShardbudgetError as err:
            out.append(f'<p class="err">{esc(err)}</p>')
        rows = []
        for label, samples, pred in entry.groups:
            for i, s in enumerate(samples):
                p = pred[i] if pred else None
                rows.append([label, F.fmt_bytes(s.msg_bytes), F.fmt_seconds(s.time_s),
                             F.fmt_seconds(p) if p else "–",
                             f"{100 * (p - s.time_s) / s.time_s:+.0f}%" if p else "–", s.source])
        out.append(f"<details><summary>Table: {len(rows)} measured sizes</summary>")
        out.append(_table(["run", "size", "measured", "predicted", "error", "source line"], rows, left=1))
        out.append("</details>")
        if entry.measurement.warnings:
            out.append("<details><summary>Reader warnings</summary><ul>"
                       + "".join(f"<li>{esc(w)}</li>" for w in entry.measurement.warnings) + "</ul></details>")
    return "\n".join(out)


def _section_answers(data: ReportData) -> str:
    out = ['<h2 id="explain">Three questions, answered with these numbers</h2>']
    if data.answers_error:
        out.append(f'<p class="err">{esc(data.answers_error)}</p>')
    for a in data.answers:
        out.append(f'<div class="answer"><h3>{esc(a.question)}</h3><p>{esc(a.text)}</p>'
                   f'<p class="take">{esc(a.takeaway)}</p></div>')
    return "\n".join(out)


def _section_catalog(data: ReportData) -> str:
    cat = data.catalog
    systems, gpus, fabrics = [], [], []
    for spec in data.specs:
        s = cat.system(spec.name)
        if s not in systems:
            systems.append(s)
    for s in systems:
        if s.gpu not in gpus:
            gpus.append(s.gpu)
        for f in (s.intra_fabric, s.fallback_fabric, s.socket_fabric, s.nic_fabric):
            if f is not None and f not in fabrics:
                fabrics.append(f)
    out = ['<h2 id="catalog">Catalog entries used, with their sources</h2>',
           '<p class="note">Sources are shown as text, not links: the report loads nothing.</p>']
    out.append("<h3>Systems</h3>")
    out.append(_table(["system", "description", "GPUs per node", "topology", "scale-out", "source"],
                      [[s.name, s.description, s.gpus_per_node, s.topology,
                        f"{s.nics_per_node}× {s.nic_fabric.name}" if s.nic_fabric else "none", s.source]
                       for s in systems], left=2))
    out.append("<h3>GPUs</h3>")
    out.append(_table(["GPU", "description", "memory", "memory bandwidth", "BF16 dense", "FP8 dense", "figure",
                       "source"],
                      [[g.name, g.description, format_decimal_bytes(g.memory_bytes), format_rate(g.mem_bytes_per_s),
                        f"{g.bf16_flops_per_s / 1e12:.0f} TFLOP/s", f"{g.fp8_flops_per_s / 1e12:.0f} TFLOP/s",
                        g.figure, g.source] for g in gpus], left=2))
    out.append("<h3>Fabrics (bandwidth per GPU or NIC port, per direction)</h3>")
    out.append(_table(["fabric", "description", "peak", "achievable (busbw)", "hop LL", "hop Simple", "sources"],
                      [[f.name, f.description, format_rate(f.bytes_per_s), format_rate(f.achievable_bytes_per_s),
                        F.fmt_seconds(f.hop_latency_s["ll"]), F.fmt_seconds(f.hop_latency_s["simple"]),
                        "; ".join(x for x in (f"peak: {f.source}", f"achievable: {f.achievable_source}"
                                              if f.achievable_source else "",
                                              f"latency: {f.latency_source}" if f.latency_source else "") if x)]
                       for f in fabrics], left=2))
    nccl_src = cat.nccl.source
    if nccl_src:
        out.append(f'<p class="note">NCCL tuning-model constants (base and per-hop latencies per algorithm and '
                   f'protocol): <span class="src">{esc(nccl_src)}</span></p>')
    return "\n".join(out)


def _section_assumptions(data: ReportData) -> str:
    st = data.settings
    a = dict(data.plans[0].assumptions or {})
    eff = a.pop("efficiency", {}) or {}
    rows = [["model", data.model], ["weights dtype", a.get("weight_dtype", st["dtype"])],
            ["KV-cache dtype", a.get("kv_dtype", "")], ["activations dtype", a.get("act_dtype", "")],
            ["context (tokens in the KV cache)", st["context"]],
            ["ITL budget", F.fmt_seconds(st["budget_s"]) if st["budget_s"] else "none"],
            ["collective implementation", f"{st['impl']} (custom kernels fall back to NCCL where the "
                                          f"hardware cannot run them)"],
            ["fabric sweep", f"{FABRIC_OP}, {F.fmt_bytes(SWEEP_MIN_BYTES)} to {F.fmt_bytes(SWEEP_MAX_BYTES)}, all GPUs "
                             "of each system"],
            ["'sharded too far' threshold", _pct(a.get("comm_threshold"))],
            ["knee (latency-optimal TP)", f"the next TP lowers ITL by less than {_pct(a.get('knee_threshold'))}"],
            ["TTFT", a.get("ttft", "")]]
    units = {"flops": "of dense tensor-core peak", "memory": "of HBM/GDDR peak bandwidth",
             "memory_utilization": "of GPU memory usable by the engine"}
    for k, v in eff.items():
        if isinstance(v, float) and k.endswith("_s"):
            val = F.fmt_seconds(v) if v else "0"
        elif isinstance(v, float) and k.endswith("_bytes"):
            val = format_decimal_bytes(v)
        elif isinstance(v, float) and k in units:
            val = f"{100 * v:.0f}% {units[k]}"
        else:
            val = str(v)
        rows.append([f"efficiency.{k}", val])
    return ('<h2 id="assumptions">Assumptions</h2>' + _table(["assumption", "value"], rows, left=2))


# --- entry points ---------------------------------------------------------------------------

def build_report(model: str, systems: Sequence[str], *, nodes: int = 1, batches: Sequence[int] = (1, 64),
                 context: int = 4096, budget_s: float | None = 0.05, impl: str = "nccl", dtype: str = "bf16",
                 measured: Sequence[str | os.PathLike] = (), measured_system: str | None = None,
                 catalog=None, progress: Progress | None = None) -> str:
    """The report as an HTML string (see the module docstring)."""
    data = collect(model, systems, nodes=nodes, batches=batches, context=context, budget_s=budget_s, impl=impl,
                   dtype=dtype, measured=measured, measured_system=measured_system, catalog=catalog,
                   progress=progress)
    return render(data, progress)


def check_report_path(path: str | os.PathLike) -> Path:
    """Fail before any work if the report cannot be written there."""
    path = Path(path)
    if path.suffix.lower() not in REPORT_SUFFIXES:
        raise F.FigureError(f"cannot write the report to {path}: expected an .html file name, "
                            f"got {path.suffix or 'no extension'!r}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise F.FigureError(f"cannot write the report to {path}: folder {parent} does not exist")
    if path.is_dir():
        raise F.FigureError(f"cannot write the report to {path}: it is a folder")
    if not os.access(parent, os.W_OK):
        raise F.FigureError(f"cannot write the report to {path}: folder {parent} is not writable")
    return path


def write_html(path: str | os.PathLike, text: str) -> Path:
    path = check_report_path(path)
    return F.write_atomic(path, text.encode("utf-8"))


def write_report(path: str | os.PathLike, model: str, systems: Sequence[str], **kwargs) -> Path:
    """`build_report(model, systems, **kwargs)` written to `path` atomically (temp file + rename)."""
    check_report_path(path)
    return write_html(path, build_report(model, systems, **kwargs))


__all__ = ["ReportData", "SystemSpec", "build_report", "check_report_path", "collect", "parse_system_spec",
           "headline", "recommendations", "render", "summary_sentences", "verdict_rows", "write_html",
           "write_report"]
