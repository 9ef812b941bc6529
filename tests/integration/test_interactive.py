"""The report's interactive section: its grid says what `plan` says at every budget step, its size
is guarded, the page is byte-reproducible, and in real Chromium (selenium + Debian's
chromium-driver, from disk) the controls change the verdict with no console message and no request.

The browser tests need `chromium` and `chromedriver` on PATH (scripts/install-chromium.sh installs
both) and selenium (the dev extra); without them they are skipped with a message, never passed.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from browser import chromium

pytest.importorskip("matplotlib")

from shardbudget import cli  # noqa: E402
from shardbudget.errors import ShardbudgetError  # noqa: E402
from shardbudget.decide.planner import plan  # noqa: E402
from shardbudget.report import demo, grid, interactive  # noqa: E402
from shardbudget.report import html as report_html  # noqa: E402
from shardbudget.decide.verdicts import LABELS  # noqa: E402
from shardbudget.decide.request import request
from shardbudget.decide.report_answers import answer_report
from shardbudget.decide import report_grid

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def demo_data():
    return report_html.view(
        answer_report(
            request(demo.MODEL, demo.SYSTEMS[0], batches=demo.BATCHES, context=demo.CONTEXT, budget_s=demo.BUDGET_S),
            demo.SYSTEMS,
        )
    )


@pytest.fixture(scope="module")
def demo_page(demo_data, tmp_path_factory):
    text = report_html.render(demo_data)
    return text, report_html.write_html(tmp_path_factory.mktemp("interactive") / "report.html", text)


def _step_text(g: dict, cell: dict, k: int) -> list[str]:
    step = cell["steps"][k]
    return [g["strings"][step["lead"]]] + [g["strings"][i] for i in step["sentences"]]


# --- the grid, in Python ------------------------------------------------------------------


def test_every_budget_step_says_what_plan_says_at_that_budget(demo_data):
    """The page can say nothing `plan` would not: for every system, engine, batch and budget of the
    slider, the grid's sentences, row labels, pick and latency-optimal plan are those of a fresh
    `plan(..., budget_s=that budget)`."""
    g = demo_data.grid
    assert len(g["budgets"]) >= 10
    for s, spec in enumerate(demo_data.specs):
        for e, engine in enumerate(g["engines"]):
            for budget_k, budget in enumerate(g["budgets"]):
                res = plan(
                    request(
                        demo.MODEL,
                        spec.name,
                        nodes=spec.nodes,
                        batches=demo.BATCHES,
                        context=demo.CONTEXT,
                        budget_s=budget["s"],
                        dtype=demo.DTYPE,
                        engine=engine["key"],
                    )
                )
                for b, br in enumerate(res.results):
                    cell = g["cells"][s][e][b]
                    step = cell["steps"][budget_k]
                    v = br.judgement
                    assert _step_text(g, cell, budget_k)[1:] == list(v.sentences), (spec, engine, budget)
                    assert [LABELS[i] for i in step["labels"]] == [r.verdict for r in br.rows]
                    assert [r["plan"] for r in cell["rows"]] == [r.label() for r in br.rows]
                    pick = cell["rows"][step["pick"]]["plan"] if step["pick"] is not None else None
                    assert pick == (v.pick.label() if v.pick else None)
                    assert cell["rows"][step["best"]]["plan"] == v.best.label()


def test_the_initial_selection_is_the_reports_own_request(demo_data):
    g = demo_data.grid
    init = g["initial"]
    assert g["budgets"][init["budget"]] == {"s": demo.BUDGET_S, "label": "50 ms"}
    choices, _ = report_grid.engine_dimension()
    assert [e["key"] for e in g["engines"]] == [c.key for c in choices]
    assert g["engines"][init["engine"]]["key"] == demo.ENGINE  # the engine the report's own plans ran
    cell = g["cells"][0][init["engine"]][0]
    assert _step_text(g, cell, init["budget"])[1:] == list(demo_data.plans[0].results[0].judgement.sentences)


def test_budget_steps_span_from_nothing_meets_to_everything_fits():
    """Round values (10, 12, 15, 20, 25, 30, 40, 50 ... ms) from 0.8x the fastest plan to 1.25x the
    slowest, the report's budget among them, 'no budget' last."""
    steps = report_grid.budget_steps([0.0115, 0.0549], 0.050, 24)
    assert steps == [0.01, 0.012, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, None]
    # thinned to 4 evenly by index (0, 3, 5, 8 of the 9 above), the report's 33 ms added
    assert report_grid.budget_steps([0.0115, 0.0549], 0.033, 4) == [0.01, 0.02, 0.03, 0.033, 0.06, None]
    assert report_grid.budget_steps([], None, 24) == [None]
    for bad in (1, -1, 401, 2.5, True):
        with pytest.raises(ShardbudgetError, match="budget steps must be 0"):
            report_grid.check_budget_steps(bad)


