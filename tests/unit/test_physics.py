"""Physical sense, as properties with shrinking counter-examples (hypothesis):

* a plan's ITL does not fall as its batch grows;
* a collective's time does not fall as its message grows;
* no plan is faster on a worse fabric (the same GPUs and engine, the fabric's bandwidth halved and
  its hop latency doubled).

Each holds except at a kernel switch listed in data/falls.csv (shardbudget/calibrate/falls.py reads it). A library switches kernel at
a size (an engine by its source's thresholds, NCCL by its own estimate), and where the kernel above
is faster there, the time falls. MEASURED lists the switches whose measured rows fall too (each side's
rows extended to the edge: vLLM 0.19.0 two-shot -> symmetric memory on 8 B200s at 1 MiB, NCCL's ring
LL -> Simple on 4 L40S, TensorRT-LLM one-shot -> NCCL on 8 H100s at 1 MiB, ...), each checked
against the data here. KNOWN lists the model's other falls, defects of the pricing (issue 20) or of
systems nothing measures: the known defects `python -m shardbudget.calibrate --report` prints.
test_the_lists_are_what_the_scan_finds keeps both lists exactly what a full scan meets (a fall in
neither fails), and test_every_known_fall_still_happens fails on a listed fall that is gone, so a
fixed one leaves the list; no test here is expected to fail. The parts
with no exception are tested as they stand: the step without its communication does not fall with
batch, NCCL's own estimate does not fall with size, and the catalog's fabric ladder (NVSwitch, PCIe
with P2P, PCIe without) orders every plan.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from shardbudget.comm.collectives import candidates, make_group
from shardbudget.comm.lines import pick, times_and_latencies_s
from shardbudget.decide.planner import plan
from shardbudget.step.scenario import precision_for
from shardbudget.decide.whatif import fabric_cases
from shardbudget.engines.allreduce import allreduce_ranges_for, engine_allreduce_s
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import Plan, load_model
from shardbudget.model.comms import hidden_message_bytes
from shardbudget.model.work import step_work
from shardbudget.comm.op import CollectiveOp
from shardbudget.step.compose import compile_step
from shardbudget.step.settings import PlanSettings, engine_efficiency
from shardbudget.decide.request import request

from shardbudget.calibrate.edge_rows import NOISE, measured_at_edge, measured_fall
from shardbudget.calibrate.falls import known, measured
from shardbudget.calibrate.switches import NVL72_STEPS, Switch, engine_switch, model_switch, nccl_switch, scan

CAT = load_catalog()
KNOWN, MEASURED = known(), measured()
MODELS = ("llama-3.1-70b", "llama-3.1-8b", "qwen3-30b-a3b", "mixtral-8x7b")
SYSTEMS = tuple(sorted(CAT.systems))
ENGINES = ("vllm", "vllm-0.19", "sglang", "trtllm", "eager")
"""The default presets, and vllm-0.19: the release measured_comm.csv's vLLM rows (and their steps) were taken at."""
PROPERTY = settings(
    max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=[HealthCheck.too_slow]
)
REL = 1e-9  # float noise: a fall smaller than this is no fall


def _step(model: str, system: str, tp: int, engine: str):
    cfg, s = load_model(model), CAT.system(system)
    tp = min(tp, s.gpus_per_node)
    while tp > 1 and (cfg.num_heads % tp or (cfg.num_kv_heads % tp and tp % cfg.num_kv_heads)):
        tp //= 2
    return compile_step(
        cfg,
        s,
        Plan(tp),
        CAT,
        impl=None,
        engine=engine,
        precision=precision_for(cfg, s)[0],
        eff=engine_efficiency(engine),
        settings=PlanSettings(),
    )


def _falls(t: np.ndarray) -> int | None:
    """The first index i where t[i + 1] < t[i] (None: never)."""
    d = np.where(np.diff(t) < -REL * t[1:])[0]
    return int(d[0]) if len(d) else None


batches = st.integers(min_value=1, max_value=255)
requests = dict(
    model=st.sampled_from(MODELS),
    system=st.sampled_from(SYSTEMS),
    tp=st.sampled_from((1, 2, 4, 8)),
    engine=st.sampled_from(ENGINES),
    batch=batches,
)


# --- ITL against batch ------------------------------------------------------------------------


