"""The `shardbudget` command: one typer app, each command in its own module (a thin shell over the
library: parse, call, print), and the entry point that holds every command to one exit-code contract:

    0  answered (check: every region within tolerance; deploy: an option meets the budgets)
    1  a negative verdict: check FAIL, deploy: nothing meets the budgets, a measurement that failed
    2  bad input: a `ShardbudgetError` or a usage error (unknown option, bad value), one line, no traceback
    3  internal error: anything else escaping a command is a bug, said in one line with where to report it
    130  interrupted (Ctrl-C, a closed pipe)

A script can thus tell a crash (3) from a verdict (1) and from its own mistake (2).

A run imports only the module of the command it names; `--help` and a typo'd command import all of
them, in the order `COMMANDS` lists, which is the order `--help` shows."""

from __future__ import annotations

import importlib
import os
import sys
import warnings
from typing import Annotated

import typer

from ..errors import RenamedName, ShardbudgetError

EXIT_OK, EXIT_VERDICT, EXIT_BAD_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
"""The exit-code contract of every command (module docstring; docs/commands.md "Exit codes")."""
REPORT_BUGS = (
    "a bug in shardbudget: please report it to the project's issue tracker with the command line, "
    "`shardbudget --version` and the traceback SHARDBUDGET_DEBUG=1 prints"
)
HELP = "How far can a transformer be tensor-parallel sharded before the interconnect sets its per-token latency?"
# Help is click's plain format: typer's rich panels import rich's markdown, traceback and layout
# modules, ~1.9x the start-up of Python with numpy on their own, past the 0.30 s `--help` budget
# (issue 24; measured with farm-bench: `import typer.rich_utils` 0.267 s cpu, `import numpy` 0.139 s).
TYPER = dict(
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"max_content_width": 100},
)
app = typer.Typer(help=HELP, **TYPER)

COMMANDS = {  # command -> the module of this package that defines it
    "fabrics": "fabrics",
    "allreduce": "collectives",
    "compare": "collectives",
    "plan": "plan",
    "deploy": "deploy",
    "explain": "explain",
    "models": "fabrics",
    "engines": "engines",
    "measure": "measure",
    "fit": "measure",
    "check": "check",
    "topo": "topo",
    "lab": "measure",
    "report": "report",
    "demo": "report",
}
SUMMARIES = {  # command -> the first line of its docstring, for `shardbudget --help` (a test holds them equal)
    "fabrics": "The fabric catalog: per-direction bandwidth, per-hop latency and the source of each number.",
    "allreduce": "An nccl-tests-like table of predicted collective times on a system.",
    "compare": "Systems side by side: crossover sizes and the time ratio at the sizes decode really uses.",
    "plan": "Sweep TP x PP (x EP) and say how far the model can be sharded within the budget.",
    "deploy": "How to spend N GPUs: replicas x TP x PP at the largest batch within the budgets, tokens/s per GPU, launch lines.",
    "explain": "Fabric against fabric, when all-reduce limits sharding, why the network is slow for decode: with numbers.",
    "models": "The model configs shipped with shardbudget.",
    "engines": "The engine presets: each one's release, date, the NCCL it ships and where its rules were read; --diff A B.",
    "measure": "Time real collectives with torch.distributed: nccl-tests' columns on stdout, every sample as JSON with --out.",
    "fit": "Fit the collective model's constants to measurements and write a profile usable as --catalog.",
    "check": "Is this nccl-tests result or serving benchmark normal for the system? Per size and region, or per metric, with the likely cause; exit 0 ok, 1 not, 2 bad input, 3 a bug.",
    "topo": "A system profile from a node's own topology, usable with --catalog in allreduce, plan, deploy and report (printed without --out).",
    "lab": "Emulated fabric: ranks in network namespaces over shaped veth links, measured vs predicted.",
    "report": "One self-contained HTML file: verdict, figures, the tables behind them, sources and assumptions (default report.html).",
    "demo": "Llama-3.1-70B, bf16, batch 1 and 64, 50 ms: HGX H100 vs 8x L40S on PCIe vs 2 HGX H100 over InfiniBand (default report.html).",
}


def _version(value: bool) -> None:
    if value:
        from .. import __version__

        typer.echo(f"shardbudget {__version__}")
        raise typer.Exit()


def _group(commands: list) -> typer.Typer:
    """A typer group of `commands` with the app's help and --version (a callback keeps it a group, so
    usage lines and errors read the same whichever commands it holds)."""
    one = typer.Typer(help=HELP, **TYPER)
    one.registered_commands = commands

    @one.callback()
    def _main(
        version: Annotated[
            bool, typer.Option("--version", is_eager=True, callback=_version, help="Print the version and exit.")
        ] = False,
    ) -> None:
        pass

    return one


