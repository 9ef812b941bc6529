"""A deployment as the commands that start it: where each server runs (node, GPUs, port), the files
it reads, the placeholders the user fills in, and the text they are printed as.

A `Launch` is engine-specific (built by vllm.py / sglang.py / trtllm.py) but shaped alike: `steps`
in the order they are started, each on one node (`node`), on all of its GPUs or the ones listed
(`gpus`, set as CUDA_VISIBLE_DEVICES), with the environment it needs. Node addresses are the
placeholders `$NODE0_IP`, `$NODE1_IP`, ...: named once at the top of the text, exported by the
Slurm script (`emit.py`), set from the pod's own environment in Kubernetes.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field

from ...errors import PlanError

SERVER_PORT = 8000
"""The HTTP port of the first server on a node; the k-th server on a node listens on 8000 + k."""
ROUTER_PORT = 8080
"""The port of a router / proxy in front of several servers (on node 0)."""
DIST_PORT = 5000
"""A multi-node server's rendezvous port on its first node (SGLang --dist-init-addr, vLLM's DP RPC)."""

_PLAIN = re.compile(r"[\w@%+=:,./$-]+")


def node_ip(i: int) -> str:
    return f"$NODE{i}_IP"


def shell_word(word: str) -> str:
    """A word as the shell should see it: placeholders left to expand, anything else quoted."""
    return word if _PLAIN.fullmatch(word) and "{" not in word else shlex.quote(word)


@dataclass(frozen=True, kw_only=True)
class Step:
    """One command on one node."""

    node: int
    what: str
    """What it starts, in words ("decode server 2 of 3", "router")."""
    program: str
    """'serve' or a `[cli.programs.<name>]` of the engine: the flag table it is checked against."""
    argv: tuple[str, ...]
    """The words after the program's command."""
    env: tuple[tuple[str, str], ...] = ()
    gpus: tuple[int, ...] | None = None
    """The node's GPUs it runs on (CUDA_VISIBLE_DEVICES); None: all of them."""
    wrapper: tuple[str, ...] = ()
    """A launcher the command runs under (mpirun ... trtllm-llmapi-launch), checked as 'mpirun'."""
    background: bool = False
    """Started in the background on its node (another command on the same node follows it)."""

    def environment(self) -> dict[str, str]:
        env = dict(self.env)
        if self.gpus is not None:
            env["CUDA_VISIBLE_DEVICES"] = ",".join(str(g) for g in self.gpus)
        return env


@dataclass(frozen=True, kw_only=True)
class Launch:
    """How one engine runs a deployment option."""

    engine: str
    label: str
    """The engine's name and pinned release ("vLLM 0.19.0")."""
    commands: dict
    """program name -> the words that start it."""
    steps: tuple[Step, ...]
    nodes: int
    gpus_per_node: int
    image: str
    """The container image the engine publishes at its pinned release (for this GPU vendor)."""
    files: tuple[tuple[str, str], ...] = ()
    """(file name, text) the commands read (TensorRT-LLM's YAML options), written beside them."""
    notes: tuple[str, ...] = ()
    env_all: tuple[tuple[str, str], ...] = ()
    """Environment every node needs (NCCL's), for the Slurm script and the manifests."""

    def command(self, step: Step) -> str:
        """The shell line of one step, without its node."""
        env = " ".join(f"{k}={v}" for k, v in step.environment().items())
        words = [*step.wrapper, self.commands[step.program], *(shell_word(w) for w in step.argv)]
        line = " ".join(w for w in words if w)
        return f"{env} {line}".strip() + (" &" if step.background else "")

    @property
    def placeholders(self) -> list[str]:
        used = sorted({int(m) for s in self.steps for w in (*s.argv, *s.wrapper)
                       for m in re.findall(r"\$NODE(\d+)_IP", w)})
        return [f"NODE{i}_IP" for i in used]

    def text(self) -> str:
        """What deploy prints: a single server as one line; else the placeholders named once, the
        files as here-documents, then one line per command with its node."""
        notes = "; ".join(self.notes)
        if len(self.steps) == 1 and not self.files and self.steps[0].gpus is None:
            return f"{self.command(self.steps[0])}  # {self.label}" + (f"; {notes}" if notes else "")
        head = f"# {self.label}, {self.nodes} node{'s' if self.nodes > 1 else ''}"
        if self.placeholders:
            names = ", ".join(self.placeholders)
            head += f"; fill in {names} (the nodes' addresses; NODE0 runs the head)"
        lines = [head + (f"; {notes}" if notes else "")]
        for name, body in self.files:
            lines.append(heredoc(name, body))
        width = len(str(self.nodes - 1))
        lines += [f"[node {s.node:>{width}}] {self.command(s)}" for s in self.steps]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        return {"engine": self.engine, "label": self.label, "image": self.image, "nodes": self.nodes,
                "placeholders": self.placeholders, "files": dict(self.files), "notes": list(self.notes),
                "env": dict(self.env_all),
                "steps": [{"node": s.node, "what": s.what, "gpus": list(s.gpus) if s.gpus is not None else None,
                           "command": self.command(s)} for s in self.steps]}


