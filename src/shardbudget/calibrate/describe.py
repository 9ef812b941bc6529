"""The fitted constants as lines of text (`python -m shardbudget.calibrate --print`)."""

from __future__ import annotations

from .constants import US, Calibration


def _table(t) -> str:
    if not t:
        return "-"
    return (
        "{ "
        + ", ".join(
            f"{'default' if k == 'default' else repr(k)} = {v:.3f}"
            for k, v in sorted(t.items(), key=lambda kv: (kv[0] != "default", kv[0].zfill(3)))
        )
        + " }"
    )


def describe(cal: Calibration) -> list[str]:
    lines = ["ring_efficiency: " + ", ".join(f"{g} GPUs {v:.3f}" for g, v in sorted(cal.ring_efficiency.items()))]
    for arch, f in sorted(cal.arch.items()):
        lines.append(
            f"arch {arch:10} base_offset_us "
            + ", ".join(f"{p} {f.base_offset_s[p] / US:+.2f}" for p in ("ll", "ll128", "simple"))
            + "  nvlink_hop_scale "
            + ", ".join(f"{p} {f.nvlink_hop_scale[p]:.2f}" for p in ("ll", "ll128", "simple"))
            + f"  nvls_small_latency_us {f.nvls_small_latency_s / US:.2f}"
        )
    lines += [f"nvls_link_efficiency {k}: {v:.3f}" for k, v in sorted(cal.nvls_link_efficiency.items())]
    lines += [f"nvls_decay_per_rank {cal.nvls_decay_per_rank:.5f}"]
    if cal.nvls_small_per_doubling_s is not None:
        lines += [f"nvls_small_latency_per_doubling_us {cal.nvls_small_per_doubling_s / US:.2f}"]
    if cal.shm_ll_bandwidth_fraction is not None:
        lines += [f"shm_ll_bandwidth_fraction {cal.shm_ll_bandwidth_fraction:.3f}"]
    for name, fit in sorted(cal.engines.items()):
        launch = ", ".join(f"{a} = {v / US:.2f}" for a, v in sorted(fit["launch_s"].items()))
        lines.append(
            f"engine {name}: launch_us {{ {launch} }} per_peer_us {fit['per_peer_s'] / US:.3f} "
            f"one_shot_efficiency {_table(fit.get('one_shot_efficiency'))} "
            f"two_shot_efficiency {_table(fit.get('two_shot_efficiency'))} "
            "one_shot_efficiency_by_arch { "
            + ", ".join(f"{a} = {_table(t)}" for a, t in fit.get("one_shot_efficiency_by_arch", {}).items())
            + " } "
            "two_shot_extra_us { "
            + ", ".join(f"{a} = {v / US:.2f}" for a, v in sorted(fit.get("two_shot_extra_s", {}).items()))
            + " }"
            + (
                f" mnnvl_one_shot_efficiency {_table(fit.get('mnnvl_one_shot_efficiency'))}"
                f" mnnvl_two_shot_efficiency {_table(fit.get('mnnvl_two_shot_efficiency'))}"
                f" mnnvl_launch_us {fit.get('mnnvl_launch_s', 0.0) / US:.2f}"
                f" mnnvl_per_peer_us {fit.get('mnnvl_per_peer_s', 0.0) / US:.3f}"
                if "mnnvl_two_shot_efficiency" in fit
                else ""
            )
        )
    lines += [f"fabric {k} achievable {v / 1e9:.2f} GB/s" for k, v in sorted(cal.fabric_achievable.items())]
    lines += [f"cpu {k} host_bandwidth {v / 1e9:.2f} GB/s" for k, v in sorted(cal.cpu_host.items())]
    lines += [f"cpu {k} socket_stream_bandwidth {v / 1e9:.2f} GB/s" for k, v in sorted(cal.cpu_stream.items())]
    return lines
