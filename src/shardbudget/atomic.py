"""The files a user hands shardbudget and the files it writes: read within a bound, written atomically.

Reading: every file a user names (a model's config.json, a `--catalog` or `--gpu-spec` TOML, the
logs of `check`, `fit`, `--measured` and `--jitter`, `topo`'s input) goes through `read_user_file`.
It reads regular files only: a FIFO, a device (/dev/zero, /dev/urandom), a socket or a folder is
refused before anything is read, and the file is opened with O_NONBLOCK, so one swapped in after
that check cannot block the open either. It reads at most `limit` + 1 bytes and refuses the file
past `limit`, naming it: the bound is on the bytes read, not on `st_size` (0 for /proc files and
devices).

Writing: every output (measurement JSON, profiles, figures, reports, deploy's launch files,
benchmark results) goes through `write_atomic`, so readers see the old content or the new, never
half of either:

* the data goes to a hidden temporary file in the target's folder (``.NAME.PID@HOST.XXXXXXXX.tmp``),
  created with the mode a new file gets (0666 less the umask), flushed to disk;
* without `force` it is then hard-linked to the target, which fails if the target exists: a file
  that appeared since the command checked the path (another run writing the same name) is refused
  with an `OutputError`, never silently replaced; with `force` it is renamed over the target
  (`os.replace`) after taking the replaced file's permission bits (a 0600 file stays 0600);
* the temporary file is removed on every way out: an error, Ctrl-C (KeyboardInterrupt) and, in the
  main thread, SIGTERM and SIGHUP (turned into `SystemExit` for the length of the write, exit
  status 128 + the signal, as the default action would give). A process killed outright (SIGKILL)
  cannot clean up: its temporary files are removed by the next write of the same target on the same
  host, once their process is gone.

`check_output_path` is the one check, made before any work, that a path can be written.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import signal
import stat
import threading
from collections.abc import Iterator
from pathlib import Path

from .errors import OutputError, ShardbudgetError

_CHUNK = 1 << 20


# --- reading --------------------------------------------------------------------------------


def read_user_file(
    path: str | os.PathLike,
    *,
    what: str,
    limit: int,
    error: type[ShardbudgetError] = ShardbudgetError,
    missing: str | None = None,
) -> bytes:
    """The bytes of the regular file at `path`, at most `limit` of them; else a one-line `error`
    naming the file and `what` was expected (a missing file, a folder, a FIFO or device, a file
    larger than `limit`, an unreadable one). `missing` replaces the message for a missing file."""
    source = os.fspath(path)
    try:
        _require_regular(os.stat(source).st_mode, source, what, error)
        fd = os.open(source, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise error(missing or f"{source}: no such file (expected {what})") from None
    except (OSError, ValueError) as err:  # permission, a name too long, an embedded NUL
        raise error(f"{source}: cannot be read ({getattr(err, 'strerror', None) or err})") from None
    try:
        _require_regular(os.fstat(fd).st_mode, source, what, error)  # swapped since the stat
        data = _read_at_most(fd, limit + 1)
    except OSError as err:
        raise error(f"{source}: cannot be read ({err.strerror or err})") from None
    finally:
        os.close(fd)
    if len(data) > limit:
        raise error(f"{source}: larger than {_size(limit)} (read stopped there); expected {what}")
    return data


def _require_regular(mode: int, source: str, what: str, error: type[ShardbudgetError]) -> None:
    if stat.S_ISREG(mode):
        return
    kind = (
        "a directory"
        if stat.S_ISDIR(mode)
        else "a FIFO (named pipe)"
        if stat.S_ISFIFO(mode)
        else "a device"
        if stat.S_ISCHR(mode) or stat.S_ISBLK(mode)
        else "a socket"
        if stat.S_ISSOCK(mode)
        else "not a regular file"
    )
    raise error(f"{source}: is {kind}, not a regular file; expected {what}")


def _read_at_most(fd: int, n: int) -> bytes:
    chunks, left = [], n
    while left > 0:
        chunk = os.read(fd, min(_CHUNK, left))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _size(n_bytes: int) -> str:
    """'256 MiB' (kept here: units imports more than the ground floor needs at write time)."""
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if n_bytes >= scale and n_bytes % scale == 0:
            return f"{n_bytes // scale} {unit}"
    return f"{n_bytes} B"


# --- writing --------------------------------------------------------------------------------


def write_atomic(path: str | os.PathLike, data: bytes | str, *, force: bool) -> Path:
    """Write `data` to `path` atomically (module docstring): without `force` an existing file is an
    `OutputError` and is left as it is; with `force` it is replaced, keeping its permission bits.

    Raises OSError (the temporary file removed) if the folder is missing or not writable; callers
    turn that into their own one-line error."""
    path = Path(path)
    payload = data.encode("utf-8") if isinstance(data, str) else data
    folder = path.parent if str(path.parent) else Path(".")
    _sweep(folder, path.name)
    with _signals_raise():
        fd, tmp = _create_temp(folder, path.name)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(payload)
                fh.flush()
                os.fsync(fh.fileno())
            _put_in_place(tmp, path, force=force)
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)  # after a link the target holds the data; after a rename it is gone
    return path


def _put_in_place(tmp: Path, path: Path, *, force: bool) -> None:
    if force:
        try:
            os.chmod(tmp, stat.S_IMODE(os.stat(path).st_mode))
        except FileNotFoundError:
            pass  # a new file: the umask's mode, as created
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise OutputError(
            f"{path} exists (written since this command checked it: another run writing the same "
            "file?); it was left as it is; pass --force to replace it"
        ) from None
    except OSError as err:
        if err.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.EMLINK):
            raise
        _create_exclusive(path)  # a file system without hard links: claim the name, then rename over it
        os.replace(tmp, path)


def _create_exclusive(path: Path) -> None:
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666))
    except FileExistsError:
        raise OutputError(
            f"{path} exists (written since this command checked it: another run writing the same "
            "file?); it was left as it is; pass --force to replace it"
        ) from None


def _host() -> str:
    return re.sub(r"[^A-Za-z0-9-]", "-", os.uname().nodename)[:64] or "host"


def _create_temp(folder: Path, name: str) -> tuple[int, Path]:
    """A new hidden file beside the target, mode 0666 less the umask (mkstemp's would be 0600)."""
    for _ in range(100):
        tmp = folder / f".{name}.{os.getpid()}@{_host()}.{os.urandom(4).hex()}.tmp"
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0), 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(folder))


