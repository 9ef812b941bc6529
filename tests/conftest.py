import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"


def _find_data() -> Path:
    for cand in (DATA, Path(os.environ.get("SHARDBUDGET_DATA", "/nonexistent")), Path("/work/shared/data")):
        if (cand / "nccl_tests.csv").exists():
            return cand
    return DATA


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = _find_data()
    if not (d / "nccl_tests.csv").exists():
        pytest.skip(f"shared data not found at {d}")
    return d


def run_cli(*args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the real console script, as a user would."""
    exe = shutil.which("shardbudget", path=str(Path(sys.executable).parent)) or "shardbudget"
    return subprocess.run([exe, *args], capture_output=True, text=True, input=input, timeout=timeout)


@pytest.fixture
def cli():
    return run_cli
