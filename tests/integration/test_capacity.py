"""deploy --rate / --users: the fewest GPUs that serve a load within the budgets, checked by hand:
the throughput identity (replicas x batch / (output_len x cycle) >= rate; replicas x batch >= users)
on the answer's own option, and deploy on one GPU fewer serving less than the load with every split.
"""

from __future__ import annotations

import json
import math

import pytest

from shardbudget import cli as cli_module
from shardbudget.decide.capacity import Load, better_fabric, capacities, deploy_for_load, fewest
from shardbudget.decide.deploy import Workload, deploy
from shardbudget.errors import PlanError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.decide.request import request

OSL = Workload().output_len  # 256


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def rate10(catalog):
    return deploy_for_load(request("llama-3.1-70b", "hgx-h100", catalog=catalog), Load(rate_per_s=10.0))


def _rate(o, out=OSL) -> float:
    """Requests/s an option serves at its largest batch: replicas x batch / (output_len x cycle)."""
    return o.replicas * o.max_batch / (out * o.cycle_s) if o.meets_budget else 0.0


def test_rate_answer_meets_the_throughput_identity(rate10):
    a, o = rate10, rate10.result.best
    assert a.gpus == a.result.gpus == o.replicas * o.gpus_per_replica
    assert o.meets_budget and o.tpot_s <= 0.030
    assert _rate(o) >= 10.0
    # the batch it needs: the smallest that serves it, no larger than the budgets allow
    assert 1 <= a.batch <= o.max_batch and a.tpot_s <= o.tpot_s + 1e-12 and a.itl_s <= o.itl_s + 1e-12
    assert a.served == pytest.approx(_rate(o), rel=1e-12)
    # tokens/s is the same identity per token: tokens_per_s = replicas x batch / cycle
    assert o.tokens_per_s == pytest.approx(o.replicas * o.max_batch / o.cycle_s, rel=1e-9)


def test_one_gpu_fewer_does_not_serve_the_rate(rate10, catalog):
    fewer = deploy(request("llama-3.1-70b", "hgx-h100", catalog=catalog), gpus=rate10.gpus - 1)
    assert max(_rate(o) for o in fewer.options) < 10.0


def test_more_load_than_the_answer_serves_takes_more_gpus(rate10, catalog):
    """Just past what the answer's GPUs serve, the count grows (and never shrinks with the load)."""
    more = deploy_for_load(request("llama-3.1-70b", "hgx-h100", catalog=catalog), Load(rate_per_s=rate10.served * 1.01))
    less = deploy_for_load(request("llama-3.1-70b", "hgx-h100", catalog=catalog), Load(rate_per_s=rate10.served * 0.5))
    assert more.gpus > rate10.gpus >= less.gpus


def test_users_answer_seats_every_user_and_one_gpu_fewer_does_not(catalog):
    a = deploy_for_load(request("llama-3.1-70b", "hgx-h100", catalog=catalog), Load(users=300))
    o = a.result.best
    assert o.replicas * o.max_batch >= 300 and o.replicas * a.batch >= 300
    assert o.replicas * (a.batch - 1) < 300 or a.batch == 1  # the smallest batch that seats them
    fewer = deploy(request("llama-3.1-70b", "hgx-h100", catalog=catalog), gpus=a.gpus - 1)
    assert max((o.replicas * o.max_batch for o in fewer.options if o.meets_budget), default=0) < 300


