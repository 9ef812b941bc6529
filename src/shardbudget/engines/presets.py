"""Engine presets: typed, validated views of `engines/<engine>.toml`, and the all-reduce rules.

Each TOML file states, with sources, what one inference engine at a pinned release runs in a decode
step: whether CUDA graphs are on and up to which batch, host time per step, which all-reduce
kernel runs for a given group and message size, whether all-reduce is fused with residual +
RMSNorm, what memory the engine reserves beyond weights and KV, and the CLI flags of a launch line.
Quantities are written with units in the files ("8 MiB", "1.5 us"); here they are SI floats
(bytes, seconds). See `shardbudget.units` for the glossary (MiB vs MB, per-rank message size).

`rules.allreduce_choice` encodes the dispatch chains read from the engines' sources:

vLLM 0.11.0 (and `eager`)
    custom all-reduce (world size 2/4/6/8, one node, P2P, NVLink between every pair above two
    GPUs, message < 8 MiB — or < a per-SM cap when torch symmetric memory is on) -> torch
    symmetric memory (Hopper/Blackwell with multicast, message <= a per-SM, per-world-size cap;
    multimem for some world sizes, two-shot otherwise) -> NCCL. Inside the custom kernel: 2 GPUs
    always one-shot; else one-shot below 512 KiB (<= 4 GPUs) / 256 KiB (<= 8 GPUs), two-shot above.
SGLang 0.5.14
    CustomAllReduceV2 (tuned.py) on CUDA with every pair on NVLink: one-shot to a per-SM,
    per-world-size size, two-shot to 16 MiB; two PCIe GPUs run the older kernel (vLLM's, 8 MiB);
    symmetric memory, MSCCL++ and NVLS are opt-in, so NCCL above.
TensorRT-LLM 1.3 (AllReduceStrategy AUTO)
    NCCL off NVLink, across nodes, or above the workspace (8 MB, 16 MB for 2 GPUs); else its
    lookup table by SM (90 / 100), TP, hidden size and tokens: one-shot, two-shot or NCCL (SM 9.0,
    TP8, hidden 8192: one-shot to 32 tokens, NCCL from 64). TensorRT-LLM 1.0 (`trtllm-1.0`): the
    same fallbacks, then NCCL above 128 tokens and one-shot to 128.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from .. import units
from .kernel_table import KERNEL_ROLES, moe_dispatch, per_arch_seconds, rules
from .tuned import FlashInferAllReduce, TunedCustom, capability, load_tuned, sizes_by_world
from ..datacache import cached, read_builtin
from ..datafile import Table, key, parse_toml, read_record, world_size
from ..defaults import ENGINE_NAMES
from ..errors import CatalogError, UnknownNameError

__all__ = [
    "ALLREDUCE_KINDS",
    "EnginePreset",
    "capability",
    "engine_name",
    "load_engine",
    "read_engine",
    "sizes_by_world",
]

ALLREDUCE_KINDS = (
    "none",
    "one-shot",
    "two-shot",
    "flashinfer-one-shot",
    "flashinfer-two-shot",
    "symm-mem-multimem",
    "symm-mem-two-shot",
    "mnnvl",
    "nccl",
)
"""What `allreduce_choice` returns: no collective (one GPU), the engine's custom one-shot or
two-shot IPC kernel, FlashInfer's one-shot or two-shot (vLLM 0.34's first choice), torch
symmetric-memory all-reduce (multimem = NVLS in-switch reduction, or its two-shot), the engine's
multi-node NVLink kernel (TensorRT-LLM MNNVL), or NCCL."""

_ORDER_ITEMS = ("custom", "symm-mem", "nccl")
_FRACTION_OF = ("total", "static", "free_after_weights")
_FRACTION_KEYS = ("gpu_memory_utilization", "mem_fraction_static", "kv_cache_free_gpu_memory_fraction")


# --- how the tables' special fields are read (datafile.key kinds) -------------------------------------


def _one_shot_below(t: Table, name: str) -> tuple[tuple[int, float], ...]:
    rows = []
    for i, row in enumerate(t.raw(name, types=list)):
        r = Table(row, f"{t.path}.{name}[{i}]", t.file)
        rows.append((world_size(r.raw("max_world_size", types=int), r.at("max_world_size")), r.size("bytes")))
        r.done()
    return tuple(sorted(rows))


_STRATEGY_HIDDEN, _STRATEGY_TOKENS = tuple(2**k for k in range(7, 14)), tuple(2**k for k in range(15))


def _strategy(t: Table, name: str) -> Mapping[str, Mapping[int, tuple[str, ...]]]:
    s = t.table(name)
    if tuple(s.raw("hidden", types=list)) != _STRATEGY_HIDDEN or tuple(s.raw("tokens", types=list)) != _STRATEGY_TOKENS:
        raise CatalogError(f"{s.where}: hidden must be 128 ... 8192 and tokens 1 ... 16384, powers of two")
    out = {}
    for sm, _ in s.entries():
        if sm in ("hidden", "tokens"):
            continue
        sub = s.table(sm)
        rows = {world_size(ws, sub.at(ws)): tuple(sub.texts(ws)) for ws, _ in sub.entries()}
        for ws, r in rows.items():
            if len(r) != 7 or any(len(x) != 15 or set(x) - set("12N") for x in r):
                raise CatalogError(f"{sub.at(str(ws))}: expected 7 strings of 15 letters 1 / 2 / N")
        out[capability(sm)] = MappingProxyType(rows)
    return MappingProxyType(out)


def _tuned(t: Table, name: str) -> TunedCustom:
    return load_tuned(t.table(name), sizes_by_world)


def _capabilities_list(t: Table, name: str) -> tuple[str, ...]:
    return tuple(capability(a) for a in t.texts(name))


def _multimem(t: Table, name: str) -> Mapping[str, tuple[int, ...]]:
    m = t.table(name)
    out = MappingProxyType({capability(a): m.world_sizes(a) for a, _ in m.entries()})
    m.done()
    return out


def _spans(t: Table, name: str) -> Mapping[int, tuple[float, float]]:
    spans = t.table(name)
    out = {}
    for w, pair in spans.entries():
        if not isinstance(pair, list) or len(pair) != 2:
            raise spans.fail(w, f"expected [lower, upper] sizes, got {pair!r}")
        try:
            lo, hi = (units.parse_bytes(v, what=spans.at(w)) for v in pair)
        except units.UnitError as err:
            raise CatalogError(str(err)) from None
        out[world_size(w, spans.at(w))] = (lo, hi)
    return MappingProxyType(out)


def _order(t: Table, name: str) -> tuple[str, ...]:
    order = t.texts(name)
    for item in order:
        if item not in _ORDER_ITEMS:
            raise UnknownNameError(f"all-reduce implementation in {t.at(name)}", item, _ORDER_ITEMS)
    return order


def _rows_by_memory(t: Table, name: str, columns: tuple[str, ...]) -> tuple[tuple[float, ...], ...]:
    """Rows `{ below = "35 GiB", <column> = n, ... }`, in order: (below bytes, n, ...)."""
    out = []
    for i, row in enumerate(t.raw(name, types=list)):
        r = Table(row, f"{t.path}.{name}[{i}]", t.file)
        out.append((r.size("below"), *(r.count(c) for c in columns)))
        r.done()
    return tuple(out)


def _graph_rows(t: Table, name: str) -> tuple[tuple[float, int, int], ...]:
    table = t.table(name)
    rows = _rows_by_memory(table, "rows", ("tp_lt_4", "tp_ge_4"))
    table.done()
    return rows


def _chunk_rows(t: Table, name: str) -> tuple[tuple[float, int], ...]:
    return _rows_by_memory(t, name, ("tokens",))


# --- the preset's records: each field's `key` is what its table may hold (datafile) -------------------


@dataclass(frozen=True, kw_only=True)
class CudaGraphs:
    decode: bool = key("decode")
    """Decode batches are captured as CUDA graphs by default."""
    max_batch: int = key("max_batch", "count")
    """Largest captured decode batch (sequences) with default settings; larger batches run eagerly."""
    max_batch_estimate: bool = key("max_batch_estimate", default=False)
    max_batch_by_memory: tuple[tuple[float, int, int], ...] = key("max_batch_by_memory", _graph_rows, default=())
    """SGLang: (GPU memory below, bytes; batch at TP < 4; at TP >= 4), first row that holds."""
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class Fusions:
    """Kernel fusions the engine's compiler applies by default (`[fusions]`; all off without it)."""

    norm_quant: bool = key("norm_quant", default=False)
    """FP8 activation quantisation runs inside the norm or activation that writes a GEMM's input
    (vLLM's -O2 norm + quant and activation + quant fusions): no quant kernel of its own there."""
    source: str = key("source", default="")


