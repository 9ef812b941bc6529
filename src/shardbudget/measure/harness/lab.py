"""An emulated fabric on one Linux machine: ranks in network namespaces joined by shaped veth links.

`run_lab` creates one network namespace per rank (plus a bridge namespace for 3+ ranks), links them
with veth pairs, limits each link with a token bucket (`tc ... tbf`) at each requested rate, runs
the real harness (`python -m shardbudget.measure`, gloo) with one rank per namespace, and compares
what it measured with what the collective model predicts:

    t(n) = α + max(k·n / B_unshaped, (k·n − refill) / (rate · 1448/1514)),   k = 2(p-1)/p

α (the per-call latency of gloo over TCP) and B_unshaped are fitted on the unshaped run only; every
shaped run is then *predicted* from its tc rate alone. 1448/1514 is TCP payload per Ethernet frame
at MTU 1500 (the token bucket counts whole frames); `refill` is what the bucket regains between
back-to-back calls (about α at the rate, at most its 2 ms depth). This is the tool's lesson in
miniature: as the link gets slower or the message smaller, the collective, not the compute, sets
the step.

Only addresses inside namespaces this module creates are ever used (10.250.x.y on our own veths).
Namespaces are removed on exit, on error and on SIGINT/SIGTERM; stale ones of dead runs are
reclaimed at the next start. netem delay is used only where the kernel has it (`delay=`).
"""

from __future__ import annotations

import atexit
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ...comm.op import CollectiveOp, busbw_factor
from ...errors import MeasureError
from ...units import format_bytes, format_rate, format_seconds, parse_rate, parse_size_range

PREFIX = "sblab"
SUBNET = "10.250"  # only ever assigned to veths inside namespaces created here
TCP_PAYLOAD_FRACTION = 1448 / 1514  # MSS / Ethernet frame at MTU 1500 (with TCP timestamps)
BURST_S = 0.002  # token-bucket depth, in seconds at the shaped rate


def _run(cmd: list[str], check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise MeasureError(f"lab: `{' '.join(cmd)}` failed: {r.stderr.strip() or r.stdout.strip()}")
    return r


def lab_unavailable() -> str | None:
    """Why the lab cannot run here, or None."""
    if sys.platform != "linux":
        return "the fabric lab needs Linux network namespaces"
    if os.geteuid() != 0:
        return "the fabric lab needs root (it creates network namespaces and tc qdiscs)"
    for tool in ("ip", "tc"):
        if shutil.which(tool) is None:
            return f"the fabric lab needs `{tool}` (Debian package iproute2)"
    probe = f"{PREFIX}probe{os.getpid()}"
    r = _run(["ip", "netns", "add", probe], check=False)
    if r.returncode != 0:
        return f"cannot create network namespaces here: {r.stderr.strip()}"
    _run(["ip", "netns", "del", probe], check=False)
    return None


def netem_available(ns: str, dev: str) -> bool:
    r = _run(["tc", "-n", ns, "qdisc", "add", "dev", dev, "root", "netem", "delay", "0ms"], check=False)
    if r.returncode == 0:
        _run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], check=False)
    return r.returncode == 0


# --- topology ---------------------------------------------------------------------------------


