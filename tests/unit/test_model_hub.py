"""Hugging Face ids: the local cache (a fake one in tmp_path, HF_HUB_CACHE set), a folder, --download
through a stand-in huggingface_hub module, and the one-line errors. No test touches the network."""

from __future__ import annotations

import json
import os
import sys
import types
from pathlib import Path

import pytest

from shardbudget import cli
from shardbudget.errors import CatalogError, UnknownNameError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import load_model
from shardbudget.model import hub

CATALOG = Path(cli.__file__).parents[1] / "catalog" / "models"
LLAMA_70B = json.loads((CATALOG / "llama-3.1-70b.json").read_text())
LLAMA_8B = json.loads((CATALOG / "llama-3.1-8b.json").read_text())
REPO = "meta-llama/Llama-3.1-70B"


def _snapshot(cache: Path, repo_id: str, commit: str, config: dict, *, mtime: float | None = None) -> Path:
    """One snapshot as huggingface_hub lays it out: the file in blobs/, a symlink in snapshots/<commit>/."""
    folder = cache / ("models--" + repo_id.replace("/", "--"))
    blob = folder / "blobs" / f"blob-{commit}"
    blob.parent.mkdir(parents=True, exist_ok=True)
    blob.write_text(json.dumps(config))
    snap = folder / "snapshots" / commit
    snap.mkdir(parents=True)
    (snap / "config.json").symlink_to(os.path.relpath(blob, snap))
    if mtime is not None:
        os.utime(snap / "config.json", (mtime, mtime), follow_symlinks=True)
    return snap / "config.json"


@pytest.fixture
def cache(tmp_path, monkeypatch) -> Path:
    d = tmp_path / "hub"
    d.mkdir()
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME", "HF_HUB_OFFLINE"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HUB_CACHE", str(d))
    monkeypatch.chdir(tmp_path)
    return d


def test_an_id_is_read_from_the_cache_under_its_own_name(cache):
    _snapshot(cache, REPO, "a" * 40, LLAMA_70B)
    cfg = load_model(REPO)
    assert cfg.name == REPO
    assert (cfg.num_layers, cfg.hidden_size, cfg.num_kv_heads) == (80, 8192, 8)  # Llama-3.1-70B's published shape


def test_refs_main_names_the_snapshot_else_the_newest_is_read(cache):
    old = _snapshot(cache, REPO, "1" * 40, LLAMA_70B, mtime=1_000_000)
    new = _snapshot(cache, REPO, "2" * 40, LLAMA_8B, mtime=2_000_000)
    assert hub.cached_config(REPO) == new  # no refs/main: the newest snapshot
    assert load_model(REPO).num_layers == 32
    refs = cache / "models--meta-llama--Llama-3.1-70B" / "refs"
    refs.mkdir()
    (refs / "main").write_text("1" * 40)
    assert hub.cached_config(REPO) == old  # refs/main wins over the newer snapshot
    assert load_model(REPO).num_layers == 80


def test_a_snapshot_without_config_json_is_passed_over(cache):
    _snapshot(cache, REPO, "1" * 40, LLAMA_8B, mtime=1_000_000)
    (cache / "models--meta-llama--Llama-3.1-70B" / "snapshots" / ("2" * 40)).mkdir()  # newer, weights only
    assert load_model(REPO).num_layers == 32


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"HF_HUB_CACHE": "{t}/a"}, "{t}/a"),
        ({"HUGGINGFACE_HUB_CACHE": "{t}/b"}, "{t}/b"),
        ({"HF_HUB_CACHE": "{t}/a", "HF_HOME": "{t}/h"}, "{t}/a"),
        ({"HF_HOME": "{t}/h"}, "{t}/h/hub"),
        ({"XDG_CACHE_HOME": "{t}/x"}, "{t}/x/huggingface/hub"),
        ({"HOME": "{t}/home"}, "{t}/home/.cache/huggingface/hub"),
    ],
)
def test_the_cache_folder_follows_huggingface_hubs_environment(env, expected, tmp_path, monkeypatch):
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "HF_HOME", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    for var, value in env.items():
        monkeypatch.setenv(var, value.format(t=tmp_path))
    assert hub.hub_cache_dir() == Path(expected.format(t=tmp_path))


def test_hf_home_hub_is_searched(tmp_path, monkeypatch):
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE", "XDG_CACHE_HOME"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf"))
    _snapshot(tmp_path / "hf" / "hub", REPO, "c" * 40, LLAMA_70B)
    assert load_model(REPO).name == REPO


def test_a_folder_of_that_name_comes_after_the_cache(cache, tmp_path):
    folder = tmp_path / "meta-llama" / "Llama-3.1-70B"
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps(LLAMA_8B))
    assert load_model(REPO).num_layers == 32  # not cached: the folder
    _snapshot(cache, REPO, "d" * 40, LLAMA_70B)
    assert load_model(REPO).num_layers == 80  # cached: the cache first


def test_not_cached_and_offline_says_where_it_looked(cache):
    with pytest.raises(CatalogError) as err:
        load_model("acme/Tiny-Model")
    msg = str(err.value)
    assert "\n" not in msg
    assert f"{cache}/models--acme--Tiny-Model/snapshots/*/config.json" in msg
    assert "--download" in msg and "not a folder" in msg


def test_a_shipped_twin_is_suggested(cache):
    with pytest.raises(CatalogError, match=r"--model llama-3.1-70b \(from meta-llama/Llama-3.1-70B-Instruct\)"):
        load_model(REPO)
    with pytest.raises(CatalogError, match=r"--model qwq-32b$"):
        load_model("Qwen/QwQ-32B")