@dataclass(frozen=True, kw_only=True)
class HostOverhead:
    per_step_s: float = key("per_step", "seconds")
    """Host time per decode step the GPU waits for (scheduling, input preparation, sampling), s."""
    per_kernel_launch_s: float = key("per_kernel_launch", "seconds")
    """Gap added per kernel launch (inside a graph, or the host launch without graphs), s."""
    per_seq_s: float = key("per_seq", "seconds", default=20e-6)
    """Host time per sequence per step (sampling, detokenisation hand-off, scheduler bookkeeping), s."""
    per_collective_s: float = key("per_collective_copy", "seconds", default=0.0)
    """Extra host time per collective without graphs (enqueue, the custom kernel's input copy), s."""
    jitter_s: float = key("jitter", "seconds", default=0.0)
    """Without graphs each rank's host launches on its own: the standard deviation of one rank's
    host time between two collectives, s. Each collective then waits for the slowest rank."""
    overlap_scheduler: bool = key("overlap_scheduler", default=False)
    """The host does a step's per-sequence work while the GPU runs another step (SGLang's overlap
    scheduler and TensorRT-LLM's PyTorch-flow one prepare step N + 1 during step N; vLLM 0.6's
    asynchronous output processor handles step N's outputs during step N + 1; each on by default):
    per_seq's work is hidden behind the GPU's step and adds only where it is longer; per_step stays."""
    multi_step: bool = key("multi_step", default=False)
    """The release runs several decode steps per scheduler call where asked (vLLM 0.5.5-0.8's
    --num-scheduler-steps): per_step, the round trip, is then paid once per that many steps."""
    estimate: bool = key("per_step_estimate", default=False)
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class CustomAllReduce:
    """The engine's one-shot / two-shot IPC all-reduce kernel and when it is eligible."""

    world_sizes: tuple[int, ...] = key("world_sizes")
    single_node: bool = key("single_node")
    needs_p2p: bool = key("needs_p2p")
    needs_nvlink_above_two: bool = key("needs_nvlink_above_two")
    """More than two GPUs must all be NVLink-connected (vLLM/SGLang `fully_connected`)."""
    needs_nvlink: bool = key("needs_nvlink", default=False)
    """Every group must be NVLink-connected, two GPUs included (TensorRT-LLM)."""
    max_bytes: float = key("max_bytes", "size")
    """Largest message (bytes per rank) the kernel takes; larger falls through."""
    max_bytes_two_gpus: float | None = key("max_bytes_ws2", "size", default=None)
    """A different limit for two GPUs (TensorRT-LLM's 16 MB workspace), else None."""
    max_bytes_inclusive: bool = key("max_bytes_inclusive")
    """True: message <= max_bytes qualifies; False: message < max_bytes (vLLM's strict test)."""
    two_gpus_always_one_shot: bool = key("two_gpus_always_one_shot", default=False)
    one_shot_below: tuple[tuple[int, float], ...] = key("one_shot_below", _one_shot_below, default=())
    """(largest world size, bytes): one-shot when world size <= it and message < bytes."""
    max_bytes_with_symm_mem: Mapping[str, Mapping[int, float]] = key(
        "max_bytes_with_symm_mem", sizes_by_world, factory=lambda: MappingProxyType({})
    )
    """[arch][world size] -> the lower limit vLLM uses when torch symmetric memory is on."""
    strategy: Mapping[str, Mapping[int, tuple[str, ...]]] | None = key("strategy", _strategy, default=None)
    """TensorRT-LLM's lookup table: [capability][world size] -> one string per hidden size (128 ...
    8192, by floor(log2)), one letter per token count (1 ... 16384, by floor(log2)): '1' one-shot,
    '2' two-shot, 'N' NCCL. None: the engine decides by bytes."""
    tuned: TunedCustom | None = key("tuned", _tuned, default=None)
    """A newer kernel the engine runs first where it is eligible (tuned.py), else None."""
    nccl_above_tokens: int | None = key("nccl_above_tokens", "count", default=None)
    one_shot_max_tokens: int | None = key("one_shot_max_tokens", "count", default=None)
    """TensorRT-LLM 1.0's rule by tokens: NCCL above `nccl_above_tokens`, one-shot to
    `one_shot_max_tokens`, two-shot between. None: the engine decides by bytes or its table."""
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class SymmMem:
    """torch symmetric-memory all-reduce (vLLM SymmMemCommunicator)."""

    default_enabled: bool = key("default_enabled")
    archs: tuple[str, ...] = key("archs", _capabilities_list)
    needs_multicast: bool = key("needs_multicast")
    max_bytes: Mapping[str, Mapping[int, float]] = key("max_bytes", sizes_by_world)
    """[arch][world size] -> largest message (inclusive), bytes."""
    multimem_world_sizes: Mapping[str, tuple[int, ...]] = key("multimem_world_sizes", _multimem)
    across_hosts: bool = key("across_hosts", default=False)
    """Runs across the hosts of one NVLink domain (torch's fabric-handle rendezvous on an NVL72)."""
    dtype: str = key("dtype", default="")
    """The input dtype it takes (bf16), as the file states it."""
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class NcclSymm:
    """When the engine sends an all-reduce to NCCL's symmetric kernels once its switch is on (vLLM
    should_nccl_symm_mem_allreduce): groups of `min_world_size`+, outside the custom kernel's
    preferred (lower, upper) range for that world size, always above `always_above` GPUs."""

    switch: str = key("switch")
    """The engine's flag or environment variable that turns it on (off by default)."""
    min_world_size: int = key("min_world_size", "count")
    custom_preferred: Mapping[int, tuple[float, float]] = key("custom_preferred", _spans)
    """[world size] -> (lower, upper) bytes: NCCL symmetric only at <= lower or >= upper."""
    always_above: int = key("always_above_world_size", "count")
    source: str = key("source")

    def takes(self, world_size: int, msg_bytes: float) -> bool:
        if world_size < self.min_world_size:
            return False
        span = self.custom_preferred.get(world_size)
        if span is not None:
            return msg_bytes <= span[0] or msg_bytes >= span[1]
        return world_size > self.always_above


