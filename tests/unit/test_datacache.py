"""The built-in data built once per content (datacache, issue 24 start-up): what a cache file gives
back is what a fresh build gives, a changed text or package builds again, and nothing is written
where Python writes no bytecode."""

from __future__ import annotations

import dataclasses
import os
import shutil
import subprocess
import sys

import pytest

from shardbudget import datacache
from shardbudget.engines import presets
from shardbudget.fabric import catalog as catalog_mod
from shardbudget.step import kernels


@pytest.fixture
def cache_dir(tmp_path, monkeypatch):
    monkeypatch.setattr(datacache, "CACHE_DIR", tmp_path)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    return tmp_path


def _fields(obj) -> dict:
    """A catalog object as plain data (Fabric and friends compare by identity)."""
    return {f.name: repr(getattr(obj, f.name)) for f in dataclasses.fields(obj)}


def test_a_cached_catalog_is_the_built_one(cache_dir):
    builtin = catalog_mod._builtin_texts()
    texts = [t for _, t in builtin]
    fresh = catalog_mod._build(builtin, ())
    first = datacache.cached("catalog", texts, lambda: catalog_mod._build(builtin, ()))
    assert [p.name.split(".")[0] for p in cache_dir.iterdir()] == ["data-catalog"]
    again = datacache.cached("catalog", texts, lambda: pytest.fail("built again although nothing changed"))
    assert again is not first  # read back from the file
    for section in ("fabrics", "gpus", "cpus", "systems"):
        assert list(getattr(again, section)) == list(getattr(fresh, section))
        for name, entry in getattr(fresh, section).items():
            assert _fields(getattr(again, section)[name]) == _fields(entry), (section, name)
    assert again.nccl == fresh.nccl and again.engines == fresh.engines
    # shared objects stay shared: a system's GPU is the catalog's GPU of that name
    h100 = again.systems["hgx-h100"]
    assert h100.gpu is again.gpus[h100.gpu.name] and h100.intra_fabric is again.fabrics[h100.intra_fabric.name]


def test_a_changed_text_is_built_again_and_the_old_file_goes(cache_dir):
    calls = []
    assert datacache.cached("x", ["a = 1"], lambda: calls.append(1) or {"a": 1}) == {"a": 1}
    assert datacache.cached("x", ["a = 1"], lambda: calls.append(2) or {"a": 1}) == {"a": 1}
    assert datacache.cached("x", ["a = 2"], lambda: calls.append(3) or {"a": 2}) == {"a": 2}
    assert calls == [1, 3] and len(list(cache_dir.glob("data-x.*.pickle"))) == 1


@pytest.fixture
def package(tmp_path, monkeypatch):
    """A package folder of two files the stamp is taken over, in place of shardbudget's."""
    pkg = tmp_path / "pkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "mod.py").write_text("X = 1\n")
    (pkg / "sub" / "data.toml").write_text("a = 1\n")
    monkeypatch.setattr(datacache, "PACKAGE", pkg)
    datacache._code_stamp.cache_clear()
    yield pkg
    datacache._code_stamp.cache_clear()


def _cached_again(name, build):
    datacache._code_stamp.cache_clear()  # a new process: the stamp is taken again
    return datacache.cached(name, [], build)


