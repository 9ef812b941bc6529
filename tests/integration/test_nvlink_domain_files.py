"""Issue 38, item 5 on an NVL72 rack: the cluster files run what was priced over NVLink across trays.

An NVL72 rack's NVLink domain spans 18 hosts (compute trays of 4 GPUs). Pods on several of them
reach each other over NVLink only through an IMEX channel, which Kubernetes gives through NVIDIA's
DRA driver (a ComputeDomain, its ResourceClaimTemplate claimed by each pod), and only where they sit
in one NVLink partition (node label nvidia.com/gpu.clique). Without it NCCL leaves NVLink for the
network, and what runs is not what was priced.

* A TP group over trays: one ComputeDomain, every server pod claims its channel and is held to
  one partition; no RDMA (nothing leaves the rack). A group inside one tray: none of it.
* The rack's disaggregated layout (DeepSeek-V3, 40 GPUs prefill and 4 decode servers of 8 over 2
  trays each): written as manifests (it was refused), the decode side a LeaderWorkerSet whose
  leaders the front end addresses, each worker's rank from the LWS environment, run under stubs.
* Every pod template valid under the Kubernetes 1.33 schema; every name within its limit.
* Slurm: the script says what the cluster must provide (one rack, IMEX) and stays valid bash.
"""

from __future__ import annotations

import re
import subprocess

import pytest

from k8s_schema import pod_templates, valid_docs
from launch_stubs import ip, make_stubs, run_pod
from shardbudget.decide.deploy import deploy
from shardbudget.decide.launch import build_launches
from shardbudget.decide.launch.emit import k8s_files, slurm_files
from shardbudget.decide.launch.k8s import (
    CLIQUE_LABEL,
    DOMAIN_LABEL,
    IMEX_CLAIM,
    LWS_GROUP_KEY,
    MPI_REFUSAL,
    NAME_MAX,
    NvlinkDomain,
    lws_name_limit,
)
from shardbudget.decide.request import request
from shardbudget.errors import PlanError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import load_model

kv = pytest.importorskip("kubernetes_validate")
NVL72 = "gb200-nvl72"


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def _launches(cat, model: str, gpus: int, **kw):
    result = deploy(request(model, NVL72, catalog=cat, **kw.pop("req", {})), gpus=gpus, **kw)
    return result, build_launches(result, load_model(model), cat.system(NVL72), cat)[0]


@pytest.fixture(scope="module")
def tp_over_trays(cat):
    """Llama-3.1-405B on 16 GPUs of the rack: two TP8 servers, each over two trays."""
    result, launches = _launches(cat, "llama-3.1-405b", 16)
    assert result.best.label() == "2xTP8"
    return result, launches


@pytest.fixture(scope="module")
def rack_split(cat):
    """DeepSeek-V3 on the whole rack, prefill:decode 40:32 (issue 38's layout): decode 4 servers of 8
    GPUs over 2 trays each."""
    result, launches = _launches(
        cat, "deepseek-v3", 72, disaggregate=(40, 32), req={"budget_s": 0.030, "ttft_budget_s": 2.0}
    )
    assert result.best.label() == "4xTP8/EP8/DP8"
    return result, launches


def _template(d: dict) -> list[tuple[dict, dict]]:
    return pod_templates(d)


def _docs(text: str) -> list[dict]:
    docs = valid_docs(text)
    assert all(len(d["metadata"]["name"]) <= NAME_MAX for d in docs)
    return docs


def _servers(docs: list[dict]) -> list[tuple[dict, dict]]:
    """(labels, pod spec) of every server pod (pods with GPUs)."""
    return [
        (meta.get("labels", {}), pod)
        for d in docs
        for meta, pod in _template(d)
        if "nvidia.com/gpu" in pod["containers"][0].get("resources", {}).get("limits", {})
    ]


def _claims_one_domain(docs: list[dict]) -> dict:
    (domain,) = [d for d in docs if d["kind"] == "ComputeDomain"]
    template = domain["spec"]["channel"]["resourceClaimTemplate"]["name"]
    servers = _servers(docs)
    assert servers
    for labels, pod in servers:
        assert pod["resourceClaims"] == [{"name": IMEX_CLAIM, "resourceClaimTemplateName": template}]
        assert pod["containers"][0]["resources"]["claims"] == [{"name": IMEX_CLAIM}]
        (term,) = pod["affinity"]["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
        assert term["topologyKey"] == CLIQUE_LABEL
        # the selector matches the pod's own labels: the first pod of the set may land, the rest follow it
        assert term["labelSelector"]["matchLabels"].items() <= labels.items()
        assert labels[DOMAIN_LABEL] == domain["metadata"]["name"]
        (node_term,) = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"
        ]
        assert node_term["matchExpressions"] == [{"key": CLIQUE_LABEL, "operator": "Exists"}]
        limits = pod["containers"][0]["resources"]["limits"]
        assert set(limits) == {"nvidia.com/gpu"}  # nothing leaves the rack: no RDMA NIC asked for
    return domain


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_a_tp_group_over_trays_claims_the_imex_channel_of_one_domain(tp_over_trays, engine):
    result, launches = tp_over_trays
    text = k8s_files(launches[engine], result)["manifests.yaml"]
    docs = _docs(text)
    domain = _claims_one_domain(docs)
    assert domain["spec"]["numNodes"] == launches[engine].nodes == 4  # 2 servers x 2 trays
    assert "IMEX channel of ComputeDomain" in text.split("\napiVersion", 1)[0]