@PROPERTY
@given(**requests)
def test_the_step_without_communication_does_not_fall_as_batch_grows(model, system, tp, engine, batch):
    sm = _step(model, system, tp, engine)
    r = sm.evaluate(np.array([batch, batch + 1.0]), 4096.0)
    rest = r.total_s - r.comm_s
    assert rest[1] >= rest[0] * (1 - REL), (model, system, sm.plan.tp, engine, batch, rest)


def _tp_switch(model: str, system: str, tp: int, engine: str, batch: int) -> Switch | None:
    """The kernel switch the TP all-reduce crosses from `batch` to `batch + 1` tokens (None: none)."""
    cfg, group = load_model(model), _group(system, tp)
    lo, hi = (float(hidden_message_bytes(cfg, b)) for b in (batch, batch + 1))
    ranges = allreduce_ranges_for(engine, group, float(hidden_message_bytes(cfg, 1)))
    return engine_switch(system, group.gpus_per_node, engine, ranges, lo, hi)


def _allowed(switch: Switch | None) -> bool:
    """A fall at a switch whose measured curve falls too (MEASURED), or at one listed as a known
    defect (KNOWN, each checked below to still fall)."""
    return switch is not None and (switch.key in MEASURED or switch.key in KNOWN or switch.key in NVL72_STEPS)


@PROPERTY
@example(model="llama-3.1-70b", system="hgx-h800", tp=8, engine="vllm-0.19", batch=15)
@example(model="llama-3.1-70b", system="hgx-b200", tp=8, engine="vllm-0.19", batch=63)
@given(**requests)
def test_itl_does_not_fall_as_batch_grows(model, system, tp, engine, batch):
    """Except where the TP all-reduce crosses a kernel switch listed in data/falls.csv: a
    measured one (vLLM 0.19's two-shot -> symmetric memory on 8 B200s at 1 MiB: 26.05 us at 512 KiB,
    16.67 us at 1 MiB), or a known defect (test_every_known_fall_still_happens)."""
    sm = _step(model, system, tp, engine)
    itl = sm.evaluate(np.array([batch, batch + 1.0]), 4096.0).total_s
    if itl[1] < itl[0] * (1 - REL):
        switch = _tp_switch(model, system, sm.plan.tp, engine, batch)
        assert _allowed(switch), (model, system, sm.plan.tp, engine, batch, itl, switch)


def test_every_fall_of_the_models_itl_is_listed():
    """The property above on every request, not 40 samples: the 4 models x every system x TP 2-8 x
    5 engines x batch 1-256. Each fall crosses a listed switch, among them the measured B200 TP8
    vllm-0.19 step at 1 MiB and the known H800 TP8 vllm-0.19 fall at 256 KiB."""
    met = set()
    b = np.arange(1, 257, dtype=float)
    for model in MODELS:
        for system in SYSTEMS:
            for tp in (2, 4, 8):
                for engine in ENGINES:
                    sm = _step(model, system, tp, engine)
                    if sm.plan.tp != tp:
                        continue
                    itl = sm.evaluate(b, 4096.0).total_s
                    for i in np.where(np.diff(itl) < -REL * itl[1:])[0]:
                        switch = _tp_switch(model, system, tp, engine, int(b[i]))
                        assert _allowed(switch), (model, system, tp, engine, int(b[i]), switch)
                        met.add(switch.key)
    assert ("hgx-b200", 8, "vllm-0.19", "two-shot", "symm-mem-multimem", 1048576) in met
    assert ("hgx-h800", 8, "vllm-0.19", "one-shot", "symm-mem-multimem", 262144) in met


def test_the_measured_steps_are_in_the_data(data_dir):
    """Every step MEASURED allows falls in its measured rows (each side's two rows extended to the
    edge, by more than NOISE), its citation quotes those rows (it cannot go stale), and the model
    falls at the same switch (llama-3.1-70b on 8 B200s under vllm-0.19: 12.10 ms at batch 63, 10.84 ms at 64)."""
    for key, quoted in MEASURED.items():
        switch, before_us, after_us = model_switch(key)
        measured = measured_at_edge(switch)
        assert measured is not None and measured[2] == quoted, (key, measured)
        assert measured[0] > measured[1] * (1 + NOISE), (key, measured)
        assert after_us < before_us, (key, before_us, after_us)
    assert _tp_switch("llama-3.1-70b", "hgx-b200", 8, "vllm-0.19", 63).key in MEASURED


