"""Figures and the single-file HTML report, down to what a headless Chromium makes of it.

The browser test talks to Chromium over its DevTools pipe (--remote-debugging-pipe): it sees every
network request, console message and log entry the page causes, reads the laid-out DOM and takes a
screenshot. It needs `chromium` on PATH (`make test` runs scripts/install-chromium.sh); without it
the test is skipped with a message, never passed.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import os
import re
import shutil
import subprocess
import threading
import time
from importlib import resources
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

import numpy as np  # noqa: E402

from shardbudget.comm.collectives import crossover_bytes, make_group, sweep  # noqa: E402
from shardbudget.decide.compare import compare_systems  # noqa: E402
from shardbudget.errors import ShardbudgetError  # noqa: E402
from shardbudget.fabric.catalog import load_catalog  # noqa: E402
from shardbudget.measure.logs.read import read_log  # noqa: E402
from shardbudget.decide.planner import plan  # noqa: E402
from shardbudget.report import demo, figures, interactive, plan_rows  # noqa: E402
from shardbudget.report import html as report_html  # noqa: E402
from shardbudget.model import hidden_message_bytes, load_model  # noqa: E402
from shardbudget.decide.request import request
from shardbudget.decide.report_answers import answer_report
from shardbudget.decide.measured import measured_entry

MODEL, SYSTEMS, BATCHES = demo.MODEL, demo.SYSTEMS, demo.BATCHES
FIGURE_IDS = ("fig-fabric", "fig-token", "fig-share", "fig-memory", "fig-measured-0")
EVIL_SYSTEM = "<script>alert(1)</script>"
EVIL_FOLDER = "<img src=x onerror=alert(1)>"
ERROR_FACTOR = 1.25  # the synthetic measurement is 25% slower than the model: error = 1/1.25 - 1 = -20%


# --- shared data ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def plans():
    return [
        plan(request(MODEL, s.name, nodes=s.nodes, batches=BATCHES, context=demo.CONTEXT, budget_s=demo.BUDGET_S))
        for s in (report_html.parse_system_spec(x) for x in SYSTEMS)
    ]


@pytest.fixture(scope="module")
def measured_json(tmp_path_factory) -> Path:
    """shardbudget harness JSON for 8 ranks of hgx-h100, every time ERROR_FACTOR x the model's."""
    sizes = [float(2**k) for k in range(3, 28, 2)]
    costs = sweep("all-reduce", sizes, "hgx-h100", gpus=8)
    doc = {
        "tool": "shardbudget",
        "op": "all-reduce",
        "world_size": 8,
        "n_nodes": 1,
        "dtype": "bfloat16",
        "results": [{"bytes": c.msg_bytes, "time_s": c.time_s * ERROR_FACTOR} for c in costs],
    }
    path = tmp_path_factory.mktemp("measured") / "synthetic_h100.json"
    path.write_text(json.dumps(doc))
    return path


@pytest.fixture(scope="module")
def report(tmp_path_factory, measured_json):
    """The demo's report, plus one measurement file: (data, path, text)."""
    data = report_html.view(
        answer_report(
            request(MODEL, SYSTEMS[0], batches=BATCHES, context=demo.CONTEXT, budget_s=demo.BUDGET_S),
            SYSTEMS,
            measured=[measured_json],
        )
    )
    text = report_html.render(data)
    path = report_html.write_html(tmp_path_factory.mktemp("report") / "report.html", text)
    return data, path, text


def _png_array(fig) -> np.ndarray:
    from matplotlib.image import imread

    return imread(io.BytesIO(figures.render(fig, "png")), format="png")


def _assert_not_blank(img: np.ndarray, what: str) -> None:
    gray = img[..., :3].mean(axis=2)
    ink = float((gray < 0.9).mean())  # share of pixels darker than near-white
    assert gray.std() > 0.05 and ink > 0.02, f"{what} looks blank (std {gray.std():.3f}, ink {ink:.3f})"


