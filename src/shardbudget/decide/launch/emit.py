"""`deploy --emit slurm|k8s DIR`: ready-to-run files for the best option, from the same `Launch`
the printed commands come from.

* slurm: `launch.sbatch`, one `srun` step per node (each runs its node's commands), the nodes'
  addresses exported as the `NODE<i>_IP` placeholders the commands name, NCCL's environment, the
  engine's option files written as here-documents, the Hugging Face token passed on from the
  environment or its file (never written); the job ends with the status of the first node's step
  that fails, and stops, naming the node, where a node has no address. Submit it from DIR.
* k8s: `manifests.yaml`, per kind of server a Deployment (a server on one node) or a
  LeaderWorkerSet (a server over several nodes: the leader runs node 0's command, each worker its
  own, its rank from LWS_WORKER_INDEX and the head's address from LWS_LEADER_ADDRESS), each pod
  requesting its GPUs, a memory-backed /dev/shm and the engine's published image; a Service per
  server kind; a ConfigMap with the option files. A disaggregated deployment is a StatefulSet per
  side with its front end (k8s.py). Pods whose group talks across nodes ask for the RDMA NICs and
  IPC_LOCK (k8s.K8sOptions: the device plugin's resource, the nodes' network). A TensorRT-LLM
  replica over several nodes (an MPI job) is refused: MPI_REFUSAL.

Every file is written atomically; an existing DIR is refused without --force, a DIR that cannot
be written before any work. Names reach the files only quoted (`layout.shell_word`, `to_yaml`) or
in a `#` comment as one line (`quoting.one_line`); the job's name only in Slurm's safe characters.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ...atomic import write_atomic
from ...errors import OutputError, PlanError, UnknownNameError
from ...quoting import one_line, shell_quote
from .k8s import (
    MPI_REFUSAL,
    NAME_MAX,
    K8sOptions,
    cluster_notes,
    disaggregated_manifests,
    gpu_resource,
    lws_command,
    lws_name_limit,
    manifest_name,
    nvlink_domain,
    pod_labels,
    pod_spec,
)
from .layout import Launch, Step, heredoc, to_yaml

KINDS = ("slurm", "k8s")


def check_emit(kind: str, folder: Path, *, force: bool) -> Path:
    """Before any work: a known kind, and a folder that may be written (new, or --force), in a
    folder this process can write."""
    if kind not in KINDS:
        raise UnknownNameError("--emit kind", kind, KINDS)
    folder = Path(folder)
    if folder.exists() and not force:
        raise OutputError(f"{folder} exists; pass --force to write into it")
    if folder.exists() and not folder.is_dir():
        raise OutputError(f"cannot write into {folder}: it is a file")
    parent = folder.parent if str(folder.parent) else Path(".")
    if not parent.is_dir():
        raise OutputError(f"cannot write into {folder}: folder {parent} does not exist")
    where = folder if folder.exists() else parent
    if not os.access(where, os.W_OK | os.X_OK):  # a read-only mount too (EROFS)
        raise OutputError(f"cannot write into {folder}: folder {where} is not writable")
    return folder


def emit(result, kind: str, folder: Path, *, engine: str, force: bool, k8s: K8sOptions | None = None) -> list[Path]:
    """Write the files of the best option's launch for `engine` (eager: vLLM's) into `folder`. A
    write that fails leaves nothing of this run behind (the folder it made, the files it added) and
    is one line (OutputError)."""
    folder = check_emit(kind, folder, force=force)
    key = "vllm" if engine == "eager" else engine
    launch = result.launches.get(key)
    if launch is None:
        raise PlanError(f"no {key} launch to write: {result.launch.get(key, 'the engine has no launch builder')}")
    files = slurm_files(launch, result) if kind == "slurm" else k8s_files(launch, result, k8s)
    data = {name: text.encode("utf-8") for name, text in files.items()}  # names are UTF-8 (quoting.check_name)
    made = not folder.exists()
    new = [folder / name for name in data if not (folder / name).exists()]
    try:
        folder.mkdir(exist_ok=True)
        return [write_atomic(folder / name, payload, force=force) for name, payload in data.items()]
    except OSError as err:
        for path in new:
            path.unlink(missing_ok=True)
        if made:
            folder.rmdir()
        raise OutputError(f"cannot write into {folder}: {err.strerror or err}") from None


# --- Slurm ----------------------------------------------------------------------------------

ENDED = 'ENDED="$(mktemp -u)"; mkfifo -m 600 "$ENDED"; exec 3<>"$ENDED"; rm -f "$ENDED"'
"""A pipe (fd 3) each background step writes its exit status into when it ends, which the script
reads as they come: a failure is seen at once, whichever step it is, with no polling. `wait -n`
is not used: bash returns 127 for a job that ended before it was called (a non-interactive shell
keeps no job table), and a bare `wait` returns 0 whatever the steps returned."""


def node_script(launch: Launch, node: int) -> str:
    """What one node's `srun` step runs: its one command, or its commands in the background, the
    step ending with the status of the first that fails (0 once all end with 0)."""
    steps = [s for s in launch.steps if s.node == node]
    if len(steps) == 1:
        return launch.command(Step(**{**steps[0].__dict__, "background": False}))
    lines = [ENDED]
    lines += [
        "{ " + launch.command(Step(**{**s.__dict__, "background": False})) + '; echo "$?" >&3; } &' for s in steps
    ]
    lines.append(
        f"status=0; for ((k = 0; k < {len(steps)}; k++)); do read -r rc <&3; "
        'if ((rc)); then status=$rc; break; fi; done; exit "$status"'
    )
    return "\n".join(lines)


def _where(launch: Launch, result) -> str:
    """'2 x hgx-h100'; '18 hosts of 1 x gb200-nvl72' where a node holds several hosts (an NVL72's
    compute trays, each a Slurm node of its own)."""
    n = launch.nodes
    if launch.gpus_per_node * result.nodes >= result.gpus and n == result.nodes:
        return f"{n} x {result.system}"
    return f"{n} host{'s' if n > 1 else ''} of {result.nodes} x {result.system}"


def job_name(model: str) -> str:
    """The Slurm job's name: sbatch reads an #SBATCH line as shell-like words (a space starts another
    option), so the model's name keeps letters, digits, '.', '_' and '-', each run of others one '-'."""
    return "shardbudget-" + re.sub(r"[^A-Za-z0-9._-]+", "-", model)


