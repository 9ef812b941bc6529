"""deploy --objective cost | energy and explain's cost view (issue 39), as a user runs them.

Within one system deploy prices every GPU-hour alike, so cost ranks its options as tokens/s per GPU
does; the objectives part where the systems differ: a PCIe box at a lower GPU-hour, a board of
lower power. These tests hold those cases to the catalog's (or the user's) numbers."""

from __future__ import annotations

import json

import pytest

from shardbudget import cli

COST_KEYS = {"usd_per_mtok", "tokens_per_joule", "watts_per_gpu", "usd_per_gpu_hour", "nics_counted", "uncounted"}


def deploy_json(capsys, *argv) -> tuple[int, dict]:
    code = cli.main(["deploy", "-m", "llama-3.1-8b", "--gpus", "8", *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_json_keys_are_stable_and_every_option_is_priced(capsys):
    code, d = deploy_json(capsys, "-s", "hgx-h100")
    assert code == 0
    assert d["objective"] == "throughput"
    assert set(d["prices"]) == {"usd_per_gpu_hour", "price_source", "gpu_watts", "power_source", "uncounted"}
    for o in d["options"]:
        assert set(o["cost"]) == COST_KEYS
        # $/Mtok = GPU-hour / 3600 / (tok/s/GPU) x 1e6, tok/J = tok/s/GPU / W: checkable by hand
        assert o["cost"]["usd_per_mtok"] == pytest.approx(6.155 / 3600 / o["tokens_per_s_per_gpu"] * 1e6)
        assert o["cost"]["tokens_per_joule"] == pytest.approx(o["tokens_per_s_per_gpu"] / 700)


def test_overrides_reprice_and_the_table_shows_both_columns(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    code, d = deploy_json(capsys, "-s", "hgx-h100", "--gpu-hour-usd", "2", "--gpu-watts", "500")
    assert code == 0 and d["prices"]["price_source"] == "--gpu-hour-usd"
    best = d["best"]
    assert best["cost"]["usd_per_mtok"] == pytest.approx(2 / 3600 / best["tokens_per_s_per_gpu"] * 1e6)
    assert best["cost"]["tokens_per_joule"] == pytest.approx(best["tokens_per_s_per_gpu"] / 500)
    assert cli.main(["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100", "--gpus", "8", "--objective", "cost"]) == 0
    out = capsys.readouterr().out
    assert "$/Mtok" in out and "tok/J" in out and "ranked by cost; $6.155 per GPU-hour, 700 W per GPU" in out
    assert "gives the fewest dollars per million output tokens ($" in out


def test_the_cheaper_pcie_box_wins_on_cost_and_loses_on_latency(capsys):
    """hgx-h100 gives the most tokens/s per GPU; an L40S PCIe box at $0.50 per GPU-hour (the user's own
    price: an owned box amortised) gives the fewest dollars per token, at a longer ITL."""
    _, h100 = deploy_json(capsys, "-s", "hgx-h100", "--objective", "cost", "--budget", "100ms")
    _, l40s = deploy_json(
        capsys, "-s", "l40s-pcie-p2p", "--objective", "cost", "--budget", "100ms", "--gpu-hour-usd", "0.5"
    )
    a, b = h100["best"], l40s["best"]
    assert a["tokens_per_s_per_gpu"] > 3 * b["tokens_per_s_per_gpu"]  # throughput: the NVSwitch box
    assert b["cost"]["usd_per_mtok"] < a["cost"]["usd_per_mtok"]  # cost: the PCIe box
    assert b["itl_s"] > a["itl_s"]  # ... which loses on latency
    by = {
        obj: min(
            (h100, l40s),
            key=lambda r: r["best"]["cost"]["usd_per_mtok"] if obj == "cost" else -r["best"]["tokens_per_s_per_gpu"],
        )["system"]
        for obj in ("throughput", "cost")
    }
    assert by == {"throughput": "hgx-h100", "cost": "l40s-pcie-p2p"}


def test_at_catalog_prices_the_pcie_box_wins_on_cost_and_loses_on_latency(capsys):
    """Only the catalog's prices (CoreWeave's on-demand list, one basis): the RTX PRO 6000 PCIe box at
    $2.50 per GPU-hour against the HGX H100 at $6.155 (2.46x) makes about half the tokens/s per GPU,
    so it gives the fewer dollars per million tokens, at a longer ITL. (The L40S box at $2.25 does
    not: 2.74x cheaper per GPU-hour, it makes about a quarter of the H100's tokens/s per GPU.)"""
    _, h100 = deploy_json(capsys, "-s", "hgx-h100", "--objective", "cost", "--budget", "100ms")
    _, rtx = deploy_json(capsys, "-s", "rtx-pro-6000-pcie", "--objective", "cost", "--budget", "100ms")
    assert h100["prices"]["usd_per_gpu_hour"] == pytest.approx(6.155)
    assert rtx["prices"]["usd_per_gpu_hour"] == pytest.approx(2.50)
    assert "coreweave.com/pricing" in h100["prices"]["price_source"] + rtx["prices"]["price_source"]
    a, b = h100["best"], rtx["best"]
    assert a["tokens_per_s_per_gpu"] > 1.5 * b["tokens_per_s_per_gpu"]  # throughput: the NVSwitch box
    assert b["cost"]["usd_per_mtok"] < a["cost"]["usd_per_mtok"]  # cost: the PCIe box
    assert b["itl_s"] > a["itl_s"]  # ... which loses on latency
    _, l40s = deploy_json(capsys, "-s", "l40s-pcie-p2p", "--objective", "cost", "--budget", "100ms")
    assert l40s["best"]["cost"]["usd_per_mtok"] > a["cost"]["usd_per_mtok"]


def test_energy_picks_the_lower_power_board(capsys):
    """At the catalog's board powers (H100 SXM 700 W, H100 PCIe 350 W) the PCIe H100 box makes more
    tokens per joule though the SXM box makes more tokens/s per GPU."""
    _, sxm = deploy_json(capsys, "-s", "hgx-h100", "--objective", "energy")
    _, pcie = deploy_json(capsys, "-s", "h100-pcie", "--objective", "energy")
    assert sxm["best"]["tokens_per_s_per_gpu"] > pcie["best"]["tokens_per_s_per_gpu"]
    assert pcie["best"]["cost"]["tokens_per_joule"] > sxm["best"]["cost"]["tokens_per_joule"]


def test_energy_counts_the_nics_of_a_replica_that_spans_nodes(capsys):
    code = cli.main(
        [
            "deploy",
            "-m",
            "llama-3.1-70b",
            "-s",
            "hgx-h100",
            "--gpus",
            "16",
            "--budget",
            "100ms",
            "--objective",
            "energy",
            "--json",
        ]
    )
    d = json.loads(capsys.readouterr().out)
    assert code == 0
    by_label = {f"{o['replicas']}x{o['tp']}/{o['pp']}": o for o in d["options"]}
    spans, inside = by_label["1x2/8"], by_label["4x4/1"]
    assert spans["cost"]["nics_counted"] and spans["cost"]["watts_per_gpu"] == pytest.approx(700 + 17.5)
    assert not inside["cost"]["nics_counted"] and inside["cost"]["watts_per_gpu"] == 700
    # energy ranks by tokens per joule, the spanning option's links included (17.5 W per GPU more)
    meets = [o["cost"]["tokens_per_joule"] for o in d["options"] if o["meets_budget"]]
    assert meets == sorted(meets, reverse=True)
    assert spans["cost"]["tokens_per_joule"] == pytest.approx(spans["tokens_per_s_per_gpu"] / 717.5)


@pytest.mark.parametrize(
    "argv, words",
    [
        (["--gpu-hour-usd", "-1"], "--gpu-hour-usd must be a finite number above 0, got -1.0"),
        (["--gpu-hour-usd", "nan"], "--gpu-hour-usd must be a finite number above 0, got nan"),
        (["--gpu-watts", "0"], "--gpu-watts must be a finite number above 0, got 0.0"),
        (["--objective", "speed"], "--objective must be one of throughput, cost, energy, got 'speed'"),
        (["-s", "gb300-nvl72", "--objective", "cost"], "--objective cost: no GPU-hour price for gb300-nvl72"),
    ],
)
def test_bad_values_are_refused_in_one_line(capsys, argv, words):
    argv = argv if "-s" in argv else ["-s", "hgx-h100", *argv]
    code = cli.main(["deploy", "-m", "llama-3.1-8b", "--gpus", "8", *argv])
    err = capsys.readouterr().err.strip()
    assert code == 2 and words in err and "\n" not in err and "Traceback" not in err


def test_explain_names_where_the_cheaper_fabric_wins_on_cost(capsys, tmp_path):
    mine = tmp_path / "prices.toml"
    mine.write_text(
        '[system_costs.l40s-pcie-p2p]\nusd_per_gpu_hour = 1.0\ndate = "2026-12"\nsource = "our own box, amortised"\n'
    )
    code = cli.main(
        ["explain", "-m", "llama-3.1-8b", "-s", "hgx-h100", "-s", "l40s-pcie-p2p", "--catalog", str(mine), "--json"]
    )
    first = json.loads(capsys.readouterr().out)["answers"][0]
    assert code == 0
    cases = {c["system"]: c for c in first["figures"]["cases"]}
    fast, cheap = cases["hgx-h100"], cases["l40s-pcie-p2p"]
    assert cheap["usd_per_mtok"] < fast["usd_per_mtok"] and cheap["itl_s"] > fast["itl_s"]
    assert "l40s-pcie-p2p (pcie4) wins on cost" in first["takeaway"]
    assert "while losing on latency" in first["takeaway"]
    assert first["tables"][0]["columns"][-2:] == ["$/Mtok", "tok/J"]


def test_the_pareto_figure_takes_the_objectives_axis():
    pytest.importorskip("matplotlib")
    import dataclasses

    from shardbudget.decide.cost import Pricing
    from shardbudget.decide.deploy import deploy
    from shardbudget.decide.request import request
    from shardbudget.report import figures

    req = request("llama-3.1-8b", "hgx-h100")
    r = deploy(dataclasses.replace(req, pricing=Pricing(objective="cost")), gpus=8)
    best = r.best.label()
    usd, per_joule = r.costs.curves[best]
    per_gpu = r.curves[best][1]
    assert usd == pytest.approx(6.155 / 3600 / per_gpu * 1e6) and per_joule == pytest.approx(per_gpu / 700)
    for axis, label, star in (
        ("cost", "$ per million output tokens", r.best.cost.usd_per_mtok),
        ("energy", "output tokens per joule", r.best.cost.tokens_per_joule),
        ("throughput", "tokens/s per GPU", r.best.tokens_per_s_per_gpu),
    ):
        ax = figures.pareto_figure(r, axis=axis).axes[0]
        assert ax.get_ylabel() == label
        stars = [line for line in ax.get_lines() if line.get_marker() == "*"]
        assert stars and stars[0].get_ydata()[0] == pytest.approx(star)


def test_a_narrow_table_keeps_the_objectives_column_alone(capsys, monkeypatch):
    """At 100 columns both cost columns would split deploy's table in two: the objective's stays."""
    monkeypatch.setenv("COLUMNS", "100")
    argv = ["deploy", "-m", "llama-3.1-8b", "-s", "l40s-pcie-p2p", "--gpus", "8"]
    assert cli.main([*argv, "--objective", "cost"]) == 0
    out = capsys.readouterr().out
    assert "$/M" in out and "t/J" not in out and "(1/2)" not in out
    assert cli.main([*argv, "--objective", "energy"]) == 0
    out = capsys.readouterr().out
    assert "t/J" in out and "$/M" not in out and "(1/2)" not in out
