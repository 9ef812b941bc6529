"""`shardbudget deploy`: the JSON contract, the figure, the launch lines against the engine presets'
own [cli] tables, one-line errors, and properties a reader can check by hand (the choice, the
Pareto front, speculative decoding, the disaggregated KV hand-off).

Most cases call the library or `shardbudget.cli.main` in-process (the same entry point as the
console script, without its interpreter start); a few run the real console script.
"""

from __future__ import annotations

import dataclasses
import json
import math
import tomllib
from pathlib import Path

import pytest

from shardbudget import cli as cli_module
from shardbudget import engines as engines_pkg
from shardbudget.decide.deploy import Workload, deploy
from shardbudget.decide.disagg import kv_handoff_s
from shardbudget.fabric.catalog import load_catalog
from shardbudget.decide.launch import LAUNCH_ENGINES, build_launches
from shardbudget.model import Plan, load_model, total_params
from shardbudget.step.scenario import scenario
from shardbudget.step.served import prompt_token_s
from shardbudget.step.speculative import Speculation
from shardbudget.decide.request import request as sb_request

BUDGET_S = 0.030
REL = 1e-9  # identities computed from the same floats: only rounding may differ

# the keys issue 13 promises; more may be added, none of these may go
TOP_KEYS = {
    "model",
    "system",
    "nodes",
    "gpus",
    "budget_s",
    "ttft_budget_s",
    "engine",
    "options",
    "best",
    "pareto",
    "launch",
    "verdict",
    "judged",
    "judged_words",
}
OPTION_KEYS = {
    "replicas",
    "tp",
    "pp",
    "ep",
    "dp",
    "max_batch",
    "itl_s",
    "tpot_s",
    "ttft_s",
    "tokens_per_s",
    "tokens_per_s_per_gpu",
    "tokens_per_s_per_user",
    "mem_bytes_per_gpu",
    "binding",
    "meets_budget",
}
PARETO_KEYS = {"tp", "pp", "ep", "dp", "batch", "tokens_per_s_per_user", "tokens_per_s_per_gpu"}
BINDINGS = {"memory", "tpot", "itl", "ttft", "max-batch", "prefill"}

ENGINE_DIR = Path(engines_pkg.__file__).parent
# each preset's [memory] key for the memory share its launch line passes (named as the engine names it)
MEMORY_FRACTION_KEY = {
    "vllm": "gpu_memory_utilization",
    "sglang": "mem_fraction_static",
    "trtllm": "kv_cache_free_gpu_memory_fraction",
}


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


@pytest.fixture(scope="module")
def dense8(catalog):
    """llama-3.1-70b on one hgx-h100 node: 1xTP8, 2xTP4, ... within 30 ms TPOT."""
    return deploy(sb_request("llama-3.1-70b", "hgx-h100", budget_s=BUDGET_S, catalog=catalog), gpus=8)


@pytest.fixture(scope="module")
def moe16(catalog):
    """deepseek-v3 on two hgx-h200 nodes: splits with PP, EP and DP-attention."""
    return deploy(sb_request("deepseek-v3", "hgx-h200", budget_s=BUDGET_S, ttft_budget_s=2.0, catalog=catalog), gpus=16)


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli_module.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


# --- the JSON contract ----------------------------------------------------------------------


def test_json_keys_are_the_issues(cli):
    r = cli(
        "deploy",
        "--model",
        "llama-3.1-70b",
        "--system",
        "hgx-h100",
        "--gpus",
        "16",
        "--budget",
        "30ms",
        "--ttft-budget",
        "2s",
        "--json",
    )
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert TOP_KEYS <= set(d)
    assert (d["model"], d["system"], d["nodes"], d["gpus"], d["engine"]) == ("llama-3.1-70b", "hgx-h100", 2, 16, "vllm")
    assert d["budget_s"] == pytest.approx(0.030) and d["ttft_budget_s"] == pytest.approx(2.0)
    assert d["options"] and all(OPTION_KEYS <= set(o) for o in d["options"])
    assert OPTION_KEYS <= set(d["best"]) and d["best"] == d["options"][0]
    assert d["pareto"] and all(PARETO_KEYS <= set(p) for p in d["pareto"])
    assert set(d["launch"]) == {"vllm", "sglang", "trtllm"} and all(d["launch"].values())
    assert isinstance(d["verdict"], str) and d["verdict"].startswith("Layout: disaggregated 8:8 wins")
    assert "\nOn 16 GPUs of hgx-h100 (8 prefilling" in d["verdict"]
    search = d["split_search"]  # the splits searched by default, the uniform best beside them
    assert search["uniform"] == "2xTP8" and search["best"]["prefill_gpus"] == 8 and search["gain"] > 1
    assert [s["prefill_gpus"] for s in search["splits"]] == [8] and search["words"] == d["verdict"].split("\n")[0]
    for o in d["options"]:
        assert o["binding"] in BINDINGS and isinstance(o["meets_budget"], bool)
        assert all(isinstance(o[k], (int, float)) for k in OPTION_KEYS - {"binding", "meets_budget"})


def test_every_split_of_the_gpus_is_an_option(dense8):
    # 70B (64 heads, 8 KV heads) on 8 GPUs: TP in {1, 2, 4, 8}, PP filling the rest of a replica
    got = {(o.replicas, o.tp, o.pp) for o in dense8.options}
    want = {(r, tp, pp) for tp in (1, 2, 4, 8) for pp in (1, 2, 4, 8) for r in (1, 2, 4, 8) if r * tp * pp == 8}
    assert got == want
    assert all(o.replicas * o.tp * o.pp == 8 for o in dense8.options)