def test_the_slider_ends_where_no_plan_and_every_plan_meets(demo_data):
    g = demo_data.grid
    for per_system in g["cells"]:
        for per_engine in per_system:
            for cell in per_engine:
                fitting = [i for i, r in enumerate(cell["rows"]) if r["fits"]]
                assert cell["steps"][0]["pick"] is None  # below the fastest plan: nothing meets
                last = cell["steps"][-2]["labels"]  # the largest finite budget: nothing over it
                assert all(LABELS[last[i]] != "over budget" for i in fitting)
                assert g["budgets"][-2]["s"] >= max(cell["rows"][i]["itl_s"] for i in fitting)


def test_bars_parts_add_up_to_the_itl(demo_data):
    for per_system in demo_data.grid["cells"]:
        for cell in per_system[0]:
            for r in cell["rows"]:
                assert r["compute_s"] + r["comm_s"] + r["host_s"] == pytest.approx(r["itl_s"], rel=1e-12)


def _deploy_table(g: dict, s: int, e: int, b: int, k: int) -> list[dict]:
    """The deployment table the grid gives for one selection: each shown row's entry, its
    'batch cap in budget' and its label, best first."""
    cell = g["deploy"][s][e]
    step = cell["steps"][b][k]
    return [
        {**g["deploy_rows"][cell["rows"][b][j]], "largest": cell["largest"][k][j], "label": g["deploy_labels"][lab]}
        for j, lab in zip(step["order"], step["labels"])
    ]


def test_deployment_table_is_deploy_at_the_selected_batch(demo_data):
    """At the report's own budget and engine, for each batch, the table is `deploy(..., batch=b)`'s
    options best first (ITL, TPOT, tokens/s per GPU, memory, meets), with deploy's defaults (served:
    issue 34), and its 'batch cap in budget' column is the report's own deployment (each option at
    its largest batch within the budget). Checked by hand for the first row at batch 64: tokens/s per
    GPU = pp x 64 / cycle / GPUs of a replica, the cycle the TPOT plus the request's own prompt."""
    from shardbudget.decide.deploy import deploy
    from shardbudget.decide.planner import plan

    g = demo_data.grid
    init = g["initial"]
    own = {o.label(): o for o in demo_data.deployments[0].options}
    for b, batch in enumerate(g["batches"]):
        table = _deploy_table(g, 0, init["engine"], b, init["budget"])
        at = deploy(request(demo.MODEL, demo.SYSTEMS[0], budget_s=demo.BUDGET_S), gpus=8, batch=batch).options[
            : grid.SHOWN_OPTIONS
        ]
        assert [r["plan"].replace(" × ", "x").replace(" ", "/") for r in table] == [o.label() for o in at]
        for r, o in zip(table, at):
            assert (r["itl_s"], r["tpot_s"], r["mem_bytes_per_gpu"], r["in_flight"]) == (
                o.itl_s,
                o.tpot_s,
                o.mem_bytes_per_gpu,
                o.pp * batch,
            )
            assert (r["label"] == "meets the budget") == o.meets_budget
            assert r["largest"] == (str(own[o.label()].max_batch) if own[o.label()].max_batch else "–")
        first, o = table[0], at[0]
        if batch == 64:
            assert first["tokens_per_s_per_gpu"] == pytest.approx(o.pp * 64 / o.cycle_s / (o.tp * o.pp), rel=1e-9)
            assert o.cycle_s > o.tpot_s > o.itl_s
            assert first["tokens"] == f"{o.tokens_per_s_per_gpu:,.0f}"
    # the batch changes what the table shows: at each batch TP8's TPOT and ITL are plan's served row
    rows = {b: {r["plan"]: r for r in _deploy_table(g, 0, init["engine"], b, init["budget"])} for b in range(2)}
    assert rows[0]["1 × TP8"]["tpot_s"] < rows[1]["1 × TP8"]["tpot_s"]
    for b, batch in enumerate(g["batches"]):
        served = plan(
            request(
                demo.MODEL, demo.SYSTEMS[0], batches=[batch], budget_s=demo.BUDGET_S, input_len=2048, output_len=256
            )
        ).results[0]
        tp8 = next(r for r in served.rows if r.key == (8, 1, 1, 1))
        assert (rows[b]["1 × TP8"]["tpot_s"], rows[b]["1 × TP8"]["itl_s"]) == pytest.approx(
            (tp8.tpot_s, tp8.itl_s), rel=1e-12
        )


