"""The HTML pieces the report is made of: escaped text, tables, figures as inline SVG.

Every string that a user can influence (model name or config path, system and file names, catalog
descriptions) goes through `esc` (`html.escape`, quotes included).
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence
from typing import Any

from .output import to_svg


def esc(value: Any) -> str:
    return html.escape(str(value), quote=True)


def svg_inline(fig, alt: str, fig_id: str) -> str:
    """The figure as inline SVG: no XML prolog, no metadata (its RDF links are not resources), a
    role and an accessible name, and matplotlib's global `*{...}` style scoped to the figure.
    Its element ids are salted with `fig_id`, so that no two figures of the page share one."""
    svg = to_svg(fig, id_salt=fig_id)
    svg = re.sub(r"<metadata>.*?</metadata>\s*", "", svg, flags=re.S)
    svg = svg.replace('<style type="text/css">*{', '<style type="text/css">svg.sbfig *{', 1)
    return svg.replace("<svg ", f'<svg class="sbfig" role="img" aria-label="{esc(alt)}" ', 1)


def fig_block(fig_id: str, fig, caption: str) -> str:
    """A <figure> with the figure inline, named by its title (the finding) for screen readers."""
    title = fig._suptitle.get_text().replace("\n", " ") if getattr(fig, "_suptitle", None) else caption
    return f'<figure id="{fig_id}">{svg_inline(fig, title, fig_id)}<figcaption>{esc(caption)}</figcaption></figure>'


_NUMERIC = re.compile(r"^[-+–]?(\d|–$|none$|never$|TP\d)")


def table(
    headers: Sequence[str],
    rows: Sequence[Sequence[Any]],
    *,
    left: int = 1,
    classes: Sequence[Sequence[str]] | None = None,
) -> str:
    """A table; the first `left` columns and every column that holds words are left-aligned,
    numbers right-aligned. `classes`: an extra CSS class per cell ('ok', 'bad', 'warn' or '')."""
    ncol = len(headers)
    lefts = [i < left or not all(_NUMERIC.match(str(row[i])) for row in rows if i < len(row)) for i in range(ncol)]
    head = "".join(f'<th class="l">{esc(h)}</th>' if lefts[i] else f"<th>{esc(h)}</th>" for i, h in enumerate(headers))
    body = []
    for k, row in enumerate(rows):
        cells = []
        for i, v in enumerate(row):
            cls = ["l"] if lefts[i] else []
            if classes and classes[k][i]:
                cls.append(classes[k][i])
            attr = f' class="{" ".join(cls)}"' if cls else ""
            cells.append(f"<td{attr}>{esc(v)}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>")
    # in a box of the page's width: a table wider than a narrow window scrolls inside it, not the page
    return f'<div class="tw"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table></div>'


NOWRAP_CHARS = 48
"""A launch line's words up to this long stay on one line; a longer one (a path, say) may break anywhere."""


def launch_block(lines: Sequence[str]) -> str:
    """Command lines as a <pre class="launch">: the page wraps them at spaces only (never after a '-' inside
    an option name or a path), continued lines indented; the text, copied, is the command unchanged."""
    pieces = re.split(r"(\s+)", "\n".join(lines))
    words = "".join(
        f"<span>{esc(p)}</span>" if p and not p.isspace() and len(p) <= NOWRAP_CHARS else esc(p) for p in pieces
    )
    return f'<pre class="launch">{words}</pre>'


__all__ = ["esc", "fig_block", "launch_block", "svg_inline", "table"]
