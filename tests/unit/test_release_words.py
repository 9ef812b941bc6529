"""The NCCL release an engine's collectives are priced at (engines/release.py: the one its pinned
release installs, unless --nccl names another), and the header words that say it (decide/release_words)."""

import json

from shardbudget import cli
from shardbudget.comm.collectives import sweep
from shardbudget.comm.versions import at_nccl
from shardbudget.decide.deploy import deploy
from shardbudget.decide.planner import plan
from shardbudget.decide.release_words import nccl_words
from shardbudget.engines.presets import load_engine
from shardbudget.engines.release import engine_catalog
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import Plan, load_model
from shardbudget.step.compose import compile_step
from shardbudget.decide.request import request


def test_the_words_say_the_release_that_prices_and_why():
    catalog = load_catalog()
    assert load_engine("vllm-0.19").nccl == "2.27.5"  # torch 2.10.0's nvidia-nccl-cu12 pin
    assert nccl_words(catalog, "vllm-0.19") == "2.27 (vllm-0.19 0.19.0 ships 2.27.5)"
    assert nccl_words(catalog, "sglang-0.5.14") == "2.28 (sglang-0.5.14 0.5.14 ships 2.28.9)"
    assert nccl_words(catalog, "sglang") == "2.30 (sglang 0.5.23 ships 2.30.7)"  # torch 2.14.1
    assert nccl_words(catalog, "trtllm") == "2.30"  # its release's NCCL is not recorded: the catalog's
    # the older releases' torch pins: 2.5.1 -> 2.21.5, 2.7.1 -> 2.26.2, 2.8.0 -> 2.27.3
    assert nccl_words(catalog, "vllm-v0") == "2.21 (vllm-v0 0.7.2 ships 2.21.5)"
    assert nccl_words(catalog, "sglang-0.4") == "2.26 (sglang-0.4 0.4.9 ships 2.26.2)"
    assert nccl_words(catalog, "eager") == "2.27 (eager 0.11.0 ships 2.27.3)"
    assert nccl_words(catalog, None) == "2.30"
    assert nccl_words(at_nccl(catalog, "2.30"), "vllm-0.19") == "2.30 (--nccl; vllm-0.19 0.19.0 ships 2.27.5)"
    assert nccl_words(at_nccl(catalog, "2.27", symmetric=True), None) == "2.27, symmetric buffers (--nccl)"
    # --nccl-symmetric alone names no release: the engine's stands, with the buffers
    assert (
        nccl_words(at_nccl(catalog, None, symmetric=True), "vllm-0.19")
        == "2.27, symmetric buffers (vllm-0.19 0.19.0 ships 2.27.5)"
    )


def test_a_stated_release_wins_and_the_shipped_one_is_one_object():
    catalog = load_catalog()
    shipped = engine_catalog(catalog, "vllm-0.19")
    assert shipped.nccl.version == (2, 27) and not shipped.nccl.stated
    assert engine_catalog(catalog, "vllm-0.19") is shipped  # priced lines are shared (caches stay warm)
    assert engine_catalog(shipped, "sglang-0.5.14").nccl.version == (2, 28)  # not stated: each engine its own
    stated = at_nccl(catalog, "2.29")
    assert engine_catalog(stated, "vllm-0.19") is stated and engine_catalog(stated, "sglang") is stated


def test_the_release_moves_the_price_where_its_rules_changed():
    # B200, 4 GPUs, 16 MiB: NCCL up to 2.28 caps a Blackwell LL128 ring channel at 2 x 36.7 GB/s
    # (tuning.cc perChMaxRingLL128Bws), 2.29 and later at 34.5 / 40: LL128 wins under vLLM's 2.27
    # and loses to Simple under the catalog's 2.30 (the NCCL 2.27.5 / 2.29.2 B200 rows of
    # test_nccl_graph.py measure both)
    catalog = load_catalog()
    shipped, newest = engine_catalog(catalog, "vllm-0.19"), at_nccl(catalog, "2.30")
    old, new = (sweep("all-reduce", [16 * 2**20], "hgx-b200", gpus=4, catalog=c)[0] for c in (shipped, newest))
    assert (old.protocol, new.protocol) == ("ll128", "simple") and old.time_s < 0.75 * new.time_s
    step = compile_step(
        load_model("llama-3.1-70b"), catalog.system("hgx-b200"), Plan(4), catalog, engine="sglang-0.5.14"
    )
    assert step.catalog.nccl.version == (2, 28)