# --- the figure -----------------------------------------------------------------------------


def test_plot_writes_png(cli, tmp_path):
    out = tmp_path / "pareto.png"
    r = cli("deploy", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--gpus", "8", "--plot", str(out))
    assert r.returncode == 0, r.stderr
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and out.stat().st_size > 10_000
    assert f"wrote {out}" in r.stderr


def test_plot_writes_svg(capsys, tmp_path):
    out = tmp_path / "pareto.svg"
    rc, _, err = _run(
        capsys,
        "deploy",
        "--model",
        "llama-3.1-8b",
        "--system",
        "l40s-pcie-nps1-degraded",
        "--gpus",
        "8",
        "--plot",
        str(out),
    )
    assert rc == 0, err
    text = out.read_text()
    assert "<svg" in text and "Pareto front" in text
    assert not list(tmp_path.glob("*.tmp*"))  # written atomically: no temporary left behind


# --- launch lines against the presets' [cli] tables -----------------------------------------


def launch_lines(result, cfg, system, catalog) -> dict[str, str]:
    """Each engine's first server command (its words, without environment), as the launch builds it."""
    launches, _ = build_launches(result, cfg, system, catalog)
    out = {}
    for engine, la in launches.items():
        s = next(s for s in la.steps if s.program == "serve")
        out[engine] = " ".join([la.commands["serve"], *s.argv]) + f"  # {la.label}"
    return out


def _servers(result, cfg, system, catalog) -> dict[str, int]:
    launches, _ = build_launches(result, cfg, system, catalog)
    return {e: sum(1 for s in la.steps if s.program == "serve") for e, la in launches.items()}


def _preset(engine: str) -> dict:
    return tomllib.loads((ENGINE_DIR / f"{engine}.toml").read_text())


def _value_after(line: str, flag: str) -> str | None:
    """The token after `flag` in the command (before its trailing comment); '' for a bare switch."""
    words = line.split("  #")[0].split()
    if flag not in words:
        return None
    i = words.index(flag)
    return words[i + 1] if i + 1 < len(words) and not words[i + 1].startswith("--") else ""


def _expected_flags(engine: str, o, max_len: int, fraction: float, moe: bool) -> dict[str, object]:
    """role -> the value the line must carry (True: a bare switch; None: the flag must be absent).

    vLLM: one server is DP x TP x PP GPUs with a scheduler per DP rank; a MoE model's DP ranks share
    one DP x TP expert group, so attention DP is DP ranks of TP tp/dp and MoE replicas are separate
    servers (docs.vllm.ai/en/v0.12.0/serving/data_parallel_deployment/). SGLang: --tp-size is the
    whole group, --dp-size splits attention in it or runs independent replicas; each DP scheduler
    takes --max-running-requests // dp-size under DP attention and the whole value otherwise
    (tp_worker.py), so the flag is one replica's sequences in flight either way; it sets
    --mem-fraction-static only where the option needs more than SGLang's own default
    (o.memory_fraction, None for options priced under another engine), else SGLang computes it."""
    if engine == "vllm":
        dp = o.dp * (1 if moe else o.replicas)
        return {
            "tensor_parallel": o.tp // o.dp,
            "pipeline_parallel": o.pp if o.pp > 1 else None,
            "data_parallel": dp if dp > 1 else None,
            "expert_parallel": True if o.ep > 1 else None,
            "max_batch": math.ceil(o.max_batch / o.dp),
            "max_model_len": max_len,
            "memory_fraction": fraction,
        }
    if engine == "sglang":  # plain replicas smaller than a node fold into --dp-size on it
        fold = min(o.replicas, 8 // (o.tp * o.pp)) if o.replicas > 1 and o.tp * o.pp < 8 else None
        return {
            "tensor_parallel": o.tp,
            "pipeline_parallel": o.pp if o.pp > 1 else None,
            "data_parallel": o.dp if o.dp > 1 else fold,
            "dp_attention": True if o.dp > 1 else None,
            "expert_parallel": o.ep if o.ep > 1 else None,
            "max_batch": o.max_batch,
            "max_model_len": max_len,
            "memory_fraction": o.memory_fraction,
        }
    return {
        "tensor_parallel": o.tp,
        "pipeline_parallel": o.pp,
        "expert_parallel": o.ep if o.ep > 1 else None,
        "max_batch": o.max_batch,
        "max_model_len": max_len,
        "memory_fraction": fraction,
    }


def _check_line(engine: str, line: str, o, max_len: int, moe: bool = False) -> None:
    preset = _preset(engine)
    cli_table, eng = preset["cli"], preset["engine"]
    assert cli_table["source"].strip(), f"{engine}: [cli] cites no source"
    assert line.startswith(eng["launcher"] + " ")
    assert line.rstrip().split("  # ")[1].split(";")[0].endswith(eng["version"])  # the pinned release
    fraction = float(preset["memory"][MEMORY_FRACTION_KEY[engine]])
    for role, want in _expected_flags(engine, o, max_len, fraction, moe).items():
        flag = cli_table[role]
        got = _value_after(line, flag)
        if want is None:
            assert got is None, f"{engine}: {flag} should be absent for {o.label()}: {line}"
        elif want is True:
            assert got == "", f"{engine}: switch {flag} missing for {o.label()}: {line}"
        else:
            assert got is not None and float(got) == pytest.approx(float(want)), f"{engine}: {flag} {want}: {line}"


def test_chosen_option_launch_lines_carry_the_presets_flags(dense8):
    assert set(dense8.launch) == set(LAUNCH_ENGINES)
    lines = launch_lines(dense8, load_model("llama-3.1-70b"), load_catalog().system("hgx-h100"), load_catalog())
    for engine in LAUNCH_ENGINES:
        _check_line(engine, lines[engine], dense8.best, 2048 + 256)


@pytest.mark.parametrize("shape", ["pp", "ep", "dp", "replicas"])
def test_launch_lines_for_pp_ep_dp_and_replicas(moe16, catalog, shape):
    """Every role a split can need appears with its value: each shape of option launched as if chosen."""
    want = {
        "pp": lambda o: o.pp > 1,
        "ep": lambda o: o.ep > 1,
        "dp": lambda o: o.dp > 1,
        "replicas": lambda o: o.replicas > 1,
    }[shape]
    o = next(o for o in moe16.options if o.meets_budget and want(o))
    lines = launch_lines(
        dataclasses.replace(moe16, best=o), load_model("deepseek-v3"), catalog.system("hgx-h200"), catalog
    )
    for engine in LAUNCH_ENGINES:
        _check_line(engine, lines[engine], o, 2048 + 256, moe=True)
    if o.replicas > 1:  # MoE replicas are separate vLLM servers, not DP ranks sharing the experts
        servers = _servers(
            dataclasses.replace(moe16, best=o), load_model("deepseek-v3"), catalog.system("hgx-h200"), catalog
        )
        assert servers["vllm"] >= o.replicas


def test_vllm_attention_dp_is_dp_ranks_of_the_attention_tp(moe16, catalog):
    """deepseek-v3, TP8 EP8 with attention DP8 on one node: vLLM runs it as 8 DP ranks of TP1 with
    expert parallelism over DP x TP = 8 GPUs, not TP8 x DP8 (64 GPUs)."""
    o = next(o for o in moe16.options if o.tp == 8 and o.dp == 8 and o.pp == 1)
    line = launch_lines(
        dataclasses.replace(moe16, best=o), load_model("deepseek-v3"), catalog.system("hgx-h200"), catalog
    )["vllm"]
    assert "--tensor-parallel-size 1 --data-parallel-size 8 --enable-expert-parallel" in line


def _as_chosen(result, catalog, model: str, system: str, tp: int, replicas: int) -> dict[str, str]:
    o = next(o for o in result.options if o.tp == tp and o.pp == 1 and o.replicas == replicas)
    return launch_lines(dataclasses.replace(result, best=o), load_model(model), catalog.system(system), catalog)


def test_custom_allreduce_turned_off_where_it_cannot_run(catalog):
    """PCIe L40S: vLLM's / SGLang's custom all-reduce needs NVLink between every pair above two GPUs,
    so TP8 and TP4 launch with --disable-custom-all-reduce; on NVSwitch (hgx-h100) SGLang's TP8 keeps
    it. vLLM 0.34.0's TP8 on Hopper reaches it at no size (FlashInfer's all-reduce to 512 KiB,
    symmetric memory above; the custom kernel capped at 256 KiB beside it): the flag goes on, and
    FlashInfer, which it does not gate, stays on; at TP4 the custom two-shot runs from 2 to 8 MiB."""
    l40s = deploy(sb_request("llama-3.1-70b", "l40s-pcie-nps1-degraded", budget_s=None, catalog=catalog), gpus=8)
    h100 = deploy(sb_request("llama-3.1-70b", "hgx-h100", budget_s=None, catalog=catalog), gpus=8)
    for engine in ("vllm", "sglang"):
        flag = _preset(engine)["cli"]["disable_custom_allreduce"]
        assert flag == "--disable-custom-all-reduce"
        assert (
            _value_after(_as_chosen(l40s, catalog, "llama-3.1-70b", "l40s-pcie-nps1-degraded", 8, 1)[engine], flag)
            == ""
        )
        assert (
            _value_after(_as_chosen(l40s, catalog, "llama-3.1-70b", "l40s-pcie-nps1-degraded", 4, 2)[engine], flag)
            == ""
        )
        tp8 = _as_chosen(h100, catalog, "llama-3.1-70b", "hgx-h100", 8, 1)[engine]
        assert _value_after(tp8, flag) == ("" if engine == "vllm" else None)
        assert "VLLM_ALLREDUCE_USE_FLASHINFER" not in tp8
        assert _value_after(_as_chosen(h100, catalog, "llama-3.1-70b", "hgx-h100", 4, 2)[engine], flag) is None
    assert (
        "custom" not in _as_chosen(l40s, catalog, "llama-3.1-70b", "l40s-pcie-nps1-degraded", 8, 1)["trtllm"]
    )  # a YAML key instead


def test_custom_allreduce_flag_in_the_cli_output(capsys):
    rc, out, err = _run(
        capsys,
        "deploy",
        "--model",
        "llama-3.1-70b",
        "--system",
        "l40s-pcie-nps1-degraded",
        "--gpus",
        "8",
        "--budget",
        "100ms",
        "--json",
    )
    assert rc == 0, err
    d = json.loads(out)
    assert d["best"]["tp"] >= 4  # 70B needs at least four 48 GB GPUs per replica
    assert (
        "--disable-custom-all-reduce" in d["launch"]["vllm"] and "--disable-custom-all-reduce" in d["launch"]["sglang"]
    )
    assert 'allreduce_strategy: "NCCL"' in d["launch"]["trtllm"]


# --- bad input: one line, exit 2 ------------------------------------------------------------

BAD = [
    (
        ["--gpus", "8", "--speculative", "mtp", "--acceptance", "1.5"],
        ["--acceptance must be a probability in [0, 1]", "1.5"],
    ),
    (["--gpus", "8", "--speculative", "eagle", "--acceptance", "-0.1"], ["--acceptance", "-0.1"]),
    (["--gpus", "8", "--engine", "vlm"], ["unknown engine 'vlm'", "did you mean 'vllm'"]),
    (["--gpus", "8", "--disaggregate", "3:4"], ["--disaggregate 3:4 uses 7 GPUs, not the 8 of --gpus"]),
    (["--gpus", "8", "--disaggregate", "3-5"], ["--disaggregate '3-5' must be P:D"]),
    (["--gpus", "8", "--context", "4096", "--input-len", "1024"], ["--context", "--input-len", "not both"]),
    (["--gpus", "0"], ["'--gpus'", "0 is outside 1..131,072"]),
    (["--gpus", "100000000"], ["'--gpus'", "outside 1..131,072 (GPUs of a datacenter)"]),
]


@pytest.mark.parametrize("args,expected", BAD, ids=[" ".join(a) for a, _ in BAD])
def test_bad_input_is_one_line_and_exit_2(capsys, args, expected):
    argv = ["deploy", "--system", "hgx-h100", *args]
    if "--model" not in args:
        argv += ["--model", "llama-3.1-70b"]
    rc, out, err = _run(capsys, *argv)
    assert rc == 2, (rc, out, err)
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    assert "Traceback" not in err and "internal error" not in err
    for text in expected:
        assert text in lines[0], (text, lines[0])
    assert out == ""  # nothing half-printed before the error


MISSES = [
    (
        ["--model", "llama-3.1-70b", "--gpus", "1"],
        ["No split of 1 GPU of hgx-h100 fits llama-3.1-70b in memory", "1xTP1 at 145.2 GB per GPU"],
    ),  # vLLM 0.34.0, its sampler after the forward pass (0.19.0: 145.3)
    (["--model", "llama-3.1-405b", "--gpus", "8", "--budget", "none"], ["No split of 8 GPUs", "in memory"]),
    (
        ["--gpus", "8", "--budget", "1ms"],
        ["No way to spend 8 GPUs on llama-3.1-70b meets 1 ms TPOT", "the closest is 1xTP8 at"],
    ),
    (["--gpus", "8", "--ttft-budget", "1ms"], ["meets 30 ms TPOT and 1 ms TTFT", "the closest is", "binding: ttft"]),
]


@pytest.mark.parametrize("args,expected", MISSES, ids=[" ".join(a) for a, _ in MISSES])
def test_valid_request_nothing_meets_is_exit_1_with_the_table(capsys, args, expected):
    """Exit 1, not 2: the request was valid; the table is printed and the closest option named."""
    argv = ["deploy", "--system", "hgx-h100", *args]
    if "--model" not in args:
        argv += ["--model", "llama-3.1-70b"]
    rc, out, err = _run(capsys, *argv)
    assert rc == 1 and err == "", (rc, err)
    assert "options (best first)" in out
    for text in expected:
        assert text in out, (text, out[-400:])


def test_bad_input_from_the_console_script(cli):
    r = cli("deploy", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "8", "--engine", "sglng")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.strip().splitlines() == [r.stderr.strip()] and "did you mean 'sglang'" in r.stderr


@pytest.mark.parametrize(
    "flags",
    [
        ["--acceptance", "1.5"],
        ["--acceptance", "0.8"],
        ["--draft-tokens", "4"],
        ["--draft-model", "llama-3.2-1b", "--acceptance", "0.6"],
    ],
)
def test_speculation_settings_without_speculative_are_refused(capsys, flags):
    rc, out, err = _run(capsys, "deploy", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "8", *flags)
    assert rc == 2 and out == "" and err.count("\n") == 1
    verb = "apply" if len(flags) > 2 else "applies"
    assert f"only {verb} with --speculative" in err and flags[0] in err


# --- the choice and the front, by hand ------------------------------------------------------


@pytest.mark.parametrize("which", ["dense8", "moe16"])
def test_best_has_the_most_tokens_per_gpu_within_the_budgets(request, which):
    r = request.getfixturevalue(which)
    meeting = [o for o in r.options if o.meets_budget]
    assert r.best is meeting[0] and len(meeting) >= 2
    assert all(r.best.tokens_per_s_per_gpu >= o.tokens_per_s_per_gpu for o in meeting)
    for o in meeting:
        assert o.tpot_s <= r.budget_s and (r.ttft_budget_s is None or o.ttft_s <= r.ttft_budget_s)
        # the decode step alone; the other slots' prompts ride in the TPOT (none at batch 1)
        assert o.itl_s < o.tpot_s or (o.itl_s == o.tpot_s and o.max_batch == o.pp)
        # throughput by hand: max_batch sequences in flight per replica, one token each per cycle: the
        # TPOT plus the sequence's own prompt spread over its tokens (step.served)
        assert o.tokens_per_s == pytest.approx(o.replicas * o.max_batch / o.cycle_s, rel=REL)
        assert o.cycle_s == pytest.approx(o.tpot_s + _prompt_share_s(r, o), rel=REL)
        assert o.tokens_per_s_per_gpu == pytest.approx(o.tokens_per_s / r.gpus, rel=REL)
        assert o.tokens_per_s_per_user == pytest.approx(1 / o.tpot_s, rel=REL)
        assert o.max_batch % o.pp == 0  # pp micro-batches of the same size
    assert all(not o.meets_budget and o.max_batch == 0 for o in r.options[len(meeting) :])


def test_verdict_compares_with_one_replica_of_the_widest_tp(catalog):
    """On PCIe the paragraph sets the choice against 1xTP8, the plan people reach for first, with
    its numbers: the ratio of tokens/s per GPU and TP8's communication share."""
    r = deploy(sb_request("llama-3.1-8b", "l40s-pcie-nps1-degraded", budget_s=BUDGET_S, catalog=catalog), gpus=8)
    tp8 = next(o for o in r.options if o.replicas == 1 and o.tp == 8)
    assert r.best is not tp8 and r.best.replicas > 1
    ratio = r.best.tokens_per_s_per_gpu / tp8.tokens_per_s_per_gpu
    assert f"That is {ratio:.2f}x the tokens/s of one TP8 replica" in r.verdict
    assert f"{100 * tp8.comm_share:.0f}% of its TPOT in communication" in r.verdict


def test_verdict_names_the_runner_up_when_the_widest_tp_wins(dense8):
    assert (dense8.best.replicas, dense8.best.tp) == (1, 8)
    assert "The runner-up, " in dense8.verdict and "x the tokens/s of one" not in dense8.verdict


def test_batch_one_itl_is_above_the_weight_read_roofline(catalog):
    """At batch 1 each token reads every weight (but the input embedding) once: ITL >= weight bytes /
    TP / HBM bandwidth (llama-3.1-70b bf16: 139 GB / 8 / 3.35 TB/s = 5.2 ms for TP8), and the step model's
    extra (kernel floors, all-reduce, host overhead) stays within 4x of it on NVSwitch."""
    r = deploy(sb_request("llama-3.1-70b", "hgx-h100", budget_s=1e-3, catalog=catalog), gpus=8)
    assert r.best is None  # nothing meets 1 ms: every option is reported at batch 1
    hbm = catalog.system("hgx-h100").gpu.mem_bytes_per_s
    cfg = load_model("llama-3.1-70b")
    weights = 2.0 * (total_params(cfg) - cfg.vocab_size * cfg.hidden_size)  # bf16; the embedding is a lookup
    assert hbm == pytest.approx(3.35e12, rel=0.01)
    for o in r.options:
        floor = weights / o.tp / hbm
        assert floor <= o.itl_s <= 4 * floor + 2e-3, (o.label(), o.itl_s, floor)


def _prompt_share_s(r, p) -> float:
    """c_p x input_len / output_len for the plan of option / point `p` of deploy result `r`."""
    sc = scenario(r.model, r.system, engine=r.engine)
    c_p = prompt_token_s(sc, Plan(p.tp, p.pp, p.ep, p.dp), input_len=r.workload.input_len)
    return c_p * r.workload.input_len / r.workload.output_len


def _dominates(p: dict, q: dict) -> bool:
    u, g = "tokens_per_s_per_user", "tokens_per_s_per_gpu"
    return p[u] >= q[u] and p[g] >= q[g] and (p[u] > q[u] or p[g] > q[g])


@pytest.mark.parametrize("which", ["dense8", "moe16"])
def test_pareto_points_are_mutually_non_dominated(request, which):
    r = request.getfixturevalue(which)
    front = list(r.pareto)
    assert len(front) >= 3
    for i, p in enumerate(front):
        assert not any(_dominates(q, p) for j, q in enumerate(front) if j != i), p
        # each point by hand: `batch` sequences per replica of tp x pp GPUs, each one token per
        # TPOT (1 / tokens/s/user) plus its own prompt's share (step.served)
        cycle = 1 / p["tokens_per_s_per_user"] + _prompt_share_s(r, Plan(p["tp"], p["pp"], p["ep"], p["dp"]))
        assert p["tokens_per_s_per_gpu"] == pytest.approx(p["batch"] / cycle / (p["tp"] * p["pp"]), rel=REL)
    users = [p["tokens_per_s_per_user"] for p in front]
    assert users == sorted(users, reverse=True)
    # nothing the sweep found beats the front: every qualifying option is on it or below it
    for o in (o for o in r.options if o.meets_budget):
        pt = {"tokens_per_s_per_user": o.tokens_per_s_per_user, "tokens_per_s_per_gpu": o.tokens_per_s_per_gpu}
        assert any(all(p[k] >= v * (1 - REL) for k, v in pt.items()) for p in front), o.label()


# --- speculative decoding -------------------------------------------------------------------


def test_tokens_per_verify_step_by_hand():
    assert Speculation(method="mtp", draft_tokens=3, acceptance=0.0).tokens_per_step == 1.0
    assert Speculation(method="mtp", draft_tokens=3, acceptance=0.5).tokens_per_step == pytest.approx(
        1.875
    )  # 1+.5+.25+.125
    assert Speculation(method="eagle", draft_tokens=3, acceptance=1.0).tokens_per_step == 4.0


def _spec(catalog, acceptance: float, method: str = "eagle"):
    w = Workload(speculation=Speculation(method=method, draft_tokens=3, acceptance=acceptance))
    return deploy(sb_request("llama-3.1-70b", "hgx-h100", budget_s=BUDGET_S, work=w, catalog=catalog), gpus=8)


def test_speculation_that_is_never_accepted_only_costs(dense8, catalog):
    """Acceptance 0: every verify step of k+1 tokens (bigger GEMMs, k+1 times the all-reduce bytes)
    plus k draft steps yields the one token a plain decode step gives, so no option can gain."""
    spec = _spec(catalog, 0.0)
    plain = {o.label(): o for o in dense8.options}
    assert spec.best.tokens_per_s_per_gpu < dense8.best.tokens_per_s_per_gpu
    for o in spec.options:
        p = plain[o.label()]
        assert o.tokens_per_s_per_gpu <= p.tokens_per_s_per_gpu * (1 + REL), o.label()
        if o.meets_budget:
            assert o.max_batch <= p.max_batch, o.label()


def test_speculation_pays_where_decode_is_memory_bound(dense8, catalog):
    """On NVSwitch at 30 ms, the verify step of 4 tokens costs little more than one decode step (it
    reads the same weights), so tokens/s per GPU grows with acceptance and beats plain decoding."""
    best = [_spec(catalog, a).best.tokens_per_s_per_gpu for a in (0.0, 0.5, 0.9)]
    assert best == sorted(best)
    assert best[-1] > 1.2 * dense8.best.tokens_per_s_per_gpu


# --- disaggregated prefill / decode ---------------------------------------------------------


def test_verdict_says_whether_speculation_pays_against_plain_decoding(dense8, catalog):
    """The paragraph sets the speculative choice against the best option of the same request
    without speculation (kept in the JSON as without_speculation), with the ratio of tokens/s/GPU."""
    pays, costs = _spec(catalog, 0.9), _spec(catalog, 0.0)
    for r in (pays, costs):
        assert r.without_speculation == dense8.best
        assert r.to_dict()["without_speculation"] == dense8.best.to_dict()
    ratio = pays.best.tokens_per_s_per_gpu / dense8.best.tokens_per_s_per_gpu
    assert (
        f"pays: {ratio:.2f}x the tokens/s per GPU of the best option without it ({dense8.best.label()}" in pays.verdict
    )
    ratio = costs.best.tokens_per_s_per_gpu / dense8.best.tokens_per_s_per_gpu
    assert f"does not pay: {ratio:.2f}x" in costs.verdict and "eats the gain" in costs.verdict
    assert dense8.without_speculation is None and "Speculation" not in dense8.verdict


def test_the_fabric_is_blamed_when_the_verify_steps_messages_cost_the_gain():
    from shardbudget.step.speculative import comparison_text

    spec = Speculation(method="mtp", draft_tokens=3, acceptance=0.2)
    plain = dataclasses.replace(_option_like(), comm_share=0.10)
    slower = dataclasses.replace(plain, tokens_per_s_per_gpu=80.0, comm_share=0.40)
    text = comparison_text(spec, slower, plain)
    assert "does not pay: 0.80x" in text and "the fabric eats the gain" in text and "from 10% to 40%" in text
    text = comparison_text(spec, dataclasses.replace(slower, comm_share=0.12), plain)
    assert "the compute of 4 tokens per sequence per step eats the gain" in text


def _option_like():
    from shardbudget.decide.deploy import Option

    return Option(
        replicas=1,
        tp=8,
        pp=1,
        ep=1,
        dp=1,
        max_batch=10,
        tpot_s=0.03,
        itl_s=0.03,
        cycle_s=0.03,
        ttft_s=0.1,
        tokens_per_s=800.0,
        tokens_per_s_per_gpu=100.0,
        tokens_per_s_per_user=33.0,
        mem_bytes_per_gpu=1e10,
        binding="tpot",
        meets_budget=True,
        comm_share=0.1,
        gpus_per_replica=8,
    )


def test_disaggregation_reports_the_kv_handoff_share_of_ttft(capsys):
    rc, out, err = _run(
        capsys,
        "deploy",
        "--model",
        "llama-3.1-70b",
        "--system",
        "hgx-h100",
        "--gpus",
        "8",
        "--disaggregate",
        "2:6",
        "--json",
    )
    assert rc == 0, err
    d = json.loads(out)
    pre = d["prefill"]
    assert pre["gpus"] == 2 and pre["tp"] * pre["pp"] * pre["replicas"] == 2
    share = pre["kv_transfer_share_of_ttft"]
    assert 0.0 < share < 1.0
    assert pre["ttft_s"] == pytest.approx(pre["prefill_s"] + pre["kv_transfer_s"], rel=REL)
    assert share == pytest.approx(pre["kv_transfer_s"] / pre["ttft_s"], rel=REL)
    assert d["best"]["ttft_s"] == pytest.approx(pre["ttft_s"], rel=REL)
    assert all(o["replicas"] * o["tp"] * o["pp"] == 6 for o in d["options"])  # decode runs on the other 6
    assert f"{100 * share:.1f}%" in d["verdict"]
    # the decode side mixes in no prompt: its TPOT is its ITL, and the header says why
    assert all(o["tpot_s"] == o["itl_s"] for o in d["options"])
    assert d["judged"] == "TPOT" and "prefilled on the other 2 GPUs" in d["judged_words"]


def test_kv_handoff_by_hand(catalog):
    """One 2048-token prompt of llama-3.1-70b: K and V, 80 layers x 8 KV heads x 128 x 2 bytes per
    token = 320 KiB/token, 671 MB per prompt, 336 MB per GPU of a TP2 decode replica. Inside an
    hgx-h100 it cannot beat NVLink4's 450 GB/s per direction (0.75 ms) and is within 2x of it; across
    nodes it goes over one 400 Gb/s NIC (50 GB/s: 6.7 ms) and is slower."""
    cfg, system = load_model("llama-3.1-70b"), catalog.system("hgx-h100")
    shard_bytes = 2 * 80 * 8 * 128 * 2 * 2048 / 2
    p = Plan(2, 1, 1, 1)
    intra = kv_handoff_s(cfg, system, catalog, input_len=2048, decode_plan=p, kv_dtype="bf16", same_node=True)
    inter = kv_handoff_s(cfg, system, catalog, input_len=2048, decode_plan=p, kv_dtype="bf16", same_node=False)
    link = system.intra_fabric.bytes_per_s
    assert link == pytest.approx(450e9, rel=0.01)
    assert shard_bytes / link <= intra <= 2 * shard_bytes / link
    nic = system.nic_fabric.bytes_per_s
    assert inter >= shard_bytes / nic > intra


def test_the_table_shows_the_best_options_and_all_with_all(capsys):
    argv = ["deploy", "--model", "deepseek-v3", "--system", "hgx-h200", "--gpus", "64"]
    rc, out, _ = _run(capsys, *argv, "--json")
    every = json.loads(out)["options"]
    rc, short, _ = _run(capsys, *argv)
    rc2, full, _ = _run(capsys, *argv, "--all")
    assert rc == rc2 == 0 and len(every) > 20
    rows = lambda text: [line.split("│")[1].strip() for line in text.splitlines() if line.startswith("│")]
    labels = [f"{o['replicas']}x" for o in every]
    assert len(rows(short)) == 20 and len(rows(full)) == len(every)
    assert rows(full)[:20] == rows(short) and all(r.startswith(x) for r, x in zip(rows(full), labels))
    assert f"{len(every) - 20} more options: --all shows every one" in short and "more options" not in full


# --- --batch: every option at one decode batch (the report's batch control) ---------------------


def test_a_given_batch_prices_every_option_at_that_batch(catalog, capsys):
    """--batch 64: 1xTP8 is plan's TP8 row at batch 64 (ITL, memory), its tokens/s per GPU is
    64 / ITL / 8 by hand; a PP replica holds PP x 64; 8xTP1 does not fit 70B bf16 (141 GB of weights
    on one 80 GB GPU): no throughput. Under a budget TP8 misses, it still runs and says what it misses."""
    from shardbudget.decide.planner import plan

    work = Workload(context=4096)
    r = deploy(sb_request("llama-3.1-70b", "hgx-h100", budget_s=0.050, work=work, catalog=catalog), gpus=8, batch=64)
    by = {o.label(): o for o in r.options}
    tp8, pp4, tp1 = by["1xTP8"], by["1xTP2/PP4"], by["8xTP1"]
    row = next(
        x
        for x in plan(
            sb_request("llama-3.1-70b", "hgx-h100", batches=[64], context=4096, budget_s=None, catalog=catalog)
        )
        .results[0]
        .rows
        if x.key == (8, 1, 1, 1)
    )
    assert tp8.itl_s == pytest.approx(row.itl_s, rel=1e-12) and tp8.mem_bytes_per_gpu == pytest.approx(
        row.mem_bytes_per_gpu, rel=1e-12
    )
    assert (tp8.max_batch, tp8.binding, tp8.meets_budget) == (64, "batch", True)
    assert tp8.tokens_per_s_per_gpu == pytest.approx(64 / tp8.itl_s / 8, rel=REL)
    assert pp4.max_batch == 256 and pp4.tokens_per_s_per_gpu == pytest.approx(256 / pp4.itl_s / 8, rel=REL)
    assert (tp1.max_batch, tp1.tokens_per_s, tp1.binding, tp1.meets_budget) == (0, 0.0, "memory", False)
    assert r.best is not None and r.best.meets_budget and r.batch == 64
    tight = deploy(
        sb_request("llama-3.1-70b", "hgx-h100", budget_s=0.015, work=work, catalog=catalog), gpus=8, batch=64
    )
    t8 = next(o for o in tight.options if o.label() == "1xTP8")
    assert t8.itl_s == tp8.itl_s and (t8.binding, t8.meets_budget, t8.max_batch) == ("itl", False, 64)
    assert t8.tokens_per_s == tp8.tokens_per_s > 0  # it runs, over the budget
    # the CLI: the same numbers, the header names the batch, JSON carries it
    rc, out, _ = _run(
        capsys,
        "deploy",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "--gpus",
        "8",
        "--context",
        "4096",
        "--budget",
        "50ms",
        "--batch",
        "64",
        "--json",
    )
    d = json.loads(out)
    assert rc == 0 and d["batch"] == 64 and [o["itl_s"] for o in d["options"]] == [o.itl_s for o in r.options]
    rc, out, _ = _run(
        capsys,
        "deploy",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "--gpus",
        "8",
        "--context",
        "4096",
        "--budget",
        "50ms",
        "--batch",
        "64",
    )
    assert rc == 0 and "every option at batch 64" in out and "in flight" in out


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--batch", "0"], "0 is outside 1..1,024"),
        (["--batch", "1025"], "1025 is outside 1..1,024"),
        (["--batch", "8", "--disaggregate", "8:8", "--gpus", "16"], "give --batch or --disaggregate, not both"),
    ],
)
def test_a_bad_batch_is_one_line(extra, words, capsys):
    argv = ["deploy", "-m", "llama-3.1-70b", "-s", "hgx-h100", *extra]
    if "--gpus" not in extra:
        argv += ["--gpus", "8"]
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and words in err and "Traceback" not in err