@dataclass(frozen=True, kw_only=True)
class Mnnvl:
    """The engine's multi-node NVLink all-reduce (TensorRT-LLM MNNVLAllReduce): taken first when the
    group spans hosts of one NVLink domain with aarch64 (Grace) hosts, at any world size."""

    max_bytes: float = key("max_bytes", "size")
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class AllReducePolicy:
    order: tuple[str, ...] = key("order", _order)
    fused_residual_rmsnorm: bool = key("fused_residual_rmsnorm")
    """All-reduce, residual add and RMSNorm run as one kernel by default."""
    fused_residual_rmsnorm_auto: tuple[str, ...] = key("fused_residual_rmsnorm_auto", rules, default=())
    """model_type@arch where the engine turns that fusion on by itself (one node, no DP attention)."""
    custom: CustomAllReduce | None = key("custom", CustomAllReduce, default=None)
    symm_mem: SymmMem | None = key("symm_mem", SymmMem, default=None)
    mnnvl: Mnnvl | None = key("mnnvl", Mnnvl, default=None)
    nccl_symm: NcclSymm | None = key("nccl_symm", NcclSymm, default=None)
    """The engine's gate for NCCL's symmetric kernels (first in its order when switched on)."""
    flashinfer: FlashInferAllReduce | None = key("flashinfer", FlashInferAllReduce, default=None)
    """FlashInfer's all-reduce, before the custom kernel (vLLM 0.34), else None."""
    flashinfer_allreduce: bool = key("flashinfer_allreduce", default=False)
    torch_symm_mem_default: bool = key("torch_symm_mem_default", default=False)
    mscclpp_default: bool = key("mscclpp_default", default=False)
    nccl_nvls_default: bool = key("nccl_nvls_default", default=False)
    """Opt-in all-reduce paths the engine has, off by default (stated, not priced)."""
    inherits: str = key("inherits", default="")
    """The preset whose rule this one restates (eager: vllm's)."""
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class MemoryRule:
    """SGLang's default --mem-fraction-static, computed at launch from the GPU's memory and the plan
    (server_args.py _handle_gpu_memory_settings): (gpu_mem - reserved) / gpu_mem, reserved from these."""

    reserved_base_bytes: float = key("reserved_base", "size")
    reserved_per_chunked_prefill_token_bytes: float = key("reserved_per_chunked_prefill_token", "size")
    reserved_per_cuda_graph_bs_bytes: float = key("reserved_per_cuda_graph_bs", "size")
    reserved_per_tp_pp_over_8_bytes: float = key("reserved_per_tp_pp_over_8", "size")
    reserved_min_large_gpu_bytes: float = key("reserved_min_large_gpu", "size")
    reserved_min_large_gpu_above_bytes: float = key("reserved_min_large_gpu_above", "size")
    chunked_prefill_by_memory: tuple[tuple[float, int], ...] = key("chunked_prefill_by_memory", _chunk_rows)
    """(GPU memory below, bytes; the chunked-prefill tokens), first row that holds."""


