"""What the harness and its ranks agree on: one module both import, so neither imports the other.

The parent (`run`, `local`) and each rank (`worker`) share only this: the configuration a rank
runs with (`RankConfig`, sent as JSON on the command line), the events a rank reports
(`Event`, one ``@shardbudget {json}`` line each on stdout), the test hook's faults, the
collectives and element types the harness can time, and the constants both sides need.

Events, in the order a healthy rank sends them:

    ready   after the rendezvous, with every rank's hostname
    start   before each size, from every rank (so a dead or hung rank can be placed)
    result  after each size: per-iteration slowest-rank times and wrong counts per rank
    done    after the last size
    peers   under a launcher, after a failure: which peers stopped their heartbeat (see `peers`)
    aborted under a launcher, after `peers`: the watchdog stopped waiting on a silent peer
    error   an exception, just before exiting non-zero
    exit    added by the parent when a rank's process ends, with its exit code
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
from dataclasses import asdict, dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from ...comm.op import CollectiveOp
from ...dtypes import TABLE as DTYPE_TABLE
from ...errors import MeasureError
from ...units import parse_bytes

OPS = (CollectiveOp.ALL_REDUCE, CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_TO_ALL)
"""The collectives the harness times: the four torch.distributed runs on flat tensors."""
DTYPES = tuple(d.name for d in DTYPE_TABLE if d.torch_name is not None)
"""Canonical names of the element types the harness can move (those torch has a dtype for)."""
BACKENDS = ("gloo", "nccl")
FAULT_ENV = "SHARDBUDGET_FAULT"
FAULT_KINDS = ("crash", "hang", "wrong-reduction")
FAULT_HOOK = "shardbudget_test_hooks"
"""The module that arms FAULT_ENV: it lives in the source tree's tests/hooks/ (never packaged), and the
test suite's conftest puts that folder on the path. An installed build has no such folder beside its
package, so FAULT_ENV set in a user's environment does nothing there (`armed_faults`)."""
EVENT_PREFIX = "@shardbudget "  # marks our protocol lines among whatever else a worker prints
STARTUP_ALLOWANCE_S = 30.0  # importing torch on a loaded 2-core box takes several seconds per rank
HEARTBEAT_S = 1.0  # under a launcher each rank counts up a key in the rendezvous store this often
SILENCE_S = 2.5 * HEARTBEAT_S  # a peer whose count did not move for this long is gone
STORE_TIMEOUT_S = 5.0  # one store operation, for the heartbeats and the post-mortem


class Event(StrEnum):
    """The `"ev"` field of a rank's report (see the module docstring)."""

    READY = "ready"
    START = "start"
    RESULT = "result"
    DONE = "done"
    PEERS = "peers"
    ABORTED = "aborted"
    ERROR = "error"
    EXIT = "exit"


def event_line(event: dict[str, Any]) -> str:
    """The stdout line that carries `event` from a worker process to the parent."""
    return EVENT_PREFIX + json.dumps(event)


def read_event_line(line: str) -> dict[str, Any] | None:
    """The event a worker's stdout line carries, or None for any other output."""
    if not line.startswith(EVENT_PREFIX):
        return None
    return json.loads(line[len(EVENT_PREFIX) :])


def check_max_value(op: str, world_size: int) -> int:
    """Largest value the worker's --check patterns reach (see `worker._check_data`), so that a
    dtype too small to hold it exactly can be refused before any work."""
    n = world_size
    return {
        CollectiveOp.ALL_REDUCE: n * (n + 1) // 2,
        CollectiveOp.ALL_GATHER: n,
        CollectiveOp.REDUCE_SCATTER: n * (n + 1) // 2 + n * (n - 1),
        CollectiveOp.ALL_TO_ALL: n * n,
    }[CollectiveOp(op)]


# --- faults (test hook) -----------------------------------------------------------------------


@dataclass(frozen=True)
class Fault:
    kind: str
    rank: int
    size_bytes: int | None  # None: every size

    def hits(self, kind: str, rank: int, size_bytes: int) -> bool:
        return self.kind == kind and self.rank == rank and self.size_bytes in (None, size_bytes)


def armed_faults() -> str:
    """FAULT_ENV's text where the test suite armed the hook, else "" (an installed build: always "").

    Armed means `FAULT_HOOK` is importable from the tests/hooks/ folder of the source tree this
    package was imported from, which only a checkout has and only the test suite puts on the path."""
    text = os.environ.get(FAULT_ENV, "")
    if not text:
        return ""
    tests = Path(__file__).resolve().parents[4] / "tests" / "hooks"  # src/shardbudget/measure/harness/ -> the checkout
    try:
        spec = importlib.util.find_spec(FAULT_HOOK)
    except (ImportError, ValueError):
        return ""
    origin = Path(spec.origin).resolve() if spec is not None and spec.origin else None
    return text if origin is not None and origin.parent == tests else ""


def parse_faults(text: str | None) -> list[Fault]:
    """'crash@1:1KiB,wrong-reduction@0' -> [Fault('crash', 1, 1024), Fault(...)]."""
    faults = []
    for item in filter(None, (p.strip() for p in (text or "").split(","))):
        match = re.fullmatch(r"([a-z-]+)@(\d+)(?::(.+))?", item)
        if not match or match[1] not in FAULT_KINDS:
            raise MeasureError(
                f"{FAULT_ENV} item {item!r} must look like KIND@RANK[:SIZE] with KIND one of {', '.join(FAULT_KINDS)}"
            )
        size = int(parse_bytes(match[3], what=f"{FAULT_ENV} size")) if match[3] else None
        faults.append(Fault(match[1], int(match[2]), size))
    return faults


# --- the configuration one rank runs with -----------------------------------------------------


@dataclass(frozen=True, kw_only=True)
class RankConfig:
    """Everything a worker needs; crosses the process boundary as JSON."""

    backend: str
    op: CollectiveOp
    dtype: str
    """Canonical name (`shardbudget.dtypes`), one of `DTYPES`."""
    sizes_bytes: list[int]
    iters: int
    warmup: int
    check: bool
    rank: int
    world_size: int
    local_rank: int
    init_method: str  # "tcp://host:port", or "env://" under torchrun (its agent owns the store)
    pg_timeout_s: float
    report_all_ranks: bool  # in-process launcher mode: every rank keeps the results
    faults: str
    watch_peers: bool = False  # heartbeats in the store, to name a lost peer (launcher mode)

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> RankConfig:
        fields = json.loads(text)
        return cls(**{**fields, "op": CollectiveOp(fields["op"])})
