"""Dollars and joules per token (issue 39): the catalog's prices.toml, decide.cost's arithmetic, the
overrides and their refusals."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest

from shardbudget.decide.cost import Pricing, Rates, objective_key, option_cost, rates
from shardbudget.errors import CatalogError, PlanError
from shardbudget.fabric.catalog import load_catalog


def test_every_price_and_power_names_its_source_and_date():
    c = load_catalog()
    entries = [*c.gpu_power.values(), *c.system_costs.values(), *c.nic_power.values()]
    assert len(entries) >= 15
    for e in entries:
        assert e.source.strip() and e.date.strip(), e
    assert c.gpu_power["h100-sxm"].load_watts == 700  # the datasheet's TDP
    assert c.gpu_power["l40s"].load_watts == 350
    assert c.system_costs["hgx-h100"].usd_per_gpu_hour == pytest.approx(49.24 / 8)  # CoreWeave's 8-GPU instance
    assert c.system_costs["l40s-pcie-p2p"].usd_per_gpu_hour == pytest.approx(18.00 / 8)
    assert c.system_costs["gb200-nvl72"].usd_per_gpu_hour == pytest.approx(42.00 / 4)  # a 4-GPU tray of the rack
    assert c.gpu_power["mi300x"].load_watts == 750
    assert c.nic_power["ib-ndr"].watts_per_nic == pytest.approx(9 + 17 / 2)  # NIC-side + half a twin-port cage


def _user_catalog(tmp_path, text: str) -> str:
    path = tmp_path / "mine.toml"
    path.write_text(text)
    return str(path)


def test_a_user_catalog_sets_a_built_in_systems_price(tmp_path):
    path = _user_catalog(
        tmp_path, '[system_costs.hgx-h100]\nusd_per_gpu_hour = 2.0\ndate = "2026-12"\nsource = "our contract"\n'
    )
    c = load_catalog([path])
    assert c.system_costs["hgx-h100"].usd_per_gpu_hour == 2.0
    assert c.system_costs["hgx-h100"].source == "our contract"


@pytest.mark.parametrize(
    "body, words",
    [
        ('usd_per_gpu_hour = -1.0\ndate = "x"\nsource = "s"', "-1.0 must be above 0"),
        ('usd_per_gpu_hour = nan\ndate = "x"\nsource = "s"', "must be a finite number"),
        ('usd_per_gpu_hour = 0.0\ndate = "x"\nsource = "s"', "0.0 must be above 0"),
        ('usd_per_gpu_hour = 1.0\nsource = "s"', "missing field 'date'"),
        ('usd_per_gpu_hour = 1.0\ndate = "x"\nsource = "s"\nusd_per_gpu_hr = 2', "did you mean 'usd_per_gpu_hour'"),
    ],
)
def test_a_bad_price_is_refused_in_one_line(tmp_path, body, words):
    path = _user_catalog(tmp_path, f"[system_costs.hgx-h100]\n{body}\n")
    with pytest.raises(CatalogError) as err:
        load_catalog([path])
    assert words in str(err.value) and "\n" not in str(err.value)
    assert "system_costs.hgx-h100" in str(err.value)


def test_a_price_for_a_system_the_catalog_lacks_is_refused(tmp_path):
    path = _user_catalog(tmp_path, '[system_costs.hgx-h1000]\nusd_per_gpu_hour = 1.0\ndate = "x"\nsource = "s"\n')
    with pytest.raises(Exception, match="hgx-h100"):  # the unknown name, with the closest
        load_catalog([path])


@pytest.mark.parametrize(
    "kwargs, words",
    [
        ({"gpu_hour_usd": -1.0}, "--gpu-hour-usd must be a finite number above 0, got -1.0"),
        ({"gpu_hour_usd": math.nan}, "--gpu-hour-usd must be a finite number above 0, got nan"),
        ({"gpu_hour_usd": 0.0}, "--gpu-hour-usd must be a finite number above 0"),
        ({"gpu_watts": math.inf}, "--gpu-watts must be a finite number above 0, got inf"),
        ({"gpu_watts": True}, "--gpu-watts must be a finite number above 0"),
        ({"objective": "latency"}, "--objective must be one of throughput, cost, energy"),
    ],
)
def test_bad_overrides_are_refused(kwargs, words):
    with pytest.raises(PlanError, match="^" + words.replace("(", r"\(").replace(")", r"\)")):
        Pricing(**kwargs)


def _rates(**over) -> Rates:
    base = dict(
        usd_per_gpu_hour=3.6,
        gpu_watts=700.0,
        switch_watts_per_node=0.0,
        watts_per_nic=17.5,
        gpus_per_node=8,
        nics_per_node=8,
        price_source="",
        power_source="",
        uncounted=(),
    )
    return Rates(**{**base, **over})


def test_dollars_per_million_tokens_and_tokens_per_joule_by_hand():
    c = option_cost(_rates(), tokens_per_s_per_gpu=1000.0, gpus_per_replica=8)
    assert c.usd_per_mtok == pytest.approx(1.0)  # $3.6/h = $0.001/s; 1000 tok/s -> $1e-6 per token
    assert c.tokens_per_joule == pytest.approx(1000 / 700)
    assert not c.nics_counted
    spans = option_cost(_rates(), tokens_per_s_per_gpu=1000.0, gpus_per_replica=16)  # a replica over 2 nodes
    assert spans.nics_counted and spans.watts_per_gpu == pytest.approx(700 + 8 * 17.5 / 8)
    rack = option_cost(
        _rates(gpus_per_node=72, nics_per_node=72, switch_watts_per_node=3600.0),
        tokens_per_s_per_gpu=1000.0,
        gpus_per_replica=8,
    )
    assert rack.watts_per_gpu == pytest.approx(700 + 3600 / 72)  # the switch trays, shared by the rack's GPUs
    none = option_cost(_rates(), tokens_per_s_per_gpu=0.0, gpus_per_replica=8)
    assert none.usd_per_mtok == math.inf and none.tokens_per_joule == 0


def test_a_spanning_replica_without_a_sourced_link_power_says_so():
    c = option_cost(_rates(watts_per_nic=None), tokens_per_s_per_gpu=1.0, gpus_per_replica=16)
    assert c.watts_per_gpu == 700 and "the NICs' links" in c.uncounted


def test_the_overrides_replace_the_catalogs_figures():
    cat = load_catalog()
    h100 = cat.system("hgx-h100")
    r = rates(cat, h100, Pricing(gpu_hour_usd=2.0, gpu_watts=500.0))
    assert (r.usd_per_gpu_hour, r.gpu_watts, r.price_source, r.power_source) == (
        2.0,
        500.0,
        "--gpu-hour-usd",
        "--gpu-watts",
    )
    r = rates(cat, h100, Pricing())
    assert (r.usd_per_gpu_hour, r.gpu_watts) == (pytest.approx(6.155), 700.0)
    assert rates(cat, cat.system("gb300-nvl72"), Pricing()).usd_per_gpu_hour is None  # no public price
    assert rates(cat, cat.system("gb300-nvl72"), Pricing()).switch_watts_per_node == 3600
    assert rates(cat, cat.system("gb200-nvl72"), Pricing()).switch_watts_per_node == 3600


def test_the_objective_orders_by_its_own_number():
    def opt(per_gpu, usd, tpj):
        return SimpleNamespace(
            tokens_per_s_per_gpu=per_gpu,
            replicas=1,
            gpus_per_replica=8,
            gpus_left=0,
            cost=SimpleNamespace(usd_per_mtok=usd, tokens_per_joule=tpj),
        )

    fast, cheap, frugal = opt(100, 2.0, 0.1), opt(50, 1.0, 0.2), opt(60, 1.5, 0.3)
    for objective, best in (("throughput", fast), ("cost", cheap), ("energy", frugal)):
        assert min((fast, cheap, frugal), key=lambda o: objective_key(objective, o)) is best


def test_idle_gpus_count_against_throughput_and_cost_not_energy():
    c = SimpleNamespace(usd_per_mtok=1.0, tokens_per_joule=2.0)
    half = SimpleNamespace(tokens_per_s_per_gpu=100.0, replicas=1, gpus_per_replica=4, gpus_left=4, cost=c)
    assert objective_key("throughput", half) == -50.0  # 100 tok/s on each of 4 GPUs, 8 given
    assert objective_key("cost", half) == 2.0  # the 4 idle GPUs are paid for too
    assert objective_key("energy", half) == -2.0  # an idle GPU's draw has no source: not counted
