"""``python -m shardbudget.measure``: the collective benchmark, printed as nccl-tests prints it.

A thin shell over `shardbudget.measure.harness.run_measure`: parse, call, print. The table goes to
stdout row by row; errors are one line on stderr with a non-zero exit (2: bad input, 1: the run
failed or the check found wrong values, 130: interrupted).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from ..errors import ShardbudgetError
from ..units import parse_bytes, parse_list, parse_seconds, parse_size_range
from .harness import (BACKENDS, DTYPES, OPS, MeasureResult, MeasureRunError, SizeResult,
                      format_table_header, format_table_row, is_reporting_rank,
                      run_measure)


def parse_sizes(text: str) -> list[float]:
    """'8B:64MiB' (powers of two), '8B:64MiB:4' (factor 4) or a list '8B,1KiB,1MiB'."""
    if ":" in text:
        return parse_size_range(text)
    return parse_list([text], parse_bytes)


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m shardbudget.measure",
        description="Time a collective over torch.distributed and print nccl-tests' columns.")
    p.add_argument("--backend", choices=BACKENDS, default="gloo")
    p.add_argument("--nproc", type=int, default=None,
                   help="ranks to spawn locally (default 2); under torchrun/srun: theirs")
    p.add_argument("--op", choices=OPS, default="all-reduce")
    p.add_argument("--sizes", default="8B:64MiB", help="8B:64MiB, 8B:64MiB:4 or 8B,1KiB")
    p.add_argument("--dtype", choices=list(DTYPES), default="float32")
    p.add_argument("--iters", type=int, default=20)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--check", action="store_true", help="verify the results on known data")
    p.add_argument("--out", default=None, help="write every sample to this JSON file")
    p.add_argument("--force", action="store_true", help="overwrite --out if it exists")
    p.add_argument("--timeout", default="120s", help="longest one size may take (e.g. 120s)")
    p.add_argument("--master-addr", default="127.0.0.1", help="rendezvous address (local runs)")
    p.add_argument("--port", type=int, default=None, help="rendezvous port (default: a free one)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return p


def _row_printer(args: argparse.Namespace, n_sizes: int) -> Callable[[SizeResult], None]:
    """Print the header with the first row, so an error before any work prints no table."""
    printed = []

    def on_size(row: SizeResult) -> None:
        if not printed:
            print(f"# shardbudget {args.op} on {args.backend}, {args.dtype}, {n_sizes} sizes, "
                  f"{args.iters} iters; time is the median over iterations of the slowest rank")
            print(format_table_header())
            printed.append(True)
        print(format_table_row(row, op=args.op, dtype=args.dtype), flush=True)
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


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        sizes = parse_sizes(args.sizes)
        timeout_s = parse_seconds(args.timeout, what="timeout", bare_ok=True)
        result = run_measure(
            backend=args.backend, nproc=args.nproc, op=args.op, sizes_bytes=sizes,
            dtype=args.dtype, iters=args.iters, warmup=args.warmup, check=args.check,
            out=args.out, force=args.force, timeout_s=timeout_s, master_addr=args.master_addr,
            master_port=args.port, progress=not args.no_progress,
            on_size=_row_printer(args, len(sizes)))
    except MeasureRunError as exc:
        if is_reporting_rank():
            _print_summary(exc.result)
        print(f"shardbudget: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except ShardbudgetError as exc:
        print(f"shardbudget: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("shardbudget: interrupted; the sizes measured so far were kept", file=sys.stderr)
        return 130
    if is_reporting_rank():
        _print_summary(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
