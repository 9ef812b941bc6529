"""The served TPOT (step.served): the formula by hand, and plan and deploy agreeing on it."""

from __future__ import annotations

import numpy as np
import pytest

from shardbudget.decide.deploy import Workload, deploy
from shardbudget.decide.planner import plan
from shardbudget.errors import PlanError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import Plan, load_model
from shardbudget.step.compose import compile_step
from shardbudget.step.served import prompt_token_s, served_curve
from shardbudget.step.scenario import precision_for, scenario
from shardbudget.step.settings import PlanSettings, engine_efficiency
from shardbudget.decide.request import request

REL = 1e-9


@pytest.fixture(scope="module")
def setup():
    cat = load_catalog()
    cfg, system = load_model("llama-3.1-70b"), cat.system("hgx-h100")
    common = dict(
        impl=None,
        engine="vllm",
        precision=precision_for(cfg, system)[0],
        eff=engine_efficiency("vllm"),
        settings=PlanSettings(),
    )
    return cat, cfg, system, common, scenario(cfg, system, catalog=cat)


def test_tpot_by_hand(setup):
    """tpot(b) = decode(b) at context input + output / 2 + c_p (b - 1) input / output, with c_p one
    prompt's prefill less a one-token decode step over the prompt; the cycle adds the request's own."""
    cat, cfg, system, common, sc = setup
    p, i, o = Plan(4), 2048, 256
    b = np.array([1.0, 2.0, 16.0, 64.0])
    s = served_curve(sc, p, batch=b, input_len=i, output_len=o)
    dec = compile_step(cfg, system, p, cat, phase="decode", **common)
    pre = compile_step(cfg, system, p, cat, phase="prefill", **common)
    step = dec.evaluate(b, i + o / 2).total_s
    c_p = (float(pre.evaluate(1.0, float(i)).total_s) - float(dec.evaluate(1.0, 1.0).total_s)) / i
    assert s.prompt_token_s == pytest.approx(c_p, rel=REL) == prompt_token_s(sc, p, input_len=i)
    assert c_p > 0
    np.testing.assert_allclose(s.tpot_s, step + c_p * (b - 1) * i / o, rtol=REL)
    assert s.tpot_s[0] == pytest.approx(step[0], rel=REL)  # concurrency 1: nobody else's prompt
    np.testing.assert_allclose(s.cycle_s, s.tpot_s + c_p * i / o, rtol=REL)
    # one chunk (2048 <= 8192 - b): TTFT = a decode step of the batch + the whole prompt's c_p
    np.testing.assert_allclose(s.ttft_s, step + c_p * i, rtol=REL)
    # issue 34: the TPOT's communication counts the mixed prompts' collectives, c_p's communication
    # part being the same difference of the two steps' communication
    comm = dec.evaluate(b, i + o / 2).comm_s
    c_comm = (float(pre.evaluate(1.0, float(i)).comm_s) - float(dec.evaluate(1.0, 1.0).comm_s)) / i
    assert s.prompt_comm_s == pytest.approx(c_comm, rel=REL) and 0 < c_comm < c_p
    np.testing.assert_allclose(s.decode_s, step, rtol=REL)
    np.testing.assert_allclose(s.decode_comm_s, comm, rtol=REL)
    np.testing.assert_allclose(s.comm_s, comm + c_comm * (b - 1) * i / o, rtol=REL)


def test_prompts_all_reduces_are_most_of_a_pcie_tpot():
    """Issue 34, by hand: llama-3.1-8b on 8x L40S (PCIe, all-reduce through host memory) at batch 5,
    2048 / 256: the decode step is 11.24 ms with 6.75 ms of communication (60%), the four other
    slots' prompts add 32 prompt tokens per generated token at c_p = 655 us each, 644 us of it
    all-reduce: TPOT 32.19 ms of which 27.37 ms is communication (85%), where the decode-only share
    said 60% and the old served share (decode communication over the TPOT) 21%."""
    sc = request("llama-3.1-8b", "l40s-pcie-nps1-degraded").scenario
    s = served_curve(sc, Plan(8), batch=[5.0], input_len=2048, output_len=256)
    assert s.decode_s[0] == pytest.approx(11.24e-3, abs=0.01e-3) and s.tpot_s[0] == pytest.approx(32.19e-3, abs=0.01e-3)
    assert s.decode_comm_s[0] / s.decode_s[0] == pytest.approx(0.60, abs=0.005)
    assert s.prompt_token_s == pytest.approx(655e-6, abs=1e-6) and s.prompt_comm_s == pytest.approx(644e-6, abs=1e-6)
    mixed = 4 * 2048 / 256
    assert s.comm_s[0] == pytest.approx(s.decode_comm_s[0] + mixed * s.prompt_comm_s, rel=REL)
    assert s.comm_s[0] / s.tpot_s[0] == pytest.approx(0.85, abs=0.005)


