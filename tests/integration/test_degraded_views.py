"""No view prints a degraded profile without saying so (issue 34): the built-in one by its name and a
warning in every header, a user's node on a degraded CPU (whose name need not say it) by the warning;
the old name `l40s-pcie` still answers, with one note line."""

import json

import pytest

from shardbudget.report.demo import SYSTEMS as DEMO_SYSTEMS

USER = """[systems.my-box]
gpu = "l40s"
gpus_per_node = 8
topology = "pcie"
intra_fabric = "pcie4"
cpu = "epyc-nps1-degraded"
nic_fabric = "roce-200"
nics_per_node = 4
rail_optimized = false
source = "a test box"
[systems.my-box.pcie]
sockets = 2
gpus_per_switch = 1
host_bridge = "pcie4-hostbridge"
shm = "pcie4-shm"
source = "each GPU on its own root port"
"""

VIEWS = [
    ["allreduce", "--gpus", "8", "--size", "1MiB"],
    ["plan", "-m", "llama-3.1-8b", "-b", "1"],
    ["deploy", "-m", "llama-3.1-8b", "--gpus", "8", "--budget", "50ms"],
    ["explain", "-m", "llama-3.1-8b"],
    ["compare", "-s", "hgx-h100"],
]


@pytest.fixture(scope="module")
def user_catalog(tmp_path_factory):
    path = tmp_path_factory.mktemp("cat") / "my-box.toml"
    path.write_text(USER)
    return str(path)


@pytest.mark.parametrize("argv", VIEWS, ids=lambda a: a[0])
@pytest.mark.parametrize("system", ["l40s-pcie-nps1-degraded", "my-box"])
def test_every_view_says_degraded(cli, user_catalog, argv, system):
    r = cli(*argv, "-s" if "-s" not in argv else "--system", system, "--catalog", user_catalog)
    assert r.returncode in (0, 1), r.stderr
    assert "degraded" in r.stdout, r.stdout[:400]
    if argv[0] != "compare":  # in the header, before any answer: "# warning: <name> is a degraded profile"
        head = r.stdout.split("\n## ")[0].split("┏")[0]
        assert f"# warning: {system} is a degraded profile, not a reference: " in head, head


def test_fabrics_systems_says_degraded_and_why(cli, user_catalog):
    r = cli("fabrics", "--systems", "--catalog", user_catalog, "--json")
    assert r.returncode == 0, r.stderr
    systems = {s["name"]: s for s in json.loads(r.stdout)["systems"]}
    for name, s in systems.items():
        assert bool(s["degraded"]) == (name in ("l40s-pcie-nps1-degraded", "my-box")), name
    rows = {r["name"]: r for r in json.loads(r.stdout)["host_staged"]}
    assert {n for n, r in rows.items() if r["degraded"]} == {
        "gen4-epyc-nps1-1s-degraded",
        "gen4-epyc-nps1-2s-degraded",
        "gen4-epyc-rome-nps1-1s-degraded",
    }
    text = cli("fabrics", "--systems", "--catalog", user_catalog).stdout
    assert "Host-staged paths" in text
    assert text.count("DEGRADED, not a reference:") == 2 + 3  # the two systems, the three host-staged rows


def test_the_old_name_answers_with_one_note(cli):
    r = cli("allreduce", "-s", "l40s-pcie", "--gpus", "8", "--size", "1MiB", "--json")
    assert r.returncode == 0
    notes = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(notes) == 1 and notes[0].startswith(
        "note: system 'l40s-pcie' is now 'l40s-pcie-nps1-degraded', a degraded profile: EPYC in NPS1"
    ), notes
    assert "l40s-pcie-switch is the healthy reference" in notes[0]
    d = json.loads(r.stdout)
    assert d["system"] == "l40s-pcie-nps1-degraded"


def test_the_demo_and_its_report_use_no_degraded_box():
    from shardbudget.fabric.catalog import load_catalog

    cat = load_catalog()
    for spec in DEMO_SYSTEMS:
        s = cat.system(spec.split(":")[0])
        assert not s.degraded and (s.cpu is None or not s.cpu.degraded), spec
