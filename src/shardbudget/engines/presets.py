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
from .tuned import TunedCustom, load_tuned
from ..datacache import cached, read_builtin
from ..errors import CatalogError, UnknownNameError
from ..fabric.catalog import builtin_archs

ENGINE_NAMES = ("vllm", "sglang", "trtllm", "eager", "vllm-v0", "tgi", "sglang-0.4", "trtllm-1.0")
"""Engines with a preset file in this package; `vllm` is the default engine. vllm-v0 (vLLM 0.7's V0
engine) and tgi (text-generation-inference without CUDA graphs) are the older engines behind
published measurements in ../shared/data/decode_tp.csv; sglang-0.4 (SGLang 0.4.x, 2025) is the
release behind the 2025 SGLang rows of tests/validation/data; trtllm-1.0 (TensorRT-LLM 1.0.0) the
release behind measured_comm.csv's A100 and L40S TensorRT-LLM rows."""

CURRENT_ENGINES = ENGINE_NAMES[:4]
"""The engines users choose between today (vllm, sglang, trtllm, eager); the others price old rows."""

ALLREDUCE_KINDS = ("none", "one-shot", "two-shot", "symm-mem-multimem", "symm-mem-two-shot", "mnnvl", "nccl")
"""What `allreduce_choice` returns: no collective (one GPU), the engine's custom one-shot or
two-shot IPC kernel, torch symmetric-memory all-reduce (multimem = NVLS in-switch reduction, or
its two-shot), the engine's multi-node NVLink kernel (TensorRT-LLM MNNVL), or NCCL."""

_ORDER_ITEMS = ("custom", "symm-mem", "nccl")
_FRACTION_OF = ("total", "static", "free_after_weights")


@dataclass(frozen=True, kw_only=True)
class CudaGraphs:
    decode: bool
    """Decode batches are captured as CUDA graphs by default."""
    max_batch: int
    """Largest captured decode batch (sequences) with default settings; larger batches run eagerly."""
    source: str


@dataclass(frozen=True, kw_only=True)
class Fusions:
    """Kernel fusions the engine's compiler applies by default (`[fusions]`; all off without it)."""

    norm_quant: bool = False
    """FP8 activation quantisation runs inside the norm or activation that writes a GEMM's input
    (vLLM's -O2 norm + quant and activation + quant fusions): no quant kernel of its own there."""
    source: str = ""


@dataclass(frozen=True, kw_only=True)
class HostOverhead:
    per_step_s: float
    """Host time per decode step the GPU waits for (scheduling, input preparation, sampling), s."""
    per_kernel_launch_s: float
    """Gap added per kernel launch (inside a graph, or the host launch without graphs), s."""
    per_seq_s: float
    """Host time per sequence per step (sampling, detokenisation hand-off, scheduler bookkeeping), s."""
    per_collective_s: float
    """Extra host time per collective without graphs (enqueue, the custom kernel's input copy), s."""
    jitter_s: float
    """Without graphs each rank's host launches on its own: the standard deviation of one rank's
    host time between two collectives, s. Each collective then waits for the slowest rank."""
    estimate: bool
    source: str


