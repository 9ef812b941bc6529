"""plan --jitter: the ITL's p99 from measured per-iteration times, beside its mean.

The logs are nccl-tests -J documents written through the test writer (the schema of nccl-tests'
own source) with per-iteration times drawn from a seeded shifted exponential; one test runs the
real harness (gloo) and plans from its JSON. The composition is checked against a Monte-Carlo
simulation of whole tokens drawn from the same samples."""

import json
import math

import numpy as np
import pytest

from shardbudget import cli
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import Plan, load_model
from shardbudget.decide.planner import plan
from shardbudget.step.scenario import precision_for
from shardbudget.step.compose import compile_step
from shardbudget.decide.tail_plan import Jitter, read_jitter
from shardbudget.decide.request import request

from nccl_json_writer import document, dumps, per_iter_block, placement, result
from shardbudget.calibrate.paths import RAW

SIZES = [8 << (2 * i) for i in range(13)]  # 8 B .. 128 MiB, every factor 4
ITERS = 400


def _times_us(size: int, rng, cv: float) -> list[float]:
    """A collective's time per iteration: the bandwidth-free floor plus an exponential delay."""
    mean = 10.0 + size / 200e3  # us: a 10 us floor and 200 GB/s
    scale = cv * mean
    return list(mean - scale + rng.exponential(scale, ITERS))


