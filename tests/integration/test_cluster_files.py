"""Issue 38, item 5: the cluster files run what was priced.

* Kubernetes: a TP group across nodes asks the RDMA device plugin for the NICs and adds IPC_LOCK
  (the resource name an option; the nodes' network on request); every object name is at most 52
  characters, a DNS-1035 label, and unique, with a realistic long Hub id and --disaggregate; the
  Hugging Face token comes from a Secret; a local checkpoint is mounted at its path; the vLLM proxy
  runs only where its download has the pinned SHA-256. Every document valid under the Kubernetes
  1.33 schema (kubernetes-validate, which carries the OpenAPI schema of each release).
* Slurm: the script, run under stub programs (tests/launch_stubs.py), exits with a failing server's
  status (all failing, or one of several on one node), stops with the node named where getent gives
  no address, and hands the token from huggingface_hub's file to the steps without writing it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from k8s_schema import valid_docs
from launch_stubs import make_stubs, run_slurm
from shardbudget import cli
from shardbudget.decide.deploy import deploy
from shardbudget.decide.launch import build_launches
from shardbudget.decide.launch import k8s as k8s_module
from shardbudget.decide.launch.emit import k8s_files, slurm_files
from shardbudget.decide.launch.k8s import NAME_MAX, K8sOptions, manifest_name, proxy_fetch
from shardbudget.decide.request import request
from shardbudget.errors import PlanError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import load_model

kv = pytest.importorskip("kubernetes_validate")
LLAMA_8B = Path(cli.__file__).parents[1] / "catalog" / "models" / "llama-3.1-8b.json"
AWQ = "hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4"
DNS_1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


@pytest.fixture(scope="module")
def tp16(cat):
    """Llama-3.1-405B as 1xTP16 over 2 x hgx-h100 (the issue's case): (result, launches)."""
    result = deploy(request("llama-3.1-405b", "hgx-h100", budget_s=0.050, catalog=cat), gpus=16)
    assert result.best.label() == "1xTP16"
    return result, build_launches(result, load_model("llama-3.1-405b"), cat.system("hgx-h100"), cat)[0]


@pytest.fixture(scope="module")
def disagg(cat):
    """The issue's names case: a long Hub id, --disaggregate 8:8 (result, launches)."""
    result = deploy(request("llama-3.1-70b", "hgx-h100", catalog=cat), gpus=16, disaggregate=(8, 8))
    result = dataclasses.replace(result, model=AWQ)
    return result, build_launches(result, load_model("llama-3.1-70b"), cat.system("hgx-h100"), cat)[0]


def _docs(text: str) -> list[dict]:
    return valid_docs(text)


def _pods(d: dict) -> list[dict]:
    spec = d.get("spec", {})
    if "template" in spec:
        return [spec["template"]["spec"]]
    lwt = spec.get("leaderWorkerTemplate")
    return [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]] if lwt else []


# --- Kubernetes -----------------------------------------------------------------------------------


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_tp_group_across_nodes_asks_for_rdma_and_ipc_lock(tp16, engine):
    result, launches = tp16
    docs = _docs(k8s_files(launches[engine], result)["manifests.yaml"])
    pods = [p for d in docs for p in _pods(d)]
    assert len(pods) == 2  # the leader's and the worker's
    for pod in pods:
        c = pod["containers"][0]
        assert c["resources"]["limits"] == {"nvidia.com/gpu": 8, "rdma/hca_shared_devices_a": 1}
        assert c["resources"]["requests"] == c["resources"]["limits"]
        assert c["securityContext"]["capabilities"]["add"] == ["IPC_LOCK"]
        assert {"name": "NCCL_IB_DISABLE", "value": "0"} in c["env"]
        assert "hostNetwork" not in pod
    options = K8sOptions(rdma_resource="nvidia.com/hostdev", host_network=True)
    docs = _docs(k8s_files(launches[engine], result, options)["manifests.yaml"])
    for pod in (p for d in docs for p in _pods(d)):
        assert pod["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": 8, "nvidia.com/hostdev": 1}
        assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"