def test_the_known_falls_are_not_measured_ones(data_dir):
    """No KNOWN fall is one the data show (it would belong in MEASURED), and none is allowed twice."""
    assert not set(MEASURED) & set(KNOWN)
    for key, why in KNOWN.items():
        switch, _, _ = model_switch(key)
        assert not measured_fall(switch), key
        m = measured_at_edge(switch)
        assert (m is None) == why.startswith("no rows"), (key, why, m)
        if m is not None:
            assert f"{m[0]:.2f} -> {m[1]:.2f} us" in why, (key, why, m)


def test_every_known_fall_still_happens():
    """Each known defect (KNOWN, the list `python -m shardbudget.calibrate --report` prints): the model's
    time still falls at its switch. One whose pricing was fixed no longer falls and fails here, naming
    it, so that it leaves the list (issue 20; the defects themselves live in that list, not in xfails)."""
    gone = []
    for key in KNOWN:
        _, before_us, after_us = model_switch(key)
        if not after_us < before_us * (1 - REL):
            gone.append((key, before_us, after_us))
    assert not gone, (
        f"falls that no longer happen: run `python -m shardbudget.calibrate --falls` (data/falls.csv): {gone}"
    )


def test_the_pinned_batch_counter_example_is_what_the_issue_says():
    """The numbers the examples above quote: B200 TP8 vllm-0.19 (the release of the rows) falls at its
    measured 1 MiB step, and H800 TP8 vllm-0.19 at 256 KiB (12.96 -> 12.32 ms), a known fall (no H800 rows)."""
    itl = _step("llama-3.1-70b", "hgx-b200", 8, "vllm-0.19").evaluate(np.array([48.0, 63.0, 64.0]), 4096.0).total_s
    assert itl * 1e3 == pytest.approx([11.24, 12.10, 10.84], abs=0.01)
    itl = _step("llama-3.1-70b", "hgx-h800", 8, "vllm-0.19").evaluate(np.array([15.0, 16.0]), 4096.0).total_s
    assert itl * 1e3 == pytest.approx([12.96, 12.32], abs=0.01)
    assert _tp_switch("llama-3.1-70b", "hgx-h800", 8, "vllm-0.19", 15).key in KNOWN


# --- collective time against message size -----------------------------------------------------

sizes = st.floats(min_value=8.0, max_value=2.0**30, allow_nan=False)
groups = dict(
    system=st.sampled_from(SYSTEMS),
    gpus=st.sampled_from((2, 4, 8)),
    msg=sizes,
    step=st.floats(min_value=1.0001, max_value=1.5),
)


def _group(system: str, gpus: int):
    s = CAT.system(system)
    return make_group(s, nodes=1, gpus=min(gpus, s.gpus_per_node), catalog=CAT)


@PROPERTY
@given(**groups)
def test_nccls_own_estimate_does_not_fall_with_size(system, gpus, msg, step):
    """NCCL chooses by its estimate, the least of lines that each grow with size: that never falls."""
    cands = candidates(_group(system, gpus), "all-reduce", "nccl")
    est = [min(c.select_time_s(n) for c in cands) for n in (msg, msg * step)]
    assert est[1] >= est[0] * (1 - REL)


@PROPERTY
@example(system="l40s-pcie-nps1-degraded", gpus=8, msg=615354.2939317843, step=618443.0 / 615354.2939317843)
@example(system="rtx4090-pcie", gpus=4, msg=478000.0, step=1.01)
@given(**groups)
def test_nccl_all_reduce_time_does_not_fall_with_size(system, gpus, msg, step):
    """NCCL's choice (its estimate) timed by the real lines: it falls only where NCCL's estimate
    switches line later than the real crossover and a listed switch says so (l40s-pcie-nps1-degraded on 8 GPUs:
    ring LL -> Simple at 618443 B, 1070 -> 836 us; measured 8x L40S NCCL 2.27.3 falls there too)."""
    group = _group(system, gpus)
    lines = candidates(group, "all-reduce", "nccl")
    t, _ = times_and_latencies_s(lines, np.array([msg, msg * step]))
    if t[1] < t[0] * (1 - REL):
        switch = nccl_switch(system, group.gpus_per_node, lines, msg, msg * step)
        assert _allowed(switch), (system, gpus, msg, t, switch)