def _parts_by_x(ax) -> dict[float, float]:
    """Heights of the stacked compute/communication bars of a panel, summed per bar position."""
    total: dict[float, float] = {}
    for cont in ax.containers:
        if str(cont.get_label()).startswith("_part:"):
            for rect in cont:
                x = round(rect.get_x() + rect.get_width() / 2, 6)
                total[x] = total.get(x, 0.0) + rect.get_height()
    return total


# --- figures --------------------------------------------------------------------------------


def test_fabric_comparison_draws_every_system_and_its_floor():
    cfg = load_model(MODEL)
    sizes = [float(x) for x in np.geomspace(8, 2**30, 40)]
    entries = []
    for name, nodes in (("hgx-h100", 1), ("l40s-pcie-switch", 1), ("hgx-h100", 2)):
        group = make_group(name, nodes=nodes)
        entries.append(
            (f"{nodes}x {name}", sweep("all-reduce", sizes, name, nodes=nodes), crossover_bytes(group, "all-reduce"))
        )
    marks = [(hidden_message_bytes(cfg, 1), "decode batch 1"), (hidden_message_bytes(cfg, 64), "decode batch 64")]
    fig = figures.fabric_comparison(entries, marks=marks)
    ax = fig.axes[0]
    handles, labels = ax.get_legend_handles_labels()
    assert len(labels) == 2 * len(entries)  # predicted time and latency floor per system
    assert sum("latency term" in lbl for lbl in labels) == len(entries)
    # 16 KiB is the batch-1 decode message of a 8192-wide model in bf16: 1 x 8192 x 2 bytes
    assert hidden_message_bytes(cfg, 1) == 16384
    title = fig._suptitle.get_text()
    # the slowest at that size is named: the two nodes over InfiniBand, not the healthy PCIe box (21.8 us;
    # the degraded l40s-pcie-nps1-degraded was, issue 34)
    # 24.4 before LL staging (a431f97); 32.6 before tree/LL across nodes ran at the link rate (909b384)
    assert "16 KiB" in title and "2x hgx-h100 takes 32.1 µs" in title, title
    _assert_not_blank(_png_array(fig), "fabric comparison")


def test_where_the_token_goes_stacks_add_up_to_the_itl(plans):
    fig = figures.where_the_token_goes(plans)
    panels = [ax for ax in fig.axes if ax.get_visible() and ax.axison]
    assert len(panels) == len(plans) * len(BATCHES)
    for j, res in enumerate(plans):
        for i, br in enumerate(res.results):
            ax = panels[i * len(plans) + j]
            line = plan_rows.tp_line(br.rows, br.judgement.best)  # the latency-optimal plan stands in for its TP
            assert [t.get_text().split()[0] for t in ax.get_xticklabels()] == [f"TP{r.tp}" for r in line]
            heights = _parts_by_x(ax)
            assert len(heights) == len(line)  # one stacked bar per TP degree
            for k, r in enumerate(line):
                assert heights[float(k)] == pytest.approx(r.itl_s, rel=1e-9)
            best = [t for t in ax.get_xticklabels() if "★" in t.get_text()]
            assert [t.get_text() for t in best] == [br.judgement.best.label().replace(" ", "\n") + " ★"]
    assert "l40s-pcie-switch" in fig._suptitle.get_text()
    _assert_not_blank(_png_array(fig), "where the token goes")


def test_comm_share_has_one_line_per_system_and_batch(plans):
    fig = figures.comm_share(plans)
    _, labels = fig.axes[0].get_legend_handles_labels()
    assert len(labels) == len(plans) * len(BATCHES)
    # the l40s-pcie-switch batch-64 TP8 plan is the one the planner calls sharded too far on PCIe
    l40s = next(r for r in plans if r.system == "l40s-pcie-switch")
    tp8 = next(r for r in plan_rows.tp_line(l40s.results[1].rows) if r.tp == 8)
    assert tp8.comm_share > 0.30 and "l40s-pcie-switch at TP8" in fig._suptitle.get_text()
    _assert_not_blank(_png_array(fig), "communication share")


