"""Engine releases: which preset prices which release, how old a preset is, and what changed between two.

Every preset file names the release it was read at (`[engine] version`, `released`, the NCCL its
torch pin installs, its `source`). An engine's presets form one line, oldest first (`LINES`): a
measured row that states a release is priced by the oldest preset at or after it (a vLLM 0.14.0 row
by vllm-0.19, whose rules were read where 0.14's kernel was unchanged; a 0.19.0 row by vllm-0.19
itself), a release newer than the newest preset by the newest, and one that states none by the preset
current at the row's date (`preset_for`). `age_note` says how far a named preset is behind its line's
newest; `diff` lists what two presets state differently, field by field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, is_dataclass
from types import MappingProxyType

from .. import units
from .presets import EnginePreset, load_engine

LINES: Mapping[str, tuple[str, ...]] = MappingProxyType(
    {
        "vllm": ("vllm-0.5", "vllm-0.6", "vllm-0.9", "vllm-0.19", "vllm"),
        "sglang": ("sglang-0.4", "sglang-0.5.14", "sglang"),
        "trtllm": ("trtllm-1.0", "trtllm"),
    }
)
"""Engine -> its release presets, oldest first; the last is the engine's default. vllm-v0 (the V0
engine), tgi and eager are configurations, not releases of a line: a row names them itself."""

ENGINE_WORDS = MappingProxyType({"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"})


def version_key(version: str) -> tuple:
    """'0.5.14' < '0.5.23', '1.3.0rc20' < '1.3.0'; a missing part counts as 0 ('0.4' = '0.4.0')."""
    nums = re.match(r"(\d+)\.(\d+)(?:\.(\d+))?(?:rc(\d+))?", version)
    if nums is None:
        raise ValueError(f"not a release: {version!r}")
    major, minor, patch, rc = nums.groups()
    return int(major), int(minor), int(patch or 0), int(rc) if rc is not None else 1 << 30


def stated_version(text: str) -> str | None:
    """The release a row's text states at its start ('v0.5.9 (image ...)', '1.1.0rc2.post2', '0.4.x
    (Jan 2025)' -> 0.5.9, 1.1.0rc2, 0.4), else None ('not stated', 'NIM 1.8.0', 'main')."""
    m = re.match(r"\s*v?(\d+\.\d+(?:\.\d+)?(?:rc\d+)?)", text or "")
    return m.group(1) if m else None


def line_of(preset: str) -> str | None:
    """The engine whose line `preset` belongs to, or None for a configuration (eager, tgi, vllm-v0)."""
    return next((engine for engine, names in LINES.items() if preset in names), None)


@dataclass(frozen=True, kw_only=True)
class PresetChoice:
    """The preset a measured row is priced by, and whether the catalog has the row's release."""

    preset: str
    exact: bool
    """The preset was read at the row's own release (major.minor.patch; a release candidate of it too)."""
    why: str


def preset_for(engine: str, version_text: str = "", *, date: str = "") -> PresetChoice:
    """The preset of `engine`'s line that prices a row stating `version_text` (measured at `date`,
    'YYYY-MM[-DD]', where it states no release). An engine with no line (eager, tgi, vllm-v0) is its own."""
    names = LINES.get(engine)
    if names is None:
        return PresetChoice(preset=engine, exact=True, why="a configuration of its own")
    presets = [(n, load_engine(n)) for n in names]
    version = stated_version(version_text)
    if version is None:
        return _by_date(engine, presets, date)
    key = version_key(version)
    for name, p in presets:
        if key <= version_key(p.version):
            exact = key[:3] == version_key(p.version)[:3]
            return PresetChoice(
                preset=name,
                exact=exact,
                why=f"{ENGINE_WORDS[engine]} {version}"
                + ("" if exact else f": priced by {name} ({p.version}), the oldest preset at or after it"),
            )
    name, p = presets[-1]
    return PresetChoice(
        preset=name,
        exact=False,
        why=f"{ENGINE_WORDS[engine]} {version} is newer than {name} ({p.version}), the newest preset",
    )


def _by_date(engine: str, presets, date: str) -> PresetChoice:
    """No release stated: the oldest preset released at or after the row's date, else the newest."""
    for name, p in presets:
        if date and _released(name) >= date[:7]:
            return PresetChoice(
                preset=name,
                exact=False,
                why=f"{ENGINE_WORDS[engine]} release not stated ({date[:7]}): priced by {name} ({p.version}, "
                f"released {_released(name)})",
            )
    name, p = presets[-1]
    return PresetChoice(preset=name, exact=False, why=f"{ENGINE_WORDS[engine]} release not stated: priced by {name}")


def _released(name: str) -> str:
    """The preset's release date as 'YYYY-MM[-DD]': the last one its `released` names (a range's end)."""
    dates = re.findall(r"\d{4}-\d\d(?:-\d\d)?", load_engine(name).released)
    return dates[-1] if dates else ""


