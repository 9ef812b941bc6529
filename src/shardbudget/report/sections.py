"""The report's sections after the verdict: each a figure, the table behind it, and the catalog
entries and assumptions the numbers rest on.
"""

from __future__ import annotations

import math

from ..errors import ShardbudgetError
from ..measure.logs.read import summarize
from ..units import format_decimal_bytes, format_rate
from .fig_collectives import fabric_comparison
from .fig_measured import measured_vs_predicted
from .fig_plans import comm_share, memory_window, where_the_token_goes
from .fmt import fmt_bytes, fmt_ms, fmt_pct, fmt_seconds, fmt_tp
from .markup import esc, fig_block, table
from .plan_rows import comm_threshold, tp_line
from ..decide.report_answers import SWEEP_MAX_BYTES, SWEEP_MIN_BYTES
from .report_data import FABRIC_OP, ReportData
from .summary import engine_words, weights_words


def section_fabric(data: ReportData) -> str:
    ecolors = {curve.label: data.colors[spec.label] for spec, curve in zip(data.specs, data.fabric)}
    fig = fabric_comparison(
        [(c.label, c.costs, c.crossover_bytes) for c in data.fabric], op=FABRIC_OP, marks=data.marks, colors=ecolors
    )
    out = [
        '<h2 id="fabrics">Fabrics: collective time vs message size</h2>',
        fig_block(
            "fig-fabric",
            fig,
            f"{FABRIC_OP} on all GPUs of each system. Solid: predicted time; "
            "dashed: its latency term, the floor no bandwidth can lower; circles: the crossover where "
            "the bandwidth term overtakes the latency term. Dotted verticals: the messages decode "
            "and prefill of the model send.",
        ),
    ]
    sizes = data.table_sizes  # the model's messages and decide.report_answers.REFERENCE_BYTES
    names = {m: lbl for m, lbl in data.marks}
    per_system = [curve.table for curve in data.fabric]
    rows = []
    for i, n in enumerate(sizes):
        rows.append(
            [fmt_bytes(n), names.get(n, "reference")]
            + [
                f"{fmt_seconds(a[i].time_s)} ({a[i].algorithm}/{a[i].protocol}, "
                f"{100 * a[i].latency_share:.0f}% latency)"
                for a in per_system
            ]
        )
    rows.append(
        ["crossover", "bandwidth term = latency term"]
        + [fmt_bytes(c.crossover_bytes) if math.isfinite(c.crossover_bytes) else "never" for c in data.fabric]
    )
    rows.append(["latency floor", "smallest message"] + [fmt_seconds(c.costs[0].time_s) for c in data.fabric])
    out.append(table(["message per rank", "what sends it"] + [c.label for c in data.fabric], rows, left=2))
    return "\n".join(out)


def section_token(data: ReportData) -> str:
    fig = where_the_token_goes(data.plans, colors=data.colors)
    out = [
        '<h2 id="token">Where the token goes</h2>',
        fig_block(
            "fig-token",
            fig,
            "Inter-token latency per TP degree (pure tensor parallelism, PP = 1), "
            "split into compute and the two terms of communication. Hatched: the plan does not fit in "
            "GPU memory. Outlined and starred: the latency-optimal TP. Red shading: TPs the planner "
            "calls sharded too far (within the budget, more GPUs or a higher TP than a plan that is faster or at most the knee threshold slower).",
        ),
    ]
    for spec, res in zip(data.specs, data.plans):
        rows, cls = [], []
        for br in res.results:
            for r in br.rows:
                rows.append(
                    [
                        br.batch,
                        r.tp,
                        r.pp,
                        r.ep,
                        fmt_ms(r.itl_s),
                        fmt_ms(r.compute_s),
                        fmt_ms(r.comm_latency_s),
                        fmt_ms(r.comm_s - r.comm_latency_s),
                        fmt_pct(r.comm_share),
                        fmt_ms(r.ttft_s),
                        f"{r.mem_bytes_per_gpu / 1e9:.1f}",
                        "yes" if r.fits_memory else "no",
                        r.verdict,
                    ]
                )
                v = r.verdict
                cls.append(
                    [""] * 12
                    + [
                        "ok"
                        if v in ("ok", "latency-optimal")
                        else "bad"
                        if v in ("sharded too far", "does not fit")
                        else "warn"
                    ]
                )
        out.append(f"<details><summary>Table: every plan on {esc(spec.label)} ({len(rows)} rows)</summary>")
        out.append(
            table(
                [
                    "batch",
                    "TP",
                    "PP",
                    "EP",
                    "ITL (ms)",
                    "compute (ms)",
                    "comm latency (ms)",
                    "comm transfer (ms)",
                    "comm share",
                    "TTFT (ms)",
                    "GB per GPU",
                    "fits",
                    "verdict",
                ],
                rows,
                left=0,
                classes=cls,
            )
        )
        out.append("</details>")
    return "\n".join(out)


