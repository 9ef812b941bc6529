"""Served TPOT: the time between two tokens of one request under continuous batching with chunked
prefill, as `vllm bench serve`, SGLang's `bench_serving` and public serving benchmarks report it.

`plan --input-len/--output-len` and `deploy` both call `served_curve`, so they agree on every
plan and batch. At a concurrency of b requests, each of `output_len` tokens after a prompt of
`input_len`, every finished request is replaced by a new one: each of the b slots starts one
prompt every `output_len` decode steps. A request's TPOT window (its first token excluded) sees
the prompts of the b - 1 other slots mixed into its decode steps (chunked prefill: vLLM V1,
SGLang and TensorRT-LLM all default to it); its own prompt is in its TTFT. So

    tpot(b)  = decode_step(b) + c_p x (b - 1) x input_len / output_len
    cycle(b) = tpot(b) + c_p x input_len / output_len      (per token of a slot, own prompt included)

and the b slots give b / cycle(b) tokens per second. c_p is what one prompt token adds to a step
it rides in: one prompt's prefill less a one-token decode step (weights, launches, collective
latencies and host time, which the decode step pays anyway), over the prompt's length. Its
communication part c_p,comm is the same difference of the two steps' communication (the prefill's
all-reduces of input_len x hidden bytes less a one-token step's), so the communication inside the
TPOT is the decode step's plus c_p,comm x (b - 1) x input_len / output_len: on PCIe, where a
prompt's all-reduces cost more than its GEMMs, most of what the prompts add is communication. In the
InferenceX runs of DeepSeek-R1 FP8 on 8x H200 (TensorRT-LLM 1.1, TP8), ISL 8192 / OSL 1024 adds
1.2, 2.8 and 5.7 ms to the ISL 1024 / OSL 8192 TPOT at concurrency 4, 8 and 16: 50, 50 and 48 us
per mixed prompt token over (b - 1) x 8 tokens, against 38, 44 and 45 us over b x 8.

A new prompt's TTFT is its ceil(input_len / chunk) chunks, each a decode step of the batch plus its
share of the prompt (`chunk_tokens` prompt tokens per step: vLLM's max_num_batched_tokens, SGLang's
chunked_prefill_size, TensorRT-LLM's max_num_tokens all default to 8192).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..model import ModelConfig, Plan, load_model
from .scenario import Scenario
from .speculative import Speculation

CHUNK_TOKENS = 8192
"""Prompt tokens per step under chunked prefill: vLLM's max_num_batched_tokens (engines/vllm.toml),
SGLang's chunked_prefill_size on 80-160 GB GPUs and TensorRT-LLM's max_num_tokens all default to 8192."""


@dataclass(frozen=True)
class ServedCurve:
    """Per batch b (concurrent requests per micro-batch), seconds."""

    tpot_s: np.ndarray
    """Time between two tokens of one request (its first token excluded): the served TPOT."""
    cycle_s: np.ndarray
    """Per generated token of one slot with its own prompt's share: b / cycle_s tokens/s."""
    ttft_s: np.ndarray
    comm_s: np.ndarray
    """Communication inside tpot_s: the decode step's collectives and the mixed prompts'."""
    decode_s: np.ndarray
    """The decode step alone per generated token, no prompt mixed in (the ITL; with speculation the
    verify step and the drafts over the tokens a step yields)."""
    decode_comm_s: np.ndarray
    """Communication inside decode_s."""
    prompt_token_s: float
    """c_p: what one prompt token adds to a step it is mixed into."""
    prompt_comm_s: float
    """c_p,comm: the communication part of c_p (module doc)."""


def decode_per_token(
    sc: Scenario, p: Plan, *, b: np.ndarray, context: float, spec: Speculation | None
) -> tuple[np.ndarray, np.ndarray, float]:
    """(time per generated token of each sequence, communication in it, tokens per step per
    sequence) at each batch: one decode step, or with speculation the verify step plus the draft's
    k steps over the expected accepted tokens (speculative.py)."""
    cfg = sc.model
    dec = sc.step(p, "decode")
    if spec is None:
        r = dec.evaluate(b, context)
        return r.total_s, r.comm_s, 1.0
    k = spec.draft_tokens
    verify = dec.evaluate(b * (k + 1), context / (k + 1))  # each sequence's KV read once (speculative.py)
    if spec.method == "draft":
        small = load_model(spec.draft_model)
        draft = sc.step_of(small, Plan(draft_tp(small, p.tp)), "decode")
        draft_s = k * draft.evaluate(b, context).total_s
    else:  # mtp / eagle: one decoder layer of the target per draft token
        one = dec.evaluate(b, context)
        draft_s = k * (one.compute_s + one.comm_s) / cfg.num_layers
    y = spec.tokens_per_step
    return (verify.total_s + draft_s) / y, verify.comm_s / y, y


def draft_tp(small: ModelConfig, tp: int) -> int:
    """The draft runs over the target's TP group where its heads allow it, else on fewer GPUs."""
    while tp > 1 and (small.num_heads % tp or (small.num_kv_heads % tp and tp % small.num_kv_heads)):
        tp //= 2
    return tp


def prompt_token_s(sc: Scenario, p: Plan, *, input_len: int) -> float:
    """c_p: one prompt's prefill less a one-token decode step, over its length (module doc)."""
    return prompt_token_parts(sc, p, input_len=input_len)[0]


def prompt_token_parts(sc: Scenario, p: Plan, *, input_len: int) -> tuple[float, float]:
    """(c_p, c_p,comm): what one prompt token adds to a step, and the communication in it: the
    prefill's collectives less a one-token decode step's, over the prompt (at most c_p)."""
    pre, dec = sc.step(p, "prefill"), sc.step(p, "decode")
    one, base = pre.evaluate(1.0, float(input_len)), dec.evaluate(1.0, 1.0)
    c_p = max(float(one.total_s) - float(base.total_s), 0.0) / input_len
    comm = max(float(one.comm_s) - float(base.comm_s), 0.0) / input_len
    return c_p, min(comm, c_p)


def served_curve(
    sc: Scenario,
    p: Plan,
    *,
    batch,
    input_len: int,
    output_len: int,
    spec: Speculation | None = None,
    chunk_tokens: int = CHUNK_TOKENS,
) -> ServedCurve:
    """TPOT, per-slot token cycle and TTFT at each batch of `batch` (module doc); the decode step
    at the mean context a request sees, input_len + output_len / 2."""
    b = np.asarray(batch, dtype=float)
    step, comm, yield_ = decode_per_token(sc, p, b=b, context=input_len + output_len / 2, spec=spec)
    c_p, c_comm = prompt_token_parts(sc, p, input_len=input_len)
    mixed = (b - 1.0) * input_len / output_len  # prompt tokens of the other slots per generated token
    per_request = c_p * input_len / output_len  # a prompt's cost spread over its request's tokens
    tpot = step + c_p * mixed
    chunks = np.ceil(input_len / np.maximum(chunk_tokens - b, 1.0))
    ttft = chunks * (step * yield_ + c_p * input_len / chunks)
    return ServedCurve(
        tpot_s=tpot,
        cycle_s=tpot + per_request,
        ttft_s=ttft,
        comm_s=comm + c_comm * mixed,
        decode_s=step,
        decode_comm_s=comm,
        prompt_token_s=c_p,
        prompt_comm_s=c_comm,
    )


__all__ = [
    "CHUNK_TOKENS",
    "ServedCurve",
    "decode_per_token",
    "draft_tp",
    "prompt_token_parts",
    "prompt_token_s",
    "served_curve",
]
