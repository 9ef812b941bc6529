"""The GPU check script runs end to end (tiny shapes on the CPU); on a GPU it is run by hand."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")
ROOT = Path(__file__).resolve().parents[2]


def test_gpu_check_smoke(tmp_path):
    out = tmp_path / "gpu.json"
    r = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "gpu_check.py"), "--smoke", "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(out.read_text())
    assert d["hbm"]["measured_bytes_per_s"] > 0 and d["gemms"] and d["layers"]
    assert all(row["predicted_s"] > 0 and row["time_s"] > 0 for row in d["gemms"] + d["layers"])