@dataclass(frozen=True, kw_only=True)
class CustomAllReduce:
    """The engine's one-shot / two-shot IPC all-reduce kernel and when it is eligible."""

    world_sizes: tuple[int, ...]
    single_node: bool
    needs_p2p: bool
    needs_nvlink_above_two: bool
    """More than two GPUs must all be NVLink-connected (vLLM/SGLang `fully_connected`)."""
    needs_nvlink: bool
    """Every group must be NVLink-connected, two GPUs included (TensorRT-LLM)."""
    max_bytes: float
    """Largest message (bytes per rank) the kernel takes; larger falls through."""
    max_bytes_two_gpus: float | None
    """A different limit for two GPUs (TensorRT-LLM's 16 MB workspace), else None."""
    max_bytes_inclusive: bool
    """True: message <= max_bytes qualifies; False: message < max_bytes (vLLM's strict test)."""
    two_gpus_always_one_shot: bool
    one_shot_below: tuple[tuple[int, float], ...]
    """(largest world size, bytes): one-shot when world size <= it and message < bytes."""
    max_bytes_with_symm_mem: Mapping[str, Mapping[int, float]]
    """[arch][world size] -> the lower limit vLLM uses when torch symmetric memory is on."""
    strategy: Mapping[str, Mapping[int, tuple[str, ...]]] | None
    """TensorRT-LLM's lookup table: [capability][world size] -> one string per hidden size (128 ...
    8192, by floor(log2)), one letter per token count (1 ... 16384, by floor(log2)): '1' one-shot,
    '2' two-shot, 'N' NCCL. None: the engine decides by bytes."""
    tuned: TunedCustom | None = None
    """A newer kernel the engine runs first where it is eligible (tuned.py), else None."""
    nccl_above_tokens: int | None = None
    one_shot_max_tokens: int | None = None
    """TensorRT-LLM 1.0's rule by tokens: NCCL above `nccl_above_tokens`, one-shot to
    `one_shot_max_tokens`, two-shot between. None: the engine decides by bytes or its table."""
    source: str


@dataclass(frozen=True, kw_only=True)
class SymmMem:
    """torch symmetric-memory all-reduce (vLLM SymmMemCommunicator)."""

    default_enabled: bool
    archs: tuple[str, ...]
    needs_multicast: bool
    max_bytes: Mapping[str, Mapping[int, float]]
    """[arch][world size] -> largest message (inclusive), bytes."""
    multimem_world_sizes: Mapping[str, tuple[int, ...]]
    across_hosts: bool
    """Runs across the hosts of one NVLink domain (torch's fabric-handle rendezvous on an NVL72)."""
    source: str


@dataclass(frozen=True, kw_only=True)
class NcclSymm:
    """When the engine sends an all-reduce to NCCL's symmetric kernels once its switch is on (vLLM
    should_nccl_symm_mem_allreduce): groups of `min_world_size`+, outside the custom kernel's
    preferred (lower, upper) range for that world size, always above `always_above` GPUs."""

    switch: str
    """The engine's flag or environment variable that turns it on (off by default)."""
    min_world_size: int
    custom_preferred: Mapping[int, tuple[float, float]]
    """[world size] -> (lower, upper) bytes: NCCL symmetric only at <= lower or >= upper."""
    always_above: int
    source: str

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

    max_bytes: float
    source: str


@dataclass(frozen=True, kw_only=True)
class AllReducePolicy:
    order: tuple[str, ...]
    fused_residual_rmsnorm: bool
    """All-reduce, residual add and RMSNorm run as one kernel by default."""
    custom: CustomAllReduce | None
    symm_mem: SymmMem | None
    mnnvl: Mnnvl | None
    source: str
    nccl_symm: NcclSymm | None = None
    """The engine's gate for NCCL's symmetric kernels (first in its order when switched on)."""