@dataclass
class Topology:
    """Rank namespaces with one veth each; 3+ ranks meet on a bridge in a switch namespace."""

    ranks: int
    tag: str = field(default_factory=lambda: f"{PREFIX}{os.getpid()}")
    namespaces: list[str] = field(default_factory=list)
    shaped: list[tuple[str, str]] = field(default_factory=list)  # (namespace, device) of every link end

    def rank_ns(self, r: int) -> str:
        return f"{self.tag}r{r}"

    def addr(self, r: int) -> str:
        return f"{SUBNET}.{os.getpid() % 200}.{r + 1}"

    def dev(self, r: int) -> str:
        return f"sbl{r}"

    def create(self) -> None:
        for r in range(self.ranks):
            self._ns(self.rank_ns(r))
        if self.ranks == 2:
            self._veth(0, self.rank_ns(1), self.dev(1) + "p")
            self._veth_end(1)
        else:
            sw = f"{self.tag}sw"
            self._ns(sw)
            _run(["ip", "-n", sw, "link", "add", "br0", "type", "bridge"])
            _run(["ip", "-n", sw, "link", "set", "br0", "up"])
            for r in range(self.ranks):
                peer = f"sw{r}"
                self._veth(r, sw, peer)
                _run(["ip", "-n", sw, "link", "set", peer, "master", "br0"])
                _run(["ip", "-n", sw, "link", "set", peer, "up"])
                self.shaped.append((sw, peer))

    def _ns(self, name: str) -> None:
        _run(["ip", "netns", "add", name])
        self.namespaces.append(name)
        _run(["ip", "-n", name, "link", "set", "lo", "up"])

    def _veth(self, r: int, peer_ns: str, peer_dev: str) -> None:
        ns, dev = self.rank_ns(r), self.dev(r)
        _run(["ip", "link", "add", dev, "netns", ns, "type", "veth", "peer", "name", peer_dev, "netns", peer_ns])
        _run(["ip", "-n", ns, "addr", "add", f"{self.addr(r)}/24", "dev", dev])
        _run(["ip", "-n", ns, "link", "set", dev, "up"])
        self.shaped.append((ns, dev))

    def _veth_end(self, r: int) -> None:
        """Rank r of a 2-rank lab holds the far end of rank 0's veth."""
        ns, dev = self.rank_ns(r), self.dev(r) + "p"
        _run(["ip", "-n", ns, "addr", "add", f"{self.addr(r)}/24", "dev", dev])
        _run(["ip", "-n", ns, "link", "set", dev, "up"])
        self.shaped.append((ns, dev))

    def device_of(self, r: int) -> str:
        return self.dev(r) + "p" if (self.ranks == 2 and r == 1) else self.dev(r)

    def shape(self, rate_bytes_per_s: float | None, delay_ms: float = 0.0) -> None:
        """Token bucket on every link end (both directions of every link); None removes it."""
        for ns, dev in self.shaped:
            _run(["tc", "-n", ns, "qdisc", "del", "dev", dev, "root"], check=False)
            if rate_bytes_per_s is None and not delay_ms:
                continue
            if delay_ms:
                _run(
                    [
                        "tc",
                        "-n",
                        ns,
                        "qdisc",
                        "add",
                        "dev",
                        dev,
                        "root",
                        "handle",
                        "1:",
                        "netem",
                        "delay",
                        f"{delay_ms}ms",
                    ]
                )
            if rate_bytes_per_s is not None:
                bits = int(rate_bytes_per_s * 8)
                # burst: 2 ms at the rate (at least 16 frames): less and the kernel's timer cannot keep
                # the link busy (0.2 ms halved the throughput at 1 Gbit/s); the prediction accounts for it
                burst = max(int(rate_bytes_per_s * BURST_S), 16 * 1514)
                parent = ["parent", "1:1"] if delay_ms else ["root"]
                _run(
                    [
                        "tc",
                        "-n",
                        ns,
                        "qdisc",
                        "add",
                        "dev",
                        dev,
                        *parent,
                        "tbf",
                        "rate",
                        f"{bits}bit",
                        "burst",
                        str(burst),
                        "latency",
                        "100ms",
                    ]
                )

    def destroy(self) -> None:
        for ns in reversed(self.namespaces):
            _run(["ip", "netns", "del", ns], check=False)
        self.namespaces.clear()


def reclaim_stale() -> list[str]:
    """Remove namespaces left by lab runs whose process is gone (a SIGKILL leaves them behind)."""
    r = _run(["ip", "netns", "list"], check=False)
    removed = []
    for line in r.stdout.splitlines():
        name = line.split()[0] if line.split() else ""
        if not name.startswith(PREFIX) or name.startswith(f"{PREFIX}probe"):
            continue
        digits = "".join(ch for ch in name[len(PREFIX) :].split("r")[0].split("sw")[0] if ch.isdigit())
        if digits and int(digits) != os.getpid() and not Path(f"/proc/{digits}").exists():
            _run(["ip", "netns", "del", name], check=False)
            removed.append(name)
    return removed


# --- one measurement over the lab -----------------------------------------------------------