def section_share(data: ReportData) -> str:
    fig = comm_share(data.plans, colors=data.colors)
    threshold = comm_threshold(data.plans[0])
    out = [
        '<h2 id="share">Communication share of the inter-token latency</h2>',
        fig_block(
            "fig-share",
            fig,
            f"Share of each token spent in collectives, per TP degree. Above "
            f"{100 * threshold:.0f}% the planner warns that the plan is comm-bound: the fabric, not the "
            "GPUs, sets its latency (a warning; 'sharded too far' is the verdict on plans past the "
            "latency-optimal one).",
        ),
    ]
    tps = sorted({r.tp for res in data.plans for br in res.results for r in tp_line(br.rows)})
    rows = []
    for spec, res in zip(data.specs, data.plans):
        for br in res.results:
            by_tp = {r.tp: r for r in tp_line(br.rows)}
            rows.append([spec.label, br.batch] + [_share_cell(by_tp.get(t)) for t in tps])
    out.append(table(["system", "batch"] + [f"TP{t}" for t in tps], rows, left=1))
    return "\n".join(out)


def _share_cell(row) -> str:
    if row is None:
        return "–"
    return fmt_pct(row.comm_share) + ("" if row.fits_memory else " (no fit)")


def section_memory(data: ReportData) -> str:
    fig = memory_window(data.plans, catalog=data.catalog, colors=data.colors)
    out = [
        '<h2 id="memory">Memory window</h2>',
        fig_block(
            "fig-memory",
            fig,
            "Weights, KV cache and workspace per GPU against the GPU's memory (solid) "
            "and the share an engine may use (dashed). Green: the TP degrees that both fit and meet "
            "the budget. Dotted: the smallest TP that fits alone (PP 1); the table's fewest GPUs may "
            "use pipeline stages.",
        ),
    ]
    rows = []
    for spec, res in zip(data.specs, data.plans):
        gpu = data.catalog.system(res.system).gpu
        for br in res.results:
            line = tp_line(br.rows)
            ok = [r.tp for r in line if r.meets_budget]
            window = f"TP{min(ok)}–TP{max(ok)}" if ok and min(ok) != max(ok) else f"TP{ok[0]}" if ok else "none"
            small = br.judgement.smallest if br.judgement else None
            alone = next((r.tp for r in line if r.fits_memory), None)
            rows.append(
                [
                    spec.label,
                    br.batch,
                    f"{gpu.name} {format_decimal_bytes(gpu.memory_bytes)}",
                    " / ".join(f"TP{r.tp}: {r.mem_bytes_per_gpu / 1e9:.0f}" for r in line),
                    f"{small.gpus} ({small.label()})" if small else "none",
                    fmt_tp(alone),
                    fmt_tp(br.max_tp_budget),
                    window,
                ]
            )
    out.append(
        table(
            [
                "system",
                "batch",
                "GPU",
                "GB per GPU by TP (PP 1)",
                "fewest GPUs that fit (any plan)",
                "smallest TP that fits (PP 1)",
                "max TP (budget)",
                "window",
            ],
            rows,
            left=1,
        )
    )
    return "\n".join(out)


def section_measured(data: ReportData) -> str:
    out = ['<h2 id="measured">Measured vs predicted</h2>']
    for k, entry in enumerate(data.measured):
        out.append(f"<h3>{esc(entry.name)}</h3>")
        out.append(
            f'<p class="note">{esc(summarize(entry.measurement))}; read from <code>{esc(entry.path)}</code>'
            f" ({esc(entry.measurement.tool)}), compared with the model of {esc(entry.system)}.</p>"
        )
        try:
            fig = measured_vs_predicted(entry)
            out.append(
                fig_block(
                    f"fig-measured-{k}",
                    fig,
                    "Points: measured (nccl-tests out-of-place column, or "
                    "the harness); lines: the model at the same sizes, ranks and nodes. Lower panel: "
                    "(predicted − measured) / measured.",
                )
            )
        except ShardbudgetError as err:
            out.append(f'<p class="err">{esc(err)}</p>')
        rows = []
        for run in entry.runs:
            for i, s in enumerate(run.samples):
                p = run.predicted_s[i] if run.predicted_s else None
                rows.append(
                    [
                        run.label,
                        fmt_bytes(s.msg_bytes),
                        fmt_seconds(s.time_s),
                        fmt_seconds(p) if p else "–",
                        f"{100 * (p - s.time_s) / s.time_s:+.0f}%" if p else "–",
                        s.source,
                    ]
                )
        out.append(f"<details><summary>Table: {len(rows)} measured sizes</summary>")
        out.append(table(["run", "size", "measured", "predicted", "error", "source line"], rows, left=1))
        out.append("</details>")
        if entry.measurement.warnings:
            out.append(
                "<details><summary>Reader warnings</summary><ul>"
                + "".join(f"<li>{esc(w)}</li>" for w in entry.measurement.warnings)
                + "</ul></details>"
            )
    return "\n".join(out)


def section_answers(data: ReportData) -> str:
    out = ['<h2 id="explain">Three questions, answered with these numbers</h2>']
    if data.answers_error:
        out.append(f'<p class="err">{esc(data.answers_error)}</p>')
    for a in data.answers:
        out.append(
            f'<div class="answer"><h3>{esc(a.question)}</h3><p>{esc(a.text)}</p>'
            f'<p class="take">{esc(a.takeaway)}</p></div>'
        )
    return "\n".join(out)


