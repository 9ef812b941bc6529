"""The commands deploy prints and writes: every step parses under its engine's flag table (engines/*.toml
[cli], read from the engine's source at the pinned release), golden texts per engine for a single-node
dense, a multi-node MoE (EP + attention DP), a disaggregated and a speculative deployment, engines only
where they run, exit codes, and the Slurm / Kubernetes files (bash -n; the Kubernetes OpenAPI schema).

Regenerate the goldens after an intended change: SHARDBUDGET_REGEN=1 pytest tests/integration/test_launch.py
"""

from __future__ import annotations

import dataclasses
import os
import re
import subprocess
from pathlib import Path

import pytest

from shardbudget import cli as cli_module
from shardbudget.decide.deploy import Workload, deploy
from shardbudget.decide.launch import LaunchError, build_launches, check_launch
from shardbudget.decide.launch.emit import k8s_files, slurm_files
from shardbudget.decide.launch.flags import check_argv, programs
from shardbudget.decide.launch.k8s import PROXY_COMMIT, PROXY_SHA256
from shardbudget.errors import PlanError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import load_model
from shardbudget.step.settings import PlanSettings
from shardbudget.step.speculative import Speculation
from shardbudget.decide.request import request

GOLDEN = Path(__file__).parent / "golden" / "launch"
REGEN = os.environ.get("SHARDBUDGET_REGEN") == "1"


@pytest.fixture(scope="module")
def catalog():
    return load_catalog()


def _as_chosen(result, want) -> object:
    """The result with its best option replaced by the first meeting option `want` accepts."""
    o = next(o for o in result.options if o.meets_budget and want(o))
    return dataclasses.replace(result, best=o)


def _launches(result, model: str, system: str, catalog):
    return build_launches(result, load_model(model), catalog.system(system), catalog)


@pytest.fixture(scope="module")
def cases(catalog):
    """name -> (launches, skipped) for the four kinds of deployment the issue names."""
    dense = deploy(request("llama-3.1-70b", "hgx-h100", budget_s=0.030, catalog=catalog), gpus=8)
    moe = deploy(request("deepseek-v3", "hgx-h200", budget_s=0.100, catalog=catalog), gpus=32)
    moe = _as_chosen(moe, lambda o: o.ep > 1 and o.dp > 1 and o.tp * o.pp > 8)  # a replica over nodes
    disagg = deploy(
        request("llama-3.1-70b", "hgx-h100", budget_s=0.050, catalog=catalog), gpus=16, disaggregate=(4, 12)
    )
    spec = deploy(
        request(
            "deepseek-v3",
            "hgx-h200",
            budget_s=0.050,
            catalog=catalog,
            work=Workload(speculation=Speculation(method="mtp", draft_tokens=2, acceptance=0.8)),
        ),
        gpus=16,
    )
    spec = _as_chosen(spec, lambda o: o.pp == 1)  # SGLang runs no speculation with PP (test below)
    return {
        "dense-single-node": (_launches(dense, "llama-3.1-70b", "hgx-h100", catalog), dense),
        "moe-multi-node-ep-dp": (_launches(moe, "deepseek-v3", "hgx-h200", catalog), moe),
        "disaggregated": (_launches(disagg, "llama-3.1-70b", "hgx-h100", catalog), disagg),
        "speculative-mtp": (_launches(spec, "deepseek-v3", "hgx-h200", catalog), spec),
    }


# --- every printed command parses ------------------------------------------------------------


def test_every_step_parses_under_its_engines_flag_table(cases):
    checked = 0
    for name, ((launches, skipped), _) in cases.items():
        assert set(launches) == {"vllm", "sglang", "trtllm"}, (name, skipped)
        for launch in launches.values():
            checked += check_launch(launch)
    assert checked >= 36  # 4 deployments x 3 engines, several steps each (39 today)