# --- --impl: deploy forces the all-reduce as plan does (issue 24) ---------------------------------


@pytest.mark.parametrize("impl", ["nccl", "custom"])
def test_impl_prices_what_plan_prices(impl, catalog, capsys):
    """deploy --impl X at --batch 64 (decode at 4096) prices 1xTP8, 2xTP4 and 4xTP2 at plan --impl X's
    per-step ITL of the same TP at batch 64 (one computation: rel 1e-12). On HGX H100 vLLM's rule
    takes its one-/two-shot kernels for a 1 MiB batch-64 all-reduce (64 x 8192 x 2 B), so forcing
    NCCL must change the TP8 step, and the launch lines then switch the custom kernels off."""
    from shardbudget.decide.planner import plan

    rc, out, _ = _run(
        capsys,
        "deploy",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "--gpus",
        "8",
        "--context",
        "4096",
        "--budget",
        "none",
        "--batch",
        "64",
        "--impl",
        impl,
        "--json",
    )
    d = json.loads(out)
    assert rc == 0 and d["impl"] == impl
    rows = {
        x.key: x
        for x in plan(
            sb_request(
                "llama-3.1-70b", "hgx-h100", batches=[64], context=4096, budget_s=None, impl=impl, catalog=catalog
            )
        )
        .results[0]
        .rows
    }
    by = {(o["replicas"], o["tp"], o["pp"]): o for o in d["options"]}
    for label, tp in (((1, 8, 1), 8), ((2, 4, 1), 4), ((4, 2, 1), 2)):
        assert by[label]["itl_s"] == pytest.approx(rows[(tp, 1, 1, 1)].itl_s, rel=1e-12), label
    default = deploy(
        sb_request("llama-3.1-70b", "hgx-h100", budget_s=None, work=Workload(context=4096), catalog=catalog),
        gpus=8,
        batch=64,
    )
    tp8 = next(o for o in default.options if o.label() == "1xTP8")
    if impl == "nccl":
        assert by[(1, 8, 1)]["itl_s"] != pytest.approx(tp8.itl_s, rel=1e-6)
        # vLLM 0.34.0's FlashInfer all-reduce is not gated by --disable-custom-all-reduce: the env turns it off
        assert (
            "--disable-custom-all-reduce" in d["launch"]["vllm"]
            and "VLLM_ALLREDUCE_USE_FLASHINFER=0" in d["launch"]["vllm"]
        )
        assert "VLLM_ALLREDUCE_USE_FLASHINFER" not in default.launch["vllm"]
    rc, _, err = _run(capsys, "deploy", "-m", "llama-3.1-70b", "-s", "hgx-h100", "--gpus", "8", "--impl", "nvls")
    assert rc == 2 and "unknown implementation 'nvls'" in err and len(err.strip().splitlines()) == 1


