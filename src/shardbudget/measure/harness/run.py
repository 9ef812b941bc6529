"""Collective benchmark on `torch.distributed`: nccl-tests numbers from real processes.

`run_measure` times all-reduce, all-gather, reduce-scatter or all-to-all over a sweep of sizes and
returns a `MeasureResult`; `command` (``shardbudget measure``) is a thin shell over it. The transport
is always torch's (gloo on CPUs, NCCL on GPUs); this module only launches, times and bookkeeps.
It never imports torch at module level, so ``import shardbudget`` works without it.

The parts it drives are listed in the `shardbudget.measure.harness` package docstring; `protocol` is all
that the parent and the ranks (`worker`) share.

What the numbers mean (nccl-tests ``doc/PERFORMANCE.md`` and ``src/*.cu``)
-------------------------------------------------------------------------
size (``bytes``)
    nccl-tests' "size" column, which is the *larger* of the send and receive buffers of one rank:

    =============== ============================================ ==================================
    op              ``bytes`` is                                 ``count`` (elements) is
    =============== ============================================ ==================================
    all-reduce      the buffer each rank reduces (in = out)      bytes / elem_size
    all-gather      the gathered output = per-rank send × n      the per-rank send count
    reduce-scatter  the input = per-rank output × n              the per-rank receive count
    all-to-all      each rank's send (= receive) buffer          the count sent to each peer
    =============== ============================================ ==================================

    A requested size is rounded *up* to whole elements (and, where the buffer is split into n
    chunks, to a multiple of n elements) so no size becomes 0; each rounding is listed in `notes`.
time
    Per iteration, the time of one collective is the **slowest rank's** (an all-reduce MAX of the
    per-rank times, as nccl-tests does), so a rank that enters late is not hidden by its peers.
    gloo: ``time.perf_counter`` around the (blocking) call, after a barrier. NCCL: CUDA events
    around the call, after a barrier and a device synchronize. We report the median (``time_s``),
    min and p99 over the iterations, and keep every sample; nccl-tests prints the mean instead.
    Warm-up iterations run before each size (nccl-tests warms up once), which keeps CPU runs stable.
algbw, busbw
    algbw = bytes / median time. busbw = algbw × factor, where the factor turns the algorithm
    bandwidth into the per-link rate a ring would need: all-reduce 2(n−1)/n (n−1 reduce steps and
    n−1 copy steps over n links), all-gather, reduce-scatter, all-to-all (n−1)/n (one half of that).
#wrong
    With ``check``, each size is run once more on known data and every rank counts the elements
    that differ from the expected result (all-reduce: rank r sends r+1, the sum is n(n+1)/2;
    all-gather / all-to-all: each chunk must come from the right rank). Without it: None ("N/A").

Launchers
---------
Locally, `run_measure` starts ``nproc`` worker processes (``python -m shardbudget.measure.harness.worker``),
one rank each, rendezvous on 127.0.0.1 and a free port. Under ``torchrun`` (RANK, WORLD_SIZE,
MASTER_ADDR, MASTER_PORT set) or ``srun`` (SLURM_PROCID, SLURM_STEP_NUM_TASKS set) the calling
process *is* a rank: nothing is spawned, and only rank 0 prints and writes the output file.

Faults
------
A rank that dies, fails or stops making progress ends the run within ``timeout_s`` (the longest one
size may take; start-up gets `STARTUP_ALLOWANCE_S` more to import torch). The error names the rank
and the size it was at, and every completed size stays in the output file with
``"complete": false``. Locally the bookkeeping lives in the parent: rank 0 reports each completed
size on its stdout as it finishes, so a rank that is killed loses nothing already measured.
Under a launcher (torchrun, srun; one node or many) there is no parent watching every rank:
each rank counts up a heartbeat in the rendezvous store and records the size it starts, and a rank
whose collective fails reads them back before exiting, so its error names the rank that is gone
("lost rank 1 (node-b, 10.0.0.2): no heartbeat for 2.5 s") or the one that never started the size
(see `peers`). Rank 0 saves what it completed either way and exits non-zero. A peer that goes
*silent* (its node frozen or its network gone: no connection reset ever arrives) would leave the
survivors' collective waiting for ``timeout_s``; so each rank's watchdog reads the heartbeats during
the sweep, and a peer silent for `protocol.SILENCE_S` ends the run within a few seconds, reported
the same way (`launched`: NCCL's collective is aborted; gloo's cannot be, so the rank reports without
it and leaves the process with ``os._exit`` at exit). On NCCL a collective past ``timeout_s`` raises
(``TORCH_NCCL_ASYNC_ERROR_HANDLING=2``) rather than killing the rank with nothing said.

Output
------
``out`` gets ``MeasureResult.to_dict()``, rewritten atomically (temp file + ``os.replace``) after
every completed size: ``tool``, ``version``, ``env`` (torch, backend, hosts, world_size, n_nodes,
launcher, command, time_utc, python), ``op``, ``world_size``, ``n_nodes``, ``backend``, ``dtype``,
``iters``, ``warmup``, ``check``, ``notes``, ``results`` (per size: ``bytes``, ``requested_bytes``,
``count``, ``time_s`` (= median), ``median_s``, ``min_s``, ``p99_s``, ``algbw_bytes_per_s``,
``busbw_bytes_per_s``, ``wrong`` (int, or null without check), ``wrong_by_rank``, ``samples_s``),
``complete`` and ``error``. An existing file is refused unless ``force``.

Test hook (not a user feature)
------------------------------
``SHARDBUDGET_FAULT=KIND@RANK[:SIZE][,...]`` makes rank RANK misbehave at size SIZE (the ``bytes``
value, e.g. ``1KiB``; all sizes when left out): ``crash`` kills itself with SIGKILL after starting
the size, ``hang`` sleeps forever before starting it, ``wrong-reduction`` adds 1 to one element of
its result before ``check`` compares it. The integration tests use it to show the guards work. It is
inert outside the test suite: only a source checkout's ``tests/hooks`` folder, put on the path by
``tests/conftest.py``, arms it (`protocol.armed_faults`); an installed build ignores the variable.
"""

