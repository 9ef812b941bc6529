"""Terminal tables (rich). Only formatting lives here: every number comes from the library.

Every table fits the terminal without dropping a character (issue 24: at 80 columns `plan` printed
"0.…" and "la…"): a number or a name is never cut; a table too wide for the terminal first takes its
columns' short headers, then folds its columns into further tables that repeat the key columns,
and only free text (a verdict, a source URL) wraps inside its cell. The width is $COLUMNS where set,
the terminal's at a terminal, and 220 columns when piped (files, tests), so nothing folds there.

Every cell and line goes out through `quoting.terminal`: a name (a model folder's, a catalog entry's,
a description) carries no escape sequence to the terminal raw.
"""

from __future__ import annotations

import math
import os
import re
import shutil
import sys
import textwrap
from dataclasses import dataclass

from rich.console import Console
from rich.table import Table

from ..defaults import DEPLOY_ROWS
from ..comm.custom_kernels import ENGINES
from ..comm.moe_a2a import BACKEND_WORDS
from ..comm.op import nccl_tests_count
from ..comm.net_path import describe as describe_net_path
from ..decide.release_words import nccl_words
from ..fabric.hardware import DEGRADED_WORDS, Catalog, to_dict
from ..quoting import terminal
from ..units import format_bytes, format_decimal_bytes, format_rate, format_seconds

PIPED_WIDTH = 220


def terminal_width() -> int:
    """$COLUMNS where set, else the terminal's width, else PIPED_WIDTH (not a terminal)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else PIPED_WIDTH


def text_width() -> int | None:
    """The width free text wraps at: $COLUMNS or the terminal's; None when piped without $COLUMNS (one
    line per paragraph, for grep and for other programs)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    return shutil.get_terminal_size((80, 24)).columns if sys.stdout.isatty() else None


console = Console(
    soft_wrap=True, width=terminal_width(), markup=False, emoji=False
)  # cells are plain text: no markup or :emoji: parsing (start-up)


@dataclass(frozen=True)
class Col:
    """One column: its header, a shorter one for narrow terminals, its alignment, and whether its
    cells are free text that may wrap (numbers and names never do)."""

    header: str
    short: str = ""
    justify: str = "right"
    wrap: bool = False
    min_wrap: int = 16
    """The narrowest a wrapping column gets: its longest word, at most this (a longer word folds)."""


_BORDER = 3  # rich's default box: a bar and one space of padding either side of every cell


def _widths(cols: list[Col], rows: list[list[str]], short: bool) -> list[int]:
    out = []
    for i, c in enumerate(cols):
        head = (c.short or c.header) if short else c.header
        cells = [r[i] for r in rows]
        if c.wrap:
            longest_word = max((len(w) for cell in cells for w in cell.split()), default=0)
            out.append(max(len(head), min(longest_word, c.min_wrap)))  # rich widens it where there is room
        else:
            out.append(max([len(head)] + [len(x) for x in cells]))
    return out


def _groups(cols: list[Col], widths: list[int], keys: int, width: int) -> list[list[int]]:
    """Column indices of each table: the key columns, then as many others as fit, in order."""
    groups: list[list[int]] = []
    base = 1 + sum(widths[i] + _BORDER for i in range(keys))
    current: list[int] = list(range(keys))
    used = base
    for i in range(keys, len(cols)):
        need = widths[i] + _BORDER
        if used + need > width and len(current) > keys:
            groups.append(current)
            current, used = list(range(keys)), base
        current.append(i)
        used += need
    groups.append(current)
    return groups