def test_plan_deploy_and_allreduce_say_the_same_release(capsys):
    catalog = at_nccl(load_catalog(), "2.28")
    p = plan(request("llama-3.1-8b", "hgx-h100", batches=[1], catalog=catalog, engine="vllm-0.19"))
    d = deploy(request("llama-3.1-8b", "hgx-h100", catalog=catalog, engine="vllm-0.19"), gpus=8)
    assert p.assumptions.nccl == d.nccl == "2.28 (--nccl; vllm-0.19 0.19.0 ships 2.27.5)"
    p = plan(request("llama-3.1-8b", "hgx-h100", batches=[1], engine="vllm-0.19"))
    d = deploy(request("llama-3.1-8b", "hgx-h100", engine="vllm-0.19"), gpus=8)
    assert p.assumptions.nccl == d.nccl == "2.27 (vllm-0.19 0.19.0 ships 2.27.5)"
    assert cli.main(["allreduce", "--system", "hgx-h100", "--gpus", "8", "--impl", "vllm-0.19", "--size", "1MiB"]) in (
        0,
        None,
    )
    assert "NCCL 2.27 (vllm-0.19 0.19.0 ships 2.27.5)" in capsys.readouterr().out.splitlines()[0]


def test_allreduce_under_an_engine_prices_its_nccl_rows_at_the_engine_release(capsys):
    # sglang-0.5.14's rule sends 17 MiB on 4 B200s to NCCL; the rows are NCCL 2.28's (LL128), as plan prices
    # them, not the catalog's 2.30 (Simple)
    def rows(*extra):
        cli.main(["allreduce", "--system", "hgx-b200", "--gpus", "4", "--size", "17MiB", "--json", *extra])
        return json.loads(capsys.readouterr().out)["rows"]

    engine, stated = rows("--impl", "sglang-0.5.14"), rows("--impl", "sglang-0.5.14", "--nccl", "2.28")
    newest = rows("--impl", "sglang-0.5.14", "--nccl", "2.30")
    assert [r["time_s"] for r in engine] == [r["time_s"] for r in stated]
    assert (engine[0]["impl"], engine[0]["protocol"], newest[0]["protocol"]) == ("nccl", "ll128", "simple")


def test_an_engine_that_names_no_release_is_priced_at_the_catalogs_own():
    # the report prices every engine from one catalog: trtllm after vllm is the catalog's 2.30 again
    base = load_catalog()
    vllm = engine_catalog(base, "vllm-0.19")
    assert load_engine("trtllm").nccl == ""
    assert engine_catalog(vllm, "trtllm").nccl == engine_catalog(base, "trtllm").nccl == base.nccl
    assert engine_catalog(engine_catalog(vllm, "trtllm"), "vllm-0.19").nccl == vllm.nccl


def test_a_measured_rows_nccl_release_says_when_the_catalog_lacks_its_rules():
    """The validation scripts (benchmarks/accuracy.py, loso.py) report per release which rows the
    catalog has no rules of their own for: older than 2.18, newer than its tables (2.30), or none stated."""
    from shardbudget.comm.versions import stated_release

    catalog = load_catalog()
    assert stated_release(catalog, "2.29.2") == ("NCCL 2.29.2", None)
    assert stated_release(catalog, "2.30.7") == ("NCCL 2.30.7", None)
    assert stated_release(catalog, "2.12.12")[1] == "older than 2.18, the oldest modelled: priced at its rules"
    assert stated_release(catalog, "2.32.3")[1] == "newer than 2.30, the catalog's tables: priced at them"
    assert stated_release(catalog, None) == ("NCCL (not stated)", "no release stated: priced at the catalog's 2.30")


def test_explain_names_the_release_it_prices():
    """explain's record and header carry the engine release and the NCCL it prices (issue 37)."""
    from shardbudget.decide.questions import explain

    e = explain(request("llama-3.1-70b", "hgx-h100", engine="vllm-0.19"))
    assert (e.engine, e.release, e.nccl) == ("vllm-0.19", "0.19.0", "2.27 (vllm-0.19 0.19.0 ships 2.27.5)")
    assert e.to_dict()["release"] == "0.19.0"
    assert explain(request("llama-3.1-70b", "hgx-h100")).release == load_engine("vllm").version == "0.34.0"