def test_memory_window_marks_fit_and_budget(plans):
    fig = figures.memory_window(plans)
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == len(plans) * len(BATCHES)
    titles = [ax.get_title() for ax in panels]
    # 8x L40S (48 GB): at batch 64 only TP8 fits and it misses 50 ms, so there is no window
    assert any("l40s-pcie-switch, batch 64: no window" in t for t in titles), titles
    for ax in panels:
        bars = [c for c in ax.containers if str(c.get_label()).startswith("_memory")]
        assert len(bars) == len(ax.get_xticks())
    _assert_not_blank(_png_array(fig), "memory window")


def test_measured_vs_predicted_reports_the_error_it_was_given(measured_json):
    ms = read_log(measured_json)
    fig = figures.measured_vs_predicted(measured_entry(ms, "hgx-h100"))
    top, bottom = fig.axes[:2]
    assert len(top.get_lines()) == 2  # measured points, predicted line
    errors = bottom.get_lines()[0].get_ydata()
    # every measured time is 1.25x the model's, so every error is 1/1.25 - 1 = -20%
    assert np.allclose(errors, 100 * (1 / ERROR_FACTOR - 1), atol=1e-6)
    assert "median |error| 20%" in fig._suptitle.get_text()
    _assert_not_blank(_png_array(fig), "measured vs predicted")


def test_save_writes_png_and_svg_and_refuses_other_formats(tmp_path, plans):
    fig = figures.comm_share(plans)
    png = figures.save(fig, tmp_path / "share.png")
    svg = figures.save(fig, tmp_path / "share.svg")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert "<svg" in svg.read_text()[:400]
    for bad in ("share.jpg", "share.pdf", "share"):
        with pytest.raises(ShardbudgetError) as err:
            figures.save(fig, tmp_path / bad)
        assert "\n" not in str(err.value) and ".png or .svg" in str(err.value)
    with pytest.raises(ShardbudgetError, match="does not exist"):
        figures.save(fig, tmp_path / "missing" / "share.png")
    figures.save(fig, tmp_path / "share.png")  # overwriting is fine; no temp file is left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["share.png", "share.svg"]


def test_the_same_figure_gives_the_same_svg_and_each_salt_its_own_ids(plans):
    svg = figures.render(figures.comm_share(plans), "svg")
    assert figures.render(figures.comm_share(plans), "svg") == svg  # no uuid4-salted ids, no date

    def hashed_ids(text: str) -> set[str]:  # matplotlib's clip paths, hatches and markers
        return set(re.findall(r'id="([phm][0-9a-f]{10})"', text))

    fig = figures.comm_share(plans)
    a, b = hashed_ids(figures.to_svg(fig, id_salt="fig-a")), hashed_ids(figures.to_svg(fig, id_salt="fig-b"))
    assert a and b and not a & b  # two figures of one page never define the same id


def test_compare_figure_prices_with_the_results_impl():
    result = compare_systems(
        request("llama-3.1-70b", "hgx-h100", batches=(1, 64), impl="custom"),
        ["hgx-h100", "l40s-pcie-switch"],
        curves=True,
    )
    assert result.impl == "custom" and result.to_dict()["impl"] == "custom"
    # Without rows there is no algorithm name to guess the implementation from: the field decides.
    fig = figures.compare_figure(dataclasses.replace(result, rows=()))
    lines = {line.get_label(): line for line in fig.axes[0].get_lines()}
    for name, algorithm in (("hgx-h100", "one-shot"), ("l40s-pcie-switch", "ring")):  # PCIe falls back to NCCL
        xs, ts = lines[f"{name} ×8: predicted time"].get_data()
        expected = sweep(
            "all-reduce", [8.0], name, impl="custom", catalog=request("llama-3.1-70b", name).scenario.catalog
        )[0]
        assert xs[0] == 8 and expected.algorithm == algorithm
        assert ts[0] == pytest.approx(expected.time_s, rel=1e-12)
    # one-shot on NVSwitch at 8 B: launch 3.0 + sync 1.5 + hop 0.6 us, a third of NCCL's ring
    assert lines["hgx-h100 ×8: predicted time"].get_data()[1][0] == pytest.approx(5.1e-6, rel=1e-3)


# --- the HTML report, as text ---------------------------------------------------------------


