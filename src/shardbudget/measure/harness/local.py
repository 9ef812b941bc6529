"""Local mode: spawn one worker process per rank and supervise them from the parent.

The ranks rendezvous on the given address and port; rank 0 reports each completed size on its
stdout as it finishes, so a rank that is killed loses nothing already measured. The parent is the
watchdog: a rank that dies, fails or makes no progress for ``timeout_s`` ends the run, and the
error names the rank and the size it was at.
"""

from __future__ import annotations

import math
import os
import queue
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .preflight import is_loopback
from .launchers import tcp_init
from .protocol import STARTUP_ALLOWANCE_S, Event, RankConfig, read_event_line
from .recorder import Recorder
from .results import RunFailed, size_text


def run_local(
    base: dict[str, Any], *, world_size: int, master_addr: str, master_port: int, timeout_s: float, recorder: Recorder
) -> None:
    """Run the sweep `base` describes on `world_size` local ranks; raises RunFailed."""
    configs = [
        RankConfig(
            **base,
            rank=r,
            world_size=world_size,
            local_rank=r,
            init_method=tcp_init(master_addr, master_port),
            # the parent is the watchdog; the ranks' own timeout is a backstop
            pg_timeout_s=timeout_s + STARTUP_ALLOWANCE_S,
            report_all_ranks=False,
        )
        for r in range(world_size)
    ]
    ranks = LocalRanks()
    try:
        ranks.start(configs, worker_env(master_addr))
        Supervisor(ranks, recorder, world_size, timeout_s).run()
    finally:
        ranks.stop()


def worker_env(master_addr: str) -> dict[str, str]:
    env = dict(os.environ)
    src_dir = str(Path(__file__).resolve().parents[3])  # src/: the workers import this very package
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [src_dir, env.get("PYTHONPATH")]))
    env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun does: P ranks must not oversubscribe
    if is_loopback(master_addr) and "GLOO_SOCKET_IFNAME" not in env:
        loopback = [name for _, name in socket.if_nameindex() if name.startswith("lo")]
        if loopback:  # gloo binds the hostname's address by default, which may not be local
            env["GLOO_SOCKET_IFNAME"] = loopback[0]
    for key in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT"):
        env.pop(key, None)  # the ranks get their place from RankConfig, not a stale launcher
    return env


class LocalRanks:
    """One worker process per rank; their protocol lines arrive on one queue as events."""

    def __init__(self) -> None:
        self.events: queue.Queue[tuple[float, dict[str, Any]]] = queue.Queue()
        self.stderr: list[Any] = []
        self.procs: list[subprocess.Popen[bytes]] = []
        self.threads: list[threading.Thread] = []

    def start(self, configs: list[RankConfig], env: dict[str, str]) -> None:
        for cfg in configs:
            err = tempfile.TemporaryFile()
            self.stderr.append(err)
            proc = subprocess.Popen(
                [sys.executable, "-m", "shardbudget.measure.harness.worker", cfg.to_json()],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=err,
                env=env,
                start_new_session=True,
            )  # Ctrl-C reaches the parent only; it stops the ranks
            self.procs.append(proc)
            thread = threading.Thread(target=self._read, args=(cfg.rank, proc), daemon=True)
            thread.start()
            self.threads.append(thread)

    def _read(self, rank: int, proc: subprocess.Popen[bytes]) -> None:
        assert proc.stdout is not None
        for raw in proc.stdout:
            event = read_event_line(raw.decode("utf-8", "replace"))
            if event is not None:
                self.events.put((time.monotonic(), {**event, "rank": rank}))
        code = proc.wait()
        self.events.put((time.monotonic(), {"ev": Event.EXIT, "rank": rank, "code": code}))

    def next_event(self, wait_s: float) -> tuple[float, dict[str, Any]] | None:
        try:
            return self.events.get(timeout=wait_s)
        except queue.Empty:
            return None

    def stderr_tail(self, rank: int) -> str:
        err = self.stderr[rank]
        err.seek(0)
        lines = [ln for ln in err.read().decode("utf-8", "replace").splitlines() if ln.strip()]
        return lines[-1].strip() if lines else ""

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.kill()
        for proc in self.procs:
            proc.wait()
        for thread in self.threads:
            thread.join(timeout=5)
        for err in self.stderr:
            err.close()


@dataclass
class RankState:
    ready: bool = False
    index: int = -1  # last size index this rank started
    done: bool = False
    error: str | None = None
    error_t: float | None = None
    exit_code: int | None = None
    exit_t: float | None = None

    @property
    def failed(self) -> bool:
        return bool(self.error) or (self.exit_code is not None and (self.exit_code != 0 or not self.done))


