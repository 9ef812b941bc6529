"""Degraded profiles and host-staged paths (issue 34).

A degraded node profile (the EPYC-in-NPS1 L40S box, measured at 1.45 GB/s per host-staged stream
across its sockets) says so in its name, so that every view printing the name prints the word; its
old name is still taken for one release, with a note. The host-staged (SHM, no-P2P) rows of
catalog/host_staged.toml are keyed by platform, and the PCIe fabrics' no-P2P figures are the healthy
one-socket rows, so that the generations compare on one platform.
"""

import warnings

import pytest

from shardbudget.errors import CatalogError, RenamedName
from shardbudget.fabric.catalog import load_catalog
from shardbudget.step.scenario import degraded_note


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _user(tmp_path, text, name="user.toml"):
    p = tmp_path / name
    p.write_text(text)
    return str(p)


def test_every_degraded_entry_says_so_in_its_name(cat):
    entries = [*cat.systems.values(), *cat.cpus.values(), *cat.host_staged.values()]
    degraded = [e for e in entries if e.degraded]
    assert {e.name for e in degraded} >= {"l40s-pcie-nps1-degraded", "epyc-nps1-degraded", "gen4-epyc-nps1-2s-degraded"}
    for e in degraded:
        assert "degraded" in e.name, e.name
    for e in entries:
        if "degraded" in e.name:
            assert e.degraded.strip(), f"{e.name}: named degraded, says not why"
    for s in cat.systems.values():  # a built-in node on a degraded host is degraded, and named so
        if s.cpu is not None and s.cpu.degraded:
            assert s.degraded and "degraded" in s.name, s.name


@pytest.mark.parametrize(
    "old, new, kind", [("l40s-pcie", "l40s-pcie-nps1-degraded", "system"), ("epyc-nps1", "epyc-nps1-degraded", "cpu")]
)
def test_an_old_name_is_taken_with_a_note_that_says_degraded(cat, old, new, kind):
    look = cat.system if kind == "system" else cat.cpu
    with pytest.warns(RenamedName, match=rf"'{old}' is now '{new}', a degraded profile: EPYC in NPS1"):
        entry = look(old.upper())  # names compare ignoring case, old ones too
    assert entry.name == new
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert look(new).name == new  # the new name: no note


def test_the_old_name_note_points_at_the_healthy_reference(cat):
    with pytest.warns(RenamedName, match="l40s-pcie-switch is the healthy reference"):
        cat.system("l40s-pcie")
    assert not cat.systems["l40s-pcie-switch"].degraded and not cat.systems["l40s-pcie-switch"].cpu.degraded


def test_degraded_note_is_said_for_degraded_systems_only(cat):
    (note,) = degraded_note(cat.systems["l40s-pcie-nps1-degraded"])
    assert note.startswith("warning: l40s-pcie-nps1-degraded is a degraded profile, not a reference: EPYC in NPS1")
    assert degraded_note(cat.systems["l40s-pcie-switch"]) == ()


SYSTEM = (
    "[systems.{name}]\ngpu='l40s'\ngpus_per_node=8\ntopology='pcie'\nintra_fabric='pcie4'\n"
    "cpu='{cpu}'\nsource='a'\n{extra}"
)


@pytest.mark.parametrize(
    "text, message",
    [
        (
            SYSTEM.format(name="slow-box", cpu="xeon-spr", extra="degraded='BIOS in NPS1'\n"),
            "a degraded profile's name says so: rename 'slow-box'",
        ),
        (SYSTEM.format(name="slow-box-degraded", cpu="xeon-spr", extra="degraded=' '\n"), "must say why"),
        ("[renamed.systems]\n'my-old' = 'no-such-box'\n", "renamed to 'no-such-box', which is no entry"),
        ("[renamed.systems]\n'hgx-h100' = 'hgx-h200'\n", "'hgx-h100' is still the name of an entry"),
        ("[renamed.fabrics]\n'a' = 'pcie4'\n", "names of \\[fabrics\\] cannot be renamed"),
        (
            "[fabrics.x-shm]\nkind='pcie'\nnccl_link='pci'\nbandwidth='31.5 GB/s'\nhost_staged='gen5-xeon-spr-2s'\n"
            "p2p=false\nsource='a'\n",
            "is a ring across sockets",
        ),
        (
            "[fabrics.x-shm]\nkind='pcie'\nnccl_link='pci'\nbandwidth='31.5 GB/s'\nhost_staged='gen4-epyc-nps1-1s-degraded'\n"
            "p2p=false\nsource='a'\n",
            "is degraded",
        ),
        (
            "[fabrics.x-shm]\nkind='pcie'\nnccl_link='pci'\nbandwidth='31.5 GB/s'\nhost_staged='gen4-1s-root-ports'\n"
            "achievable_bandwidth='9 GB/s'\np2p=false\nsource='a'\n",
            "names a host_staged row",
        ),
        (
            "[host_staged.slow-pod]\npcie_gen=4\nsockets=1\nnuma='not-stated'\nattach='not-stated'\ncpu='x'\ngpus=2\n"
            "environment='container'\nbusbw='1 GB/s'\nmeasured=true\ndegraded='a pod'\nsource='a'\n",
            "a degraded platform's name says so",
        ),
    ],
)
def test_the_loader_holds_the_rules(tmp_path, text, message):
    with pytest.raises(CatalogError, match=message):
        load_catalog([_user(tmp_path, text)])


