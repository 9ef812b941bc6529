"""The calibration as part of the package (issue 35): the measurements it reads are in the repository,
the catalog holds a fresh fit of them (`python -m shardbudget.calibrate --check`), the check names
what differs, and the line editor that writes the fit keeps every comment of the catalog.
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from shardbudget.calibrate import paths
from shardbudget.calibrate.check import CATALOG, differences, render, rewritten
from shardbudget.calibrate.fit import fit_all
from shardbudget.calibrate.tables import NUMBER, RATE, TABLE, Field, fitted_values
from shardbudget.calibrate.toml_edit import set_value

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def values():
    return fitted_values(fit_all())


def test_the_data_is_in_the_repository():
    """data/ beside src/ holds every file its README lists, and the README names every file it holds."""
    assert paths.DATA == ROOT / "data"
    readme = (paths.DATA / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| `([\w./*-]+)` \|", readme, flags=re.M))
    held = {p.name for p in paths.DATA.iterdir() if p.is_file() and p.name != "README.md"} | {"raw/*.txt"}
    assert listed == held, listed ^ held
    assert len(list(paths.RAW.glob("*.txt"))) == 18


def test_every_row_names_its_source():
    """Issue 35: the rows moved into data/ keep their provenance: every row of every table has a
    non-empty `source` (a URL, a repository file at a commit, an issue comment), and data/README.md
    states the licence each source's text is under."""
    for path in sorted(paths.DATA.glob("*.csv")):
        with path.open(encoding="utf-8", newline="") as fh:
            rows = list(csv.DictReader(fh))
        assert rows and "source" in rows[0], path.name
        unnamed = [i for i, r in enumerate(rows, 2) if not (r["source"] or "").strip()]
        assert not unnamed, (path.name, unnamed[:5])
    assert "**Licence.**" in (paths.DATA / "README.md").read_text(encoding="utf-8")


def test_nothing_reads_beside_the_checkout():
    """No code, test, benchmark, script or Makefile names a folder outside the repository (issue 35)."""
    banned = ["shared" + "/data", "SHARDBUDGET" + "_DATA", "../" + "shared", "/work/" + "shared"]
    files = [
        ROOT / "Makefile",
        *ROOT.glob("scripts/*"),
        *ROOT.glob("benchmarks/*.py"),
        *ROOT.glob("tests/**/*.py"),
        *(ROOT / "src").rglob("*.py"),
        *(ROOT / "src").rglob("*.toml"),
    ]
    found = [
        f"{p.relative_to(ROOT)}: {b}"
        for p in files
        if p.is_file()
        for b in banned
        if b in p.read_text(encoding="utf-8", errors="replace")
    ]
    assert not found, found


def test_tests_and_benchmarks_do_not_import_each_other():
    """Both import the package (shardbudget.calibrate holds what they share), never each other."""
    glue = re.compile(r"sys\.path.*(benchmarks|validation|\"tests\")")
    found = [
        f"{p.relative_to(ROOT)}:{i}"
        for p in [*ROOT.glob("tests/**/*.py"), *ROOT.glob("benchmarks/*.py")]
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
        if glue.search(line)
    ]
    assert not found, found


def _calibrate(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "shardbudget.calibrate", *argv], capture_output=True, text=True, timeout=300, cwd=ROOT
    )


def test_the_catalog_holds_a_fresh_fit():
    """`python -m shardbudget.calibrate --check` (a whole fit, about 3 s; so `make test` runs it): every
    fitted entry of the committed catalog is within one unit of its last written digit of a fresh fit."""
    done = _calibrate("--check")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "the catalog holds a fresh fit" in done.stdout