def print_table(
    title: str, cols: list[Col], rows: list[list[str]], *, keys: int = 1, caption: str | None = None
) -> None:
    """A table that fits the terminal (module docstring): full headers if they fit, else short ones,
    else the columns folded into several tables, each repeating the first `keys` columns."""
    title, caption = terminal(title), caption and terminal(caption)
    rows = [[terminal(cell) for cell in r] for r in rows]
    width = terminal_width()
    console.width = width
    short = 1 + sum(w + _BORDER for w in _widths(cols, rows, False)) > width
    widths = _widths(cols, rows, short)
    groups = _groups(cols, widths, keys, width)
    for n, group in enumerate(groups):
        part = f" ({n + 1}/{len(groups)})" if len(groups) > 1 else ""
        t = Table(title=title + part, caption=caption if n == len(groups) - 1 else None)
        for i in group:
            c = cols[i]
            head = (c.short or c.header) if short else c.header
            t.add_column(head, justify=c.justify, overflow="fold", no_wrap=not c.wrap, min_width=widths[i])
        for r in rows:
            t.add_row(*(r[i] for i in group))
        console.print(t)


_UNIT = re.compile(r"(\d) (?=(?:µs|ms|ns|s|%|x|B|KiB|MiB|GiB|kB|MB|GB|TB|GB/s|MB/s|tok/s|tokens|GPUs?)\b)")


def wrap(text: str, width: int | None) -> str:
    """Free text at `width` (None: as it is): wrapped at spaces, never inside a word nor between a number
    and its unit; a '# ' line continues with '# '."""
    if width is None:
        return text
    out = []
    for line in text.split("\n"):
        lead = "# " if line.startswith("# ") else ""
        glued = _UNIT.sub("\\1\x00", line)
        out.append(
            textwrap.fill(glued, width, subsequent_indent=lead, break_long_words=False, break_on_hyphens=False).replace(
                "\x00", " "
            )
            or line
        )
    return "\n".join(out)


def _out(text: str = "") -> None:
    """Print a line (or lines) the library wrote, its control characters escaped (`quoting.terminal`)."""
    print(terminal(text))


def say(text: str) -> None:
    """Print free text at the terminal's width (`wrap`). Launch lines are printed whole: they are
    commands to copy."""
    _out(wrap(terminal(text), text_width()))


def fabrics_dict(cat: Catalog) -> dict:
    return {
        "fabrics": [to_dict(f) for f in cat.fabrics.values()],
        "gpus": [to_dict(g) for g in cat.gpus.values()],
        "systems": [_system_summary(s) for s in cat.systems.values()],
        "host_staged": [to_dict(r) for r in cat.host_staged.values()],
    }


def _system_summary(s) -> dict:
    return {
        "name": s.name,
        "description": s.description,
        "gpu": s.gpu.name,
        "gpus_per_node": s.gpus_per_node,
        "topology": s.topology,
        "intra_fabric": s.intra_fabric.name,
        "fallback_fabric": s.fallback_fabric.name if s.fallback_fabric else None,
        "socket_fabric": s.socket_fabric.name if s.socket_fabric else None,
        "gpus_per_socket": s.gpus_per_socket,
        "nic_fabric": s.nic_fabric.name if s.nic_fabric else None,
        "nics_per_node": s.nics_per_node,
        "rail_optimized": s.rail_optimized,
        "degraded": s.degraded,
        "source": s.source,
    }