def test_memory_parts_are_plans(catalog, capsys):
    """deploy --memory: each option's bytes per GPU with their parts, from the same memory_need that
    gave its total; at --batch 64, context 4096, 1xTP8's parts are plan's TP8 row at batch 64 (rel
    1e-12). By hand: 70B bf16 over 8 GPUs is ~17.6 GB of weights per GPU (141.1 GB / 8)."""
    from shardbudget.decide.planner import plan

    r = deploy(
        sb_request("llama-3.1-70b", "hgx-h100", budget_s=0.050, work=Workload(context=4096), catalog=catalog),
        gpus=8,
        batch=64,
    )
    row = next(
        x
        for x in plan(
            sb_request("llama-3.1-70b", "hgx-h100", batches=[64], context=4096, budget_s=None, catalog=catalog)
        )
        .results[0]
        .rows
        if x.key == (8, 1, 1, 1)
    )
    tp8 = next(o for o in r.options if o.label() == "1xTP8")
    assert tp8.memory.keys() == row.memory.keys()
    for part, value in row.memory.items():
        assert tp8.memory[part] == pytest.approx(value, rel=1e-12), part
    assert tp8.memory["weights"] == pytest.approx(141.1e9 / 8, rel=0.01)
    for o in r.options:
        assert o.memory["total"] == pytest.approx(o.mem_bytes_per_gpu, rel=1e-12)
        assert o.memory["total"] == pytest.approx(sum(v for k, v in o.memory.items() if k != "total"), rel=1e-12)
    rc, out, _ = _run(
        capsys,
        "deploy",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "--gpus",
        "8",
        "--context",
        "4096",
        "--budget",
        "50ms",
        "--batch",
        "64",
        "--json",
    )
    d = json.loads(out)
    assert rc == 0 and [o["memory"] for o in d["options"]] == [o.memory for o in r.options]
    rc, out, _ = _run(
        capsys,
        "deploy",
        "-m",
        "llama-3.1-70b",
        "-s",
        "hgx-h100",
        "--gpus",
        "8",
        "--context",
        "4096",
        "--budget",
        "50ms",
        "--batch",
        "64",
        "--memory",
    )
    table = out[out.index("memory per GPU, GB") :]
    line = next(x for x in table.splitlines() if "1xTP8" in x)
    assert rc == 0 and f"{tp8.memory['weights'] / 1e9:.2f}" in line and f"{tp8.memory['total'] / 1e9:.2f}" in line
