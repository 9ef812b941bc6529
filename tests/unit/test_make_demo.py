"""`make demo` writes where it cannot destroy a user's file (issue 35, item 7): into build/, make's own
folder, which git ignores and `make clean` removes; never a report.html beside the user's files."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _recipe(target: str) -> list[str]:
    lines = (ROOT / "Makefile").read_text(encoding="utf-8").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{target}:"))
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("\t"):
            break
        out.append(line.strip())
    return out


def test_make_demo_writes_into_its_build_folder():
    demo = [line for line in _recipe("demo") if " demo " in f"{line} "]
    assert len(demo) == 1 and "--out build/report.html" in demo[0], demo
    assert any(line.startswith("@echo") and "build/report.html" in line for line in _recipe("demo"))
    assert "build/" in (ROOT / ".gitignore").read_text(encoding="utf-8").split()
    assert any("rm -rf" in line and " build" in line for line in _recipe("clean"))