def test_the_check_fails_on_a_catalog_that_drifted(tmp_path):
    """A catalog whose fitted entry was edited by hand (SGLang's Hopper launch 2.43 -> 2.50 us) fails the
    check, which names the entry and both values."""
    shutil.copytree(CATALOG, tmp_path, dirs_exist_ok=True)
    path = tmp_path / "custom_allreduce.toml"
    text = path.read_text(encoding="utf-8")
    launch = tomllib.loads(text)["engines"]["sglang"]["launch_us"]
    path.write_text(
        set_value(
            text,
            "engines.sglang",
            "launch_us",
            render(
                Field("custom_allreduce.toml", "engines.sglang", "launch_us", TABLE, 2),
                {**launch, "hopper": launch["hopper"] + 0.07},
                launch,
            ),
        ),
        encoding="utf-8",
    )
    done = _calibrate("--check", "--catalog-dir", str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"[engines.sglang] launch_us.hopper = {launch['hopper'] + 0.07:.2f} in the catalog" in done.stdout


def test_the_fit_covers_every_fitted_table(values):
    """The entries the calibration writes: NCCL's floors per generation, NVLS, the rings, every engine's
    kernels, the PCIe fabrics and the NPS1 host (the tables once copied by hand)."""
    where = {(f.file, f.table) for f in values}
    assert {("nccl.toml", f"nccl.calibrated.arch.{a}") for a in ("ampere", "hopper", "blackwell", "ada")} <= where
    assert {("custom_allreduce.toml", f"engines.{e}") for e in ("vllm", "sglang", "trtllm")} <= where
    assert {
        ("fabrics.toml", "fabrics.pcie4-hostbridge"),
        ("fabrics.toml", "fabrics.pcie4-no-p2p-pod"),
        ("cpus.toml", "cpus.epyc-nps1-degraded"),
    } <= where
    assert len(values) >= 40


def test_the_check_names_a_value_that_differs(values, tmp_path):
    """A catalog whose Hopper NVLS small-message cost is 0.05 us off fails, naming it; one unit of the
    last written digit (0.01 us) is within the tolerance."""
    shutil.copytree(CATALOG, tmp_path, dirs_exist_ok=True)
    (field,) = [f for f in values if f.table == "nccl.calibrated.arch.hopper" and f.key == "nvls_small_latency_us"]
    nccl = tmp_path / "nccl.toml"
    base = nccl.read_text(encoding="utf-8")
    for shift, fails in ((0.05, True), (0.009, False), (-0.009, False), (-0.03, True)):
        nccl.write_text(set_value(base, field.table, field.key, f"{values[field] + shift:.4f}"), encoding="utf-8")
        named = [d for d in differences({field: values[field]}, tmp_path) if "nvls_small_latency_us" in d]
        assert bool(named) == fails, (shift, named)


def test_a_written_catalog_agrees_with_its_fit(values, tmp_path):
    """What `python -m shardbudget.calibrate` writes (values rounded to their digits) passes the check,
    and writing it again changes nothing."""
    shutil.copytree(CATALOG, tmp_path, dirs_exist_ok=True)
    for name, text in rewritten(values, tmp_path).items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    assert differences(values, tmp_path) == []
    assert rewritten(values, tmp_path) == {}


def test_a_rerun_rewrites_only_values_beyond_the_tolerance(values, tmp_path):
    """`settled`: a committed value within one unit of its last written digit of the fit (another
    machine's fit may round the other way at a boundary) is kept, so a rerun writes nothing; one
    further off is rewritten to the fit."""
    shutil.copytree(CATALOG, tmp_path, dirs_exist_ok=True)
    (field,) = [f for f in values if f.table == "nccl.calibrated.arch.hopper" and f.key == "nvls_small_latency_us"]
    nccl = tmp_path / "nccl.toml"
    base = nccl.read_text(encoding="utf-8")
    nccl.write_text(set_value(base, field.table, field.key, f"{values[field] + 0.009:.2f}"), encoding="utf-8")
    assert rewritten({field: values[field]}, tmp_path) == {}
    nccl.write_text(set_value(base, field.table, field.key, f"{values[field] + 0.03:.2f}"), encoding="utf-8")
    (text,) = rewritten({field: values[field]}, tmp_path).values()
    assert tomllib.loads(text)["nccl"]["calibrated"]["arch"]["hopper"]["nvls_small_latency_us"] == float(
        f"{values[field]:.2f}"
    )


def test_the_line_editor_keeps_comments_and_order():
    text = '# head\n[a]\nx = 1.0   # why x\ny = { p = 1.0, q = 2.0 }  # why y\n\n[a.b]\nz = "3 GB/s"\n[c]\nw = 5\n'
    out = set_value(text, "a", "x", "1.5")
    assert out == text.replace("x = 1.0   # why x", "x = 1.5   # why x")
    out = set_value(out, "a", "y", "{ p = 1.1, q = 2.2 }")
    assert "y = { p = 1.1, q = 2.2 }  # why y" in out and out.startswith("# head\n[a]\n")
    out = set_value(out, "a.b", "z", '"4.5 GB/s"')
    out = set_value(out, "a", "v", "7.0")  # a new key: after the table's last key line
    out = set_value(out, "d", "u", "8.0")  # a new table: at the end
    doc = tomllib.loads(out)
    assert doc == {
        "a": {"x": 1.5, "y": {"p": 1.1, "q": 2.2}, "v": 7.0, "b": {"z": "4.5 GB/s"}},
        "c": {"w": 5},
        "d": {"u": 8.0},
    }


def test_values_are_written_in_their_digits():
    f = Field("x.toml", "t", "k", NUMBER, 2)
    assert (f.render_number(4.9), f.render_number(-1.666), f.render_number(1.0004)) == ("4.90", "-1.67", "1.0")
    assert Field("x.toml", "t", "k", NUMBER, 3, significant=True).render_number(0.0006873) == "0.000687"
    assert Field("x.toml", "t", "k", RATE, 3).render_number(20.093) == '"20.1 GB/s"'
    assert Field("x.toml", "t", "k", RATE, 3).unit(3.74) == pytest.approx(0.01)
    table = Field("x.toml", "t", "k", TABLE, 3)
    # the committed key order is kept; a key the fit adds comes after, default first
    assert (
        render(table, {"8": 0.5, "2": 0.25, "default": 0.4}, {"2": 0.2, "8": 0.4})
        == '{ "2" = 0.250, "8" = 0.500, default = 0.400 }'
    )


def test_the_command_reports_known_defects():
    done = _calibrate("--report")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("known defects: ") and len(lines) > 2
    assert any("hgx-h800" in line and "vllm" in line and "256 KiB" in line for line in lines)
