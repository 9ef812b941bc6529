"""The collective operations, their spellings and nccl-tests' busbw factor: one vocabulary for the
cost model, the plan's inserted collectives, the harness and the log reader.

`CollectiveOp` is a `StrEnum`, so `CollectiveOp.ALL_REDUCE == "all-reduce"` and it prints, hashes and
serialises to JSON as that string. `parse_op` reads any spelling met in binaries, annotations and
JSON ("all_reduce", "AllReduce", "all_reduce_perf", "allreduce", "p2p") by its letters alone.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import StrEnum

from ..errors import PlanError, ShardbudgetError, UnknownNameError


class CollectiveOp(StrEnum):
    ALL_REDUCE = "all-reduce"
    REDUCE_SCATTER = "reduce-scatter"
    ALL_GATHER = "all-gather"
    ALL_TO_ALL = "all-to-all"
    BROADCAST = "broadcast"
    REDUCE = "reduce"
    SEND_RECV = "send/recv"


# Spellings keyed by their letters alone ("all_reduce", "AllReduce", "all-reduce" -> "allreduce").
_ALIASES = {re.sub(r"[^a-z]", "", op.value): op for op in CollectiveOp} | {"p2p": CollectiveOp.SEND_RECV}


def _key(name: str) -> str:
    key = re.sub(r"[^a-z0-9]", "", name.lower())
    return re.sub(r"perf(mpi)?$", "", key)  # nccl-tests binaries: all_reduce_perf, all_reduce_perf_mpi


def op_or_none(name: object) -> CollectiveOp | None:
    """The operation a spelling names, or None."""
    return _ALIASES.get(_key(name)) if isinstance(name, str) else None


def parse_op(
    name: object, allowed: Iterable[CollectiveOp] = tuple(CollectiveOp), error: type[ShardbudgetError] | None = None
) -> CollectiveOp:
    """The operation `name` spells, if it is one of `allowed`; else a one-line error (with 'did you
    mean') of type `error` (default UnknownNameError)."""
    allowed = tuple(allowed)
    op = op_or_none(name)
    if op is not None and op in allowed:
        return op
    unknown = UnknownNameError("collective", str(name), [a.value for a in allowed])
    if op is not None:
        unknown.args = (
            f"collective {op.value!r} is not supported here (expected one of {', '.join(a.value for a in allowed)})",
        )
    if error is None:
        raise unknown
    raise error(str(unknown)) from None


def busbw_factor(op: str, ranks: int) -> float:
    """busbw / algbw for `op` on `ranks` ranks, as nccl-tests' doc/PERFORMANCE.md defines it.

    The share of the message each rank's link must carry in an optimal algorithm, so that busbw can
    be held against a link's peak whatever the rank count:

    * all-reduce 2(n-1)/n: a reduce-scatter then an all-gather, each moving (n-1)/n of the data;
    * all-gather, reduce-scatter, all-to-all (n-1)/n: each rank receives (or sends) the n-1 pieces
      it does not own;
    * broadcast, reduce, send/recv 1: every byte crosses each link once.

    With one rank nccl-tests prints busbw 0 for all-reduce and the (n-1)/n operations; so do these.
    """
    op = parse_op(op)
    if isinstance(ranks, bool) or not isinstance(ranks, int) or ranks < 1:
        raise PlanError(f"a collective needs a whole number of ranks, at least 1, got {ranks!r}")
    if op is CollectiveOp.ALL_REDUCE:
        return 2 * (ranks - 1) / ranks
    if op in (CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_GATHER, CollectiveOp.ALL_TO_ALL):
        return (ranks - 1) / ranks
    return 1.0


def nccl_tests_count(op: str, size_bytes: float, elem_bytes: float, ranks: int) -> int:
    """nccl-tests' "count" column: elements per rank. all-reduce, broadcast, reduce, send/recv: the
    whole buffer; all-gather: each rank's send share of the gathered size; reduce-scatter: each
    rank's output share; all-to-all: what each rank sends to one peer (size / n of each)."""
    op = parse_op(op)
    elements = int(size_bytes // elem_bytes)
    split = op in (CollectiveOp.ALL_GATHER, CollectiveOp.REDUCE_SCATTER, CollectiveOp.ALL_TO_ALL)
    return elements // ranks if split and ranks > 0 else elements


__all__ = ["CollectiveOp", "busbw_factor", "nccl_tests_count", "op_or_none", "parse_op"]