def test_the_check_refuses_what_the_parser_would(cases):
    """The check can fail: an unknown flag, a bad choice, a missing value, a flag twice."""
    serve = programs("vllm")["serve"]
    ok = ["m", "--tensor-parallel-size", "8", "--kv-cache-dtype", "fp8"]
    check_argv(serve, ok)
    for bad in (
        ok + ["--tensor-parallel", "8"],
        ["m", "--kv-cache-dtype", "fp9"],
        ["m", "--max-num-seqs"],
        ok + ["--tensor-parallel-size", "4"],
        ["m", "--max-num-seqs", "many"],
        ["m", "n"],
        ["m", "--speculative-config", '{"method":"eagle","num_spec_tokens":3}'],
    ):
        with pytest.raises(LaunchError):
            check_argv(serve, bad)
    with pytest.raises(LaunchError, match="environment"):
        check_argv(serve, ok, {"VLLM_ALLREDUCE_USE_SYMM_MEM": "yes"})


@pytest.mark.parametrize("name", ["dense-single-node", "moe-multi-node-ep-dp", "disaggregated", "speculative-mtp"])
@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_golden(cases, name, engine):
    text = cases[name][0][0][engine].text() + "\n"
    path = GOLDEN / f"{name}.{engine}.txt"
    if REGEN:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    assert text == path.read_text(), f"{path} differs (SHARDBUDGET_REGEN=1 after an intended change)"


# --- what the lines carry, by hand -----------------------------------------------------------


def test_multi_node_moe_lines_carry_ranks_and_addresses(cases):
    launches, result = cases["moe-multi-node-ep-dp"]
    o = result.best
    nodes = o.tp * o.pp // 8
    sg = [s for s in launches[0]["sglang"].steps if s.program == "serve"][:nodes]
    assert [s.argv[s.argv.index("--node-rank") + 1] for s in sg] == [str(n) for n in range(nodes)]
    assert all(s.argv[s.argv.index("--nnodes") + 1] == str(nodes) for s in sg)
    assert all("--enable-dp-attention" in s.argv and s.argv[s.argv.index("--dp-size") + 1] == str(o.dp) for s in sg)
    vl = [s for s in launches[0]["vllm"].steps if s.program == "serve"][:nodes]
    # vLLM: DP ranks of TP tp/dp x PP pp; each node holds 8 / (tp/dp x pp) of them, the others headless
    local = 8 // (o.tp // o.dp * o.pp)
    assert vl[0].argv[vl[0].argv.index("--data-parallel-size-local") + 1] == str(local)
    assert "--headless" not in vl[0].argv and all("--headless" in s.argv for s in vl[1:])
    tr = launches[0]["trtllm"]
    assert tr.steps[0].wrapper[0] == "mpirun" and "enable_attention_dp: true" in dict(tr.files)["trtllm-serve.yaml"]


def test_disaggregated_has_both_sides_kv_transfer_and_a_router(cases):
    (launches, _), result = cases["disaggregated"]
    pre = result.prefill
    for engine, router in (("vllm", "proxy"), ("sglang", "router"), ("trtllm", "disaggregated")):
        steps = launches[engine].steps
        assert steps[-1].program == router
        assert len([s for s in steps if s.program == "serve"]) >= pre["replicas"] + result.best.replicas
    assert sum("--disaggregation-mode prefill" in " ".join(s.argv) for s in launches["sglang"].steps) == pre["replicas"]
    assert all("NixlConnector" in " ".join(s.argv) for s in launches["vllm"].steps if s.program == "serve")
    assert "cache_transceiver_config" in dict(launches["trtllm"].files)["trtllm-context.yaml"]


def test_speculative_lines_name_the_method_and_steps(cases):
    (launches, _), _ = cases["speculative-mtp"]
    assert '"method":"mtp","num_speculative_tokens":2' in launches["vllm"].text()
    assert (
        "--speculative-algorithm NEXTN --speculative-num-steps 2 --speculative-eagle-topk 1 "
        "--speculative-num-draft-tokens 3" in launches["sglang"].text()
    )
    assert 'decoding_type: "MTP"' in launches["trtllm"].text()


