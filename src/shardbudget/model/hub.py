"""Hugging Face model ids (``meta-llama/Llama-3.1-70B``): where their ``config.json`` is found.

`model.config.load_model` resolves an id in this order:

1. the local Hugging Face cache, the folder huggingface_hub itself uses (`hub_cache_dir`):
   ``$HF_HUB_CACHE``, else ``$HUGGINGFACE_HUB_CACHE`` (its older name), else ``$HF_HOME/hub``, else
   ``$XDG_CACHE_HOME/huggingface/hub``, else ``~/.cache/huggingface/hub``. A model is stored as
   ``models--ORG--NAME/snapshots/<commit>/config.json`` (huggingface_hub ``file_download.py``,
   "cache-system" in its docs); the snapshot ``refs/main`` names is read, else the newest one;
2. a folder (or file) of that name, relative to the working folder;
3. only when asked (``--download``) and huggingface_hub is installed: ``config.json`` alone,
   fetched with ``hf_hub_download(repo_id, "config.json")`` into that same cache. No weights.

Nothing here touches the network unless `download_config` is called.
"""

from __future__ import annotations

import json
import os
import re
from functools import lru_cache
from pathlib import Path

from ..datacache import PACKAGE
from ..errors import CatalogError

CONFIG_NAME = "config.json"
INSTALL_HINT = "pip install huggingface_hub (or pip install 'shardbudget[hub]')"
# huggingface_hub utils/_validators.py validate_repo_id: 'name' or 'namespace/name', 1-96 characters
# of [A-Za-z0-9_.-], neither '--' nor '..', and '-' or '.' neither first nor last.
_MAX_ID_CHARS = 96
_PART = re.compile(r"[A-Za-z0-9_.-]+")
_ILLEGAL = re.compile(r"[^A-Za-z0-9_./-]")