def test_deployment_table_obeys_the_budget_and_the_engine(demo_data):
    """Below the fastest plan no option meets the budget and no option has a largest batch within it;
    with no budget every option that fits meets it, and those come first; at a fixed batch an option
    that fits but misses the budget still shows its throughput, one that does not fit shows none. The
    options change with the engine (their ITLs are that engine's)."""
    g = demo_data.grid
    for s in range(len(g["systems"])):
        for e in range(len(g["engines"])):
            for b in range(len(g["batches"])):
                lowest, unbounded = _deploy_table(g, s, e, b, 0), _deploy_table(g, s, e, b, len(g["budgets"]) - 1)
                assert all(r["label"] != "meets the budget" and r["largest"] == "–" for r in lowest)
                assert all(r["label"] in ("meets the budget", "does not fit in memory") for r in unbounded)
                labels = [r["label"] for r in unbounded]
                assert labels == sorted(labels, key=lambda x: x != "meets the budget")
                for r in lowest + unbounded:
                    assert (r["tokens"] == "–") == (r["label"] == "does not fit in memory")
    itls = {
        e: tuple(r["itl_s"] for r in _deploy_table(g, 0, e, 1, g["initial"]["budget"]))
        for e in range(len(g["engines"]))
    }
    assert len(set(itls.values())) > 1


def test_deployment_hook_takes_option_dicts():
    opt = {
        "replicas": 2,
        "tp": 4,
        "pp": 2,
        "ep": 1,
        "dp": 1,
        "max_batch": 128,
        "itl_s": 0.02,
        "tpot_s": 0.025,
        "tokens_per_s_per_gpu": 800.0,
        "mem_bytes_per_gpu": 70.1e9,
        "meets_budget": True,
        "binding": "batch",
    }
    entry = grid.deployment_entry(opt, 64)
    assert entry["gpus"] == 16 and entry["plan"] == "2 × TP4 PP2" and entry["tokens"] == "800"
    assert (
        entry["itl"] == "20 ms" and entry["tpot"] == "25 ms" and entry["mem"] == "70.1 GB" and entry["in_flight"] == 128
    )
    assert grid.deployment_entry({**opt, "max_batch": 0}, 64)["tokens"] == "–"  # does not fit: no throughput
    with pytest.raises(ShardbudgetError, match="deployment option lacks max_batch"):
        grid.deployment_entry({k: v for k, v in opt.items() if k != "max_batch"}, 64)


def test_grid_json_is_stable_and_cannot_close_its_script_block(demo_data):
    text = demo_data.grid_json
    assert text == grid.grid_json(json.loads(text))  # sorted keys, no spaces: one spelling
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text)["format"] == grid.GRID_FORMAT
    assert len(text) < 400_000  # the demo: 3 systems x 2 engines (impls) x 2 batches x 22 budgets: ~96 kB


def test_a_grid_too_large_to_embed_is_one_line_saying_what_to_reduce(demo_data, tmp_path, monkeypatch, capsys):
    with pytest.raises(grid.GridTooLargeError) as err:
        grid.grid_json(demo_data.grid, max_bytes=10_000)
    msg = str(err.value)
    assert "\n" not in msg and "over the 0.01 MB a report embeds" in msg
    assert (
        f"3 systems x {len(demo_data.grid['engines'])} engines x 2 batches" in msg
        and "fewer batches (--batch), systems (--system)" in msg
    )
    monkeypatch.setattr(grid, "MAX_GRID_BYTES", 10_000)
    out = tmp_path / "big.html"
    code = cli.main(
        ["report", "-m", demo.MODEL, "-s", "hgx-h100", "-b", "1", "-b", "8", "--budget-steps", "30", "-o", str(out)]
    )
    err_text = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err_text) == 1 and not out.exists()
    assert err_text[0].startswith("error: the interactive report's grid is ") and "--budget-steps" in err_text[0]