def print_fabrics(cat: Catalog, systems: bool = False) -> None:
    cols = [
        Col("name", justify="left"),
        Col("kind", justify="left"),
        Col("peak"),
        Col("achievable", "achiev."),
        Col("hop LL", "LL"),
        Col("hop Simple", "Simple"),
        Col("NVLS"),
        Col("P2P"),
        Col("source", justify="left", wrap=True, min_wrap=30),
    ]
    rows = [
        [
            f.name,
            f.kind,
            format_rate(f.bytes_per_s),
            format_rate(f.achievable_bytes_per_s),
            format_seconds(f.hop_latency_s["ll"]),
            format_seconds(f.hop_latency_s["simple"]),
            "yes" if f.in_switch_reduction else "",
            "yes" if f.p2p else "no",
            f.source,
        ]
        for f in cat.fabrics.values()
    ]
    print_table("Fabrics (bandwidth per GPU or per NIC port, per direction)", cols, rows)
    if not systems:
        return
    cols = [
        Col("name", justify="left"),
        Col("GPUs"),
        Col("GPU", justify="left"),
        Col("topology", "topo", justify="left"),
        Col("intra-node", "intra", justify="left"),
        Col("scale-out", "NICs", justify="left"),
        Col("source", justify="left", wrap=True, min_wrap=30),
    ]
    rows = []
    for sy in cat.systems.values():
        nic = f"{sy.nics_per_node}x {sy.nic_fabric.name}" if sy.nic_fabric else "-"
        intra = sy.intra_fabric.name + (f" / {sy.socket_fabric.name}" if sy.socket_fabric else "")
        # a degraded profile says so and why, first (issue 34); its name says it too, but a user's on a degraded CPU may not
        source = f"DEGRADED, not a reference: {sy.degraded}. {sy.source}" if sy.degraded else sy.source
        rows.append([sy.name, str(sy.gpus_per_node), sy.gpu.name, sy.topology, intra, nic, source])
    print_table("Systems (nodes)", cols, rows)
    cols = [
        Col("name", justify="left"),
        Col("memory"),
        Col("mem bandwidth", "mem BW"),
        Col("BF16"),
        Col("FP8"),
        Col("source", justify="left", wrap=True, min_wrap=30),
    ]
    rows = [
        [
            gpu.name,
            format_decimal_bytes(gpu.memory_bytes),
            format_rate(gpu.mem_bytes_per_s),
            f"{gpu.bf16_flops_per_s / 1e12:.0f} TFLOP/s",
            _fp8_cell(gpu),
            gpu.source,
        ]
        for gpu in cat.gpus.values()
    ]
    print_table("GPUs (dense tensor-core peaks)", cols, rows)
    if cat.host_staged:
        print_host_staged(cat)


def print_host_staged(cat: Catalog) -> None:
    """The host-staged (SHM) rings by platform, by generation within each (issue 34): what the pcieN-no-p2p
    fabrics and the CPU entries' socket streams quote."""
    cols = [
        Col("name", justify="left"),
        Col("Gen"),
        Col("sockets", "skt"),
        Col("NUMA", justify="left"),
        Col("GPUs on", "attach", justify="left"),
        Col("where", justify="left"),
        Col("GPUs"),
        Col("busbw"),
        Col("source", justify="left", wrap=True, min_wrap=30),
    ]
    rows = []
    for r in sorted(cat.host_staged.values(), key=lambda r: (bool(r.degraded), r.sockets, r.pcie_gen, r.name)):
        source = r.source if r.measured else f"estimate: {r.source}"
        rows.append(
            [
                r.name,
                str(r.pcie_gen),
                str(r.sockets),
                r.numa,
                r.attach,
                r.environment,
                str(r.gpus),
                format_rate(r.busbw_bytes_per_s),
                f"DEGRADED, not a reference: {r.degraded}. {source}" if r.degraded else source,
            ]
        )
    print_table(
        "Host-staged paths (all-reduce busbw of rings whose every hop is staged through host memory)", cols, rows
    )


def _fp8_cell(gpu) -> str:
    """FP8 where the GPU's tensor cores have it; '-' where they have not (A100: its catalog figure is BF16's)."""
    if not gpu.generation.fp8_tensor_cores:
        return "-"
    return f"{gpu.fp8_flops_per_s / 1e12:.0f} TFLOP/s"


def impl_words(requested: str, costs, why_not: str | None = None) -> str:
    """What ran, as the header says it: one library, or a mix (the engines' custom kernels where they
    can run, NCCL elsewhere), with the reason custom kernels were not used where they were not:
    `why_not` (custom_allreduce_allowed) where they cannot run on the group, else the sizes."""
    used = sorted({c.impl for c in costs})
    if requested == "nccl" or used == ["custom"]:
        return f"impl {used[0] if used else requested}"
    if used == ["nccl"]:
        return f"impl {requested} requested, NCCL used: " + (why_not or "every size is past its kernels' range")
    return f"impl {requested} where its kernels accept the size, NCCL elsewhere"