@dataclass
class Placer:
    """Hands out GPUs in order: a server smaller than a node on one node, a larger one on whole nodes."""

    gpus_per_node: int
    cursor: int = 0
    ports: dict = field(default_factory=dict)

    def place(self, gpus: int) -> tuple[int, tuple[int, ...] | None, int]:
        """(first node, the node's GPU indices or None for whole nodes, nodes spanned)."""
        gpn = self.gpus_per_node
        if gpus >= gpn:
            if gpus % gpn:
                raise PlanError(f"a server of {gpus} GPUs does not fill whole nodes of {gpn}")
            if self.cursor % gpn:
                self.cursor += gpn - self.cursor % gpn
            node = self.cursor // gpn
            self.cursor += gpus
            return node, None, gpus // gpn
        node, first = divmod(self.cursor, gpn)
        if first + gpus > gpn:
            raise PlanError(f"a server of {gpus} GPUs would straddle node {node}'s edge; place it by hand")
        self.cursor += gpus
        return node, tuple(range(first, first + gpus)), 1

    def port(self, node: int) -> int:
        """The next free server port on a node."""
        k = self.ports.get(node, 0)
        self.ports[node] = k + 1
        return SERVER_PORT + k


def heredoc(name: str, body: str) -> str:
    """The shell lines that write a file: quoted (taken as is) unless it names a node's address,
    which the shell then fills in."""
    tag = "EOF" if "$NODE" in body else "'EOF'"
    return f"cat > {name} <<{tag}\n{body.rstrip()}\nEOF"


def to_yaml(value, indent: int = 0) -> str:
    """A small YAML writer for the files a launch writes: mappings, lists, numbers, booleans, null,
    and strings in double quotes (JSON's escapes, which YAML reads the same way)."""
    pad = " " * indent
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{k}:\n{to_yaml(v, indent + 2)}")
            else:
                out.append(f"{pad}{k}: {_scalar(v)}")
        return "\n".join(out)
    if isinstance(value, list):
        out = []
        for v in value:
            if isinstance(v, (dict, list)) and v:
                inner = to_yaml(v, indent + 2).lstrip()
                out.append(f"{pad}- {inner}")
            else:
                out.append(f"{pad}- {_scalar(v)}")
        return "\n".join(out)
    return pad + _scalar(value)


def _scalar(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (dict, list)):
        return "{}" if isinstance(v, dict) else "[]"
    return json.dumps(str(v))


__all__ = ["DIST_PORT", "Launch", "heredoc", "Placer", "ROUTER_PORT", "SERVER_PORT", "Step", "node_ip",
           "shell_word", "to_yaml"]