def test_budget_steps_zero_leaves_the_page_without_script():
    text = report_html.build_report(answer_report(request(demo.MODEL, "hgx-h100", batches=[1]), budget_steps=0))
    assert "<script" not in text and "script-src" not in text and 'id="explore"' not in text


# --- the page, as bytes ---------------------------------------------------------------------


def test_render_twice_gives_the_same_bytes(demo_data, demo_page):
    assert report_html.render(demo_data) == demo_page[0]


def test_two_processes_write_the_same_file(tmp_path):
    """Not one byte depends on the process: fixed SVG ids, sorted JSON keys, no timestamps, no
    set order (different hash seeds)."""
    procs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(REPO / "src")}
        procs.append(
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "shardbudget",
                    "report",
                    "-m",
                    demo.MODEL,
                    "-s",
                    "hgx-h100",
                    "-s",
                    "l40s-pcie-nps1-degraded",
                    "-b",
                    "1",
                    "-b",
                    "64",
                    "--budget",
                    "50ms",
                    "-o",
                    str(tmp_path / f"r{seed}.html"),
                ],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        )
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err.decode()[-2000:]
    a, b = (tmp_path / "r1.html").read_bytes(), (tmp_path / "r2.html").read_bytes()
    assert a == b and b'id="sb-grid"' in a


def test_the_page_loads_nothing(demo_page):
    text = demo_page[0]
    # no attribute that loads (src, href, action, poster, srcset) points anywhere but the page itself
    assert not re.search(r"""\b(?:src|href|action|poster|srcset|data)\s*=\s*["']?\s*(?:https?:)?//""", text, re.I)
    assert not re.search(r"url\(\s*['\"]?\s*(?:https?:)?//|@import|<link\b|<iframe\b|<object\b|<embed\b", text, re.I)
    js = interactive.script()
    for api in (
        "fetch(",
        "XMLHttpRequest",
        "import(",
        "WebSocket",
        "EventSource",
        "sendBeacon",
        "innerHTML",
        "console.",
        "eval(",
        "Worker(",
    ):
        assert api not in js, api
    assert re.findall(r"https?://[^\s\"']+", js) == ["http://www.w3.org/2000/svg"]  # a namespace name only


# --- the page, in Chromium through selenium -------------------------------------------------


@pytest.fixture(scope="module")
def driver():
    drv = chromium(1280, 1400, browser_log=True)
    yield drv
    drv.quit()


_BARS = """return [...document.querySelectorAll('#sb-bars g[data-plan]')].map(g => ({
  plan: g.dataset.plan, row: Number(g.dataset.row), itl: Number(g.dataset.itl),
  parts: [...g.querySelectorAll('rect[data-part]')].map(r => ({s: Number(r.dataset.s),
    x: Number(r.getAttribute('x')), w: Number(r.getAttribute('width'))}))}));"""


def _expect(drv, g: dict, sel: tuple[int, int, int, int]) -> None:
    """The page shows exactly the grid's answer for `sel` (system, engine, batch, budget)."""
    from selenium.webdriver.common.by import By

    s, e, b, k = sel
    cell = g["cells"][s][e][b]
    assert drv.find_element(By.ID, "explore").get_attribute("data-selection") == ",".join(map(str, sel))
    assert drv.find_element(By.ID, "sb-verdict").text == "\n".join(_step_text(g, cell, k))
    assert drv.find_element(By.ID, "sb-budget-value").text == g["budgets"][k]["label"]
    bars = drv.execute_script(_BARS)
    assert [x["row"] for x in bars] == cell["order"]
    px_per_s = None
    for bar in bars:
        r = cell["rows"][bar["row"]]
        assert sum(p["s"] for p in bar["parts"]) == pytest.approx(r["itl_s"], rel=1e-9)
        # segments abut, and every bar is drawn to one scale: its length / its ITL is the same
        for a, nxt in zip(bar["parts"], bar["parts"][1:]):
            assert nxt["x"] == pytest.approx(a["x"] + a["w"], abs=1e-6)
        scale = sum(p["w"] for p in bar["parts"]) / r["itl_s"]
        px_per_s = px_per_s or scale
        assert scale == pytest.approx(px_per_s, rel=1e-6)
    entries = _deploy_table(g, s, e, b, k)
    heading = drv.find_element(By.ID, "explore-deploy").text
    assert f" at batch {g['batches'][b]}, " in heading and g["systems"][s] in heading
    table = drv.find_elements(By.CSS_SELECTOR, "#sb-deploy tbody tr")
    assert [row.find_elements(By.TAG_NAME, "td")[0].text for row in table] == [d["plan"] for d in entries]
    for row, d in zip(table, entries):
        cells = [td.text for td in row.find_elements(By.TAG_NAME, "td")]
        assert cells[1:] == [
            str(d["gpus"]),
            str(d["in_flight"]),
            d["itl"],
            d["tpot"],
            d["tokens"],
            d["mem"],
            d["largest"],
            d["label"],
        ]
    picks = [i for i, row in enumerate(table) if row.get_attribute("class") == "pick"]
    first = next((i for i, d in enumerate(entries) if d["label"] == "meets the budget"), None)
    assert picks == ([] if first is None else [first])


