"""What each architecture family is: the one table the config reader and the op builders consult.

Adding a family is one `Family` entry here, its config JSON in `catalog/models/`, and a test; a
new attention or MoE layout also needs its reader (`config.py`) or op list (`ops.py`).
Each entry cites the Hugging Face `transformers` modeling file its facts come from.
"""

from __future__ import annotations

from dataclasses import dataclass

ATTENTION_KINDS = ("gqa", "mla")
"""gqa: grouped-query attention (MHA and MQA are its edge cases); mla: DeepSeek's multi-head latent
attention, whose KV cache is one compressed latent per token."""

MOE_LAYOUTS = ("mixtral", "qwen_moe", "deepseek")
"""How a config.json spells its experts: mixtral (num_local_experts, every layer MoE, experts as wide
as intermediate_size), qwen_moe (num_experts, decoder_sparse_step, mlp_only_layers, one optional
shared expert), deepseek (n_routed_experts, first_k_dense_replace, moe_layer_freq, n_shared_experts)."""


@dataclass(frozen=True, kw_only=True)
class Family:
    model_type: str
    """HF `model_type`."""
    architectures: tuple[str, ...]
    """HF `architectures[0]` values that mean this family (used when model_type is absent)."""
    attention: str = "gqa"
    """One of ATTENTION_KINDS."""
    moe: str | None = None
    """One of MOE_LAYOUTS, or None for a dense model."""
    qkv_bias: bool | None = None
    """True: q/k/v always carry a bias (hard-coded in the modeling file); None: the config's
    `attention_bias` says (default false)."""
    qk_norm: bool = False
    """Per-head RMSNorm of q and k before RoPE."""
    router_bias_methods: tuple[str, ...] = ()
    """`topk_method` values whose router carries a per-expert score-correction bias."""
    norm: str = "rmsnorm"
    """Every family read here normalises with RMSNorm (one weight vector, no bias)."""
    source: str


FAMILIES: tuple[Family, ...] = (
    Family(model_type="llama", architectures=("LlamaForCausalLM",),
           source="transformers/models/llama/modeling_llama.py"),
    Family(model_type="mistral", architectures=("MistralForCausalLM",),
           source="transformers/models/mistral/modeling_mistral.py"),
    Family(model_type="mixtral", architectures=("MixtralForCausalLM",), moe="mixtral",
           source="transformers/models/mixtral/modeling_mixtral.py"),
    # Qwen2 hard-codes bias=True on q/k/v (Qwen2Attention), whatever the config says.
    Family(model_type="qwen2", architectures=("Qwen2ForCausalLM",), qkv_bias=True,
           source="transformers/models/qwen2/modeling_qwen2.py"),
    Family(model_type="qwen2_moe", architectures=("Qwen2MoeForCausalLM",), qkv_bias=True, moe="qwen_moe",
           source="transformers/models/qwen2_moe/modeling_qwen2_moe.py"),
    Family(model_type="qwen3", architectures=("Qwen3ForCausalLM",), qk_norm=True,
           source="transformers/models/qwen3/modeling_qwen3.py (Qwen3Attention q_norm / k_norm)"),
    Family(model_type="qwen3_moe", architectures=("Qwen3MoeForCausalLM",), qk_norm=True, moe="qwen_moe",
           source="transformers/models/qwen3_moe/modeling_qwen3_moe.py"),
    Family(model_type="deepseek_v2", architectures=("DeepseekV2ForCausalLM",), attention="mla", moe="deepseek",
           router_bias_methods=("noaux_tc",), source="transformers/models/deepseek_v2/modeling_deepseek_v2.py"),
    Family(model_type="deepseek_v3", architectures=("DeepseekV3ForCausalLM",), attention="mla", moe="deepseek",
           router_bias_methods=("noaux_tc",), source="transformers/models/deepseek_v3/modeling_deepseek_v3.py"),
)

BY_MODEL_TYPE: dict[str, Family] = {f.model_type: f for f in FAMILIES}
BY_ARCHITECTURE: dict[str, Family] = {a: f for f in FAMILIES for a in f.architectures}


def _check_table() -> None:
    """The table is data; a typo in it should fail at import, not at the first model read."""
    for f in FAMILIES:
        assert f.attention in ATTENTION_KINDS, f
        assert f.moe is None or f.moe in MOE_LAYOUTS, f


_check_table()

__all__ = ["ATTENTION_KINDS", "BY_ARCHITECTURE", "BY_MODEL_TYPE", "FAMILIES", "Family", "MOE_LAYOUTS"]