def test_a_group_inside_a_node_asks_for_no_rdma(cat):
    result = deploy(request("llama-3.1-70b", "hgx-h100", catalog=cat), gpus=8)
    launch = build_launches(result, load_model("llama-3.1-70b"), cat.system("hgx-h100"), cat)[0]["vllm"]
    (pod,) = [p for d in _docs(k8s_files(launch, result)["manifests.yaml"]) for p in _pods(d)]
    assert set(pod["containers"][0]["resources"]["limits"]) == {"nvidia.com/gpu"}
    assert "securityContext" not in pod["containers"][0]


def test_the_nodes_network_is_refused_where_pods_would_share_a_nodes_ports(cat):
    result = deploy(request("llama-3.1-8b", "hgx-h100", catalog=cat), gpus=8)
    launches = build_launches(result, load_model("llama-3.1-8b"), cat.system("hgx-h100"), cat)[0]
    assert result.best.label() == "8xTP1"  # TensorRT-LLM: 8 servers of 1 GPU; SGLang: one of --dp-size 8
    with pytest.raises(PlanError, match="--host-network: servers of 1 GPU share a node of 8"):
        k8s_files(launches["trtllm"], result, K8sOptions(host_network=True))
    (pod,) = [
        p
        for d in _docs(k8s_files(launches["sglang"], result, K8sOptions(host_network=True))["manifests.yaml"])
        for p in _pods(d)
    ]
    assert pod["hostNetwork"] is True


def test_efa_asks_for_each_interface(tp16):
    result, launches = tp16
    launch = dataclasses.replace(launches["vllm"], scale_out=("efa", 32))
    pods = [p for d in _docs(k8s_files(launch, result)["manifests.yaml"]) for p in _pods(d)]
    assert all(p["containers"][0]["resources"]["limits"]["vpc.amazonaws.com/efa"] == 32 for p in pods)


@pytest.mark.parametrize("bad", ["rdma", "RDMA/ib", "rdma/", "-x/y", "rdma/ib\n", "a b/c"])
def test_a_resource_name_the_api_server_refuses_is_refused(bad):
    with pytest.raises(PlanError, match="--rdma-resource"):
        K8sOptions(rdma_resource=bad)


