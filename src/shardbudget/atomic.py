"""Write a file so that readers see the old content or the new, never half of either.

Every output shardbudget writes (measurement JSON, profiles, figures, reports, benchmark results)
goes through `write_atomic`: a temp file in the same folder, flushed to disk, then `os.replace`.
`check_output_path` is the one check, made before any work, that a path can be written.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

from .errors import OutputError, ShardbudgetError


def write_atomic(path: str | os.PathLike, data: bytes | str) -> Path:
    """Write `data` to `path` atomically, with the usual file mode (mkstemp's is 0600).

    Raises OSError (with the temp file removed) if the folder is missing or not writable; callers
    turn that into their own one-line error."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def write_json_atomic(path: str | os.PathLike, data) -> Path:
    """`data` as indented JSON with a final newline, atomically, creating missing parent folders
    (benchmark results; user-facing outputs are checked by `check_output_path` first)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, json.dumps(data, indent=2) + "\n")


def check_output_path(path: str | os.PathLike, *, what: str = "the output", suffixes: tuple[str, ...] = (),
                      force: bool = True, error: type[ShardbudgetError] = OutputError) -> Path:
    """`path` as a Path if a file can be written there, else a one-line `error`: a file name with
    one of `suffixes` (any if empty), not a folder, in a folder that exists and is writable, and,
    unless `force`, not an existing file."""
    path = Path(path)
    where = f"cannot write {what} to {path}"
    if suffixes and path.suffix.lower() not in suffixes:
        raise error(f"{where}: expected a {' or '.join(suffixes)} file name, got {path.suffix or 'no extension'!r}")
    if path.is_dir():
        raise error(f"{where}: it is a folder; give a file name")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise error(f"{where}: folder {parent} does not exist")
    if not os.access(parent, os.W_OK):
        raise error(f"{where}: folder {parent} is not writable")
    if path.exists() and not force:
        raise error(f"{path} exists; pass --force to overwrite it")
    return path
