"""A deployment as the commands that start it: where each server runs (node, GPUs, port), the files
it reads, the placeholders the user fills in, and the text they are printed as.

A `Launch` is engine-specific (built by vllm.py / sglang.py / trtllm.py) but shaped alike: `steps`
in the order they are started, each on one node (`node`), on all of its GPUs or the ones listed
(`gpus`, set as CUDA_VISIBLE_DEVICES), with the environment it needs. Node addresses are the
placeholders `$NODE0_IP`, `$NODE1_IP`, ...: named once at the top of the text, exported by the
Slurm script (`emit.py`), set from the pod's own environment in Kubernetes.

Every shell word is quoted by `shell_word` (`quoting.shell_quote`), the placeholders alone left to
expand; a name never holds one (`priced.check_names`). A file is written by a quoted here-document
(`heredoc`), taken as it is, and its placeholders filled in afterwards, exactly those; YAML scalars and
keys go through `quoting.yaml_quote`.
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field

from ...errors import PlanError
from ...quoting import one_line, shell_quote, yaml_quote

SERVER_PORT = 8000
"""The HTTP port of the first server on a node; the k-th server on a node listens on 8000 + k."""
ROUTER_PORT = 8080
"""The port of a router / proxy in front of several servers (on node 0)."""
DIST_PORT = 5000
"""A multi-node server's rendezvous port on its first node (SGLang --dist-init-addr, vLLM's DP RPC)."""

SUMMARY_STEPS = 16
"""The most steps deploy prints one by one without --all (Launch.summary): 4,096 GPUs are 512 nodes'
lines per engine, which belong in the files of --emit, not on a terminal."""
SUMMARY_FILE_LINES = 16
"""A launch's file of more lines is printed, without --all, as its first lines (Launch.summary): a
disaggregated router's list of 1,404 prefill servers belongs in the files of --emit too."""
PLACEHOLDER = re.compile(r"\$NODE(\d+)_IP")
"""A node's address as the commands name it (node_ip)."""
_NAME_CHAR = re.compile(r"[A-Za-z0-9_]")


def node_ip(i: int) -> str:
    return f"$NODE{i}_IP"


def shell_word(word: str, addresses: Mapping[int, str] | None = None) -> str:
    """A word as the shell should see it: each node-address placeholder left to expand (as the
    variable `addresses` names for its node, else itself), everything else quoted (`shell_quote`)."""
    parts = PLACEHOLDER.split(word)  # literal, node, literal, node, ..., literal
    if len(parts) == 1:
        return shell_quote(word)
    out = [shell_quote(parts[0]) if parts[0] else ""]
    for k in range(1, len(parts), 2):
        node, after = int(parts[k]), parts[k + 1]
        name = (addresses or {}).get(node, f"NODE{node}_IP")
        out.append(f"${{{name}}}" if _NAME_CHAR.match(after) else f"${name}")  # $X_IPfoo would name X_IPfoo
        out.append(shell_quote(after) if after else "")
    return "".join(out)


