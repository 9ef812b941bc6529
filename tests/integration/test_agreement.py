"""One verdict object: `plan`, the report's headline and table, `explain` and the figures all name the
same latency-optimal plan and the same plan to pick, for 20 requests across fabrics and models."""

import pytest

from shardbudget.decide.ask import Ask
from shardbudget.decide.tp_limit import when_allreduce_limits
from shardbudget.fabric.catalog import load_catalog
from shardbudget.decide.planner import plan
from shardbudget.report import figures
from shardbudget.report import html as report_html
from shardbudget.report.report_data import ReportData, ReportSettings, SystemSpec
from shardbudget.decide.request import request

REQUESTS = [  # (model, system, batch, budget_s)
    ("llama-3.1-70b", "hgx-h100", 1, 0.030),
    ("llama-3.1-70b", "hgx-h100", 64, 0.030),
    ("llama-3.1-70b", "l40s-pcie-nps1-degraded", 1, 0.050),
    ("llama-3.1-70b", "l40s-pcie-nps1-degraded", 64, 0.050),
    ("llama-3.1-70b", "hgx-b200", 1, 0.030),
    ("llama-3.1-70b", "mi300x", 64, 0.030),
    ("llama-3.1-8b", "rtx4090-pcie", 1, 0.030),
    ("llama-3.1-8b", "h100-pcie", 16, 0.020),
    ("llama-3.1-405b", "hgx-h200", 1, 0.100),
    ("llama-3.1-405b", "gb200-nvl72", 16, 0.050),
    ("qwen3-32b", "rtx-pro-6000-pcie", 8, 0.040),
    ("qwen2.5-72b", "hgx-a100", 32, 0.050),
    ("mixtral-8x7b", "hgx-h100", 64, 0.030),
    ("mixtral-8x22b", "hgx-h200", 1, 0.030),
    ("deepseek-v3", "hgx-h200", 1, 0.050),
    ("deepseek-v3", "hgx-b200", 256, 0.100),
    ("qwen3-30b-a3b", "hgx-h100", 64, 0.020),
    ("qwq-32b", "hgx-a100", 8, 0.030),
    ("codellama-34b", "l40s-pcie-nps1-degraded", 4, 0.060),
    ("llama-3.2-1b", "hgx-h100", 256, 0.010),
]


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.mark.parametrize("model, system, batch, budget_s", REQUESTS)
def test_every_reader_names_the_same_plan(model, system, batch, budget_s, catalog):
    req = request(
        model,
        system,
        batches=[batch],
        budget_s=budget_s,
        dtype="fp8" if "deepseek" in model else "bf16",
        catalog=catalog,
    )
    result = plan(req)
    br = result.results[0]
    v = br.judgement
    best = v.best.label() if v.best else None
    # plan's own sentence and its JSON
    assert br.best_plan == (dict(zip(("tp", "pp", "ep", "dp"), v.best.key)) if v.best else None)
    if best:
        assert f"Latency-optimal: {best} at" in br.verdict
    # the report: its verdict table, and the headline's pick for this (single) system
    settings = ReportSettings(
        model=model,
        systems=[system],
        batches=[batch],
        context=4096,
        budget_s=budget_s,
        ttft_budget_s=None,
        impl=None,
        engine="vllm",
        dtype=req.scenario.dtype,
    )
    data = ReportData(
        model=model,
        model_cfg=req.model,
        request=req,
        specs=[SystemSpec(system)],
        plans=[result],
        fabric=[],
        marks=[],
        answers=[],
        answers_error=None,
        measured=[],
        catalog=req.scenario.catalog,
        settings=settings,
    )
    row = report_html.verdict_rows(data)[0]
    assert row["best_plan"] == best and row["best_tp"] == br.best_tp
    headline = report_html.headline(data)
    if v.pick:
        assert f"{system} at {v.pick.label()} is the plan to pick at batch {batch}" in headline
    else:
        assert f"no system makes it at batch {batch}" in headline
    # explain's sweep of the same system (no budget: the latency-optimal plan does not depend on it)
    if result.dtype == "bf16":
        ask = Ask(request(model, system, batches=[batch], budget_s=budget_s, dtype="bf16", catalog=catalog))
        answer = when_allreduce_limits(ask, catalog.system(system))
        swept = plan(
            request(
                model,
                system,
                nodes=answer.figures["nodes"],
                batches=[batch],
                budget_s=budget_s,
                dtype="bf16",
                catalog=catalog,
            )
        )
        assert answer.figures["best_plan"] == swept.results[0].best_plan
    # the 'where the token goes' figure stars the same plan
    fig = figures.where_the_token_goes([result])
    starred = [t.get_text() for ax in fig.axes for t in ax.get_xticklabels() if "★" in t.get_text()]
    assert starred == ([best.replace(" ", "\n") + " ★"] if best else [])