@PROPERTY
@example(system="hgx-h100", gpus=8, msg=261327.400380456, step=262553.2562078401 / 261327.400380456, engine="vllm")
@example(system="hgx-h100", gpus=8, msg=1040000.0, step=1.01, engine="trtllm")
@given(**groups, engine=st.sampled_from(("vllm", "sglang", "trtllm", "trtllm-1.0")))
def test_engine_all_reduce_time_does_not_fall_with_size(system, gpus, msg, step, engine):
    """The engine's rule switches kernel by size; its time falls only at a listed switch (TensorRT-LLM
    on 8 H100s at 1 MiB, one-shot -> NCCL: measured 17.60 us at 512 KiB, 25.96 at 1 MiB, one-shot's
    rows reaching 32.47 us there; vLLM one-shot -> symmetric memory at 256 KiB is a known defect: its
    rows rise, 10.63 -> 10.70 us)."""
    group = _group(system, gpus)
    ranges = allreduce_ranges_for(engine, group, 16384.0)
    t, _ = engine_allreduce_s(ranges, np.array([msg, msg * step]))
    if t[1] < t[0] * (1 - REL):
        switch = engine_switch(system, group.gpus_per_node, engine, ranges, msg, msg * step)
        assert _allowed(switch), (system, gpus, engine, msg, t, switch)


# --- a worse fabric ---------------------------------------------------------------------------


def _worse(system: str, factor: float):
    """The same system, its node fabric's bandwidth / factor and hop latency x factor."""
    s = CAT.system(system)
    f = s.intra_fabric
    worse = dataclasses.replace(
        f,
        bytes_per_s=f.bytes_per_s / factor,
        achievable_bytes_per_s=f.achievable_bytes_per_s / factor,
        nccl_bytes_per_s=f.nccl_bytes_per_s / factor,
        hop_latency_s={k: v * factor for k, v in f.hop_latency_s.items()},
        per_link_bytes_per_s=f.per_link_bytes_per_s / factor if f.per_link_bytes_per_s else None,
    )
    return s, dataclasses.replace(s, name=f"{s.name} (fabric / {factor:g})", intra_fabric=worse)


def _line_at(lines, msg: float) -> str:
    """The kernel an engine's rule (AllReduceRanges) or NCCL's choice (a tuple of lines) runs for
    `msg`, NCCL's line named by algorithm and protocol."""
    if isinstance(lines, tuple):
        c = pick(lines, msg)
        return f"{c.algorithm}/{c.protocol}"
    kind = (lines.kinds + lines.at_edge)[int(lines.kind_index(np.array([msg]))[0])]
    if kind != "nccl":
        return kind
    c = pick(lines.pools["nccl"], msg)
    return f"{c.algorithm}/{c.protocol}"


def _switches_a_worse_fabric_reaches(model: str, system, worse, row, engine: str, batch: int) -> list:
    """For each collective of the row's step that the worse fabric runs on another kernel than the
    system does, the system's own switch to that kernel above this size (NCCL's estimate moves its
    crossover with the link's bandwidth, so a slower link can reach a line sooner); None for a
    collective whose change no switch explains."""
    cfg = load_model(model)
    plan_ = Plan(row.tp, pp=row.pp, ep=row.ep, dp=row.dp)
    sm, smw = (
        compile_step(
            cfg,
            x,
            plan_,
            CAT,
            impl=None,
            engine=engine,
            precision=precision_for(cfg, x)[0],
            eff=engine_efficiency(engine),
            settings=PlanSettings(),
        )
        for x in (system, worse)
    )
    out = []
    for call in step_work(
        cfg, plan_, batch=np.array([float(batch)]), context=np.array([4096.0]), precision=sm.precision
    ).calls:
        group, msg = sm.comms.groups[call.group], float(np.ravel(call.msg_bytes)[0])
        if group is None or group.ranks < 2 or group.nodes > 1:
            continue
        tp_all_reduce = call.op == CollectiveOp.ALL_REDUCE and call.group == "tp"
        here = sm.comms.allreduce_ranges if tp_all_reduce else candidates(group, call.op, "nccl")
        there = (
            smw.comms.allreduce_ranges if tp_all_reduce else candidates(smw.comms.groups[call.group], call.op, "nccl")
        )
        target = _line_at(there, msg)
        if _line_at(here, msg) == target:
            continue
        found = None
        for k in range(1, 64 * 10):
            hi = msg * 2 ** (k / 64)
            if _line_at(here, hi) == target:
                lo = hi / 2 ** (1 / 64)
                found = (
                    engine_switch(system.name, group.gpus_per_node, engine, here, lo, hi)
                    if tp_all_reduce
                    else nccl_switch(system.name, group.gpus_per_node, here, lo, hi, op=str(call.op))
                )
                break
        out.append(found)
    return out


