"""`shardbudget engines` (issue 37): every preset's release, and two presets side by side with the plan
under each; an older release says how old it is; an unknown one is refused, naming every preset."""

from __future__ import annotations

import json


def test_engines_lists_each_release_with_its_nccl_and_age(cli):
    r = cli("engines")
    assert r.returncode == 0, r.stderr
    rows = {line.split()[0]: line for line in r.stdout.splitlines() if line and not line.startswith(" ")}
    assert rows["vllm"].split()[1:4] == ["0.34.0", "2026-11-16", "2.30.7"]
    assert rows["sglang"].split()[1:4] == ["0.5.23", "2026-10-30", "2.30.7"]
    assert "older: vllm 0.34.0 is 15 minor releases newer" in rows["vllm-0.19"]
    assert "older: sglang 0.5.23 is 9 patch releases newer" in rows["sglang-0.5.14"]
    assert "where each preset's rules were read:" in r.stdout


def test_diff_prints_the_changed_rules_and_the_plans_side_by_side(cli):
    r = cli("engines", "--diff", "vllm-0.19", "vllm", "--model", "llama-3.1-70b", "--system", "hgx-h100")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("vllm-0.19 -> vllm: 0.19.0 (2026-04-03, NCCL 2.27.5) -> 0.34.0 (2026-11-16, NCCL 2.30.7)")
    changed = {line.split()[0]: line.split()[1:] for line in out.splitlines() if line.startswith("  ")}
    assert changed["allreduce.flashinfer_allreduce"] == ["off", "on"]
    assert changed["memory.fraction"] == ["0.9", "1.0"] and changed["memory.max_num_seqs"] == ["256", "1024"]
    assert changed["allreduce.flashinfer.one_shot_max.9.0.8"] == ["-", "512", "KiB"]
    # the plans: vLLM 0.34.0's FlashInfer one-shot and norm fusion take 1.15 ms off TP8's ITL
    assert "TP8 all-reduce: vllm-0.19 one-shot -> vllm FlashInfer one-shot" in out
    assert "latency-optimal plan: TP8 (10.25 ms) -> TP8 (9.10 ms)" in out
    assert "memory the engine allows a GPU (at the latency-optimal TP): 90% (77.0 GB) -> 99% (84.4 GB)" in out


def test_diff_json_carries_both_releases_the_changes_and_the_plans(cli):
    r = cli("engines", "--diff", "sglang-0.5.14", "sglang", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--json")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert (d["a"]["version"], d["b"]["version"]) == ("0.5.14", "0.5.23")
    assert {c["table"] for c in d["changes"]} and all(c["old"] != c["new"] for c in d["changes"])
    assert [p["preset"] for p in d["plans"]] == ["sglang-0.5.14", "sglang"]
    assert all(p["lines"] and p["best_plan"] for p in d["plans"])


def test_bad_presets_and_half_a_plan_are_one_line_errors(cli):
    r = cli("engines", "--diff", "vllm-0.19", "vllmm")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert "unknown engine 'vllmm'" in r.stderr and "presets: vllm, sglang, trtllm" in r.stderr
    r = cli("engines", "--diff", "vllm-0.19", "vllm", "--model", "llama-3.1-70b")
    assert r.returncode == 2 and "both --model and --system" in r.stderr
    r = cli("plan", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--engine", "vllm-0.2")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "sglang-0.5.14, vllm-0.5, vllm-0.6; `shardbudget engines` lists their releases" in r.stderr


def test_an_older_release_says_how_old_in_plan_deploy_and_explain(cli):
    note = "vllm-0.19 is vLLM 0.19.0 (2026-04-03); the newest preset, vllm, is 0.34.0 (2026-11-16): 15 minor releases"
    for args in (("plan", "--batch", "1"), ("deploy", "--gpus", "8"), ("explain",)):
        r = cli(*args, "--model", "llama-3.1-70b", "--system", "hgx-h100", "--engine", "vllm-0.19")
        assert r.returncode == 0, (args, r.stderr)
        assert "engine vllm-0.19 0.19.0" in r.stdout and note in r.stdout, args
        r = cli(*args, "--model", "llama-3.1-70b", "--system", "hgx-h100")
        assert "engine vllm 0.34.0" in r.stdout and "the newest preset" not in r.stdout, args