@dataclass(frozen=True, kw_only=True)
class MemoryPolicy:
    fraction: float
    """vLLM gpu_memory_utilization / SGLang mem_fraction_static fallback / TRT-LLM
    kv_cache_free_gpu_memory_fraction."""
    fraction_of: str = key("utilization_of", "choice", allowed=_FRACTION_OF)
    """'total' (vLLM: share of device memory), 'static' (SGLang: weights and KV cache alone) or
    'free_after_weights' (TRT-LLM: share of what is free after weights and buffers, for the KV cache)."""
    cuda_context_bytes: float = key("cuda_context", "size", default=0.0)
    cuda_graph_pool_bytes: float = key("cuda_graph_pool", "size", default=0.0)
    custom_ar_buffers_bytes: float = key("custom_ar_buffers", "size", default=0.0)
    nccl_buffers_bytes: float = key("nccl_buffers", "size", default=0.0)
    allreduce_workspace_bytes: float = key("allreduce_workspace", "size", default=0.0)
    """TensorRT-LLM's all-reduce IPC workspace (stated, inside its fraction's reserve)."""
    max_num_seqs: int | None = key("max_num_seqs", "count", default=None)
    max_num_batched_tokens: int | None = key("max_num_batched_tokens", "count", default=None)
    """The profiling pass's sequences and tokens (vLLM), where the engine states them."""
    sampler_bytes_per_logit: float | None = key("sampler_bytes_per_logit", "number", default=None)
    """Bytes the profiling pass's sampler holds per sequence and vocabulary entry, the logits gathered
    whole on every TP rank and sampled after the forward pass has freed its activations (the peak is
    the larger of the two); None: the older estimate, fp32 logits of vocab / tp added to the forward's."""
    kv_margin_floor_bytes: float = key("kv_margin_floor", "size", default=0.0)
    kv_margin_of_activations: float = key("kv_margin_of_activations", "fraction", default=0.0)
    """What the engine keeps free beyond everything it measured, max(floor, share x activation peak):
    vLLM's extensible KV cache (measure_kv_cache_bytes); 0 where the engine keeps none."""
    reserve: MemoryRule | None = None
    """SGLang: the fraction computed at launch (`MemoryRule`); None: `fraction` is the default."""
    source: str = key("source")

    @property
    def computed_default(self) -> bool:
        """The engine computes its default fraction at launch from the GPU and the plan (SGLang's
        reserve rule, `default_memory_fraction`); `fraction` is only its fallback."""
        return self.reserve is not None