def _sweep(folder: Path, name: str) -> None:
    """Remove the temporary files of `name` left by processes of this host that no longer run (a
    write killed outright: SIGKILL, a power cut before the reboot's cleanup cannot run here)."""
    pattern = re.compile(rf"\.{re.escape(name)}\.([0-9]{{1,10}})@{re.escape(_host())}\.[0-9a-f]{{8}}\.tmp")
    try:
        entries = [e.name for e in os.scandir(folder) if e.name.startswith(f".{name}.")]
    except OSError:
        return
    for entry in entries:
        m = pattern.fullmatch(entry)
        if m and not _alive(int(m.group(1))):
            with contextlib.suppress(OSError):
                os.unlink(folder / entry)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OverflowError, OSError):
        return True  # another user's process, or cannot tell: leave its file
    return True


class _Terminated(SystemExit):
    """SIGTERM / SIGHUP during a write: leaves through every `finally`, then exits as the signal would."""


def _raise_terminated(signum, frame) -> None:
    raise _Terminated(128 + signum)


@contextlib.contextmanager
def _signals_raise() -> Iterator[None]:
    """SIGTERM and SIGHUP raise (`_Terminated`) for the length of the block where their action is the
    default and this is the main thread (signal handlers can be set only there); SIGINT already
    raises KeyboardInterrupt."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    saved = {}
    for sig in (signal.SIGTERM, getattr(signal, "SIGHUP", None)):
        if sig is not None and signal.getsignal(sig) is signal.SIG_DFL:
            saved[sig] = signal.signal(sig, _raise_terminated)
    try:
        yield
    finally:
        for sig, previous in saved.items():
            signal.signal(sig, previous)


def write_json_atomic(path: str | os.PathLike, data) -> Path:
    """`data` as indented JSON with a final newline, atomically, replacing the file, creating missing
    parent folders (benchmark results; user-facing outputs are checked by `check_output_path` first)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return write_atomic(path, json.dumps(data, indent=2) + "\n", force=True)


def check_output_path(
    path: str | os.PathLike,
    *,
    what: str = "the output",
    suffixes: tuple[str, ...] = (),
    force: bool = True,
    error: type[ShardbudgetError] = OutputError,
) -> Path:
    """`path` as a Path if a file can be written there, else a one-line `error`: a file name with
    one of `suffixes` (any if empty), not a folder, in a folder that exists and is writable, and,
    unless `force`, not an existing file. `write_atomic` checks the last again when it writes."""
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