def print_sweep(
    group,
    costs,
    *,
    op: str,
    impl: str,
    elem_bytes: float,
    crossover: float,
    why_not_custom: str | None = None,
    rule: str | None = None,
) -> None:
    """nccl-tests' column layout (count per rank), plus algorithm, protocol, implementation and the
    latency share of each row; `rule`: the engine's all-reduce rule the rows follow."""
    s = group.system
    _out(
        f"# shardbudget {op}: {s.name}, {group.ranks} GPUs on {group.nodes} node(s) "
        f"({s.gpu.name}, {s.intra_fabric.name}"
        + (f", {s.nics_per_node}x {s.nic_fabric.name}" if group.nodes > 1 and s.nic_fabric else "")
        + f"), {impl_words(impl, costs, why_not_custom)}, NCCL {nccl_words(group.catalog, impl if impl in ENGINES else None)}  [predicted]"
    )
    if impl == "custom" and why_not_custom:
        _out(f"# note: {why_not_custom}")
    if s.degraded:  # the catalog's words, read, not priced (issue 34: a degraded box says so where shown)
        _out(f"# warning: {s.name} {DEGRADED_WORDS}: {s.degraded}")
    if rule:
        _out(f"# {impl} rule: {rule}")
    if group.nodes > 1 and s.nic_fabric is not None:
        _out(f"# network: {describe_net_path(s, group.catalog.nccl)}")
    _out(
        f"# crossover (bandwidth term > latency term): "
        f"{format_bytes(crossover) if crossover != float('inf') else 'never'}"
    )
    _out(
        f"#{'size':>12} {'count':>12} {'time(µs)':>10} {'algbw(GB/s)':>12} {'busbw(GB/s)':>12}"
        f"  {'algorithm':<12} {'proto':<6} {'impl':<6} {'lat%':>5}"
    )
    for c in costs:
        count = nccl_tests_count(op, c.msg_bytes, elem_bytes, group.ranks)
        _out(
            f" {int(c.msg_bytes):>12d} {count:>12d} {c.time_s * 1e6:>10.2f} "
            f"{c.algbw_bytes_per_s / 1e9:>12.2f} {c.busbw_bytes_per_s / 1e9:>12.2f}  "
            f"{c.algorithm:<12} {c.protocol:<6} {c.impl:<6} {100 * c.latency_share:>5.0f}"
        )


def print_compare(result) -> None:
    cols = [Col("message"), Col("why", justify="left", wrap=True, min_wrap=12)]
    cols += [Col(s) for s in result.systems] + [Col("slowest / fastest", "max/min")]
    rows = [
        [
            format_bytes(row.msg_bytes),
            row.label,
            *(f"{format_seconds(x.time_s)} ({x.algorithm}/{x.protocol})" for x in row.costs),
            f"{row.ratio:.1f}x",
        ]
        for row in result.rows
    ]
    print_table(f"{result.op} on {result.gpus_label}: predicted time per call", cols, rows)
    for name, cross, note in zip(result.systems, result.crossovers, result.notes):
        _out(f"  {name}: crossover {format_bytes(cross) if cross != float('inf') else 'never'}; {note}")


