"""Every `$ shardbudget ...` example in README.md and docs/*.md is the command's real output today.

scripts/readme.py runs each one at 100 columns (README.md's in an empty folder, a docs page's in a
folder with the raw logs of data/raw and the topology samples) and compares; a change to any
output fails here until `python scripts/readme.py update` rewrites the pages and the diff is read."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def _check(*pages: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "readme.py"), "check", *map(str, pages)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_readme_examples_are_real_output_from_the_clone():
    """README.md's examples need nothing but the clone: they run in an empty folder."""
    _check(README)


def test_docs_examples_are_real_output():
    """The docs' fit and check examples read the logs of the repository's data/raw."""
    _check(*sorted((ROOT / "docs").glob("*.md")))


def test_the_readme_is_short_and_its_examples_fit_100_columns():
    """Issue 35: a README a newcomer reads in five minutes; its fenced lines (commands and output)
    no wider than the 100 columns they are rendered at."""
    lines = README.read_text(encoding="utf-8").split("\n")
    assert len(lines) <= 300, len(lines)
    fenced, wide = False, []
    for number, line in enumerate(lines, 1):
        if line.startswith("```"):
            fenced = not fenced
        elif fenced and len(line) > 100:
            wide.append((number, len(line)))
    assert not wide, wide
    sys.path.insert(0, str(ROOT / "scripts"))
    import readme

    assert readme.COLUMNS == "100" and "100 columns" in README.read_text(encoding="utf-8")
    assert len(readme.examples(lines)) == 3


def test_the_checker_sees_a_changed_output(tmp_path):
    """The comparison is not vacuous: a README line that the command no longer prints is caught,
    and elided lines (`...`) are matched by their first words."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import readme

    lines = ["```", "$ shardbudget models", "a 1", "...", "c 3", "d 4", "```"]
    (ex,) = readme.examples(lines)
    assert lines[ex.command_line] == "$ shardbudget models" and ex.output == slice(2, 6)
    actual = ["a 1", "b 2", "c 3", "d 4", "e 5"]
    assert readme.render(lines[ex.output], actual) == lines[ex.output]
    assert readme.render(lines[ex.output], ["a 9", "b 2", "c 3", "d 4"]) != lines[ex.output]
    assert readme.render(["a 1", "..."], actual) == ["a 1", "..."]
    assert readme.render(["...", "c 3", "..."], actual) == ["...", "c 3", "..."]
    skipped = ["<!-- readme: not checked -->", "```", "$ shardbudget measure", "x", "```"]
    assert readme.examples(skipped) == []
    assert readme.pages()[0] == README and all(p.parent.name == "docs" for p in readme.pages()[1:])


def test_the_library_example_runs():
    """docs/library.md's ```python block is executed as written, and its results are what it says."""
    text = (ROOT / "docs" / "library.md").read_text(encoding="utf-8")
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(block, "docs/library.md (library example)", "exec"), scope)
    assert scope["r"].results[0].best_plan is not None
    assert scope["d"].best is not None and scope["d"].launch["vllm"].startswith("vllm serve ")