def test_the_binding_budget_is_named(catalog, rate10):
    """The load and the cap are told apart in the words the table and the launch lines use (issue 34:
    "at batch 28 per replica" in the headline beside 50 in the table and --max-num-seqs 50)."""
    o = rate10.result.best
    assert rate10.binding == "tpot" and "the most the TPOT budget allows" in rate10.text
    load = f"{rate10.batch} sequences in flight per replica at 10 requests/s"
    assert f"with {load}" in rate10.text
    assert f"a batch cap of {o.max_batch} sequences per replica" in rate10.text and rate10.batch < o.max_batch
    assert all(
        f"batch cap {o.max_batch} sequences per replica; {load}" in text for text in rate10.result.launch.values()
    )
    d = rate10.to_dict()["deploy"]
    assert (d["load"], d["in_flight_per_replica"], d["best"]["max_batch"]) == (
        "10 requests/s",
        rate10.batch,
        o.max_batch,
    )
    loose = deploy_for_load(request("llama-3.1-70b", "hgx-h100", budget_s=None, catalog=catalog), Load(rate_per_s=10.0))
    assert loose.binding in ("memory", "max-batch") and loose.gpus <= rate10.gpus  # no budget: fewer or equal


def test_a_faster_fabric_saves_gpus_on_pcie_without_p2p(catalog):
    """L40S on PCIe without P2P: the same GPUs with P2P (explain's what-if) serve 2 requests/s on fewer;
    the what-if's count is the search's own on that system."""
    a = deploy_for_load(
        request("llama-3.1-70b", "l40s-pcie-nps1-degraded", budget_s=0.100, catalog=catalog), Load(rate_per_s=2.0)
    )
    f = a.fabric
    label, fast = better_fabric(catalog.system("l40s-pcie-nps1-degraded"), catalog)
    assert f["label"] == label and "P2P" in label and "what-if" in label
    assert fast.gpu is catalog.system("l40s-pcie-nps1-degraded").gpu and fast.pcie.gpu_p2p
    assert (
        f["gpus"]
        == deploy_for_load(request("llama-3.1-70b", fast, budget_s=0.100, catalog=catalog), Load(rate_per_s=2.0)).gpus
    )
    assert f["gpus"] < a.gpus and f["saves"] == a.gpus - f["gpus"] and f"save {f['saves']} GPUs" in a.text


def test_no_faster_fabric_is_said(rate10):
    assert rate10.fabric is None and "no faster fabric" in rate10.text  # hgx-h100: no wider Hopper domain


def test_load_is_checked():
    for kw, words in (
        ({"rate_per_s": 0.0}, "above 0"),
        ({"rate_per_s": -1.0}, "above 0"),
        ({"rate_per_s": math.nan}, "above 0"),
        ({"users": 0}, "at least 1"),
        ({"rate_per_s": 1.0, "users": 2}, "not both"),
        ({}, "not both"),
    ):
        with pytest.raises(PlanError, match=words):
            Load(**kw)


def test_capacities_are_deploys_options(catalog):
    """The search prices one replica of each plan exactly as deploy does on that plan's GPUs."""
    from shardbudget.decide.request import Budgets

    sc = request("llama-3.1-70b", "hgx-h100", catalog=catalog).scenario
    caps = capacities(sc, Load(rate_per_s=1.0), budgets=Budgets(budget_s=0.030), work=Workload())
    tp8 = next(c for c in caps if c.plan.tp == 8 and c.plan.pp == 1)
    one = next(
        o
        for o in deploy(request("llama-3.1-70b", "hgx-h100", catalog=catalog), gpus=8).options
        if o.replicas == 1 and o.tp == 8
    )
    assert tp8.option.max_batch == one.max_batch and tp8.option.cycle_s == pytest.approx(one.cycle_s, rel=1e-12)
    # 1 request/s: one TP4 replica (batch 22 within 30 ms serves 2.8/s); TP1 holds no batch in 30 ms and
    # TP2 only batch 1 (0.13/s: 8 replicas, 16 GPUs)
    assert fewest(caps).gpus == 4 and all(c.gpus >= 4 or c.replicas == 0 for c in caps)


