"""Issue 38, build 5: a large deployment's launch lines summarised on the terminal.

`deploy --gpus 4096` (Llama-3.1-70B, 512 x hgx-h100) printed 1,573 lines, 512 per engine; now one
line per kind of step, with how many more and on which nodes, at most 200 lines in all; `--all`
prints every line; a launch of 16 steps or fewer prints as before.
"""

from __future__ import annotations

import pytest

from shardbudget import cli
from shardbudget.decide.deploy import deploy
from shardbudget.decide.launch.layout import SUMMARY_STEPS, _ranges
from shardbudget.decide.request import request
from shardbudget.fabric.catalog import load_catalog

ARGV = ["deploy", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "4096"]


@pytest.fixture(scope="module")
def big():
    return deploy(request("llama-3.1-70b", "hgx-h100", catalog=load_catalog()), gpus=4096)


def test_4096_gpus_print_at_most_200_lines(capsys):
    """The default answer is disaggregated (2808:1288): 1,404 prefill servers, a router's list of
    them, TensorRT-LLM's YAML of 1,574 lines, its first 16 printed."""
    assert cli.main(ARGV) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 200
    assert "Layout: disaggregated 2808:1288 wins" in out
    assert "# ... and 1403 more like it on nodes 0-350: --all prints every line" in out
    assert "# trtllm-disagg.yaml: 1574 lines, the first 16 of them (--all prints the file" in out
    assert "cat > trtllm-disagg.yaml" not in out  # nothing writes part of a file


def test_4096_gpus_aggregated_print_at_most_200_lines(capsys):
    assert cli.main([*ARGV, "--disaggregate", "off"]) == 0
    out = capsys.readouterr().out
    assert len(out.splitlines()) <= 200
    assert "# ... and 510 more like it on nodes 2-511: --all prints every line" in out  # vLLM's headless ranks
    assert "NODE0_IP, NODE1_IP, ..., NODE511_IP (the nodes' addresses, 512 in all" in out  # SGLang's router


def test_all_prints_every_line(capsys, big):
    assert cli.main([*ARGV, "--disaggregate", "off", "--all"]) == 0
    out = capsys.readouterr().out
    steps = sum(len(la.steps) for la in big.launches.values())
    assert out.count("] ") >= steps and steps > 3 * 512
    assert "more like it" not in out


def test_the_summary_names_every_kind_of_step_once(big):
    for launch in big.launches.values():
        text = launch.summary()
        shown = [line for line in text.splitlines() if line.startswith("[node")]
        more = [int(line.split("and ")[1].split(" ")[0]) for line in text.splitlines() if "more like it" in line]
        assert len(shown) + sum(more) == len(launch.steps)  # every step is one shown or counted
        assert len(shown) <= 4


def test_a_small_launch_prints_as_before():
    result = deploy(request("llama-3.1-8b", "hgx-h100", catalog=load_catalog()), gpus=8)
    for launch in result.launches.values():
        assert len(launch.steps) <= SUMMARY_STEPS and launch.summary() == launch.text()


def test_node_ranges():
    assert _ranges([2, 3, 4, 7, 9, 10]) == "2-4, 7, 9-10" and _ranges([1]) == "1"
