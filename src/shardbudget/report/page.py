"""The report as one HTML document: title, the verdict in words, the verdict table, the
interactive section, the sections, and the shell around them.

One file, nothing to fetch: figures are inline SVG, the CSS is in a <style> element, the one script
(the interactive section's, `interactive`) is inline and allowed by its hash, there is no web font
and no link to anything. Source URLs from the catalog are shown as text, never as links or
resources, so opening the report makes no network request.
"""

from __future__ import annotations

from .. import __version__
from . import interactive
from .fmt import fmt_ms, fmt_pct, fmt_seconds, fmt_tp
from .markup import esc, table
from .plan_rows import comm_threshold, system_finding
from ..decide.report_answers import Progress, no_progress
from .report_data import ReportData
from .deployment import section_deploy
from .sections import SECTIONS, section_answers, section_assumptions, section_catalog, section_measured
from .summary import engine_words, headline, summary_sentences, verdict_rows, weights_words

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
.tw { max-width: 100%; overflow-x: auto; }
.tw > table { margin: 0; }
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
pre { white-space: pre-wrap; overflow-wrap: anywhere; text-indent: 2em each-line hanging; font-size: 12.5px;
  line-height: 1.45; background: #f6f8fa; border: 1px solid var(--line); border-radius: 6px; padding: 8px 12px;
  margin: 8px 0 16px; }
pre.launch span { white-space: nowrap; }
@media (max-width: 960px) {
  body { padding: 18px 14px 48px; }
  th, td { padding: 3px 5px; }
  table { font-size: 12px; }
}
footer { margin-top: 48px; color: var(--muted); font-size: 12.5px; border-top: 1px solid var(--line); padding-top: 10px; }
"""


def render(data: ReportData, progress: Progress | None = None) -> str:
    """The report as one HTML document."""
    progress = progress or no_progress
    title = f"shardbudget: how far can {data.model} be sharded?"
    parts = [
        f"<h1>{esc(title)}</h1>",
        _subtitle(data),
        _verdict(data),
        _verdict_table(data),
        interactive.section_explore(data),
    ]
    sections = list(SECTIONS)
    if data.measured:
        sections.append(("measured vs predicted", section_measured))
    for k, (what, section) in enumerate(sections):
        progress(f"drawing {what}", k, len(sections))
        parts.append(section(data))
    progress("figures drawn", len(sections), len(sections))
    parts += [
        section_deploy(data),
        section_answers(data),
        section_catalog(data),
        section_assumptions(data),
        _footer(data),
    ]
    return _document(title, "\n".join(p for p in parts if p), scripted=data.grid is not None)


def _subtitle(data: ReportData) -> str:
    st = data.settings
    budget = fmt_seconds(st.budget_s) if st.budget_s else "none"
    return (
        f'<p class="sub">{esc(data.model)} ({esc(weights_words(data))} weights), context {st.context} tokens, '
        f"decode batch {esc(', '.join(str(b) for b in st.batches))}, inter-token latency budget "
        f"{esc(budget)}, {esc(engine_words(data))}; systems: "
        f"{esc(', '.join(st.systems))}. All times are predictions of the model "
        f"unless marked measured.</p>"
    )


def _verdict(data: ReportData) -> str:
    """The headline, one paragraph per batch size, one line per system."""
    sentences = summary_sentences(data)
    n_batches = len(data.settings.batches)
    parts = ['<section id="verdict" class="verdict">', f'<p class="lead">{esc(headline(data))}</p>']
    for s in sentences[:n_batches]:
        parts.append(f"<p>{esc(s)}</p>")
    parts.append('<ul class="systems">')
    per_system = iter(sentences[n_batches:])  # one sentence per batch of each system, in order
    for spec, res in zip(data.specs, data.plans):
        own = " ".join(next(per_system) for _ in res.results)
        color = data.colors.get(spec.label, "#777")
        parts.append(
            f'<li><span class="swatch" style="background:{esc(color)}"></span>'
            f"<b>{esc(system_finding(res))}</b>. {esc(own)}</li>"
        )
    parts.append("</ul></section>")
    return "\n".join(parts)


def _verdict_table(data: ReportData) -> str:
    rows = verdict_rows(data)
    threshold = comm_threshold(data.plans[0])
    cls = [
        [
            "",
            "",
            "",
            "ok" if r["meets"] else "bad",
            "",
            "",
            "bad" if (r["comm_share"] or 0) > threshold else "",
            "",
            "ok" if r["meets"] and not r["too_far"] else ("bad" if not r["meets"] else "warn"),
        ]
        for r in rows
    ]
    parts = [
        '<h2 id="verdict-table">Verdict per system and batch</h2>',
        f'<p class="note">{esc(engine_words(data))}; fewest GPUs: the plan that fits on the fewest GPUs '
        "(any TP x PP), as <code>plan</code> says it.</p>",
        table(
            [
                "system",
                "batch",
                "fewest GPUs (memory)",
                "max TP (budget)",
                "best plan",
                "ITL at best (ms)",
                "comm share at best",
                "all-reduce at best",
                "verdict",
            ],
            [
                [
                    r["system"],
                    r["batch"],
                    r["fewest_gpus"],
                    fmt_tp(r["max_tp"]),
                    r["best_plan"] or "none",
                    fmt_ms(r["itl_s"]),
                    fmt_pct(r["comm_share"]),
                    r["allreduce"] or "–",
                    r["verdict"],
                ]
                for r in rows
            ],
            left=1,
            classes=cls,
        ),
        "<details><summary>What the planner says, in full</summary>",
    ]
    for res in data.plans:
        for br in res.results:
            parts.append(f"<p>{esc(br.verdict)}</p>")
    parts.append("</details>")
    return "\n".join(parts)


def _footer(data: ReportData) -> str:
    cfg = data.model_cfg
    scripts = "one inline script that reads the grid in the page" if data.grid is not None else "no scripts"
    return (
        f"<footer>Written by shardbudget {esc(__version__)}. A single self-contained file: {scripts}, "
        f"no fonts, no links to load. Model config: {esc(cfg.name)} "
        f"({cfg.num_layers} layers, hidden {cfg.hidden_size}, {cfg.num_heads} heads / "
        f"{cfg.num_kv_heads} KV heads).</footer>"
    )


def _document(title: str, body: str, *, scripted: bool = False) -> str:
    # No request may leave the page: the policy blocks any the content might still try, and runs
    # no script but the interactive section's own (by its hash).
    scripts = f" script-src {interactive.script_hash()};" if scripted else ""
    css = _CSS + (interactive.CSS if scripted else "")
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta http-equiv="Content-Security-Policy" content="default-src \'none\';'
        f"{scripts} style-src 'unsafe-inline'; img-src data:\">\n"
        f"<title>{esc(title)}</title>\n<style>{css}</style>\n</head>\n<body>\n{body}\n</body>\n</html>\n"
    )


__all__ = ["render"]