def test_a_server_inside_one_tray_claims_nothing(cat):
    result, launches = _launches(cat, "llama-3.1-8b", 4)
    for engine in ("vllm", "sglang"):
        text = k8s_files(launches[engine], result)["manifests.yaml"]
        docs = _docs(text)
        assert not [d for d in docs if d["kind"] == "ComputeDomain"] and "IMEX" not in text
        assert all("resourceClaims" not in pod and "affinity" not in pod for _, pod in _servers(docs))


@pytest.mark.parametrize("engine", ["vllm", "sglang"])
def test_the_racks_disaggregated_layout_is_written_with_a_leaderworkerset_decode(rack_split, engine, tmp_path):
    result, launches = rack_split
    launch = launches[engine]
    docs = _docs(k8s_files(launch, result)["manifests.yaml"])
    _claims_one_domain(docs)
    kinds = {(d["kind"], d["metadata"]["name"]) for d in docs}
    assert len(kinds) == len(docs)
    (lws,) = [d for d in docs if d["kind"] == "LeaderWorkerSet"]
    name = lws["metadata"]["name"]
    assert name.endswith("-decode") and len(name) <= lws_name_limit(4)
    assert lws["spec"]["replicas"] == 4 and lws["spec"]["leaderWorkerTemplate"]["size"] == 2  # 8 GPUs over 2 trays
    assert ("Service", name) not in kinds  # the LWS controller makes the headless Service of its name
    (prefill,) = [d for d in docs if d["kind"] == "StatefulSet"]
    assert prefill["spec"]["replicas"] == 10
    front = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]["containers"][0]
    for i in range(4):  # the front end addresses each decode server's leader
        assert re.search(rf"\b{name}-{i}\.{name}\b", front["command"][-1])
    # each pod's command under stubs: the worker's rank and the leader's address from the LWS environment
    stubs = make_stubs(tmp_path / "bin")
    worker_cmd = lws["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["command"]
    (rec,) = run_pod(worker_cmd, tmp_path / "w1", stubs, worker=1)
    words = rec[3:]
    if engine == "vllm":
        assert words[words.index("--data-parallel-start-rank") + 1] == "4"
        assert words[words.index("--data-parallel-address") + 1] == ip(0)
    else:
        assert words[words.index("--node-rank") + 1] == "1"
        assert words[words.index("--dist-init-addr") + 1] == f"{ip(0)}:5000"


def test_tensorrt_llms_sides_over_several_trays_are_refused(rack_split):
    result, launches = rack_split
    with pytest.raises(PlanError, match=re.escape(MPI_REFUSAL[:40])):
        k8s_files(launches["trtllm"], result)


def test_groups_of_a_deployment_over_racks_are_each_held_to_one_partition():
    """Over several racks (one_partition False), a group's pods share a partition through the LWS
    group's label, and a one-tray pod is free to land in any."""
    domain = NvlinkDomain(name="m-imex", template="m-imex-channel", hosts=36, one_partition=False)
    (term,) = domain.affinity(group=True)["podAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["matchLabelKeys"] == [LWS_GROUP_KEY] and term["topologyKey"] == CLIQUE_LABEL
    assert "podAffinity" not in domain.affinity(group=False)
    pod = domain.claim({"containers": [{"name": "s", "image": "i", "resources": {"limits": {}}}]}, group=True)
    kv.validate(
        {"apiVersion": "v1", "kind": "PodTemplate", "metadata": {"name": "t"}, "template": {"spec": pod}},
        "1.33",
        strict=True,
    )


def test_the_slurm_script_names_the_rack_and_imex(rack_split, tp_over_trays, tmp_path):
    for result, launches in (rack_split, tp_over_trays):
        text = slurm_files(launches["vllm"], result)["launch.sbatch"]
        head = text.split("set -euo pipefail", 1)[0]
        assert "IMEX channel" in head and "--segment=" in head
        assert not re.search(r"^#SBATCH --segment", text, re.M)  # advice, not a directive a cluster may refuse
        path = tmp_path / "launch.sbatch"
        path.write_text(text)
        assert subprocess.run(["bash", "-n", str(path)]).returncode == 0