def test_priced_precision_and_graphs_reach_the_lines(catalog):
    r = deploy(
        request(
            "llama-3.1-70b", "hgx-h100", budget_s=0.050, dtype="fp8", kv_dtype="fp8", engine="eager", catalog=catalog
        ),
        gpus=8,
    )
    launches, _ = build_launches(r, load_model("llama-3.1-70b"), catalog.system("hgx-h100"), catalog)
    vl, sg, tr = (launches[e].text() for e in ("vllm", "sglang", "trtllm"))
    assert "--quantization fp8" in vl and "--kv-cache-dtype fp8" in vl and "--enforce-eager" in vl
    assert "--quantization fp8" in sg and "--kv-cache-dtype fp8_e4m3" in sg
    assert "--disable-decode-cuda-graph" in sg and "--disable-prefill-cuda-graph" in sg  # 0.5.14: per phase
    assert "cuda_graph_config: null" in tr and 'dtype: "fp8"' in tr and "quantize at load" in tr
    for launch in launches.values():
        check_launch(launch)


def test_sglang_sets_the_static_fraction_only_where_the_plan_needs_it(catalog):
    """Qwen3-32B on 2x H100 under SGLang at 200 ms: the best plan's weights + KV pool need a static
    fraction of 0.99 (Option.memory_fraction), above SGLang's own default for TP2 on 80 GB
    (1 - reserved / memory: 512 MiB + 1.5 MiB x 8192 chunk + graphs + 256 MiB, ~0.84); the line
    sets it. Where the default suffices (Llama-3.1-70B TP8 at 30 ms) no flag is printed, so SGLang
    computes at launch the fraction it was priced at; the user's --gpu-memory-utilization wins."""
    r = deploy(request("qwen3-32b", "hgx-h100", budget_s=0.200, engine="sglang", catalog=catalog), gpus=2)
    assert r.best.memory_fraction == pytest.approx(0.99)
    launches, _ = build_launches(r, load_model("qwen3-32b"), catalog.system("hgx-h100"), catalog)
    assert "--mem-fraction-static 0.99" in launches["sglang"].text()
    assert re.search(
        r"--gpu-memory-utilization 1\.0\b", launches["vllm"].text()
    )  # vLLM 0.34.0's default (extensible KV cache)
    plain = deploy(request("llama-3.1-70b", "hgx-h100", budget_s=0.030, engine="sglang", catalog=catalog), gpus=8)
    assert plain.best.memory_fraction is None
    launches, _ = build_launches(plain, load_model("llama-3.1-70b"), catalog.system("hgx-h100"), catalog)
    assert "--mem-fraction-static" not in launches["sglang"].text()
    given = deploy(
        request(
            "llama-3.1-70b",
            "hgx-h100",
            budget_s=0.030,
            engine="sglang",
            catalog=catalog,
            settings=PlanSettings(memory_utilization=0.8),
        ),
        gpus=8,
    )
    launches, _ = build_launches(given, load_model("llama-3.1-70b"), catalog.system("hgx-h100"), catalog)
    assert re.search(r"--mem-fraction-static 0\.8\b", launches["sglang"].text())


def test_sglang_refuses_speculation_with_pp(catalog):
    r = deploy(
        request(
            "deepseek-v3",
            "hgx-h200",
            budget_s=0.050,
            catalog=catalog,
            work=Workload(speculation=Speculation(method="mtp", draft_tokens=2, acceptance=0.8)),
        ),
        gpus=16,
    )
    r = _as_chosen(r, lambda o: o.pp > 1)
    launches, skipped = build_launches(r, load_model("deepseek-v3"), catalog.system("hgx-h200"), catalog)
    assert "sglang" not in launches and "pipeline parallelism" in skipped["sglang"]
    assert {"vllm", "trtllm"} <= set(launches)


def test_trtllm_only_on_nvidia(catalog):
    r = deploy(request("llama-3.1-70b", "mi300x", budget_s=0.050, catalog=catalog), gpus=8)
    assert r.launch["trtllm"].startswith("# not run: TensorRT-LLM does not run on")
    assert "vllm serve" in r.launch["vllm"]


