"""`python -m shardbudget.calibrate`: fit the catalog's measured constants on the repository's data/ and
write them into the catalog; `--check` compares instead of writing; `--report` prints the model's known
defects; `--falls` writes data/falls.csv (the kernel-switch falls) from a scan. Exit status: 0 done
(or the catalog agrees), 1 the catalog differs from a fresh fit, 2 the data is missing.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from .check import CATALOG, differences, values_to_json, write
from .describe import describe
from .fit import fit_all
from . import falls
from .report import known_defects, scanned_falls
from .tables import fitted_values

EPILOG = """without an option: fit and write the fitted values into src/shardbudget/catalog (nccl.toml,
custom_allreduce.toml, fabrics.toml, cpus.toml), repeating until the catalog is its own fit. --check: exit 1
naming every value that differs from a fresh fit by more than one unit of its last written digit."""


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m shardbudget.calibrate", description=__doc__.split("\n\n")[0], epilog=EPILOG
    )
    what = ap.add_mutually_exclusive_group()
    what.add_argument("--check", action="store_true", help="compare the catalog with a fresh fit; write nothing")
    what.add_argument("--print", action="store_true", help="print the fitted constants; write nothing")
    what.add_argument("--json", action="store_true", help="print the fitted catalog values as JSON; write nothing")
    what.add_argument(
        "--report", action="store_true", help="print the model's known defects (data/falls.csv's known rows)"
    )
    what.add_argument(
        "--falls",
        action="store_true",
        help="write data/falls.csv (MEASURED and KNOWN) as a scan finds them today; read its diff",
    )
    ap.add_argument(
        "--data", type=Path, default=None, help="folder of the measurements (default: the repository's data/)"
    )
    ap.add_argument(
        "--catalog-dir",
        type=Path,
        default=CATALOG,
        help="with --check: the catalog folder to compare (default: the package's, src/shardbudget/catalog)",
    )
    return ap


def _check(data: Path | None, catalog_dir: Path) -> int:
    values = fitted_values(fit_all(data))
    found = differences(values, catalog_dir)
    for line in found:
        print(line)
    if found:
        print(
            f"calibrate: {len(found)} catalog value(s) differ from a fresh fit: run `python -m shardbudget.calibrate` "
            "and read the diff"
        )
        return 1
    print(
        f"calibrate: the catalog holds a fresh fit: {len(values)} fitted entries, each within one unit of its "
        "last written digit"
    )
    return 0


def _write_falls() -> str:
    """Write data/falls.csv from a scan; what changed, counted."""
    try:
        before = falls.load()
    except (FileNotFoundError, falls.FallsFileError):
        before = falls.Falls({}, {})
    after = scanned_falls()
    path = falls.write(after)
    was = set(before.measured) | set(before.known)
    now = set(after.measured) | set(after.known)
    return (
        f"calibrate: wrote {path}: {len(after.measured)} measured, {len(after.known)} known falls "
        f"(was {len(before.measured)} and {len(before.known)}: {len(was - now)} gone, {len(now - was)} new)"
    )


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.catalog_dir != CATALOG and not args.check:
        parser.error("--catalog-dir is read by --check only: the fit is written into the package's catalog")
    if args.data is not None and args.falls:
        parser.error("--falls reads and writes the repository's data/ (the rows at each switch are its own)")
    try:
        if args.report:
            print("\n".join(known_defects()))
        elif args.falls:
            print(_write_falls())
        elif args.check:
            return _check(args.data, args.catalog_dir)
        elif args.print:
            print("\n".join(describe(fit_all(args.data))))
        elif args.json:
            print(values_to_json(fitted_values(fit_all(args.data))))
        else:
            rounds, written = write(args.data)
            files = ", ".join(sorted(set(written))) or "nothing changed"
            print(f"calibrate: the catalog is its own fit after {rounds} round(s); written: {files}")
    except (FileNotFoundError, falls.FallsFileError) as err:
        print(f"calibrate: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # the reader went away (`--report | head`): as the CLI, exit 130, no traceback
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the flush at exit says nothing
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