def test_report_is_one_self_contained_file(report):
    data, path, text = report
    assert path.read_text(encoding="utf-8") == text
    # two script elements, both inline: the interactive grid (data, never run) and the shipped script,
    # the only one the Content-Security-Policy lets run (by its hash)
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", text, re.S | re.I)
    assert [attrs for attrs, _ in scripts] == [' type="application/json" id="sb-grid"', ""], scripts
    assert scripts[1][1] == interactive.script()
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', text).group(1)
    assert (
        csp == f"default-src 'none'; script-src {interactive.script_hash()}; style-src 'unsafe-inline'; img-src data:"
    )
    # nothing loadable: no src/href/action to http(s), no CSS url() or @import, no link elements
    assert not re.search(r"""\b(?:src|href|action|poster|srcset)\s*=\s*["']?\s*(?:https?:)?//""", text, re.I)
    assert not re.search(r"url\(\s*['\"]?\s*(?:https?:)?//|@import|<link\b|<iframe\b|<object\b", text, re.I)
    for fid in FIGURE_IDS:
        block = re.search(rf'<figure id="{fid}">(.*?)</figure>', text, re.S)
        assert block and "<svg" in block.group(1) and block.group(1).count("<path") > 20, fid
    # the sources are there, as text
    assert "https://resources.nvidia.com/en-us-dgx-systems/ai-enterprise-dgx" in text


def test_report_says_the_verdict_in_words(report):
    """The report reads the planner's verdicts; it never re-decides them. By the plan tables (vLLM's
    one-shot all-reduce inside a node): TP8 in one HGX H100 is the pick at batch 1 and 64, and on two
    nodes TP16 is sharded too far (not 10% faster than TP8); 8x L40S misses 50 ms at batch 64 and
    its TP8 is comm-bound."""
    data, _, text = report
    verdict = re.search(r'<section id="verdict".*?</section>', text, re.S).group(0)
    assert "hgx-h100 at TP8 is the plan to pick at batch 1 and 64" in verdict
    assert "Comm-bound (communication over 30% of the latency-optimal plan&#x27;s token): " in verdict
    assert "l40s-pcie-switch at batch 64" in verdict
    rows = {(r["system"], r["batch"]): r for r in report_html.verdict_rows(data)}
    assert rows[("hgx-h100", 64)]["max_tp"] == 8 and rows[("l40s-pcie-switch", 64)]["max_tp"] is None
    # 70B bf16 needs 8 x 48 GB: TP8 (81.2 ms, 39% communication) is the fastest plan that fits, over budget;
    # on the degraded EPYC-in-NPS1 box its all-reduce collapsed and TP4 PP2 was picked (issue 34)
    assert rows[("l40s-pcie-switch", 64)]["best_plan"] == "TP8"
    assert "TP16" in rows[("2× hgx-h100", 64)]["too_far"]
    for a in data.answers:  # the three explain answers
        assert report_html.esc(a.question) in text
    for needle in (
        "Catalog entries used",
        "Assumptions",
        "nvswitch-gen3",
        "ib-ndr",
        "pcie4",
        "70% of dense tensor-core peak",
        "synthetic_h100.json",
    ):
        assert needle in text, needle


def test_user_strings_are_escaped(tmp_path):
    folder = tmp_path / EVIL_FOLDER
    folder.mkdir()
    shipped = resources.files("shardbudget") / "catalog" / "models" / "llama-3.1-8b.json"
    (folder / "config.json").write_bytes(shipped.read_bytes())
    cat_file = tmp_path / "evil.toml"
    cat_file.write_text(f"""
[systems."{EVIL_SYSTEM}"]
description = "evil <b>bold</b> & \\"quotes\\""
gpu = "h100-sxm"
gpus_per_node = 8
topology = "switch"
intra_fabric = "nvswitch-gen3"
gpus_per_socket = 4
source = "https://example.com/<script>x</script>"
""")
    catalog = load_catalog([str(cat_file)])
    text = report_html.build_report(
        answer_report(request(str(folder / "config.json"), EVIL_SYSTEM, batches=[1], catalog=catalog))
    )
    # in the grid the page embeds, '<' and '>' are JSON escapes: no string can close its block
    assert "\\u003cscript\\u003ealert(1)\\u003c/script\\u003e" in _own_scripts(text)[0]
    text = _without_own_scripts(text)
    assert "<script" not in text.lower() and "<img" not in text.lower() and "<b>bold" not in text
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "&lt;img src=x onerror=alert(1)&gt;" in text
    out = report_html.write_html(
        tmp_path / "evil.html",
        report_html.build_report(
            answer_report(request(str(folder / "config.json"), EVIL_SYSTEM, batches=[1], catalog=catalog))
        ),
    )
    dom = _chromium_dump_dom(out, tmp_path)
    assert len(_own_scripts(dom)) == 2
    dom = _without_own_scripts(dom)
    # the browser (and the interactive section's script, which writes text only) made text of them
    assert "<script" not in dom.lower()
    assert "<img" not in dom.lower()
    assert "<b>bold" not in dom
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert dom.count("&lt;script&gt;alert(1)&lt;/script&gt;</option>") == 1  # the system control


