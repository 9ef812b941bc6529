"""vLLM 0.34.0's memory rules as re-read from its wheel: the sampler's whole-vocabulary logits after
the forward pass, and the margin its extensible KV cache keeps free (engines/vllm.toml [memory])."""

from __future__ import annotations

import pytest

from shardbudget.engines.presets import load_engine
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import Plan, load_model
from shardbudget.step.memory import MemoryNeed, activation_peak_bytes, fits, usable_bytes

GiB = 2.0**30


def test_vllm_sampler_takes_whole_vocabulary_logits_after_the_forward_pass():
    cfg = load_model("llama-3.1-8b")
    m = load_engine("vllm").memory
    assert m.sampler_bytes_per_logit == 6  # bf16 logits + their fp32 copy (sampler.py)
    peak = {
        tp: activation_peak_bytes(
            cfg,
            Plan(tp),
            act_dtype="bf16",
            tokens=m.max_num_batched_tokens,
            seqs=m.max_num_seqs,
            sampler_bytes_per_logit=m.sampler_bytes_per_logit,
        )
        for tp in (1, 4)
    }
    # 1024 rows x 128256 x 6 B + (8192 + 1024) x 4096 x 2 B of hidden states, above the forward
    # pass's 8192 x (2 x 14336 + 4 x 4096) x 2 B; the logits are gathered: flat in TP, as
    # llm-d-planner measured on vLLM 0.19.0 (1.89 GiB at TP 1, 2 and 4)
    sampler = 1024 * 128256 * 6 + (8192 + 1024) * 4096 * 2
    assert peak[1] == pytest.approx(sampler) and peak[4] == pytest.approx(sampler)
    # the older estimate: fp32 logits of vocab / tp added to the forward pass's peak
    old = activation_peak_bytes(cfg, Plan(4), act_dtype="bf16", tokens=8192, seqs=256)
    assert old == pytest.approx(8192 * (2 * 14336 / 4 + 4 * 4096) * 2 + 256 * 128256 / 4 * 4)


def test_vllm_keeps_a_margin_free_beyond_what_it_measured():
    gpu = load_catalog().system("hgx-h100").gpu
    mem = gpu.memory_bytes

    def need(total_gib_below: float, activations: float) -> MemoryNeed:
        weights = mem - total_gib_below * GiB - activations
        return MemoryNeed(
            weights=weights, kv_cache=0.0, activations=activations, cuda_graphs=0.0, comm_buffers=0.0, cuda_context=0.0
        )

    # max(1 GiB, 0.75 x the activation peak) stays free (extensible_kv_cache.py measure_kv_cache_bytes)
    assert not fits(need(0.9, 0.5 * GiB), gpu, engine="vllm", plan=Plan(1))
    assert fits(need(1.1, 0.5 * GiB), gpu, engine="vllm", plan=Plan(1))
    assert not fits(need(1.4, 2 * GiB), gpu, engine="vllm", plan=Plan(1))
    assert fits(need(1.6, 2 * GiB), gpu, engine="vllm", plan=Plan(1))
    # an explicit --gpu-memory-utilization below 1 leaves more than the margin: it alone binds
    assert fits(need(0.1 * mem / GiB + 0.01, 2 * GiB), gpu, engine="vllm", plan=Plan(1), utilization=0.9)
    # the window reports show: the device less the 1 GiB floor; presets without a margin keep theirs
    assert usable_bytes(gpu, engine="vllm", plan=Plan(1)) == mem - GiB
    assert usable_bytes(gpu, engine="vllm-0.19", plan=Plan(1)) == 0.9 * mem
    assert fits(need(0.1 * mem / GiB + 0.01, 0.5 * GiB), gpu, engine="vllm-0.19", plan=Plan(1))
