"""What each architecture family is: the one table the config reader and the op builders consult.

Adding a family is one `Family` entry here, its config JSON in `catalog/models/`, and a test; a
new attention or MoE layout also needs its reader (`reader.py`) or op list (`ops.py`). A config whose
`model_type` is not here is read as the family its `architectures` or its fields name
(`SIGNATURES`), with a warning that says so.
Each entry cites the Hugging Face `transformers` modeling (or configuration) file its facts come from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ATTENTION_KINDS = ("gqa", "mla")
"""gqa: grouped-query attention (MHA and MQA are its edge cases); mla: DeepSeek's multi-head latent
attention, whose KV cache is one compressed latent per token."""

MOE_LAYOUTS = ("mixtral", "qwen_moe", "deepseek", "llama4", "gemma4", "nemotron", "mimo")
"""How a config.json spells its experts: mixtral (num_local_experts, every layer MoE, experts as wide
as intermediate_size; also gpt-oss), qwen_moe (num_experts, decoder_sparse_step, mlp_only_layers,
one optional shared expert), deepseek (n_routed_experts, first_k_dense_replace, moe_layer_freq,
n_shared_experts), llama4 (num_local_experts, interleave_moe_layer_step or moe_layers, one shared
expert as wide as intermediate_size, dense layers intermediate_size_mlp wide), gemma4 (num_experts,
top_k_experts, moe_intermediate_size, switched on by enable_moe_block; every layer keeps its dense
MLP beside the experts), nemotron (n_routed_experts, moe_intermediate_size, one shared expert
moe_shared_expert_intermediate_size wide; the 'E' blocks of hybrid_override_pattern), mimo
(n_routed_experts, moe_layer_freq as a per-layer 0/1 list)."""

LAYOUTS = ("uniform", "linear_hybrid", "nemotron", "mimo")
"""How a config.json says which token mixer each layer has, beyond WINDOW_RULES:
  uniform        every layer the family's attention (windows by WINDOW_RULES);
  linear_hybrid  Gated DeltaNet linear attention with full attention every few layers: `layer_types`
                 ("linear_attention" / "full_attention"), else full iff (i + 1) % `full_attention_interval`
                 == 0 (Qwen3NextConfig / Qwen3_5TextConfig);
  nemotron       one mixer or FFN per block, `hybrid_override_pattern`: M Mamba-2, * attention, E MoE,
                 - MLP (NemotronHConfig);
  mimo           `hybrid_layer_pattern`: 1 sliding-window attention with its own swa_* heads, 0 full
                 attention (MiMo-V2-Flash)."""

WINDOW_RULES = ("none", "all", "qwen", "pattern", "alternate", "chunked")
"""Which layers attend locally when the config has no explicit `layer_types` list:
  none       every layer attends over the whole context (Llama, DeepSeek);
  all        every layer uses `sliding_window` when it is set (Mistral, Mixtral: MistralAttention);
  qwen       `use_sliding_window` and layer index >= `max_window_layers` (Qwen2Config.layer_types);
  pattern    sliding unless (i + 1) % `sliding_window_pattern` == 0 (Gemma 3: five local, one global);
  alternate  even layers sliding, odd layers full (Gemma 2 `is_sliding = not layer_idx % 2`, gpt-oss);
  chunked    RoPE layers attend within chunks of `attention_chunk_size` tokens, the NoPE layers
             (`no_rope_layers[i] == 0`, else every `no_rope_layer_interval`-th) globally (Llama 4).
