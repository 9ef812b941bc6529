"""The built-in data, built once per content and kept between runs, as Python keeps bytecode.

Reading the catalog, the kernel table and an engine preset means parsing TOML and every unit string
in it ('450 GB/s'), about a fifth of a `plan` run's start-up (issue 24). What they build depends only
on the text read and on shardbudget's own code, so the built object is pickled once into the
package's `__pycache__` and read back while both are unchanged. The file holds two pickles: first
what the object was built from,

    (the Python version, the name, size and mtime of every file of the shardbudget package,
     the texts the caller read)

compared whole with today's (no digest: exact, and no hashing library to import), then the object,
unpickled only when they are equal. Any edited module or data file, another Python, or a text the
caller read differently builds the data again and replaces the file. Nothing is written where Python
writes no bytecode either (`-B`, PYTHONDONTWRITEBYTECODE) or where the package directory is
read-only; a cache file that cannot be read is rebuilt. Only built-in data goes through here: a
user's `--catalog` file is read every time.
"""

from __future__ import annotations

import copyreg
import io
import os
import pickle
import sys
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

T = TypeVar("T")
PACKAGE = Path(__file__).resolve().parent
CACHE_DIR = PACKAGE / "__pycache__"


def read_builtin(relpath: str) -> str:
    """The text of a data file shipped in the package ('catalog/kernels.toml'), read from the package
    folder (importlib.resources and what it imports cost a `plan` run ~8 ms for the same bytes)."""
    return (PACKAGE / relpath).read_text(encoding="utf-8")


@lru_cache(maxsize=1)
def _code_stamp() -> str:
    """Name, size and mtime of every file of the package (its code and its data), with the Python
    version: what the built objects' classes and readers are made of. One scandir per folder and one
    stat per file (0.8 ms for the 177 files, against 2.0 ms through os.walk and relpath)."""
    lines, todo = [sys.version], [str(PACKAGE)]
    while todo:
        with os.scandir(todo.pop()) as entries:
            for e in entries:
                if e.is_dir(follow_symlinks=False):
                    if e.name != "__pycache__":
                        todo.append(e.path)
                else:
                    st = e.stat()
                    lines.append(f"{e.path} {st.st_size} {st.st_mtime_ns}")
    lines[1:] = sorted(lines[1:])
    return "\n".join(lines)


def _path(name: str) -> Path:
    return CACHE_DIR / f"data-{name}.{sys.implementation.cache_tag}.pickle"


def frozen_mapping(d: dict) -> MappingProxyType:
    """A pickled read-only mapping read back (the type itself cannot be named in a pickle)."""
    return MappingProxyType(d)


def _reduce_proxy(proxy: MappingProxyType):
    return frozen_mapping, (dict(proxy),)


def _dumps(made_of: tuple, obj) -> bytes:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, MappingProxyType: _reduce_proxy}  # frozen tables
    pickler.dump(made_of)
    pickler.clear_memo()  # two pickles, each read by its own pickle.load
    pickler.dump(obj)
    return buf.getvalue()


def cached(name: str, texts: Iterable[str], build: Callable[[], T]) -> T:
    """`build()`, or what it returned before for the same `texts` and the same package (module doc).
    Errors of `build` are raised as they are, and nothing is kept."""
    path, made_of = _path(name), (_code_stamp(), name, tuple(texts))
    try:
        with open(path, "rb") as f:
            if pickle.load(f) == made_of:
                return pickle.load(f)
    except Exception:  # missing, or written by a run that was stopped half-way: build it again
        pass
    obj = build()
    if not sys.dont_write_bytecode:
        _store(path, name, made_of, obj)
    return obj


def _store(path: Path, name: str, made_of: tuple, obj) -> None:
    from .atomic import write_atomic  # json and tempfile: only when a file is written

    try:
        data = _dumps(made_of, obj)
        CACHE_DIR.mkdir(exist_ok=True)
        for old in CACHE_DIR.glob(f"data-{name}.*.pickle"):  # older files of this name, another Python's too
            if old != path:
                old.unlink(missing_ok=True)
        write_atomic(path, data, force=True)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):  # read-only install, an unpicklable field
        pass
