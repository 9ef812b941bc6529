"""Launcher mode (torchrun, srun): this process is one rank, and it watches itself.

Locally a parent watches every rank (`local`); under a launcher nobody does, and a collective
waiting on a peer that went silent (its node lost power, its network is gone: no connection reset
ever arrives) sits in the library until the collective's own timeout, ``--timeout``. So the sweep
(`worker.run_rank`) runs in a thread of its own and the main thread only follows its events, as
local mode's parent does; the rank's watchdog (`worker`, on the heartbeats of `peers`) reports a
peer silent for `protocol.SILENCE_S` with a `peers` and an `aborted` event, and the main thread
reports the failure at once through the harness's usual path: every completed size is already
saved, the file gets ``"complete": false`` and the error, the error names the lost rank, the
process exits 1. A launcher's SIGTERM reaches the main thread at once too (a thread blocked in a
collective cannot run Python's signal handlers).

NCCL can abort its collective (`worker.abort_collectives`); gloo cannot, so a gloo sweep thread can
be left blocked in its receive when the failure has been reported. Then the process ends at
interpreter exit with `os._exit` (after flushing stdout and stderr): a normal exit would first wait
for that thread's collective to time out (gloo's process group joins its work on destruction).
"""

from __future__ import annotations

import atexit
import os
import queue
import sys
import threading
from typing import Any

from .launchers import Launch, LauncherStopped, stops_reported, tcp_init
from .peers import describe, short_error
from .protocol import SILENCE_S, Event, RankConfig
from .recorder import Recorder
from .results import RunFailed, size_text

_RETURNED, _RAISED = "_returned", "_raised"  # the sweep thread's end, as events of the queue
LEFT_BEHIND_EXIT_CODE = 1  # MeasureRunError's: the failure was reported before the exit


class CollectiveAborted(RuntimeError):
    """The watchdog stopped waiting on a silent peer (its name in the error's words)."""


def run_launched(base: dict[str, Any], launch: Launch, timeout_s: float, recorder: Recorder) -> None:
    """Run this rank's sweep; raises RunFailed naming where and why it stopped."""
    from . import worker  # imports torch, which stays out of `import shardbudget`

    init = "env://" if launch.name == "torchrun" else tcp_init(launch.master_addr, launch.master_port)
    cfg = RankConfig(
        **base,
        rank=launch.rank,
        world_size=launch.world_size,
        local_rank=launch.local_rank,
        init_method=init,
        pg_timeout_s=timeout_s,
        report_all_ranks=True,
        watch_peers=True,
    )
    seen: dict[str, Any] = {"index": -1, "hosts": [], "addrs": [], "peers": None}
    events: queue.Queue[dict[str, Any]] = queue.Queue()
    sweep = threading.Thread(
        target=_sweep, args=(worker.run_rank, cfg, events.put), name="shardbudget-sweep", daemon=True
    )
    try:
        with stops_reported(launch, worker.failing):
            sweep.start()
            _follow(events, recorder, seen, worker.give_up)
    except KeyboardInterrupt:
        _exit_when_done(sweep, cfg.backend, code=130)
        raise
    except Exception as exc:
        _exit_when_done(sweep, cfg.backend, code=LEFT_BEHIND_EXIT_CODE)
        raise RunFailed(_launched_failure(exc, cfg, launch, seen)) from exc


def _sweep(run_rank, cfg: RankConfig, put) -> None:
    try:
        run_rank(cfg, put)
    except BaseException as exc:  # noqa: BLE001 - handed to the main thread, which reports it
        put({"ev": _RAISED, "exc": exc})
    else:
        put({"ev": _RETURNED})


def _follow(events: queue.Queue, recorder: Recorder, seen: dict[str, Any], give_up) -> None:
    """The sweep's events, in order, until it returns (or raises, or the watchdog aborts it)."""
    while True:
        try:
            ev = events.get()  # a signal handler's exception (SIGTERM, Ctrl-C) comes out of here
        except LauncherStopped as exc:  # nothing was failing yet: find out who is gone
            seen["peers"] = give_up(short_error(str(exc)))[1] or seen["peers"]
            raise
        kind = ev["ev"]
        if kind == _RETURNED:
            return
        if kind == _RAISED:
            raise ev["exc"]
        if kind == Event.ABORTED:
            raise CollectiveAborted(
                f"stopped waiting on a peer silent for {SILENCE_S:g} s (the "
                "collective itself would have waited for --timeout)"
            )
        _record(ev, recorder, seen)


def _record(ev: dict[str, Any], recorder: Recorder, seen: dict[str, Any]) -> None:
    if ev["ev"] == Event.READY:
        seen.update(hosts=ev["hosts"], addrs=ev.get("addrs") or [])
        recorder.hosts(ev["hosts"], ev.get("addrs"))
    elif ev["ev"] == Event.START:
        seen["index"] = ev["index"]
        recorder.started(ev["index"])
    elif ev["ev"] == Event.RESULT:
        recorder.completed(ev["index"], ev["samples_s"], ev["wrong_by_rank"])
    elif ev["ev"] == Event.PEERS:
        seen["peers"] = ev["report"]


def _exit_when_done(sweep: threading.Thread, backend: str, *, code: int) -> None:
    """A sweep thread still blocked in a collective (gloo cannot abort one) would hold the exit until
    the collective's own timeout: once the failure is reported and Python exits, end at once."""
    # an aborted NCCL collective unwinds (and destroys its group) in this time; a gloo one never does
    sweep.join(timeout=1.0 if backend == "nccl" else 0.1)
    if sweep.is_alive():
        atexit.register(_hard_exit, code)


def _hard_exit(code: int) -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    os._exit(code)


def _launched_failure(exc: BaseException, cfg: RankConfig, launch: Launch, seen: dict[str, Any]) -> str:
    """'rank 0 stopped at size 64 B: lost rank 1 (node-b, 10.0.0.2): no heartbeat for 2.5 s; ...'."""
    index = seen["index"]
    at = f"at size {size_text(cfg.sizes_bytes[index])}" if index >= 0 else "before the first size"
    error = f"{type(exc).__name__}: {short_error(str(exc))}"
    peers = describe(
        seen["peers"], rank=launch.rank, index=index, error=str(exc), hosts=seen["hosts"], addrs=seen["addrs"]
    )
    if peers:
        return f"rank {launch.rank} stopped {at}: {peers}; {error}"
    # Nothing more to go on: a peer's own log (or the launcher's) has the rest.
    return f"rank {launch.rank} stopped {at}: {error} (if a peer died or hung, {launch.name}'s log names it)"