def _measure(topo: Topology, *, sizes: str, iters: int, warmup: int, timeout_s: float, out: Path) -> dict:
    port = 29500 + os.getpid() % 1000
    procs = []
    for r in range(topo.ranks):
        env = {
            **os.environ,
            "RANK": str(r),
            "WORLD_SIZE": str(topo.ranks),
            "LOCAL_RANK": "0",
            "LOCAL_WORLD_SIZE": "1",
            "MASTER_ADDR": topo.addr(0),
            "MASTER_PORT": str(port),
            "GLOO_SOCKET_IFNAME": topo.device_of(r),
            "OMP_NUM_THREADS": "1",
        }
        cmd = [
            "ip",
            "netns",
            "exec",
            topo.rank_ns(r),
            sys.executable,
            "-m",
            "shardbudget.measure",
            "--backend",
            "gloo",
            "--op",
            "all-reduce",
            "--sizes",
            sizes,
            "--iters",
            str(iters),
            "--warmup",
            str(warmup),
            "--timeout",
            f"{timeout_s}s",
            "--no-progress",
        ]
        if r == 0:
            cmd += ["--out", str(out), "--force"]
        procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
    deadline = time.monotonic() + timeout_s * 4 + 60
    try:
        for r, p in enumerate(procs):
            p.wait(timeout=max(1.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        raise MeasureError(f"lab: the ranks did not finish within {timeout_s * 4 + 60:.0f} s") from None
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    bad = [(r, p) for r, p in enumerate(procs) if p.returncode != 0]
    if bad:
        r, p = bad[0]
        msg = (p.stderr.read() or "").strip().splitlines()
        raise MeasureError(f"lab: rank {r} exited with {p.returncode}: {msg[-1] if msg else 'no message'}")
    return json.loads(out.read_text())


# --- model and comparison -------------------------------------------------------------------


@dataclass(frozen=True)
class LabRow:
    msg_bytes: float
    measured_s: float
    spread: tuple[float, float]
    """Lowest and highest per-repeat median, seconds."""
    predicted_s: float
    bandwidth_bound: bool

    @property
    def rel_error(self) -> float:
        return self.predicted_s / self.measured_s - 1


@dataclass(frozen=True)
class LabRate:
    label: str
    rate_bytes_per_s: float | None
    effective_bytes_per_s: float
    rows: tuple[LabRow, ...]

    def errors(self, bandwidth_bound: bool) -> list[float]:
        return [abs(r.rel_error) for r in self.rows if r.bandwidth_bound == bandwidth_bound]


@dataclass(frozen=True)
class LabResult:
    ranks: int
    alpha_s: float
    unshaped_bytes_per_s: float
    rates: tuple[LabRate, ...]
    netem: bool
    raw_files: tuple[str, ...]
    warnings: tuple[str, ...] = ()
    """One line each: B fitted on latency-bound sizes only (an extrapolation), ..."""

    def to_dict(self) -> dict:
        return {
            "ranks": self.ranks,
            "alpha_s": self.alpha_s,
            "unshaped_bytes_per_s": self.unshaped_bytes_per_s,
            "netem_available": self.netem,
            "raw_files": list(self.raw_files),
            "warnings": list(self.warnings),
            "rates": [
                {
                    "label": r.label,
                    "rate_bytes_per_s": r.rate_bytes_per_s,
                    "effective_bytes_per_s": r.effective_bytes_per_s,
                    "rows": [
                        {
                            "bytes": x.msg_bytes,
                            "measured_s": x.measured_s,
                            "spread_s": list(x.spread),
                            "predicted_s": x.predicted_s,
                            "rel_error": x.rel_error,
                            "bandwidth_bound": x.bandwidth_bound,
                        }
                        for x in r.rows
                    ],
                }
                for r in self.rates
            ],
        }


def fit_alpha_beta(sizes: np.ndarray, times: np.ndarray, p: int) -> tuple[float, float]:
    """Robust fit of t = α + k·n/B in log space (every size weighs the same)."""
    from scipy.optimize import least_squares

    k = busbw_factor(CollectiveOp.ALL_REDUCE, p)  # each rank sends 2(p-1)/p of the message

    def resid(x):
        return np.log(np.exp(x[0]) + k * sizes / np.exp(x[1])) - np.log(times)

    x0 = [math.log(max(times.min(), 1e-6)), math.log(max(k * sizes.max() / times.max(), 1e6))]
    res = least_squares(resid, x0, loss="soft_l1", f_scale=0.05)
    return float(math.exp(res.x[0])), float(math.exp(res.x[1]))


def _medians(runs: list[dict]) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    sizes = np.array([r["bytes"] for r in runs[0]["results"]], dtype=float)
    per_repeat = np.array([[r["time_s"] for r in run["results"]] for run in runs])
    return sizes, np.median(per_repeat, axis=0), per_repeat.min(axis=0), per_repeat.max(axis=0)


def run_lab(
    *,
    ranks: int = 2,
    rates: tuple[str, ...] = ("unshaped", "10Gbit/s", "1Gbit/s"),
    sizes: str = "8B:8MiB",
    iters: int = 10,
    warmup: int = 3,
    repeats: int = 3,
    timeout_s: float = 120,
    delay_ms: float = 0.0,
    keep_dir: str | None = None,
    log=print,
) -> LabResult:
    why = lab_unavailable()
    if why:
        raise MeasureError(why)
    if ranks < 2 or ranks > 8:
        raise MeasureError(f"lab ranks must be 2..8, got {ranks}")
    if repeats < 1:
        raise MeasureError(f"repeats must be at least 1, got {repeats}")
    parsed = [(label, None if label == "unshaped" else parse_rate(label, what="lab rate")) for label in rates]
    if parsed[0][1] is not None:
        parsed.insert(0, ("unshaped", None))  # the latency fit needs the unshaped link
    parse_size_range(sizes)  # validate before creating anything
    reclaim_stale()
    topo = Topology(ranks)
    workdir = Path(keep_dir or tempfile.mkdtemp(prefix="sblab-"))
    workdir.mkdir(parents=True, exist_ok=True)
    restore = _install_cleanup(topo)
    try:
        topo.create()
        netem = netem_available(*topo.shaped[0])
        if delay_ms and not netem:
            log("# netem is not available in this kernel: running without added delay")
            delay_ms = 0.0
        measured: dict[str, list[dict]] = {}
        files = []
        for label, rate in parsed:
            topo.shape(rate, delay_ms)
            measured[label] = []
            for k in range(repeats):
                out = workdir / f"lab-{label.replace('/', 'ps')}-{k}.json"
                log(f"# measuring {ranks} ranks over {label} link, repeat {k + 1}/{repeats}")
                measured[label].append(
                    _measure(topo, sizes=sizes, iters=iters, warmup=warmup, timeout_s=timeout_s, out=out)
                )
                files.append(str(out))
        return _compare(ranks, parsed, measured, netem=netem, files=files)
    finally:
        topo.destroy()
        restore()
        if keep_dir is None:
            shutil.rmtree(workdir, ignore_errors=True)


def _compare(ranks: int, parsed, measured, *, netem: bool, files: list[str]) -> LabResult:
    sizes, t_un, _, _ = _medians(measured["unshaped"])
    alpha, b_un = fit_alpha_beta(sizes, t_un, ranks)
    k = busbw_factor(CollectiveOp.ALL_REDUCE, ranks)  # each rank sends 2(p-1)/p of the message
    out = []
    for label, rate in parsed:
        sizes, med, lo, hi = _medians(measured[label])
        b = b_un if rate is None else min(b_un, rate * TCP_PAYLOAD_FRACTION)
        rows = tuple(
            LabRow(
                float(n),
                float(m),
                (float(a), float(z)),
                alpha + _wire_s(k * n, b_un, rate, alpha),
                _wire_s(k * n, b_un, rate, alpha) > alpha,
            )
            for n, m, a, z in zip(sizes, med, lo, hi)
        )
        out.append(LabRate(label, rate, b, rows))
    return LabResult(ranks, alpha, b_un, tuple(out), netem, tuple(files), warnings=_fit_warnings(sizes, alpha, b_un, k))


def _fit_warnings(sizes: np.ndarray, alpha_s: float, b_bytes_per_s: float, k: float) -> tuple[str, ...]:
    """B is seen only where some size's wire time k·n/B exceeds the per-call latency α; below that
    the fit extrapolates it (issue 24: B = 265.6 MB/s from 8 B..8 KiB, then batch-64 costs from it)."""
    largest = float(np.max(sizes))
    if k * largest / b_bytes_per_s > alpha_s:
        return ()
    return (
        f"every size of the unshaped run is latency-bound (by the fit the largest, {format_bytes(largest)}, "
        f"spends {format_seconds(k * largest / b_bytes_per_s)} on the wire against alpha {format_seconds(alpha_s)}): "
        f"B = {format_rate(b_bytes_per_s)} is extrapolated, not measured, and so is every bandwidth-bound "
        f"prediction below; measure larger sizes (e.g. --size 8B:64MiB), until some take longer than alpha on the wire",
    )


def _wire_s(sent_bytes: float, b_unshaped: float, rate: float | None, alpha_s: float) -> float:
    """Time on the wire for `sent_bytes` per rank through a token bucket of `rate` bytes/s.

    Between back-to-back collectives the bucket refills for about one per-call latency (alpha), up
    to its depth; that much of the next message leaves at the unshaped speed, the rest at the rate
    (in TCP payload)."""
    unshaped = sent_bytes / b_unshaped
    if rate is None:
        return unshaped
    refill_bytes = min(rate * BURST_S, rate * alpha_s)
    return max(unshaped, (sent_bytes - refill_bytes) / (rate * TCP_PAYLOAD_FRACTION))


def _install_cleanup(topo: Topology):
    """Remove the namespaces on normal exit, on SIGTERM and on Ctrl-C."""
    atexit.register(topo.destroy)
    previous = {}

    def handler(signum, frame):
        topo.destroy()
        signal.signal(signum, previous.get(signum, signal.SIG_DFL))
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        os.kill(os.getpid(), signum)

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        previous[sig] = signal.signal(sig, handler)

    def restore():
        for sig, h in previous.items():
            signal.signal(sig, h)
        atexit.unregister(topo.destroy)

    return restore


def format_lab(result: LabResult) -> str:
    lines = [
        f"# fabric lab: {result.ranks} gloo ranks, one per network namespace, all-reduce; "
        f"fitted on the unshaped link: alpha {format_seconds(result.alpha_s)}, "
        f"B {format_rate(result.unshaped_bytes_per_s)}" + ("" if result.netem else "; netem: not available")
    ]
    lines += [f"# warning: {w}" for w in result.warnings]
    for r in result.rates:
        lines.append(
            f"## {r.label}: predicted with B = {format_rate(r.effective_bytes_per_s)}"
            + ("" if r.rate_bytes_per_s is None else " (tc rate x 1448/1514 TCP payload)")
        )
        lines.append(f"#{'size':>10} {'measured':>11} {'spread':>21} {'predicted':>11} {'error':>7}  regime")
        for x in r.rows:
            lines.append(
                f" {format_bytes(x.msg_bytes):>10} {format_seconds(x.measured_s):>11} "
                f"{format_seconds(x.spread[0]):>10}..{format_seconds(x.spread[1]):<9} "
                f"{format_seconds(x.predicted_s):>11} {100 * x.rel_error:>6.1f}%  "
                f"{'bandwidth' if x.bandwidth_bound else 'latency'}"
            )
        bw, lat = r.errors(True), r.errors(False)
        summary = []
        if bw:
            summary.append(
                f"bandwidth-bound sizes: median |error| {100 * np.median(bw):.1f}%, worst {100 * max(bw):.1f}%"
            )
        if lat:
            summary.append(
                f"latency-bound sizes: median |error| {100 * np.median(lat):.1f}%, worst {100 * max(lat):.1f}%"
            )
        lines.append("  " + "; ".join(summary))
        # the lesson: a decode step's all-reduces over this link (llama-3.1-8b, TP2: 66 calls)
        k = busbw_factor(CollectiveOp.ALL_REDUCE, result.ranks)
        for batch in (1, 64):
            n = batch * 4096 * 2
            t = result.alpha_s + k * n / r.effective_bytes_per_s
            lines.append(
                f"  llama-3.1-8b TP{result.ranks} decode, batch {batch}: 66 all-reduces of "
                f"{format_bytes(n)} = {format_seconds(66 * t)} per token over this link"
                + (" (B extrapolated: see the warning)" if result.warnings and r.rate_bytes_per_s is None else "")
            )
    return "\n".join(lines)
