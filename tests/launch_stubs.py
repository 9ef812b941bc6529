"""Run what `deploy --emit` writes, with stub programs in place of Slurm and the engines.

The stubs (`vllm`, `python`, `python3`, `trtllm-serve`, `mpirun`, `trtllm-llmapi-launch`, and Slurm's
`srun`, `scontrol`, `getent`; `cp` for a pod's option files) record the words they were started with,
the node `srun` started them on and their CUDA_VISIBLE_DEVICES, one file per process, and start nothing.
`mpirun` and `trtllm-llmapi-launch` then run the command they wrap, as the real ones do. A Slurm script
runs under bash as sbatch would start it; a pod's command under /bin/sh -c, as its container would.

Node i of a job is host `n<i>` at 10.0.0.<i + 1>.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from pathlib import Path

RECORD = r"""#!/bin/bash
f="$SB_LOG/rec.$BASHPID.$RANDOM$RANDOM"
printf '%s\0' "${SB_NODE-}" "${CUDA_VISIBLE_DEVICES-}" "${0##*/}" "$@" > "$f"
"""
STUBS = {
    "vllm": RECORD,
    "python": RECORD,
    "python3": RECORD,
    "trtllm-serve": RECORD,
    "mpirun": RECORD + 'shift 4\nexec "$@"\n',  # mpirun -H HOSTS -np N COMMAND...
    "trtllm-llmapi-launch": RECORD + 'exec "$@"\n',
    "scontrol": '#!/bin/bash\nfor ((i = 0; i < SB_NODES; i++)); do echo "n$i"; done\n',
    "getent": '#!/bin/bash\necho "10.0.0.$(( ${2#n} + 1 )) $2"\n',
    "srun": '#!/bin/bash\nfor a in "$@"; do case $a in --nodelist=*) export SB_NODE=${a#--nodelist=n};; esac; done\n'
    'while [ "$1" != bash ]; do shift; done\nexec "$@"\n',
    "cp": "#!/bin/bash\nexit 0\n",
}


def ip(node: int) -> str:
    return f"10.0.0.{node + 1}"


def make_stubs(folder: Path) -> Path:
    """The stub programs in `folder`/bin; the folder to put first on PATH."""
    bin_dir = folder / "bin"
    bin_dir.mkdir(parents=True, exist_ok=True)
    for name, text in STUBS.items():
        path = bin_dir / name
        path.write_text(text)
        path.chmod(0o755)
    return bin_dir


def _records(log: Path) -> list[tuple[str, ...]]:
    """(node, CUDA_VISIBLE_DEVICES, program, word, ...) of each process a stub stood in for, sorted."""
    out = []
    for f in log.iterdir():
        fields = f.read_bytes().split(b"\0")[:-1]
        out.append(tuple(os.fsdecode(x) for x in fields))
    return sorted(out)


def _run(argv: list[str], cwd: Path, bin_dir: Path, env: dict[str, str]) -> tuple[list[tuple[str, ...]], str]:
    log = cwd.parent / f"{cwd.name}.log"
    log.mkdir()
    full = {"PATH": f"{bin_dir}:/usr/bin:/bin", "SB_LOG": str(log), "HOME": str(cwd), "LC_ALL": "C.UTF-8", **env}
    done = subprocess.run(argv, cwd=cwd, env=full, capture_output=True, timeout=60)
    err = done.stderr.decode(errors="replace")
    assert done.returncode == 0, f"{argv[0]} exited {done.returncode}: {err}"
    return _records(log), err


def run_slurm(text: str, cwd: Path, bin_dir: Path, nodes: int) -> list[tuple[str, ...]]:
    """Run a launch.sbatch in `cwd` as sbatch would start it on `nodes` nodes; the stubs' records."""
    cwd.mkdir(parents=True)
    (cwd / "launch.sbatch").write_text(text)
    env = {"SLURM_SUBMIT_DIR": str(cwd), "SLURM_JOB_NODELIST": f"n[0-{nodes - 1}]", "SB_NODES": str(nodes)}
    return _run(["bash", "launch.sbatch"], cwd, bin_dir, env)[0]


def run_pod(command: list[str], cwd: Path, bin_dir: Path, *, worker: int = 0) -> list[tuple[str, ...]]:
    """Run a container's command (["/bin/sh", "-c", TEXT]) in `cwd`, as LeaderWorkerSet pod `worker`."""
    cwd.mkdir(parents=True)
    env = {"LWS_LEADER_ADDRESS": ip(0), "LWS_WORKER_INDEX": str(worker)}
    return _run(command, cwd, bin_dir, env)[0]


def sbatch_directives(text: str) -> list[list[str]]:
    """The #SBATCH options sbatch reads: those before the first line that is not a comment, each
    split into words as sbatch splits them (shell-like)."""
    out = []
    for line in text.split("\n")[1:]:
        if not line.startswith("#"):
            break
        if line.startswith("#SBATCH"):
            out.append(shlex.split(line[len("#SBATCH") :]))
    return out


def expected_slurm(launch) -> list[tuple[str, ...]]:
    """What the stubs should record for a Launch's steps: each step's words with the nodes' addresses
    filled in, on its node, with its GPUs (mpirun and its launcher first, then the server)."""
    commands = launch.commands
    out = []
    for s in launch.steps:
        fill = [re.sub(r"\$NODE(\d+)_IP", lambda m: ip(int(m.group(1))), w) for w in s.argv]
        gpus = ",".join(str(g) for g in s.gpus) if s.gpus is not None else ""
        prog, *sub = shlex.split(commands[s.program])
        if s.wrapper:
            wrap = [re.sub(r"\$NODE(\d+)_IP", lambda m: ip(int(m.group(1))), w) for w in s.wrapper]
            out.append((str(s.node), gpus, wrap[0], *wrap[1:], prog, *sub, *fill))
            out.append((str(s.node), gpus, wrap[-1], prog, *sub, *fill))
        out.append((str(s.node), gpus, prog, *sub, *fill))
    return sorted(out)