class Supervisor:
    """Turns worker events into bookkeeping and decides when a run has failed or hung."""

    GRACE_S = 0.5  # after a first failure, let the others arrive so the first cause is named

    def __init__(self, ranks: LocalRanks, recorder: Recorder, world_size: int, timeout_s: float):
        self.ranks, self.recorder, self.timeout_s = ranks, recorder, timeout_s
        self.state = [RankState() for _ in range(world_size)]

    def run(self) -> None:
        last_progress_t = time.monotonic()
        while not all(s.done and s.exit_code == 0 for s in self.state):
            got = self.ranks.next_event(0.1)
            if got:
                last_progress_t = got[0]
                self._handle(*got)
            if any(s.failed for s in self.state):
                self._drain(self.GRACE_S)
                raise RunFailed(self._death_message())
            limit_s = self.timeout_s + (0 if self._all_ready() else STARTUP_ALLOWANCE_S)
            if time.monotonic() - last_progress_t > limit_s:
                raise RunFailed(self._hang_message(limit_s))

    def _handle(self, t: float, ev: dict[str, Any]) -> None:
        st = self.state[ev["rank"]]
        kind = ev["ev"]
        if kind == Event.READY:
            st.ready = True
            if ev["rank"] == 0:
                self.recorder.hosts(ev["hosts"])
        elif kind == Event.START:
            st.index = ev["index"]
            if ev["rank"] == 0:
                self.recorder.started(ev["index"])
        elif kind == Event.RESULT:
            self.recorder.completed(ev["index"], ev["samples_s"], ev["wrong_by_rank"])
        elif kind == Event.DONE:
            st.done = True
        elif kind == Event.ERROR:
            st.error, st.error_t = ev["message"], t
        elif kind == Event.EXIT:
            st.exit_code, st.exit_t = ev["code"], t

    def _drain(self, wait_s: float) -> None:
        end = time.monotonic() + wait_s
        while (left := end - time.monotonic()) > 0:
            got = self.ranks.next_event(left)
            if got:
                self._handle(*got)

    def _all_ready(self) -> bool:
        return all(s.ready for s in self.state)

    def _where(self, rank: int) -> str:
        st = self.state[rank]
        if not st.ready:
            return "during start-up"
        if st.index < 0:
            return "before the first size"
        return f"at size {size_text(self.recorder.plan[st.index].size_bytes)}"

    def _death_message(self) -> str:
        # A rank that died without explaining itself (a signal, a bare exit) is the likelier first
        # cause: its peers then fail with "connection closed" errors of their own.
        def order(rank: int) -> tuple[int, float]:
            st = self.state[rank]
            silent = st.error is None
            return (0 if silent else 1, (st.exit_t if silent else st.error_t) or math.inf)

        rank = min((r for r, s in enumerate(self.state) if s.failed), key=order)
        st = self.state[rank]
        if st.error:
            return f"rank {rank} failed {self._where(rank)}: {st.error}"
        tail = self.ranks.stderr_tail(rank)
        return f"rank {rank} {_exit_text(st.exit_code)} {self._where(rank)}" + (f" ({tail})" if tail else "")

    def _hang_message(self, limit_s: float) -> str:
        stuck = [r for r, s in enumerate(self.state) if not s.ready]
        if stuck:
            return (
                f"rank{'s' * (len(stuck) > 1)} {_ranks_text(stuck)} did not start within "
                f"{limit_s:g} s (importing torch or the rendezvous hung)"
            )
        lowest = min(s.index for s in self.state)
        behind = [r for r, s in enumerate(self.state) if s.index == lowest]
        if len(behind) < len(self.state):
            waiting = self.recorder.plan[max(s.index for s in self.state)].size_bytes
            return (
                f"rank{'s' * (len(behind) > 1)} {_ranks_text(behind)} hung: no progress for "
                f"{limit_s:g} s, while the other ranks wait at size {size_text(waiting)}"
            )
        return f"all ranks stalled {self._where(0)}: no progress for {limit_s:g} s (a collective never completed)"


def _ranks_text(ranks: list[int]) -> str:
    return ", ".join(str(r) for r in ranks)


def _exit_text(code: int | None) -> str:
    if code is not None and code < 0:
        try:
            return f"died (killed by {signal.Signals(-code).name})"
        except ValueError:
            return f"died (signal {-code})"
    if code == 0:
        return "exited early without reporting"
    return f"died (exit code {code})"