def test_a_user_node_on_a_degraded_cpu_is_degraded(tmp_path):
    with pytest.warns(RenamedName, match="CPU 'epyc-nps1' is now 'epyc-nps1-degraded'"):
        cat = load_catalog([_user(tmp_path, SYSTEM.format(name="my-box", cpu="epyc-nps1", extra=""))])
    s = cat.system("my-box")
    assert s.cpu.name == "epyc-nps1-degraded"  # the old CPU name, read as the new one
    assert s.degraded.startswith("on CPU epyc-nps1-degraded: EPYC in NPS1")
    assert degraded_note(s)[0].startswith(
        "warning: my-box is a degraded profile"
    )  # its name lacks the word: the note says it


# --- host-staged paths -----------------------------------------------------------------------


def test_the_no_p2p_fabrics_rise_with_the_generation_on_one_platform(cat):
    """The issue's complaint: Gen3 4, Gen4 3.74, Gen5 35, Gen6 24 GB/s mixed a cross-socket pod, a
    one-socket Xeon and two guesses. Each generation's no-P2P fabric is now one SHM hop inside one
    socket of a healthy host (a host_staged row of its own generation), so they rise: 9, 18, 35, 67."""
    rates = []
    for gen in (3, 4, 5, 6):
        f = cat.fabrics[f"pcie{gen}-no-p2p"]
        row = cat.host_staged[f.host_staged]
        assert (row.pcie_gen, row.sockets, row.degraded) == (gen, 1, "")
        assert f.achievable_bytes_per_s == row.busbw_bytes_per_s
        assert f.achievable_source.startswith(f"host_staged.{row.name}: ")
        rates.append(f.achievable_bytes_per_s)
    assert rates == sorted(rates) and len(set(rates)) == 4
    assert [r / 1e9 for r in rates] == pytest.approx([9, 18, 35, 67])


def test_host_staged_rows_are_monotone_or_explained_per_platform(cat):
    """Within one platform (sockets spanned, environment), a healthy row of a later PCIe generation
    never carries less than one of an earlier generation; a row that does is marked degraded (and
    says why), or it is not the same platform."""
    healthy = [r for r in cat.host_staged.values() if not r.degraded]
    for a in healthy:
        for b in healthy:
            if (a.sockets, a.environment) == (b.sockets, b.environment) and a.pcie_gen < b.pcie_gen:
                assert a.busbw_bytes_per_s <= b.busbw_bytes_per_s, (a.name, b.name)
    for r in cat.host_staged.values():
        assert r.source.strip(), r.name
        if r.degraded:  # below the healthy rows of its generation and socket count
            peers = [h.busbw_bytes_per_s for h in healthy if h.sockets == r.sockets and h.pcie_gen >= r.pcie_gen]
            assert peers and r.busbw_bytes_per_s < min(peers), r.name


def test_estimated_rows_scale_a_measured_row_by_the_link(cat):
    est = {r.name: r for r in cat.host_staged.values() if not r.measured}
    assert set(est) == {"gen3-1s-estimate", "gen6-1s-estimate"}
    rows = cat.host_staged
    # an SHM hop crosses each GPU's link twice, so it scales with the link: x 15.75/31.5 and x 121/63
    assert est["gen3-1s-estimate"].busbw_bytes_per_s == pytest.approx(
        rows["gen4-1s-root-ports"].busbw_bytes_per_s * 15.75 / 31.5, rel=0.01
    )
    assert est["gen6-1s-estimate"].busbw_bytes_per_s == pytest.approx(
        rows["gen5-xeon-spr-1s"].busbw_bytes_per_s * 121 / 63, rel=0.01
    )


def test_the_cpu_entries_quote_their_host_staged_rows(cat):
    rows = cat.host_staged
    assert (
        cat.cpus["epyc-nps1-degraded"].socket_stream_bytes_per_s == rows["gen4-epyc-nps1-2s-degraded"].busbw_bytes_per_s
    )
    assert cat.cpus["epyc-turin"].socket_stream_bytes_per_s == pytest.approx(  # 21.1 of 21.12
        rows["gen5-epyc-turin-2s"].busbw_bytes_per_s, rel=0.005
    )
    assert cat.cpus["xeon-spr"].socket_link_bytes_per_s == rows["gen5-xeon-spr-2s"].busbw_bytes_per_s
    # 8 hops of one socket's 5.16 GB/s SHM ring: the host path the degraded box's four GPUs share
    assert cat.cpus["epyc-nps1-degraded"].host_bytes_per_s == pytest.approx(
        8 * rows["gen4-epyc-nps1-1s-degraded"].busbw_bytes_per_s, rel=0.01
    )