def _log(tmp_path, name="ar.json", *, ranks=8, cv=0.3, op="all-reduce", seed=1):
    rng = np.random.default_rng(seed)
    rows = []
    for size in SIZES:
        times = [1.0 + t for t in _times_us(size, rng, 0.0)] if cv == 0 else _times_us(size, rng, cv)
        mean = sum(times) / len(times)
        half = placement(mean, size / mean / 1e3, size / mean / 1e3 * 2 * (ranks - 1) / ranks)
        rows.append(
            result(
                size,
                max(size // 4, 1),
                "float",
                "sum" if op == "all-reduce" else "none",
                out=half,
                inp=half,
                out_iter=per_iter_block(times),
                in_iter=per_iter_block(times),
            )
        )
    path = tmp_path / name
    path.write_text(dumps(document(op=op, results=rows, processes=["node-a"], ngpus=ranks, per_iter=True)))
    return path


def _plan(jitter, model="llama-3.1-70b", system="hgx-h100", batches=(1, 8, 64)):
    return plan(request(model, system, batches=batches, jitter=jitter))


def test_p99_is_at_least_the_mean_and_equal_without_collectives(tmp_path):
    res = _plan(read_jitter([_log(tmp_path)]))
    for br in res.results:
        for r in br.rows:
            assert r.itl_p99_s is not None and r.itl_p99_s >= r.itl_s * (1 - 1e-9)
            if r.tp == 1:  # no all-reduce (PP's sends were not timed): nothing jitters
                assert r.itl_p99_s == pytest.approx(r.itl_s, rel=1e-9)
            else:
                assert r.itl_p99_s > r.itl_s
    assert "p99 from per-iteration times of all-reduce at 8 ranks (ar.json)" in res.assumptions.tail


def test_without_a_log_there_is_no_p99():
    res = _plan(None, batches=(8,))
    assert all(r.itl_p99_s is None for r in res.results[0].rows) and res.assumptions.tail is None


def test_constant_times_give_p99_equal_to_the_mean(tmp_path):
    res = _plan(read_jitter([_log(tmp_path, cv=0)]), batches=(8,))
    for r in res.results[0].rows:
        assert r.itl_p99_s == pytest.approx(r.itl_s, rel=1e-6)


def test_more_jitter_gives_a_larger_p99_and_more_calls_a_larger_excess(tmp_path):
    low = _plan(read_jitter([_log(tmp_path, "low.json", cv=0.1)]), batches=(8,)).results[0].rows
    high = _plan(read_jitter([_log(tmp_path, "high.json", cv=0.6)]), batches=(8,)).results[0].rows
    for a, b in zip(low, high):
        if a.tp > 1:
            assert b.itl_p99_s - b.itl_s > a.itl_p99_s - a.itl_s > 0


def _simulated_p99(model, batch, context, itl_s, jitter, tokens=40_000, seed=7):
    """Draw whole tokens: every call's time from its (scaled) measured samples, independently."""
    rng = np.random.default_rng(seed)
    total = np.zeros(tokens)
    rest = itl_s
    for c in model.collective_calls(batch, context):
        group = model.groups[c.group]
        call = jitter.call(c.op, group.ranks, c.msg_bytes, c.count, c.time_s)
        if call.family == "fixed":  # an op the log did not time (the LM head's all-gather)
            continue
        samples = np.asarray(call.params)
        for _ in range(call.count):
            total += rng.choice(samples, tokens)
        rest -= call.count * call.mean_s
    return float(np.quantile(total + rest, 0.99))


@pytest.mark.parametrize("tp,batch", [(8, 8), (4, 64), (2, 1)])
def test_p99_matches_a_monte_carlo_of_whole_tokens(tmp_path, tp, batch):
    jitter = read_jitter([_log(tmp_path, cv=0.8)])
    res = _plan(jitter, batches=(batch,))
    row = next(r for r in res.results[0].rows if (r.tp, r.pp) == (tp, 1))
    cat = load_catalog()
    cfg, sysm = load_model("llama-3.1-70b"), cat.system("hgx-h100")
    model = compile_step(cfg, sysm, Plan(tp), cat, precision=precision_for(cfg, sysm)[0])
    simulated = _simulated_p99(model, batch, 4096.0, row.itl_s, jitter)
    assert row.itl_p99_s - row.itl_s == pytest.approx(simulated - row.itl_s, rel=0.05)  # the excess, 5 %
    assert row.itl_p99_s == pytest.approx(simulated, rel=2e-3)


def test_the_rank_count_and_size_nearest_the_call_are_used(tmp_path):
    jitter = read_jitter([_log(tmp_path, "r2.json", ranks=2, cv=0.1), _log(tmp_path, "r8.json", ranks=8, cv=0.9)])
    at8 = jitter.call("all-reduce", 8, 1e6, 1, 1e-5)
    at2 = jitter.call("all-reduce", 2, 1e6, 1, 1e-5)
    assert at8.variance_s2 > 20 * at2.variance_s2  # cv 0.9 vs 0.1 (81x in variance, sample noise aside)
    assert at8.mean_s == pytest.approx(1e-5) and at2.mean_s == pytest.approx(1e-5)  # scaled to the model's mean
    assert jitter.call("all-reduce", 16, 1e6, 1, 1e-5).variance_s2 == at8.variance_s2  # nearest: 8
    small, big = (jitter.call("all-reduce", 8, b, 1, 1e-5) for b in (8, 64 << 20))
    assert small.params != big.params  # another size, other samples


def test_ops_the_log_did_not_time_keep_their_mean(tmp_path):
    jitter = read_jitter([_log(tmp_path)])
    fixed = jitter.call("all-to-all", 8, 1e6, 58, 2e-5)
    assert (fixed.family, fixed.variance_s2, fixed.count) == ("fixed", 0.0, 58)
    res = plan(request("deepseek-v3", "hgx-h200", batches=(64,), jitter=jitter))
    moe = [r for r in res.results[0].rows if r.ep > 1]
    assert moe and all(r.itl_p99_s >= r.itl_s for r in moe)
    assert "other collectives at their mean" in res.assumptions.tail


# --- the command ------------------------------------------------------------------------------


def _run(capsys, *argv):
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def test_plan_shows_p99_beside_the_mean(tmp_path, capsys):
    log = _log(tmp_path)
    rc, out, err = _run(capsys, "plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "-b", "8", "--jitter", str(log))
    assert rc == 0, err
    header = next(line for line in out.splitlines() if "ITL ms" in line)
    assert header.index("ITL ms") < header.index("p99 ITL ms") < header.index("compute ms")
    assert "# p99 from per-iteration times of all-reduce at 8 ranks (ar.json)" in out
    rc, out, _ = _run(
        capsys, "plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "-b", "8", "--jitter", str(log), "--json"
    )
    rows = json.loads(out)["results"][0]["rows"]
    assert all(r["itl_p99_s"] >= r["itl_s"] for r in rows)
    rc, out, _ = _run(capsys, "plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "-b", "8")
    assert "p99" not in out


def test_a_log_without_per_iteration_times_is_refused(tmp_path, capsys):
    text = RAW / "nccl_02_h100_1node_8gpu_large.txt"  # a real all_reduce_perf log, without -I
    rc, out, err = _run(capsys, "plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--jitter", str(text))
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "no per-iteration times" in err and "-I 1" in err
    rc, out, err = _run(
        capsys, "plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--jitter", str(tmp_path / "nope.json")
    )
    assert rc == 2 and out == "" and err.count("\n") == 1 and "nope.json" in err


def test_jitter_describe_names_ops_ranks_and_files(tmp_path):
    j = Jitter(samples=read_jitter([_log(tmp_path)]).samples, sources=("a.json",))
    assert j.ops == ("all-reduce",) and "at 8 ranks (a.json)" in j.describe()
    assert math.isfinite(j.call("all-reduce", 8, 4096, 160, 8e-6).quantile_s(0.99))