def section_catalog(data: ReportData) -> str:
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
    out = [
        '<h2 id="catalog">Catalog entries used, with their sources</h2>',
        '<p class="note">Sources are shown as text, not links: the report loads nothing.</p>',
    ]
    out.append("<h3>Systems</h3>")
    out.append(
        table(
            ["system", "description", "GPUs per node", "topology", "scale-out", "source"],
            [
                [
                    s.name,
                    f"DEGRADED, not a reference: {s.degraded}. {s.description}" if s.degraded else s.description,
                    s.gpus_per_node,
                    s.topology,
                    f"{s.nics_per_node}× {s.nic_fabric.name}" if s.nic_fabric else "none",
                    s.source,
                ]
                for s in systems
            ],
            left=2,
        )
    )
    out.append("<h3>GPUs</h3>")
    out.append(
        table(
            ["GPU", "description", "memory", "memory bandwidth", "BF16 dense", "FP8 dense", "figure", "source"],
            [
                [
                    g.name,
                    g.description,
                    format_decimal_bytes(g.memory_bytes),
                    format_rate(g.mem_bytes_per_s),
                    f"{g.bf16_flops_per_s / 1e12:.0f} TFLOP/s",
                    f"{g.fp8_flops_per_s / 1e12:.0f} TFLOP/s",
                    g.figure,
                    g.source,
                ]
                for g in gpus
            ],
            left=2,
        )
    )
    out.append("<h3>Fabrics (bandwidth per GPU or NIC port, per direction)</h3>")
    out.append(
        table(
            ["fabric", "description", "peak", "achievable (busbw)", "hop LL", "hop Simple", "sources"],
            [
                [
                    f.name,
                    f.description,
                    format_rate(f.bytes_per_s),
                    format_rate(f.achievable_bytes_per_s),
                    fmt_seconds(f.hop_latency_s["ll"]),
                    fmt_seconds(f.hop_latency_s["simple"]),
                    "; ".join(
                        x
                        for x in (
                            f"peak: {f.source}",
                            f"achievable: {f.achievable_source}" if f.achievable_source else "",
                            f"latency: {f.latency_source}" if f.latency_source else "",
                        )
                        if x
                    ),
                ]
                for f in fabrics
            ],
            left=2,
        )
    )
    nccl_src = cat.nccl.source
    if nccl_src:
        out.append(
            f'<p class="note">NCCL tuning-model constants (base and per-hop latencies per algorithm and '
            f'protocol): <span class="src">{esc(nccl_src)}</span></p>'
        )
    return "\n".join(out)


def section_assumptions(data: ReportData) -> str:
    st = data.settings
    assumed = data.plans[0].assumptions
    eff = assumed.to_dict()["efficiency"]
    rows = [
        ["model", data.model],
        ["weights dtype", weights_words(data)],
        ["KV-cache dtype", assumed.kv_dtype],
        ["activations dtype", assumed.act_dtype],
        ["context (tokens in the KV cache)", st.context],
        ["budget (on the plans' ITL, the deployments' TPOT)", fmt_seconds(st.budget_s) if st.budget_s else "none"],
        *([["TTFT budget", fmt_seconds(st.ttft_budget_s)]] if st.ttft_budget_s else []),
        [
            "engine and all-reduce",
            engine_words(data)
            + (" (custom kernels fall back to NCCL where the hardware cannot run them)" if st.impl == "custom" else ""),
        ],
        [
            "fabric sweep",
            f"{FABRIC_OP}, {fmt_bytes(SWEEP_MIN_BYTES)} to {fmt_bytes(SWEEP_MAX_BYTES)}, all GPUs of each system",
        ],
        ["comm-bound warning threshold", fmt_pct(assumed.comm_threshold)],
        ["knee (latency-optimal TP)", f"the next TP lowers ITL by less than {fmt_pct(assumed.knee_threshold)}"],
        ["TTFT", assumed.ttft],
    ]
    units = {
        "flops": "of dense tensor-core peak",
        "memory": "of HBM/GDDR peak bandwidth",
        "memory_utilization": "of GPU memory usable by the engine",
    }
    for k, v in eff.items():
        if isinstance(v, float) and k.endswith("_s"):
            val = fmt_seconds(v) if v else "0"
        elif isinstance(v, float) and k.endswith("_bytes"):
            val = format_decimal_bytes(v)
        elif isinstance(v, float) and k in units:
            val = f"{100 * v:.0f}% {units[k]}"
        else:
            val = "none" if v is None else ("yes" if v is True else "no" if v is False else str(v))
        rows.append([f"efficiency.{k}", val])
    return '<h2 id="assumptions">Assumptions</h2>' + table(["assumption", "value"], rows, left=2)


SECTIONS = (
    ("fabric comparison", section_fabric),
    ("where the token goes", section_token),
    ("communication share", section_share),
    ("memory window", section_memory),
)
"""The figure sections in page order, (what, section); `section_measured` follows where there are measurements."""

__all__ = ["SECTIONS", "section_answers", "section_assumptions", "section_catalog", "section_measured"]
