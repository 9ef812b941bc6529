"""What each architecture family is: the one table the config reader and the op builders consult.

The table is data, `catalog/families.toml`, read strictly (`datafile`: a key `Family` does not declare
is refused with the file, the family and the nearest field) and built once per content (`datacache`).
Adding a family is one `[families.<model_type>]` table there, its config JSON in `catalog/models/`,
and a test; a new attention or MoE layout also needs its reader (`reader.py`) or op list (`ops.py`).
A config whose `model_type` is not here is read as the family its `architectures` or its fields name
(`SIGNATURES`), with a warning that says so.
Each entry cites the Hugging Face `transformers` modeling (or configuration) file its facts come from.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..datacache import cached, read_builtin
from ..datafile import Table, check_name, fold, key, parse_toml, read_record
from ..errors import CatalogError, UnknownNameError

WHERE = "catalog/families.toml"

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


def _norms(t: Table, name: str) -> int:
    value = t.count(name)
    if value not in (1, 2, 4):
        raise t.fail(name, f"RMSNorms per layer are 1, 2 or 4, got {value}")
    return value


def _defaults(t: Table, name: str) -> tuple[tuple[str, Any], ...]:
    table = t.table(name)
    out = tuple((k, table.raw(k, types=(int, float, bool, str))) for k, _ in table.entries())
    table.done()
    return out


@dataclass(frozen=True, kw_only=True)
class Family:
    model_type: str
    """HF `model_type` (the family's table name)."""
    architectures: tuple[str, ...] = key("architectures")
    """HF `architectures[0]` values that mean this family (used when model_type is absent)."""
    attention: str = key("attention", "choice", allowed=ATTENTION_KINDS, default="gqa")
    """One of ATTENTION_KINDS."""
    moe: str | None = key("moe", "choice", allowed=MOE_LAYOUTS, default=None)
    """One of MOE_LAYOUTS, or None for a dense model."""
    qkv_bias: bool | None = key("qkv_bias", default=None)
    """True: q/k/v always carry a bias (hard-coded in the modeling file); None: the config's
    `attention_bias` says (default false)."""
    o_bias: bool = key("o_bias", default=True)
    """The output projection carries a bias whenever `attention_bias` is true (Llama, Qwen3, Gemma,
    gpt-oss: `bias=config.attention_bias`); False where o_proj never has one (Qwen2)."""
    qk_norm: str = key("qk_norm", "choice", allowed=QK_NORMS, default="none")
    """One of QK_NORMS: how q and k are normalised per head before attention."""
    qk_norm_flag: str | None = key("qk_norm_flag", default=None)
    """Config key that switches the qk norm on (Llama 4 `use_qk_norm`); None: always on."""
    router_bias: bool = key("router_bias", default=False)
    """The router always carries a per-expert bias (gpt-oss GptOssTopKRouter)."""
    router_bias_methods: tuple[str, ...] = key("router_bias_methods", default=())
    """`topk_method` values whose router carries a per-expert score-correction bias."""
    expert_bias: bool = key("expert_bias", default=False)
    """Each expert's gate/up and down projections carry biases (gpt-oss GptOssExperts)."""
    attention_sinks: bool = key("attention_sinks", default=False)
    """One learned sink logit per query head per layer (gpt-oss `self_attn.sinks`)."""
    norms_per_layer: int = key("norms_per_layer", _norms, default=2)
    """RMSNorms per decoder layer: 2 (input, post-attention), 4 with Gemma's extra
    pre-/post-feedforward norms, 1 where each block is one mixer or one FFN (Nemotron-H)."""
    activation: str = key("activation", "choice", allowed=ACTIVATIONS, default="silu")
    """One of ACTIVATIONS."""
    windows: str = key("windows", "choice", allowed=WINDOW_RULES, default="none")
    """One of WINDOW_RULES: which layers attend within a sliding window or chunk."""
    text_config: bool = key("text_config", default=False)
    """The decoder's fields sit under `text_config` (multimodal checkpoints: Gemma 3, Llama 4); the
    vision tower beside it is not modelled."""
    dense_width_key: str = key("dense_width_key", default="intermediate_size")
    """Config key of the dense MLP's width (Llama 4: intermediate_size_mlp, since its
    intermediate_size is the experts')."""
    layout: str = key("layout", "choice", allowed=LAYOUTS, default="uniform")
    """One of LAYOUTS: which layers are linear, state-space, sliding or full."""
    indexer: bool = key("indexer", default=False)
    """MLA with DeepSeek Sparse Attention: a lightning indexer (index_n_heads x index_head_dim) picks
    the index_topk tokens each query attends to (DeepSeek-V3.2, GLM-5)."""
    output_gate_key: str | None = key("output_gate_key", default=None)
    """Config key that switches on a sigmoid gate on the attention output, computed by q_proj
    beside the queries (Qwen3.5 / Qwen3-Next `attn_output_gate`)."""
    global_heads: bool = key("global_heads", default=False)
    """Full-attention layers have their own KV heads and head size (`num_global_key_value_heads`,
    `global_head_dim`) and may use keys as values (`attention_k_eq_v`): Gemma 4."""
    router_bias_flag: str | None = key("router_bias_flag", default=None)
    """Config key that gives the router a per-expert score-correction bias (MiniMax-M2
    `use_routing_bias`)."""
    state_dtype_keys: tuple[str, ...] = key("state_dtype_keys", default=())
    """Config keys naming the dtype of the linear-attention / Mamba state (`mamba_ssm_dtype`)."""
    defaults: tuple[tuple[str, Any], ...] = key("defaults", _defaults, default=())
    """Values the HF config class fills for keys a checkpoint may omit, applied before reading."""
    norm: str = "rmsnorm"
    """Every family read here normalises with RMSNorm (one weight vector, no bias)."""
    source: str = key("source")

    @property
    def mlp_matrices(self) -> int:
        """Weight matrices of one MLP or expert: gate, up and down (3), or up and down (2: relu2)."""
        return 2 if self.activation == "relu2" else 3


SIGNATURES: tuple[tuple[str, tuple[str, ...]], ...]
"""Fields that name a family's architecture, most specific first (`[[signatures]]`): an unknown
`model_type` whose config has all of one row's keys (under `text_config` for the multimodal families,
else at the top: then the text-only sibling, `TEXT_ONLY`) is read as that family, with a warning."""

TEXT_ONLY: dict[str, str]
"""The family a signature means when its keys sit at the top level rather than under text_config."""


def read_families(raw: dict, where: str = WHERE) -> tuple[tuple[Family, ...], tuple, dict[str, str]]:
    """(FAMILIES, SIGNATURES, TEXT_ONLY) from a parsed families file, every table read strictly."""
    top = Table(raw, "", where)
    table = top.table("families")
    families, seen = [], {}
    for name, _ in table.entries():
        check_name(name, table.at(name))
        if fold(name) in seen:
            raise table.fail(name, f"the family {seen[fold(name)]!r} has this name in another case")
        seen[fold(name)] = name
        families.append(read_record(Family, table.table(name), model_type=name))
    known = [f.model_type for f in families]

    def family(t: Table, k: str) -> str:
        if t.text(k) not in known:
            raise UnknownNameError(f"family in {t.at(k)}", t.text(k), known)
        return t.text(k)

    signatures = []
    for i, row in enumerate(top.raw("signatures", types=list)):
        r = Table(row, f"signatures[{i}]", where)
        signatures.append((family(r, "family"), r.texts("keys")))
        r.done()
    text_only = top.table("text_only")
    pairs = {k: family(text_only, k) for k, _ in text_only.entries()}
    if set(pairs) - set(known):
        raise CatalogError(f"{text_only.where}: {sorted(set(pairs) - set(known))} are not families")
    text_only.done()
    top.done()
    return tuple(families), tuple(signatures), pairs


def load_families() -> tuple[tuple[Family, ...], tuple, dict[str, str]]:
    """The built-in table (catalog/families.toml), built once per content."""
    text = read_builtin(WHERE)
    return cached("families", [text], lambda: read_families(parse_toml(text, WHERE)))


FAMILIES, SIGNATURES, TEXT_ONLY = load_families()

BY_MODEL_TYPE: dict[str, Family] = {f.model_type: f for f in FAMILIES}
BY_ARCHITECTURE: dict[str, Family] = {a: f for f in FAMILIES for a in f.architectures}


__all__ = [
    "ACTIVATIONS",
    "ATTENTION_KINDS",
    "BY_ARCHITECTURE",
    "BY_MODEL_TYPE",
    "FAMILIES",
    "Family",
    "LAYOUTS",
    "MOE_LAYOUTS",
    "QK_NORMS",
    "SIGNATURES",
    "TEXT_ONLY",
    "WINDOW_RULES",
    "load_families",
    "read_families",
]