Any rule but `none` defers to an explicit `layer_types` list ("full_attention",
"sliding_attention", "chunked_attention"), which newer transformers versions write."""

QK_NORMS = ("none", "rms", "l2")
"""rms: per-head RMSNorm of q and k with head_dim weights each (Qwen3, Gemma 3); l2: a weightless
L2 norm (Llama 4 `Llama4TextL2Norm`)."""

ACTIVATIONS = ("silu", "gelu_tanh", "relu2")
"""The MLP's activation: SwiGLU (silu) or GeGLU (tanh-approximated GELU, Gemma), both gated (gate,
up and down projections); relu2, squared ReLU, is not gated (up and down only: Nemotron-H)."""


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
    o_bias: bool = True
    """The output projection carries a bias whenever `attention_bias` is true (Llama, Qwen3, Gemma,
    gpt-oss: `bias=config.attention_bias`); False where o_proj never has one (Qwen2)."""
    qk_norm: str = "none"
    """One of QK_NORMS: how q and k are normalised per head before attention."""
    qk_norm_flag: str | None = None
    """Config key that switches the qk norm on (Llama 4 `use_qk_norm`); None: always on."""
    router_bias: bool = False
    """The router always carries a per-expert bias (gpt-oss GptOssTopKRouter)."""
    router_bias_methods: tuple[str, ...] = ()
    """`topk_method` values whose router carries a per-expert score-correction bias."""
    expert_bias: bool = False
    """Each expert's gate/up and down projections carry biases (gpt-oss GptOssExperts)."""
    attention_sinks: bool = False
    """One learned sink logit per query head per layer (gpt-oss `self_attn.sinks`)."""
    norms_per_layer: int = 2
    """RMSNorms per decoder layer: 2 (input, post-attention), 4 with Gemma's extra
    pre-/post-feedforward norms, 1 where each block is one mixer or one FFN (Nemotron-H)."""
    activation: str = "silu"
    """One of ACTIVATIONS."""
    windows: str = "none"
    """One of WINDOW_RULES: which layers attend within a sliding window or chunk."""
    text_config: bool = False
    """The decoder's fields sit under `text_config` (multimodal checkpoints: Gemma 3, Llama 4); the
    vision tower beside it is not modelled."""
    dense_width_key: str = "intermediate_size"
    """Config key of the dense MLP's width (Llama 4: intermediate_size_mlp, since its
    intermediate_size is the experts')."""
    layout: str = "uniform"
    """One of LAYOUTS: which layers are linear, state-space, sliding or full."""
    indexer: bool = False
    """MLA with DeepSeek Sparse Attention: a lightning indexer (index_n_heads x index_head_dim) picks
    the index_topk tokens each query attends to (DeepSeek-V3.2, GLM-5)."""
    output_gate_key: str | None = None
    """Config key that switches on a sigmoid gate on the attention output, computed by q_proj
    beside the queries (Qwen3.5 / Qwen3-Next `attn_output_gate`)."""
    global_heads: bool = False
    """Full-attention layers have their own KV heads and head size (`num_global_key_value_heads`,
    `global_head_dim`) and may use keys as values (`attention_k_eq_v`): Gemma 4."""
    router_bias_flag: str | None = None
    """Config key that gives the router a per-expert score-correction bias (MiniMax-M2
    `use_routing_bias`)."""
    state_dtype_keys: tuple[str, ...] = ()
    """Config keys naming the dtype of the linear-attention / Mamba state (`mamba_ssm_dtype`)."""
    defaults: tuple[tuple[str, Any], ...] = ()
    """Values the HF config class fills for keys a checkpoint may omit, applied before reading."""
    norm: str = "rmsnorm"
    """Every family read here normalises with RMSNorm (one weight vector, no bias)."""
    source: str

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP or expert: gate, up and down (3), or up and down (2: relu2)."""
        return 2 if self.activation == "relu2" else 3


# Gemma3TextConfig's own defaults (transformers/models/gemma3/configuration_gemma3.py): the 27B
# checkpoint's text_config leaves out vocab_size, tie_word_embeddings and sliding_window_pattern.
_GEMMA3_DEFAULTS = (("vocab_size", 262_208), ("max_position_embeddings", 131_072), ("head_dim", 256),
                    ("tie_word_embeddings", True), ("sliding_window", 4096), ("sliding_window_pattern", 6))
# Gemma2Config (transformers/models/gemma2/configuration_gemma2.py).
_GEMMA2_DEFAULTS = (("vocab_size", 256_000), ("max_position_embeddings", 8192), ("head_dim", 256),
                    ("tie_word_embeddings", True), ("sliding_window", 4096))
# Llama4TextConfig (transformers/models/llama4/configuration_llama4.py).
_LLAMA4_DEFAULTS = (("attention_chunk_size", 8192), ("no_rope_layer_interval", 4), ("use_qk_norm", True),
                    ("interleave_moe_layer_step", 1), ("intermediate_size_mlp", 16384))
_GEMMA = dict(qk_norm="rms", norms_per_layer=4, activation="gelu_tanh")
_LLAMA4 = dict(moe="llama4", windows="chunked", qk_norm="l2", qk_norm_flag="use_qk_norm",
               dense_width_key="intermediate_size_mlp", defaults=_LLAMA4_DEFAULTS)

FAMILIES: tuple[Family, ...] = (
    Family(model_type="llama", architectures=("LlamaForCausalLM",),
           source="transformers/models/llama/modeling_llama.py"),
    Family(model_type="mistral", architectures=("MistralForCausalLM",), windows="all",
           source="transformers/models/mistral/modeling_mistral.py (MistralAttention sliding_window)"),
    Family(model_type="mixtral", architectures=("MixtralForCausalLM",), moe="mixtral", windows="all",
           source="transformers/models/mixtral/modeling_mixtral.py"),
    # Qwen2 hard-codes bias=True on q/k/v and bias=False on o (Qwen2Attention), whatever the config says.
    Family(model_type="qwen2", architectures=("Qwen2ForCausalLM",), qkv_bias=True, o_bias=False, windows="qwen",
           source="transformers/models/qwen2/modeling_qwen2.py"),
    Family(model_type="qwen2_moe", architectures=("Qwen2MoeForCausalLM",), qkv_bias=True, o_bias=False,
           moe="qwen_moe", windows="qwen", source="transformers/models/qwen2_moe/modeling_qwen2_moe.py"),
    Family(model_type="qwen3", architectures=("Qwen3ForCausalLM",), qk_norm="rms", windows="qwen",
           source="transformers/models/qwen3/modeling_qwen3.py (Qwen3Attention q_norm / k_norm)"),
    Family(model_type="qwen3_moe", architectures=("Qwen3MoeForCausalLM",), qk_norm="rms", moe="qwen_moe",
           windows="qwen", source="transformers/models/qwen3_moe/modeling_qwen3_moe.py"),
    Family(model_type="deepseek_v2", architectures=("DeepseekV2ForCausalLM",), attention="mla", moe="deepseek",
           router_bias_methods=("noaux_tc",), source="transformers/models/deepseek_v2/modeling_deepseek_v2.py"),
    Family(model_type="deepseek_v3", architectures=("DeepseekV3ForCausalLM",), attention="mla", moe="deepseek",
           router_bias_methods=("noaux_tc",), source="transformers/models/deepseek_v3/modeling_deepseek_v3.py"),
    Family(model_type="gpt_oss", architectures=("GptOssForCausalLM",), moe="mixtral", windows="alternate",
           router_bias=True, expert_bias=True, attention_sinks=True,
           source="transformers/models/gpt_oss/modeling_gpt_oss.py (GptOssAttention sinks, "
                  "GptOssTopKRouter bias, GptOssExperts gate_up_proj_bias / down_proj_bias)"),
    Family(model_type="gemma2", architectures=("Gemma2ForCausalLM",), windows="alternate",
           defaults=_GEMMA2_DEFAULTS, qk_norm="none", norms_per_layer=4, activation="gelu_tanh",
           source="transformers/models/gemma2/modeling_gemma2.py"),
    Family(model_type="gemma3_text", architectures=("Gemma3ForCausalLM",), windows="pattern",
           defaults=_GEMMA3_DEFAULTS, **_GEMMA, source="transformers/models/gemma3/modeling_gemma3.py"),
    Family(model_type="gemma3", architectures=("Gemma3ForConditionalGeneration",), windows="pattern",
           text_config=True, defaults=_GEMMA3_DEFAULTS, **_GEMMA,
           source="transformers/models/gemma3/modeling_gemma3.py (text decoder of the multimodal model)"),
    Family(model_type="llama4_text", architectures=("Llama4ForCausalLM",), **_LLAMA4,
           source="transformers/models/llama4/modeling_llama4.py"),
    Family(model_type="llama4", architectures=("Llama4ForConditionalGeneration",), text_config=True, **_LLAMA4,
           source="transformers/models/llama4/modeling_llama4.py (Llama4TextMoe shared_expert, "
                  "Llama4TextL2Norm, chunked attention on RoPE layers)"),
)

# DeepSeek Sparse Attention over DeepSeek-V3's MLA + MoE (DeepseekV32ForCausalLM; GLM-5 reuses it).
_DSA = dict(attention="mla", moe="deepseek", router_bias_methods=("noaux_tc",), indexer=True)
# Qwen3NextConfig (transformers/models/qwen3_next/configuration_qwen3_next.py): GDN + gated attention.
_QWEN_HYBRID = dict(qk_norm="rms", layout="linear_hybrid", output_gate_key="attn_output_gate",
                    state_dtype_keys=("mamba_ssm_dtype",), defaults=(("linear_conv_kernel_dim", 4),))
_GEMMA4 = dict(windows="pattern", global_heads=True, moe="gemma4", qk_norm="rms", norms_per_layer=4,
               activation="gelu_tanh", defaults=(("tie_word_embeddings", True), ("sliding_window_pattern", 6)))

FAMILIES += (
    Family(model_type="deepseek_v32", architectures=("DeepseekV32ForCausalLM",), **_DSA,
           source="deepseek-ai/DeepSeek-V3.2-Exp inference/model.py (Indexer: wq_b, wk, k_norm, weights_proj; "
                  "index_topk); vllm/model_executor/models/deepseek_v2.py (Indexer, DeepseekV32IndexerCache)"),
    Family(model_type="glm_moe_dsa", architectures=("GlmMoeDsaForCausalLM",), **_DSA,
           source="transformers/models/glm_moe_dsa (GLM-5: DeepSeek-V3.2's DSA with its own sizes)"),
    Family(model_type="kimi_k25", architectures=("KimiK25ForConditionalGeneration",), attention="mla",
           moe="deepseek", router_bias_methods=("noaux_tc",), text_config=True,
           source="moonshotai/Kimi-K2.5 modeling_kimi_k25.py: MoonViT vision tower over a DeepseekV3ForCausalLM "
                  "text model (text_config); the vision tower is not priced"),
    Family(model_type="kimi_k2", architectures=(), attention="mla", moe="deepseek", router_bias_methods=("noaux_tc",),
           source="moonshotai/Kimi-K2-Instruct config.json: DeepseekV3ForCausalLM under its own model_type"),
    Family(model_type="qwen3_next", architectures=("Qwen3NextForCausalLM",), moe="qwen_moe", **_QWEN_HYBRID,
           source="transformers/models/qwen3_next/modeling_qwen3_next.py (Qwen3NextGatedDeltaNet, "
                  "Qwen3NextAttention with its output gate)"),
    Family(model_type="qwen3_5", architectures=("Qwen3_5ForConditionalGeneration",), text_config=True,
           **_QWEN_HYBRID, source="transformers/models/qwen3_5/modeling_qwen3_5.py (text decoder of the "
                                  "multimodal model; the vision tower is not priced)"),
    Family(model_type="qwen3_5_text", architectures=("Qwen3_5ForCausalLM",), **_QWEN_HYBRID,
           source="transformers/models/qwen3_5/modeling_qwen3_5.py"),
    Family(model_type="qwen3_5_moe", architectures=("Qwen3_5MoeForConditionalGeneration",), text_config=True,
           moe="qwen_moe", **_QWEN_HYBRID,
           source="transformers/models/qwen3_5_moe/modeling_qwen3_5_moe.py (Qwen3NextSparseMoeBlock experts "
                  "and shared expert; the vision tower is not priced)"),
    Family(model_type="qwen3_5_moe_text", architectures=("Qwen3_5MoeForCausalLM",), moe="qwen_moe", **_QWEN_HYBRID,
           source="transformers/models/qwen3_5_moe/modeling_qwen3_5_moe.py"),
    Family(model_type="minimax_m2", architectures=("MiniMaxM2ForCausalLM",), moe="mixtral", qk_norm="rms",
           qk_norm_flag="use_qk_norm", router_bias_flag="use_routing_bias",
           source="transformers/models/minimax_m2/modeling_minimax_m2.py (block_sparse_moe with "
                  "e_score_correction_bias, per-layer q/k RMSNorm, MTP modules beside the decoder)"),
    Family(model_type="gemma4", architectures=("Gemma4ForConditionalGeneration",), text_config=True, **_GEMMA4,
           source="transformers/models/gemma4/modeling_gemma4.py and convert_gemma4_weights.py (26B-A4B: "
                  "dense MLP beside 128 experts; global layers with their own KV heads, head size and K = V)"),
    Family(model_type="gemma4_text", architectures=("Gemma4ForCausalLM",), **_GEMMA4,
           source="transformers/models/gemma4/modeling_gemma4.py"),
    Family(model_type="nemotron_h", architectures=("NemotronHForCausalLM",), layout="nemotron", moe="nemotron",
           activation="relu2", norms_per_layer=1, state_dtype_keys=("mamba_ssm_cache_dtype",),
           defaults=(("n_groups", 8), ("conv_kernel", 4)),
           source="transformers/models/nemotron_h/modeling_nemotron_h.py (NemotronHMamba2Mixer, "
                  "NemotronHMOE with a shared expert, relu2 MLPs; one mixer or FFN per block)"),
    Family(model_type="mimo_v2_flash", architectures=("MiMoV2FlashForCausalLM",), layout="mimo", moe="mimo",
           router_bias_methods=("noaux_tc",),
           source="XiaomiMiMo/MiMo-V2-Flash modeling_mimo_v2_flash.py (sliding layers with swa_* heads, "
                  "full layers with their own, 192-wide keys beside 128-wide values)"),
)

SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("deepseek_v32", ("kv_lora_rank", "index_topk")),
    ("nemotron_h", ("hybrid_override_pattern", "ssm_state_size")),
    ("mimo_v2_flash", ("hybrid_layer_pattern", "swa_num_attention_heads")),
    ("qwen3_5_moe", ("linear_num_value_heads", "num_experts")),
    ("qwen3_5", ("linear_num_value_heads",)),
    ("gemma4", ("global_head_dim", "num_global_key_value_heads")),
    ("kimi_k25", ("kv_lora_rank", "n_routed_experts")),
    ("minimax_m2", ("num_local_experts", "use_routing_bias")),
)
"""Fields that name a family's architecture, most specific first: an unknown `model_type` whose
config has all of one row's keys (under `text_config` for the multimodal families, else at the top:
then the text-only sibling, `TEXT_ONLY`) is read as that family, with a warning."""

TEXT_ONLY = {"qwen3_5_moe": "qwen3_next", "qwen3_5": "qwen3_5_text", "gemma4": "gemma4_text",
             "kimi_k25": "deepseek_v3"}
"""The family a signature means when its keys sit at the top level rather than under text_config."""

BY_MODEL_TYPE: dict[str, Family] = {f.model_type: f for f in FAMILIES}
BY_ARCHITECTURE: dict[str, Family] = {a: f for f in FAMILIES for a in f.architectures}


def _check_table() -> None:
    """The table is data; a typo in it should fail at import, not at the first model read."""
    for f in FAMILIES:
        assert f.attention in ATTENTION_KINDS, f
        assert f.moe is None or f.moe in MOE_LAYOUTS, f
        assert f.windows in WINDOW_RULES and f.qk_norm in QK_NORMS and f.activation in ACTIVATIONS, f
        assert f.norms_per_layer in (1, 2, 4) and f.layout in LAYOUTS, f
    assert all(name in {f.model_type for f in FAMILIES} for name, _ in SIGNATURES)


_check_table()

__all__ = ["ACTIVATIONS", "ATTENTION_KINDS", "BY_ARCHITECTURE", "BY_MODEL_TYPE", "FAMILIES", "Family", "LAYOUTS",
           "MOE_LAYOUTS", "QK_NORMS", "SIGNATURES", "TEXT_ONLY", "WINDOW_RULES"]
