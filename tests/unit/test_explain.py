"""`explain`: every ratio it quotes is the ratio of the numbers it quotes (recomputed here from the
printed text), its per-call figures add up to the row's communication, and its answers say what
an expert would (no NVLink advice on a box without NVLink, 'estimate' on a catalog estimate)."""

from __future__ import annotations

import re

import pytest

from shardbudget.decide.planner import plan
from shardbudget.decide.questions import ExplainError, explain
from shardbudget.errors import ShardbudgetError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.units import parse_seconds
from shardbudget.decide.request import request as sb_request

CAT = load_catalog()
T = r"(\d+(?:\.\d+)?) (ns|µs|ms|s)"
R = r"(\d+\.\d+)x"
REQUESTS = [  # (model, systems, batch, engine)
    ("llama-3.1-70b", ("hgx-h100",), 1, "vllm"),
    ("llama-3.1-70b", ("hgx-h100",), 64, "sglang"),
    ("llama-3.1-70b", ("h100-pcie",), 1, "vllm"),
    ("llama-3.1-70b", ("l40s-pcie-nps1-degraded",), 8, "vllm"),
    ("deepseek-v3", ("hgx-h200", "mi300x"), 1, "vllm"),
    ("llama-3.1-8b", ("rtx4090-pcie",), 16, "trtllm"),
    ("qwen3-30b-a3b", ("hgx-b200",), 32, "vllm"),
    ("llama-3.1-70b", ("mi300x", "hgx-h100", "l40s-pcie-nps1-degraded"), 4, "vllm"),
]


@pytest.fixture(scope="module", params=REQUESTS, ids=lambda r: f"{r[0]}-{'+'.join(r[1])}-b{r[2]}-{r[3]}")
def answers(request):
    model, systems, batch, engine = request.param
    return explain(sb_request(model, systems[0], batches=(batch,), engine=engine, catalog=CAT), systems=list(systems))


def _t(m: re.Match, k: int) -> float:
    """The k-th time of a match (groups come in (number, unit) pairs)."""
    return parse_seconds(f"{m.group(2 * k + 1)} {m.group(2 * k + 2)}")


def _check(ratio_text: str, a: float, b: float) -> None:
    decimals = len(ratio_text.split(".")[1])
    assert float(ratio_text) == pytest.approx(a / b, abs=0.5 * 10**-decimals + 1e-9), (ratio_text, a, b)


def _ratios(text: str) -> int:
    """Check every quoted ratio of `text` against the two times it compares; return how many."""
    n = 0
    for m in re.finditer(
        rf"at {T} per call \({R}\), {T} of communication per token against {T} \({R}\), an ITL "
        rf"of {T} against {T} \({R}\)\. At batch \d+ a call takes {T} against {T} \({R}\)",
        text,
    ):
        fast = re.search(rf"fastest: .*? at {T} per call\.", text)
        g = m.groups()
        _check(g[2], _t(m, 0), _t(fast, 0))
        _check(g[7], parse_seconds(f"{g[3]} {g[4]}"), parse_seconds(f"{g[5]} {g[6]}"))
        _check(g[12], parse_seconds(f"{g[8]} {g[9]}"), parse_seconds(f"{g[10]} {g[11]}"))
        _check(g[17], parse_seconds(f"{g[13]} {g[14]}"), parse_seconds(f"{g[15]} {g[16]}"))
        n += 4
    for m in re.finditer(rf"falls from {T} to {T} \({R} for", text):
        _check(m.group(5), _t(m, 0), _t(m, 1))
        n += 1
    for m in re.finditer(rf"the ITL goes from {T} to {T} \({R}\)", text):
        _check(m.group(5), _t(m, 0), _t(m, 1))
        n += 1
    for m in re.finditer(rf"runs as .*?: {T} per call\. Over .*?: {T} per call \({R}\)", text):
        _check(m.group(5), _t(m, 1), _t(m, 0))
        n += 1
    for m in re.finditer(rf"\({R} the communication, {T} to {T}\)", text):
        _check(m.group(1), _t_shift(m), _t_shift(m, first=True))
        n += 1
    return n