SLURM_HELPERS = [
    'TOKEN_FILE="${HF_TOKEN_PATH:-${HF_HOME:-${HOME-}/.cache/huggingface}/token}"',
    'if [ -z "${HF_TOKEN-}" ] && [ -r "$TOKEN_FILE" ]; then HF_TOKEN="$(<"$TOKEN_FILE")"; fi',
    'if [ -n "${HF_TOKEN-}" ]; then export HF_TOKEN; fi',
    'address() { local ip; ip="$(getent hosts "${NODES[$1]}" | awk \'{print $1; exit}\')" || true; '
    'if [ -z "$ip" ]; then echo "launch.sbatch: getent hosts ${NODES[$1]} gave no address (node $1 of the job): '
    "the servers need every node's address\" >&2; exit 1; fi; printf '%s\\n' \"$ip\"; }",
]
"""The Slurm script's helpers: the Hugging Face token from the environment or huggingface_hub's
token file (HF_TOKEN_PATH, else HF_HOME/token: huggingface_hub's constants.py), exported to the
steps, never written into the script; `address`, node i's first address from getent, the job
stopped with the node named where it has none (an empty NODE<i>_IP would start servers that
rendezvous nowhere)."""


def _nvlink_domain_lines(launch: Launch) -> list[str]:
    """Comment lines where the job's hosts share an NVLink domain (an NVL72 rack's trays): what was
    priced needs them in one rack and an IMEX channel, which the cluster's Slurm provides, not the
    script (a directive the cluster's plugins do not know would refuse the job)."""
    per, n = launch.hosts_per_nvlink_domain, launch.nodes
    if per <= 1 or n <= 1:
        return []
    where = (
        f"all {n} hosts in one NVLink domain (with Slurm's topology/block plugin: sbatch --segment={n})"
        if n <= per
        else f"each server's hosts in one NVLink domain ({per} hosts each; topology/block's --segment)"
    )
    return [
        "# " + one_line(f"Priced on NVLink across hosts: {where}."),
        "# NCCL reaches NVLink across hosts only through an IMEX channel, from the cluster's IMEX setup (Slurm's",
        "# switch/nvidia_imex plugin, or a prolog that starts nvidia-imex with the job's nodes); without one it",
        "# falls back to the network.",
    ]


