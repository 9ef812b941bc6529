"""The defaults of a request, held once: the CLI's options and the library's functions both read them
here (ground floor: this module imports nothing, so the CLI's start-up pays nothing for it).

A default is what a request means when the user says nothing: the engine, the budget, the context
of a decode-only question, the workload of a served one. A command that must differ says so beside
its own option (the demo's 50 ms budget is part of the demo's fixed case, not a default).
"""

from __future__ import annotations

DEFAULT_ENGINE = "vllm"
"""The engine whose kernels, CUDA graphs and host costs a step has when none is named."""

ENGINE_NAMES = (
    "vllm",
    "sglang",
    "trtllm",
    "eager",
    "vllm-v0",
    "tgi",
    "sglang-0.4",
    "trtllm-1.0",
    "vllm-0.9",
    "vllm-0.19",
    "sglang-0.5.14",
    "vllm-0.5",
    "vllm-0.6",
)
"""Engines with a preset file (engines/<name>.toml); vllm-v0 (vLLM 0.7's V0 engine) and tgi
(text-generation-inference without CUDA graphs) are the older engines behind published decode
measurements; sglang-0.4 (SGLang 0.4.x, 2025) the release behind the 2025 SGLang rows of
data/; trtllm-1.0 (TensorRT-LLM 1.0.0) the release behind the A100 and L40S
TensorRT-LLM rows of the collective measurements; vllm-0.9 (vLLM 0.9.x, mid-2025) the release behind the
July 2025 vLLM rows (its Triton fused-MoE call at small batch); vllm-0.19 (vLLM 0.19.0) and sglang-0.5.14
(SGLang 0.5.14) the releases the engines' measured all-reduce rows were taken at, which vllm and sglang
priced until they moved to vLLM 0.34.0 and SGLang 0.5.23; vllm-0.5 (vLLM 0.5.4) and vllm-0.6 (vLLM 0.6.3,
multi-step scheduling with --scheduler-steps) the 2024 releases of the V0 engine (engines/releases.py
lists them all)."""

CURRENT_ENGINES = ENGINE_NAMES[:4]
"""The engines users choose between today (vllm, sglang, trtllm, eager); the others price old rows."""

MOE_A2A = "nccl"
"""How a plan's MoE dispatch and combine run where expert ranks hold other tokens (comm/moe_a2a.py
BACKENDS): NCCL's all-to-all, as the engines run it without a DeepEP backend named (vLLM's
--all2all-backend, SGLang's --moe-a2a-backend)."""

BUDGET_S = 0.030
"""Budget on the time per output token, seconds: 30 ms, about 33 tokens/s per user, the interactive
chat target most serving SLOs quote. It judges the served TPOT where a workload serves prompts, the
ITL (one decode step) where the question is decode only (request.Workload.judged)."""

CONTEXT_TOKENS = 4096
"""Tokens cached per sequence for a decode-only question, and the prompt its TTFT prefills."""

INPUT_TOKENS = 2048
"""Prompt tokens per request of a served workload (deploy's, or plan's with --input-len/--output-len)."""

OUTPUT_TOKENS = 256
"""Generated tokens per request of a served workload."""

BATCHES = (1,)
"""Decode batches `plan` and `explain` answer for."""

REPORT_BATCHES = (1, 64)
"""Decode batches the report shows: one interactive user, and a loaded server."""

COMM_THRESHOLD = 0.30
"""Communication share of the latency-optimal plan's ITL above which it is flagged comm-bound."""

KNEE_THRESHOLD = 0.10
"""Gain below which the next TP degree is not worth it (the latency-optimal TP)."""

DEPLOY_MAX_BATCH = 1024
"""Where deploy's batch sweep ends: sequences one replica decodes together."""

DEPLOY_ROWS = 20
"""Options deploy's table shows without --all (--json has all)."""

DRAFT_TOKENS = 3
"""Tokens a speculative draft proposes per step when --draft-tokens is not given."""

ACCEPTANCE = 0.7
"""Probability each draft token is accepted when --acceptance is not given."""

CHECK_TOLERANCE = 0.25
"""`check`: allowed deviation of each region's median time from the model (x1.25 either way)."""

CHECK_TTFT_TOLERANCE = 1.0
"""`check` on a serving benchmark: allowed deviation of the mean TTFT (x2 either way: a TTFT also
carries queueing and the client's ramp-up, which the model does not price)."""

BUDGET_STEPS = 24
"""Budgets the report's interactive slider offers."""

EXPLAIN_MODEL = "llama-3.1-70b"
"""The model `explain` answers about when none is named: the README's running example."""

EXPLAIN_SYSTEM = "hgx-h100"
"""The system `explain` compares with its own fabric what-ifs when none is named."""