def _t_shift(m: re.Match, first: bool = False) -> float:
    """The '(Rx the communication, A to B)' pattern: B, or A with `first`."""
    g = m.groups()
    return parse_seconds(f"{g[1]} {g[2]}") if first else parse_seconds(f"{g[3]} {g[4]}")


def test_every_quoted_ratio_is_the_ratio_of_the_quoted_numbers(answers):
    text = " ".join(a.text + " " + a.takeaway for a in answers)
    assert _ratios(text) >= 3


def test_the_gpu_and_the_fabric_add_up_to_the_difference(answers):
    take = answers[0].takeaway
    for m in re.finditer(
        rf"ITL {T} against {T}; .*?the GPU makes ([+-]){T} of the ([+-]){T} difference, the "
        rf"fabric ([+-]){T}\.",
        take,
    ):
        g = m.groups()
        itl_b, itl_a = parse_seconds(f"{g[0]} {g[1]}"), parse_seconds(f"{g[2]} {g[3]}")
        gpu, diff, fabric = (float(f"{g[i]}1") * parse_seconds(f"{g[i + 1]} {g[i + 2]}") for i in (4, 7, 10))
        assert diff == pytest.approx(itl_b - itl_a, abs=0.01 * abs(diff) + 1e-5)
        assert gpu + fabric == pytest.approx(diff, abs=0.005 * abs(diff) + 1e-6)


def test_per_call_times_make_the_rows_communication(answers):
    """calls x per-call time is the TP all-reduces' share of the row's communication: never more."""
    for case in answers[0].figures["cases"]:
        call = case["call"]
        assert call["count"] * call["time_s"] <= case["comm_s"] * (1 + 1e-9)
        assert call["count"] * call["time_s"] >= 0.5 * case["comm_s"]  # the chief collective, by far


def test_q1_is_the_same_gpu_engine_and_plan_on_other_fabrics():
    q1 = explain(sb_request("llama-3.1-70b", "hgx-h100", catalog=CAT))[0]
    cases = q1.figures["cases"]
    assert q1.figures["same_gpu"] and [c["whatif"] for c in cases] == [False, True, True, True]
    # vLLM 0.34 runs FlashInfer's one-shot on the NVSwitch; off it (PCIe, no NVLink) NCCL
    assert [c["call"]["words"] for c in cases][:3] == ["vllm FlashInfer one-shot", "NCCL ring/LL", "NCCL ring/LL"]
    # FlashInfer's one-shot at TensorRT-LLM's Lamport costs on Hopper, not NCCL's ring (16 KiB: 2.67 us
    # + 6 x 0.118 us per further peer + 16384 B / (0.776 x ring busbw / 7); vLLM 0.19.0's custom one-shot: 5.39 us)
    assert cases[0]["call"]["time_s"] == pytest.approx(3.78e-6, abs=0.01e-6)
    assert cases[0]["call"]["count"] * cases[0]["call"]["time_s"] == pytest.approx(cases[0]["comm_s"], rel=0.02)
    assert "no P2P" in cases[2]["label"] and cases[3]["nodes"] == 2


def test_q2_splits_each_tp_into_work_fixed_and_communication():
    q2 = explain(sb_request("llama-3.1-70b", "hgx-h100", catalog=CAT))[1]
    parts = {p["tp"]: p for p in q2.figures["parts"]}
    assert parts[4]["work_s"] / parts[8]["work_s"] == pytest.approx(2.0, rel=0.01)  # the work halves with TP
    # floors, launches, host: they do not shrink (1.86 ms at TP4 under vLLM 0.34, whose all-reduce +
    # RMSNorm fusion removes the norms' launches; 0.19 had 2.1 ms)
    assert parts[8]["fixed_s"] >= parts[4]["fixed_s"] > 1.5e-3
    assert q2.figures["gain_eaten_after_tp"] == 8  # TP16 over two nodes adds more than it saves
    assert [t["batch"] for t in q2.figures["by_batch"]] == [1, 2, 4, 8, 16, 32, 64, 128, 256]


