"""Write a file so that readers see the old content or the new, never half of either.

Every output shardbudget writes (measurement JSON, profiles, figures, reports, benchmark results)
goes through `write_atomic`: a temp file in the same folder, flushed to disk, then `os.replace`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path


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