@dataclass(frozen=True, kw_only=True)
class EnginePreset:
    name: str
    version: str
    launcher: str
    """The command a launch line starts with ("vllm serve", "trtllm-serve", ...)."""
    source: str
    cuda_graphs: CudaGraphs
    host: HostOverhead
    allreduce: AllReducePolicy
    memory: MemoryPolicy
    kernels: Mapping[str, str]
    """Role -> kernel names (documentation only); the launch flags are `engines.cli_tables.load_cli`."""
    fused_allreduce_norm_auto: tuple[str, ...] = ()
    """model_type@arch where the engine turns all-reduce + residual + RMSNorm fusion on by itself
    (one node, no DP attention): [allreduce] fused_residual_rmsnorm_auto."""
    nccl: str = ""
    """The NCCL release the pinned version installs (its torch's nvidia-nccl pin), "" if not known."""
    fused_moe_routing_auto: tuple[str, ...] = ()
    """model_type@arch[:quantized|:fp4] whose MoE the engine runs as one fused routed-experts call
    (routing, GEMMs, finalize: no separate top-k / align / activation / combine kernel); '*' for any
    model type, ':fp4' for experts computed in an FP4 format (NVFP4 / MXFP4) alone."""
    fused_moe_routing_over_deepep: tuple[str, ...] | None = None
    """The rules of `fused_moe_routing_auto` that still hold where expert parallelism dispatches over
    DeepEP (its kernels need another layout); None: all of them."""
    moe_call_floor: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """[arch] -> the floor (s) of one fused-MoE call of this release's kernel at small batch, where it
    differs from catalog/kernels.toml's grouped_moe_gemm floor (`[kernels.moe_call_floor]`)."""
    fusions: Fusions = Fusions()
    moe_dispatch: str = "all-to-all"
    """How the MoE layers of a DP-attention group reach their experts under the engine's default
    (--moe-a2a nccl): all-to-all (NCCL's, of each token's expert copies), or
    allgather-reducescatter (every rank gathers every rank's tokens, computes its own experts on
    them, and the outputs are reduce-scattered back): `[kernels] moe_dispatch`, MOE_DISPATCH."""
    moe_dispatch_quantized: bool = False
    """Under allgather-reducescatter, the tokens are quantized to the experts' input format before
    they are gathered (vLLM), not after (SGLang): `[kernels] moe_dispatch_quantized`."""
    released: str = ""
    """The release's date as the file states it ('2026-04-03', '2026-11'), "" if not stated."""

    def fused_for(
        self,
        model_type: str,
        arch: str,
        *,
        one_node: bool,
        quantized: bool,
        fp4_experts: bool = False,
        deepep: bool = False,
    ) -> tuple[bool, bool]:
        """(all-reduce + residual + RMSNorm fused, MoE routed in one fused call) for a model on a GPU
        generation: the preset's defaults and its model_type@arch rules (the first needs one node
        without DP attention; the second, where EP dispatches over DeepEP, the rules that hold there)."""
        ar = self.allreduce.fused_residual_rmsnorm or (
            one_node and self.runs(self.fused_allreduce_norm_auto, model_type, arch, quantized=quantized)
        )
        moe_rules = self.fused_moe_routing_auto
        if deepep and self.fused_moe_routing_over_deepep is not None:
            moe_rules = self.fused_moe_routing_over_deepep
        return ar, self.runs(moe_rules, model_type, arch, quantized=quantized, fp4_experts=fp4_experts)

    def runs(
        self, rules: tuple[str, ...], model_type: str, arch: str, *, quantized: bool, fp4_experts: bool = False
    ) -> bool:
        """Whether one of `rules` matches: model_type@arch ('*' any model type), ':quantized' for
        quantized GEMMs only, ':fp4' for experts computed in FP4 only."""
        held = {"": True, "quantized": quantized, "fp4": fp4_experts}
        for rule in rules:
            target, _, need = rule.partition(":")
            model, _, where = target.partition("@")
            if model in ("*", model_type) and where == arch and held.get(need, False):
                return True
        return False