# --- the CLI: exit codes and refusals ---------------------------------------------------------


def test_vllm_runs_a_draft_model_at_its_pinned_release(catalog):
    """vLLM 0.19.0 runs a separate draft model (method draft_model; 0.11.0 refused it): the line names it."""
    r = deploy(
        request(
            "llama-3.1-70b",
            "hgx-h100",
            budget_s=0.050,
            catalog=catalog,
            work=Workload(
                speculation=Speculation(method="draft", draft_tokens=3, acceptance=0.7, draft_model="llama-3.2-1b")
            ),
        ),
        gpus=8,
    )
    launch = _launches(r, "llama-3.1-70b", "hgx-h100", catalog)[0]["vllm"]
    assert check_launch(launch) == 1
    assert '"method":"draft_model"' in launch.text() and '"model":"meta-llama/Llama-3.2-1B-Instruct"' in launch.text()


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli_module.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


@pytest.mark.parametrize(
    "args,expected",
    [
        (["--system", "mi300x", "--engine", "trtllm"], "TensorRT-LLM does not run on mi300x"),
        (["--speculative", "mtp"], "llama-3.1-70b has no multi-token-prediction layers"),
        (["--rate", "5"], "--rate finds the GPUs itself: give --rate or --gpus, not both"),
        (["--input-len", "0"], "--input-len 0: must be 1.."),
        (["--output-len", "0"], "--output-len 0: must be 1.."),
        (["--emit", "yaml", "x"], "unknown --emit kind 'yaml'"),
    ],
)
def test_refused_in_one_line_exit_2(capsys, args, expected):
    argv = ["deploy", "--model", "llama-3.1-70b", "--gpus", "8", *args]
    if "--system" not in args:
        argv += ["--system", "hgx-h100"]
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and out == "" and len(err.strip().splitlines()) == 1, (rc, out, err)
    assert expected in err


def test_nothing_meets_the_budget_is_exit_1_with_the_table(capsys):
    rc, out, err = _run(
        capsys, "deploy", "--model", "llama-3.1-70b", "--system", "hgx-h100", "--gpus", "8", "--budget", "5ms"
    )
    assert rc == 1, err
    assert "options (best first)" in out and "No way to spend 8 GPUs on llama-3.1-70b meets 5 ms TPOT" in out
    assert "the closest is 1xTP8" in out


def test_an_option_meets_the_budget_is_exit_0(capsys):
    rc, out, _ = _run(capsys, "deploy", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--gpus", "8")
    assert rc == 0 and "vllm serve" in out


# --- Slurm and Kubernetes files ---------------------------------------------------------------


def test_existing_dir_is_refused_without_force(capsys, tmp_path):
    argv = [
        "deploy",
        "--model",
        "llama-3.1-8b",
        "--system",
        "hgx-h100",
        "--gpus",
        "8",
        "--emit",
        "slurm",
        str(tmp_path),
    ]
    rc, out, err = _run(capsys, *argv)
    assert rc == 2 and "exists; pass --force" in err and out == ""
    rc, _, err = _run(capsys, *argv, "--force")
    assert rc == 0 and (tmp_path / "launch.sbatch").exists() and not list(tmp_path.glob(".*.tmp"))


@pytest.mark.parametrize("name", ["dense-single-node", "moe-multi-node-ep-dp", "disaggregated", "speculative-mtp"])
@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_slurm_script_parses_and_names_every_variable(cases, tmp_path, name, engine):
    (launches, _), result = cases[name]
    text = slurm_files(launches[engine], result)["launch.sbatch"]
    path = tmp_path / "launch.sbatch"
    path.write_text(text)
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True).returncode == 0
    assert text.count("srun ") == launches[engine].nodes  # one step per node
    used = set(re.findall(r"\$\{?([A-Za-z_][A-Za-z0-9_]*)", text))
    defined = set(re.findall(r"(?:export |mapfile -t )([A-Za-z_][A-Za-z0-9_]*)", text))
    defined |= set(re.findall(r"(?:^|; )([A-Za-z_][A-Za-z0-9_]*)=", text, re.M))  # a here-document's fill-in
    defined |= set(re.findall(r"(?:\{ |local |read -r )([A-Za-z_][A-Za-z0-9_]*)", text))  # the helpers' own
    defined |= set(re.findall(r"read -r [A-Za-z_]+ ([A-Za-z_][A-Za-z0-9_]*)", text))
    slurm = {"SLURM_SUBMIT_DIR", "SLURM_JOB_NODELIST"}  # set by sbatch
    token = {"HF_TOKEN_PATH", "HF_HOME", "HOME"}  # where huggingface_hub keeps the token, read with defaults
    assert used <= defined | slurm | token, used - defined - slurm - token
    assert "HF_TOKEN=hf_" not in text and not re.search(r"^wait\s*$", text, re.M)  # no token, no bare wait