@settings(max_examples=15, deadline=None, derandomize=True, database=None)
@example(model="llama-3.1-70b", system="l40s-pcie-nps1-degraded", engine="vllm", batch=16, factor=2.0)
@given(
    model=st.sampled_from(MODELS),
    system=st.sampled_from(SYSTEMS),
    engine=st.sampled_from(ENGINES[:3]),
    batch=st.sampled_from((1, 16, 64, 256)),
    factor=st.floats(min_value=1.1, max_value=4.0),
)
def test_no_plan_is_faster_on_a_worse_fabric(model, system, engine, batch, factor):
    """Except where the slower link moves NCCL's choice onto a line the system itself reaches only past
    a listed switch (llama-3.1-70b TP4 on l40s-pcie-nps1-degraded, vllm, batch 16: 85.59 ms, 85.39 ms with half the
    bandwidth; its 256 KiB all-reduce runs ring Simple there, ring LL on the system, whose LL -> Simple
    switch at 480774 B the 4x L40S rows measure: 196.10 -> 154.11 us at the edge)."""
    s, w = _worse(system, factor)
    a, b = (
        plan(request(model, x, batches=[batch], budget_s=None, engine=engine, catalog=CAT)).results[0] for x in (s, w)
    )
    for ra, rb in zip(a.rows, b.rows):
        if rb.itl_s < ra.itl_s * (1 - REL):
            switches = _switches_a_worse_fabric_reaches(model, s, w, ra, engine, batch)
            assert switches and all(map(_allowed, switches)), (
                model,
                system,
                engine,
                batch,
                factor,
                ra.label(),
                ra.itl_s,
                rb.itl_s,
                switches,
            )


@pytest.mark.parametrize("system", ["hgx-h100", "hgx-b200", "h100-pcie", "mi300x"])
def test_the_catalogs_fabric_ladder_orders_every_plan(system):
    """The same GPUs and engine on NVSwitch (where the generation has one) or xGMI, PCIe with P2P and
    PCIe without: no plan of TP4 or more is faster a rung down, at batch 1 and 64."""
    cfg = load_model("llama-3.1-70b")
    # the system itself where it is the top rung (NVSwitch, xGMI), the what-if NVSwitch, PCIe with P2P, without
    ladder = [
        c
        for c in fabric_cases(CAT.system(system), CAT, 8)
        if c.nodes == 1 and (c.whatif or c.system.topology in ("switch", "mesh"))
    ]
    results = [plan(request(cfg, c.system, batches=[1, 64], budget_s=None, catalog=CAT)) for c in ladder]
    assert len(results) >= 3
    for up, down in zip(results, results[1:]):
        for bu, bd in zip(up.results, down.results):
            for ru, rd in zip(bu.rows, bd.rows):  # from TP4: between two GPUs a mesh is one link, as PCIe
                if ru.tp >= 4:
                    assert rd.itl_s >= ru.itl_s * (1 - REL), (system, up.system, down.system, bu.batch, ru.label())


def test_the_lists_are_what_the_scan_finds():
    """MEASURED and KNOWN hold exactly the switches at which the model's collectives fall (every
    system at 2-72 GPUs of one node and 2, 4, 8 whole nodes, NCCL and the engines, 256 B to 1 GiB): none
    missing, none stale."""
    assert set(scan()) == set(MEASURED) | set(KNOWN)


def test_the_file_is_what_falls_writes():
    """data/falls.csv is exactly what `python -m shardbudget.calibrate --falls` writes today: the
    scan's falls, each measured one quoting its rows, each known one what the rows at its edge say."""
    from shardbudget.calibrate.falls import FILE, to_csv
    from shardbudget.calibrate.paths import DATA
    from shardbudget.calibrate.report import scanned_falls

    assert to_csv(scanned_falls()) == (DATA / FILE).read_text(encoding="utf-8"), (
        "run `python -m shardbudget.calibrate --falls` and read the diff of data/falls.csv"
    )