@dataclass(frozen=True, kw_only=True)
class MemoryPolicy:
    fraction: float
    """vLLM gpu_memory_utilization / SGLang mem_fraction_static fallback / TRT-LLM
    kv_cache_free_gpu_memory_fraction."""
    fraction_of: str
    """'total' (vLLM, SGLang: share of device memory) or 'free_after_weights' (TRT-LLM: share of
    what is free after weights and buffers, given to the KV cache)."""
    cuda_context_bytes: float
    cuda_graph_pool_bytes: float
    custom_ar_buffers_bytes: float
    nccl_buffers_bytes: float
    rules: Mapping[str, Any]
    """The file's remaining keys (formulas and their bases), for reports."""
    source: str

    @property
    def computed_default(self) -> bool:
        """The engine computes its default fraction at launch from the GPU and the plan (SGLang's
        reserve rule, `default_memory_fraction`); `fraction` is only its fallback."""
        return "reserved_base" in self.rules


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
    cli: Mapping[str, str]
    """Role -> flag, e.g. 'tensor_parallel' -> '--tensor-parallel-size' (with its 'source')."""
    kernels: Mapping[str, str]
    """Role -> kernel names (documentation only)."""
    fused_allreduce_norm_auto: tuple[str, ...] = ()
    """model_type@arch where the engine turns all-reduce + residual + RMSNorm fusion on by itself
    (one node, no DP attention): [allreduce] fused_residual_rmsnorm_auto."""
    nccl: str = ""
    """The NCCL release the pinned version installs (its torch's nvidia-nccl pin), "" if not known."""
    fused_moe_routing_auto: tuple[str, ...] = ()
    """model_type@arch[:quantized] whose MoE the engine runs as one fused routed-experts call
    (routing, GEMMs, finalize: no separate top-k / align / activation / combine kernel)."""
    moe_call_floor: Mapping[str, float] = field(default_factory=lambda: MappingProxyType({}))
    """[arch] -> the floor (s) of one fused-MoE call of this release's kernel at small batch, where it
    differs from catalog/kernels.toml's grouped_moe_gemm floor (`[kernels.moe_call_floor]`)."""
    raw: Mapping[str, Any]
    """The parsed TOML, read-only, for fields a caller needs that are not typed here."""
    fusions: Fusions = Fusions()

    def fused_for(self, model_type: str, arch: str, *, one_node: bool, quantized: bool) -> tuple[bool, bool]:
        """(all-reduce + residual + RMSNorm fused, MoE routed in one fused call) for a model on a GPU
        generation: the preset's defaults and its model_type@arch rules (the first needs one node
        without DP attention)."""
        ar = self.allreduce.fused_residual_rmsnorm or (
            one_node and self.runs(self.fused_allreduce_norm_auto, model_type, arch, quantized=quantized))
        return ar, self.runs(self.fused_moe_routing_auto, model_type, arch, quantized=quantized)

    def runs(self, rules: tuple[str, ...], model_type: str, arch: str, *, quantized: bool) -> bool:
        """Whether one of `rules` (model_type@arch, ':quantized' for quantized GEMMs only) matches."""
        parts = (rule.partition(":") for rule in rules)
        return any(target == f"{model_type}@{arch}" and (need != "quantized" or quantized) for target, _, need in parts)


# --- loading --------------------------------------------------------------------------------

class _Table:
    """Read keys of one TOML table with messages that name the file, the table and the key."""

    def __init__(self, data: Any, where: str):
        if not isinstance(data, dict):
            raise CatalogError(f"{where}: expected a table, got {data!r}")
        self.data, self.where = data, where

    def get(self, key: str) -> Any:
        if key not in self.data:
            raise CatalogError(f"{self.where} is missing {key!r}")
        return self.data[key]

    def table(self, key: str) -> _Table:
        return _Table(self.get(key), f"{self.where}.{key}")

    def opt_table(self, key: str) -> _Table | None:
        return self.table(key) if key in self.data else None

    def text(self, key: str, default: str | None = None) -> str:
        value = self.data.get(key, default) if default is not None else self.get(key)
        if not isinstance(value, str):
            raise CatalogError(f"{self.where}.{key}: expected text, got {value!r}")
        return value

    def flag(self, key: str, default: bool | None = None) -> bool:
        value = self.data.get(key, default) if default is not None else self.get(key)
        if not isinstance(value, bool):
            raise CatalogError(f"{self.where}.{key}: expected true or false, got {value!r}")
        return value

    def count(self, key: str, default: int | None = None) -> int:
        value = self.data.get(key, default) if default is not None else self.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            raise CatalogError(f"{self.where}.{key}: expected a whole number >= 0, got {value!r}")
        return value

    def fraction(self, key: str) -> float:
        value = self.get(key)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1:
            raise CatalogError(f"{self.where}.{key}: expected a fraction in (0, 1], got {value!r}")
        return float(value)

    def seconds(self, key: str, default: str | None = None) -> float:
        return units.parse_seconds(self.text(key, default), what=f"{self.where}.{key}", allow_zero=True)

    def size(self, key: str, default: str | None = None) -> float:
        return units.parse_bytes(self.text(key, default), what=f"{self.where}.{key}", allow_zero=True,
                                 bare_ok=False)

    def sizes_by_world(self, key: str) -> Mapping[str, Mapping[int, float]]:
        """[arch] -> {world size: bytes} from tables like `[x.hopper] 2 = "64 MiB"`."""
        out: dict[str, Mapping[int, float]] = {}
        for arch, per_ws in self.table(key).data.items():
            sub = _Table(per_ws, f"{self.where}.{key}.{arch}")
            out[capability(arch)] = MappingProxyType({_world_size(ws, sub.where): sub.size(ws) for ws in sub.data})
        return MappingProxyType(out)

    def world_sizes(self, key: str) -> tuple[int, ...]:
        values = self.get(key)
        if not isinstance(values, list) or not values:
            raise CatalogError(f"{self.where}.{key}: expected a list of world sizes, got {values!r}")
        return tuple(_world_size(v, f"{self.where}.{key}") for v in values)