# --- loading --------------------------------------------------------------------------------


def read_engine(raw: Mapping[str, Any], where: str) -> EnginePreset:
    """Validate one parsed preset file into an `EnginePreset`: every table read strictly (a key no
    record declares is refused with the file, the table and the nearest known key), [cli] too."""
    from .cli_tables import read_cli  # the launch tables' records: deploy's, built here only to check them

    top = Table(dict(raw), "", where)
    eng = top.table("engine")
    allreduce = read_record(AllReducePolicy, top.table("allreduce"))
    if "custom" in allreduce.order and allreduce.custom is None:
        raise CatalogError(f"{where}: allreduce.order names 'custom' but [allreduce.custom] is missing")
    if "symm-mem" in allreduce.order and allreduce.symm_mem is None:
        raise CatalogError(f"{where}: allreduce.order names 'symm-mem' but [allreduce.symm_mem] is missing")
    kernels, fusions = top.opt_table("kernels"), top.opt_table("fusions")
    read_cli(top.table("cli"), eng.text("name"))
    preset = EnginePreset(
        name=eng.text("name"),
        version=eng.text("version"),
        launcher=eng.text("launcher"),
        source=eng.text("source"),
        nccl=eng.text("nccl", ""),
        cuda_graphs=read_record(CudaGraphs, top.table("cuda_graphs")),
        host=read_record(HostOverhead, top.table("host")),
        allreduce=allreduce,
        memory=_memory(top.table("memory")),
        kernels=MappingProxyType({r: kernels.text(r) for r in KERNEL_ROLES if kernels and kernels.has(r)}),
        fused_allreduce_norm_auto=allreduce.fused_residual_rmsnorm_auto,
        fused_moe_routing_auto=(
            rules(kernels, "fused_moe_routing_auto") if kernels and kernels.has("fused_moe_routing_auto") else ()
        ),
        fused_moe_routing_over_deepep=(
            rules(kernels, "fused_moe_routing_over_deepep")
            if kernels and kernels.has("fused_moe_routing_over_deepep")
            else None
        ),
        moe_call_floor=per_arch_seconds(kernels, "moe_call_floor"),
        fusions=read_record(Fusions, fusions) if fusions is not None else Fusions(),
        moe_dispatch=moe_dispatch(kernels),
        moe_dispatch_quantized=kernels.flag("moe_dispatch_quantized", False) if kernels else False,
        released=eng.text("released", ""),
    )
    eng.text("allreduce_commit", "")  # the commit the all-reduce rule was read at, for the reader
    for table in (eng, kernels, top):
        if table is not None:
            table.done()
    return preset