def _requests(drv) -> list[str]:
    urls = []
    for entry in drv.get_log("performance"):
        msg = json.loads(entry["message"])["message"]
        if msg["method"] == "Network.requestWillBeSent":
            urls.append(msg["params"]["request"]["url"])
    return urls


def test_controls_change_the_verdict_in_chromium(driver, demo_data, demo_page, tmp_path):
    from matplotlib.image import imread
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import Select

    g = demo_data.grid
    url = demo_page[1].resolve().as_uri()
    driver.get_log("browser"), driver.get_log("performance")  # start both logs empty
    driver.get(url)
    assert driver.execute_script("return document.readyState") == "complete"
    section = driver.find_element(By.ID, "explore")
    driver.execute_script("arguments[0].scrollIntoView()", section)
    init = g["initial"]
    sel = [init["system"], init["engine"], init["batch"], init["budget"]]
    _expect(driver, g, tuple(sel))
    before_text = driver.find_element(By.ID, "sb-verdict").text
    before_table = driver.find_element(By.ID, "sb-deploy").text
    assert before_text.startswith("Within the 50 ms budget, run TP8")
    section.screenshot(str(tmp_path / "before.png"))

    slider = driver.find_element(By.ID, "sb-budget")
    while sel[3] > 0:  # one step at a time down to the smallest budget, as a keyboard user would
        slider.send_keys(Keys.ARROW_LEFT)
        sel[3] -= 1
        _expect(driver, g, tuple(sel))
    assert driver.find_element(By.ID, "sb-deploy").text != before_table  # the budget moves the table
    after_text = driver.find_element(By.ID, "sb-verdict").text
    assert after_text != before_text and re.match(r"No plan meets the [\d.]+ [mµ]?s budget", after_text)
    section.screenshot(str(tmp_path / "after.png"))
    slider.send_keys(Keys.END)
    sel[3] = len(g["budgets"]) - 1
    _expect(driver, g, tuple(sel))
    assert driver.find_element(By.ID, "sb-budget-value").text == "no budget"
    assert not driver.find_elements(By.ID, "sb-budget-line")

    other_engine = (init["engine"] + 1) % len(g["engines"])
    for control, value, where, index in (
        ("sb-system", "l40s-pcie-switch", 0, g["systems"].index("l40s-pcie-switch")),
        ("sb-batch", "64", 2, g["batches"].index(64)),
        ("sb-engine", g["engines"][other_engine]["label"], 1, other_engine),
    ):
        before = driver.find_element(By.ID, "sb-deploy").text
        Select(driver.find_element(By.ID, control)).select_by_visible_text(value)
        sel[where] = index
        _expect(driver, g, tuple(sel))
        assert driver.find_element(By.ID, "sb-deploy").text != before, control  # every control moves the table
    assert "l40s-pcie-switch" in driver.find_element(By.ID, "sb-verdict").text
    slider.send_keys(Keys.HOME)
    sel[3] = 0
    _expect(driver, g, tuple(sel))

    assert driver.get_log("browser") == []  # no console message, error or CSP violation
    assert set(_requests(driver)) == {url}  # the page itself, nothing else
    assert driver.execute_script("return performance.getEntriesByType('resource').length") == 0

    shots = [imread(tmp_path / "before.png"), imread(tmp_path / "after.png")]
    for img in shots:
        gray = img[..., :3].mean(axis=2)
        assert img.shape[1] > 900 and gray.std() > 0.05 and (gray < 0.9).mean() > 0.02
    assert shots[0].shape != shots[1].shape or (shots[0] != shots[1]).any()  # docs' copies: scripts/screenshots.py