def capability(arch: str | None) -> str | None:
    """The engines' tables are keyed by CUDA compute capability ("9.0", "10.3"), as vLLM's are; a
    generation's name stands for its first capability (hopper -> 9.0, blackwell -> 10.0; catalog/archs.toml)."""
    generations = builtin_archs()
    return (generations[arch].capability or arch) if arch in generations else arch


def _world_size(value: Any, where: str) -> int:
    try:
        ws = int(value)
    except (TypeError, ValueError):
        raise CatalogError(f"{where}: world size {value!r} is not a whole number") from None
    if ws < 1 or isinstance(value, bool) or (isinstance(value, float) and value != ws):
        raise CatalogError(f"{where}: world size {value!r} must be a whole number >= 1")
    return ws


def _custom(t: _Table) -> CustomAllReduce:
    rules = []
    for i, row in enumerate(t.data.get("one_shot_below", [])):
        r = _Table(row, f"{t.where}.one_shot_below[{i}]")
        rules.append((_world_size(r.get("max_world_size"), r.where), r.size("bytes")))
    two_gpus = t.size("max_bytes_ws2") if "max_bytes_ws2" in t.data else None
    return CustomAllReduce(
        world_sizes=t.world_sizes("world_sizes"), single_node=t.flag("single_node"),
        needs_p2p=t.flag("needs_p2p"), needs_nvlink_above_two=t.flag("needs_nvlink_above_two"),
        needs_nvlink=t.flag("needs_nvlink", False), max_bytes=t.size("max_bytes"),
        max_bytes_two_gpus=two_gpus, max_bytes_inclusive=t.flag("max_bytes_inclusive"),
        two_gpus_always_one_shot=t.flag("two_gpus_always_one_shot", False),
        one_shot_below=tuple(sorted(rules)),
        max_bytes_with_symm_mem=(t.sizes_by_world("max_bytes_with_symm_mem")
                                 if "max_bytes_with_symm_mem" in t.data else MappingProxyType({})),
        strategy=_strategy(t.table("strategy")) if "strategy" in t.data else None, source=t.text("source"),
        tuned=load_tuned(t.table("tuned")) if "tuned" in t.data else None,
        nccl_above_tokens=t.count("nccl_above_tokens") if "nccl_above_tokens" in t.data else None,
        one_shot_max_tokens=t.count("one_shot_max_tokens") if "one_shot_max_tokens" in t.data else None)


_STRATEGY_HIDDEN, _STRATEGY_TOKENS = tuple(2 ** k for k in range(7, 14)), tuple(2 ** k for k in range(15))