from __future__ import annotations

import importlib.util
import platform
import shlex
import socket
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from ...atomic import check_output_path
from ...errors import MeasureError
from .preflight import check_cuda, check_host, check_port_free, check_request, free_port
from .launched import run_launched
from .launchers import Launch, detect_launcher
from .local import run_local
from .protocol import FAULT_ENV, armed_faults, parse_faults  # noqa: F401 (FAULT_ENV: tests import it from here)
from .recorder import Recorder
from .results import MeasureResult, MeasureRunError, RunFailed, SizeResult, plan_sizes, version

TORCH_MISSING = "torch is not installed; pip install 'shardbudget[measure]' (CPU: pip install torch==2.13.0)"


def run_measure(
    *,
    backend: str = "gloo",
    nproc: int | None = None,
    op: str = "all-reduce",
    sizes_bytes: list[float],
    dtype: str = "fp32",
    iters: int = 20,
    warmup: int = 5,
    check: bool = False,
    out: str | None = None,
    force: bool = False,
    timeout_s: float = 120.0,
    master_addr: str = "127.0.0.1",
    master_port: int | None = None,
    progress: bool = True,
    on_size: Callable[[SizeResult], None] | None = None,
) -> MeasureResult:
    """Time one collective over a sweep of sizes on `nproc` ranks; see the module docstring.

    `op` and `dtype` take any spelling `collective_op` and `dtypes` know ("all_reduce",
    "bfloat16"); the result holds the canonical ones. `nproc` defaults to 2 locally and to the
    launcher's world size under torchrun / srun (giving a different number there is an error).
    `on_size` is called with each completed row on the reporting rank (rank 0), e.g. to print the
    table as it grows. Raises `MeasureError` before any work for bad input, and `MeasureRunError`
    (with `.result`, partial or failing the check) when a run fails; Ctrl-C saves what was
    measured and re-raises KeyboardInterrupt.
    """
    launch = detect_launcher()
    world_size = _world_size(nproc, launch)
    the_op, dtype_name = check_request(
        backend=backend,
        op=op,
        dtype=dtype,
        iters=iters,
        warmup=warmup,
        check=check,
        timeout_s=timeout_s,
        sizes_bytes=sizes_bytes,
        world_size=world_size,
    )
    faults = armed_faults()  # the test hook: "" outside the test suite (protocol.FAULT_HOOK)
    parse_faults(faults)  # a typo'd hook must fail loudly, not measure a healthy run
    if not _torch_installed():
        raise MeasureError(TORCH_MISSING)
    reporting = launch is None or launch.rank == 0
    if reporting and out is not None:
        check_output_path(out, what="the measurement JSON", force=force, error=MeasureError)
    if launch is None:
        master_addr, master_port = _local_rendezvous(master_addr, master_port)
    check_cuda(backend, world_size if launch is None else launch.local_rank + 1)

    plan, notes = plan_sizes(sizes_bytes, the_op, dtype_name, world_size)
    result = MeasureResult(
        op=the_op,
        backend=backend,
        dtype=dtype_name,
        world_size=world_size,
        n_nodes=1,
        iters=iters,
        warmup=warmup,
        check=check,
        notes=notes,
        out_path=out if reporting else None,
        env=_environment(backend, world_size, launch),
    )
    # Every rank keeps the rows (they are all-reduced); only the reporting one prints and saves.
    recorder = Recorder(result, plan, on_size if reporting else None, progress and reporting, force=force)
    base = dict(
        backend=backend,
        op=the_op,
        dtype=dtype_name,
        sizes_bytes=[p.size_bytes for p in plan],
        iters=iters,
        warmup=warmup,
        check=check,
        faults=faults,
    )
    return _execute(
        base,
        launch=launch,
        world_size=world_size,
        master_addr=master_addr,
        master_port=master_port,
        timeout_s=timeout_s,
        recorder=recorder,
    )


