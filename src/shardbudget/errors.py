"""The project's own error types.

Every error a user can cause (unknown name, malformed file, impossible plan, typo'd unit) is a
`ShardbudgetError`. The CLI prints its message on one line and exits with code 2; the library lets
it propagate. Anything else escaping is a bug.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class ShardbudgetError(Exception):
    """A problem with the user's input or request, explained in one line."""

    exit_code = 2


class UnknownNameError(ShardbudgetError, KeyError):
    """A name that is not in the catalog; the message suggests the closest names."""

    def __init__(self, kind: str, name: str, known: Iterable[str]):
        self.kind, self.name = kind, name
        self.known = sorted(known)
        close = closest(name, self.known)
        hint = did_you_mean(name, self.known)
        listing = f" (known: {', '.join(self.known)})" if len(self.known) <= 12 and not close else ""
        super().__init__(f"unknown {kind} {name!r}{hint}{listing}")

    def __str__(self) -> str:  # KeyError would otherwise repr() the message
        return self.args[0]


def closest(name: str, known: Iterable[str], n: int = 3) -> list[str]:
    """The known names nearest to a misspelt one, compared ignoring case ('VLLM' is nearest 'vllm')."""
    by_fold: dict[str, str] = {}
    for k in known:
        by_fold.setdefault(str(k).casefold(), k)
    return [by_fold[m] for m in difflib.get_close_matches(str(name).casefold(), list(by_fold), n=n, cutoff=0.4)]


def known_case(name: object, known: Iterable[str]) -> object:
    """The known name equal to `name` regardless of case ('HGX-H100' -> 'hgx-h100'); `name` itself
    when it is known as typed, or when nothing matches (the lookup then says what is close)."""
    names = list(known)
    if not isinstance(name, str) or name in names:
        return name
    return next((k for k in names if k.lower() == name.lower()), name)


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """'; did you mean 'a', 'b'?' for a misspelt name, or '' when nothing is close."""
    close = closest(name, known)
    return f"; did you mean {', '.join(repr(c) for c in close)}?" if close else ""


class RenamedName(FutureWarning):
    """A catalog name renamed within this release and still taken until the next one: the library
    warns (Python shows FutureWarning by default), the CLI prints the message as one "note:" line on
    stderr (cli/app.py), and the answer carries the new name."""


class UnitError(ShardbudgetError, ValueError):
    """A quantity that could not be read as the expected kind (size, time, rate)."""


class CatalogError(ShardbudgetError, ValueError):
    """A catalog or user file that is malformed or fails validation."""


class PlanError(ShardbudgetError, ValueError):
    """A request the hardware or model cannot satisfy (too many GPUs, invalid TP degree, ...)."""


class MeasureError(ShardbudgetError, RuntimeError):
    """A measurement run that could not start or did not finish."""


class OutputError(ShardbudgetError, OSError):
    """An output file that cannot be written where the user asked (missing folder, exists, ...)."""
