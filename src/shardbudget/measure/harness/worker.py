"""One rank of the collective benchmark; the only module of the harness that imports torch.

The harness starts it as ``python -m shardbudget.measure.harness.worker CONFIG_JSON`` (one process per
rank; events go to stdout as ``@shardbudget {json}`` lines), or calls `run_rank` in-process under
torchrun / srun. Either way the rank reports through ``emit(event)`` and never writes files; the
events and the configuration are defined in `protocol`, which is all this module shares with the
harness.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import torch
import torch.distributed as dist

from ... import dtypes
from ...comm.op import CollectiveOp
from .peers import PeerReport, short_error
from .protocol import HEARTBEAT_S, SILENCE_S, STORE_TIMEOUT_S, Event, Fault, RankConfig, event_line, parse_faults

Emit = Callable[[dict[str, Any]], None]
_FAILING = threading.Event()
_CLAIM = threading.Lock()  # taken once, by whoever reports this rank's failure; never released
_WATCH: list[_PeerWatch] = []  # this process's one rank's watch, for `give_up` (launcher mode)
WATCH_ALL = 16  # up to this many ranks, each one's watchdog reads every peer's heartbeat


def failing() -> bool:
    """True once this rank's run has failed and it is finding out why (the post-mortem that names a
    lost peer) and saying so: launchers.stops_reported holds a launcher's SIGTERM back meanwhile."""
    return _FAILING.is_set()


def _claim_failure() -> bool:
    """True for the first caller only: the sweep (its collective raised), the watchdog (a peer went
    silent) or the launcher's SIGTERM. That one reports the failure; the others stand back."""
    first = _CLAIM.acquire(blocking=False)
    _FAILING.set()
    return first


def run_rank(cfg: RankConfig, emit: Emit) -> None:
    faults = parse_faults(cfg.faults)
    device = _init(cfg)
    watch = _PeerWatch(cfg, emit) if cfg.watch_peers else None
    _WATCH[:] = [watch] if watch else []

    def report(ev: dict[str, Any]) -> None:
        if watch is not None and ev["ev"] == Event.START:
            watch.started(ev["index"])
        emit(ev)

    try:
        where: list[tuple[str, str | None] | None] = [None] * cfg.world_size
        dist.all_gather_object(where, (socket.gethostname(), _local_addr(_store_address(cfg)[0])))
        emit(
            {
                "ev": Event.READY,
                "hosts": [w[0] for w in where],
                "addrs": [w[1] for w in where],
                "torch": torch.__version__,
            }
        )
        for index, size_bytes in enumerate(cfg.sizes_bytes):
            _measure_size(cfg, index, size_bytes, device=device, faults=faults, emit=report)
        dist.barrier()
        if watch is not None:
            watch.disarm()  # peers stop beating as they finish: their silence is no longer a fault
        emit({"ev": Event.DONE})
    except Exception as exc:
        # The watchdog may have reported already (and aborted the collective that raised here)
        if _claim_failure() and watch is not None:
            emit({"ev": Event.PEERS, "report": watch.post_mortem(short_error(str(exc)))})
        raise
    finally:
        if watch is not None:
            watch.stop()
        dist.destroy_process_group()


def give_up(message: str, silent: tuple[int, ...] | None = None) -> tuple[bool, PeerReport | None]:
    """End this rank's run from outside the thread that runs the sweep (the watchdog, or the
    launcher's SIGTERM): (False, None) when the sweep is already reporting its own failure, else
    (True, the peers' report; `silent` = peers already seen silent, so no second wait)."""
    if not _claim_failure():
        return False, None
    return True, (_WATCH[0].post_mortem(message, silent=silent) if _WATCH else None)


def abort_collectives(backend: str) -> None:
    """Make a collective stuck on a lost peer return, where the library can.

    NCCL can: the process group's abort (ncclCommAbort on its communicators) ends the kernels and
    the sweep thread's wait raises. gloo cannot: its `abort()` and `shutdown()` return at once but
    leave a blocked send or receive waiting out its own timeout (tried on torch 2.13: 30 s either
    way), so there the harness reports without the sweep thread and ends the process itself
    (`launched`)."""
    if backend != "nccl" or not dist.is_initialized():
        return
    try:
        dist.distributed_c10d._get_default_group().abort()
    except Exception:  # noqa: BLE001 - the harness reports and exits whether or not this worked
        pass