@functools.lru_cache(maxsize=64)
def program_words(command: str) -> tuple[str, ...]:
    """A program's command ('vllm serve', 'python -m sglang.launch_server') as quoted words (kept:
    a deployment of thousands of servers quotes each engine's few commands once)."""
    return tuple(shell_quote(w) for w in shlex.split(command))


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
    scale_out: tuple[str | None, int] = (None, 0)
    """The system's scale-out fabric kind (infiniband, roce, efa; None: none) and NICs per node:
    what a Kubernetes pod of a group across nodes asks the RDMA device plugin for (k8s.py)."""
    hosts_per_nvlink_domain: int = 1
    """Hosts that share one NVLink domain (an NVL72 rack: its 18 compute trays; 1 where NVLink ends
    at the host): pods on several of them reach each other over NVLink only through an IMEX channel
    (k8s.py's ComputeDomain)."""
    local_paths: tuple[str, ...] = ()
    """Local folders the commands read by their absolute paths (a checkpoint given as a folder):
    each node must hold them; a pod mounts them from its node (k8s.py)."""

    def command(
        self, step: Step, *, addresses: Mapping[int, str] | None = None, raw: Mapping[int, str] | None = None
    ) -> str:
        """The shell line of one step, without its node. `addresses`: node -> the variable that holds
        its address in place of $NODE<i>_IP; `raw`: argv index -> shell text put there as it is
        (LeaderWorkerSet's rank arithmetic, emit.py)."""
        env = " ".join(f"{k}={shell_quote(v)}" for k, v in step.environment().items())
        argv = [(raw or {}).get(i) or shell_word(w, addresses) for i, w in enumerate(step.argv)]
        words = [*(shell_word(w, addresses) for w in step.wrapper), *program_words(self.commands[step.program]), *argv]
        line = " ".join(w for w in words if w)
        return f"{env} {line}".strip() + (" &" if step.background else "")

    @property
    def placeholders(self) -> list[str]:
        """The node addresses the commands and files name, as the variables the user fills in."""
        words = [w for s in self.steps for w in (*s.argv, *s.wrapper)] + [body for _, body in self.files]
        used = sorted({int(m) for w in words for m in PLACEHOLDER.findall(w)})
        return [f"NODE{i}_IP" for i in used]

    def text(self) -> str:
        """What deploy prints: a single server as one line; else the placeholders named once, the
        files as here-documents, then one line per command with its node."""
        notes = "; ".join(self.notes)
        if len(self.steps) == 1 and not self.files and self.steps[0].gpus is None:
            return f"{self.command(self.steps[0])}  # " + one_line(self.label + (f"; {notes}" if notes else ""))
        width = len(str(self.nodes - 1))
        return "\n".join(
            [*self._head(self.placeholders), *(f"[node {s.node:>{width}}] {self.command(s)}" for s in self.steps)]
        )

    def summary(self) -> str:
        """What deploy prints without --all: `text()` where there are at most SUMMARY_STEPS steps;
        else one line per distinct shape of step (the same program, role and words but for the
        numbers in them: ports, ranks, node addresses), the first of its kind, with how many more
        there are and on which nodes; the placeholders named by their range. Every line is in
        `text()`, in the JSON and in the files of --emit."""
        if len(self.steps) <= SUMMARY_STEPS:
            return self.text()
        shapes: dict[tuple, list[Step]] = {}
        for s in self.steps:
            shapes.setdefault(_shape(s), []).append(s)
        names = self.placeholders
        if len(names) > 4:
            names = [names[0], names[1], "...", names[-1]]
        width = len(str(self.nodes - 1))
        lines = self._head(names, of=len(self.placeholders), short=True)
        for steps in shapes.values():
            lines.append(f"[node {steps[0].node:>{width}}] {self.command(steps[0])}")
            if len(steps) > 1:
                nodes = _ranges(sorted({s.node for s in steps[1:]}))
                lines.append(
                    f"# ... and {len(steps) - 1} more like it on node{'s' if ',' in nodes or '-' in nodes else ''} "
                    f"{nodes}: --all prints every line, --emit slurm|k8s DIR writes them"
                )
        return "\n".join(lines)

    def _head(self, names: list[str], *, of: int | None = None, short: bool = False) -> list[str]:
        """The comment naming the launch and the placeholders to fill in, then the files (`short`:
        one of more than SUMMARY_FILE_LINES lines as comments, its first lines alone)."""
        notes = "; ".join(self.notes)
        head = f"{self.label}, {self.nodes} node{'s' if self.nodes > 1 else ''}"
        if names:
            count = f", {of} in all" if "..." in names else ""
            head += f"; fill in {', '.join(names)} (the nodes' addresses{count}; NODE0 runs the head)"
        files = (file_summary(n, b) if short else heredoc(n, b) for n, b in self.files)
        return ["# " + one_line(head + (f"; {notes}" if notes else "")), *files]

    def to_dict(self) -> dict:
        return {
            "engine": self.engine,
            "label": self.label,
            "image": self.image,
            "nodes": self.nodes,
            "placeholders": self.placeholders,
            "files": dict(self.files),
            "notes": list(self.notes),
            "env": dict(self.env_all),
            "steps": [
                {
                    "node": s.node,
                    "what": s.what,
                    "gpus": list(s.gpus) if s.gpus is not None else None,
                    "command": self.command(s),
                }
                for s in self.steps
            ],
        }


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