def print_plan(result) -> None:
    budget = format_seconds(result.budget_s) if result.budget_s else "none"
    a = result.assumptions
    ttft = f", TTFT budget {format_seconds(result.ttft_budget_s)}" if result.ttft_budget_s else ""
    experts = a.expert_dtype
    weights = result.dtype + (f", {experts} experts" if experts and experts != result.dtype else "")
    engine = " ".join(str(x) for x in (a.engine, a.engine_version) if x)
    nccl = f", NCCL {a.nccl}" if a.nccl else ""
    say(
        f"# {result.model} on {result.nodes} x {result.system}, context {result.context}, {a.judged} budget {budget}{ttft}, "
        f"engine {engine}{nccl}, weights {weights}"
    )
    for tp, words in a.allreduce.items():
        say(f"# all-reduce at {tp}: {words}")
    if a.settings.moe_a2a != "nccl":
        say(f"# MoE dispatch and combine: {BACKEND_WORDS[a.settings.moe_a2a]}")
    for note in a.notes:  # a warning (a degraded system) is said as one, as deploy says it
        say(f"# {note}" if note.startswith("warning:") else f"# note: {note}")
    if a.tail:
        say(f"# {a.tail}")
    if a.tpot:
        say(f"# {a.tpot}")
    for br in result.results:
        tail = any(r.itl_p99_s is not None for r in br.rows)  # a --jitter log measured the calls' spread
        served = any(r.tpot_s is not None for r in br.rows)  # --input-len/--output-len: the served TPOT
        ttft_ok = bool(result.ttft_budget_s)  # which rows the TTFT budget fails
        cols = [
            Col("tp"),
            Col("pp"),
            Col("ep"),
            Col("dp"),
            Col("ITL ms", "ITL"),
            *([Col("TPOT ms", "TPOT")] if served else []),
            *([Col("p99 ITL ms", "p99")] if tail else []),
            Col("compute ms", "comp"),
            Col("comm ms", "comm"),
            Col("host ms", "host"),
            Col("comm %", "c%"),
            Col("TTFT ms", "TTFT"),
            *([Col("TTFT ok", "T ok")] if ttft_ok else []),
            Col("GB/GPU", "GB"),
            Col("fits"),
            Col("verdict", justify="left", wrap=True, min_wrap=10),
        ]
        rows = []
        for r in br.rows:
            verdict = r.verdict + (" (comm-bound)" if r.comm_bound and r.fits_memory else "")
            p99 = [f"{r.itl_p99_s * 1e3:.2f}" if r.itl_p99_s is not None else "-"] if tail else []
            tpot = [f"{r.tpot_s * 1e3:.2f}" if r.tpot_s is not None else "-"] if served else []
            ok = ["yes" if r.ttft_s <= result.ttft_budget_s else "no"] if ttft_ok else []
            compute, comm, host = r.judged_parts  # of the time the budget judges: the TPOT where served, else the ITL
            rows.append(
                [
                    str(r.tp),
                    str(r.pp),
                    str(r.ep),
                    str(r.dp),
                    f"{r.itl_s * 1e3:.2f}",
                    *tpot,
                    *p99,
                    f"{compute * 1e3:.2f}",
                    f"{comm * 1e3:.2f}",
                    f"{host * 1e3:.2f}",
                    f"{100 * r.comm_share:.0f}",
                    f"{r.ttft_s * 1e3:.0f}",
                    *ok,
                    f"{r.mem_bytes_per_gpu / 1e9:.1f}",
                    "yes" if r.fits_memory else "no",
                    verdict,
                ]
            )
        print_table(f"batch {br.batch}", cols, rows, keys=4)
        best = br.judgement.best.label() if br.judgement and br.judgement.best else None
        smallest = br.judgement.smallest.label() if br.judgement and br.judgement.smallest else None
        say(
            f"fewest GPUs that fit: {f'{br.min_gpus_memory} ({smallest})' if smallest else 'none'}   "
            f"max TP within budget: {f'TP{br.max_tp_budget}' if br.max_tp_budget else 'none'}   "
            f"latency-optimal: {best or 'none'}"
        )
        say(br.verdict)
        _out()


_MEMORY_PARTS = ("weights", "kv_cache", "activations", "cuda_graphs", "comm_buffers", "cuda_context", "total")
_MEMORY_SHORT = {
    "weights": "wts",
    "kv_cache": "KV",
    "activations": "act",
    "cuda_graphs": "graphs",
    "comm_buffers": "comm",
    "cuda_context": "ctx",
    "total": "total",
}


