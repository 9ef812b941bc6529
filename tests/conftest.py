import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from shared_data import find_data_dir

ROOT = Path(__file__).resolve().parents[1]
HOOKS = ROOT / "tests" / "hooks"
# Arms the test hooks (SHARDBUDGET_FAULT) here and in every process the tests start: the console
# script and the measurement ranks inherit PYTHONPATH. An installed build has no tests/hooks folder,
# so the hooks are inert there (tests/hooks/shardbudget_test_hooks.py, measure/harness/protocol.armed_faults).
sys.path.insert(0, str(HOOKS))
os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(HOOKS), os.environ.get("PYTHONPATH")]))


@pytest.fixture(scope="session")
def data_dir() -> Path:
    d = find_data_dir()
    if not (d / "nccl_tests.csv").exists():
        pytest.skip(f"shared data not found at {d}")
    return d


def run_cli(*args: str, input: str | None = None, timeout: float = 120) -> subprocess.CompletedProcess:
    """Run the real console script, as a user would."""
    exe = shutil.which("shardbudget", path=str(Path(sys.executable).parent)) or "shardbudget"
    # GNU readline (imported under pytest) exports COLUMNS=80 into the process environment, which
    # the tables honour (tests/integration/test_terminal_width.py): a piped user run has none
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return subprocess.run([exe, *args], capture_output=True, text=True, input=input, timeout=timeout, env=env)


@pytest.fixture
def cli():
    return run_cli