_OWN_SCRIPTS = re.compile(r'<script type="application/json" id="sb-grid">(.*?)</script>\s*<script>(.*?)</script>', re.S)


def _own_scripts(html_text: str) -> tuple[str, str]:
    """The report's two script elements' contents: the grid and the interactive section's script."""
    found = _OWN_SCRIPTS.findall(html_text)
    assert len(found) == 1, "expected the grid and the script once each"
    return found[0]


def _without_own_scripts(html_text: str) -> str:
    return _OWN_SCRIPTS.sub("", html_text)


def test_report_paths_are_checked_before_any_work(tmp_path):
    for bad, why in (
        (tmp_path / "r.pdf", "expected a .html or .htm file name"),
        (tmp_path / "no" / "r.html", "does not exist"),
    ):
        with pytest.raises(ShardbudgetError, match=why):
            report_html.check_report_path(bad)
    with pytest.raises(ShardbudgetError, match="node count"):
        report_html.parse_system_spec("hgx-h100:two")
    assert report_html.parse_system_spec("hgx-h100:2") == report_html.SystemSpec("hgx-h100", 2)


# --- the HTML report, in a browser ----------------------------------------------------------


def _chromium() -> str:
    exe = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
    if not exe:
        pytest.skip("chromium not on PATH: run scripts/install-chromium.sh (make test does) for the browser tests")
    return exe


_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--hide-scrollbars",
    "--mute-audio",
)


