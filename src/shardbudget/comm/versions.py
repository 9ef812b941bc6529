"""NCCL releases where what this model prices changed, and a catalog priced at one of them.

`--nccl VERSION` (allreduce, plan, deploy) prices the rules of that release, from 2.18 (OLDEST) to the
catalog's own (a later one is refused, naming it); the built-in catalog's tables are master after
v2.30.7 (`catalog/nccl.toml` [nccl] version). What changes by release, each
read from the tagged source (data/nccl_constants.md quotes the tables):

* symmetric-memory kernels exist from 2.27 (src/device/symmetric at v2.27.3; comm/nccl_symmetric.py);
* GPUDirect RDMA through a Grace CPU's C2C link is on by default from 2.27 (paths.cc NET_GDR_C2C
  0 at v2.26.2, 1 at v2.27.3; comm/net_path.py);
* tuning.cc's network latency of an NVLSTree step is 14 us up to 2.28 and 20.9 us from v2.29.2;
* tuning.cc perChMaxRingLL128Bws for Blackwell is 2 x 36.7 GB/s up to 2.28, 34.5 in 2.29 (v2.29.2,
  v2.29.3; v2.29.7 has 40.0, the catalog's) and 40.0 after; search.cc's sm100 speed array gained
  45.0 GB/s at v2.29.2;
* NCCL's estimate of an NVLS all-gather / reduce-scatter takes nvlsEfficiency[arch] x (nCh-1)/nCh
  from 2.28.3 (NVIDIA/nccl f1308997); v2.27.3 takes min(bwIntra x (ppn-1)/ppn, bwInter x 0.9)
  (comm/nvls_gather.py).

An engine's pinned release installs its own NCCL (engines/*.toml [engine] nccl: vLLM 0.19.0 ships
2.27.5); its collectives are priced at that release unless `--nccl` names another (`at_shipped`).

`--nccl-symmetric` says the caller registers its buffers as symmetric windows, so NCCL runs its
symmetric kernels where they exist (vLLM VLLM_USE_NCCL_SYMM_MEM=1, SGLang --enable-symm-mem).
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType

from ..errors import CatalogError
from ..fabric.hardware import Catalog
from ..fabric.nccl_constants import parse_version

NVLS_TREE_NET_US = ((2, 29), 20.9, 14.0)
"""(first release, from then, before): tuning.cc hwLat[NET][NVLS_TREE][Simple] in us."""
NVLS_GATHER_EFFICIENCY_FROM = (2, 28)
"""First release whose NVLS all-gather / reduce-scatter estimate carries nvlsEfficiency (tuning.cc)."""
BLACKWELL_RING_LL128_GBPS = (((2, 28), 73.4), ((2, 29), 34.5), ((99, 0), 40.0))
"""(last release, GB/s per channel): tuning.cc perChMaxRingLL128Bws Blackwell N1 up to that release
(the last, 40.0, is the catalog's: v2.29.7 and master at 5067397c)."""
SM100_SPEED_ADDED = ((2, 29), 45.0)
"""(first release, GB/s): the speed search.cc's sm100SpeedArrayIntra gained."""
OLDEST = (2, 18)
"""The oldest release whose tables data/nccl_constants.md quotes."""


def at_nccl(
    catalog: Catalog, version: str | None = None, *, symmetric: bool = False, stated: bool | None = None
) -> Catalog:
    """`catalog` priced as NCCL `version` (None: the catalog's own), with or without registered
    symmetric buffers. A named version is `stated` (an engine's shipped one does not replace it)
    unless told otherwise. The same catalog object back when nothing changes (caches stay warm)."""
    nccl = catalog.nccl
    newest, oldest = "{}.{}".format(*nccl.tables_version), "{}.{}".format(*OLDEST)
    known = f"give a release from {oldest} to {newest}, the newest the catalog knows"  # every refusal names it
    try:
        ver = parse_version(version) if version else nccl.version
    except CatalogError as err:
        raise CatalogError(f"{err}; {known}") from None
    if version and ver < OLDEST:
        raise CatalogError(f"--nccl: {version!r} is older than {oldest}, the oldest release modelled; {known}")
    if version and ver > nccl.tables_version:  # a release past the tables: its rules are not read (issue 34)
        raise CatalogError(
            f"--nccl: {version!r} is newer than {newest}, the newest release the catalog knows "
            f"(its tables are NCCL {newest}'s); give {newest} or an older release"
        )
    stated = (nccl.stated or version is not None) if stated is None else stated
    if ver == nccl.version and symmetric == nccl.symmetric and stated == nccl.stated:
        return catalog
    first, new, old = NVLS_TREE_NET_US
    hw = {link: dict(rows) for link, rows in nccl.hw_latency_s.items()}
    net = dict(hw["net"])
    net["nvls_tree"] = MappingProxyType({**net["nvls_tree"], "simple": (new if ver >= first else old) * 1e-6})
    hw["net"] = MappingProxyType(net)
    nccl = replace(
        nccl,
        version=ver,
        symmetric=symmetric,
        stated=stated,
        hw_latency_s=MappingProxyType({k: MappingProxyType(v) for k, v in hw.items()}),
        ring_ll128_per_channel_bytes_per_s=_ll128_per_channel(nccl.ring_ll128_per_channel_bytes_per_s, ver),
        search_speeds_bytes_per_s=_search_speeds(nccl.search_speeds_bytes_per_s, ver),
    )
    return replace(catalog, nccl=nccl)


_PRICED: dict[tuple[int, str, bool], tuple[Catalog, Catalog]] = {}


def _priced(catalog: Catalog, version: str, stated: bool) -> Catalog:
    """at_nccl(catalog, version), keeping the catalog's symmetric buffers; the same object back for
    the same catalog and release while that catalog lives, so that what is priced at one release
    shares its lines (a fit asks once per row; compile_step once per plan)."""
    key = (id(catalog), version, stated)
    hit = _PRICED.get(key)
    if hit is None or hit[0] is not catalog:
        if len(_PRICED) > 512:  # a fit's catalogs of earlier rounds and folds are not asked again
            _PRICED.clear()
        hit = _PRICED[key] = (catalog, at_nccl(catalog, version, symmetric=catalog.nccl.symmetric, stated=stated))
    return hit[1]


def at_stated(catalog: Catalog, version: str | None) -> Catalog:
    """`catalog` priced as the NCCL release a measurement states (None: the catalog's own); a release
    older than the oldest modelled takes that one's rules (no rule modelled here changed before it)."""
    if version is None:
        return catalog
    return _priced(catalog, _known(catalog, version), True)


def at_shipped(catalog: Catalog, release: str | None) -> Catalog:
    """`catalog` priced as the NCCL release an engine installs (engines/*.toml nccl; None: the one its
    tables were read at), unless a release was stated (--nccl, a measurement's): the one named wins.
    What comes back depends on the engine alone, not on an engine the catalog was priced for before."""
    nccl = catalog.nccl
    if nccl.stated:
        return catalog
    if not release:  # a preset's nccl = "" names none
        if nccl.version == nccl.tables_version:
            return catalog
        release = "{}.{}".format(*nccl.tables_version)
    return _priced(catalog, _known(catalog, release), False)


def _known(catalog: Catalog, version: str) -> str:
    """`version`, or the nearest release the catalog models (OLDEST, its tables' own): a measurement's
    or an engine's release outside that range takes the rules of its end (--nccl is refused there)."""
    ver, newest = parse_version(version), catalog.nccl.tables_version
    if ver < OLDEST:
        return "{}.{}".format(*OLDEST)
    return "{}.{}".format(*newest) if ver > newest else version


def stated_release(catalog: Catalog, version: str | None) -> tuple[str, str | None]:
    """The NCCL release a measurement states, in words, and why the catalog has no rules of its own
    for it (None where it has): one older than OLDEST takes OLDEST's rules, one newer than the
    catalog's tables takes theirs, and a row stating none is priced at the catalog's own."""
    newest = "{}.{}".format(*catalog.nccl.tables_version)
    if not version:
        return "NCCL (not stated)", f"no release stated: priced at the catalog's {newest}"
    ver = parse_version(version, where="a measured row")
    if ver < OLDEST:
        return f"NCCL {version}", "older than {}.{}, the oldest modelled: priced at its rules".format(*OLDEST)
    if ver > catalog.nccl.tables_version:
        return f"NCCL {version}", f"newer than {newest}, the catalog's tables: priced at them"
    return f"NCCL {version}", None


def _ll128_per_channel(table, ver: tuple[int, int]):
    for last, gbps in BLACKWELL_RING_LL128_GBPS:
        if ver <= last:
            return MappingProxyType({**table, "blackwell": gbps * 1e9})
    return table


def _search_speeds(table, ver: tuple[int, int]):
    first, gbps = SM100_SPEED_ADDED
    if "blackwell" not in table:
        return table
    speeds = {v for v in table["blackwell"] if v != gbps * 1e9} | ({gbps * 1e9} if ver >= first else set())
    return MappingProxyType({**table, "blackwell": tuple(sorted(speeds, reverse=True))})


__all__ = ["at_nccl", "at_shipped", "at_stated", "stated_release"]
