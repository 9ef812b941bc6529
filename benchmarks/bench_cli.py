"""What the timed benchmarks start as `shardbudget`: the installed console script beside this
interpreter, else the one on PATH, else `python -m shardbudget`."""

import shutil
import sys
from pathlib import Path


def shardbudget_cli() -> list[str]:
    exe = Path(sys.executable).parent / "shardbudget"
    if exe.exists():
        return [str(exe)]
    found = shutil.which("shardbudget")
    return [found] if found else [sys.executable, "-m", "shardbudget"]
