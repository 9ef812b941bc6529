"""Every `$ shardbudget ...` example in README.md is the command's real output today.

scripts/readme.py runs each one (in a scratch folder with the raw logs of ../shared/data/raw and the
topology samples) and compares; a change to any output fails here until `python scripts/readme.py
update` rewrites the README and the diff is read."""

import subprocess
import sys
from pathlib import Path

import pytest

from shared_data import find_data_dir

ROOT = Path(__file__).resolve().parents[2]


def test_readme_examples_are_real_output():
    if not (find_data_dir() / "raw").is_dir():
        pytest.skip("../shared/data/raw not found: the README's fit and check examples read its logs")
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / "readme.py"), "check"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr


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
    skipped = ["<!-- readme: not checked -->", "```", "$ shardbudget measure", "x", "```"]
    assert readme.examples(skipped) == []


def test_the_library_example_runs():
    """The README's ```python block is executed as written, and its results are what it says."""
    text = (ROOT / "README.md").read_text()
    block = text.split("```python\n", 1)[1].split("```", 1)[0]
    scope: dict = {}
    exec(compile(block, "README.md (library example)", "exec"), scope)
    assert scope["r"].results[0].best_plan is not None
    assert scope["d"].best is not None and scope["d"].launch["vllm"].startswith("vllm serve ")