def _memory_cols(first: str, extra: tuple[str, ...] = ()) -> list[Col]:
    return (
        [Col(first, justify="left"), *(Col(e) for e in extra)]
        + [Col(p.replace("_", " "), _MEMORY_SHORT[p]) for p in _MEMORY_PARTS]
        + [Col("fits")]
    )


def _memory_cells(memory: dict | None) -> list[str]:
    return [f"{(memory or {}).get(p, 0.0) / 1e9:.2f}" for p in _MEMORY_PARTS]


def print_memory(result) -> None:
    """Per batch and plan: what the engine allocates on the most loaded GPU, GB."""
    for br in result.results:
        rows = [[r.label(), *_memory_cells(r.memory), "yes" if r.fits_memory else "no"] for r in br.rows]
        print_table(
            f"memory per GPU, GB (batch {br.batch}; engine {result.assumptions.engine})", _memory_cols("plan"), rows
        )


def print_deploy_memory(result, *, rows: int | None = None) -> None:
    """deploy --memory: per option, at the batch it runs (its largest within the budgets, or --batch;
    batch 1 where none fits), what the engine allocates on the most loaded GPU, GB."""
    shown = result.options if rows is None else result.options[:rows]
    cells = [
        [
            o.label(),
            str(o.max_batch or o.pp * (result.batch or 1)),
            *_memory_cells(o.memory),
            "no" if o.binding == "memory" and not o.max_batch else "yes",
        ]
        for o in shown
    ]
    print_table(
        f"memory per GPU, GB (per option at its batch; engine {result.engine})",
        _memory_cols("option", ("batch",)),
        cells,
    )


