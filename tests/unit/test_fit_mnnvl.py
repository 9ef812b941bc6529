"""The multi-node NVLink kernels' rates (calibrate/fit_engines._fit_mnnvl, issue 36): a share of the
ring busbw is capped where the GPU's ports bind (line rate over the ring's busbw), not at 1.0, and
the one-shot's pooled share stands for the group sizes not measured."""

from __future__ import annotations

import pytest

from shardbudget.calibrate.fit_engines import _fit_mnnvl
from shardbudget.comm.collectives import make_group
from shardbudget.comm.custom_kernels import custom_candidates
from shardbudget.fabric.catalog import load_catalog


def test_a_share_above_the_ports_is_capped_at_their_line_rate():
    # one-shot rows twice as fast as the ring busbw (slope 0.5), two-shot rows at 0.8 of it
    points = {
        ("one-shot", 8): [(1.0, 0.5), (2.0, 1.0)],
        ("one-shot", 16): [(3.0, 1.5)],
        ("two-shot", 8): [(1.0, 1.25), (2.0, 2.5)],
    }
    fit = _fit_mnnvl(points, {8: 1.3, 16: 1.3})
    assert dict(fit["mnnvl_one_shot_efficiency"]) == {"default": 1.3, "8": 1.3}
    assert dict(fit["mnnvl_two_shot_efficiency"]) == pytest.approx({"default": 1.0, "8": 0.8})
    # below the cap the fitted share is kept
    fit = _fit_mnnvl({("one-shot", 8): [(1.0, 1.0 / 1.2), (2.0, 2.0 / 1.2)]}, {8: 1.3})
    assert dict(fit["mnnvl_one_shot_efficiency"]) == pytest.approx({"default": 1.2, "8": 1.2})


@pytest.mark.parametrize("gpus", [8, 32, 72])
def test_the_one_shot_is_not_slower_than_the_two_shot_at_flashinfers_switch(gpus):
    """At 1 MiB of group data (message x GPUs), where flashinfer hands the one-shot to the two-shot,
    the one-shot that receives g - 1 peers' data at the ports' line rate is no slower (it was, from 32
    GPUs up, at the ring busbw: 8.03 -> 7.98 us at 32 KiB on 32 GPUs)."""
    group = make_group("gb300-nvl72", nodes=1, gpus=gpus, catalog=load_catalog())
    one, two = custom_candidates(group, "trtllm")
    assert (one.algorithm, two.algorithm) == ("one-shot", "two-shot")
    assert one.time_s(one.max_bytes) <= two.time_s(two.min_bytes)
