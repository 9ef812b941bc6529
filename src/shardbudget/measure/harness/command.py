"""The one command line of the harness, behind ``shardbudget measure``, ``python -m
shardbudget.measure`` and torchrun's ``-m shardbudget.measure``.

A thin shell over `run.run_measure`: parse, call, print. The table goes to stdout row by row,
after one header line; errors are one line on stderr with a non-zero exit (2: bad input, 1: the run
failed or the check found wrong values, 130: interrupted). ``shardbudget measure`` hands its raw
arguments to `run`, so both front ends take the same options and print the same output.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from typing import NoReturn

from ... import dtypes
from ...comm.op import parse_op
from ...errors import MeasureError, ShardbudgetError
from ...units import parse_bytes, parse_list, parse_seconds, parse_size_range
from .run import run_measure
from .launchers import is_reporting_rank
from .protocol import BACKENDS, DTYPES, OPS
from .results import MeasureResult, MeasureRunError, SizeResult, format_table_header, format_table_row

PROG = "python -m shardbudget.measure"
DESCRIPTION = "Time a collective over torch.distributed and print nccl-tests' columns."


class _Parser(argparse.ArgumentParser):
    """argparse whose usage errors are one-line MeasureErrors, not a usage block and exit(2)."""

    def error(self, message: str) -> NoReturn:
        raise MeasureError(message)


def build_parser(prog: str = PROG) -> argparse.ArgumentParser:
    p = _Parser(prog=prog, description=DESCRIPTION)
    p.add_argument("--backend", default="gloo", help=f"{' | '.join(BACKENDS)} (default gloo)")
    # --gpus and --size as every shardbudget command spells them; --nproc and --sizes, the old names
    p.add_argument(
        "--gpus",
        "--nproc",
        dest="nproc",
        type=int,
        default=None,
        help="ranks to spawn locally (default 2); under torchrun/srun: theirs",
    )
    p.add_argument("--op", default="all-reduce", help=f"{' | '.join(OPS)} (default all-reduce)")
    p.add_argument(
        "--size",
        "--sizes",
        dest="sizes",
        default="8B:64MiB",
        help="8B:64MiB (powers of two), 8B:64MiB:4 (factor 4) or a list 8B,1KiB",
    )
    p.add_argument("--dtype", default="fp32", help=f"{' | '.join(DTYPES)}, or torch's names (bfloat16, float32, ...)")
    p.add_argument("--iters", type=int, default=20, help="timed iterations per size (the median is reported)")
    p.add_argument("--warmup", type=int, default=5, help="untimed iterations per size before the timed ones")
    p.add_argument("--check", action="store_true", help="verify the results on known data")
    p.add_argument("--out", default=None, help="write every sample and the environment to this JSON file")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--timeout", default="120s", help="give up on a hung or dead rank after this long (e.g. 120s)")
    p.add_argument("--master-addr", default="127.0.0.1", help="rendezvous address (local runs)")
    p.add_argument("--port", type=int, default=None, help="rendezvous port (default: a free one)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def parse_sizes(text: str) -> list[float]:
    """'8B:64MiB' (powers of two), '8B:64MiB:4' (factor 4) or a list '8B,1KiB,1MiB'."""
    if ":" in text:
        return parse_size_range(text)
    return parse_list([text], parse_bytes)


def run(argv: list[str] | None = None, *, prog: str = PROG) -> None:
    """Parse `argv`, measure and print. Raises ShardbudgetError (a MeasureRunError after printing
    what was measured) for the caller to print; `--help` prints the help and returns."""
    try:
        args = build_parser(prog).parse_args(argv)
    except SystemExit as done:  # --help: argparse has printed it
        if done.code:
            raise
        return
    sizes = parse_sizes(args.sizes)
    timeout_s = parse_seconds(args.timeout, what="--timeout")
    try:
        result = run_measure(
            backend=args.backend,
            nproc=args.nproc,
            op=args.op,
            sizes_bytes=sizes,
            dtype=args.dtype,
            iters=args.iters,
            warmup=args.warmup,
            check=args.check,
            out=args.out,
            force=args.force,
            timeout_s=timeout_s,
            master_addr=args.master_addr,
            master_port=args.port,
            progress=not args.no_progress,
            on_size=_row_printer(args, len(sizes)),
        )
    except MeasureRunError as exc:
        if is_reporting_rank():
            _print_summary(exc.result)
        raise
    if is_reporting_rank():
        _print_summary(result)


def main(argv: list[str] | None = None) -> int:
    """``python -m shardbudget.measure``: `run`, with errors as one line on stderr."""
    try:
        run(argv)
    except ShardbudgetError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("error: interrupted; the sizes measured so far were kept", file=sys.stderr)
        return 130
    return 0


def _row_printer(args: argparse.Namespace, n_sizes: int) -> Callable[[SizeResult], None]:
    """Print the header with the first row, so an error before any work prints no table."""
    printed = []

    def on_size(row: SizeResult) -> None:
        # run_measure has accepted both spellings by now; print the canonical ones
        op, dtype_name = parse_op(args.op), dtypes.canonical(args.dtype)
        if not printed:
            print(
                f"# shardbudget {op} on {args.backend}, {dtype_name}, {n_sizes} size{'s' * (n_sizes != 1)}, "
                f"{args.iters} iters; time is the median over iterations of the slowest rank"
            )
            print(format_table_header())
            printed.append(True)
        print(format_table_row(row, op=op, dtype=dtype_name), flush=True)

    return on_size


def _print_summary(result: MeasureResult) -> None:
    rows = result.results
    wrong = sum(r.wrong or 0 for r in rows)
    if result.check:
        print(f"# Out of bounds values : {wrong} {'OK' if wrong == 0 else 'FAILED'}")
    if rows:
        avg = sum(r.busbw_bytes_per_s for r in rows) / len(rows) / 1e9
        print(f"# Avg bus bandwidth    : {avg:.4g} GB/s")
    for note in result.notes:
        print(f"# note: {note}")
    if result.out_path:
        print(f"# samples written to {result.out_path}")