def full_app() -> typer.Typer:
    """The app with every command registered, in the order of COMMANDS."""
    for module in dict.fromkeys(COMMANDS.values()):
        importlib.import_module(f".{module}", __package__)
    order = list(COMMANDS)
    app.registered_commands.sort(key=lambda c: order.index(_command_name(c)))
    return app


def listing_app() -> typer.Typer:
    """`shardbudget --help`, a bare `shardbudget` and a typo'd command: every command's name and summary,
    without importing one command module (start-up)."""
    stubs = typer.Typer()
    for name in COMMANDS:
        stubs.command(name, help=SUMMARIES[name], short_help=SUMMARIES[name], add_help_option=False)(lambda: None)
    return _group(stubs.registered_commands)


def main(argv: list[str] | None = None) -> int:
    """Entry point: the exit code of the contract in the module docstring; user errors become one line
    on stderr (exit 2), a bug one line "internal error: ..." (exit 3), never a traceback."""
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        with warnings.catch_warnings():
            _notes_for_renamed_names()
            code = _app_for(argv)(
                args=argv, prog_name="shardbudget", standalone_mode=False
            )  # typer.Exit(code) comes back as the code (check: 1)
    except ShardbudgetError as err:
        from ..quoting import one_line  # a path or name in the message: one line, no escape sequence

        typer.echo(f"error: {one_line(err)}", err=True)
        return err.exit_code
    except _click_errors() as err:  # usage errors: unknown option, missing value, bad int
        if type(err).__name__ == "NoArgsIsHelpError":  # bare `shardbudget`: rich has printed the help
            if err.format_message().strip():  # (plain click puts it in the message instead)
                typer.echo(err.format_message(), err=True)
        else:
            typer.echo(f"error: {err.format_message()}", err=True)
        return EXIT_BAD_INPUT
    except _click_exit() as err:
        return err.exit_code
    except _click_abort():
        return EXIT_INTERRUPTED
    except (KeyboardInterrupt, BrokenPipeError):
        return EXIT_INTERRUPTED
    except SystemExit as err:  # click's and rich's answer to a closed pipe (`| head`): exit(1), a verdict's code
        if err.code == EXIT_VERDICT and _stdout_closed():
            return EXIT_INTERRUPTED
        raise
    except Exception as err:  # a bug: say so in one line; SHARDBUDGET_DEBUG=1 shows the traceback
        if os.environ.get("SHARDBUDGET_DEBUG"):
            raise
        text = " ".join(f"{type(err).__name__}: {err}".split())[:300]  # one line, whatever the message
        typer.echo(f"internal error: {text} ({REPORT_BUGS})", err=True)
        return EXIT_INTERNAL
    return code if isinstance(code, int) else EXIT_OK


def _notes_for_renamed_names() -> None:
    """A renamed catalog name (`RenamedName`: l40s-pcie, now l40s-pcie-nps1-degraded) is said once, as
    one "note:" line on stderr, not as Python's two-line warning with a file and line number."""
    said: set[str] = set()
    show = warnings.showwarning

    def note(message, category, filename, lineno, file=None, line=None):
        if not issubclass(category, RenamedName):
            return show(message, category, filename, lineno, file, line)
        text = str(message)
        if text not in said:
            said.add(text)
            from ..quoting import one_line

            typer.echo(f"note: {one_line(text)}", err=True)

    warnings.simplefilter("always", RenamedName)
    warnings.showwarning = note


def _stdout_closed() -> bool:
    """The reader of stdout went away: click wraps stdout in its PacifyFlushWrapper on EPIPE before its
    sys.exit(1); rich points stdout at /dev/null before its own (Console.on_broken_pipe)."""
    if type(sys.stdout).__name__ == "PacifyFlushWrapper":
        return True
    try:
        out, null = os.fstat(sys.stdout.fileno()), os.stat(os.devnull)
    except (OSError, ValueError, AttributeError):  # no real stdout (a test's capture)
        return False
    return (out.st_dev, out.st_ino) == (null.st_dev, null.st_ino)


def _command_name(info) -> str:
    return info.name or info.callback.__name__.replace("_", "-")


def _app_for(argv: list[str]) -> typer.Typer:
    """The app with only the command `argv` names, when it names one: its module alone is imported,
    and typer turns only its signature into click parameters."""
    if not argv or argv[0] not in COMMANDS:
        return listing_app()
    importlib.import_module(f".{COMMANDS[argv[0]]}", __package__)
    return _group([c for c in app.registered_commands if _command_name(c) == argv[0]])


def _click_errors():
    try:  # typer >= 0.2x vendors click as typer._click; `import click` may then fail or be another copy
        from typer._click.exceptions import UsageError
    except ImportError:
        from click.exceptions import UsageError
    return UsageError  # BadParameter, NoSuchOption, missing option ... all derive from it


def _click_exit():
    return typer.Exit  # click's Exit on older typer, typer's own on newer


def _click_abort():
    return typer.Abort