def _memory(mem: Table) -> MemoryPolicy:
    """[memory]: one of the three engines' fraction keys, the sizes, and SGLang's reserve rule."""
    given = [k for k in _FRACTION_KEYS if mem.has(k)]
    if len(given) != 1:
        raise CatalogError(
            f"{mem.where}: needs one of {', '.join(_FRACTION_KEYS)}" + (f", not {len(given)}" if given else "")
        )
    reserve = read_record(MemoryRule, mem, done=False) if mem.has("reserved_base") else None
    return read_record(MemoryPolicy, mem, fraction=mem.fraction(given[0]), reserve=reserve)


def engine_name(name: str) -> str:
    """`name` if it is an engine (`ENGINE_NAMES`), else a one-line error with the closest."""
    if name not in ENGINE_NAMES:
        err = UnknownNameError("engine", name, ENGINE_NAMES)
        if "(known:" not in err.args[0]:  # an unknown release: every preset named, not only the closest
            err.args = (
                f"{err.args[0]} (presets: {', '.join(ENGINE_NAMES)}; `shardbudget engines` lists their releases)",
            )
        raise err
    return name


@lru_cache(maxsize=None)
def load_engine(name: str) -> EnginePreset:
    """The preset of one engine (`ENGINE_NAMES`: 'vllm', 'sglang', 'trtllm', 'eager', older releases)."""
    where = f"engines/{engine_name(name)}.toml"
    text = read_builtin(where)
    return cached(f"engine-{name}", [text], lambda: _read_text(text, where))


def _read_text(text: str, where: str) -> EnginePreset:
    return read_engine(parse_toml(text, where), where)
