"""The host's per-step work as the engines schedule it (issue 36, item 3): an overlap scheduler
(SGLang's, TensorRT-LLM's; [host] overlap_scheduler) prepares step N + 1 while the GPU runs step N, so a
step's per-sequence host work adds only where it outlasts the GPU's step; engines without one (vLLM's
presets) add it to every step."""

from dataclasses import replace

import pytest

from shardbudget.model import Plan
from shardbudget.step.scenario import decode_step
from shardbudget.step.settings import engine_efficiency


def _step(model, system, batch, engine, eff):
    return decode_step(model, system, Plan(tp=1), batch=batch, context=2048, engine=engine, eff=eff).total_s


@pytest.mark.parametrize("engine", ["sglang", "trtllm"])
def test_overlap_scheduler_hides_the_per_sequence_work_behind_a_longer_gpu_step(engine):
    eff = engine_efficiency(engine)
    assert eff.per_seq_overlapped and eff.overhead_per_seq_s == pytest.approx(20e-6)
    hidden = _step("llama-3.1-8b", "hgx-h100", 64, engine, eff)
    serial = _step("llama-3.1-8b", "hgx-h100", 64, engine, replace(eff, per_seq_overlapped=False))
    # 64 sequences x 20 us = 1.28 ms of host work, shorter than the 8B model's step on one H100
    assert serial - hidden == pytest.approx(64 * 20e-6, rel=1e-9)


def test_host_work_longer_than_the_gpu_step_sets_the_pace():
    eff = engine_efficiency("sglang")
    no_host = replace(eff, overhead_per_seq_s=0.0, step_overhead_s=0.0)
    gpu = _step("llama-3.2-1b", "hgx-b200", 512, "sglang", no_host)
    per_seq = 512 * eff.overhead_per_seq_s  # 10.24 ms
    assert gpu < per_seq  # a 1B model's step at batch 512 on a B200 is shorter than its host work
    total = _step("llama-3.2-1b", "hgx-b200", 512, "sglang", eff)
    assert total == pytest.approx(per_seq + eff.step_overhead_s, rel=1e-9)


def test_engines_without_an_overlap_scheduler_pay_it_every_step():
    eff = engine_efficiency("vllm")
    assert not eff.per_seq_overlapped
    with_host = _step("llama-3.1-8b", "hgx-h100", 64, "vllm", eff)
    none = _step("llama-3.1-8b", "hgx-h100", 64, "vllm", replace(eff, overhead_per_seq_s=0.0))
    assert with_host - none == pytest.approx(64 * eff.overhead_per_seq_s, rel=1e-9)
