"""The NCCL release a plan is priced at, as plan's and deploy's headers say it (decide/release_words)."""

from shardbudget.comm.versions import at_nccl
from shardbudget.decide.deploy import deploy
from shardbudget.decide.planner import plan
from shardbudget.decide.release_words import nccl_words
from shardbudget.engines.presets import load_engine
from shardbudget.fabric.catalog import load_catalog


def test_the_engine_release_and_the_flag_that_prices_it():
    catalog = load_catalog()
    assert load_engine("vllm").nccl == "2.27.5"  # torch 2.10.0's nvidia-nccl-cu12 pin
    assert nccl_words(catalog, "vllm") == "2.30 (vllm 0.19.0 ships 2.27.5: --nccl 2.27)"
    assert nccl_words(catalog, "sglang") == "2.30 (sglang 0.5.14 ships 2.28.9: --nccl 2.28)"
    assert nccl_words(catalog, "trtllm") == "2.30"  # its release's NCCL is not recorded
    assert nccl_words(at_nccl(catalog, "2.27"), "vllm") == "2.27"
    assert nccl_words(at_nccl(catalog, "2.27", symmetric=True), None) == "2.27, symmetric buffers"


def test_plan_and_deploy_say_the_same_release():
    catalog = at_nccl(load_catalog(), "2.28")
    p = plan("llama-3.1-8b", "hgx-h100", batches=[1], catalog=catalog)
    d = deploy("llama-3.1-8b", "hgx-h100", gpus=8, catalog=catalog)
    assert p.assumptions["nccl"] == d.nccl == "2.28 (vllm 0.19.0 ships 2.27.5: --nccl 2.27)"
