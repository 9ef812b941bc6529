"""The `shardbudget` command line: one module per command (or per small group of commands), each a
thin shell over the library that parses, calls and prints.

    app          the typer app, the entry point (main), errors as one line and exit 2
    args         the options the commands share: their types and how their text is read
    common       catalog and model loading, JSON output, figures, progress
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

from .app import console_main, main

__all__ = ["console_main", "main"]