def _wait_steps(n: int) -> list[str]:
    """The end of the script: each node's step waited for through ENDED's pipe; the first that
    fails ends the job with its status, so Slurm marks it FAILED and stops the other steps."""
    return [
        f"status=0; for ((k = 0; k < {n}; k++)); do read -r rc node <&3; if ((rc)); then status=$rc; "
        'echo "launch.sbatch: the step on node $node (${NODES[$node]}) exited with status $rc: the job ends, '
        'and Slurm stops the other steps" >&2; break; fi; done',
        'exit "$status"',
    ]


def slurm_files(launch: Launch, result) -> dict[str, str]:
    n, gpn = launch.nodes, launch.gpus_per_node
    head = [
        "#!/bin/bash",
        f"#SBATCH --job-name={job_name(result.model)}",
        f"#SBATCH --nodes={n}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={gpn}",
        "#SBATCH --exclusive",
        "# "
        + one_line(
            f"{launch.label}: {result.model} on {_where(launch, result)}, {result.best.label()}; "
            f"written by shardbudget deploy."
        ),
        "# Submit from this folder (sbatch launch.sbatch); the engine must be installed on every node",
        "# " + one_line(f"(or start each node's step in its image: {launch.image})."),
        "# A gated model needs a Hugging Face token: export HF_TOKEN before sbatch (it passes the environment",
        "# on), or keep it in $HF_TOKEN_PATH (default ~/.cache/huggingface/token); it is never written here.",
        *_nvlink_domain_lines(launch),
        "set -euo pipefail",
        'cd "$SLURM_SUBMIT_DIR"',
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
    ]
    head += SLURM_HELPERS
    head += [f'NODE{i}_IP="$(address {i})"; export NODE{i}_IP' for i in range(n)]
    head += [f"export {k}={shell_quote(v)}" for k, v in launch.env_all]
    head += [heredoc(name, body) for name, body in launch.files]
    head.append(ENDED)
    for i in range(n):
        script = shell_quote(node_script(launch, i))
        head.append(
            f'{{ rc=0; srun --nodes=1 --ntasks=1 --nodelist="${{NODES[{i}]}}" bash -c {script} || rc=$?; '
            f'echo "$rc {i}" >&3; }} &'
        )
    head += _wait_steps(n)
    return {"launch.sbatch": "\n".join(head) + "\n"}


# --- Kubernetes -----------------------------------------------------------------------------


