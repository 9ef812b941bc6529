"""The flag tables of the engines' programs, read from each preset's `[cli]` table, and the check
that a launch line parses under them.

`[cli.flags]` lists every flag a server line may print, as the engine's own parser declares it at
the pinned release: "int", "float", "str", "json" (a JSON object, its keys in `[cli.json]`),
"switch" (store_true), a list of choices, or a type with argparse's nargs ("str+", "str*") and
" repeat" for an appending option. `[cli.programs.<name>]` does the same for the other programs a
deployment runs (Ray, a proxy, a router, mpirun). `check_argv` parses a line as those parsers would:
an unknown flag, a missing value, a value of the wrong type or outside the choices, a flag given
twice or a positional too many is a `LaunchError` naming the flag.

A value may hold the placeholders a launch names (`$NODE0_IP`); they are checked as the example
value `PLACEHOLDER_EXAMPLES` gives them.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Mapping

from ...engines.cli_tables import load_cli
from ...engines.presets import load_engine
from ...errors import ShardbudgetError

SCALARS = ("int", "float", "str", "json", "switch", "bool")
PLACEHOLDER_EXAMPLES = {"NODE_IP": "10.0.0.1"}
"""What a `$NODE<i>_IP` placeholder stands for when a line is checked (any address parses)."""
_VAR = re.compile(r"\$\{?NODE(\d+)_IP\}?")


class LaunchError(ShardbudgetError):
    """A launch line that the engine's parser (as its flag table records it) would refuse."""


@dataclass(frozen=True)
class FlagType:
    kind: str
    """One of SCALARS, or 'choice'."""
    choices: tuple[str, ...] = ()
    nargs: str = ""
    """'' (one value), '+' (one or more), '*' (any number)."""
    repeat: bool = False


@dataclass(frozen=True, kw_only=True)
class Program:
    name: str
    command: str
    """The words that start it ("vllm serve", "python3 -m sglang.launch_server")."""
    positional: int
    flags: Mapping[str, FlagType]
    json_keys: Mapping[str, Mapping[str, Any]]
    """For each "json" flag: key -> type word or choices."""
    env: Mapping[str, tuple[str, ...]]
    """Environment variables a line may set, with their accepted values."""
    source: str


def _flag_type(spec: Any, where: str) -> FlagType:
    if isinstance(spec, list) and spec and all(isinstance(c, str) for c in spec):
        return FlagType("choice", tuple(spec))
    if isinstance(spec, str):
        word, _, extra = spec.partition(" ")
        nargs = word[-1] if word[-1:] in ("+", "*") else ""
        base = word.rstrip("+*")
        if base in SCALARS and extra in ("", "repeat"):
            return FlagType(base, nargs=nargs, repeat=extra == "repeat")
    raise LaunchError(
        f"{where}: a flag's type must be one of {', '.join(SCALARS)} (with + / * / repeat) or a "
        f"list of choices, got {spec!r}"
    )


def _program(
    name: str,
    table: Mapping[str, Any],
    *,
    command: str,
    where: str,
    positional: int = 0,
    json_keys: Mapping | None = None,
    env: Mapping | None = None,
) -> Program:
    flags = {flag: _flag_type(spec, f"{where}.flags.{flag}") for flag, spec in table.get("flags", {}).items()}
    source = table.get("source") or ""
    if not source:
        raise LaunchError(f"{where}: needs a source")
    envs = {k: tuple(v) for k, v in (env or {}).items() if k != "source"}
    return Program(
        name=name,
        command=command,
        positional=positional,
        flags=MappingProxyType(flags),
        json_keys=MappingProxyType({k: v for k, v in (json_keys or {}).items() if k != "source"}),
        env=MappingProxyType(envs),
        source=source,
    )