def _chromium_dump_dom(path: Path, tmp: Path) -> str:
    out = subprocess.run(
        [_chromium(), *_FLAGS, f"--user-data-dir={tmp / 'chromium-dom'}", "--dump-dom", path.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert "<body" in out.stdout
    return out.stdout


class _DevTools:
    """Chromium's DevTools protocol over --remote-debugging-pipe: JSON messages, NUL-terminated,
    commands on the child's fd 3, replies and events on its fd 4."""

    def __init__(self, exe: str, user_data_dir: Path):
        to_chrome_r, self._w = os.pipe()
        self._r, from_chrome_w = os.pipe()

        def child_fds():  # runs in the child before exec; 3 and 4 are kept by pass_fds
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [exe, *_FLAGS, f"--user-data-dir={user_data_dir}", "--remote-debugging-pipe", "about:blank"],
            pass_fds=(3, 4),
            preexec_fn=child_fds,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._next = 0
        self.events: list[dict] = []
        self._replies: dict[int, dict] = {}
        self._cond = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        buf = b""
        while True:
            try:
                chunk = os.read(self._r, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._cond.notify_all()
                return
            buf += chunk
            while b"\0" in buf:
                raw, buf = buf.split(b"\0", 1)
                msg = json.loads(raw)
                with self._cond:
                    if "id" in msg:
                        self._replies[msg["id"]] = msg
                    else:
                        self.events.append(msg)
                    self._cond.notify_all()

    def send(self, method: str, params: dict | None = None, session: str | None = None, timeout: float = 30):
        self._next += 1
        msg = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._next not in self._replies:
                left = deadline - time.monotonic()
                assert left > 0 and self.proc.poll() is None, f"no reply to {method}"
                self._cond.wait(left)
            reply = self._replies.pop(self._next)
        assert "error" not in reply, reply
        return reply.get("result", {})

    def wait_event(self, method: str, timeout: float = 30) -> dict:
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for e in self.events:
                    if e.get("method") == method:
                        return e
                left = deadline - time.monotonic()
                assert left > 0, f"no {method} event"
                self._cond.wait(left)

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=5)
        except AssertionError:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        os.close(self._w)


_PAGE_FACTS = """(() => {
  const figs = [...document.querySelectorAll('figure')].map(f => {
    const svg = f.querySelector('svg, img');
    const r = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
    return {id: f.id, tag: svg ? svg.tagName : null, width: r.width, height: r.height,
            shapes: svg ? svg.querySelectorAll('path, text, use, rect').length : 0};
  });
  return JSON.stringify({figs, verdict: document.querySelector('#verdict').innerText,
                         scripts: document.scripts.length, height: document.body.scrollHeight,
                         tables: document.querySelectorAll('table').length});
})()"""


def test_report_in_headless_chromium(report, tmp_path):
    exe = _chromium()
    _, path, _ = report
    url = path.resolve().as_uri()
    started = time.monotonic()
    dt = _DevTools(exe, tmp_path / "chromium-profile")
    try:
        targets = dt.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        session = dt.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        for domain in ("Network", "Runtime", "Log", "Page"):
            dt.send(f"{domain}.enable", session=session)
        dt.send(
            "Emulation.setDeviceMetricsOverride",
            {"width": 1280, "height": 3000, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        dt.events.clear()
        dt.send("Page.navigate", {"url": url}, session=session)
        dt.wait_event("Page.loadEventFired")
        time.sleep(0.5)  # anything the page might still start after load
        facts = json.loads(
            dt.send("Runtime.evaluate", {"expression": _PAGE_FACTS, "returnByValue": True}, session=session)["result"][
                "value"
            ]
        )
        shot = base64.b64decode(dt.send("Page.captureScreenshot", {"format": "png"}, session=session)["data"])
        events = list(dt.events)
    finally:
        dt.close()

    requests = [e["params"]["request"]["url"] for e in events if e.get("method") == "Network.requestWillBeSent"]
    assert requests and all(u == url or u.startswith("data:") for u in requests), requests
    problems = [
        e
        for e in events
        if e.get("method") in ("Runtime.exceptionThrown", "Page.javascriptDialogOpening")
        or (e.get("method") == "Runtime.consoleAPICalled")
        or (e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] in ("error", "warning"))
        or e.get("method") == "Network.loadingFailed"
    ]
    assert not problems, problems
    assert facts["scripts"] == 2 and facts["tables"] >= 9  # the grid and the interactive section's script
    assert "plan to pick" in facts["verdict"] and "hgx-h100 at TP8" in facts["verdict"]
    figs = {f["id"]: f for f in facts["figs"]}
    for fid in FIGURE_IDS:
        f = figs[fid]
        assert f["tag"] == "svg" and f["width"] > 600 and f["height"] > 250 and f["shapes"] > 50, f

    shot_path = tmp_path / "report.png"
    shot_path.write_bytes(shot)
    from matplotlib.image import imread

    img = imread(shot_path)
    assert img.shape[:2] == (3000, 1280)
    _assert_not_blank(img, "report screenshot")
    assert time.monotonic() - started < 30


def test_measured_vs_predicted_plots_a_fit_result(measured_json):
    from shardbudget.measure.analysis.fit import fit_profile

    result = fit_profile([read_log(measured_json)], name="h100-synthetic", base_system="hgx-h100", holdout=False)
    fig = figures.measured_vs_predicted(result)  # what `shardbudget fit --plot` draws
    top, bottom = fig.axes[:2]
    assert len(top.get_lines()) == 2
    expected = sorted((r.msg_bytes, 100 * r.rel_error) for r in result.residuals)
    assert np.allclose(bottom.get_lines()[0].get_ydata(), [e for _, e in expected], atol=1e-6)
    assert "h100-synthetic" in fig._suptitle.get_text()