def k8s_files(launch: Launch, result, options: K8sOptions | None = None) -> dict[str, str]:
    """manifests.yaml (module doc); `options`: what the pods ask of the cluster beyond GPUs."""
    options = options or K8sOptions()
    if any(s.wrapper for s in launch.steps):
        raise PlanError(MPI_REFUSAL)
    if result.prefill is not None:
        return disaggregated_manifests(launch, result, options)
    resource = gpu_resource(launch)
    config = manifest_name(result, "options") if launch.files else None
    docs = []
    if config:
        docs.append({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": config}, "data": dict(launch.files)})
    # a router in front of several servers is the Service's job in Kubernetes
    launch = Launch(**{**launch.__dict__, "steps": tuple(s for s in launch.steps if s.program == "serve")})
    serve = [s for s in launch.steps if s.program == "serve"]
    heads = [s for s in serve if "--headless" not in s.argv and "rank" not in s.what]
    replica_nodes = _replica_nodes(launch)
    span = replica_nodes[0][1]
    gpus = launch.gpus_per_node if span > 1 or heads[0].gpus is None else len(heads[0].gpus)
    name = manifest_name(result, "server", limit=lws_name_limit(len(replica_nodes)) if span > 1 else NAME_MAX)
    labels = {"app": name}
    domain = nvlink_domain(launch, result, needed=span > 1)  # a group over trays of an NVL72 rack
    if span == 1:
        pod = pod_spec(launch, lws_command(launch, heads[0], heads[0].node), gpus, resource, config, options=options)
        docs.append(
            {
                "apiVersion": "apps/v1",
                "kind": "Deployment",
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "replicas": len(heads),
                    "selector": {"matchLabels": labels},
                    "template": {"metadata": {"labels": labels}, "spec": pod},
                },
            }
        )
    else:
        first = replica_nodes[0][0]
        lead_cmd = " && ".join(lws_command(launch, s, first) for s in launch.steps if s.node == first)
        worker = " && ".join(lws_command(launch, s, first) for s in launch.steps if s.node == first + 1)
        docs.append(
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": name, "labels": labels},
                "spec": {
                    "replicas": len(replica_nodes),
                    "leaderWorkerTemplate": {
                        "size": span,
                        "leaderTemplate": {
                            "metadata": {"labels": pod_labels({**labels, "role": "leader"}, domain)},
                            "spec": _group_pod(launch, lead_cmd, gpus, resource, config, options, domain),
                        },
                        "workerTemplate": {
                            "metadata": {"labels": pod_labels(labels, domain)},
                            "spec": _group_pod(launch, worker, gpus, resource, config, options, domain),
                        },
                    },
                },
            }
        )
        labels = {**labels, "role": "leader"}
    if domain is not None:
        docs.insert(len(docs) - 1, domain.doc())
    docs.append(
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": name},
            "spec": {"selector": labels, "ports": [{"port": 8000, "targetPort": 8000}]},
        }
    )
    header = (
        "# "
        + one_line(
            f"{launch.label}: {result.model} on {result.system}, {result.best.label()}; written by "
            f"shardbudget deploy. LeaderWorkerSet needs its controller (sigs.k8s.io/lws)."
        )
        + "\n"
    )
    return {
        "manifests.yaml": header
        + cluster_notes(launch, options, rdma=span > 1, domain=domain)
        + "\n---\n".join(to_yaml(d) for d in docs)
        + "\n"
    }


def _group_pod(launch: Launch, command: str, gpus: int, resource: str, config, options: K8sOptions, domain) -> dict:
    """A pod of a server over several nodes: the RDMA NICs where the group leaves the NVLink
    domain, the IMEX channel and the group's NVLink partition where it spans an NVL72's trays."""
    pod = pod_spec(launch, command, gpus, resource, config, options=options, rdma=True)
    return domain.claim(pod, group=True) if domain else pod


def _replica_nodes(launch: Launch) -> list[tuple[int, int]]:
    """(first node, nodes) of each server (a head step; a multi-node server's nodes follow it)."""
    firsts = sorted(
        {
            s.node
            for s in launch.steps
            if s.program == "serve" and "--headless" not in s.argv and not re.search(r"node rank [1-9]", s.what)
        }
    )
    nodes = launch.nodes
    bounds = firsts + [nodes]
    spans = [b - a for a, b in zip(bounds, bounds[1:])]
    per_node = sum(1 for s in launch.steps if s.program == "serve" and s.node == firsts[0])
    return [(a, max(1, n) if per_node == 1 else 1) for a, n in zip(firsts, spans)]


__all__ = ["KINDS", "MPI_REFUSAL", "check_emit", "emit", "job_name", "k8s_files", "node_script", "slurm_files"]
