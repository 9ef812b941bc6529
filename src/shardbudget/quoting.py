"""Text that comes from outside (a model folder's name, a catalog's, a file's) on its way out: checked
where it comes in, and quoted for where it goes.

* `check_name`: a name that reaches a written file or a terminal is printable text (no control,
  format or line-separator character, which could end a line, a comment or a directive, or drive a
  terminal), valid UTF-8 (a file name in another encoding arrives as lone surrogates), and, where
  it becomes a command-line argument, does not start with '-' (the program would read an option).
* `shell_quote`: the one quoting of a word for the shell (`shlex.quote`); every generated shell line
  is built from it (decide/launch/layout.py `shell_word` adds the node-address placeholders).
* `yaml_quote`: a YAML double-quoted scalar, all ASCII: `\\`, `"` and every character outside
  printable ASCII escaped (YAML 1.1 and 1.2 read the same escapes; U+2028, U+0085 are line breaks in YAML).
* `one_line`: text as one line of printable characters (each other character as its Python escape,
  `\\n`, `\\x1b`, `\\u2028`): the body of a `#` comment in a shell script, YAML or TOML file (which
  only a line break can leave; TOML refuses control characters in comments) and one-line messages.
* `terminal`: the same, keeping the line breaks and tabs that lay the text out: what plan, deploy
  and explain print, so that no escape sequence in a name reaches the terminal raw.
"""

from __future__ import annotations

import shlex

from .errors import ShardbudgetError

_LAYOUT = frozenset("\n\t")


def _escaped(c: str) -> str:
    return c.encode("unicode_escape", "backslashreplace").decode("ascii")


def one_line(text: object) -> str:
    """`text` with every character that is not printable (Python's `str.isprintable`: Unicode's
    'Other' and 'Separator' categories, space excepted) written as its escape."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else _escaped(c) for c in s)


def terminal(text: object) -> str:
    """`one_line`, keeping line breaks and tabs: text safe to print to a terminal."""
    s = str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() or c in _LAYOUT else _escaped(c) for c in s)


def check_name(
    text: object, what: str, *, argument: bool = False, error: type[ShardbudgetError] = ShardbudgetError
) -> str:
    """`text` if it may be written into a file or printed (module docstring), else a one-line `error`
    naming it. `argument`: it becomes a command-line argument, so it may not start with '-'."""
    if not isinstance(text, str):
        raise error(f"{what} must be text, not {type(text).__name__}")
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise error(f"{what} {text!r} is not valid UTF-8 (a file or folder name in another encoding): rename it")
    bad = next((c for c in text if not c.isprintable()), None)
    if bad is not None:
        raise error(f"{what} {text!r} contains the control character {bad!r}: names are printable text; rename it")
    if argument and text.startswith("-"):
        raise error(f"{what} {text!r} starts with '-': an engine would read it as an option; rename it")
    return text


def shell_quote(word: str) -> str:
    """One word for the shell: as it is where it has no special character, else single-quoted."""
    return shlex.quote(word)


_YAML_SHORT = {'"': '\\"', "\\": "\\\\", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def yaml_quote(text: str) -> str:
    """A YAML double-quoted scalar that reads back as `text` (JSON's escapes for ASCII and the Basic
    Multilingual Plane, `\\U` beyond it, where JSON would write a surrogate pair YAML reads as two)."""
    out = []
    for c in text:
        if c in _YAML_SHORT:
            out.append(_YAML_SHORT[c])
        elif " " <= c <= "~":
            out.append(c)
        elif ord(c) <= 0xFFFF:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return '"' + "".join(out) + '"'


__all__ = ["check_name", "one_line", "shell_quote", "terminal", "yaml_quote"]