def test_q3_names_what_the_group_loses_and_the_hop_it_prices():
    q3 = explain(sb_request("llama-3.1-70b", "hgx-h100", catalog=CAT))[2]
    f = q3.figures
    assert f["one_node_call"]["words"] == "vllm FlashInfer one-shot" and f["across_call"]["algorithm"] == "tree"
    assert f["network_hop_algorithm"] == "tree" and f["network_hop_s"] == pytest.approx(5e-6)  # tuning.cc NET tree LL
    # issue 34: at 16 KiB the node runs vLLM 0.34.0's FlashInfer one-shot, not NVLS: the group loses the kernel it ran
    assert (
        f["lost"] == ["vllm FlashInfer one-shot (3.783 µs per call)"]
        and "NVLS" not in q3.text
        and "an estimate" in q3.text
    )
    # 6.8% under vLLM 0.34.0 (FlashInfer's one-shot, 3.78 us a call); 8% under 0.19.0's custom kernel (5.39 us)
    assert f["one_node_comm_share"] == pytest.approx(0.07, abs=0.01)
    assert f["two_node_comm_share"] == pytest.approx(0.46, abs=0.01)  # LL staged per network step (a431f97)
    assert "its TP group inside one NVLink domain" in q3.takeaway and "73% of it the latency term" in q3.takeaway
    # 95% before a431f97: LL's per-line staging at each network step grows with the bytes (to 4 KiB a
    # channel), so it counts as transfer, not latency


def test_no_nvlink_advice_on_a_box_without_nvlink():
    q3 = explain(sb_request("llama-3.1-70b", "l40s-pcie-nps1-degraded", catalog=CAT))[2]
    assert "NVLink" not in q3.text + q3.takeaway and "NVLS" not in q3.text


def test_explain_agrees_with_plan_on_the_first_systems_row():
    ex = explain(sb_request("llama-3.1-70b", "hgx-h200", batches=(4,), engine="sglang", dtype="fp8", catalog=CAT))
    swept = plan(sb_request("llama-3.1-70b", "hgx-h200", batches=[4], engine="sglang", dtype="fp8", catalog=CAT))
    row = next(r for r in swept.results[0].rows if r.key == (8, 1, 1, 1))
    assert ex[0].figures["cases"][0]["itl_s"] == row.itl_s and ex.dtype == "fp8" and ex.engine == "sglang"


@pytest.mark.parametrize(
    "systems, message",
    [
        (["hgx-h10"], "did you mean"),
        (["hgx-h100", "hgx-h100"], "system listed twice"),
        ([], "at least one system"),
    ],
)
def test_requests_explain_cannot_answer_are_one_clear_error(systems, message):
    with pytest.raises(ShardbudgetError, match=message):
        explain(sb_request("llama-3.1-70b", "hgx-h100", catalog=CAT), systems=systems)


def test_a_model_that_cannot_be_split_cannot_be_compared():
    """A model whose heads refuse TP2 has no TP all-reduce to compare over fabrics."""
    from dataclasses import replace
    from shardbudget.model import load_model

    odd = replace(load_model("llama-3.1-8b"), name="odd-heads", num_heads=31, num_kv_heads=1)
    with pytest.raises(ExplainError, match="cannot compare fabrics"):
        explain(sb_request(odd, "hgx-h100", catalog=CAT))