class _PeerWatch:
    """Heartbeats and progress in the rendezvous store, read back after a failure (see `peers`), and
    the watchdog that reads them during the sweep, so a peer gone silent ends it in seconds.

    Its own client connections to the store, so the heartbeat thread never shares one with the
    process group. A count of a few bytes once a second: nothing a collective's timing notices."""

    def __init__(self, cfg: RankConfig, emit: Emit):
        host, port = _store_address(cfg)
        self.rank, self.world, self.store_host = cfg.rank, cfg.world_size, host
        self.others = [r for r in range(self.world) if r != self.rank]
        # Every rank reading every count is n^2 store reads: past WATCH_ALL ranks, each watches its
        # two ring neighbours, and one that sees a neighbour go silent announces it to the rest.
        ring = {(self.rank + 1) % self.world, (self.rank - 1) % self.world} - {self.rank}
        self.watched = self.others if self.world <= WATCH_ALL else sorted(ring)
        self.backend, self.emit = cfg.backend, emit
        self.store, reader = (dist.PrefixStore("shardbudget/", self._client(host, port)) for _ in range(2))
        self._stop, self._armed = threading.Event(), True
        self._threads = [
            threading.Thread(target=self._beat, daemon=True),
            threading.Thread(target=self._watchdog, args=(reader,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    @staticmethod
    def _client(host: str, port: int) -> dist.TCPStore:
        return dist.TCPStore(
            host, port, is_master=False, wait_for_workers=False, timeout=timedelta(seconds=STORE_TIMEOUT_S)
        )

    def _beat(self) -> None:
        while not self._stop.is_set():
            try:
                self.store.add(f"beat/{self.rank}", 1)
            except Exception:  # noqa: BLE001 - the store is gone; post_mortem says so
                return
            self._stop.wait(HEARTBEAT_S)

    def _watchdog(self, reader: dist.Store) -> None:
        """Twice a heartbeat, read the watched peers' counts (on a client of its own: a read stuck on a
        lost store must not stop this rank's own heartbeat). A peer seen beating whose count then stood
        still for SILENCE_S, one another rank announced lost, or a store unreachable for as long ends
        the run (`_fire`): the sweep's collective would otherwise wait on the silent peer until its
        own timeout (--timeout)."""
        seen: dict[int, tuple[int, float]] = {}  # rank -> (count, when it last moved)
        while not self._stop.wait(HEARTBEAT_S / 2):
            t0 = time.monotonic()
            try:
                counts = {r: reader.add(f"beat/{r}", 0) for r in self.watched}
                announced = reader.get("lost").decode() if reader.check(["lost"]) else ""
            except Exception:  # noqa: BLE001 - the store's node went down, with its ranks
                # a refused connection is quick: the collective's own error gets SILENCE_S to come first
                left_s = SILENCE_S - (time.monotonic() - t0)
                if left_s <= 0 or not self._stop.wait(left_s):
                    self._fire(())
                return
            now = time.monotonic()
            for r, count in counts.items():
                if seen.get(r, (None,))[0] != count:
                    seen[r] = (count, now)
            silent = tuple(r for r, (count, moved) in seen.items() if count > 0 and now - moved >= SILENCE_S)
            if silent or announced:
                self._fire(silent or tuple(int(r) for r in announced.split(",")))
                return

    def _fire(self, silent: tuple[int, ...]) -> None:
        """Report the silent peers (or the lost store) as the sweep would, then abort its collective;
        the ranks that do not watch those peers read the `lost` key and follow."""
        if not self._armed or failing():
            return
        first, report = give_up("stopped waiting on a silent peer", silent=silent or None)
        if not first:
            return
        if silent:
            with contextlib.suppress(Exception):
                self.store.set("lost", ",".join(map(str, silent)))
        self.emit({"ev": Event.PEERS, "report": report})
        self.emit({"ev": Event.ABORTED, "silent": list(silent)})
        abort_collectives(self.backend)

    def disarm(self) -> None:
        self._armed = False

    def started(self, index: int) -> None:
        try:
            self.store.set(f"at/{self.rank}", str(index))
        except Exception:  # noqa: BLE001 - progress is a hint; the collective reports the failure
            pass

    def post_mortem(self, message: str, silent: tuple[int, ...] | None = None) -> PeerReport:
        """Say that this rank failed, then which peers' heartbeats stopped (about SILENCE_S; none
        when the watchdog has already seen `silent` stand still that long)."""
        others = self.others
        try:
            self.store.set(f"failed/{self.rank}", message[:500])
            if silent is None:
                before = [self.store.add(f"beat/{r}", 0) for r in others]
                time.sleep(SILENCE_S)
                after = [self.store.add(f"beat/{r}", 0) for r in others]
                silent = tuple(r for r, a, b in zip(others, before, after) if a == b)
            failed = tuple(r for r in others if self.store.check([f"failed/{r}"]))
            at = {r: int(self.store.get(f"at/{r}")) for r in range(self.world) if self.store.check([f"at/{r}"])}
        except Exception as exc:  # noqa: BLE001 - an unreachable store is itself the finding
            return PeerReport(store_ok=False, store_error=short_error(str(exc)), store_host=self.store_host)
        lost = tuple(r for r in silent if r not in failed)
        return PeerReport(store_ok=True, lost=lost, failed=failed, at=at, silence_s=SILENCE_S)

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            if thread is not threading.current_thread():
                thread.join(timeout=HEARTBEAT_S + STORE_TIMEOUT_S)


def _store_address(cfg: RankConfig) -> tuple[str, int]:
    """Where the rendezvous store listens: torchrun's MASTER_ADDR/PORT, or the tcp:// init method."""
    if cfg.init_method.startswith("tcp://"):
        host, _, port = cfg.init_method[len("tcp://") :].rpartition(":")
        return host.strip("[]"), int(port)
    return os.environ.get("MASTER_ADDR", "127.0.0.1"), int(os.environ.get("MASTER_PORT", "29500"))


def _local_addr(toward: str) -> str | None:
    """This rank's address on the route to `toward` (no packet is sent: UDP connect only routes)."""
    try:
        family = socket.AF_INET6 if ":" in toward else socket.AF_INET
        with socket.socket(family, socket.SOCK_DGRAM) as sock:
            sock.connect((toward, 9))
            return sock.getsockname()[0]
    except OSError:
        return None


def _init(cfg: RankConfig) -> torch.device:
    device = torch.device("cpu")
    kwargs: dict[str, Any] = {}
    if cfg.backend == "nccl":
        device = torch.device("cuda", cfg.local_rank)
        torch.cuda.set_device(device)
        kwargs["device_id"] = device  # binds the communicator to this GPU eagerly
        # A collective past the timeout below: 2 ("CleanUpOnly") has torch's NCCL watchdog abort the
        # communicator and raise in the waiting rank, which then reports and saves like any failure;
        # torchrun's default 1 ("TearDown") would kill the process with nothing said. A user's 0 stays.
        if os.environ.get("TORCH_NCCL_ASYNC_ERROR_HANDLING", "1") == "1":
            os.environ["TORCH_NCCL_ASYNC_ERROR_HANDLING"] = "2"
    dist.init_process_group(
        cfg.backend,
        init_method=cfg.init_method,
        rank=cfg.rank,
        world_size=cfg.world_size,
        timeout=timedelta(seconds=cfg.pg_timeout_s),
        **kwargs,
    )
    return device


def _measure_size(
    cfg: RankConfig, index: int, size_bytes: int, *, device: torch.device, faults: list[Fault], emit: Emit
) -> None:
    if any(f.hits("hang", cfg.rank, size_bytes) for f in faults):
        while True:  # test hook: never start this size, as a stuck rank would
            time.sleep(3600)
    emit({"ev": Event.START, "index": index, "bytes": size_bytes})
    if any(f.hits("crash", cfg.rank, size_bytes) for f in faults):
        os.kill(os.getpid(), signal.SIGKILL)  # test hook: die as the OOM killer would
    torch_dtype = getattr(torch, dtypes.dtype(cfg.dtype).torch_name)
    bufs = _Buffers(op=cfg.op, size_bytes=size_bytes, dtype=torch_dtype, n=cfg.world_size, device=device)
    for _ in range(cfg.warmup):
        bufs.run()
    times = _time_iters(bufs, cfg.iters, device)
    # One collective takes as long as its slowest rank (nccl-tests reduces with MAX too).
    dist.all_reduce(times, op=dist.ReduceOp.MAX)
    wrong_by_rank = None
    if cfg.check:
        corrupt = any(f.hits("wrong-reduction", cfg.rank, size_bytes) for f in faults)
        wrong_by_rank = _check(bufs, cfg.rank, cfg.world_size, corrupt)
    if cfg.rank == 0 or cfg.report_all_ranks:
        emit(
            {
                "ev": Event.RESULT,
                "index": index,
                "bytes": size_bytes,
                "samples_s": times.tolist(),
                "wrong_by_rank": wrong_by_rank,
            }
        )


class _Buffers:
    """Send/receive tensors sized as nccl-tests sizes them (see the harness docstring)."""

    def __init__(self, *, op: CollectiveOp, size_bytes: int, dtype: torch.dtype, n: int, device: torch.device):
        elements = size_bytes // dtype.itemsize
        self.op, self.n, self.chunk = op, n, elements // n
        alloc = dict(dtype=dtype, device=device)
        # Timing runs on zeros: repeated in-place sums of zeros never overflow or turn denormal.
        self.send = torch.zeros(elements if op != CollectiveOp.ALL_GATHER else self.chunk, **alloc)
        if op == CollectiveOp.ALL_REDUCE:
            self.recv = self.send  # torch's all-reduce is in place
        elif op == CollectiveOp.REDUCE_SCATTER:
            self.recv = torch.empty(self.chunk, **alloc)
        else:
            self.recv = torch.empty(elements, **alloc)

    def run(self) -> None:
        if self.op == CollectiveOp.ALL_REDUCE:
            dist.all_reduce(self.send)
        elif self.op == CollectiveOp.ALL_GATHER:
            dist.all_gather_into_tensor(self.recv, self.send)
        elif self.op == CollectiveOp.REDUCE_SCATTER:
            dist.reduce_scatter_tensor(self.recv, self.send)
        else:
            dist.all_to_all_single(self.recv, self.send)


def _time_iters(bufs: _Buffers, iters: int, device: torch.device) -> torch.Tensor:
    """Per-iteration seconds on this rank, as a float64 tensor on `device`."""
    if device.type == "cuda":
        return _time_iters_cuda(bufs, iters, device)
    times_s = []
    for _ in range(iters):
        dist.barrier()  # start together, so the time is the collective's, not a late peer's
        t0 = time.perf_counter()
        bufs.run()  # gloo calls block until the collective is done on this rank
        times_s.append(time.perf_counter() - t0)
    return torch.tensor(times_s, dtype=torch.float64)


def _time_iters_cuda(bufs: _Buffers, iters: int, device: torch.device) -> torch.Tensor:
    events = []
    for _ in range(iters):
        dist.barrier()
        torch.cuda.synchronize(device)  # the barrier itself is a kernel; keep it out of the time
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        bufs.run()
        end.record()
        events.append((start, end))
    torch.cuda.synchronize(device)
    times_s = [s.elapsed_time(e) / 1e3 for s, e in events]  # elapsed_time is in ms
    return torch.tensor(times_s, dtype=torch.float64, device=device)


def _check_data(bufs: _Buffers, rank: int) -> torch.Tensor:
    """Fill the send buffer with a pattern whose result is known; return the expected result.

    all-reduce: every element is rank+1, the sum is n(n+1)/2. all-gather: chunk j comes from
    rank j and holds j+1. reduce-scatter: chunk j of rank r holds r+1+j, so rank r receives
    n(n+1)/2 + n·r. all-to-all: chunk j of rank r holds r·n+j+1, so rank r receives j·n+r+1 from j.
    """
    n, chunk, send = bufs.n, bufs.chunk, bufs.send
    j = torch.arange(n, dtype=torch.float64)
    if bufs.op == CollectiveOp.ALL_REDUCE:
        send.fill_(rank + 1)
        expected = torch.full((send.numel(),), n * (n + 1) / 2, dtype=torch.float64)
    elif bufs.op == CollectiveOp.ALL_GATHER:
        send.fill_(rank + 1)
        expected = (j + 1).repeat_interleave(chunk)
    elif bufs.op == CollectiveOp.REDUCE_SCATTER:
        send.copy_((rank + 1 + j).repeat_interleave(chunk))
        expected = torch.full((chunk,), n * (n + 1) / 2 + n * rank, dtype=torch.float64)
    else:
        send.copy_((rank * n + j + 1).repeat_interleave(chunk))
        expected = (j * n + rank + 1).repeat_interleave(chunk)
    return expected.to(send.dtype).to(send.device)


def _check(bufs: _Buffers, rank: int, n: int, corrupt: bool) -> list[int]:
    """Run once on known data; return the wrong element count of every rank (all-reduced)."""
    expected = _check_data(bufs, rank)
    bufs.run()
    if corrupt:  # test hook: this rank's result is off by one in one element
        bufs.recv.view(-1)[0] += 1
    wrong = torch.zeros(n, dtype=torch.int64, device=bufs.send.device)
    wrong[rank] = int((bufs.recv.view(-1) != expected).sum().item())
    dist.all_reduce(wrong)
    return [int(w) for w in wrong.tolist()]


def _stdout_emit(event: dict[str, Any]) -> None:
    print(event_line(event), flush=True)


def main(argv: list[str] | None = None) -> int:
    cfg = RankConfig.from_json((argv if argv is not None else sys.argv[1:])[0])
    try:
        run_rank(cfg, _stdout_emit)
    except BaseException as exc:  # noqa: BLE001 - report anything, then exit non-zero
        text = str(exc).strip().splitlines()
        _stdout_emit({"ev": Event.ERROR, "message": f"{type(exc).__name__}: {text[0] if text else ''}"})
        return 1
    finally:
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