@dataclass(frozen=True, kw_only=True)
class ReleaseInfo:
    """One preset as `shardbudget engines` lists it."""

    name: str
    engine: str
    version: str
    released: str
    nccl: str
    newest: bool
    """The newest preset of its line (the engine's default), or a configuration of its own."""
    line: str | None
    """The engine whose release line it is in (LINES), None for a configuration (eager, tgi, vllm-v0)."""
    source: str

    def to_dict(self) -> dict:
        return {f.name: getattr(self, f.name) for f in fields(self)}


def release_info(name: str) -> ReleaseInfo:
    p = load_engine(name)
    line = line_of(name)
    return ReleaseInfo(
        name=name,
        engine=line or name,
        version=p.version,
        released=p.released,
        nccl=p.nccl,
        newest=line is None or LINES[line][-1] == name,
        line=line,
        source=p.source,
    )


def age_note(name: str) -> str | None:
    """'vllm-0.19 is vLLM 0.19.0 (2026-04-03); the newest preset, vllm, is 0.34.0 (2026-11): 15 minor
    releases newer' for a preset behind its line's newest, else None."""
    line = line_of(name)
    if line is None or LINES[line][-1] == name:
        return None
    old, new = release_info(name), release_info(LINES[line][-1])
    a, b = version_key(old.version), version_key(new.version)
    gap = (
        f"{b[1] - a[1]} minor release{'s' if b[1] - a[1] != 1 else ''} newer"
        if a[0] == b[0] and b[1] > a[1]
        else f"{b[2] - a[2]} patch release{'s' if b[2] - a[2] != 1 else ''} newer"
        if a[:2] == b[:2] and b[2] > a[2]
        else "newer"
    )
    return (
        f"{name} is {ENGINE_WORDS[line]} {old.version} ({old.released}); the newest preset, {new.name}, is "
        f"{new.version} ({new.released}): {gap}"
    )


# --- what two presets state differently -------------------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class FieldChange:
    table: str
    """Where it lives: 'engine', 'allreduce.custom', 'memory', 'cli', ..."""
    field: str
    old: str
    new: str

    def to_dict(self) -> dict:
        return {"table": self.table, "field": self.field, "old": self.old, "new": self.new}


def diff(a: str, b: str) -> tuple[FieldChange, ...]:
    """Every field of the two presets (their records, the launch flags) whose value differs, with
    sizes and times in the units people read. Notes (`source`, `*_basis`) are left out."""
    from .cli_tables import load_cli

    left = dict(_flat("", load_engine(a))) | dict(_flat("cli", load_cli(a)))
    right = dict(_flat("", load_engine(b))) | dict(_flat("cli", load_cli(b)))
    out = []
    for key in sorted(set(left) | set(right), key=_order):
        old, new = left.get(key, "-"), right.get(key, "-")
        if old != new:
            table, _, name = key.rpartition(".")
            out.append(FieldChange(table=table or "engine", field=name, old=old, new=new))
    return tuple(out)


_SKIP = ("source", "name", "estimate")
_FIRST = ("engine", "allreduce", "memory", "cuda_graphs", "host", "fusions", "kernels", "cli")


def _order(key: str) -> tuple:
    head = key.split(".", 1)[0]
    return (_FIRST.index(head) if head in _FIRST else 0 if "." not in key else len(_FIRST), key)


def _flat(prefix: str, value) -> Iterable[tuple[str, str]]:
    """(dotted path, text) for every leaf of a record: dataclasses and mappings walked, the rest shown."""
    if isinstance(value, EnginePreset):
        yield "engine.version", value.version
        yield "engine.released", value.released or "-"
        yield "engine.nccl", value.nccl or "-"
        value = {
            f.name: getattr(value, f.name)
            for f in fields(value)
            if f.name not in ("version", "nccl", "source", "name", "launcher", "released")
        }
    elif is_dataclass(value):
        value = {f.name: getattr(value, f.name) for f in fields(value)}
    if isinstance(value, Mapping):
        for k, v in value.items():
            if str(k) in _SKIP or str(k).endswith(("_source", "_basis", "_note")):
                continue
            yield from _flat(f"{prefix}.{k}" if prefix else str(k), v)
        return
    yield prefix, _text(prefix, value)


def _text(path: str, value) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float) and path.endswith(("_s", "latency")):
        return units.format_seconds(value)
    if isinstance(value, float) and (
        path.endswith(("bytes", "max", "bytes_per_s")) or re.search(r"\.\d+$", path) and value >= 1024
    ):
        return units.format_bytes(value)
    if isinstance(value, float) and value >= 2**20 and value % 1024 == 0:
        return units.format_bytes(value)  # a GPU-memory bound in a table of rows
    if isinstance(value, (tuple, list)):
        return ", ".join(_text(path, v) for v in value) or "-"
    return str(value)


__all__ = [
    "FieldChange",
    "LINES",
    "PresetChoice",
    "ReleaseInfo",
    "age_note",
    "diff",
    "line_of",
    "preset_for",
    "release_info",
    "stated_version",
    "version_key",
]
