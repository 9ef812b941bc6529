"""The engines' all-reduce dispatch rules, read from their sources (presets.py's docstring lists
them per engine): which kernel an engine runs for one message on one group, as one of
`presets.ALLREDUCE_KINDS`."""

from __future__ import annotations

import math

from .presets import CustomAllReduce, EnginePreset, capability


def allreduce_choice(
    preset: EnginePreset,
    world_size: int,
    msg_bytes: float,
    nvlink: bool,
    p2p: bool,
    *,
    arch: str | None = None,
    nodes: int = 1,
    tokens: int | None = None,
    multicast: bool | None = None,
    symm_mem: bool | None = None,
    hosts: int = 1,
    mnnvl: bool = False,
    nccl_symmetric: bool = False,
) -> str:
    """Which all-reduce the engine runs for one message, as one of `ALLREDUCE_KINDS`.

    `msg_bytes` is the per-rank buffer (nccl-tests 'size'): tokens x hidden x 2 bytes for a bf16
    TP all-reduce. `nvlink`: every pair of the group is NVLink/NVSwitch-connected; `p2p`: GPUs can
    access each other's memory (NVLink, or PCIe P2P where the platform allows it). `arch` selects
    the per-SM tables: a compute capability ("9.0", "10.3") or a generation ("hopper"); `nodes`
    > 1 means the group spans nodes. `tokens` (rows of the all-reduced tensor) is needed for
    TensorRT-LLM, whose AUTO heuristic is expressed in tokens. `multicast` (NVLS available)
    defaults to `nvlink`; `symm_mem` overrides the preset's default (VLLM_ALLREDUCE_USE_SYMM_MEM).
    `hosts`: the hosts the group spans inside its NVLink domain (an NVL72 tray holds 4 GPUs): a
    kernel that needs one host (`single_node`) does not run on more. `mnnvl`: the hosts are Grace
    hosts of one multi-node NVLink domain, where TensorRT-LLM's MNNVL kernel runs first.
    `nccl_symmetric`: the engine's NCCL-symmetric switch is on (vLLM VLLM_USE_NCCL_SYMM_MEM=1):
    where its gate takes the size, NCCL (whose symmetric kernels then run) comes first.
    """
    if world_size < 1 or msg_bytes < 0 or nodes < 1:
        raise ValueError(f"world_size ({world_size}) and nodes ({nodes}) must be >= 1 and msg_bytes ({msg_bytes}) >= 0")
    if world_size == 1:
        return "none"
    policy, arch = preset.allreduce, capability(arch)
    if nccl_symmetric and policy.nccl_symm is not None and nodes == 1 and policy.nccl_symm.takes(world_size, msg_bytes):
        return "nccl"  # first in the engine's order once switched on: NCCL's symmetric kernels
    if policy.mnnvl is not None and mnnvl and nodes == 1 and hosts > 1 and msg_bytes <= policy.mnnvl.max_bytes:
        return "mnnvl"
    custom = policy.custom if "custom" in policy.order else None
    single = max(nodes, hosts)  # the custom kernels' "one node" is one host
    if custom is not None and (custom.strategy is not None or custom.nccl_above_tokens is not None):
        return _table_rule(preset, custom, world_size, msg_bytes, nvlink, p2p, single, tokens, arch)
    multicast = nvlink if multicast is None else multicast
    symm = policy.symm_mem if "symm-mem" in policy.order else None
    symm_on = (
        symm is not None
        and (symm.default_enabled if symm_mem is None else symm_mem)
        and nodes == 1
        and (hosts == 1 or symm.across_hosts)
        and arch in symm.archs
        and (multicast or not symm.needs_multicast)
        and world_size in symm.max_bytes.get(arch, {})
    )
    # vLLM 0.34: FlashInfer's all-reduce runs before the custom kernel where it takes the message
    fi = (
        policy.flashinfer
        and nodes == 1
        and policy.flashinfer.shot(world_size, msg_bytes, arch, nvlink=nvlink, p2p=p2p, hosts=hosts)
    )
    if fi:
        return fi
    if custom is not None and custom.tuned is not None and custom.tuned.eligible(world_size, nvlink, p2p, single, arch):
        # the engine's tuned kernel (SGLang 0.5.14 CustomAllReduceV2) takes the group from the older one
        if msg_bytes <= custom.tuned.max_bytes:
            return custom.tuned.shot(world_size, msg_bytes, arch)
        custom = None  # larger: the rest of the engine's order
    if custom is not None and _custom_eligible(custom, world_size, nvlink, p2p, single):
        limit = custom.max_bytes
        if symm_on and world_size in custom.max_bytes_with_symm_mem.get(arch, {}):
            # vLLM caps the custom kernel so that mid-size messages go to symmetric memory
            limit = min(limit, custom.max_bytes_with_symm_mem[arch][world_size])
        if msg_bytes <= limit if custom.max_bytes_inclusive else msg_bytes < limit:
            return _shot_by_bytes(custom, world_size, msg_bytes)
    if symm_on and msg_bytes <= symm.max_bytes[arch][world_size]:
        multimem = world_size in symm.multimem_world_sizes.get(arch, ())
        return "symm-mem-multimem" if multimem else "symm-mem-two-shot"
    return "nccl"


