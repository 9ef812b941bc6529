"""The parts of a serving check that price nothing (issue 39): which concurrency a run is priced at,
its band, the direction of a throughput ratio, and how the step's parts are ranked, on numbers
worked by hand."""

from __future__ import annotations

import math

import pytest

from shardbudget.decide.serving_causes import PART_SPREAD, _parts
from shardbudget.decide.serving_check import Asked, MetricCheck, batch_of, lengths_of, primary, verdict_of
from shardbudget.decide.verdicts import Row
from shardbudget.errors import PlanError
from shardbudget.measure.logs.serving import ServingRun
from shardbudget.model import Plan


def run(**kw) -> ServingRun:
    base = dict(
        source="r.json",
        index=1,
        tool="vllm bench serve",
        model="m",
        concurrency=None,
        request_rate=None,
        input_len=1000.0,
        output_len=200.0,
    )
    return ServingRun(**{**base, **kw})


@pytest.mark.parametrize(
    "kw, asked, b, basis",
    [
        (dict(concurrency=32, in_flight=31.5), Asked(), 32.0, "max concurrency 32"),  # the cap, held
        (dict(concurrency=32, in_flight=20.0), Asked(), 20.0, "in flight"),  # fewer held: what ran
        (dict(request_rate=10.0, in_flight=29.6), Asked(replicas=4), 7.4, "over 4 replicas"),  # open loop, split
        (dict(concurrency=8), Asked(concurrency=12), 12.0, "--concurrency 12"),
        (dict(in_flight=0.3), Asked(), 1.0, "in flight"),  # never below one request
    ],
)
def test_the_concurrency_a_run_is_priced_at(kw, asked, b, basis):
    got, words = batch_of(run(**kw), asked)
    assert got == pytest.approx(b) and basis in words


def test_a_run_without_load_or_lengths_is_refused():
    with pytest.raises(PlanError, match="give --concurrency"):
        batch_of(run(), Asked())
    with pytest.raises(PlanError, match="mean output len"):
        lengths_of(run(output_len=None), Asked())
    assert lengths_of(run(input_len=200.85, output_len=2565.855), Asked()) == (201, 2566)


def test_the_band_is_symmetric_in_log_space():
    assert [verdict_of(r, 0.25) for r in (1.25, 1 / 1.25, 1.26, 1 / 1.26)] == ["ok", "ok", "slow", "fast"]


def test_a_throughput_below_the_priced_one_is_slow():
    m = MetricCheck(metric="output tok/s", stat="mean", measured=1000.0, predicted=2000.0, band=0.25, verdict="")
    t = MetricCheck(metric="TPOT", stat="mean", measured=2e-3, predicted=1e-3, band=0.25, verdict="")
    assert m.ratio == 2.0 and t.ratio == 2.0
    ok = MetricCheck(metric="TPOT", stat="mean", measured=1e-3, predicted=1e-3, band=0.25, verdict="ok")
    assert primary((ok, m)) is m and primary((ok,)) is None


def _row(**kw) -> Row:
    base = dict(
        tp=8,
        pp=1,
        ep=1,
        dp=1,
        itl_s=10e-3,
        compute_s=7e-3,
        comm_s=2e-3,
        comm_share=0.2,
        comm_latency_s=1e-3,
        other_s=1e-3,
        ttft_s=0.1,
        mem_bytes_per_gpu=1e9,
        fits_memory=True,
        meets_budget=True,
        tpot_s=11e-3,
    )
    return Row(**{**base, **kw})


class _Req:  # what _parts reads of a request: the system's fabric names
    class system:
        gpus_per_node, nic_fabric = 8, None

        class intra_fabric:
            name = "nvswitch-gen3"


def test_parts_are_ranked_by_the_factor_each_needs_against_its_spread():
    """TPOT 11 ms priced, 19 ms measured: 8 ms more. Communication (2 ms) needs x5, log 5 / log 10 =
    0.70 of its spread; kernels (7 ms) x2.14, 1.88 of theirs; host (1 ms) x9, 2.0; the mixed prompts
    (TPOT - decode step = 1 ms) x9, 2.0."""
    off = MetricCheck(metric="TPOT", stat="mean", measured=19e-3, predicted=11e-3, band=0.25, verdict="slow")
    causes = sorted(_parts(run(), _row(), _Req, Plan(8), off, (off,)), key=lambda c: c.score)
    assert [c.kind for c in causes][0] == "communication" and causes[0].explains
    score = {c.kind: c.score - 1.0 for c in causes}
    assert score["communication"] == pytest.approx(math.log(5) / math.log(PART_SPREAD["communication"]))
    assert score["kernels"] == pytest.approx(math.log(1 + 8 / 7) / math.log(1.5))
    assert not any(c.explains for c in causes if c.kind != "communication")


def test_prefill_interference_first_when_the_decode_steps_are_on_time():
    """The median ITL (decode steps without a prompt) within its band and the mean TPOT 40 % over:
    the mixed prompts are what is slow."""
    off = MetricCheck(metric="TPOT", stat="mean", measured=15.4e-3, predicted=11e-3, band=0.25, verdict="slow")
    itl = MetricCheck(metric="ITL", stat="median", measured=10.2e-3, predicted=10e-3, band=0.25, verdict="ok")
    causes = sorted(_parts(run(), _row(), _Req, Plan(8), off, (off, itl)), key=lambda c: c.score)
    assert causes[0].kind == "prefill" and causes[0].explains
