"""README examples are real output: run every `$ shardbudget ...` line of README.md and compare.

    python scripts/readme.py check      # exit 1, naming each command whose output differs
    python scripts/readme.py update     # rewrite the outputs in README.md from fresh runs

A command is a line `$ shardbudget ...` inside a ``` fence; its output is every line after it up to
the next `$ ` line or the fence's end. A line `...` in the README stands for lines left out: the
lines before it are the output's first lines, the lines after it are found in the output by their
first two words (a size, a row's name) and shown from there; a trailing `...` drops the rest.
Commands run one after another in one scratch folder holding the raw logs of ../shared/data/raw and
the topology samples of tests/fixtures/topo, so a later command can read a profile an earlier one
wrote. Output is stdout and stderr together, unbuffered, at a terminal width of `COLUMNS`.
A fence right after the line `<!-- readme: not checked -->` is left alone (timings of this machine).
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
COLUMNS = "160"
SKIP_MARK = "<!-- readme: not checked -->"
ELISION = "..."
PROMPT = "$ shardbudget "


@dataclass
class Example:
    command_line: int      # index of the `$ shardbudget` line
    output: slice          # the README lines that are its output

    def argv(self, lines: list[str]) -> list[str]:
        return shlex.split(lines[self.command_line][2:], comments=True)


def examples(lines: list[str]) -> list[Example]:
    found: list[Example] = []
    in_fence, skip, command = False, False, None   # command: the open example's `$` line
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
    """The README's view of `actual`: its head and its keyed segments, with the elisions kept."""
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
    out, at = list(actual[:len(segments[0])]), len(segments[0])
    for segment in segments[1:]:
        out.append(ELISION)
        if not segment:
            continue
        start = next((j for j in range(at, len(actual)) if _key(actual[j]) == _key(segment[0])), None)
        if start is None:
            raise SystemExit(f"readme: the output no longer has a line starting {' '.join(_key(segment[0]))!r}:"
                             " edit that example by hand")
        out += actual[start:start + len(segment)]
        at = start + len(segment)
    return out


def run(argv: list[str], workdir: Path) -> list[str]:
    env = dict(os.environ, COLUMNS=COLUMNS, PYTHONUNBUFFERED="1", NO_COLOR="1", TERM="dumb",
               PYTHONPATH=str(ROOT / "src"))
    done = subprocess.run([sys.executable, "-m", "shardbudget", *argv[1:]], cwd=workdir, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=300)
    return [line.rstrip() for line in done.stdout.rstrip("\n").split("\n")]


def scratch_folder(into: Path) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from shared_data import find_data_dir
    for folder in (find_data_dir() / "raw", ROOT / "tests" / "fixtures" / "topo"):
        for path in sorted(folder.glob("*")):
            (into / path.name).symlink_to(path)


def refreshed(lines: list[str]) -> tuple[list[str], list[str]]:
    """README lines with every example's output re-run, and the commands whose output changed."""
    new, changed, offset = list(lines), [], 0
    with tempfile.TemporaryDirectory(prefix="sb-readme-") as tmp:
        scratch_folder(Path(tmp))
        for ex in examples(lines):
            shown = lines[ex.output]
            fresh = render(shown, run(ex.argv(lines), Path(tmp)))
            if fresh != shown:
                changed.append(lines[ex.command_line])
            start, stop = ex.output.start + offset, ex.output.stop + offset
            new[start:stop] = fresh
            offset += len(fresh) - len(shown)
    return new, changed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("action", choices=("check", "update"))
    args = parser.parse_args()
    lines = README.read_text().split("\n")
    new, changed = refreshed(lines)
    if args.action == "update":
        README.write_text("\n".join(new))
        print(f"readme: {len(changed)} example(s) rewritten")
        return 0
    for command in changed:
        print(f"readme: output differs: {command}")
    if changed:
        print("readme: run `python scripts/readme.py update` and read the diff")
    return 1 if changed else 0


if __name__ == "__main__":
    sys.exit(main())
