"""vLLM's 2024 releases (issue 36, item 4): vllm-0.5 (0.5.4) and vllm-0.6 (0.6.3, multi-step scheduling)
against the public measurements of their own engine, each number quoted from its source.

* vllm-project/vllm#6913 (RFC Asynchronous Output Processor, 2024-07-29, the 0.5.3 engine): Llama-3-70B
  FP8 on 4x H100, 128-token prompts, TPOT 19 ms at batch 1 and 25 ms at batch 32. vllm-0.5's per_step is
  fitted on the batch-1 row and its per_seq is the same table's output processing (0.2 -> 3.4 ms): the
  batch-32 row is held out, within 10%.
* vllm-project/vllm#9856 (2024-10-30, V0 main between 0.6.3 and 0.6.4): Llama-3.1-8B on 2x A100, TP2,
  batch 8, 128 in / 256 out, 2.30 s per request = 8.99 ms per output token. vllm-0.6's per_step is fitted
  on it (within 3%); vllm-v0 (0.7.2's fit) prices it 50% or more too slow, the issue's 43-62%.
* multi-step (--scheduler-steps N, vllm-project/vllm#6854): the host's round trip is paid once per N
  steps, so N = 8 takes 7/8 of it out of every step and leaves the GPU's work and each token's output
  processing as they were; 0.6's asynchronous output processor hides the latter behind the GPU's step.
"""

import pytest

from shardbudget.errors import PlanError
from shardbudget.model import Plan
from shardbudget.step.scenario import decode_step, scenario
from shardbudget.step.settings import PlanSettings, engine_efficiency


def _tpot_s(model, system, tp, batch, context, engine, *, steps=1, dtype=None, eff=None):
    sc = scenario(model, system, engine=engine, dtype=dtype)
    return decode_step(
        model,
        system,
        Plan(tp=tp),
        batch=batch,
        context=context,
        engine=engine,
        precision=sc.precision,
        settings=PlanSettings(scheduler_steps=steps),
        eff=eff,
    ).total_s


@pytest.mark.parametrize("batch, measured_s, tol", [(1, 19e-3, 0.03), (32, 25e-3, 0.10)])
def test_vllm_05_on_the_async_output_rfc_table(batch, measured_s, tol):
    # vllm#6913: batch 1 is the fitted row, batch 32 held out; context = the 128-token prompt + ~64 out
    t = _tpot_s("llama-3.1-70b", "hgx-h100", 4, batch, 192, "vllm-0.5", dtype="fp8")
    assert abs(t / measured_s - 1) <= tol, t


def test_vllm_06_on_the_v1_tp_pr_v0_row_and_vllm_v0_too_slow_there():
    measured_s = 2.3017 / 256  # vllm#9856 'main': Avg latency 2.30 s, 256 output tokens
    t06 = _tpot_s("llama-3.1-8b", "hgx-a100", 2, 8, 256, "vllm-0.6")
    t_v0 = _tpot_s("llama-3.1-8b", "hgx-a100", 2, 8, 256, "vllm-v0")
    assert abs(t06 / measured_s - 1) <= 0.03, t06
    assert t_v0 / measured_s - 1 >= 0.43, t_v0


def test_multi_step_divides_the_host_round_trip_alone():
    eff = engine_efficiency("vllm-0.6")
    one, eight = (_tpot_s("llama-3.1-8b", "hgx-h100", 1, 32, 2048, "vllm-0.6", steps=n) for n in (1, 8))
    # 2.5 ms round trip; 32 x 100 us of output processing is every step's, hidden behind the GPU's step
    assert one - eight == pytest.approx(eff.step_overhead_s * 7 / 8, rel=1e-9)


def test_async_output_processing_sets_the_pace_past_the_gpu_step():
    # vLLM 0.6 at batch 256: 25.6 ms of output processing (100 us each) outlasts an 8B model's step on
    # one H100; the 0.5 loop had it in series (vllm#6801: 'can be 20ms' between steps at batch 200)
    eff = engine_efficiency("vllm-0.6")
    t = _tpot_s("llama-3.1-8b", "hgx-h100", 1, 256, 1024, "vllm-0.6")
    assert t == pytest.approx(256 * eff.overhead_per_seq_s + eff.step_overhead_s, rel=1e-9)
    t05 = _tpot_s("llama-3.1-8b", "hgx-h100", 1, 256, 1024, "vllm-0.5")
    assert t05 > t + 7e-3  # 0.5: the GPU's step, the whole round trip and the output processing in series


def test_multi_step_only_where_the_release_runs_it():
    with pytest.raises(PlanError, match="multi-step scheduling: vllm-0.6"):
        scenario("llama-3.1-8b", "hgx-h100", engine="vllm", settings=PlanSettings(scheduler_steps=8))
    with pytest.raises(PlanError, match="whole number >= 1"):
        PlanSettings(scheduler_steps=0)


def test_another_engine_of_the_request_runs_one_step_per_call():
    # the report's engines side by side (Scenario.with_engine): SGLang has no multi-step scheduling
    sc = scenario("llama-3.1-8b", "hgx-h100", engine="vllm-0.6", settings=PlanSettings(scheduler_steps=8))
    assert any(n.startswith("multi-step scheduling: 8 decode steps") for n in sc.precision_notes)
    other = sc.with_engine("sglang")
    assert other.settings.scheduler_steps == 1
    assert not any(n.startswith("multi-step") for n in other.precision_notes)
