"""Whether an external launcher (torchrun, srun) started this process as one rank, and where.

Under ``torchrun`` RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT are set; under ``srun``
SLURM_PROCID and SLURM_STEP_NUM_TASKS are. Then the calling process *is* a rank: the harness
spawns nothing, and only rank 0 prints and writes the output file.
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from ...errors import MeasureError
from .preflight import check_host


@dataclass(frozen=True)
class Launch:
    """Where this process sits when an external launcher started it."""

    name: str  # "torchrun" or "slurm"
    rank: int
    world_size: int
    local_rank: int
    local_world_size: int
    master_addr: str
    master_port: int


TERM_GRACE_S = 10.0
"""How long a failing rank may go on reporting after the launcher's SIGTERM (its post-mortem takes
protocol.SILENCE_S plus a store round trip); then it exits."""


def _exit_after_term(launch: Launch) -> None:
    print(
        f"error: rank {launch.rank}: {launch.name} sent SIGTERM while the rank was reporting its failure; "
        f"exiting after {TERM_GRACE_S:g} s",
        file=sys.stderr,
        flush=True,
    )
    os._exit(1)


class LauncherStopped(Exception):
    """The launcher sent this rank SIGTERM (torchrun's agent does when its rendezvous or a peer
    node is lost, Slurm when the step is cancelled)."""


@contextlib.contextmanager
def stops_reported(launch: Launch, deferring: Callable[[], bool]) -> Iterator[None]:
    """SIGTERM becomes `LauncherStopped`, so the rank still says where it stopped: by default it
    would end the process with nothing said. Once `deferring()` holds (the run failed and the
    post-mortem that names the lost peer is under way, a few seconds; torchrun waits 30 s before
    SIGKILL) the signal is held back and the failure already on its way out is reported instead;
    a failing rank keeps the handler until it exits."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_term(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
        if not deferring():
            raise LauncherStopped(
                f"{launch.name} sent SIGTERM (it ends its ranks when its rendezvous "
                "or a peer node is lost, or when the job is cancelled)"
            )
        # Held back, but not for the launcher's whole 30 s: a rank stuck on its way out still ends soon.
        timer = threading.Timer(TERM_GRACE_S, _exit_after_term, args=(launch,))
        timer.daemon = True  # a rank that finishes reporting first exits at once
        timer.start()

    previous = signal.signal(signal.SIGTERM, on_term)
    yield  # an exception leaves the handler in place: the rank is on its way out, saying why
    signal.signal(signal.SIGTERM, previous)


def detect_launcher(environ: dict[str, str] | None = None) -> Launch | None:
    env = dict(os.environ if environ is None else environ)
    try:
        if all(k in env for k in ("RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT")):
            world = int(env["WORLD_SIZE"])
            return Launch(
                "torchrun",
                int(env["RANK"]),
                world,
                int(env.get("LOCAL_RANK", 0)),
                int(env.get("LOCAL_WORLD_SIZE", world)),
                check_host(env["MASTER_ADDR"], "MASTER_ADDR"),
                int(env["MASTER_PORT"]),
            )
        # SLURM_STEP_NUM_TASKS is set by srun only: a shell inside salloc is not a rank.
        if "SLURM_PROCID" in env and "SLURM_STEP_NUM_TASKS" in env:
            world = int(env["SLURM_STEP_NUM_TASKS"])
            return Launch(
                "slurm",
                int(env["SLURM_PROCID"]),
                world,
                int(env.get("SLURM_LOCALID", 0)),
                int(env.get("SLURM_STEP_TASKS_PER_NODE", "1").split("(")[0]),
                _slurm_master_addr(env),
                _slurm_master_port(env),
            )
    except ValueError as exc:
        raise MeasureError(f"launcher environment is malformed: {exc}") from None
    return None


def is_reporting_rank() -> bool:
    """True locally and on rank 0 of a launcher: the one process that prints and saves."""
    try:
        launch = detect_launcher()
    except MeasureError:
        return True
    return launch is None or launch.rank == 0


def tcp_init(addr: str, port: int) -> str:
    """torch.distributed's init_method for a TCP rendezvous (IPv6 addresses in brackets)."""
    return f"tcp://[{addr}]:{port}" if ":" in addr else f"tcp://{addr}:{port}"


def _slurm_master_addr(env: dict[str, str]) -> str:
    if "MASTER_ADDR" in env:
        return check_host(env["MASTER_ADDR"], "MASTER_ADDR")
    nodelist = env.get("SLURM_STEP_NODELIST") or env.get("SLURM_JOB_NODELIST", "")
    if nodelist and not re.search(r"[\[,]", nodelist):
        return check_host(nodelist, "SLURM node")
    try:  # 'gpu[01-04]' -> 'gpu01'; scontrol is the one tool that expands Slurm's host lists
        out = subprocess.run(
            ["scontrol", "show", "hostnames", nodelist], capture_output=True, text=True, timeout=10, check=True
        ).stdout.split()
        return check_host(out[0], "SLURM node")
    except (OSError, subprocess.SubprocessError, IndexError):
        raise MeasureError(f"cannot find the first node of {nodelist!r}; set MASTER_ADDR") from None


def _slurm_master_port(env: dict[str, str]) -> int:
    if "MASTER_PORT" in env:
        return int(env["MASTER_PORT"])
    # Every rank must agree without talking: derive the port from the job id.
    return 20000 + int(env.get("SLURM_JOB_ID", "0")) % 20000
