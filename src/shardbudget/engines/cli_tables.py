"""An engine preset's `[cli]` table, typed: the flag each role of a launch line takes, the flag tables
of the engine's programs, and what a deployment needs to write its commands (images, speculative
methods, KV-cache dtypes, the disaggregated servers' settings).

`read_engine` (presets.py) reads this table too, so a misspelt key in it is refused with every other
key of the file; `load_cli` gives it to `deploy`'s launch builders (decide/launch), kept apart from
the preset that `plan` reads so that `plan` never creates these records' classes (start-up).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import Any

from .presets import engine_name
from ..comm.moe_a2a import BACKENDS
from ..datacache import cached, read_builtin
from ..datafile import Table, key, parse_toml, read_record, record_keys
from ..errors import CatalogError, UnknownNameError
from ..fabric.catalog import builtin_archs

SPECULATIVE_METHODS = ("mtp", "eagle", "draft")
"""`--speculative` methods (step/speculative.py METHODS) an engine may name its own word for."""


def _words(t: Table, name: str) -> Mapping[str, str]:
    """A table of name -> word (a dtype's or a method's name in the engine's own spelling)."""
    table = t.table(name)
    out = MappingProxyType({k: table.text(k) for k, _ in table.entries()})
    table.done()
    return out


def _methods(t: Table, name: str) -> Mapping[str, str]:
    table = t.table(name)
    for method, _ in table.entries():
        if method not in SPECULATIVE_METHODS:
            raise UnknownNameError(f"speculative method in {table.where}", method, SPECULATIVE_METHODS)
    return _words(t, name)


def _specs(t: Table, name: str) -> Mapping[str, Any]:
    """A table of flag (or key) -> its type as the parser declares it: a word ("int", "str+ repeat"),
    a list of choices, or a table of keys (a JSON flag's, a YAML block's); decide/launch/flags.py
    reads the words."""
    table = t.table(name)
    out = {}
    for k, spec in table.entries():
        if not isinstance(spec, (str, list, dict)) or (
            isinstance(spec, list) and not all(isinstance(c, str) for c in spec)
        ):
            raise table.fail(k, f"a type is a word, a list of choices or a table, got {spec!r}")
        out[k] = spec
    table.done()
    return MappingProxyType(out)


MOE_A2A_ROLES = ("serve", "prefill", "decode")
"""The sides a `[cli.moe_a2a]` key may name after '@' (decide/launch/priced.py Side.role)."""


def _a2a(t: Table, name: str) -> Mapping[str, str]:
    """`[cli.moe_a2a]`: `--moe-a2a` backend (comm/moe_a2a.py BACKENDS), or `backend@side`, -> the
    words a server line adds for it."""
    table = t.table(name)
    for k, _ in table.entries():
        if k == "source":
            continue
        backend, _, role = k.partition("@")
        if backend not in BACKENDS:
            raise UnknownNameError(f"--moe-a2a backend in {table.where}", backend, BACKENDS)
        if role and role not in MOE_A2A_ROLES:
            raise UnknownNameError(f"side in {table.where}", role, MOE_A2A_ROLES)
    return _words(t, name)


def _env(t: Table, name: str) -> Mapping[str, tuple[str, ...]]:
    """Environment variables a line may set -> the values the engine reads."""
    table = t.table(name)
    out = MappingProxyType({var: table.texts(var) for var, _ in table.entries()})
    table.done()
    return out


@dataclass(frozen=True, kw_only=True)
class ProgramTable:
    """`[cli.programs.<name>]`: a program a deployment runs beside the servers (a router, a proxy, mpirun)."""

    command: str = key("command")
    """The words that start it ("" for a file the deployment writes: TensorRT-LLM's disaggregated YAML)."""
    flags: Mapping[str, Any] = key("flags", _specs, factory=lambda: MappingProxyType({}))
    keys: Mapping[str, Any] = key("keys", _specs, factory=lambda: MappingProxyType({}))
    """A file's keys and their types, where the program is a file."""
    package: str = key("package", default="")
    """The pip requirement that installs it where the image lacks it (`--emit k8s`)."""
    source: str = key("source")


def _programs(t: Table, name: str) -> Mapping[str, ProgramTable]:
    table = t.table(name)
    out = MappingProxyType({p: read_record(ProgramTable, table.table(p)) for p, _ in table.entries()})
    table.done()
    return out


def _images(t: Table) -> Mapping[str, str]:
    """`image_<generation>`: an image the engine builds for one GPU generation (SGLang's MI355X one)."""
    out = {}
    for k, _ in list(t.data.items()):
        if k.startswith("image_") and k != "image_rocm":
            generation = k[len("image_") :]
            if generation not in builtin_archs():
                raise UnknownNameError(f"GPU generation in {t.at(k)}", generation, builtin_archs())
            out[generation] = t.text(k)
    return MappingProxyType(out)


@dataclass(frozen=True, kw_only=True)
class Support:
    """`[cli.support]`: the GPU generations the engine runs on and its published images."""

    archs: tuple[str, ...] = key("archs")
    image: str = key("image")
    """Its CUDA image."""
    image_rocm: str = key("image_rocm", default="")
    """Its ROCm image, for AMD GPUs ("": none)."""
    images: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    """[generation] -> the image built for that generation alone (`image_<generation>`)."""
    source: str = key("source")


def _support(t: Table, name: str) -> Support:
    table = t.table(name)
    support = read_record(Support, table, done=False, images=_images(table))
    for generation in support.archs:
        if generation not in builtin_archs():
            raise UnknownNameError(f"GPU generation in {table.at('archs')}", generation, builtin_archs())
    table.done()
    return support


@dataclass(frozen=True, kw_only=True)
class Multinode:
    """`[cli.multinode]`: how one replica spans nodes (stated; the launch builders write it)."""

    tp_pp: str = key("tp_pp", default="")
    dp: str = key("dp", default="")
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class Disaggregation:
    """`[cli.disaggregation]`: the prefill and decode servers' KV transfer."""

    transfer_backend: str = key("transfer_backend", default="")
    """SGLang --disaggregation-transfer-backend."""
    bootstrap_port: int | None = key("bootstrap_port", "count", default=None)
    """SGLang --disaggregation-bootstrap-port."""
    cache_transceiver_backend: str = key("cache_transceiver_backend", default="")
    """TensorRT-LLM cache_transceiver_config backend."""
    source: str = key("source")


@dataclass(frozen=True, kw_only=True)
class EngineCli:
    """One engine's `[cli]` table. The role fields are the flag a launch line prints for that role
    (`flag`); "" where the engine has none."""

    name: str
    positional: int = key("positional", "count", default=0)
    """Positional arguments the server takes (vllm serve MODEL: 1)."""
    model: str = key("model", default="")
    tensor_parallel: str = key("tensor_parallel")
    pipeline_parallel: str = key("pipeline_parallel", default="")
    data_parallel: str = key("data_parallel", default="")
    dp_attention: str = key("dp_attention", default="")
    expert_parallel: str = key("expert_parallel", default="")
    max_batch: str = key("max_batch")
    max_model_len: str = key("max_model_len")
    max_num_batched_tokens: str = key("max_num_batched_tokens", default="")
    max_num_tokens: str = key("max_num_tokens", default="")
    memory_fraction: str = key("memory_fraction")
    disable_custom_allreduce: str = key("disable_custom_allreduce", default="")
    kv_cache_dtype: str = key("kv_cache_dtype", default="")
    quantization: str = key("quantization", default="")
    eager: str = key("eager", default="")
    eager_prefill: str = key("eager_prefill", default="")
    speculative_config: str = key("speculative_config", default="")
    kv_transfer: str = key("kv_transfer", default="")
    extra_options: str = key("extra_options", default="")
    port: str = key("port", default="")
    flags: Mapping[str, Any] = key("flags", _specs, factory=lambda: MappingProxyType({}))
    """[cli.flags]: every flag a server line may print, with its type as the engine's parser declares it."""
    json: Mapping[str, Any] = key("json", _specs, factory=lambda: MappingProxyType({}))
    """[cli.json]: the keys of each JSON flag."""
    env: Mapping[str, tuple[str, ...]] = key("env", _env, factory=lambda: MappingProxyType({}))
    yaml: Mapping[str, Any] = key("yaml", _specs, factory=lambda: MappingProxyType({}))
    """[cli.yaml]: the keys of the options file (TensorRT-LLM --extra_llm_api_options)."""
    speculative_methods: Mapping[str, str] = key("speculative_methods", _methods, factory=lambda: MappingProxyType({}))
    """`--speculative` method -> the engine's own name for it."""
    quantization_methods: Mapping[str, str] = key("quantization_methods", _words, factory=lambda: MappingProxyType({}))
    kv_cache_dtypes: Mapping[str, str] = key("kv_cache_dtypes", _words, factory=lambda: MappingProxyType({}))
    """The dtype -> the engine's word for it."""
    moe_a2a: Mapping[str, str] = key("moe_a2a", _a2a, factory=lambda: MappingProxyType({}))
    """`--moe-a2a` backend (or `backend@side`: serve, prefill, decode) -> the words of a server line
    that run it; a backend not listed runs as the engine's default (`moe_a2a_words`)."""
    support: Support | None = key("support", _support, default=None)
    multinode: Multinode | None = key("multinode", Multinode, default=None)
    disaggregation: Disaggregation | None = key("disaggregation", Disaggregation, default=None)
    programs: Mapping[str, ProgramTable] = key("programs", _programs, factory=lambda: MappingProxyType({}))
    source: str = key("source")

    def moe_a2a_words(self, backend: str, side: str) -> list[str]:
        """The words that make a `side` server run MoE dispatch and combine as `backend` priced it
        ([] where the engine's default does, or the table names none)."""
        words = self.moe_a2a.get(f"{backend}@{side}", self.moe_a2a.get(backend, ""))
        return words.split()

    def flag(self, role: str) -> str:
        """The flag of a role ('tensor_parallel' -> '--tensor-parallel-size'), or a one-line error."""
        value = getattr(self, role, "") if role in ROLES else ""
        if not value:
            raise CatalogError(
                f"engines/{self.name}.toml: cli has no flag for {role!r} "
                f"(its roles: {', '.join(r for r in ROLES if getattr(self, r))})"
            )
        return value


ROLES = tuple(
    k
    for k in record_keys(EngineCli)
    if k not in ("positional", "source") and EngineCli.__dataclass_fields__[k].type == "str"
)
"""The roles a launch line's flags are added by (`Flags.add`)."""


def read_cli(t: Table, name: str) -> EngineCli:
    """A preset's [cli] table, strictly: a key that is no role, sub-table or note is refused."""
    return read_record(EngineCli, t, name=name)


@lru_cache(maxsize=None)
def load_cli(name: str) -> EngineCli:
    """The [cli] table of one engine's preset (`presets.ENGINE_NAMES`)."""
    where = f"engines/{engine_name(name)}.toml"
    text = read_builtin(where)
    return cached(
        f"engine-cli-{name}", [text], lambda: read_cli(Table(parse_toml(text, where), "", where).table("cli"), name)
    )


__all__ = [
    "MOE_A2A_ROLES",
    "ROLES",
    "SPECULATIVE_METHODS",
    "Disaggregation",
    "EngineCli",
    "Multinode",
    "ProgramTable",
    "Support",
    "load_cli",
    "read_cli",
]