def test_plan_and_deploy_agree_on_every_plan_and_batch(setup):
    """The same model, system and workload: deploy's TPOT and ITL at each option's batch are plan's,
    its communication share plan's (both of the TPOT, prompts' collectives counted: issue 34), and
    its TTFT plan's (a new prompt's chunks riding in the batch's steps, in both; issue 19: one TTFT
    per plan, batch and workload)."""
    cat = setup[0]
    work = Workload(input_len=2048, output_len=256)
    r = deploy(request("llama-3.1-70b", "hgx-h100", budget_s=0.030, work=work, catalog=cat), gpus=8)
    checked = 0
    for o in r.options:
        if not o.meets_budget or o.pp > 1:
            continue
        pr = plan(
            request(
                "llama-3.1-70b",
                "hgx-h100",
                batches=[o.max_batch],
                budget_s=0.030,
                input_len=2048,
                output_len=256,
                catalog=cat,
            )
        )
        row = next(x for x in pr.results[0].rows if (x.tp, x.pp, x.ep, x.dp) == (o.tp, o.pp, o.ep, o.dp))
        assert row.tpot_s == pytest.approx(o.tpot_s, rel=REL) and row.itl_s == pytest.approx(o.itl_s, rel=REL)
        assert row.comm_share == pytest.approx(o.comm_share, rel=REL)
        assert row.ttft_s == pytest.approx(o.ttft_s, rel=REL)
        checked += 1
    assert checked >= 3


def test_plan_without_a_workload_is_decode_only(setup):
    cat = setup[0]
    pr = plan(request("llama-3.1-8b", "hgx-h100", batches=[8], catalog=cat))
    assert all(r.tpot_s is None for r in pr.results[0].rows)
    assert pr.assumptions.tpot.startswith("decode only")
    served = plan(request("llama-3.1-8b", "hgx-h100", batches=[8], input_len=4096, output_len=128, catalog=cat))
    assert served.context == 4096 + 64
    for r in served.results[0].rows:
        assert r.tpot_s > r.itl_s  # ISL 4096 / OSL 128: 7 x 32 prompt tokens ride in every step


@pytest.mark.parametrize(
    "kwargs, words",
    [
        (dict(input_len=0, output_len=8), "input-len must be a whole number"),
        (
            dict(input_len=1024, output_len=128, context=2048),
            "give --context .decode only. or --input-len/--output-len",
        ),
        (dict(input_len=200_000, output_len=128), "exceeds"),
    ],
)
def test_bad_served_requests_are_one_line_errors(setup, kwargs, words):
    with pytest.raises(PlanError, match=words):
        plan(request("llama-3.1-8b", "hgx-h100", batches=[1], catalog=setup[0], **kwargs))


def test_one_length_alone_takes_the_others_default(setup):
    """plan and deploy read a served workload alike: --input-len alone keeps the default output length
    (plan refused it before the one request), and the served TPOT is the same as with both given."""
    alone = plan(request("llama-3.1-8b", "hgx-h100", batches=[8], input_len=1024, catalog=setup[0]))
    both = plan(request("llama-3.1-8b", "hgx-h100", batches=[8], input_len=1024, output_len=256, catalog=setup[0]))
    assert alone.context == both.context == 1024 + 128
    assert [r.tpot_s for r in alone.results[0].rows] == [r.tpot_s for r in both.results[0].rows]