def test_nvl72_is_answered_at_the_planners_plan_and_across_racks():
    """Issue 34: on an NVL72 rack the first answer compared fabrics at TP64 (the largest TP one node
    holds), a plan the second answer rejects; the third had no InfiniBand case (no TP group of
    llama-3.1-70b crosses racks) and concluded about InfiniBand anyway. Now the first compares at the
    planner's latency-optimal plan, the third splits that group over two racks and prices it, and
    the second does not say the latency-optimal plan 'goes from TP8 to TP8'."""
    ex = explain(sb_request("llama-3.1-70b", "gb200-nvl72", catalog=CAT))
    q1, q2, q3 = ex
    best = plan(sb_request("llama-3.1-70b", "gb200-nvl72", batches=[1], catalog=CAT)).results[0].judgement.best
    assert best.key == (8, 1, 1, 1) and q1.figures["plan"] == {"tp": 8, "pp": 1, "ep": 1, "dp": 1}
    assert "same plan (TP8)" in q1.text and "the planner's latency-optimal plan on one gb200-nvl72" in q1.text
    assert q1.figures["cases"][0]["itl_s"] == best.itl_s
    assert "goes from TP8 to TP8" not in q2.takeaway and "TP8 at every batch from 1 to 256" in q2.takeaway
    f = q3.figures
    assert f["across_whatif"] and f["tp_one_node"] == f["tp_across"] == 8
    assert f["across_call"]["time_s"] > f["one_node_call"]["time_s"] and f["two_node_itl_s"] > f["one_node_itl_s"]
    assert "Split over 2 racks, 4 GPUs in each" in q3.text and "no TP group" not in q3.takeaway
    assert "the same TP8 group split over 2 racks" in q3.takeaway and "InfiniBand" in q3.takeaway


@pytest.mark.parametrize(
    "system", ["hgx-h100", "l40s-pcie-nps1-degraded", "mi300x", "gb200-nvl72", "hgx-b200", "h100-pcie"]
)
def test_every_system_is_compared_at_the_planners_plan(system):
    """explain's first answer is at the plan `plan` calls latency-optimal on one node (issue 34)."""
    for batch in (1, 64):
        q1 = explain(sb_request("llama-3.1-70b", system, batches=(batch,), catalog=CAT))[0]
        best = plan(sb_request("llama-3.1-70b", system, batches=[batch], catalog=CAT)).results[0].judgement.best
        if best is None or best.tp < 2:
            continue
        assert tuple(q1.figures["plan"].values()) == best.key and q1.figures["cases"][0]["itl_s"] == best.itl_s


def test_the_group_loses_only_what_its_inside_call_ran():
    """Issue 34: "leaving the node the group loses NVLS" was said where the node ran one-shot. The
    loss list names the engine's one-host kernel where it ran inside and NCCL runs across; NVLS only
    where the inside call ran NVLS and the crossing one is not NCCL's NVLSTree (hierarchical here),
    which keeps NVLS inside each node; each with the inside call's time."""
    from shardbudget.decide.tp_limit import _lost
    from shardbudget.step.records import AllReduceCall

    system = CAT.system("hgx-h100")

    def call(kind, algorithm, time_s=10e-6):
        return AllReduceCall(
            msg_bytes=1 << 20,
            count=161,
            time_s=time_s,
            latency_s=time_s / 2,
            kind=kind,
            algorithm=algorithm,
            protocol="simple",
            engine="vllm",
        )

    nvls, ring, tree = call("nccl", "nvls", 20e-6), call("nccl", "ring", 40e-6), call("nccl", "hierarchical", 30e-6)
    assert _lost(nvls, ring, system, 8) == ["NVLS, the switch's in-network reduction (20 µs per call)"]
    assert _lost(nvls, tree, system, 8) == []  # NVLSTree keeps NVLS inside each node
    assert _lost(ring, tree, system, 8) == []  # nothing the inside call did not run
    assert _lost(call("one-shot", "one-shot", 5e-6), ring, system, 8) == ["vllm one-shot (5 µs per call)"]
    assert _lost(nvls, ring, CAT.system("l40s-pcie-nps1-degraded"), 8) == []  # no NVLink switch: no NVLS to lose
