"""What the three engines' builders (vllm, sglang, trtllm) build with: the flag list of a line, the
memory fraction it sets, the image, NCCL's environment, the Launch assembled around the steps."""

from __future__ import annotations

from ...engines.cli_tables import load_cli
from ...engines.presets import load_engine
from ...fabric.hardware import GPU
from .flags import programs
from .layout import Launch, Step
from .priced import ENGINE_LABELS, Priced, Side

NCCL_ENV = {
    "infiniband": (("NCCL_IB_DISABLE", "0"),),
    "roce": (("NCCL_IB_DISABLE", "0"), ("NCCL_IB_GID_INDEX", "3")),
    "efa": (("FI_PROVIDER", "efa"), ("FI_EFA_USE_DEVICE_RDMA", "1")),
}
"""What NCCL needs across nodes by scale-out fabric kind: the IB verbs transport on (InfiniBand,
RoCE), RoCE v2's GID index 3 (NVIDIA's RoCE guide; NCCL_IB_GID_INDEX in NCCL's environment
variables page), libfabric's EFA provider with GPUDirect RDMA (aws-ofi-nccl's README)."""


class Flags(list):
    """The words of a command line, added by role from an engine's `[cli]` table."""

    def __init__(self, engine: str):
        super().__init__()
        self.cli = load_cli(engine)

    def add(self, role: str, value: object = True) -> "Flags":
        """`--flag value` for a role (`--flag` alone for True; nothing for None / False)."""
        if value is None or value is False:
            return self
        self.append(self.cli.flag(role))
        if value is not True:
            self.append(str(value))
        return self

    def raw(self, flag: str, *values: object) -> "Flags":
        self.append(flag)
        self.extend(str(v) for v in values)
        return self


def memory_fraction(p: Priced, engine: str, side: Side | None = None) -> float | None:
    """The memory fraction a server's line sets: the user's; else, on the priced engine's serving or
    decode servers, the fraction the plan needs above that engine's default (`Priced.needed_fraction`);
    else the engine's default where it is a constant (vLLM, TensorRT-LLM), or None, no flag, where
    the engine computes it at launch as it was priced (SGLang's --mem-fraction-static rule)."""
    if p.memory_fraction is not None:
        return p.memory_fraction
    if engine == p.engine and p.needed_fraction is not None and (side is None or side.role != "prefill"):
        return p.needed_fraction
    memory = load_engine(engine).memory
    return None if memory.computed_default else memory.fraction


def image(engine: str, gpu: GPU) -> str:
    """The engine's published image for a GPU generation: `image_<arch>` where the engine builds one
    per generation (SGLang's MI355X image), else its ROCm image on AMD (the generation's vendor,
    catalog/archs.toml), else its CUDA image."""
    support = load_cli(engine).support
    if gpu.arch in support.images:
        return support.images[gpu.arch]
    return (support.image_rocm or support.image) if gpu.generation.vendor == "amd" else support.image


def nccl_env(p: Priced) -> tuple[tuple[str, str], ...]:
    # the scale-out network's settings where a deployment leaves the NVLink node (an NVL72's trays
    # reach each other over NVLink, which NCCL finds by itself)
    if p.system.nic_fabric is None or p.gpus <= p.system.gpus_per_node:
        return ()
    return NCCL_ENV.get(p.system.nic_fabric.kind, ())


def _scale_out(p: Priced) -> tuple[str | None, int]:
    """(fabric kind, NICs per host) where the deployment leaves the NVLink node (as nccl_env), else (None, 0)."""
    if not nccl_env(p):
        return None, 0
    system = p.system
    return system.nic_fabric.kind, max(1, system.nics_per_node * system.host_gpus // system.gpus_per_node)


def assemble(engine: str, p: Priced, steps: list[Step], *, notes: list[str], files: list | None = None) -> Launch:
    """The launch over the system's hosts: a launcher's node is one host (an NVL72 rack's compute
    tray of 4 GPUs, which is all that one OS and one CUDA_VISIBLE_DEVICES see), not the NVLink node."""
    preset = load_engine(engine)
    gpn = p.system.host_gpus
    nodes = max([s.node + 1 for s in steps] + [-(-p.gpus // gpn)])  # the last server may span nodes
    caps = [s.max_batch for s in p.sides if s.role != "prefill" and s.max_batch]
    if caps:  # the batch cap and the load in the words of deploy's table and --rate's answer (issue 34)
        load = [f"{p.load[0]} sequences in flight per replica at {p.load[1]}"] if p.load else []
        notes = [f"batch cap {caps[0]} sequences per replica", *load, *notes]
    return Launch(
        engine=engine,
        label=f"{ENGINE_LABELS[engine]} {preset.version}",
        commands={name: prog.command for name, prog in programs(engine).items()},
        steps=tuple(steps),
        nodes=nodes,
        gpus_per_node=gpn,
        image=image(engine, p.system.gpu),
        files=tuple(files or ()),
        notes=tuple(notes),
        env_all=nccl_env(p),
        scale_out=_scale_out(p),
        hosts_per_nvlink_domain=max(1, p.system.gpus_per_node // gpn),
        local_paths=tuple(dict.fromkeys(x for x in (p.cfg.folder, p.draft_id) if x and x.startswith("/"))),
    )


def draft_name(p: Priced) -> str:
    """The draft's id as a line names it: the user's --draft-model, or a placeholder for an EAGLE head."""
    return p.draft_id or "EAGLE_HEAD_ID"


def spec_note(p: Priced) -> list[str]:
    if p.speculation is not None and p.speculation.method == "eagle" and not p.draft_id:
        return [f"replace EAGLE_HEAD_ID with an EAGLE head trained for {p.model_id} (--draft-model names it)"]
    return []


__all__ = ["Flags", "NCCL_ENV", "assemble", "draft_name", "image", "memory_fraction", "nccl_env", "spec_note"]
