"""Kubernetes pieces of `deploy --emit k8s` (emit.py): a pod of one server (its GPUs, a memory-backed
/dev/shm, the engine's image, the option files), names, and the manifests of a disaggregated
deployment, in the shape each engine documents: prefill and decode servers the front end addresses
one by one, and the front end that joins them.

* Each side (prefill / decode; TensorRT-LLM's context / generation) is a StatefulSet of its
  servers, one server per pod on one node, with a headless Service: server i answers at the stable
  name `<side>-<i>.<side>` (a StatefulSet pod's DNS name), which is what the front end is given,
  as the printed commands give it `$NODE<i>_IP:port`.
* The front end (vLLM's proxy, sglang-router in PD mode, `trtllm-serve disaggregated`) is a
  Deployment without GPUs, with a Service on the router port.

Per engine:
* vLLM: the NixlConnector's decode server pulls the KV cache from the prefill server's NIXL side
  channel at the address the prefill server reports, VLLM_NIXL_SIDE_CHANNEL_HOST (default
  localhost, vllm/envs.py at 0.19.0): each server pod sets it to its own IP (the downward API). The
  proxy is a file of vLLM's repository (tests/v1/kv_connector/nixl_integration/toy_proxy_server.py),
  not in the image: its pod fetches it at the pinned tag when it starts (egress to GitHub).
* SGLang: sglang-router with each prefill server's URL and bootstrap port and each decode server's
  URL, pip-installed at the release its flag table was read at where the image lacks it.
* TensorRT-LLM: `trtllm-serve disaggregated -c` with the config's urls set to the pods' names.

A side whose server spans several nodes is refused (--emit slurm writes it).
"""

from __future__ import annotations

import re

from ...engines.cli_tables import load_cli
from ...engines.presets import load_engine
from ...errors import PlanError
from ...quoting import one_line, shell_quote
from .flags import check_argv, programs
from .layout import ROUTER_PORT, SERVER_PORT, Launch, Step, program_words, shell_word, to_yaml

SHM_SIZE = "64Gi"
"""/dev/shm for the engines' NCCL and IPC buffers: Docker's 64 MB default is what vLLM's and SGLang's
docs tell users to raise (--shm-size / --ipc=host)."""


def manifest_name(result, what: str) -> str:
    """A Kubernetes object name (DNS label: lower-case letters, digits, '-', at most 63)."""
    base = re.sub(r"[^a-z0-9-]+", "-", f"{result.model}-{what}".lower()).strip("-")
    return base[:63].rstrip("-")


def pod_spec(launch: Launch, command: str, gpus: int, resource: str, config: str | None) -> dict:
    """A pod of one server: its GPUs, a memory-backed /dev/shm, the engine's image and NCCL's
    environment, the option files of ConfigMap `config` copied beside it."""
    mounts = [{"name": "shm", "mountPath": "/dev/shm"}]
    volumes = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}]
    if config:
        mounts.append({"name": "options", "mountPath": "/options"})
        volumes.append({"name": "options", "configMap": {"name": config}})
        command = f"cp /options/* . && {command}"
    container = {"name": "server", "image": launch.image, "command": ["/bin/sh", "-c", command],
                 "env": [{"name": k, "value": v} for k, v in launch.env_all],
                 "ports": [{"containerPort": 8000}],
                 "resources": {"limits": {resource: gpus}, "requests": {resource: gpus}},
                 "volumeMounts": mounts}
    return {"containers": [container], "volumes": volumes}


def gpu_resource(launch: Launch) -> str:
    return "amd.com/gpu" if "rocm" in launch.image else "nvidia.com/gpu"


SIDES = {"prefill": "prefill", "decode": "decode", "context": "prefill", "generation": "decode"}
"""A server step's first word -> its side."""
PROXY_URL = ("https://raw.githubusercontent.com/vllm-project/vllm/v{version}/tests/v1/kv_connector/"
             "nixl_integration/toy_proxy_server.py")


def _sides(launch: Launch) -> dict[str, list[Step]]:
    """Each side's server steps, in order (keyed by the word the engine uses for it)."""
    out: dict[str, list[Step]] = {}
    for s in launch.steps:
        word = s.what.split(" server")[0]
        if s.program == "serve" and word in SIDES:
            if "rank" in s.what or "--headless" in s.argv or "--nnodes" in s.argv:
                raise PlanError(f"--emit k8s: a disaggregated {word} server over several nodes is not written as "
                                f"manifests (each side is a StatefulSet of one-node servers); use --emit slurm")
            out.setdefault(word, []).append(s)
    return out


def _set(argv: tuple[str, ...], flag: str, value: object) -> tuple[str, ...]:
    """argv with `flag`'s value replaced (a pod listens on the same ports as every other pod)."""
    words = list(argv)
    if flag in words:
        words[words.index(flag) + 1] = str(value)
    return tuple(words)


def _server_command(launch: Launch, step: Step) -> str:
    argv = _set(step.argv, "--port", SERVER_PORT)
    if launch.engine == "sglang":
        argv = _set(argv, "--disaggregation-bootstrap-port", _bootstrap())
    return launch.command(Step(**{**step.__dict__, "argv": argv, "gpus": None, "background": False}))


def _bootstrap() -> int:
    return int(load_cli("sglang").disaggregation.bootstrap_port)