def print_deploy(result, *, rows: int | None = DEPLOY_ROWS) -> None:
    """The options, best first (the first `rows`; None: all), then the choice in words and its
    launch lines: with `rows` None (--all) every line, else one per shape of step where a launch
    has more than launch.layout.SUMMARY_STEPS (Launch.summary; --emit writes them all)."""
    budgets = (
        ", ".join(
            w
            for w in (
                f"{result.judged} budget {format_seconds(result.budget_s)}" if result.budget_s else "",
                f"TTFT budget {format_seconds(result.ttft_budget_s)}" if result.ttft_budget_s else "",
            )
            if w
        )
        or "no budget"
    )
    w = result.workload
    load = f"context {w.context}" if w.context else f"input {w.input_len}, output {w.output_len} tokens"
    b = getattr(result, "batch", None)  # a PP replica: PP micro-batches of b, where plan's PP row holds b
    load += f", every option at batch {b} (a PP replica holds PP x {b}: its memory is plan's at PP x {b})" if b else ""
    spec = (
        f", speculative {w.speculation.method} k={w.speculation.draft_tokens} a={w.speculation.acceptance:g}"
        if w.speculation
        else ""
    )
    nccl = f", NCCL {result.nccl}" if getattr(result, "nccl", "") else ""
    engine = " ".join(x for x in (result.engine, getattr(result, "engine_version", "")) if x)
    say(
        f"# {result.model} on {result.gpus} GPUs ({result.nodes} x {result.system}), engine {engine}{nccl}, "
        f"{load}{spec}; {budgets}"
    )
    degraded = [n for n in result.notes if DEGRADED_WORDS in n]  # in the header, as plan says it
    for note in degraded:
        say(f"# {note}")
    objective = _say_prices(getattr(result, "costs", None))
    shown = result.options if rows is None else result.options[:rows]
    every_line = rows is None  # --all: every launch line too, not one per shape of step
    left = len(result.options) - len(shown)
    say(f"# {result.judged_words}")
    if getattr(result, "load", None) and result.best is not None:  # --rate/--users: the load beside the cap
        say(
            f"# at {result.load}: {result.best.label()} runs {result.in_flight} sequences in flight per replica; "
            f"the batch cap is each option's most within the budgets, the engines' largest batch"
        )
    if getattr(result, "tail", None):
        say(f"# {result.tail}")
    tail = any(o.itl_p99_s is not None for o in shown)  # --jitter: the p99 beside the mean, as plan's table
    tpot = result.judged == "TPOT"  # prompts mixed in, or a speculative step's several tokens: another number
    itl = [Col("ITL ms", "ITL"), *([Col("TPOT ms", "TPOT")] if tpot else [])]
    itl += [Col("p99 ITL ms", "p99")] if tail else []
    # per replica: the batch given (--batch), or the largest within the budgets, which the launch lines set
    batch = Col("in flight", "seqs") if getattr(result, "batch", None) else Col("batch cap", "cap")
    cols = [
        Col("option", justify="left"),
        batch,
        *itl,
        Col("TTFT ms", "TTFT"),
        Col("tok/s"),
        Col("tok/s/GPU", "/GPU"),
        Col("$/Mtok", "$/M"),
        Col("tok/J", "t/J"),
        Col("tok/s/user", "/user"),
        Col("GB/GPU", "GB"),
        Col("comm %", "c%"),
        Col("binding", "binds", justify="left", wrap=True, min_wrap=8),
        Col("meets", "ok"),
    ]
    rows = [deploy_cells(o, tpot=tpot, tail=tail) for o in shown]
    cols, rows = _fit_costs(cols, rows, objective)
    print_table(
        f"options (best {_BY.get(objective, '')}first)",
        cols,
        rows,
        caption=f"{left} more options: --all shows every one, --json lists them" if left else None,
    )
    for note in result.notes:
        if (note.startswith("warning:") and note not in degraded) or note.startswith(
            "engine:"
        ):  # engine: an older release
            say(f"# {note}")
    if w.context:
        say(f"# TTFT: one {w.context}-token prompt prefilled alone, as plan prices a decode-only row's")
    say(result.verdict)
    launches = getattr(result, "launches", {})
    for engine, text in result.launch.items():  # a multi-line launch indented under its engine
        if not every_line and engine in launches:  # one line per shape of step (Launch.summary)
            text = launches[engine].summary()
        _out(f"{engine:>7}: " + text.replace("\n", "\n" + " " * 9))


_BY = {"cost": "$/Mtok ", "energy": "tok/J "}


def _say_prices(costs) -> str:
    """deploy's header line of what ranks the options and the prices and powers they are costed at
    (decide.cost.CostView); the objective."""
    prices, objective = (costs.prices, costs.objective) if costs else ({}, "throughput")
    if prices:
        usd, watts = prices.get("usd_per_gpu_hour"), prices.get("gpu_watts")
        say(
            f"# ranked by {objective}; "
            + (f"${usd:g} per GPU-hour" if usd else "no GPU-hour price (--gpu-hour-usd)")
            + ", "
            + (f"{watts:g} W per GPU" if watts else "no board power (--gpu-watts)")
            + (f" (not counted: {', '.join(prices['uncounted'])})" if prices.get("uncounted") else "")
        )
    return objective


_COSTS = {"cost": "$/Mtok", "energy": "tok/J"}


def _fit_costs(cols: list[Col], rows: list[list[str]], objective: str) -> tuple[list[Col], list[list[str]]]:
    """deploy's table with both cost columns where it fits the terminal (short headers), else with the
    objective's alone (none by throughput): the table stays one piece; --json and a wider terminal
    have both."""
    if 1 + sum(w + _BORDER for w in _widths(cols, rows, True)) <= terminal_width():
        return cols, rows
    keep = objective_columns([c.header for c in cols], objective)
    return [cols[i] for i in keep], [[r[i] for i in keep] for r in rows]


