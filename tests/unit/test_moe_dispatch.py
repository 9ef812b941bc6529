"""The MoE layers of a DP-attention group as the engines run them by default (--moe-a2a nccl).

vLLM (allgather_reducescatter, its default all2all backend) and SGLang (moe_a2a_backend "none")
gather every DP rank's tokens before the experts and reduce-scatter the outputs after; vLLM
quantizes the tokens to the experts' input format (FP8, NVFP4) before it gathers them. TensorRT-LLM
keeps its all-to-all. So one call of the dispatch + combine pair is half of an all-gather of every
token's hidden state (at the wire's bytes) and a reduce-scatter; where the plan has no DP
attention (experts beyond the TP group), the all-to-all stays.
"""

from __future__ import annotations

import numpy as np
import pytest

from shardbudget.comm.collectives import candidates, times_and_latencies_s
from shardbudget.comm.moe_a2a import FP8_WIRE, NVFP4_WIRE
from shardbudget.comm.op import CollectiveOp
from shardbudget.datafile import Table, parse_toml
from shardbudget.engines.kernel_table import MOE_DISPATCH, moe_dispatch
from shardbudget.engines.presets import load_engine
from shardbudget.errors import UnknownNameError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import CollectiveCall, Plan, Precision, load_model
from shardbudget.step.price_comm import CommPricer

A2A, AG, RS = CollectiveOp.ALL_TO_ALL, CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER
MSG = np.array([4096.0, 2.0**20, 2.0**24])


def _pricer(engine: str, plan: Plan, experts: str = "bf16") -> CommPricer:
    cat = load_catalog()
    return CommPricer(
        model=load_model("deepseek-v3"),
        system=cat.system("hgx-h200"),
        plan=plan,
        catalog=cat,
        impl=None,
        engine=engine,
        precision=Precision(weights=experts, expert_weights=experts),
    )


def _nccl(pricer: CommPricer, op: CollectiveOp, msg: np.ndarray) -> np.ndarray:
    return times_and_latencies_s(candidates(pricer.groups["ep"], op, "nccl"), msg)[0]


@pytest.mark.parametrize(
    "engine, experts, wire",
    [("vllm", "bf16", 1.0), ("vllm", "fp8", FP8_WIRE), ("vllm", "nvfp4", NVFP4_WIRE), ("sglang", "fp8", 1.0)],
)
def test_a_dp_attention_group_gathers_and_reduce_scatters(engine, experts, wire):
    pricer = _pricer(engine, Plan(8, 1, 8, 8), experts)
    assert pricer.gathers_tokens
    t, _ = pricer.call_s(CollectiveCall(A2A, MSG, "ep", 2), MSG)
    hidden = MSG * 8 / 8  # ep / top-k: DeepSeek-V3 routes each token to 8 experts
    expected = (_nccl(pricer, AG, hidden * wire) + _nccl(pricer, RS, hidden)) / 2
    np.testing.assert_allclose(t, expected, rtol=1e-12)
    assert not np.allclose(t, _nccl(pricer, A2A, MSG))  # not NCCL's all-to-all


def test_quantizing_first_gathers_fewer_bytes():
    """vLLM's FP8 dispatch costs less than its BF16 one at a bandwidth-bound size, never more."""
    bf16 = _pricer("vllm", Plan(8, 1, 8, 8), "bf16").call_s(CollectiveCall(A2A, MSG, "ep", 2), MSG)[0]
    fp8 = _pricer("vllm", Plan(8, 1, 8, 8), "fp8").call_s(CollectiveCall(A2A, MSG, "ep", 2), MSG)[0]
    assert np.all(fp8 <= bf16) and fp8[-1] < 0.9 * bf16[-1]


@pytest.mark.parametrize(
    "engine, plan",
    [("trtllm", Plan(8, 1, 8, 8)), ("vllm-0.9", Plan(8, 1, 8, 8)), ("vllm", Plan(8, 1, 16, 1))],
)
def test_the_all_to_all_stays_where_the_engine_or_the_plan_runs_one(engine, plan):
    pricer = _pricer(engine, plan)
    assert not pricer.gathers_tokens
    t, _ = pricer.call_s(CollectiveCall(A2A, MSG, "ep", 2), MSG)
    np.testing.assert_allclose(t, _nccl(pricer, A2A, MSG), rtol=1e-12)


def test_the_presets_say_what_their_engine_runs():
    assert {e: load_engine(e).moe_dispatch for e in ("vllm", "vllm-0.19", "sglang", "sglang-0.5.14", "trtllm")} == {
        "vllm": "allgather-reducescatter",
        "vllm-0.19": "allgather-reducescatter",
        "sglang": "allgather-reducescatter",
        "sglang-0.5.14": "allgather-reducescatter",
        "trtllm": "all-to-all",
    }
    assert load_engine("vllm").moe_dispatch_quantized and not load_engine("sglang").moe_dispatch_quantized


def test_an_unknown_dispatch_is_refused():
    table = Table(
        parse_toml('[kernels]\nmoe_dispatch = "broadcast"\nmoe_dispatch_source = "x"\n', "t.toml"), "", "t.toml"
    )
    with pytest.raises(UnknownNameError, match="broadcast"):
        moe_dispatch(table.table("kernels"))
    assert "allgather-reducescatter" in MOE_DISPATCH
