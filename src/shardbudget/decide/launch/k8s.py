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
  not in the image: its pod fetches it at a pinned commit when it starts (egress to GitHub) and runs
  it only where its SHA-256 is the pinned one (PROXY_SHA256).
* SGLang: sglang-router with each prefill server's URL and bootstrap port and each decode server's
  URL, pip-installed at the release its flag table was read at where the image lacks it.
* TensorRT-LLM: `trtllm-serve disaggregated -c` with the config's urls set to the pods' names.

A side whose servers span several nodes is a LeaderWorkerSet (as `k8s_files` writes an aggregated
server over several nodes); a TensorRT-LLM one (an MPI job) is refused: MPI_REFUSAL.

Where the NVLink domain spans hosts (an NVL72 rack's 4-GPU compute trays) and servers talk across
them, every server pod claims the IMEX channel of one ComputeDomain (NvlinkDomain) and is kept to
one NVLink partition by pod affinity on the nodes' clique label.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from ...engines.cli_tables import load_cli
from ...errors import PlanError
from ...quoting import one_line, shell_quote
from .flags import check_argv, programs
from .vllm import PROXY_COMMIT, PROXY_SHA256
from .layout import ROUTER_PORT, SERVER_PORT, Launch, Step, program_words, shell_word, to_yaml

MPI_REFUSAL = (
    "--emit k8s: a TensorRT-LLM replica over several nodes is one MPI job (mpirun, or srun --mpi=pmix, "
    "starting trtllm-llmapi-launch on every rank), and its published image brings no launcher that spans "
    "pods (no SSH server, no MPI operator): use --emit slurm"
)

SHM_SIZE = "64Gi"
"""/dev/shm for the engines' NCCL and IPC buffers: Docker's 64 MB default is what vLLM's and SGLang's
docs tell users to raise (--shm-size / --ipc=host)."""


NAME_MAX = 52
"""The longest object name written: a StatefulSet's pods carry the label controller-revision-hash,
`<name>-<10-character hash>`, which must be a label value of at most 63 characters, so a StatefulSet
named longer than 52 never creates a pod (kubernetes/kubernetes#64023); every object is held to it."""


def manifest_name(result, what: str, *, limit: int = NAME_MAX) -> str:
    """A Kubernetes object name: a DNS-1035 label (lower-case letters, digits and '-', starting with
    a letter, as a Service needs) of at most NAME_MAX characters, ending in `what` (server, options,
    prefill, decode, router: never cut, so a deployment's objects never share a name). Where the
    model's name does not survive as it is (cut to fit, or other characters turned into '-'), six
    hex digits of its SHA-256 follow what is kept, so two models never share a name either. `limit`:
    a shorter bound (a LeaderWorkerSet's, `lws_name_limit`)."""
    model = str(result.model)
    slug = re.sub(r"[^a-z0-9]+", "-", model.lower()).strip("-")
    if not slug[:1].isalpha():
        slug = f"m-{slug}".rstrip("-")
    if slug == model and len(slug) + 1 + len(what) <= limit:
        return f"{slug}-{what}"
    digest = hashlib.sha256(model.encode("utf-8", "surrogateescape")).hexdigest()[:6]
    keep = slug[: limit - len(what) - len(digest) - 2].rstrip("-")
    return f"{keep}-{digest}-{what}"


def lws_name_limit(replicas: int) -> int:
    """The longest name of a LeaderWorkerSet of `replicas` groups: group i's workers are StatefulSet
    `<name>-<i>` (the LWS controller's naming), held to NAME_MAX itself."""
    return NAME_MAX - 1 - len(str(max(replicas - 1, 0)))


IMEX_API = "resource.nvidia.com/v1beta1"
"""The API group of NVIDIA's DRA driver for GPUs (kubernetes-sigs/dra-driver-nvidia-gpu), whose
ComputeDomain gives the pods of one workload an IMEX channel: the fabric memory handles that NCCL's
NVLink transport, torch's symmetric memory and the KV transfer need between the hosts (compute
trays) of one NVLink domain (NVIDIA GPU Operator docs, "NVIDIA DRA Driver for GPUs: ComputeDomains").
Without one, memory is not shared over NVLink across trays and NCCL falls back to the network."""
CLIQUE_LABEL = "nvidia.com/gpu.clique"
"""The node label the GPU operator sets to a node's NVLink partition (cluster UUID.clique id): pods
that reach each other over NVLink must share its value (the pod affinity's topology key)."""
DOMAIN_LABEL = "shardbudget.io/nvlink-domain"
"""The label on every pod of a ComputeDomain's deployment, which its pod affinity selects."""
LWS_GROUP_KEY = "leaderworkerset.sigs.k8s.io/group-key"
"""The label the LWS controller sets to one value on the pods of one group (leader and workers)."""
IMEX_CLAIM = "imex-channel"
"""The name, inside a pod, of its claim on the ComputeDomain's channel."""


@dataclass(frozen=True, kw_only=True)
class NvlinkDomain:
    """The ComputeDomain a deployment's server pods share where they reach each other over the
    NVLink of several hosts (an NVL72 rack's trays): a TP / EP group over trays, or a KV hand-off
    between a prefill and a decode server priced on NVLink."""

    name: str
    """The ComputeDomain's name."""
    template: str
    """The ResourceClaimTemplate the driver makes for it, which each pod claims."""
    hosts: int
    """The hosts (Kubernetes nodes) the deployment's servers use."""
    one_partition: bool
    """Every server in one NVLink partition (the deployment fits one domain: every pod reaches
    every other, as priced); else each group of a LeaderWorkerSet is kept in one."""

    def doc(self) -> dict:
        # numNodes: the driver's older releases wait for this many IMEX daemons before a pod starts;
        # the newer ones (IMEXDaemonsWithDNSNames) read it no more (the driver's API reference)
        return {
            "apiVersion": IMEX_API,
            "kind": "ComputeDomain",
            "metadata": {"name": self.name},
            "spec": {"numNodes": self.hosts, "channel": {"resourceClaimTemplate": {"name": self.template}}},
        }

    def affinity(self, *, group: bool) -> dict:
        """Pods on nodes of an NVLink partition; with the deployment's other pods in one partition
        (one_partition), or with their LWS group's (`group`); else the partition is free."""
        nodes = {
            "requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchExpressions": [{"key": CLIQUE_LABEL, "operator": "Exists"}]}]
            }
        }
        out: dict = {"nodeAffinity": nodes}
        if self.one_partition or group:
            term: dict = {"labelSelector": {"matchLabels": {DOMAIN_LABEL: self.name}}, "topologyKey": CLIQUE_LABEL}
            if not self.one_partition:
                term["matchLabelKeys"] = [LWS_GROUP_KEY]
            out["podAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [term]}
        return out

    def claim(self, pod: dict, *, group: bool) -> dict:
        """`pod` (a pod_spec) with the channel claimed by its server container and the affinity."""
        pod["resourceClaims"] = [{"name": IMEX_CLAIM, "resourceClaimTemplateName": self.template}]
        pod["containers"][0]["resources"]["claims"] = [{"name": IMEX_CLAIM}]
        pod["affinity"] = self.affinity(group=group)
        return pod

    def note(self) -> str:
        where = "all in one NVLink partition" if self.one_partition else "each multi-host group in one NVLink partition"
        return (
            f"Pods reach each other over NVLink across hosts through the IMEX channel of ComputeDomain "
            f"{self.name} (NVIDIA's DRA driver for GPUs, ComputeDomains enabled), {where} (node label "
            f"{CLIQUE_LABEL}), as priced; without it NCCL leaves NVLink for the network."
        )


def nvlink_domain(launch: Launch, result, *, needed: bool) -> NvlinkDomain | None:
    """The deployment's ComputeDomain where its NVLink domain spans hosts and `needed` (its servers
    talk across hosts), else None."""
    if launch.hosts_per_nvlink_domain <= 1 or not needed:
        return None
    return NvlinkDomain(
        name=manifest_name(result, "imex"),
        template=manifest_name(result, "imex-channel"),
        hosts=launch.nodes,
        one_partition=launch.nodes <= launch.hosts_per_nvlink_domain,
    )


def pod_labels(labels: dict, domain: NvlinkDomain | None) -> dict:
    """A server pod template's labels: `labels`, and the domain's where there is one."""
    return {**labels, DOMAIN_LABEL: domain.name} if domain else labels


RDMA_RESOURCES = {
    "infiniband": ("rdma/hca_shared_devices_a", None),
    "roce": ("rdma/hca_shared_devices_a", None),
    "efa": ("vpc.amazonaws.com/efa", "nics"),
}
"""The device plugin's resource that puts a node's RDMA NICs in a pod, by scale-out fabric kind, and
how many a pod asks for (None: 1; "nics": the node's NICs). InfiniBand and RoCE: NVIDIA's
k8s-rdma-shared-dev-plugin (github.com/Mellanox/k8s-rdma-shared-dev-plugin, deployed by NVIDIA's
Network Operator), whose example configuration names its resource rdma/hca_shared_devices_a, one
shared by every pod of a node; EFA: aws-efa-k8s-device-plugin's vpc.amazonaws.com/efa, one per
interface (AWS's EFA on EKS guide). A cluster whose plugin names it otherwise: --rdma-resource."""
HF_SECRET = "hf-token"
"""The Secret the server pods read the Hugging Face token from (key `token`, optional: a model that
is not gated needs none); made once per namespace by the user, never written by deploy."""


@dataclass(frozen=True, kw_only=True)
class K8sOptions:
    """What `--emit k8s` asks of the cluster beyond the GPUs (deploy's --rdma-resource, --host-network)."""

    rdma_resource: str | None = None
    """The RDMA device plugin's resource name (None: RDMA_RESOURCES' for the system's fabric)."""
    host_network: bool = False
    """Pods on the node's own network (hostNetwork): NCCL and the KV hand-off see the NICs' own
    addresses and interfaces, where the cluster's pod network does not carry RDMA."""

    def __post_init__(self):
        if self.rdma_resource is not None and not _RESOURCE.fullmatch(self.rdma_resource):
            raise PlanError(
                f"--rdma-resource {self.rdma_resource!r} is not an extended resource name (DOMAIN/NAME, "
                f"e.g. rdma/hca_shared_devices_a: lower-case DNS domain, then letters, digits, '-', "
                f"'_', '.')"
            )


_RESOURCE = re.compile(
    r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/"
    r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?"
)
"""An extended resource's name as the API server takes it: a DNS subdomain, '/', a qualified name."""


def rdma_request(launch: Launch, options: K8sOptions) -> dict:
    """{resource: count} a server pod of a group that talks across nodes asks for ({} on a system
    with no RDMA scale-out fabric)."""
    kind, nics = launch.scale_out
    if kind is None:  # nothing leaves the NVLink node (an NVL72 rack's trays reach each other over NVLink)
        return {}
    if options.rdma_resource:
        return {options.rdma_resource: 1}
    if kind not in RDMA_RESOURCES:
        return {}
    name, count = RDMA_RESOURCES[kind]
    return {name: nics if count == "nics" else 1}


def pod_spec(
    launch: Launch,
    command: str,
    gpus: int,
    resource: str,
    config: str | None,
    *,
    options: K8sOptions | None = None,
    rdma: bool = False,
    server: bool = True,
) -> dict:
    """A pod of one server: its GPUs, a memory-backed /dev/shm, the engine's image and NCCL's
    environment, the option files of ConfigMap `config` copied beside it, the Hugging Face token
    from Secret HF_SECRET, a local checkpoint from the node at its own path (hostPath); with `rdma`
    (a group that talks across nodes) the RDMA NICs and IPC_LOCK, which RDMA needs to pin memory;
    the node's network with `options.host_network`. `server` False: the front end (no GPU)."""
    options = options or K8sOptions()
    mounts = [{"name": "shm", "mountPath": "/dev/shm"}]
    volumes = [{"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE}}]
    if config:
        mounts.append({"name": "options", "mountPath": "/options"})
        volumes.append({"name": "options", "configMap": {"name": config}})
        command = f"cp /options/* . && {command}"
    env = [{"name": k, "value": v} for k, v in launch.env_all]
    container = {
        "name": "server",
        "image": launch.image,
        "command": ["/bin/sh", "-c", command],
        "env": env,
        "ports": [{"containerPort": 8000}],
    }
    if server:
        env.append(
            {"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {"name": HF_SECRET, "key": "token", "optional": True}}}
        )
        extra = rdma_request(launch, options) if rdma else {}
        container["resources"] = {"limits": {resource: gpus, **extra}, "requests": {resource: gpus, **extra}}
        rdma = bool(extra)
        for k, path in enumerate(launch.local_paths):
            mounts.append({"name": f"checkpoint-{k}", "mountPath": path, "readOnly": True})
            volumes.append({"name": f"checkpoint-{k}", "hostPath": {"path": path, "type": "Directory"}})
        if rdma:
            container["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    container["volumeMounts"] = mounts
    pod = {"containers": [container], "volumes": volumes}
    if options.host_network:
        if server and gpus < launch.gpus_per_node:
            raise PlanError(
                f"--host-network: servers of {gpus} GPU{'s' if gpus != 1 else ''} share a node of {launch.gpus_per_node}, and on "
                f"the node's network their pods would all bind port {SERVER_PORT}; drop --host-network "
                f"(or use --emit slurm, whose servers take one port each)"
            )
        pod.update({"hostNetwork": True, "dnsPolicy": "ClusterFirstWithHostNet"})
    return pod


def cluster_notes(launch: Launch, options: K8sOptions, *, rdma: bool, domain: NvlinkDomain | None = None) -> str:
    """The header's lines on what the cluster must provide: the token's Secret, the RDMA device
    plugin where a group talks across nodes, the IMEX channel where pods talk over NVLink across
    hosts, the local checkpoint on every node."""
    lines = [
        f"A gated model reads HF_TOKEN from Secret {HF_SECRET} (key token), made once: kubectl create "
        f"secret generic {HF_SECRET} --from-literal=token=YOUR_TOKEN."
    ]
    if rdma and (request := rdma_request(launch, options)):
        plugin = ", ".join(request)
        lines.append(
            f"Pods of a group across nodes ask for {plugin} (the RDMA device plugin; another name: "
            f"--rdma-resource) and IPC_LOCK, so that NCCL reaches the NICs over RDMA as priced"
            + ("" if options.host_network else "; --host-network puts them on the nodes' network")
            + "."
        )
    if domain is not None:
        lines.append(domain.note())
    for path in launch.local_paths:
        lines.append(f"Every GPU node must hold {path} (mounted from the node).")
    return "".join("# " + one_line(line) + "\n" for line in lines)


def lws_command(launch: Launch, step: Step, first: int) -> str:
    """A step's command inside a LeaderWorkerSet's pod: the device plugin picks its GPUs (no
    CUDA_VISIBLE_DEVICES); the head's address and the worker's rank come from LeaderWorkerSet's
    environment, put in the words that hold them (not found in the text, where a model's name could
    match). `first`: the node of the group's head."""
    bare = Step(**{**step.__dict__, "gpus": None, "background": False})
    argv, raw = step.argv, {}
    if "--node-rank" in argv:
        raw[argv.index("--node-rank") + 1] = "$LWS_WORKER_INDEX"
    if "--data-parallel-size-local" in argv and "--data-parallel-start-rank" in argv:
        local = int(argv[argv.index("--data-parallel-size-local") + 1])
        raw[argv.index("--data-parallel-start-rank") + 1] = f"$((LWS_WORKER_INDEX * {local}))"
    return launch.command(bare, addresses={first: "LWS_LEADER_ADDRESS"}, raw=raw)


def gpu_resource(launch: Launch) -> str:
    return "amd.com/gpu" if "rocm" in launch.image else "nvidia.com/gpu"


SIDES = {"prefill": "prefill", "decode": "decode", "context": "prefill", "generation": "decode"}
"""A server step's first word -> its side."""
PROXY_URL = (
    "https://raw.githubusercontent.com/vllm-project/vllm/{commit}/tests/v1/kv_connector/"
    "nixl_integration/toy_proxy_server.py"
)


def proxy_fetch() -> str:
    """The shell command that downloads the proxy at PROXY_COMMIT and writes it only where its
    SHA-256 is PROXY_SHA256 (else the pod exits 1, naming both digests)."""
    url = PROXY_URL.format(commit=PROXY_COMMIT)
    code = (
        "import hashlib, sys, urllib.request as u; "
        f'd = u.urlopen("{url}").read(); h = hashlib.sha256(d).hexdigest(); '
        f'h == "{PROXY_SHA256}" or sys.exit("toy_proxy_server.py: sha256 " + h + " is not the pinned '
        f'{PROXY_SHA256}"); open("toy_proxy_server.py", "wb").write(d)'
    )
    return "python3 -c " + shell_quote(code)


_SERVER = re.compile(r"server (\d+)")


def _sides(launch: Launch) -> dict[str, list[list[Step]]]:
    """Each side's servers (keyed by the word the engine uses for the side), each its steps in
    node order: one, or its head and then one per further node."""
    out: dict[str, dict[str, list[Step]]] = {}
    for s in launch.steps:
        word = s.what.split(" server")[0]
        if s.program == "serve" and word in SIDES:
            number = _SERVER.search(s.what)
            out.setdefault(word, {}).setdefault(number.group(1) if number else s.what, []).append(s)
    return {word: list(servers.values()) for word, servers in out.items()}


def _set(argv: tuple[str, ...], flag: str, value: object) -> tuple[str, ...]:
    """argv with `flag`'s value replaced (a pod listens on the same ports as every other pod)."""
    words = list(argv)
    if flag in words:
        words[words.index(flag) + 1] = str(value)
    return tuple(words)


def _server_command(launch: Launch, step: Step, first: int | None = None) -> str:
    """A side's server step in its pod, on the ports every pod listens on; `first`: the head's node
    of a server over several nodes (its words from LeaderWorkerSet's environment, lws_command)."""
    argv = _set(step.argv, "--port", SERVER_PORT)
    if launch.engine == "sglang":
        argv = _set(argv, "--disaggregation-bootstrap-port", _bootstrap())
    step = Step(**{**step.__dict__, "argv": argv, "gpus": None, "background": False})
    return launch.command(step) if first is None else lws_command(launch, step, first)


def _bootstrap() -> int:
    return int(load_cli("sglang").disaggregation.bootstrap_port)


def _front(launch: Launch, hosts: dict[str, list[str]]) -> tuple[str, dict]:
    """The front end's shell command and the option files it reads (TensorRT-LLM's config)."""
    pre, dec = hosts["prefill"], hosts["decode"]
    if launch.engine == "vllm":
        argv = (
            "--host",
            "0.0.0.0",
            "--port",
            str(ROUTER_PORT),
            "--prefiller-hosts",
            *pre,
            "--prefiller-ports",
            *[str(SERVER_PORT)] * len(pre),
            "--decoder-hosts",
            *dec,
            "--decoder-ports",
            *[str(SERVER_PORT)] * len(dec),
        )
        check_argv(programs("vllm")["proxy"], argv)
        return f"{proxy_fetch()} && {_line(launch.commands['proxy'], argv)}", {}
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
    config = {
        "hostname": "0.0.0.0",
        "port": ROUTER_PORT,
        "backend": "pytorch",
        "context_servers": {"num_instances": len(pre), "urls": [f"{h}:{SERVER_PORT}" for h in pre]},
        "generation_servers": {"num_instances": len(dec), "urls": [f"{h}:{SERVER_PORT}" for h in dec]},
    }
    return _line(launch.commands["disaggregated"], ("-c", "trtllm-disagg.yaml")), {
        "trtllm-disagg.yaml": to_yaml(config)
    }


def _line(command: str, argv) -> str:
    return " ".join([*program_words(command), *(shell_word(w) for w in argv)])


def _side_docs(
    launch: Launch,
    name: str,
    servers: list[list[Step]],
    *,
    resource: str,
    config: str | None,
    prefill: bool,
    options: K8sOptions,
    domain: NvlinkDomain | None,
) -> list[dict]:
    """A side's objects: a StatefulSet of one-node servers with its headless Service, or a
    LeaderWorkerSet of servers over several nodes (whose controller makes the headless Service of
    the same name: the leader of group i answers at `<name>-<i>.<name>` either way)."""
    head = servers[0][0]
    span = len(servers[0])
    gpus = len(head.gpus) if head.gpus is not None and span == 1 else launch.gpus_per_node
    labels = {"app": name}
    # the KV cache moves between pods (NIXL, Mooncake, UCX) over the NICs where they may sit on other nodes
    rdma = _across_nodes(launch)

    def pod(step: Step) -> dict:
        spec = pod_spec(
            launch,
            _server_command(launch, step, None if span == 1 else head.node),
            gpus,
            resource,
            config,
            options=options,
            rdma=rdma,
        )
        container = spec["containers"][0]
        if launch.engine == "vllm":
            container["env"].append(
                {"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}}
            )
        if launch.engine == "sglang" and prefill and step is head:
            container["ports"].append({"containerPort": _bootstrap()})
        return domain.claim(spec, group=span > 1) if domain else spec

    if span > 1:
        worker = pod(servers[0][1])
        return [
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "replicas": len(servers),
                    "leaderWorkerTemplate": {
                        "size": span,
                        "leaderTemplate": {
                            "metadata": {"labels": pod_labels({**labels, "role": "leader"}, domain)},
                            "spec": pod(head),
                        },
                        "workerTemplate": {"metadata": {"labels": pod_labels(labels, domain)}, "spec": worker},
                    },
                },
            }
        ]
    ports = [{"name": "http", "port": SERVER_PORT, "targetPort": SERVER_PORT}]
    if launch.engine == "sglang" and prefill:
        ports.append({"name": "bootstrap", "port": _bootstrap(), "targetPort": _bootstrap()})
    return [
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {"clusterIP": "None", "selector": labels, "ports": ports},
        },
        {
            "apiVersion": "apps/v1",
            "kind": "StatefulSet",
            "metadata": {"name": name, "labels": labels},
            "spec": {
                "serviceName": name,
                "replicas": len(servers),
                "podManagementPolicy": "Parallel",
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": pod_labels(labels, domain)}, "spec": pod(head)},
            },
        },
    ]


def _across_nodes(launch: Launch) -> bool:
    return launch.scale_out[0] is not None


def disaggregated_manifests(launch: Launch, result, options: K8sOptions | None = None) -> dict[str, str]:
    """manifests.yaml of a disaggregated deployment (module doc)."""
    if any(s.wrapper for s in launch.steps):
        raise PlanError(MPI_REFUSAL)
    sides = _sides(launch)
    resource = gpu_resource(launch)
    names = {
        word: manifest_name(result, word, limit=lws_name_limit(len(servers)) if len(servers[0]) > 1 else NAME_MAX)
        for word, servers in sides.items()
    }
    hosts = {SIDES[w]: [f"{names[w]}-{i}.{names[w]}" for i in range(len(servers))] for w, servers in sides.items()}
    # the KV hand-off between trays of one NVLink domain is priced on NVLink (disagg.kv_handoff_s)
    domain = nvlink_domain(launch, result, needed=launch.nodes > 1)
    command, front_files = _front(launch, hosts)
    files = {**{k: v for k, v in launch.files if k != "trtllm-disagg.yaml"}, **front_files}
    config = manifest_name(result, "options") if files else None
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": config}, "data": files}] if config else []
    if domain is not None:
        docs.append(domain.doc())
    for word, servers in sides.items():
        docs += _side_docs(
            launch,
            names[word],
            servers,
            resource=resource,
            config=config,
            prefill=SIDES[word] == "prefill",
            options=options,
            domain=domain,
        )
    front = manifest_name(result, "router")
    pod = pod_spec(launch, command, 0, resource, config if front_files else None, options=options, server=False)
    pod["containers"][0]["ports"] = [{"containerPort": ROUTER_PORT}]
    labels = {"app": front}
    docs += [
        {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": front, "labels": labels},
            "spec": {
                "replicas": 1,
                "selector": {"matchLabels": labels},
                "template": {"metadata": {"labels": labels}, "spec": pod},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": front},
            "spec": {"selector": labels, "ports": [{"port": ROUTER_PORT, "targetPort": ROUTER_PORT}]},
        },
    ]
    header = (
        "# "
        + one_line(
            f"{launch.label}: {result.model} on {result.system}, disaggregated ({result.prefill['gpus']} GPUs prefill, "
            f"{result.best.label()} decode); written by shardbudget deploy. Each side is a StatefulSet of one-node "
            f"servers or a LeaderWorkerSet of servers over several nodes (server i at <side>-i.<side>; "
            f"LeaderWorkerSet needs its controller, sigs.k8s.io/lws); the front end is Service {front}, port "
            f"{ROUTER_PORT}."
        )
        + "\n"
    )
    notes = cluster_notes(launch, options, rdma=_across_nodes(launch), domain=domain)
    return {"manifests.yaml": header + notes + "\n---\n".join(to_yaml(d) for d in docs) + "\n"}


__all__ = [
    "CLIQUE_LABEL",
    "DOMAIN_LABEL",
    "HF_SECRET",
    "IMEX_API",
    "IMEX_CLAIM",
    "LWS_GROUP_KEY",
    "MPI_REFUSAL",
    "NvlinkDomain",
    "K8sOptions",
    "NAME_MAX",
    "PROXY_COMMIT",
    "PROXY_SHA256",
    "PROXY_URL",
    "RDMA_RESOURCES",
    "SHM_SIZE",
    "SIDES",
    "cluster_notes",
    "disaggregated_manifests",
    "gpu_resource",
    "lws_command",
    "lws_name_limit",
    "manifest_name",
    "nvlink_domain",
    "pod_labels",
    "pod_spec",
    "proxy_fetch",
    "rdma_request",
]