def _torch_installed() -> bool:
    return importlib.util.find_spec("torch") is not None


def _local_rendezvous(master_addr: str, master_port: int | None) -> tuple[str, int]:
    """The checked address, and the given port if it is free or else a free one."""
    master_addr = check_host(master_addr)
    if master_port is None:
        return master_addr, free_port(master_addr)
    check_port_free(master_addr, master_port)
    return master_addr, master_port


def _execute(
    base: dict[str, Any],
    *,
    launch: Launch | None,
    world_size: int,
    master_addr: str,
    master_port: int | None,
    timeout_s: float,
    recorder: Recorder,
) -> MeasureResult:
    try:
        if launch is None:
            assert master_port is not None
            run_local(
                base,
                world_size=world_size,
                master_addr=master_addr,
                master_port=master_port,
                timeout_s=timeout_s,
                recorder=recorder,
            )
        else:
            run_launched(base, launch, timeout_s, recorder)
    except RunFailed as exc:
        message = f"{exc}; {recorder.kept()}"
        raise MeasureRunError(message, recorder.finish(message)) from None
    except KeyboardInterrupt:
        recorder.finish("interrupted (Ctrl-C)")
        raise
    finally:
        recorder.close()  # whatever escaped, the terminal gets its cursor back
    wrong = recorder.result.failed_checks
    if wrong:
        message = "check failed: " + "; ".join(wrong)
        raise MeasureRunError(message, recorder.finish(message))
    return recorder.finish(None)


# --- where and how it ran ---------------------------------------------------------------------


def _world_size(nproc: int | None, launch: Launch | None) -> int:
    if launch is None:
        return 2 if nproc is None else int(nproc)
    if nproc is not None and nproc != launch.world_size:
        raise MeasureError(
            f"{launch.name} provides a world size of {launch.world_size}, but "
            f"{nproc} ranks were requested; drop --nproc or relaunch with {nproc}"
        )
    return launch.world_size


def _environment(backend: str, world_size: int, launch: Launch | None) -> dict[str, Any]:
    return {
        "torch": version("torch"),
        "backend": backend,
        "hosts": [socket.gethostname()],
        "world_size": world_size,
        "n_nodes": 1,
        "launcher": launch.name if launch else "local",
        "command": _command_line(),
        "time_utc": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "python": platform.python_version(),
    }


def _command_line() -> str:
    if not sys.argv or not sys.argv[0]:
        return ""
    head = Path(sys.argv[0]).name
    # `python -m shardbudget.measure` leaves .../measure/__main__.py in argv[0]; the module's
    # spec names what was run, wherever the package is installed
    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    if head == "__main__.py" and spec is not None:
        head = f"python -m {spec.name.removesuffix('.__main__')}"
    return " ".join([head, shlex.join(sys.argv[1:])]).strip()


__all__ = ["MeasureResult", "MeasureRunError", "SizeResult", "run_measure"]