def _pod_template_doc(name: str, template: dict) -> dict:
    return {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": name}, "template": template}


@pytest.mark.parametrize("name", ["dense-single-node", "moe-multi-node-ep-dp", "speculative-mtp"])
@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_k8s_manifests_validate_against_the_openapi_schema(cases, name, engine):
    kv = pytest.importorskip("kubernetes_validate")
    yaml = pytest.importorskip("yaml")
    (launches, _), result = cases[name]
    docs = list(yaml.safe_load_all(k8s_files(launches[engine], result)["manifests.yaml"]))
    kinds = [d["kind"] for d in docs]
    multi = launches[engine].nodes > 1 and result.best.tp * result.best.pp > 8
    assert ("LeaderWorkerSet" in kinds) == multi and ("Deployment" in kinds) == (not multi)
    for d in docs:
        if d["kind"] == "LeaderWorkerSet":
            # a CRD (sigs.k8s.io/lws api/leaderworkerset/v1): its fields by hand, its pods by the schema
            lwt = d["spec"]["leaderWorkerTemplate"]
            assert d["apiVersion"] == "leaderworkerset.x-k8s.io/v1" and isinstance(d["spec"]["replicas"], int)
            assert lwt["size"] == result.best.tp * result.best.pp // 8
            for key in ("leaderTemplate", "workerTemplate"):
                kv.validate(_pod_template_doc("t", lwt[key]), "1.33", strict=True)
                pod = lwt[key]["spec"]["containers"][0]
                assert pod["resources"]["limits"]["nvidia.com/gpu"] == 8
            assert "$LWS_LEADER_ADDRESS" in lwt["workerTemplate"]["spec"]["containers"][0]["command"][2]
        else:
            kv.validate(d, "1.33", strict=True)
    shm = [v for d in docs if d["kind"] == "Deployment" for v in d["spec"]["template"]["spec"]["volumes"]]
    assert all(v["emptyDir"]["medium"] == "Memory" for v in shm if v["name"] == "shm")


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_k8s_disaggregated_is_a_statefulset_per_side_and_its_front_end(cases, engine):
    """Each side's servers at stable pod names (StatefulSet + headless Service), the front end given
    every one of them; every document valid under the Kubernetes 1.33 schema."""
    kv = pytest.importorskip("kubernetes_validate")
    yaml = pytest.importorskip("yaml")
    (launches, _), result = cases["disaggregated"]
    docs = list(yaml.safe_load_all(k8s_files(launches[engine], result)["manifests.yaml"]))
    for d in docs:
        kv.validate(d, "1.33", strict=True)
    sets = {d["metadata"]["name"]: d for d in docs if d["kind"] == "StatefulSet"}
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    steps = [s for s in launches[engine].steps if s.program == "serve"]
    assert sum(d["spec"]["replicas"] for d in sets.values()) == len(steps)  # one pod per printed server
    pods = []
    for name, d in sets.items():
        assert services[name]["spec"]["clusterIP"] == "None" and d["spec"]["serviceName"] == name
        pods += [f"{name}-{i}.{name}:8000" for i in range(d["spec"]["replicas"])]
        gpus = d["spec"]["template"]["spec"]["containers"][0]["resources"]["limits"]["nvidia.com/gpu"]
        side = "prefill" if name.endswith("prefill") or name.endswith("context") else "decode"
        want = result.prefill["tp"] * result.prefill["pp"] if side == "prefill" else result.best.gpus_per_replica
        assert gpus == want
    front = next(d for d in docs if d["kind"] == "Deployment")
    container = front["spec"]["template"]["spec"]["containers"][0]
    assert "resources" not in container  # no GPU for the front end
    said = container["command"][2] + "".join(
        d["data"].get("trtllm-disagg.yaml", "") for d in docs if d["kind"] == "ConfigMap"
    )
    hosts = [p.split(":")[0] for p in pods]
    assert all(h in said for h in hosts), (hosts, said)
    if engine == "vllm":  # the NIXL side channel at the pod's own address
        env = sets[next(iter(sets))]["spec"]["template"]["spec"]["containers"][0]["env"]
        assert {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}} in env
        assert f"{PROXY_COMMIT}/tests/v1/kv_connector/nixl_integration/toy_proxy_server.py" in said
        assert PROXY_SHA256 in said  # run only where the download is the pinned file


