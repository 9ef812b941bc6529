"""Speculative decoding: a draft proposes k tokens, one verify step of the target checks all k + 1.

The verify step runs k + 1 tokens per sequence through every GEMM and collective (messages k + 1
times larger) but reads each sequence's KV cache once: it is priced as a decode step of
b x (k + 1) tokens over a context of L / (k + 1), which moves the right KV bytes (b x L) and the
right GEMM and all-reduce work; only the attention FLOPs are undercounted, and decode attention is
memory-bound. It yields 1 + a + a^2 + ... + a^k tokens per sequence on average when each draft
token is accepted with probability a given the ones before it (the geometric model of Leviathan et
al., "Fast Inference from Transformers via Speculative Decoding", 2023).

Drafts: `mtp` (DeepSeek-V3's multi-token-prediction module) and `eagle` (EAGLE's one-layer head)
cost one decoder layer of the target per draft token; `draft` is a separate small model, priced as
its own decode step per draft token on the same GPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import PlanError, UnknownNameError

METHODS = ("mtp", "eagle", "draft")


@dataclass(frozen=True, kw_only=True)
class Speculation:
    method: str
    draft_tokens: int
    """k: tokens the draft proposes per step."""
    acceptance: float
    """a: probability each draft token is accepted, given the ones before it."""
    draft_model: str | None = None
    """For method 'draft': the draft model (a catalog name or a config.json)."""

    def __post_init__(self) -> None:
        if self.method not in METHODS:
            raise UnknownNameError("speculative method", self.method, METHODS)
        if (
            isinstance(self.draft_tokens, bool)
            or not isinstance(self.draft_tokens, int)
            or not 1 <= self.draft_tokens <= 16
        ):
            raise PlanError(f"--draft-tokens must be a whole number from 1 to 16, got {self.draft_tokens!r}")
        if (
            isinstance(self.acceptance, bool)
            or not isinstance(self.acceptance, (int, float))
            or not 0.0 <= self.acceptance <= 1.0
        ):
            raise PlanError(f"--acceptance must be a probability in [0, 1], got {self.acceptance!r}")
        if self.method == "draft" and not self.draft_model:
            raise PlanError("--speculative draft needs --draft-model (the small model that proposes tokens)")

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens a sequence gains per verify step: (1 - a^(k+1)) / (1 - a), k + 1 at a = 1."""
        a, k = float(self.acceptance), self.draft_tokens
        return k + 1.0 if a == 1.0 else (1 - a ** (k + 1)) / (1 - a)


def comparison_text(spec: Speculation, best, plain) -> str:
    """Whether speculation pays, against the best option without it (both deploy Options, or
    None where no option meets the budgets), and whether the fabric or the compute eats the gain:
    the verify step's messages are k + 1 times larger, so its communication share is the sign."""
    how = f"Speculation ({spec.method}, k={spec.draft_tokens}, a={spec.acceptance:g}, {spec.tokens_per_step:.2f} tokens per step)"
    if plain is None:
        return f" {how} is what makes the budgets reachable: without it no option meets them." if best else ""
    plain_text = (
        f"{plain.label()} at a batch cap of {plain.max_batch}, {plain.tokens_per_s_per_gpu:,.0f} tokens/s/GPU, "
        f"{100 * plain.comm_share:.0f}% communication"
    )
    if best is None:
        return f" Without speculation {plain_text} meets the budgets; {how} does not."
    against = f"the best option without it ({plain_text})"
    ratio = best.tokens_per_s_per_gpu / plain.tokens_per_s_per_gpu
    if ratio > 1:
        return f" {how} pays: {ratio:.2f}x the tokens/s per GPU of {against}."
    rise = best.comm_share - plain.comm_share
    eater = (
        f"the fabric eats the gain: the verify step's {spec.draft_tokens + 1}x larger all-reduces raise "
        f"communication from {100 * plain.comm_share:.0f}% to {100 * best.comm_share:.0f}% of the TPOT"
        if rise > 0.05
        else f"the compute of {spec.draft_tokens + 1} tokens per sequence per step eats the gain (communication "
        f"{100 * best.comm_share:.0f}% of the TPOT, {100 * plain.comm_share:.0f}% without)"
    )
    return f" {how} does not pay: {ratio:.2f}x the tokens/s per GPU of {against}; {eater}."


__all__ = ["METHODS", "Speculation", "comparison_text"]
