"""The `shardbudget` command: one typer app, each command in its own module (a thin shell over the
library: parse, call, print), and the entry point that turns user errors into one line and exit 2.

A run imports only the module of the command it names; `--help` and a typo'd command import all of
them, in the order `COMMANDS` lists, which is the order `--help` shows."""

from __future__ import annotations

import importlib
import os
import sys

import typer

from ..errors import ShardbudgetError

app = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False,
                  help="How far can a transformer be tensor-parallel sharded before the interconnect "
                       "sets its per-token latency?")

COMMANDS = {  # command -> the module of this package that defines it
    "fabrics": "fabrics", "allreduce": "collectives", "compare": "collectives", "plan": "plan",
    "deploy": "deploy", "explain": "explain", "models": "fabrics", "measure": "measure", "fit": "measure",
    "check": "check", "topo": "topo", "lab": "measure", "report": "report", "demo": "report",
}


def full_app() -> typer.Typer:
    """The app with every command registered, in the order of COMMANDS."""
    for module in dict.fromkeys(COMMANDS.values()):
        importlib.import_module(f".{module}", __package__)
    order = list(COMMANDS)
    app.registered_commands.sort(key=lambda c: order.index(_command_name(c)))
    return app


def main(argv: list[str] | None = None) -> int:
    """Entry point: user errors become one line on stderr and exit code 2, never a traceback."""
    try:
        argv = sys.argv[1:] if argv is None else list(argv)
        code = _app_for(argv)(args=argv, prog_name="shardbudget", standalone_mode=False)  # typer.Exit(code) comes back as the code (check: 1)
    except ShardbudgetError as err:
        typer.echo(f"error: {err}", err=True)
        return err.exit_code
    except _click_errors() as err:  # usage errors: unknown option, missing value, bad int
        if type(err).__name__ == "NoArgsIsHelpError":  # bare `shardbudget`: rich has printed the help
            if err.format_message().strip():  # (plain click puts it in the message instead)
                typer.echo(err.format_message(), err=True)
        else:
            typer.echo(f"error: {err.format_message()}", err=True)
        return 2
    except _click_exit() as err:
        return err.exit_code
    except _click_abort():
        return 130
    except (KeyboardInterrupt, BrokenPipeError):
        return 130
    except Exception as err:  # a bug: say so in one line; SHARDBUDGET_DEBUG=1 shows the traceback
        if os.environ.get("SHARDBUDGET_DEBUG"):
            raise
        typer.echo(f"internal error: {type(err).__name__}: {err} (set SHARDBUDGET_DEBUG=1 for details)", err=True)
        return 1
    return code if isinstance(code, int) else 0


def _command_name(info) -> str:
    return info.name or info.callback.__name__.replace("_", "-")


def _app_for(argv: list[str]) -> typer.Typer:
    """The app with only the command `argv` names, when it names one: its module alone is imported,
    and typer turns only its signature into click parameters (~0.1 s for all of them). A callback
    keeps it a group, so usage lines and errors read as with the full app."""
    if not argv or argv[0] not in COMMANDS:
        return full_app()  # --help, a typo'd command: the full app answers, with every command listed
    importlib.import_module(f".{COMMANDS[argv[0]]}", __package__)
    wanted = [c for c in app.registered_commands if _command_name(c) == argv[0]]
    one = typer.Typer(add_completion=False, no_args_is_help=True, pretty_exceptions_enable=False, help=app.info.help)
    one.registered_commands = wanted
    one.callback()(lambda: None)
    return one


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


def console_main() -> None:
    code = main()
    sys.exit(code)