@pytest.mark.parametrize(
    ("repo_id", "why"),
    [
        ("meta-llama/Llama 3.1", "' ' not allowed"),
        ("meta-llama/Llama@3.1#x", "'#', '@' not allowed"),
        ("org/na--me", "'--' and '..' not allowed"),
        ("org/name..x", "'--' and '..' not allowed"),
        ("org/-name", "a part may not start or end"),
        ("org/" + "x" * 100, "longer than 96"),
    ],
)
def test_an_illegal_id_is_one_clear_line(repo_id, why, cache):
    with pytest.raises(CatalogError) as err:
        load_model(repo_id)
    msg = str(err.value)
    assert msg.startswith(f"{repo_id!r} is not a Hugging Face model id ({why}") and "\n" not in msg
    assert "no such file or folder" in msg


def test_valid_ids_pass_the_check():
    for repo_id in (
        "meta-llama/Llama-3.1-70B",
        "Qwen/Qwen3-235B-A22B",
        "deepseek-ai/DeepSeek-V3",
        "gpt2",
        "mistralai/Mixtral-8x7B-v0.1",
        "a_b/c.d",
    ):
        assert hub.hub_id_problem(repo_id) is None


def test_shipped_names_match_without_case():
    assert load_model("Llama-3.1-70B") is load_model("llama-3.1-70b")
    assert load_model("QWQ-32B").name == "qwq-32b"
    with pytest.raises(UnknownNameError, match="did you mean 'llama-3.1-70b'"):
        load_model("Llama-3.1-7B")


def test_system_names_match_without_case():
    cat = load_catalog()
    assert cat.system("HGX-H100") is cat.system("hgx-h100")
    with pytest.raises(UnknownNameError, match="did you mean 'hgx-h100'"):
        cat.system("HGX-H10")


# --- --download ----------------------------------------------------------------------------------


def _fake_hub(monkeypatch, cache: Path, *, raises: Exception | None = None) -> list:
    """A stand-in huggingface_hub whose hf_hub_download writes config.json as the real one would."""
    calls = []

    def hf_hub_download(repo_id, filename, *, cache_dir=None):
        calls.append((repo_id, filename, cache_dir))
        if raises is not None:
            raise raises
        return str(_snapshot(Path(cache_dir), repo_id, "e" * 40, LLAMA_8B))

    monkeypatch.setitem(sys.modules, "huggingface_hub", types.SimpleNamespace(hf_hub_download=hf_hub_download))
    return calls


def test_download_fetches_config_json_alone_into_the_cache(cache, monkeypatch):
    calls = _fake_hub(monkeypatch, cache)
    with pytest.raises(CatalogError, match="not in the Hugging Face cache"):
        load_model("acme/Tiny-Model")  # without download: no call
    assert calls == []
    cfg = load_model("acme/Tiny-Model", download=True)
    assert cfg.name == "acme/Tiny-Model" and cfg.num_layers == 32
    assert calls == [("acme/Tiny-Model", "config.json", str(cache))]
    assert load_model("acme/Tiny-Model").num_layers == 32  # now cached: no download needed
    load_model("acme/Tiny-Model", download=True)
    assert len(calls) == 1  # cached ids are not fetched again


def test_download_without_huggingface_hub_says_how_to_install(cache, monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)  # import raises ImportError
    with pytest.raises(CatalogError, match=r"--download needs huggingface_hub .*pip install huggingface_hub"):
        load_model("acme/Tiny-Model", download=True)


def _error(name: str, *bases: type) -> Exception:
    return type(name, bases or (Exception,), {})("HTTP 401 ...\nmore lines")


@pytest.mark.parametrize(
    ("exc", "expected"),
    [
        (_error("GatedRepoError", type("RepositoryNotFoundError", (Exception,), {})), "is gated"),
        (_error("RepositoryNotFoundError"), "no model 'acme/Tiny-Model' on the Hugging Face Hub"),
        (_error("EntryNotFoundError"), "has no config.json"),
        (_error("LocalEntryNotFoundError"), "cannot reach the Hugging Face Hub"),
        (
            _error("ValueError", ValueError),
            "could not fetch acme/Tiny-Model/config.json from the Hugging Face Hub: ValueError: HTTP 401 ...",
        ),
    ],
)
def test_download_failures_are_one_line(exc, expected, cache, monkeypatch):
    _fake_hub(monkeypatch, cache, raises=exc)
    with pytest.raises(CatalogError) as err:
        load_model("acme/Tiny-Model", download=True)
    assert expected in str(err.value) and "\n" not in str(err.value)


def test_cli_plan_reads_a_cached_id_and_download_is_an_option(cache, monkeypatch, capsys):
    _snapshot(cache, REPO, "f" * 40, LLAMA_70B)
    assert cli.main(["plan", "--model", REPO, "--system", "HGX-H100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == REPO and out["system"] == "hgx-h100"
    calls = _fake_hub(monkeypatch, cache)
    assert cli.main(["explain", "--model", "acme/Tiny-Model", "--download", "--json"]) == 0
    assert calls and calls[0][:2] == ("acme/Tiny-Model", "config.json")
    capsys.readouterr()
    assert cli.main(["compare", "-s", "hgx-h100", "--model", "acme/Other", "--json"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: model 'acme/Other' is not in the Hugging Face cache") and err.count("\n") == 1
