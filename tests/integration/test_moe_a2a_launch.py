"""Issue 38, item 3 on the launch lines: the MoE all-to-all runs as it was priced.

`--moe-a2a` prices the dispatch and combine of a plan's expert layers on DeepEP's kernels (or
NCCL's all-to-all); the engines run their own default unless told. So a server whose MoE layers
dispatch by all-to-all (expert ranks beyond TP, or attention DP) carries the engine's flags for
the priced backend: vLLM 0.34.0 `--all2all-backend` (its default, allgather_reducescatter, is not
DeepEP), SGLang 0.5.23 `--moe-a2a-backend deepep --deepep-mode` (its own auto mode is `deepep`:
normal in prefill, low-latency in decode; a disaggregated side runs its phase's mode). A server
without an all-to-all, and every server under nccl, carries none. Every line still parses under
the engine's flag table; TensorRT-LLM, which has no such flag, says so.
"""

from __future__ import annotations

import dataclasses

import pytest

from shardbudget.datafile import Table
from shardbudget.decide.deploy import deploy
from shardbudget.decide.launch import build_launches, check_launch
from shardbudget.decide.request import request
from shardbudget.engines.cli_tables import read_cli
from shardbudget.errors import CatalogError, UnknownNameError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import load_model
from shardbudget.step.settings import PlanSettings


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _lines(cat, backend: str, **kw) -> dict[str, list[str]]:
    """engine -> (role words, line) of each server step, the launches checked by the flag tables."""
    settings = PlanSettings(moe_a2a=backend)
    req = request("deepseek-v3", "gb200-nvl72", budget_s=0.030, ttft_budget_s=2.0, settings=settings, catalog=cat)
    result = deploy(req, gpus=72, **kw)
    launches, _ = build_launches(result, load_model("deepseek-v3"), cat.system("gb200-nvl72"), cat)
    out = {}
    for engine, launch in launches.items():
        check_launch(launch)
        out[engine] = [(s.what, " ".join(s.argv)) for s in launch.steps if s.program == "serve"]
    return out, launches, result


@pytest.mark.parametrize(
    "backend, vllm, sglang",
    [
        ("deepep", ("deepep_high_throughput", "deepep_low_latency"), ("normal", "low_latency")),
        ("deepep-ll", ("deepep_low_latency", "deepep_low_latency"), ("low_latency", "low_latency")),
        ("deepep-normal", ("deepep_high_throughput", "deepep_high_throughput"), ("normal", "normal")),
    ],
)
def test_a_split_layouts_sides_run_the_priced_deepep_mode(cat, backend, vllm, sglang):
    lines, launches, result = _lines(cat, backend, disaggregate=(40, 32))
    assert result.prefill["ep"] == 1 and result.best.ep == 16  # the prefill side has no all-to-all here
    for engine, (flag, word), modes in (
        ("vllm", ("--all2all-backend", None), vllm),
        ("sglang", ("--deepep-mode", None), sglang),
    ):
        for what, line in lines[engine]:
            if what.startswith("prefill"):
                assert flag not in line and "deepep" not in line  # TP4 prefill: no expert parallelism
            else:
                assert f"{flag} {modes[1]}" in line, (engine, line)
                assert engine == "vllm" or "--moe-a2a-backend deepep" in line
    assert "TensorRT-LLM picks its MoE all-to-all itself" in launches["trtllm"].text()


def test_an_aggregated_server_runs_its_modes_where_the_engine_can(cat):
    """An aggregated DP-attention EP option (the best with DP attention of the rack's options):
    SGLang runs DeepEP's auto mode, which is what `deepep` priced; vLLM one mode, said in a note."""
    settings = PlanSettings(moe_a2a="deepep")
    req = request("deepseek-v3", "gb200-nvl72", budget_s=0.030, ttft_budget_s=2.0, settings=settings, catalog=cat)
    result = deploy(req, gpus=72)
    option = next(o for o in result.options if o.meets_budget and o.ep > 1 and o.dp > 1)
    result = dataclasses.replace(result, best=option)
    launches, _ = build_launches(result, load_model("deepseek-v3"), cat.system("gb200-nvl72"), cat)
    for engine, word in (
        ("sglang", "--moe-a2a-backend deepep --deepep-mode auto"),
        ("vllm", "--all2all-backend deepep_low_latency"),
    ):
        check_launch(launches[engine])
        heads = [" ".join(s.argv) for s in launches[engine].steps if s.program == "serve"]
        assert heads and all(word in line for line in heads), (engine, option.label())
    assert "vLLM runs one DeepEP mode per server" in launches["vllm"].text()


def test_nccl_adds_nothing(cat):
    lines, _, _ = _lines(cat, "nccl", disaggregate=(40, 32))
    for engine in ("vllm", "sglang"):
        assert not any("--all2all-backend" in line or "--moe-a2a-backend" in line for _, line in lines[engine])


@pytest.mark.parametrize(
    "key, error",
    [('"pplx" = "--x y"', UnknownNameError), ('"deepep@router" = "--x y"', UnknownNameError)],
)
def test_a_table_naming_an_unknown_backend_or_side_is_refused(key, error):
    from shardbudget.datafile import parse_toml

    text = f'[cli]\ntensor_parallel = "--tp"\nmax_batch = "--b"\nmax_model_len = "--l"\nmemory_fraction = "--m"\nsource = "s"\n[cli.moe_a2a]\n{key}\n'
    with pytest.raises((error, CatalogError)):
        read_cli(Table(parse_toml(text, "t.toml"), "", "t.toml").table("cli"), "t")