def objective_columns(headers: list[str], objective: str) -> list[int]:
    """The columns a narrow deploy table keeps: every one but the cost columns, of which the
    objective's alone (none by throughput); the terminal's and the report's tables alike."""
    return [i for i, h in enumerate(headers) if h not in _COSTS.values() or h == _COSTS.get(objective)]


def deploy_cells(o, *, tpot: bool = True, tail: bool = False) -> list[str]:
    """One deploy option as the table prints it: no throughput where no batch meets the budgets
    (max batch 0), no TTFT where nothing is prefilled (NaN), the ITL (one decode step) and, with
    `tpot`, the TPOT the budget judges after it (prompts mixed in, or a speculative step's tokens),
    the ITL's p99 after them with --jitter (`tail`)."""
    none = o.max_batch == 0
    itl = [f"{o.itl_s * 1e3:.2f}", *([f"{o.tpot_s * 1e3:.2f}"] if tpot else [])]
    itl += [f"{o.itl_p99_s * 1e3:.2f}" if o.itl_p99_s is not None else "-"] if tail else []
    left = f" ({o.gpus_left} left)" if getattr(o, "gpus_left", 0) else ""  # GPUs it leaves idle (deploy.partial_splits)
    return [
        o.label() + left,
        str(o.max_batch),
        *itl,
        "–" if math.isnan(o.ttft_s) else f"{o.ttft_s * 1e3:.0f}",
        "–" if none else f"{o.tokens_per_s:,.0f}",
        "–" if none else f"{o.tokens_per_s_per_gpu:,.0f}",
        *_cost_cells(o.cost, none),
        "–" if none else f"{o.tokens_per_s_per_user:.1f}",
        f"{o.mem_bytes_per_gpu / 1e9:.1f}",
        f"{100 * o.comm_share:.0f}",
        o.binding,
        "yes" if o.meets_budget else "no",
    ]


def _cost_cells(c, none: bool) -> list[str]:
    """$ per million output tokens and tokens per joule (decide.cost.OptionCost): '–' where the option
    makes no tokens, '-' where the catalog has no price or power and none was given."""
    if none:
        return ["–", "–"]
    if c is None:
        return ["-", "-"]
    usd = c.usd_per_mtok
    return [
        "-" if usd is None else f"{usd:.2f}" if usd < 10 else f"{usd:.1f}" if usd < 100 else f"{usd:,.0f}",
        "-" if c.tokens_per_joule is None else f"{c.tokens_per_joule:.2f}",
    ]


def print_fit(result) -> None:
    p = result.params
    _out(result.headline())  # names each fitted bandwidth: which link, seen through which algorithm
    for note in getattr(result, "notes", ()):
        _out(f"# {note}")
    _out(f"#{'size':>12} {'ranks':>6} {'nodes':>6} {'measured(µs)':>13} {'predicted(µs)':>14} {'error':>8}  algorithm")
    for r in sorted(result.residuals, key=lambda r: (r.ranks, r.msg_bytes)):
        _out(
            f" {int(r.msg_bytes):>12d} {r.ranks:>6d} {r.nodes:>6d} {r.measured_s * 1e6:>13.2f} "
            f"{r.predicted_s * 1e6:>14.2f} {100 * r.rel_error:>7.1f}%  {r.algorithm}/{r.protocol}"
        )
    _out(
        f"fit: median |error| {100 * result.median_abs_error:.1f}%, worst {100 * result.worst_abs_error:.1f}% "
        f"over {len(result.residuals)} samples"
    )
    if p.at_bound:
        _out(
            f"warning: {', '.join(p.at_bound)} hit the limit of what is physical for {result.base_system}: "
            f"these measurements do not look like that system (wrong --base-system, or not GPU collectives?)"
        )
    if result.heldout:
        parts = ", ".join(f"{n} GPUs {100 * e:.1f}%" for n, e in sorted(result.heldout.items()))
        _out(f"held out (fit without that GPU count, predict it): median |error| {parts}")
    else:
        _out("held out: only one GPU count measured; measure another to see whether the profile extrapolates")