def _strategy(t: _Table) -> Mapping[str, Mapping[int, tuple[str, ...]]]:
    if tuple(t.get("hidden")) != _STRATEGY_HIDDEN or tuple(t.get("tokens")) != _STRATEGY_TOKENS:
        raise CatalogError(f"{t.where}: hidden must be 128 ... 8192 and tokens 1 ... 16384, powers of two")
    out = {}
    for sm, per_ws in t.data.items():
        if sm in ("hidden", "tokens"):
            continue
        sub = _Table(per_ws, f"{t.where}.{sm}")
        rows = {_world_size(ws, sub.where): tuple(sub.get(ws)) for ws in sub.data}
        for ws, r in rows.items():
            if len(r) != 7 or any(len(x) != 15 or set(x) - set("12N") for x in r):
                raise CatalogError(f"{sub.where}.{ws}: expected 7 strings of 15 letters 1 / 2 / N")
        out[capability(sm)] = MappingProxyType(rows)
    return MappingProxyType(out)


def _symm_mem(t: _Table) -> SymmMem:
    multimem = t.table("multimem_world_sizes")
    return SymmMem(
        default_enabled=t.flag("default_enabled"), archs=tuple(capability(a) for a in t.get("archs")),
        needs_multicast=t.flag("needs_multicast"), max_bytes=t.sizes_by_world("max_bytes"),
        multimem_world_sizes=MappingProxyType({capability(a): multimem.world_sizes(a) for a in multimem.data}),
        across_hosts=t.flag("across_hosts", False), source=t.text("source"))


def _nccl_symm(t: _Table) -> NcclSymm:
    spans = t.table("custom_preferred")
    return NcclSymm(switch=t.text("switch"), min_world_size=t.count("min_world_size"),
                    custom_preferred=MappingProxyType({
                        int(w): (units.parse_bytes(lo, what=f"{spans.where}.{w}"),
                                 units.parse_bytes(hi, what=f"{spans.where}.{w}"))
                        for w, (lo, hi) in spans.data.items()}),
                    always_above=t.count("always_above_world_size"), source=t.text("source"))


