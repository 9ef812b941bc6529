"""The one reader of the data files: the catalog (built in and `--catalog` files), the engine presets,
the kernel table and the model families all go through it, so each is read as strictly as the others.

A file is read table by table (`Table`). Every key the reader asks for is a known key of that table,
whether the file has it or not; at the end (`Table.done`) a key it never asked for is refused with
the file, the table and the nearest known key:

    engines/vllm.toml: host: unknown field 'per_stepp'; did you mean 'per_step'?

Where a frozen dataclass is the table's schema (`read_record`), its fields declared with `key(...)`
are the table's keys, each read by its kind (text, a whole number, a time with its unit, a sub-table
read as another record, ...): the record's field list is the one list of what the table may hold.

Notes for the reader (text only, never read as a value) may stand beside the fields of any table:
`source`, `basis`, `note`, and any key ending in `_source`, `_basis`, `_note` or `_rule`
(`per_step_basis`, `max_batch_rule`). A misspelt field is no note, so it is still refused.

Names that a command takes (a catalog entry's table name, an engine, a generation) are compared
ignoring case, so a user file cannot add 'HGX-H100' beside the built-in 'hgx-h100'; they may not
start with '-' (it would read as an option) nor hold control characters (a newline or an escape
sequence would break every line, file and terminal that prints the name): `check_name`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import MISSING, Field, field, fields
from pathlib import Path
from typing import Any, TypeVar

from . import units
from .quoting import check_name as check_printable
from .errors import CatalogError, closest

T = TypeVar("T")
NOTE_KEYS = ("source", "basis", "note")
NOTE_SUFFIXES = ("_source", "_basis", "_note", "_rule")
_KEY = "datafile.key"  # where `key` keeps a field's key and kind in the dataclass field's metadata


def is_note(key: str) -> bool:
    """A key that holds a note for the reader: `source`, `basis`, `note`, `*_source`, `*_basis`, `*_note`, `*_rule`."""
    return key in NOTE_KEYS or key.endswith(NOTE_SUFFIXES)


def _typename(types: type | tuple) -> str:
    types = types if isinstance(types, tuple) else (types,)
    return " or ".join(
        {
            str: "a string",
            int: "an integer",
            float: "a number",
            bool: "true/false",
            dict: "a table",
            list: "a list",
            object: "a value",
        }.get(t, t.__name__)
        for t in types
    )


class Table:
    """One table of a data file being read. `path` is its dotted place in the file ('fabrics.nvlink4',
    'allreduce.custom'; '' for the file's top), `file` the file as the user named it."""

    __slots__ = ("data", "path", "file", "known")

    def __init__(self, data: Any, path: str, file: str = ""):
        self.path, self.file = path, file
        if not isinstance(data, dict):
            raise CatalogError(f"{self.where}: expected a table of fields, got {_short(data)}")
        self.data: dict = data
        self.known: dict[str, None] = {}  # keys asked for, in order: the table's schema

    @property
    def where(self) -> str:
        """'catalog/fabrics.toml: fabrics.nvlink4', as every message about this table begins."""
        if self.file and self.path:
            return f"{self.file}: {self.path}"
        return self.file or self.path or "data file"

    def at(self, key: str) -> str:
        """Where one field is: 'catalog/fabrics.toml: fabrics.nvlink4.bandwidth'."""
        path = f"{self.path}.{key}" if self.path else key
        return f"{self.file}: {path}" if self.file else path

    def fail(self, key: str | None, message: str) -> CatalogError:
        return CatalogError(f"{self.at(key) if key else self.where}: {message}")

    # --- what the table holds -------------------------------------------------------------------

    def has(self, key: str) -> bool:
        """Whether the table holds `key` (which is then a known key of it)."""
        self.known[key] = None
        return key in self.data

    def raw(self, key: str, default: Any = ..., types: type | tuple = object) -> Any:
        """The value of `key` as parsed, of one of `types` (bool is not an integer here), or `default`."""
        if not self.has(key):
            if default is ...:
                raise self.missing(key)
            return default
        value = self.data[key]
        allowed = types if isinstance(types, tuple) else (types,)
        if not isinstance(value, allowed) or (isinstance(value, bool) and bool not in allowed):
            raise self.fail(key, f"expected {_typename(types)}, got {_short(value)}")
        return value

    def text(self, key: str, default: Any = ...) -> str:
        return self.raw(key, default, str)

    def flag(self, key: str, default: Any = ...) -> bool:
        return self.raw(key, default, bool)

    def choice(self, key: str, allowed: Iterable[str], default: Any = ...) -> str:
        value, allowed = self.text(key, default), tuple(allowed)
        if key in self.data and value not in allowed:
            raise self.fail(key, f"{value!r} is not one of {', '.join(allowed)}")
        return value

    def integer(self, key: str, default: Any = ..., minimum: int = 1, maximum: int = 100_000) -> int:
        """A whole number in [minimum, maximum]: no node, link or batch count is larger, and a typo
        that large would exhaust memory later."""
        value = self.raw(key, default, int)
        if key not in self.data:
            return value
        if value < minimum:
            raise self.fail(key, f"{value} must be at least {minimum}")
        if value > maximum:
            raise self.fail(key, f"{value} must be at most {maximum}")
        return value

    def count(self, key: str, default: Any = ...) -> int:
        """A whole number >= 0."""
        return self.integer(key, default, minimum=0, maximum=10**9)

    def number(self, key: str, default: Any = ...) -> float:
        value = self.raw(key, default, (int, float))
        if key not in self.data:
            return value
        if not math.isfinite(value):
            raise self.fail(key, f"{value!r} must be a finite number")
        return float(value)

    def fraction(self, key: str, default: Any = ...) -> float:
        """A share in (0, 1]."""
        value = self.number(key, default)
        if key in self.data and not 0 < value <= 1:
            raise self.fail(key, f"expected a fraction in (0, 1], got {value!r}")
        return value

    def quantity(self, key: str, parser: Callable[..., float], default: Any = ...) -> float:
        """A quantity with its unit ('450 GB/s', '1.5 us'), read by one of `units`' parsers."""
        value = self.raw(key, default, (str, int, float))
        if key not in self.data:
            return value
        try:
            return parser(value, what=self.at(key))
        except units.UnitError as err:
            raise CatalogError(str(err)) from None

    def seconds(self, key: str, default: Any = ...) -> float:
        return self.quantity(key, _seconds, default)

    def size(self, key: str, default: Any = ...) -> float:
        return self.quantity(key, _bytes, default)

    def rate(self, key: str, default: Any = ...) -> float:
        return self.quantity(key, units.parse_rate, default)

    def flops(self, key: str, default: Any = ...) -> float:
        return self.quantity(key, units.parse_flops, default)

    def texts(self, key: str, default: Any = ...) -> tuple[str, ...]:
        values = self.raw(key, default, list)
        if key not in self.data:
            return values
        if not all(isinstance(v, str) for v in values):
            raise self.fail(key, f"expected a list of strings, got {_short(values)}")
        return tuple(values)

    def world_sizes(self, key: str, default: Any = ...) -> tuple[int, ...]:
        """A non-empty list of whole numbers >= 1 (GPU counts)."""
        values = self.raw(key, default, list)
        if key not in self.data:
            return values
        if not values:
            raise self.fail(key, "expected a list of world sizes, got []")
        return tuple(world_size(v, self.at(key)) for v in values)

    def table(self, key: str) -> Table:
        """The sub-table `key`, read as a table of its own (refused where the value is not a table)."""
        self.raw(key, types=dict)
        return Table(self.data[key], f"{self.path}.{key}" if self.path else key, self.file)

    def opt_table(self, key: str) -> Table | None:
        return self.table(key) if self.has(key) else None

    def entries(self) -> Iterator[tuple[str, Any]]:
        """(key, value) of every key but the notes: a table whose keys are names, not fields (a
        table by GPU count, by generation, ...); each is then known."""
        for k, v in self.data.items():
            if not (is_note(k) and isinstance(v, str)):
                self.known[k] = None
                yield k, v

    # --- the end of a table ---------------------------------------------------------------------

    def done(self) -> None:
        """Refuse what the reader did not ask for: a misspelt or unknown key, or a note that is not text."""
        for k, v in self.data.items():
            if k in self.known:
                continue
            if is_note(k):
                if not isinstance(v, str):
                    raise self.fail(k, f"a note ('{k}') is text for the reader, got {_short(v)}")
                continue
            raise self.unknown(k)

    def missing(self, key: str) -> CatalogError:
        """A required field the table lacks; where the table holds a key close to it, that key is
        refused as its misspelling."""
        strays = [k for k in self.data if k not in self.known and not is_note(k)]
        near = closest(key, strays, n=1)
        return self.unknown(near[0]) if near else CatalogError(f"{self.where}: missing field '{key}'")

    def unknown(self, key: str) -> CatalogError:
        fields_ = list(self.known)  # what the reader asked for: its fields (a `source` it reads among them)
        near = closest(key, fields_, n=1)
        if near:
            hint = f"; did you mean '{near[0]}'?"
        else:
            hint = f" (its fields: {', '.join(fields_)})" if fields_ else " (the table has no fields)"
        return CatalogError(f"{self.where}: unknown field {key!r}{hint}")


def world_size(value: Any, where: str) -> int:
    """A GPU count written as a number or a table key ("8")."""
    try:
        ws = int(value)
    except (TypeError, ValueError):
        raise CatalogError(f"{where}: world size {value!r} is not a whole number") from None
    if ws < 1 or isinstance(value, bool) or (isinstance(value, float) and value != ws):
        raise CatalogError(f"{where}: world size {value!r} must be a whole number >= 1")
    return ws


def _seconds(value: Any, what: str) -> float:
    return units.parse_seconds(value, what=what, allow_zero=True)


def _bytes(value: Any, what: str) -> float:
    return units.parse_bytes(value, what=what, allow_zero=True, bare_ok=False)  # every unit written out


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- records: a frozen dataclass as a table's schema ------------------------------------------------

KINDS = (
    "text",
    "flag",
    "count",
    "integer",
    "number",
    "fraction",
    "seconds",
    "size",
    "rate",
    "flops",
    "texts",
    "world_sizes",
    "choice",
)
_INFERRED = {
    "str": "text",
    "bool": "flag",
    "int": "count",
    "float": "number",
    "tuple[str, ...]": "texts",
    "tuple[int, ...]": "world_sizes",
}


def key(
    name: str,
    kind: str | type | Callable[[Table, str], Any] | None = None,
    *,
    default: Any = MISSING,
    factory: Callable[[], Any] | Any = MISSING,
    **options: Any,
) -> Any:
    """A dataclass field read from the table's key `name`: by `kind` (one of `KINDS`; a dataclass:
    the sub-table read as that record; a function `(table, key) -> value`; None: by the field's type,
    str / bool / int / float / tuple[str, ...]), with `options` for that kind (`allowed` of a choice).
    Without a default the key is required; with one, a table without it keeps the default."""
    return field(default=default, default_factory=factory, metadata={_KEY: (name, kind, options)})


def read_record(cls: type[T], table: Table, *, done: bool = True, **given: Any) -> T:
    """`cls` from `table`: every field declared with `key` read by its kind, `given` for the others
    (values the caller worked out); then, unless `done=False`, what the table holds beyond them refused."""
    values = dict(given)
    for f in fields(cls):
        spec = f.metadata.get(_KEY)
        if spec is None or f.name in values:
            continue
        name, kind, options = spec
        if not table.has(name):
            if f.default is MISSING and f.default_factory is MISSING:
                raise table.missing(name)
            continue
        values[f.name] = _read(table, name, kind if kind is not None else _kind_of(f), options)
    if done:
        table.done()
    return cls(**values)


def _kind_of(f: Field) -> str:
    typ = str(f.type).replace(" | None", "")
    if typ not in _INFERRED:
        raise TypeError(f"field {f.name} ({f.type}): say how it is read (datafile.key kind)")
    return _INFERRED[typ]


def _read(table: Table, name: str, kind: Any, options: dict) -> Any:
    if isinstance(kind, type):
        return read_record(kind, table.table(name))
    if callable(kind):
        return kind(table, name)
    return getattr(table, kind)(name, **options)


def record_keys(cls: type) -> tuple[str, ...]:
    """The keys a record's table may hold (beside its notes), in field order."""
    return tuple(f.metadata[_KEY][0] for f in fields(cls) if _KEY in f.metadata)


# --- names -----------------------------------------------------------------------------------------


def check_name(name: Any, where: str) -> str:
    """A name a command takes: text, not empty, without surrounding spaces, and what every name that
    is written or printed must be (quoting.check_name: printable, no leading '-' since a catalog name
    becomes an argument of the launch lines)."""
    if not isinstance(name, str) or not name.strip():
        raise CatalogError(f"{where}: a name must be text, got {name!r}")
    check_printable(name, f"{where}: the name", argument=True, error=CatalogError)
    if name != name.strip():
        raise CatalogError(f"{where}: the name {name!r} starts or ends with a space")
    return name


def fold(name: str) -> str:
    """The form names are compared in: 'HGX-H100' and 'hgx-h100' are one name."""
    return name.casefold()


def find(name: Any, known: Iterable[str]) -> str | None:
    """The known name equal to `name` ignoring case ('HGX-H100' -> 'hgx-h100'), else None."""
    if not isinstance(name, str):
        return None
    names = known if isinstance(known, Mapping) else list(known)
    if name in names:
        return name
    folded = fold(name)
    return next((k for k in names if fold(k) == folded), None)


# --- files ------------------------------------------------------------------------------------------


def parse_toml(text: str, where: str) -> dict:
    """A TOML text parsed, or one line naming the file and TOML's complaint."""
    import tomllib  # only when data is built, not when the data cache has it

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise CatalogError(f"{where}: not valid TOML ({err})") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise CatalogError(
            f"{where}: not valid TOML: arrays or inline tables nested too deeply to read (thousands "
            "of levels); a catalog nests a few"
        ) from None


USER_TOML_MAX_BYTES = 16 * 2**20
"""A user's TOML file larger than this is not a catalog or a profile (the built-in catalog is ~100 KB)."""


def read_toml_file(path: Path | str, what: str = "catalog file") -> dict:
    """A user's TOML file parsed: a regular file read to at most USER_TOML_MAX_BYTES (a FIFO or a
    device is refused before it is read); a missing or unreadable file is one line naming it."""
    from .atomic import read_user_file  # a user's file only: `plan` starts without it

    raw = read_user_file(
        path, what=f"a {what}", limit=USER_TOML_MAX_BYTES, error=CatalogError, missing=f"{path}: no such {what}"
    )
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as err:
        raise CatalogError(f"{path}: cannot read {what} ({err.__class__.__name__})") from None
    return parse_toml(text, str(path))


__all__ = [
    "KINDS",
    "NOTE_KEYS",
    "NOTE_SUFFIXES",
    "Table",
    "check_name",
    "find",
    "fold",
    "is_note",
    "key",
    "parse_toml",
    "read_record",
    "read_toml_file",
    "record_keys",
    "world_size",
]