def _front(launch: Launch, hosts: dict[str, list[str]]) -> tuple[str, dict]:
    """The front end's shell command and the option files it reads (TensorRT-LLM's config)."""
    pre, dec = hosts["prefill"], hosts["decode"]
    if launch.engine == "vllm":
        argv = ("--host", "0.0.0.0", "--port", str(ROUTER_PORT), "--prefiller-hosts", *pre,
                "--prefiller-ports", *[str(SERVER_PORT)] * len(pre), "--decoder-hosts", *dec,
                "--decoder-ports", *[str(SERVER_PORT)] * len(dec))
        check_argv(programs("vllm")["proxy"], argv)
        url = PROXY_URL.format(version=load_engine("vllm").version)
        fetch = "python3 -c " + shell_quote(f'import urllib.request as u; u.urlretrieve("{url}", "toy_proxy_server.py")')
        return f"{fetch} && {_line(launch.commands['proxy'], argv)}", {}
    if launch.engine == "sglang":
        argv = ["--pd-disaggregation"]
        for h in pre:
            argv += ["--prefill", f"http://{h}:{SERVER_PORT}", str(_bootstrap())]
        for h in dec:
            argv += ["--decode", f"http://{h}:{SERVER_PORT}"]
        argv += ["--host", "0.0.0.0", "--port", str(ROUTER_PORT)]
        check_argv(programs("sglang")["router"], argv)
        package = load_cli("sglang").programs["router"].package
        install = f"(python3 -c 'import sglang_router' 2>/dev/null || python3 -m pip install -q {shell_quote(package)})"
        return f"{install} && {_line(launch.commands['router'], argv)}", {}
    config = {"hostname": "0.0.0.0", "port": ROUTER_PORT, "backend": "pytorch",
              "context_servers": {"num_instances": len(pre), "urls": [f"{h}:{SERVER_PORT}" for h in pre]},
              "generation_servers": {"num_instances": len(dec), "urls": [f"{h}:{SERVER_PORT}" for h in dec]}}
    return _line(launch.commands["disaggregated"], ("-c", "trtllm-disagg.yaml")), {"trtllm-disagg.yaml": to_yaml(config)}


def _line(command: str, argv) -> str:
    return " ".join([*program_words(command), *(shell_word(w) for w in argv)])


def _side_docs(launch: Launch, name: str, steps: list[Step], *, resource: str, config: str | None,
               prefill: bool) -> list[dict]:
    gpus = len(steps[0].gpus) if steps[0].gpus is not None else launch.gpus_per_node
    labels = {"app": name}
    pod = pod_spec(launch, _server_command(launch, steps[0]), gpus, resource, config)
    container = pod["containers"][0]
    ports = [{"name": "http", "port": SERVER_PORT, "targetPort": SERVER_PORT}]
    if launch.engine == "vllm":
        container["env"].append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                                 "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})
    if launch.engine == "sglang" and prefill:
        container["ports"].append({"containerPort": _bootstrap()})
        ports.append({"name": "bootstrap", "port": _bootstrap(), "targetPort": _bootstrap()})
    return [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
             "spec": {"clusterIP": "None", "selector": labels, "ports": ports}},
            {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": name, "labels": labels},
             "spec": {"serviceName": name, "replicas": len(steps), "podManagementPolicy": "Parallel",
                      "selector": {"matchLabels": labels},
                      "template": {"metadata": {"labels": labels}, "spec": pod}}}]


def disaggregated_manifests(launch: Launch, result) -> dict[str, str]:
    """manifests.yaml of a disaggregated deployment (module doc)."""
    sides = _sides(launch)
    resource = gpu_resource(launch)
    names = {word: manifest_name(result, word) for word in sides}
    hosts = {SIDES[w]: [f"{names[w]}-{i}.{names[w]}" for i in range(len(steps))] for w, steps in sides.items()}
    command, front_files = _front(launch, hosts)
    files = {**{k: v for k, v in launch.files if k != "trtllm-disagg.yaml"}, **front_files}
    config = manifest_name(result, "options") if files else None
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": config}, "data": files}] if config else []
    for word, steps in sides.items():
        docs += _side_docs(launch, names[word], steps, resource=resource, config=config, prefill=SIDES[word] == "prefill")
    front = manifest_name(result, "router")
    pod = pod_spec(launch, command, 0, resource, config if front_files else None)
    del pod["containers"][0]["resources"]  # the front end needs no GPU
    pod["containers"][0]["ports"] = [{"containerPort": ROUTER_PORT}]
    labels = {"app": front}
    docs += [{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": front, "labels": labels},
              "spec": {"replicas": 1, "selector": {"matchLabels": labels},
                       "template": {"metadata": {"labels": labels}, "spec": pod}}},
             {"apiVersion": "v1", "kind": "Service", "metadata": {"name": front},
              "spec": {"selector": labels, "ports": [{"port": ROUTER_PORT, "targetPort": ROUTER_PORT}]}}]
    header = "# " + one_line(
        f"{launch.label}: {result.model} on {result.system}, disaggregated ({result.prefill['gpus']} GPUs prefill, "
        f"{result.best.label()} decode); written by shardbudget deploy. Each side is a StatefulSet (server i at "
        f"<side>-i.<side>); the front end is Service {front}, port {ROUTER_PORT}.") + "\n"
    return {"manifests.yaml": header + "\n---\n".join(to_yaml(d) for d in docs) + "\n"}


__all__ = ["PROXY_URL", "SHM_SIZE", "SIDES", "disaggregated_manifests", "gpu_resource", "manifest_name", "pod_spec"]