def read_engine(raw: Mapping[str, Any], where: str) -> EnginePreset:
    """Validate one parsed preset file into an `EnginePreset` (errors name `where` and the key)."""
    top = _Table(dict(raw), where)
    eng, graphs, host, ar, mem, cli = (top.table(k) for k in
                                       ("engine", "cuda_graphs", "host", "allreduce", "memory", "cli"))
    order = tuple(ar.get("order"))
    for item in order:
        if item not in _ORDER_ITEMS:
            raise UnknownNameError(f"all-reduce implementation in {ar.where}.order", item, _ORDER_ITEMS)
    custom_t, symm_t = ar.opt_table("custom"), ar.opt_table("symm_mem")
    if "custom" in order and custom_t is None:
        raise CatalogError(f"{ar.where}.order names 'custom' but [{ar.where}.custom] is missing")
    if "symm-mem" in order and symm_t is None:
        raise CatalogError(f"{ar.where}.order names 'symm-mem' but [{ar.where}.symm_mem] is missing")
    fraction_key = next((k for k in ("gpu_memory_utilization", "mem_fraction_static",
                                     "kv_cache_free_gpu_memory_fraction") if k in mem.data), None)
    if fraction_key is None:
        raise CatalogError(f"{mem.where} needs one of gpu_memory_utilization, mem_fraction_static, "
                           f"kv_cache_free_gpu_memory_fraction")
    fraction_of = mem.text("utilization_of")
    if fraction_of not in _FRACTION_OF:
        raise UnknownNameError(f"memory fraction basis in {mem.where}.utilization_of", fraction_of,
                               _FRACTION_OF)
    kernels, fused = top.opt_table("kernels"), top.opt_table("fusions")
    return EnginePreset(
        name=eng.text("name"), version=eng.text("version"), launcher=eng.text("launcher"),
        source=eng.text("source"), nccl=eng.text("nccl", ""),
        cuda_graphs=CudaGraphs(decode=graphs.flag("decode"), max_batch=graphs.count("max_batch"),
                               source=graphs.text("source")),
        host=HostOverhead(per_step_s=host.seconds("per_step"),
                          per_kernel_launch_s=host.seconds("per_kernel_launch"),
                          per_seq_s=host.seconds("per_seq", "20 us"),
                          per_collective_s=host.seconds("per_collective_copy", "0 s"),
                          jitter_s=host.seconds("jitter", "0 s"),
                          estimate=host.flag("per_step_estimate", False), source=host.text("source")),
        allreduce=AllReducePolicy(order=order, fused_residual_rmsnorm=ar.flag("fused_residual_rmsnorm"),
                                  custom=_custom(custom_t) if custom_t is not None else None,
                                  symm_mem=_symm_mem(symm_t) if symm_t is not None else None,
                                  mnnvl=(Mnnvl(max_bytes=ar.table("mnnvl").size("max_bytes"),
                                               source=ar.table("mnnvl").text("source"))
                                         if "mnnvl" in ar.data else None),
                                  source=ar.text("source"),
                                  nccl_symm=_nccl_symm(ar.table("nccl_symm")) if "nccl_symm" in ar.data else None),
        memory=MemoryPolicy(
            fraction=mem.fraction(fraction_key), fraction_of=fraction_of,
            cuda_context_bytes=mem.size("cuda_context", "0 B"),
            cuda_graph_pool_bytes=mem.size("cuda_graph_pool", "0 B"),
            custom_ar_buffers_bytes=mem.size("custom_ar_buffers", "0 B"),
            nccl_buffers_bytes=mem.size("nccl_buffers", "0 B"),
            rules=MappingProxyType(dict(mem.data)), source=mem.text("source")),
        cli=MappingProxyType({k: v for k, v in cli.data.items() if isinstance(v, str)}),
        kernels=MappingProxyType({k: v for k, v in (kernels.data if kernels else {}).items()
                                  if isinstance(v, str)}),
        fused_allreduce_norm_auto=_rules(ar.data, "fused_residual_rmsnorm_auto", ar.where),
        fused_moe_routing_auto=_rules(kernels.data if kernels else {}, "fused_moe_routing_auto", "[kernels]"),
        moe_call_floor=_per_arch_seconds(kernels, "moe_call_floor"),
        raw=MappingProxyType(dict(raw)),
        fusions=(Fusions(norm_quant=fused.flag("norm_quant"), source=fused.text("source"))
                 if fused is not None else Fusions()))


def _per_arch_seconds(table: _Table | None, key: str) -> Mapping[str, float]:
    """An optional [arch] -> time sub-table, in seconds (empty when absent)."""
    t = table.opt_table(key) if table is not None else None
    archs = [k for k in (t.data if t else {}) if k not in ("source", "basis")]
    known = builtin_archs()
    for arch in archs:
        if arch not in known:
            raise UnknownNameError(f"GPU generation in {t.where}", arch, known)
    return MappingProxyType({arch: t.seconds(arch) for arch in archs})


def _rules(table: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    """A list of model_type@arch rules (empty when absent), each checked for its '@'."""
    rules = table.get(key, [])
    if not isinstance(rules, list) or not all(isinstance(r, str) and "@" in r for r in rules):
        raise CatalogError(f"{where}.{key}: expected a list of 'model_type@arch' strings, got {rules!r}")
    return tuple(rules)


@lru_cache(maxsize=None)
def load_engine(name: str) -> EnginePreset:
    """The preset of one engine (`ENGINE_NAMES`: 'vllm', 'sglang', 'trtllm', 'eager', older releases)."""
    if name not in ENGINE_NAMES:
        raise UnknownNameError("engine", name, ENGINE_NAMES)
    where = f"engines/{name}.toml"
    text = read_builtin(where)
    return cached(f"engine-{name}", [text], lambda: _read_text(text, where))


def _read_text(text: str, where: str) -> EnginePreset:
    import tomllib  # only when the preset is built, not when the cache has it
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise CatalogError(f"{where}: not valid TOML ({err})") from None
    return read_engine(raw, where)
