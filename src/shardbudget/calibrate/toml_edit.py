"""Set one value of a TOML file in place: the line `key = ...` of `[table]` gets a new value, and every
other character of the file (comments, order, spacing, the comment after the value) stays as it was.

The catalog's fitted entries are one line each (a number, a string or an inline table), so this is
a line editor that knows where a value ends, not a TOML writer: a TOML writer would drop the comments
that give each number its source. A key the table does not have yet is added after the table's last
key line; a table the file does not have is added at its end.
"""

from __future__ import annotations

import re

_HEADER = re.compile(r"^\s*\[\[?([^\[\]]+)\]\]?\s*(#.*)?$")


def _header(line: str) -> str | None:
    """The dotted name of a `[table]` line (quotes and spaces around the parts removed), else None."""
    m = _HEADER.match(line)
    if m is None:
        return None
    return ".".join(part.strip().strip('"') for part in m.group(1).split("."))


def _value_end(text: str) -> int:
    """Where the value at the start of `text` ends: a `{...}` inline table (nested braces counted), a
    "..." string, or a bare number running to a space, a comma or a comment."""
    if text.startswith("{"):
        depth = 0
        for i, ch in enumerate(text):
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if depth == 0:
                return i + 1
        raise ValueError(f"unclosed inline table: {text!r}")
    if text.startswith('"'):
        end = text.index('"', 1)
        return end + 1
    m = re.match(r"[^\s#,]+", text)
    return m.end() if m else 0


def _table_span(lines: list[str], table: str) -> tuple[int, int] | None:
    """(the header's index, the index of the next header or the end) of `[table]`."""
    start = next((i for i, line in enumerate(lines) if _header(line) == table), None)
    if start is None:
        return None
    end = next((i for i in range(start + 1, len(lines)) if _header(lines[i]) is not None), len(lines))
    return start, end


def set_value(text: str, table: str, key: str, value: str) -> str:
    """`text` with `key` of `[table]` set to `value` (already TOML: a number, "string" or {inline table})."""
    lines = text.split("\n")
    span = _table_span(lines, table)
    if span is None:
        tail = "" if text.endswith("\n") else "\n"
        return f"{text}{tail}\n[{table}]\n{key} = {value}\n"
    start, end = span
    pattern = re.compile(rf"^(\s*{re.escape(key)}\s*=\s*)(.*)$")
    for i in range(start + 1, end):
        m = pattern.match(lines[i])
        if m:
            rest = m.group(2)
            lines[i] = m.group(1) + value + rest[_value_end(rest) :]
            return "\n".join(lines)
    last = max(
        (i for i in range(start, end) if lines[i].strip() and not lines[i].lstrip().startswith("#")), default=start
    )
    lines.insert(last + 1, f"{key} = {value}")
    return "\n".join(lines)