@pytest.mark.parametrize(
    "change", ["append to a module", "same size, newer mtime", "edit a data file", "add a file", "remove a file"]
)
def test_an_edited_package_file_builds_again(cache_dir, package, change):
    assert _cached_again("x", lambda: "first") == "first"
    assert _cached_again("x", lambda: pytest.fail("built again although nothing changed")) == "first"
    mod, data = package / "mod.py", package / "sub" / "data.toml"
    if change == "append to a module":
        with open(mod, "a") as f:
            f.write("Y = 2\n")
    elif change == "same size, newer mtime":  # written in place, one second later, same length
        st = mod.stat()
        mod.write_text("X = 2\n")
        os.utime(mod, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    elif change == "edit a data file":
        data.write_text("a = 22\n")
    elif change == "add a file":
        (package / "sub" / "new.py").write_text("")
    else:
        data.unlink()
    assert _cached_again("x", lambda: "second") == "second"
    assert _cached_again("x", lambda: pytest.fail("built again although nothing changed")) == "second"
    assert len(list(cache_dir.glob("data-x.*.pickle"))) == 1


def test_an_edit_in_an_installed_copy_reaches_the_next_run(tmp_path):
    """End to end, in a copy of the package run by two fresh processes: an H100 memory bandwidth edited
    in gpus.toml in place (same length) is what the next run reads, and an edited module rebuilds
    the cached catalog too (its file is rewritten)."""
    src = tmp_path / "src"
    shutil.copytree(datacache.PACKAGE, src / "shardbudget", ignore=shutil.ignore_patterns("__pycache__"))
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(src)
    code = (
        "import shardbudget.fabric.catalog as c; from shardbudget import datacache as d; "
        "print(d.PACKAGE, c.load_catalog().gpus['h100-sxm'].mem_bytes_per_s)"
    )

    def run():
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
        return out.stdout.split()

    where, bw = run()
    assert where == str(src / "shardbudget") and float(bw) == pytest.approx(3.35e12, rel=1e-12)
    (pickled,) = (src / "shardbudget" / "__pycache__").glob("data-catalog.*.pickle")
    assert run()[1] == bw  # read back
    gpus = src / "shardbudget" / "catalog" / "gpus.toml"
    text = gpus.read_text(encoding="utf-8")
    edited = text.replace('memory_bandwidth = "3.35 TB/s"', 'memory_bandwidth = "3.36 TB/s"', 1)
    assert len(edited) == len(text) and edited != text
    gpus.write_text(edited, encoding="utf-8")
    assert float(run()[1]) == pytest.approx(3.36e12, rel=1e-12)
    before = pickled.stat().st_mtime_ns, pickled.read_bytes()
    with open(src / "shardbudget" / "fabric" / "hardware.py", "a", encoding="utf-8") as f:
        f.write("# edited\n")
    assert float(run()[1]) == pytest.approx(3.36e12, rel=1e-12)
    assert (pickled.stat().st_mtime_ns, pickled.read_bytes()) != before  # built again: its stamp differs


def test_a_damaged_file_is_built_again(cache_dir):
    datacache.cached("y", ["t"], lambda: [1, 2])
    (path,) = cache_dir.glob("data-y.*.pickle")
    path.write_bytes(b"\x80\x05half a pick")
    assert datacache.cached("y", ["t"], lambda: [3]) == [3]
    assert datacache.cached("y", ["t"], lambda: pytest.fail("built again")) == [3]


def test_nothing_is_written_without_bytecode(cache_dir, monkeypatch):
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    assert datacache.cached("z", ["t"], lambda: 1) == 1 and not list(cache_dir.iterdir())


def test_errors_are_not_kept(cache_dir):
    def bad():
        raise ValueError("bad data")

    with pytest.raises(ValueError):
        datacache.cached("w", ["t"], bad)
    assert not list(cache_dir.iterdir())


def test_kernels_and_engines_through_the_cache_equal_a_fresh_read(cache_dir):
    text = datacache.read_builtin(kernels.WHERE)
    fresh = kernels._read_text(text)
    assert datacache.cached("kernels", [text], lambda: kernels._read_text(text)) == fresh
    assert datacache.cached("kernels", [text], lambda: pytest.fail("built again")) == fresh
    where = "engines/vllm.toml"
    text = datacache.read_builtin(where)
    fresh = presets._read_text(text, where)
    assert datacache.cached("engine-vllm", [text], lambda: presets._read_text(text, where)) == fresh
    assert datacache.cached("engine-vllm", [text], lambda: pytest.fail("built again")) == fresh


def test_a_plan_from_the_cache_prints_what_a_fresh_process_prints(tmp_path):
    """Two processes with bytecode on: the first builds and writes the cache, the second reads it;
    both print the same plan (and so does one that writes nothing)."""
    argv = [
        sys.executable,
        "-m",
        "shardbudget",
        "plan",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "-b",
        "1",
        "-b",
        "64",
        "--json",
    ]
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    outs = [subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout for _ in range(2)]
    plain = subprocess.run(
        argv, capture_output=True, text=True, env={**env, "PYTHONDONTWRITEBYTECODE": "1"}, check=True
    ).stdout
    assert outs[0] == outs[1] == plain
    assert list(datacache.CACHE_DIR.glob("data-catalog.*.pickle"))