@lru_cache(maxsize=None)
def programs(engine: str) -> Mapping[str, Program]:
    """'serve' (the engine's server) and every `[cli.programs.<name>]` of the engine's preset."""
    cli = load_cli(engine)  # engines/cli_tables.py: the preset's [cli], typed
    where = f"engines/{engine}.toml [cli]"
    out = {
        "serve": _program(
            "serve",
            {"flags": cli.flags, "source": cli.source},
            command=load_engine(engine).launcher,
            where=where,
            positional=cli.positional,
            json_keys=cli.json,
            env=cli.env,
        )
    }
    for name, table in cli.programs.items():
        out[name] = _program(
            name,
            {"flags": table.flags, "source": table.source},
            command=table.command,
            where=f"{where}.programs.{name}",
        )
    return MappingProxyType(out)


def example_value(text: str) -> str:
    """A value with its placeholders replaced by examples, as the check reads it."""
    return _VAR.sub(PLACEHOLDER_EXAMPLES["NODE_IP"], text)


def _check_value(flag: str, value: str, kind: FlagType, program: Program) -> None:
    v = example_value(value)
    if kind.kind == "choice":
        if v not in kind.choices:
            raise LaunchError(f"{program.command} {flag}: {value!r} is not one of {', '.join(kind.choices)}")
        return
    try:
        if kind.kind == "int":
            int(v)
        elif kind.kind == "float":
            float(v)
        elif kind.kind == "json":
            _check_json(flag, v, program)
    except ValueError:
        raise LaunchError(f"{program.command} {flag}: {value!r} is not a valid {kind.kind}") from None


def _check_json(flag: str, text: str, program: Program) -> None:
    obj = json.loads(text)
    if not isinstance(obj, dict):
        raise ValueError
    keys = program.json_keys.get(flag, {})
    for key, value in obj.items():
        if key not in keys:
            raise LaunchError(f"{program.command} {flag}: unknown key {key!r} (known: {', '.join(keys)})")
        want = keys[key]
        if isinstance(want, list) and value not in want:
            raise LaunchError(f"{program.command} {flag}: {key} {value!r} is not one of {', '.join(want)}")
        if want == "int" and (isinstance(value, bool) or not isinstance(value, int)):
            raise LaunchError(f"{program.command} {flag}: {key} must be an integer, got {value!r}")


def check_argv(program: Program, argv: list[str] | tuple[str, ...], env: Mapping[str, str] | None = None) -> None:
    """Parse `argv` (the words after the program's command) as the engine's parser would."""
    for name, value in (env or {}).items():
        if name == "CUDA_VISIBLE_DEVICES":
            if not re.fullmatch(r"\d+(,\d+)*", value):
                raise LaunchError(f"CUDA_VISIBLE_DEVICES={value!r} is not a list of GPU indices")
        elif name not in program.env or value not in program.env[name]:
            raise LaunchError(f"{program.command}: environment {name}={value} is not one the engine reads")
    seen: set[str] = set()
    positional, i = 0, 0
    while i < len(argv):
        word = argv[i]
        if not word.startswith("-"):
            positional += 1
            if positional > program.positional:
                raise LaunchError(f"{program.command}: unexpected argument {word!r}")
            i += 1
            continue
        kind = program.flags.get(word)
        if kind is None:
            raise LaunchError(f"{program.command}: unknown flag {word} (not in its flag table)")
        if word in seen and not kind.repeat:
            raise LaunchError(f"{program.command}: {word} given twice")
        seen.add(word)
        i += 1
        values = []
        while i < len(argv) and not argv[i].startswith("--") and kind.kind != "switch":
            values.append(argv[i])
            i += 1
            if not kind.nargs:
                break
        if kind.kind == "switch":
            continue
        if not values and kind.nargs != "*":
            raise LaunchError(f"{program.command} {word}: needs a value")
        for v in values:
            _check_value(word, v, FlagType("str") if kind.kind == "str" else kind, program)
    if positional < program.positional:
        raise LaunchError(f"{program.command}: needs {program.positional} positional argument(s), got {positional}")


__all__ = ["FlagType", "LaunchError", "Program", "check_argv", "example_value", "programs"]
