"""The built-in data, built once per content and kept between runs, as Python keeps bytecode.

Reading the catalog, the kernel table and an engine preset means parsing TOML and every unit string
in it ('450 GB/s'), about a fifth of a `plan` run's start-up (issue 24). What they build depends only
on the text read and on shardbudget's own code, so the built object is pickled once into the
package's `__pycache__` and read back while both are unchanged:

    key = sha256(the texts read, the Python version, the name, size and mtime of every file of the
                 shardbudget package)

Any edited module or data file, another Python, or a text the caller read differently gives another
key, and the data is built again (files of older keys of the same name are removed then). Nothing is
written where Python writes no bytecode either (`-B`, PYTHONDONTWRITEBYTECODE) or where the package
directory is read-only; a cache file that cannot be read is rebuilt. Only built-in data goes through
here: a user's `--catalog` file is read every time.
"""

from __future__ import annotations

import copyreg
import hashlib
import io
import os
import pickle
import sys
from collections.abc import Callable, Iterable
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import TypeVar

from .atomic import write_atomic

T = TypeVar("T")
PACKAGE = Path(__file__).resolve().parent
CACHE_DIR = PACKAGE / "__pycache__"


@lru_cache(maxsize=1)
def _code_stamp() -> bytes:
    """Name, size and mtime of every file of the package (its code and its data), with the Python
    version: what the built objects' classes and readers are made of."""
    h = hashlib.sha256(sys.version.encode())
    for dirpath, dirnames, filenames in os.walk(PACKAGE):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            st = os.stat(os.path.join(dirpath, name))
            h.update(f"{os.path.relpath(dirpath, PACKAGE)}/{name} {st.st_size} {st.st_mtime_ns}\n".encode())
    return h.digest()


def key(name: str, texts: Iterable[str]) -> str:
    h = hashlib.sha256(_code_stamp() + name.encode())
    for text in texts:
        h.update(hashlib.sha256(text.encode("utf-8")).digest())
    return h.hexdigest()[:24]


def frozen_mapping(d: dict) -> MappingProxyType:
    """A pickled read-only mapping read back (the type itself cannot be named in a pickle)."""
    return MappingProxyType(d)


def _reduce_proxy(proxy: MappingProxyType):
    return frozen_mapping, (dict(proxy),)


def _dumps(obj) -> bytes:
    buf = io.BytesIO()
    pickler = pickle.Pickler(buf, protocol=pickle.HIGHEST_PROTOCOL)
    pickler.dispatch_table = {**copyreg.dispatch_table, MappingProxyType: _reduce_proxy}  # frozen tables
    pickler.dump(obj)
    return buf.getvalue()


def cached(name: str, texts: Iterable[str], build: Callable[[], T]) -> T:
    """`build()`, or what it returned before for the same `texts` and the same package (module doc).
    Errors of `build` are raised as they are, and nothing is kept."""
    path = CACHE_DIR / f"data-{name}.{key(name, texts)}.pickle"
    try:
        with open(path, "rb") as f:
            return pickle.load(f)
    except Exception:  # missing, or written by a run that was stopped half-way: build it again
        pass
    obj = build()
    if not sys.dont_write_bytecode:
        _store(path, name, obj)
    return obj


def _store(path: Path, name: str, obj) -> None:
    try:
        data = _dumps(obj)
        CACHE_DIR.mkdir(exist_ok=True)
        for old in CACHE_DIR.glob(f"data-{name}.*.pickle"):
            if old != path:
                old.unlink(missing_ok=True)
        write_atomic(path, data)
    except (OSError, pickle.PicklingError, TypeError, AttributeError):  # read-only install, an unpicklable field
        pass