def _shape(step: Step) -> tuple:
    """A step's shape: what it runs and how, the numbers in its words (ports, ranks, addresses,
    server counts) set aside."""
    num = lambda text: re.sub(r"\d+", "#", text)  # noqa: E731
    return (
        step.program,
        num(step.what),
        tuple(num(w) for w in (*step.wrapper, *step.argv)),
        tuple((k, num(v)) for k, v in step.env),
        None if step.gpus is None else len(step.gpus),
        step.background,
    )


def _ranges(nodes: list[int]) -> str:
    """[2, 3, 4, 7] -> '2-4, 7'."""
    runs: list[list[int]] = []
    for n in nodes:
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ", ".join(f"{a}-{b}" if b > a else f"{a}" for a, b in runs)


def file_summary(name: str, body: str) -> str:
    """A file as the summary prints it: its here-document where it has at most SUMMARY_FILE_LINES
    lines; else its first lines as comments (nothing that writes part of it), and how many more."""
    lines = body.rstrip().split("\n")
    if len(lines) <= SUMMARY_FILE_LINES:
        return heredoc(name, body)
    head = (
        f"{name}: {len(lines)} lines, the first {SUMMARY_FILE_LINES} of them (--all prints the file, "
        f"--emit slurm|k8s DIR writes it)"
    )
    return "\n".join(["# " + one_line(head), *("#   " + one_line(line) for line in lines[:SUMMARY_FILE_LINES])])


def heredoc(name: str, body: str) -> str:
    """The shell lines that write a file: a quoted here-document (the shell takes its body as it is:
    no `$`, backquote or backslash in it is read), then, where the body names nodes' addresses, those
    placeholders and nothing else replaced by the addresses (bash's ${var//pattern/text})."""
    body = body.rstrip()
    tag = "EOF"
    while tag in body.split("\n"):  # a body line equal to the delimiter would end the document there
        tag += "_"
    path = shell_quote(name)
    lines = [f"cat > {path} <<'{tag}'", body, tag]
    nodes = sorted({int(m) for m in PLACEHOLDER.findall(body)})
    if nodes:
        fill = "; ".join(f"body=${{body//'$NODE{i}_IP'/\"$NODE{i}_IP\"}}" for i in nodes)
        lines.append(f"body=$(<{path}); {fill}; printf '%s\\n' \"$body\" > {path}")
    return "\n".join(lines)


def to_yaml(value, indent: int = 0) -> str:
    """A small YAML writer for the files a launch writes: mappings, lists, numbers, booleans, null,
    and strings in double quotes (`yaml_quote`); a key that is not a plain word quoted too."""
    pad = " " * indent
    if isinstance(value, dict):
        out = []
        for k, v in value.items():
            if isinstance(v, (dict, list)) and v:
                out.append(f"{pad}{_key(k)}:\n{to_yaml(v, indent + 2)}")
            else:
                out.append(f"{pad}{_key(k)}: {_scalar(v)}")
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


_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_./-]*")
_YAML_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}
"""Plain keys YAML 1.1 would read as a boolean or null."""


def _key(k) -> str:
    k = str(k)
    return k if _PLAIN_KEY.fullmatch(k) and k.lower() not in _YAML_WORDS else yaml_quote(k)


def _scalar(v) -> str:
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, (dict, list)):
        return "{}" if isinstance(v, dict) else "[]"
    return yaml_quote(str(v))


__all__ = [
    "DIST_PORT",
    "Launch",
    "PLACEHOLDER",
    "SUMMARY_FILE_LINES",
    "SUMMARY_STEPS",
    "heredoc",
    "Placer",
    "ROUTER_PORT",
    "SERVER_PORT",
    "Step",
    "node_ip",
    "program_words",
    "shell_word",
    "to_yaml",
]