def test_k8s_refuses_a_trtllm_replica_over_nodes_and_writes_one_on_a_node(cases):
    yaml = pytest.importorskip("yaml")
    (launches, _), result = cases["moe-multi-node-ep-dp"]
    with pytest.raises(PlanError, match="one MPI job .* use --emit slurm"):
        k8s_files(launches["trtllm"], result)
    (launches, _), result = cases["dense-single-node"]
    docs = list(yaml.safe_load_all(k8s_files(launches["trtllm"], result)["manifests.yaml"]))
    assert [d["kind"] for d in docs] == ["ConfigMap", "Deployment", "Service"]
    assert (
        docs[1]["spec"]["template"]["spec"]["containers"][0]["image"] == "nvcr.io/nvidia/tensorrt-llm/release:1.3.0rc20"
    )


def test_k8s_schema_check_can_fail():
    kv = pytest.importorskip("kubernetes_validate")
    bad = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "x"},
        "spec": {
            "replicas": "four",
            "selector": {"matchLabels": {"a": "b"}},
            "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c"}]}},
        },
    }
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, "1.33", strict=True)


def test_an_nvl72_launch_is_laid_out_on_its_hosts(catalog):
    """An NVL72 rack is one NVLink node but 18 hosts of 4 GPUs (systems.toml gpus_per_host): each line
    runs on one host and names only that host's GPUs; a TP8 replica is one server over two hosts (its
    engine's multi-node flags), never CUDA_VISIBLE_DEVICES=8..15 on "node 0"."""
    result = deploy(request("llama-3.1-405b", "gb200-nvl72", budget_s=0.030, dtype="fp8", catalog=catalog), gpus=72)
    assert (result.best.tp, result.best.pp, result.best.replicas) == (8, 1, 9)
    launches, skipped = _launches(result, "llama-3.1-405b", "gb200-nvl72", catalog)
    assert set(launches) == {"vllm", "sglang", "trtllm"}, skipped
    for engine, launch in launches.items():
        assert (launch.nodes, launch.gpus_per_node) == (18, 4), engine
        serves = [s for s in launch.steps if s.program == "serve"]
        assert all(s.gpus is None or max(s.gpus) < 4 for s in serves), engine
        # vLLM and SGLang start one process per host; TensorRT-LLM one mpirun per replica, on its first host
        assert sorted({s.node for s in serves}) == list(range(0, 18, 2 if engine == "trtllm" else 1)), engine
        check_launch(launch)
    rank_lines = [s for s in launches["vllm"].steps if "--nnodes" in s.argv]
    assert len(rank_lines) == 18 and all(s.argv[s.argv.index("--nnodes") + 1] == "2" for s in rank_lines)
    mpi = [s.wrapper for s in launches["trtllm"].steps if s.program == "serve"]
    assert len(mpi) == 9 and all(w[:2] == ("mpirun", "-H") and w[2].count(":4") == 2 for w in mpi)
