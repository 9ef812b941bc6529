"""The committed catalog against a fresh fit (`differences`, `--check`), and the fit written into it
(`write`: the default of `python -m shardbudget.calibrate`).

Tolerance: a value agrees when it is within one unit of its last written digit of the fit
(tables.Field.unit: 0.01 us for a latency written to 0.01, 0.001 for an efficiency, 0.01 GB/s for
"3.74 GB/s"). The fit is deterministic on one machine (closed-form estimators, least squares, medians
over rows in file order); across machines its last bits may differ, which moves a written value by at
most that one unit where the fit lands on a rounding boundary.

A value is rewritten only where it is beyond that tolerance (`settled`): rerun on another machine,
the write changes nothing unless a value moved. The fit starts from the catalog it is written into
(an engine's rows are sorted into one- and two-shot by the efficiencies in place, an NVLS row by the
floors in place), so writing is a fixed point: fit, write, fit the written catalog again, until the
written text no longer changes (`write`, at most `ROUNDS` times, each round in a fresh process that
reads the files just written). Values copied by hand drift from the fit: a8ae633 wrote NVLS's
small-message costs that its own calibrate.py did not fit (issue 35 found them with `--check`).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import tomllib
from pathlib import Path

from ..atomic import write_atomic
from ..datacache import PACKAGE
from .tables import NESTED, RATE, TABLE, Field
from .toml_edit import set_value

CATALOG = PACKAGE / "catalog"
ROUNDS = 6


def _lookup(doc: dict, table: str, key: str):
    node = doc
    for part in table.split("."):
        node = node.get(part, {}) if isinstance(node, dict) else {}
    return node.get(key) if isinstance(node, dict) else None


def _number(field: Field, have) -> float | None:
    if field.kind == RATE:
        m = re.fullmatch(r"\s*([-+0-9.eE]+)\s*GB/s\s*", have) if isinstance(have, str) else None
        return float(m.group(1)) if m else None
    return float(have) if isinstance(have, (int, float)) and not isinstance(have, bool) else None


def _at(field: Field) -> str:
    return f"catalog/{field.file} [{field.table}]"


def _compare(field: Field, name: str, have, want) -> list[str]:
    """What differs between the committed `have` and the fitted `want` (a number or a table)."""
    if isinstance(want, dict):
        have = have if isinstance(have, dict) else {}
        out = []
        for k, v in want.items():
            out += _compare(field, f"{name}.{k}", have.get(k), v)
        if not field.keep_other_keys:
            out += [
                f"{_at(field)} {name}.{k} = {have[k]} is in the catalog but no longer fitted"
                for k in have
                if k not in want
            ]
        return out
    number = _number(field, have)
    if number is None:
        return [f"{_at(field)} {name} missing from the catalog (fit {field.render_number(want)})"]
    if abs(number - want) > field.unit(want) * (1 + 1e-9):
        return [
            f"{_at(field)} {name} = {field.render_number(number)} in the catalog, "
            f"{field.render_number(want)} fitted (tolerance {field.unit(want):g})"
        ]
    return []


def differences(values: dict[Field, object], catalog_dir: Path = CATALOG) -> list[str]:
    """One line per fitted value the catalog in `catalog_dir` does not hold within the tolerance."""
    docs: dict[str, dict] = {}
    out = []
    for field, want in values.items():
        if field.file not in docs:
            docs[field.file] = tomllib.loads((catalog_dir / field.file).read_text(encoding="utf-8"))
        out += _compare(field, field.key, _lookup(docs[field.file], field.table, field.key), want)
    return out


def settled(field: Field, want, have):
    """What is written for a fitted value: the committed one where it is within the tolerance (a value
    is rewritten only when it moved, so that a rerun on another machine, whose fit may round the other
    way at a boundary, writes nothing), else the fit; a table key by key."""
    if isinstance(want, dict):
        have = have if isinstance(have, dict) else {}
        return {k: settled(field, v, have.get(k)) for k, v in want.items()}
    number = _number(field, have)
    return number if number is not None and abs(number - want) <= field.unit(want) * (1 + 1e-9) else want


def _key(k: str) -> str:
    return f'"{k}"' if k.isdigit() or not re.fullmatch(r"[A-Za-z0-9_-]+", k) else k


def _order(keys) -> list[str]:
    return sorted(keys, key=lambda k: (k != "default", not k.isdigit(), int(k) if k.isdigit() else 0, k))


def render(field: Field, want, have=None) -> str:
    """The TOML text of a fitted value; a table keeps the committed table's key order (`have`), the
    keys it lacks added after them (default first, then GPU counts, then names)."""
    if not isinstance(want, dict):
        return field.render_number(want)
    have = have if isinstance(have, dict) else {}
    keys = [k for k in have if k in want or field.keep_other_keys] + _order(k for k in want if k not in have)
    items = []
    for k in keys:
        v = want.get(k, have.get(k))
        if field.kind == NESTED:
            items.append(
                f"{_key(k)} = {render(Field(field.file, field.table, k, TABLE, field.digits), v, have.get(k))}"
            )
        else:
            items.append(f"{_key(k)} = {field.render_number(v) if k in want else _scalar(v)}")
    return "{ " + ", ".join(items) + " }"


def _scalar(v) -> str:
    return json.dumps(v) if isinstance(v, str) else repr(v)


def rewritten(values: dict[Field, object], catalog_dir: Path = CATALOG) -> dict[str, str]:
    """file -> its new text, for each catalog file whose text the fitted values change."""
    texts: dict[str, str] = {}
    for field, want in values.items():
        text = texts.get(field.file) or (catalog_dir / field.file).read_text(encoding="utf-8")
        have = _lookup(tomllib.loads(text), field.table, field.key)
        texts[field.file] = set_value(text, field.table, field.key, render(field, settled(field, want, have), have))
    return {f: t for f, t in texts.items() if t != (catalog_dir / f).read_text(encoding="utf-8")}


def values_to_json(values: dict[Field, object]) -> str:
    return json.dumps(
        [[f.file, f.table, f.key, f.kind, f.digits, f.significant, f.keep_other_keys, v] for f, v in values.items()]
    )


def values_from_json(text: str) -> dict[Field, object]:
    return {Field(*row[:7]): row[7] for row in json.loads(text)}


def _fit_in_child(data_dir: Path | None) -> dict[Field, object]:
    """The fitted values of the catalog as the files now are, fitted in a fresh process."""
    argv = [sys.executable, "-m", "shardbudget.calibrate", "--json"] + (["--data", str(data_dir)] if data_dir else [])
    done = subprocess.run(argv, capture_output=True, text=True, check=True)
    return values_from_json(done.stdout)


def write(data_dir: Path | None = None, catalog_dir: Path = CATALOG, rounds: int = ROUNDS) -> tuple[int, list[str]]:
    """Fit and write until the catalog is its own fit: (rounds run, the files written)."""
    written: list[str] = []
    for i in range(1, rounds + 1):
        changed = rewritten(_fit_in_child(data_dir), catalog_dir)
        if not changed:
            return i, written
        for name, text in changed.items():
            write_atomic(catalog_dir / name, text, force=True)
            written.append(name)
    return rounds, written
