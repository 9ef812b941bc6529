"""`deploy --disaggregate auto`: the prefill:decode split searched beside the uniform options (issue 38,
build item 1), on an NVL72 rack and an HGX node."""

from __future__ import annotations

import json

import pytest

from shardbudget.decide.deploy import deploy
from shardbudget.decide.request import request
from shardbudget.decide.split_search import deploy_searched, search_splits


@pytest.fixture(scope="module")
def rack():
    req = request("deepseek-v3", "gb200-nvl72", budget_s=0.030, ttft_budget_s=2.0)
    return req, deploy(req, gpus=72)


def test_deepseek_on_one_nvl72_answers_the_wide_ep_split(rack):
    """The issue's case: the uniform answer was 9xTP8 at 208 tokens/s per GPU (vLLM 0.19.0; 270 under
    0.34.0, its MoE call and host overlap); the search finds 32:40, decode 5xTP8/EP8/DP8 at 514 (what
    --disaggregate 32:40 gives by hand; its MoE layers gather and reduce-scatter, as vLLM runs DP
    attention), at least 1.9x the issue's 208 and 1.90x today's uniform answer."""
    req, uniform = rack
    assert uniform.best.label() == "9xTP8"
    assert uniform.best.tokens_per_s_per_gpu == pytest.approx(270, rel=0.02)
    best = deploy_searched(req, gpus=72)
    assert best.best.label() == "5xTP8/EP8/DP8"
    assert best.prefill["gpus"] == 32
    assert (
        best.best.tokens_per_s_per_gpu >= 1.9 * 208
        and best.best.tokens_per_s_per_gpu >= 1.85 * uniform.best.tokens_per_s_per_gpu
    )
    by_hand = deploy(req, gpus=72, disaggregate=(32, 40))
    assert best.best.tokens_per_s_per_gpu == pytest.approx(by_hand.best.tokens_per_s_per_gpu)
    assert best.verdict.startswith("Layout: disaggregated 32:40 wins, prefill 8xTP4/EP4 + decode 5xTP8/EP8/DP8")
    assert "1.90x the best uniform 9xTP8 (270)" in best.verdict


def test_splits_that_cannot_feed_the_best_are_not_priced(rack):
    req, uniform = rack
    search = search_splits(req, gpus=72, uniform=uniform.best)
    assert [s.prefill_gpus for s in search.splits] == list(range(8, 72, 8))
    best = search.best
    pruned = [s for s in search.splits if s.pruned]
    assert pruned and all(s.option is None for s in pruned)
    assert best.prefill_gpus == 32 and search.gain == pytest.approx(514 / 270, rel=0.02)
    # a split priced in full is never better than the best, and a pruned one could not have been
    assert all(s.tokens_per_s_per_gpu <= best.tokens_per_s_per_gpu for s in search.splits)


def test_llama_70b_on_one_hgx_h100_is_unchanged():
    """8 GPUs of one node: no split in steps of 8 leaves both sides GPUs, the uniform answer stands."""
    req = request("llama-3.1-70b", "hgx-h100", budget_s=0.030, ttft_budget_s=2.0)
    plain, searched = deploy(req, gpus=8), deploy_searched(req, gpus=8)
    assert searched.best.label() == plain.best.label() == "1xTP8"
    assert searched.best.tokens_per_s_per_gpu == plain.best.tokens_per_s_per_gpu
    assert searched.prefill is None
    assert searched.verdict.startswith("Layout: aggregated 1xTP8 wins; 0 prefill:decode splits searched.")