def hub_cache_dir() -> Path:
    """The folder huggingface_hub caches repositories in, from the environment as it reads it."""
    for var in ("HF_HUB_CACHE", "HUGGINGFACE_HUB_CACHE"):
        if os.environ.get(var):
            return Path(os.environ[var]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    xdg = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(xdg).expanduser() / "huggingface" / "hub"


def looks_like_hub_id(text: str) -> bool:
    """'ORG/NAME' as people type an id: one '/', both sides non-empty, not a path ('./x', '/x',
    '~/x', 'x.json'). Whether its characters are legal is `hub_id_problem`'s question."""
    org, slash, name = text.partition("/")
    return (
        bool(slash)
        and bool(org)
        and bool(name)
        and "/" not in name
        and "\\" not in text
        and not text.startswith((".", "~"))
        and not text.lower().endswith(".json")
    )


def hub_id_problem(repo_id: str) -> str | None:
    """Why `repo_id` is not a valid Hugging Face id, or None when it is."""
    if len(repo_id) > _MAX_ID_CHARS:
        return f"longer than {_MAX_ID_CHARS} characters"
    bad = sorted(set(_ILLEGAL.findall(repo_id)))
    if bad:
        return f"{', '.join(repr(c) for c in bad)} not allowed"
    for part in repo_id.split("/"):
        if not _PART.fullmatch(part):
            return "empty part"
        if "--" in part or ".." in part:
            return "'--' and '..' not allowed"
        if part[0] in "-." or part[-1] in "-.":
            return "a part may not start or end with '-' or '.'"
    return None


def check_hub_id(repo_id: str) -> None:
    """A CatalogError naming what is wrong with an id that is neither a valid id nor a path."""
    problem = hub_id_problem(repo_id)
    if problem is not None:
        raise CatalogError(
            f"{repo_id!r} is not a Hugging Face model id ({problem}; expected ORG/NAME of "
            f"letters, digits, '-', '_' and '.') and there is no such file or folder"
        )


def repo_folder(repo_id: str, cache: Path | None = None) -> Path:
    """``<cache>/models--ORG--NAME``: huggingface_hub's folder for a model repository."""
    return (cache or hub_cache_dir()) / ("models--" + repo_id.replace("/", "--"))


def cached_config(repo_id: str, cache: Path | None = None) -> Path | None:
    """The cached config.json of `repo_id`: the snapshot refs/main names, else the newest snapshot
    that holds one; None when the cache has none."""
    folder = repo_folder(repo_id, cache)
    snapshots = folder / "snapshots"
    try:
        main = (folder / "refs" / "main").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        main = ""
    if main and re.fullmatch(r"[0-9a-fA-F]{7,64}", main) and (snapshots / main / CONFIG_NAME).is_file():
        return snapshots / main / CONFIG_NAME
    try:
        found = [p / CONFIG_NAME for p in snapshots.iterdir() if (p / CONFIG_NAME).is_file()]
    except OSError:
        return None
    return max(found, key=lambda p: (p.stat().st_mtime, p.parent.name)) if found else None


def not_found_message(repo_id: str, shipped_hint: str = "") -> str:
    """One line: where an id was looked for, and how to get it."""
    where = repo_folder(repo_id) / "snapshots" / "*" / CONFIG_NAME
    return (
        f"model {repo_id!r} is not in the Hugging Face cache (looked for {where}) and is not a "
        f"folder; add --download to fetch its config.json (needs huggingface_hub), or give a "
        f"config.json path{shipped_hint}"
    )


@lru_cache(maxsize=1)
def _shipped_sources() -> dict[str, tuple[str, str]]:
    """Lower-cased HF id of each shipped config's `_source` -> (shipped name, the id as written)."""
    out = {}
    for p in (PACKAGE / "catalog" / "models").iterdir():
        if p.name.endswith(".json"):
            src = str(json.loads(p.read_text(encoding="utf-8")).get("_source", ""))
            m = re.match(r"https://huggingface\.co/([^/]+/[^/]+)/", src)
            if m:
                out[m.group(1).lower()] = (p.name[:-5], m.group(1))
    return out


def shipped_hint(repo_id: str, shipped: tuple[str, ...]) -> str:
    """'; or use the shipped config: --model llama-3.1-70b (from meta-llama/Llama-3.1-70B-Instruct)'
    where a shipped config is that checkpoint or has its name; '' otherwise."""
    name = repo_id.rsplit("/", 1)[-1].lower()
    sources = _shipped_sources()
    match = sources[repo_id.lower()][0] if repo_id.lower() in sources else (name if name in shipped else None)
    if match is None:
        return ""
    origin = next((orig for n, orig in sources.values() if n == match), None)
    origin_text = f" (from {origin})" if origin and origin.lower() != repo_id.lower() else ""
    return f"; or use the shipped config: --model {match}{origin_text}"


def download_config(repo_id: str) -> Path:
    """Fetch config.json alone into the Hugging Face cache and return its path.

    huggingface_hub is imported here, not at the top: it is an optional extra (`[hub]`)."""
    try:
        from huggingface_hub import hf_hub_download  # noqa: PLC0415 (optional dependency)
    except ImportError:
        raise CatalogError(f"--download needs huggingface_hub to fetch {repo_id}/config.json: {INSTALL_HINT}") from None
    try:
        return Path(hf_hub_download(repo_id, CONFIG_NAME, cache_dir=str(hub_cache_dir())))
    except Exception as exc:  # noqa: BLE001 - every failure of the hub client becomes one line
        raise CatalogError(_download_error(repo_id, exc)) from None


def _download_error(repo_id: str, exc: Exception) -> str:
    kinds = {c.__name__ for c in type(exc).__mro__}
    url = f"https://huggingface.co/{repo_id}"
    if "GatedRepoError" in kinds:
        return (
            f"{repo_id} is gated on the Hugging Face Hub: accept its licence at {url} and log in "
            f"(huggingface-cli login, or set HF_TOKEN)"
        )
    if "RepositoryNotFoundError" in kinds:
        return (
            f"no model {repo_id!r} on the Hugging Face Hub ({url}); if it is private, log in "
            f"(huggingface-cli login, or set HF_TOKEN)"
        )
    if "EntryNotFoundError" in kinds and "LocalEntryNotFoundError" not in kinds:
        return f"{repo_id} has no config.json on the Hugging Face Hub ({url})"
    offline = (
        " (HF_HUB_OFFLINE is set)" if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes", "on") else ""
    )
    if kinds & {"LocalEntryNotFoundError", "OfflineModeIsEnabled", "ConnectionError", "Timeout", "ConnectError"}:
        return (
            f"cannot reach the Hugging Face Hub to fetch {repo_id}/config.json{offline}, and it is not "
            f"in the cache {repo_folder(repo_id)}"
        )
    reason = (str(exc).strip().splitlines() or [""])[0][:200]
    return f"could not fetch {repo_id}/config.json from the Hugging Face Hub: {type(exc).__name__}: {reason}"


__all__ = [
    "cached_config",
    "check_hub_id",
    "download_config",
    "hub_cache_dir",
    "hub_id_problem",
    "looks_like_hub_id",
    "not_found_message",
    "repo_folder",
    "shipped_hint",
]