def test_the_options_need_emit_k8s(capsys):
    rc = cli.main(["deploy", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--gpus", "8", "--host-network"])
    out, err = capsys.readouterr()
    assert rc == 2 and out == "" and "--emit k8s" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("engine", ["vllm", "sglang", "trtllm"])
def test_names_fit_52_characters_and_never_collide(disagg, engine):
    result, launches = disagg
    docs = _docs(k8s_files(launches[engine], result)["manifests.yaml"])
    names = [(d["kind"], d["metadata"]["name"]) for d in docs]
    assert len(set(names)) == len(names)  # unique per kind, as the API server keys them
    for _, name in names:
        assert len(name) <= NAME_MAX and DNS_1035.fullmatch(name), name
    by_role = {
        w: manifest_name(result, w)
        for w in ("prefill", "decode", "router", "options", "context", "generation", "server")
    }
    assert len(set(by_role.values())) == len(by_role)
    sets = [d for d in docs if d["kind"] == "StatefulSet"]
    assert len(sets) == 2 and all(len(d["metadata"]["name"]) + 11 <= 63 for d in sets)  # controller-revision-hash


def test_two_long_ids_that_share_their_first_52_characters_get_two_names(disagg):
    result, _ = disagg
    a = dataclasses.replace(result, model=AWQ + "-variant-one-with-a-long-suffix")
    b = dataclasses.replace(result, model=AWQ + "-variant-two-with-a-long-suffix")
    assert manifest_name(a, "decode") != manifest_name(b, "decode")
    assert manifest_name(a, "decode").endswith("-decode") and len(manifest_name(a, "decode")) <= NAME_MAX
    short = dataclasses.replace(result, model="llama")
    assert manifest_name(short, "server") == "llama-server"  # a name that survives as it is stays readable
    assert DNS_1035.fullmatch(manifest_name(dataclasses.replace(result, model="01-ai/Yi-34B"), "server"))


def test_the_token_comes_from_a_secret_never_written(tp16):
    result, launches = tp16
    text = k8s_files(launches["vllm"], result)["manifests.yaml"]
    for pod in (p for d in _docs(text) for p in _pods(d)):
        ref = {
            "name": "HF_TOKEN",
            "valueFrom": {"secretKeyRef": {"name": "hf-token", "key": "token", "optional": True}},
        }
        assert ref in pod["containers"][0]["env"]
    assert "kubectl create secret generic hf-token" in text.split("\napiVersion", 1)[0]


def test_the_proxy_runs_only_where_its_download_is_the_pinned_file(tmp_path, monkeypatch):
    """The pod's fetch under a stand-in urllib serving given bytes: the pinned digest writes the
    file, any other content exits 1 naming both digests and writes nothing."""
    fake = tmp_path / "fake" / "urllib"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("")
    (fake / "request.py").write_text(
        "import io, os\n"
        "def urlopen(url):\n"
        "    assert url.startswith('https://raw.githubusercontent.com/vllm-project/vllm/')\n"
        "    return io.BytesIO(open(os.environ['SERVE'], 'rb').read())\n"
    )
    good = b"print('proxy')\n"
    monkeypatch.setattr(k8s_module, "PROXY_SHA256", hashlib.sha256(good).hexdigest())
    for content, rc in ((good, 0), (good + b"#", 1)):
        run = tmp_path / f"run{rc}"
        run.mkdir()
        (tmp_path / "served").write_bytes(content)
        env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(fake.parent), "SERVE": str(tmp_path / "served")}
        done = subprocess.run(
            ["sh", "-c", proxy_fetch().replace("python3 ", f"{shlex.quote(sys.executable)} ", 1)],
            cwd=run,
            env=env,
            capture_output=True,
            text=True,
        )
        assert done.returncode == rc, done.stderr
        assert (run / "toy_proxy_server.py").exists() == (rc == 0)
        if rc:
            assert "is not the pinned" in done.stderr


def test_a_local_checkpoint_is_served_by_its_path(tmp_path, cat, monkeypatch):
    folder = tmp_path / "Meta-Llama-3.1-8B-Instruct"
    folder.mkdir()
    (folder / "config.json").write_bytes(LLAMA_8B.read_bytes())
    monkeypatch.chdir(tmp_path)
    cfg = load_model("Meta-Llama-3.1-8B-Instruct")  # relative: served by its absolute path
    assert cfg.folder == str(folder)
    result = deploy(request(str(folder), "hgx-h100", catalog=cat), gpus=8)
    launches = build_launches(result, cfg, cat.system("hgx-h100"), cat)[0]
    assert f"vllm serve {folder} " in launches["vllm"].text()
    (pod,) = [p for d in _docs(k8s_files(launches["vllm"], result)["manifests.yaml"]) for p in _pods(d)]
    assert {"name": "checkpoint-0", "hostPath": {"path": str(folder), "type": "Directory"}} in pod["volumes"]
    assert {"name": "checkpoint-0", "mountPath": str(folder), "readOnly": True} in pod["containers"][0]["volumeMounts"]
    assert load_model("llama-3.1-8b").folder is None  # a shipped model: its Hub id


# --- Slurm ----------------------------------------------------------------------------------------


def _bin(tmp_path: Path, **programs: str) -> Path:
    """The stubs, with `programs` (name -> script text) in place of theirs."""
    bin_dir = make_stubs(tmp_path / "stubs")
    for name, text in programs.items():
        (bin_dir / name).write_text(text)
    return bin_dir


def _sbatch(text: str, cwd: Path, bin_dir: Path, nodes: int, **env: str) -> subprocess.CompletedProcess:
    cwd.mkdir(parents=True)
    (cwd / "launch.sbatch").write_text(text)
    (cwd.parent / f"{cwd.name}.log").mkdir()
    full = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "SB_LOG": str(cwd.parent / f"{cwd.name}.log"),
        "HOME": str(cwd),
        "SLURM_SUBMIT_DIR": str(cwd),
        "SLURM_JOB_NODELIST": f"n[0-{nodes - 1}]",
        "SB_NODES": str(nodes),
        **env,
    }
    return subprocess.run(["bash", "launch.sbatch"], cwd=cwd, env=full, capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_job_whose_servers_all_fail_exits_non_zero(tmp_path, tp16, engine):
    result, launches = tp16
    text = slurm_files(launches[engine], result)["launch.sbatch"]
    assert not re.search(r"^wait\s*$", text, re.M)
    program = "vllm" if engine == "vllm" else "python"  # python -m sglang.launch_server
    done = _sbatch(text, tmp_path / "run", _bin(tmp_path, **{program: "#!/bin/bash\nexit 3\n"}), 2)
    assert done.returncode == 3, done.stderr
    assert re.search(r"the step on node [01] \(n[01]\) exited with status 3", done.stderr)
    ok = _sbatch(text, tmp_path / "ok", _bin(tmp_path / "b"), 2)
    assert ok.returncode == 0, ok.stderr


def test_one_failing_server_of_several_on_a_node_fails_the_job(tmp_path, cat):
    """Node 0 of a disaggregated TensorRT-LLM deployment runs prefill servers and the front end:
    the front end failing (the servers stay up) ends the node's step, and the job, with its status."""
    result = deploy(request("llama-3.1-70b", "hgx-h100", budget_s=0.05, catalog=cat), gpus=16, disaggregate=(4, 12))
    launch = build_launches(result, load_model("llama-3.1-70b"), cat.system("hgx-h100"), cat)[0]["trtllm"]
    assert sum(s.node == 0 for s in launch.steps) > 1
    text = slurm_files(launch, result)["launch.sbatch"]
    serve = '#!/bin/bash\nif [ "$1" = disaggregated ]; then exit 5; fi\nsleep 0.5\n'  # the servers outlive it
    done = _sbatch(text, tmp_path / "run", _bin(tmp_path, **{"trtllm-serve": serve}), 2)
    assert done.returncode == 5 and "the step on node 0 (n0) exited with status 5" in done.stderr, done.stderr
    assert run_slurm(text, tmp_path / "ok", _bin(tmp_path / "b"), 2)  # the plain stubs: it runs through


def test_an_empty_node_address_stops_the_job_before_any_server(tmp_path, tp16):
    result, launches = tp16
    text = slurm_files(launches["vllm"], result)["launch.sbatch"]
    getent = '#!/bin/bash\n[ "$2" = n1 ] && exit 2\necho "10.0.0.1 $2"\n'
    done = _sbatch(text, tmp_path / "run", _bin(tmp_path, getent=getent), 2)
    assert done.returncode == 1 and "getent hosts n1 gave no address (node 1 of the job)" in done.stderr
    assert not list((tmp_path / "run.log").iterdir())  # no server started


def test_the_token_reaches_the_steps_from_its_file_and_is_never_written(tmp_path, tp16):
    result, launches = tp16
    text = slurm_files(launches["vllm"], result)["launch.sbatch"]
    seen = tmp_path / "seen"
    vllm = f'#!/bin/bash\nprintf "%s\\n" "${{HF_TOKEN-none}}" >> {shlex.quote(str(seen))}\n'
    cwd = tmp_path / "run"
    (cwd / ".cache" / "huggingface").mkdir(parents=True)
    (cwd / ".cache" / "huggingface" / "token").write_text("hf_secret_from_file\n")
    done = _sbatch(text, tmp_path / "run2", _bin(tmp_path, vllm=vllm), 2, HOME=str(cwd))
    assert done.returncode == 0, done.stderr
    assert seen.read_text().split() == ["hf_secret_from_file"] * 2
    seen.unlink()
    done = _sbatch(text, tmp_path / "run3", _bin(tmp_path / "b", vllm=vllm), 2, HF_TOKEN="hf_from_env")
    assert done.returncode == 0 and seen.read_text().split() == ["hf_from_env"] * 2
    assert "hf_" not in text