# --- the CLI ---------------------------------------------------------------------------------


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli_module.main(["deploy", "--model", "llama-3.1-70b", "--system", "hgx-h100", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_cli_rate_exit_0_with_words_table_and_json(capsys):
    rc, out, _ = _run(capsys, "--rate", "10")
    assert rc == 0 and out.startswith("10 requests/s take 16 GPUs of hgx-h100") and "vllm serve" in out
    # the load and the cap in the same words in the headline, the table's header and the launch lines
    header = next(line for line in out.splitlines() if line.startswith("# at 10 requests/s: "))
    load = header.split(": ", 1)[1].split(" runs ", 1)[1].split(";", 1)[0]
    assert load.endswith("sequences in flight per replica") and f"with {load} at 10 requests/s" in out
    assert out.count(f"{load} at 10 requests/s") >= 4 and "batch cap" in header and "┃ batch cap ┃" in out
    rc, out, _ = _run(capsys, "--users", "300", "--json")
    d = json.loads(out)
    assert rc == 0 and d["users"] == 300 and d["gpus"] == d["deploy"]["gpus"] and d["binding"] in ("tpot", "memory")
    best = d["deploy"]["best"]
    assert best["replicas"] * d["in_flight_per_replica"] >= 300 and d["batch_cap_per_replica"] == best["max_batch"]


def test_cli_nothing_serves_exit_1_names_the_closest(capsys):
    rc, out, err = _run(capsys, "--rate", "2", "--budget", "1ms")
    assert rc == 1 and err == "" and out.startswith("No replica of llama-3.1-70b on hgx-h100 meets 1 ms TPOT")
    assert "the closest is one TP8 replica" in out


def test_a_load_past_the_gpu_bound_is_refused_with_the_bound_not_called_unmeetable(capsys):
    """Issue 24, item 11 re-checked: `--rate 1e9` said no replica meets 30 ms at batch 1 (false:
    TP1 at batch 78 meets it, 29.9 ms) when the load needed more GPUs than an answer may take.
    Each TP1 replica of llama-3.1-8b serves 78 / (256 x cycle) requests/s, so 1e9 needs ~1e8 GPUs."""
    from shardbudget.decide.capacity import MAX_LOAD_GPUS

    argv = ["deploy", "-m", "llama-3.1-8b", "-s", "hgx-h100"]
    for load, words in (
        (["--rate", "1e9"], "--rate: 1e+09 requests/s take "),
        (["--users", "100000000"], "--users: 100000000 concurrent users take "),
    ):
        rc = cli_module.main([*argv, *load])
        out, err = capsys.readouterr()
        assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (rc, out, err)
        assert words in err and f"past the {MAX_LOAD_GPUS:,} an answer may take" in err and "No replica" not in err
        gpus = int(err.split(" take ")[1].split(" GPUs")[0].replace(",", ""))
        assert gpus > MAX_LOAD_GPUS
    rc = cli_module.main([*argv, "--users", "1000"])  # within the bound: answered
    assert rc == 0 and capsys.readouterr().out.startswith("1000 concurrent users take 13 GPUs of hgx-h100")


@pytest.mark.parametrize(
    "args,words",
    [
        (["--rate", "0"], "--rate must be a number of requests per second above 0"),
        (["--rate", "-3"], "--rate must be a number of requests per second above 0"),
        (["--users", "0"], "--users must be a whole number of at least 1"),
        (["--rate", "1", "--users", "2"], "not both"),
        (["--rate", "1", "--gpus", "8"], "--rate finds the GPUs itself: give --rate or --gpus, not both"),
        (["--users", "4", "--nodes", "2"], "--users finds the GPUs itself: give --users or --nodes, not both"),
        (["--rate", "1", "--disaggregate", "2:6"], "give --rate or --disaggregate, not both"),
        (["--users", "4", "--batch", "8"], "give --users or --batch, not both"),
        ([], "deploy needs --gpus (the GPUs to spend), or --rate / --users"),
    ],
)
def test_cli_bad_load_one_line_exit_2(capsys, args, words):
    rc, out, err = _run(capsys, *args)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1 and words in err, (rc, out, err)
