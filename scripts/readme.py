"""The examples in README.md and docs/*.md are real output: run every `$ shardbudget ...` line and compare.

    python scripts/readme.py check [FILE ...]    # exit 1, naming each command whose output differs
    python scripts/readme.py update [FILE ...]   # rewrite the outputs from fresh runs

Without FILE: README.md and every page of docs/. A command is a line `$ shardbudget ...` inside a
``` fence; its output is every line after it up to the next `$ ` line or the fence's end. A line
`...` stands for lines left out: the lines before it are the output's first lines, the lines after
it are found in the output by their first two words (a size, a row's name) and shown from there; a
trailing `...` drops the rest. A fence right after the line `<!-- readme: not checked -->` is left
alone (timings of this machine).

Each file's commands run one after another in a scratch folder of its own, so a later command can
read a profile an earlier one wrote. README.md's folder is empty: its examples need nothing but the
clone. A docs page's folder holds the raw nccl-tests logs of data/raw, the topology samples of
tests/fixtures/topo and the serving results of tests/fixtures/serving, all in the repository. Output
is stdout and stderr together, unbuffered, at a terminal width of COLUMNS (100) columns, as the pages
say above their examples.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
COLUMNS = "100"
SKIP_MARK = "<!-- readme: not checked -->"
ELISION = "..."
PROMPT = "$ shardbudget "


@dataclass
class Example:
    command_line: int  # index of the `$ shardbudget` line
    output: slice  # the page's lines that are its output

    def argv(self, lines: list[str]) -> list[str]:
        return shlex.split(lines[self.command_line][2:], comments=True)


def pages() -> list[Path]:
    """README.md and the docs pages, in that order."""
    return [README, *sorted(DOCS.glob("*.md"))]


def examples(lines: list[str]) -> list[Example]:
    found: list[Example] = []
    in_fence, skip, command = False, False, None  # command: the open example's `$` line
    for i, line in enumerate(lines + ["```"]):
        ends_output = in_fence and line.startswith(("```", "$ "))
        if command is not None and ends_output:
            found.append(Example(command, slice(command + 1, i)))
            command = None
        if line.startswith("```"):
            in_fence = not in_fence
            skip = in_fence and i > 0 and lines[i - 1].strip() == SKIP_MARK
        elif in_fence and not skip and line.startswith(PROMPT):
            command = i
    return found


def _key(line: str) -> list[str]:
    return line.split()[:2]


def render(shown: list[str], actual: list[str]) -> list[str]:
    """The page's view of `actual`: its head and its keyed segments, with the elisions kept."""
    segments, current = [], []
    for line in shown:
        if line.strip() == ELISION:
            segments.append(current)
            current = []
        else:
            current.append(line)
    segments.append(current)
    if len(segments) == 1:
        return actual
    out, at = list(actual[: len(segments[0])]), len(segments[0])
    for segment in segments[1:]:
        out.append(ELISION)
        if not segment:
            continue
        start = next((j for j in range(at, len(actual)) if _key(actual[j]) == _key(segment[0])), None)
        if start is None:
            raise SystemExit(
                f"readme: the output no longer has a line starting {' '.join(_key(segment[0]))!r}:"
                " edit that example by hand"
            )
        out += actual[start : start + len(segment)]
        at = start + len(segment)
    return out


def run(argv: list[str], workdir: Path) -> list[str]:
    env = dict(
        os.environ, COLUMNS=COLUMNS, PYTHONUNBUFFERED="1", NO_COLOR="1", TERM="dumb", PYTHONPATH=str(ROOT / "src")
    )
    env.pop("LINES", None)
    done = subprocess.run(
        [sys.executable, "-m", "shardbudget", *argv[1:]],
        cwd=workdir,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        timeout=300,
    )
    return [line.rstrip() for line in done.stdout.rstrip("\n").split("\n")]


def scratch_folder(page: Path, into: Path) -> None:
    """What the page's commands may read: nothing for README.md, the raw logs, topology samples and
    serving benchmark results for a docs page."""
    if page == README:
        return
    for folder in (
        ROOT / "data" / "raw",
        ROOT / "tests" / "fixtures" / "topo",
        ROOT / "tests" / "fixtures" / "serving",
    ):
        for path in sorted(folder.glob("*")):
            (into / path.name).symlink_to(path)


def refreshed(page: Path, lines: list[str]) -> tuple[list[str], list[str]]:
    """The page's lines with every example's output re-run, and the commands whose output changed."""
    new, changed, offset = list(lines), [], 0
    with tempfile.TemporaryDirectory(prefix="sb-readme-") as tmp:
        scratch_folder(page, Path(tmp))
        for ex in examples(lines):
            shown = lines[ex.output]
            fresh = render(shown, run(ex.argv(lines), Path(tmp)))
            if fresh != shown:
                changed.append(lines[ex.command_line])
            start, stop = ex.output.start + offset, ex.output.stop + offset
            new[start:stop] = fresh
            offset += len(fresh) - len(shown)
    return new, changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("check", "update"))
    parser.add_argument("files", nargs="*", type=Path, help="pages to run (default: README.md and docs/*.md)")
    args = parser.parse_args(argv)
    files = [f.resolve() for f in args.files] or pages()
    failed = 0
    for page in files:
        lines = page.read_text(encoding="utf-8").split("\n")
        new, changed = refreshed(page, lines)
        name = page.relative_to(ROOT)
        if args.action == "update":
            if changed:
                page.write_text("\n".join(new), encoding="utf-8")
            print(f"readme: {name}: {len(changed)} example(s) rewritten")
            continue
        for command in changed:
            print(f"readme: {name}: output differs: {command}")
        failed += len(changed)
    if failed:
        print("readme: run `python scripts/readme.py update` and read the diff")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