def _custom_eligible(custom: CustomAllReduce, world_size: int, nvlink: bool, p2p: bool, nodes: int) -> bool:
    if world_size not in custom.world_sizes or (custom.single_node and nodes > 1):
        return False
    if custom.needs_p2p and not p2p:
        return False
    if custom.needs_nvlink and not nvlink:
        return False
    # two PCIe GPUs with P2P qualify; more than two need all pairs on NVLink
    return not (custom.needs_nvlink_above_two and world_size > 2 and not nvlink)


def _shot_by_bytes(custom: CustomAllReduce, world_size: int, msg_bytes: float) -> str:
    if world_size == 2 and custom.two_gpus_always_one_shot:
        return "one-shot"
    for max_ws, below in custom.one_shot_below:
        if world_size <= max_ws and msg_bytes < below:
            return "one-shot"
    return "two-shot"


def _table_rule(
    preset: EnginePreset,
    custom: CustomAllReduce,
    world_size: int,
    msg_bytes: float,
    nvlink: bool,
    p2p: bool,
    nodes: int,
    tokens: int | None,
    arch: str | None,
) -> str:
    """TensorRT-LLM AUTO (allreduceOp.cpp selectImplementation, customAllReduceUtils.h
    selectStrategyLookUpTable) for a bf16 all-reduce fused with residual + RMSNorm; in 1.0
    (`nccl_above_tokens`) no table: NCCL above the token threshold, else MIN_LATENCY's one-shot
    to `one_shot_max_tokens` (kOneShotMaxToken) and two-shot above."""
    if not _custom_eligible(custom, world_size, nvlink, p2p, nodes) or arch == "":
        # "": a GPU without a CUDA compute capability (AMD's): TensorRT-LLM's kernels are CUDA and
        # its table is keyed by SM; the release supports NVIDIA GPUs only (trtllm.toml [cli.support])
        return "nccl"
    limit = custom.max_bytes_two_gpus if world_size <= 2 and custom.max_bytes_two_gpus else custom.max_bytes
    if msg_bytes > limit:
        return "nccl"
    if tokens is None:
        raise ValueError(f"{preset.name}: the all-reduce choice depends on the token count; pass tokens=")
    if custom.nccl_above_tokens is not None:
        if tokens > custom.nccl_above_tokens:
            return "nccl"
        return "one-shot" if tokens <= (custom.one_shot_max_tokens or tokens) else "two-shot"
    # SM below 10.0 reads the SM 90 rows, from 10.0 (B300's 10.3 too) the SM 100 rows
    sm = "10.0" if arch and float(arch) >= 10 else "9.0"
    rows = custom.strategy.get(sm, {}).get(world_size)
    hidden = msg_bytes / max(tokens, 1) / 2  # bytes = tokens x hidden x 2 (bf16)
    h, t = math.floor(math.log2(hidden)) - 7 if hidden >= 1 else -1, math.floor(math.log2(max(tokens, 1)))
    if rows is None or not (0 <= h < len(rows) and 0 <= t < len(rows[h])):
        return "nccl"  # outside the table: NCCL_SYMMETRIC
    return {"1": "one-shot", "2": "two-shot", "N": "nccl"}[rows[h][t]]
