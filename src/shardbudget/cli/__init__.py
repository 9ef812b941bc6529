"""The `shardbudget` command line: one module per command (or per small group of commands), each a
thin shell over the library that parses, calls and prints.

    app          the typer app, the entry point (main), errors as one line and exit 2
    args         the options the commands share: their types and how their text is read
    command_io   what a command reads and writes: catalog and model loading, JSON output, figures, progress
    fabrics      fabrics, models
    collectives  allreduce, compare
    plan         plan
    deploy       deploy
    explain      explain
    measure      measure, fit, lab
    check        check
    topo         topo
    report       report, demo

May import every layer below it; nothing imports it.
"""

import gc
import sys

__all__ = ["console_main", "main"]

GC_THRESHOLD = 100_000
"""Container allocations between the cycle collector's young-generation passes in the `shardbudget`
process (Python's default: 700). Start-up makes ~33,000 objects that live to the end (modules,
functions, classes, the catalog) and almost no garbage cycles; at 700 the collector ran ~85 times
during a `plan` run, each pass searching objects that were all alive (issue 24: about 10% of the
run's CPU). At 100,000 start-up runs no pass; a long command (deploy sweeps, report) still
collects, every 100,000 allocations."""


def console_main() -> None:
    """The `shardbudget` command and `python -m shardbudget`: a process of its own, so its collector
    is tuned before typer is imported (GC_THRESHOLD), and what is alive at the end is frozen rather
    than searched for cycles by the interpreter's last collection at exit (the OS frees it all)."""
    gc.set_threshold(GC_THRESHOLD, 10, 10)
    from .app import main as run

    code = run()
    gc.freeze()
    sys.exit(code)


def __getattr__(name: str):
    if name == "main":  # the entry point in-process (tests): imports typer
        from .app import main as run

        return run
    raise AttributeError(f"module 'shardbudget.cli' has no attribute {name!r}")
