"""The built-in data built once per content (datacache, issue 24 start-up): what a cache file gives
back is what a fresh build gives, a changed text or package builds again, and nothing is written
where Python writes no bytecode."""

from __future__ import annotations

import dataclasses
import pickle
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


def test_a_changed_package_file_is_another_key(cache_dir, monkeypatch):
    before = datacache.key("x", ["t"])
    monkeypatch.setattr(datacache, "_code_stamp", lambda: b"another package")
    assert datacache.key("x", ["t"]) != before


def test_a_damaged_file_is_built_again(cache_dir):
    datacache.cached("y", ["t"], lambda: [1, 2])
    (path,) = cache_dir.glob("data-y.*.pickle")
    path.write_bytes(b"\x80\x05half a pick")
    assert datacache.cached("y", ["t"], lambda: [3]) == [3]
    assert pickle.loads(path.read_bytes()) == [3]


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
    text = (kernels.resources.files("shardbudget") / "catalog" / "kernels.toml").read_text(encoding="utf-8")
    fresh = kernels._read_text(text)
    assert datacache.cached("kernels", [text], lambda: kernels._read_text(text)) == fresh
    assert datacache.cached("kernels", [text], lambda: pytest.fail("built again")) == fresh
    where = "engines/vllm.toml"
    text = (presets.resources.files("shardbudget.engines") / "vllm.toml").read_text(encoding="utf-8")
    fresh = presets._read_text(text, where)
    assert datacache.cached("engine-vllm", [text], lambda: presets._read_text(text, where)) == fresh
    assert datacache.cached("engine-vllm", [text], lambda: pytest.fail("built again")) == fresh


def test_a_plan_from_the_cache_prints_what_a_fresh_process_prints(tmp_path):
    """Two processes with bytecode on: the first builds and writes the cache, the second reads it;
    both print the same plan (and so does one that writes nothing)."""
    argv = [sys.executable, "-m", "shardbudget", "plan", "-m", "llama-3.1-70b", "-s", "hgx-h100", "-b", "1", "-b", "64",
            "--json"]
    env = {k: v for k, v in __import__("os").environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    outs = [subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout for _ in range(2)]
    plain = subprocess.run(argv, capture_output=True, text=True, env={**env, "PYTHONDONTWRITEBYTECODE": "1"},
                           check=True).stdout
    assert outs[0] == outs[1] == plain
    assert list(datacache.CACHE_DIR.glob("data-catalog.*.pickle"))
