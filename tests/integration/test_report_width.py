"""The report page fits its window: in real Chromium (selenium + chromedriver, as test_interactive
starts it), at 1280 and 800 px, a dense report (the demo's: three systems, one of them two nodes) and
a MoE multi-node report (DeepSeek-V3 on two HGX H200: launch blocks of one line per node and
TensorRT-LLM's YAML) are no wider than the viewport. Before the launch lines wrapped, the demo's page
was 2626 px wide in a 1280 px window and the MoE page 3439 px.

Every <details> is opened first, so that the tables inside them are laid out and measured too. The
browser tests need `chromium` and `chromedriver` on PATH and selenium; without them they are skipped
with a message, never passed.
"""

from __future__ import annotations

import html
import json
import re

import pytest
from browser import chromium

pytest.importorskip("matplotlib")

from shardbudget.report import demo  # noqa: E402
from shardbudget.report import html as report_html  # noqa: E402
from shardbudget.report.markup import NOWRAP_CHARS, launch_block  # noqa: E402
from shardbudget.decide.request import request
from shardbudget.decide.report_answers import answer_report

WIDTHS = (1280, 800)
MOE = ("deepseek-v3", ["hgx-h200:2"])


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """{name: (path, data)} for the dense and the MoE multi-node report."""
    folder = tmp_path_factory.mktemp("width")
    dense = report_html.view(
        answer_report(
            request(demo.MODEL, demo.SYSTEMS[0], batches=demo.BATCHES, context=demo.CONTEXT, budget_s=demo.BUDGET_S),
            demo.SYSTEMS,
        )
    )
    moe = report_html.view(
        answer_report(request(MOE[0], "hgx-h200", batches=(1, 64), context=4096, budget_s=0.030), MOE[1])
    )
    out = {}
    for name, data in (("dense", dense), ("moe", moe)):
        out[name] = (report_html.write_html(folder / f"{name}.html", report_html.render(data)), data)
    return out


@pytest.fixture(scope="module")
def driver():
    drv = chromium(1280, 1000)
    yield drv
    drv.quit()


_LAYOUT = """document.querySelectorAll('details').forEach(d => d.open = true);
const vw = document.documentElement.clientWidth;
const right = e => e.getBoundingClientRect().left + e.scrollWidth;
const name = e => e.tagName.toLowerCase() + (e.id ? '#' + e.id : '') + (e.className ? '.' + e.className : '');
const past = [...document.body.querySelectorAll('*')].filter(e => e instanceof HTMLElement && right(e) > vw + 0.5)
  .map(e => name(e) + ' to ' + Math.round(right(e)) + ' px: ' + e.textContent.slice(0, 60));
const scrolled = [...document.querySelectorAll('.tw, pre')].filter(e => e.scrollWidth > e.clientWidth + 0.5)
  .map(e => name(e) + ' ' + e.scrollWidth + ' > ' + e.clientWidth + ' px: ' + e.textContent.slice(0, 60));
const launch = [...document.querySelectorAll('pre.launch')].map(p => {
  const cs = getComputedStyle(p);
  const inner = p.clientHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom);
  return {text: p.textContent, rows: Math.round(inner / parseFloat(cs.lineHeight)),
          broken: [...p.querySelectorAll('span')].filter(s => s.getClientRects().length > 1).map(s => s.textContent)};
});
return JSON.stringify({vw, page: document.documentElement.scrollWidth, body: document.body.scrollWidth,
                       tables: document.querySelectorAll('.tw > table').length, past, scrolled, launch});"""


def _launch_text(data) -> list[str]:
    """Each system's launch block as deploy gave it: 'engine: line' per engine."""
    return [
        "\n".join(f"{engine}: {line}" for engine, line in r.launch.items())
        for r in data.deployments
        if not isinstance(r, str) and r.launch
    ]


@pytest.mark.parametrize("name", ["dense", "moe"])
def test_the_page_is_no_wider_than_the_window(driver, pages, name):
    path, data = pages[name]
    expected_launch = _launch_text(data)
    assert expected_launch, "the report should show launch lines"
    longest = max(len(line) for block in expected_launch for line in block.split("\n"))
    assert longest > 200  # long enough that an unwrapped line would run past an 800 px window
    for width in WIDTHS:
        driver.set_window_size(width, 1000)
        driver.get(path.resolve().as_uri())
        facts = json.loads(driver.execute_script(_LAYOUT))
        assert facts["vw"] == width
        where = f"{name} report at {width} px"
        assert facts["page"] <= width and facts["body"] <= width, (where, facts["page"], facts["past"][:5])
        assert not facts["past"], (where, facts["past"][:5])
        assert not facts["scrolled"], (where, facts["scrolled"][:5])  # no table or block scrolls inside its box
        assert facts["tables"] >= 10
        # copied, the launch lines are the commands deploy gave, unchanged; on screen they wrap between words
        assert [b["text"] for b in facts["launch"]] == expected_launch
        for block in facts["launch"]:
            assert not block["broken"], (where, block["broken"][:5])
            assert block["rows"] > block["text"].count("\n") + 1, where  # wrapped, not clipped


def test_launch_block_keeps_the_text_and_escapes_it():
    lines = [
        "trtllm: cat > trtllm-serve.yaml <<'EOF'",
        '  allreduce_strategy: "NCCL"',
        "EOF",
        "vllm serve m --data-parallel-address $NODE0_IP " + "x" * (NOWRAP_CHARS + 1),
    ]
    block = launch_block(lines)
    assert block.startswith('<pre class="launch">') and block.endswith("</pre>")
    assert "<<" not in block and "&lt;&lt;&#x27;EOF&#x27;" in block
    assert html.unescape(re.sub(r"<[^>]+>", "", block)) == "\n".join(lines)
    spans = re.findall(r"<span>(.*?)</span>", block)
    assert "--data-parallel-address" in spans and "allreduce_strategy:" in spans  # one word, one span
    assert "x" * (NOWRAP_CHARS + 1) not in spans  # a word longer than that may break
    assert not any(s.strip() != s or not s for s in spans)  # spaces stay outside: the page breaks only there


_BAR_WORDS = """const line = document.getElementById('sb-budget-line');
if (!line) { return JSON.stringify(null); }
const bx = Number(line.getAttribute('x1'));
return JSON.stringify([...document.querySelectorAll('#sb-bars g[data-plan] text')].map(t => {
  const b = t.getBBox(); return {text: t.textContent, x0: b.x, x1: b.x + b.width, bx};
}));"""


@pytest.mark.parametrize("name", ["dense", "moe"])
def test_no_bar_label_is_crossed_by_the_budget_line(driver, pages, name):
    """The interactive bars' words ('12 ms · latency-optimal · the pick') stop before the dashed budget
    line or start past it (in the MoE report the line is pinned at the right edge, 30 ms beyond every bar)."""
    path, _ = pages[name]
    driver.set_window_size(1280, 1000)
    driver.get(path.resolve().as_uri())
    words = json.loads(driver.execute_script(_BAR_WORDS))
    assert words, "the section should draw a budget line"
    assert len(words) >= 2 * 7  # a plan's name and its words, per bar
    crossed = [w["text"] for w in words if w["x0"] - 2 < w["bx"] < w["x1"] + 2]
    assert not crossed, crossed
