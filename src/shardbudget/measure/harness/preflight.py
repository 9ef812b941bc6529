"""Everything the harness checks before any work: the request, the rendezvous address and port,
and the GPUs NCCL needs. Each refusal is one `MeasureError` line naming the value."""

from __future__ import annotations

import ipaddress
import math
import re
import socket

from ... import dtypes
from ...comm.op import CollectiveOp, parse_op
from ...errors import MeasureError, UnknownNameError, did_you_mean
from .protocol import BACKENDS, DTYPES, OPS, check_max_value


def check_request(
    *,
    backend: str,
    op: str,
    dtype: str,
    iters: int,
    warmup: int,
    check: bool,
    timeout_s: float,
    sizes_bytes: list[float],
    world_size: int,
) -> tuple[CollectiveOp, str]:
    """The operation and the canonical dtype name a sweep asks for, or a one-line MeasureError."""
    if backend not in BACKENDS:
        raise MeasureError(f"backend {backend!r} is not one of {', '.join(BACKENDS)}{did_you_mean(backend, BACKENDS)}")
    the_op = parse_op(op, OPS, error=MeasureError)
    dtype_name = harness_dtype(dtype)
    if world_size < 2:
        raise MeasureError(f"a collective needs at least 2 ranks, got {world_size}")
    if iters < 1 or warmup < 0:
        raise MeasureError(f"iters ({iters}) must be at least 1 and warmup ({warmup}) at least 0")
    if not timeout_s > 0:
        raise MeasureError(f"timeout ({timeout_s} s) must be greater than zero")
    if not sizes_bytes or any(not (s > 0 and math.isfinite(s)) for s in sizes_bytes):
        raise MeasureError(f"sizes must be a non-empty list of positive byte counts, got {sizes_bytes}")
    largest = check_max_value(the_op, world_size)
    if check and largest > dtypes.dtype(dtype_name).max_exact:
        raise MeasureError(
            f"{dtype_name} cannot hold the check values of {the_op} on {world_size} "
            f"ranks (up to {largest}); use a wider dtype"
        )
    return the_op, dtype_name


def harness_dtype(name: str) -> str:
    """'bfloat16' or 'bf16' -> 'bf16', if torch.distributed can move it; else a MeasureError."""
    try:
        found = dtypes.dtype(name)
    except UnknownNameError as exc:
        raise MeasureError(str(exc)) from None
    if found.name not in DTYPES:
        raise MeasureError(
            f"dtype {found.name!r} has no torch.distributed collectives here (expected one of {', '.join(DTYPES)})"
        )
    return found.name


# --- addresses and ports ----------------------------------------------------------------------

_HOST_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
_HOSTNAME = re.compile(rf"(?=.{{1,253}}\.?$){_HOST_LABEL}(?:\.{_HOST_LABEL})*\.?")


def check_host(addr: str, source: str = "master address") -> str:
    """Accept an IP address or an RFC 1123 hostname; anything else never reaches a socket."""
    try:
        return str(ipaddress.ip_address(addr))
    except ValueError:
        pass
    if not _HOSTNAME.fullmatch(addr):
        raise MeasureError(f"{source} {addr!r} is not a hostname or an IP address")
    return addr


def is_loopback(addr: str) -> bool:
    try:
        return ipaddress.ip_address(addr).is_loopback
    except ValueError:
        return addr == "localhost"


def free_port(addr: str) -> int:
    """Ask the kernel for a free TCP port on `addr` (the rendezvous store will bind it)."""
    with socket.socket(_family(addr), socket.SOCK_STREAM) as sock:
        sock.bind((addr, 0))
        return sock.getsockname()[1]


def check_port_free(addr: str, port: int) -> None:
    if not 0 < port < 65536:
        raise MeasureError(f"port {port} is not a TCP port (1..65535)")
    with socket.socket(_family(addr), socket.SOCK_STREAM) as sock:
        # SO_REUSEADDR as the rendezvous store sets it: only a listening socket makes bind fail,
        # not connections lingering in TIME_WAIT.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((addr, port))
        except OSError as exc:
            raise MeasureError(
                f"port {port} on {addr} is already in use ({exc.strerror}); pick "
                "another or leave the port out to use a free one"
            ) from None


def _family(addr: str) -> int:
    return socket.AF_INET6 if ":" in addr else socket.AF_INET


# --- devices ----------------------------------------------------------------------------------


def check_cuda(backend: str, gpus_needed: int) -> None:
    if backend != "nccl":
        return
    import torch  # only NCCL needs the parent to look at devices; torch stays lazy elsewhere

    found = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if found < gpus_needed:
        raise MeasureError(
            f"backend 'nccl' needs {gpus_needed} CUDA GPU(s) on this node, torch "
            f"{torch.__version__} sees {found}; use --backend gloo on CPUs"
        )