def test_cli_disaggregate_auto_names_the_layout(cli):
    r = cli("deploy", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--gpus", "16", "--disaggregate", "auto")
    assert r.returncode == 0, r.stderr
    assert "Layout: disaggregated 8:8 wins" in r.stdout and "the best uniform 2xTP8" in r.stdout
    assert "1 prefill:decode split searched" in r.stdout


@pytest.mark.parametrize(
    "model, system, gpus",
    [("deepseek-v3", "gb200-nvl72", 512), ("llama-3.1-70b", "hgx-h100", 256), ("llama-3.1-8b", "hgx-h100", 1024)],
)
def test_the_refined_search_finds_the_exhaustive_winner(model, system, gpus):
    """Coarse then refined: fewer splits priced than every one in steps of 8, the same winner."""
    req = request(model, system, budget_s=0.030, ttft_budget_s=2.0)
    uniform = deploy(req, gpus=gpus).best
    refined = search_splits(req, gpus=gpus, uniform=uniform)
    every = search_splits(req, gpus=gpus, uniform=uniform, exhaustive=True)
    assert len(every.splits) == gpus // 8 - 1 and len(refined.splits) < len(every.splits)
    assert (refined.best.prefill_gpus, refined.best.option.label()) == (
        every.best.prefill_gpus,
        every.best.option.label(),
    )
    assert refined.best.tokens_per_s_per_gpu == every.best.tokens_per_s_per_gpu


def test_the_winner_is_priced_from_the_search(monkeypatch):
    """Each plan's curve is priced once per side (served, decode alone) in the whole search: the
    winning split's deployment reads the decode curves the search priced."""
    from shardbudget.decide import deploy as deploying

    seen, real = [], deploying._curve

    def counted(sc, p, *, work, prefill=None):
        seen.append((p, prefill is not None))
        return real(sc, p, work=work, prefill=prefill)

    monkeypatch.setattr(deploying, "_curve", counted)
    req = request("deepseek-v3", "gb200-nvl72", budget_s=0.030, ttft_budget_s=2.0)
    result = deploy_searched(req, gpus=72)
    assert result.prefill["gpus"] == 32 and result.split_search.best.prefill_gpus == 32
    assert len(seen) == len(set(seen)) and any(decode for _, decode in seen)


def _deploy(capsys, *argv: str) -> tuple[int, str]:
    from shardbudget import cli

    code = cli.main(["deploy", *argv, "--budget", "30ms", "--ttft-budget", "2s"])
    return code, capsys.readouterr().out


def test_the_default_deploy_on_one_nvl72_is_the_split(capsys):
    """Issue 38's 'done when': without --disaggregate, DeepSeek-V3 on one GB200 NVL72 is answered
    disaggregated, the layout named, at least 1.9x the 208 tokens/s per GPU of the uniform answer."""
    code, out = _deploy(capsys, "-m", "deepseek-v3", "-s", "gb200-nvl72", "--gpus", "72", "--json")
    d = json.loads(out)
    assert code == 0 and d["best"]["tokens_per_s_per_gpu"] >= 1.9 * 208
    assert d["verdict"].startswith("Layout: disaggregated 32:40 wins, prefill 8xTP4/EP4 + decode 5xTP8/EP8/DP8")
    search = d["split_search"]
    assert search["uniform"] == "9xTP8" and search["gain"] == pytest.approx(1.90, abs=0.005)
    assert [s["prefill_gpus"] for s in search["splits"]] == list(range(8, 72, 8))
    assert {"option", "tokens_per_s_per_gpu", "prefill", "pruned"} <= set(search["splits"][0])


@pytest.mark.parametrize(
    "argv",
    [
        ("-m", "llama-3.1-70b", "-s", "hgx-h100", "--gpus", "8"),
        ("-m", "deepseek-v3", "-s", "hgx-h200", "--gpus", "16"),
        ("-m", "llama-3.1-405b", "-s", "hgx-h100", "--gpus", "16"),  # nothing meets the budgets: exit 1
    ],
)
def test_where_aggregated_wins_the_default_prints_what_off_does(capsys, argv):
    """The search runs (its record in the JSON) but the text is the aggregated answer's, unchanged."""
    code, searched = _deploy(capsys, *argv)
    off_code, off = _deploy(capsys, *argv, "--disaggregate", "off")
    assert code == off_code and searched == off and "Layout:" not in searched
    d = json.loads(_deploy(capsys, *argv, "--json")[1])
    assert d["split_search"]["disaggregated_wins"] is False
    assert "split_search" not in json.loads(_deploy(capsys, *argv, "--disaggregate", "off", "--json")[1])


@pytest.mark.parametrize(
    "extra",
    [
        ("--context", "4096"),
        ("--batch", "8"),
        ("--objective", "cost", "--gpu-hour-usd", "2"),
        ("--disaggregate", "off"),
    ],
)
def test_no_search_where_it_does_not_apply(capsys, extra):
    """A decode-only --context, a given --batch, a cost ranking and --disaggregate off: aggregated
    replicas alone, as before (16 GPUs of Llama-3.1-70B, which the search answers 8:8)."""
    code, out = _deploy(capsys, "-m", "llama-3.1-70b", "-s", "hgx-h100", "--gpus", "16", *extra, "--json")
    d = json.loads(out)
    assert code == 0 and "split_search" not in d and d["prefill"] is None and d["best"]["replicas"] >= 1


def test_explicit_split_and_bad_words(capsys):
    code, out = _deploy(capsys, "-m", "llama-3.1-70b", "-s", "hgx-h100", "--gpus", "16", "--disaggregate", "8:8")
    assert code == 0 and "Layout:" not in out and "prefilled on the other 8 GPUs" in out.replace("\n# ", " ")
    code = _deploy(capsys, "-m", "llama-3.1-70b", "-s", "hgx-h100", "--gpus", "16", "--disaggregate", "of")[0]
    assert code == 2
