"""Issue 33's fuzz: names of every hostile kind handed to what deploy writes and prints.

Each category (CATEGORIES) mixes its feature into random text: newlines and other line breaks, `$(...)`,
backticks, quotes and backslashes, `$VAR`, a leading '-', ANSI escape sequences, bytes that are not
UTF-8, the node-address placeholder `$NODE<i>_IP`, and shell / YAML / TOML punctuation. The rule
(REFUSED_IF) is issue 33's: a name that is not printable UTF-8, starts with '-' or holds a placeholder
is refused; any other runs exactly as named.

* files (library, most cases): four deployments' launches (one node, a replica over nodes, disaggregated,
  EAGLE with a draft) rebuilt with the name as the model's and the draft's, for each engine. The Slurm
  script, run under stub programs (tests/launch_stubs.py), must start exactly what the same deployment
  under a plain name starts, with the name in its place (one word, or the same JSON / YAML value), create
  no other file, and keep its five #SBATCH directives; manifests.yaml must parse (PyYAML) into the same
  objects with the same fields but the names, and each pod's command start the same words. A refused
  name must be refused (PlanError) before any launch is built.
* boundary (CLI): the name as a model folder (or --draft-model) of `deploy --emit`, `plan` or `explain`:
  refused in one line, exit 2, nothing on stdout, no output folder; accepted names emit a script that
  runs, under the stubs, the launch's own words.

COUNTS keeps the cases tried per category and outcome; `test_counts` prints them (pytest -s) and checks
every category was tried. SHARDBUDGET_FUZZ_SCALE=10 runs ten times the examples.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import re
import subprocess
import tomllib
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from launch_stubs import expected_slurm, ip, make_stubs, run_pod, run_slurm, sbatch_directives
from shardbudget import cli
from shardbudget.decide.deploy import Workload, deploy
from shardbudget.decide.launch import build_launches
from shardbudget.decide.launch.emit import job_name, k8s_files, slurm_files
from shardbudget.decide.launch.k8s import manifest_name
from shardbudget.decide.launch.layout import heredoc, shell_word, to_yaml
from shardbudget.errors import PlanError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.model import load_model
from shardbudget.quoting import one_line
from shardbudget.step.speculative import Speculation
from shardbudget.decide.request import request

SCALE = int(os.environ.get("SHARDBUDGET_FUZZ_SCALE", "1"))
LLAMA_8B = Path(cli.__file__).parents[1] / "catalog" / "models" / "llama-3.1-8b.json"
REF, REF_DRAFT = "refmodel", "refdraft"
COUNTS: collections.Counter = collections.Counter()

COMMANDS = st.sampled_from(["touch PWNED", "touch PWNED;id", "echo x >PWNED", "touch ./PWNED2 && id"])
CATEGORIES = {
    "newline": st.sampled_from(
        [
            "\n",
            "\r",
            "\r\n",
            "\n#",
            "\ntouch PWNED\n",
            "\n#SBATCH --nodes=9\n",
            "\u2028",
            "\u2029",
            "\x85",
            "\n- kind: Pod\n",
            "\n[nccl]\n",
        ]
    ),
    "$(...)": st.builds("$({})".format, COMMANDS),
    "backticks": st.builds("`{}`".format, COMMANDS),
    "quotes": st.sampled_from(
        ["'", '"', "'\\''", "\"'", "\\", "\\'", "'$(touch PWNED)'", '"$(touch PWNED)"', '\\"', "'\"'\"'"]
    ),
    "$VAR": st.sampled_from(
        [
            "$HOME",
            "${PATH}",
            "$1",
            "$$",
            "$?",
            "$@",
            "${X:-$(touch PWNED)}",
            "$NODE0",
            "$LWS_LEADER_ADDRESS",
            "$((1+1))",
            "${NODE0_IP}",
            "$NODE_IP",
        ]
    ),
    "leading dash": st.sampled_from(["-", "--", "--trust-remote-code", "-h", "--port=1"]),
    "ANSI escape": st.sampled_from(
        ["\x1b[31m", "\x1b]0;PWNED\x07", "\x1b[2J", "\x9b31m", "\x07", "\x1b[0m", "\x1b]8;;http://x\x1b\\"]
    ),
    "not UTF-8": st.sampled_from([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xfe\xfe", b"caf\xe9"]).map(os.fsdecode),
    "placeholder": st.sampled_from(["$NODE0_IP", "$NODE1_IP:8000", "x$NODE12_IP"]),
    "punctuation": st.sampled_from(
        [
            ": ",
            "- ",
            " #",
            "{",
            "}",
            "[",
            "]",
            "&",
            "*",
            "!",
            "|",
            ">",
            "<",
            "%",
            "@",
            "~",
            ";",
            "&&",
            "||",
            " ",
            ",",
            "?",
            "=",
            "^",
            "é",
            "😀",
            "\u00a0",
        ]
    ),
}
FILLER = st.text(st.characters(min_codepoint=0x21, max_codepoint=0x7E, blacklist_characters="-"), max_size=6)


def _name(category: str):
    """A name with the category's feature inside random printable text (at the start for a leading
    dash; a second feature of another category now and then)."""
    feature = CATEGORIES[category]
    if category == "leading dash":
        return st.builds(lambda f, a: f + a, feature, FILLER)
    return st.builds(lambda a, f, b: "m" + a + f + b, FILLER, feature, FILLER)


NAMES = st.sampled_from(sorted(CATEGORIES)).flatmap(lambda c: st.tuples(st.just(c), _name(c)))


def refused_if(name: str, argument: bool = True) -> bool:
    """Issue 33's rule, stated here on its own: not printable UTF-8; where the name becomes a command's
    argument (deploy's launch lines), also a leading '-' or a placeholder."""
    if not name.isprintable():
        return True
    return argument and (name.startswith("-") or re.search(r"\$NODE\d+_IP", name) is not None)


# --- the deployments and their reference files ------------------------------------------------


def _shapes(cat) -> dict:
    """name -> (result, cfg): one node; a replica over nodes; disaggregated; EAGLE with a draft."""
    moe = deploy(request("deepseek-v3", "hgx-h200", budget_s=0.100, catalog=cat), gpus=32)
    wide = next(o for o in moe.options if o.meets_budget and o.ep > 1 and o.dp > 1 and o.tp * o.pp > 8)
    eagle = Workload(speculation=Speculation(method="eagle", draft_tokens=3, acceptance=0.7, draft_model=REF_DRAFT))
    return {
        "one-node": (deploy(request("llama-3.1-8b", "hgx-h100", catalog=cat), gpus=8), load_model("llama-3.1-8b")),
        "multi-node": (dataclasses.replace(moe, best=wide), load_model("deepseek-v3")),
        "disaggregated": (
            deploy(request("llama-3.1-70b", "hgx-h100", budget_s=0.05, catalog=cat), gpus=16, disaggregate=(4, 12)),
            load_model("llama-3.1-70b"),
        ),
        "eagle": (
            deploy(
                request("llama-3.1-70b", "hgx-h100", budget_s=0.05, catalog=cat, work=eagle),
                gpus=16,
                disaggregate=(4, 12),
            ),
            load_model("llama-3.1-70b"),
        ),
    }


def _renamed(result, cfg, name: str):
    spec = result.workload.speculation
    work = (
        dataclasses.replace(result.workload, speculation=dataclasses.replace(spec, draft_model=name))
        if spec
        else result.workload
    )
    return dataclasses.replace(result, model=name, workload=work), dataclasses.replace(cfg, name=name)


class World:
    """The deployments, the stubs, a fresh folder per run, and each reference run kept."""

    def __init__(self, root: Path):
        self.root, self.serial, self.cat = root, 0, load_catalog()
        self.bin = make_stubs(root)
        self.shapes = _shapes(self.cat)
        self.refs: dict = {}

    def folder(self) -> Path:
        self.serial += 1
        return self.root / f"run{self.serial}"

    def launches(self, shape: str, name: str):
        result, cfg = _renamed(*self.shapes[shape], name)
        return result, build_launches(result, cfg, self.cat.system(result.system), self.cat)[0]

    def slurm(self, shape: str, engine: str, name: str) -> tuple[str, list, dict]:
        """(the script, the stubs' records, the files it left) of one launch under `name`."""
        result, launches = self.launches(shape, name)
        launch = launches[engine]
        text = slurm_files(launch, result)["launch.sbatch"]
        cwd = self.folder()
        records = run_slurm(text, cwd, self.bin, launch.nodes)
        files = {p.name: yaml.safe_load(p.read_text()) for p in cwd.iterdir() if p.name != "launch.sbatch"}
        if name == REF:
            assert records == expected_slurm(launch)  # the stubs see the launch's own words
        return text, records, files

    def k8s(self, shape: str, engine: str, name: str) -> tuple[list, list] | str:
        """(the documents, each pod's records) of one launch's manifests, or the refusal's text."""
        result, launches = self.launches(shape, name)
        try:
            text = k8s_files(launches[engine], result)["manifests.yaml"]
        except PlanError as err:
            return str(err)
        assert text.startswith("# ") and text.split("\n", 1)[0].isprintable()  # the header: one comment line
        docs = list(yaml.safe_load_all(text))
        for d in docs:  # an option file compared as what it holds
            if d["kind"] == "ConfigMap":
                d["data"] = {k: yaml.safe_load(v) for k, v in d["data"].items()}
        runs = []
        for d in docs:
            for k, pod in enumerate(_pods(d)):
                runs.append(run_pod(pod["containers"][0]["command"], self.folder(), self.bin, worker=k))
        return docs, runs

    def ref(self, kind: str, shape: str, engine: str):
        key = (kind, shape, engine)
        if key not in self.refs:
            self.refs[key] = getattr(self, kind)(shape, engine, REF)
        return self.refs[key]


def _pods(doc: dict) -> list[dict]:
    spec = doc.get("spec", {})
    if "template" in spec:
        return [spec["template"]["spec"]]
    lwt = spec.get("leaderWorkerTemplate")
    return [lwt["leaderTemplate"]["spec"], lwt["workerTemplate"]["spec"]] if lwt else []


def _swap(value, names: dict, parts: dict):
    """The reference with the fuzzed names in place: a string equal to a reference name replaced
    whole, the objects' names inside other strings; a JSON word compared as its value."""
    if isinstance(value, str):
        if value in names:
            return names[value]
        if value.startswith("{"):
            try:
                return ("json", _swap(json.loads(value), names, parts))
            except ValueError:
                pass
        for old, new in parts.items():
            value = value.replace(old, new)
        return value
    if isinstance(value, dict):
        return {_swap(k, names, parts): _swap(v, names, parts) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_swap(v, names, parts) for v in value)
    return value


def _maps(world: World, shape: str, name: str) -> tuple[dict, dict]:
    ref, fuzz = _renamed(*world.shapes[shape], REF)[0], _renamed(*world.shapes[shape], name)[0]
    whats = ("server", "options", "router", "prefill", "decode", "context", "generation")
    parts = {manifest_name(ref, w): manifest_name(fuzz, w) for w in whats}
    return {REF: name, REF_DRAFT: name}, dict(sorted(parts.items(), key=lambda kv: -len(kv[0])))


def _view(value):
    """Strings that hold JSON compared as their value (vLLM's --speculative-config)."""
    return _swap(value, {}, {})


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    return World(tmp_path_factory.mktemp("fuzz-names"))


LIBRARY = settings(
    max_examples=200 * SCALE,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@LIBRARY
@given(
    NAMES,
    st.sampled_from(["one-node", "multi-node", "disaggregated", "eagle"]),
    st.sampled_from(["vllm", "sglang", "trtllm"]),
)
def test_written_files_run_exactly_as_named(world, case, shape, engine):
    category, name = case
    if refused_if(name):
        with pytest.raises(PlanError):
            world.launches(shape, name)
        COUNTS["files", category, "refused"] += 1
        return
    names, parts = _maps(world, shape, name)
    text, records, files = world.slurm(shape, engine, name)
    ref_text, ref_records, ref_files = world.ref("slurm", shape, engine)
    assert _view(records) == _swap(ref_records, names, parts), name  # no other command, every word as named
    assert _view(files) == _swap(ref_files, names, parts), name  # the here-documents' files
    directives = sbatch_directives(text)
    assert directives == [[f"--job-name={job_name(name)}"], *sbatch_directives(ref_text)[1:]]
    assert len(text.split("\n")) == len(ref_text.split("\n"))  # no line added (a comment kept one line)
    k8s, ref_k8s = world.k8s(shape, engine, name), world.ref("k8s", shape, engine)
    if isinstance(ref_k8s, str):
        assert k8s == ref_k8s  # refused alike (a TensorRT-LLM MPI job, a side over nodes)
    else:
        docs, runs = k8s
        ref_docs, ref_runs = ref_k8s
        assert [d["kind"] for d in docs] == [d["kind"] for d in ref_docs]  # no object added
        assert _view(runs) == _swap(ref_runs, names, parts), name
        for d in (*docs, *ref_docs):  # commands compared by what they ran
            for pod in _pods(d):
                pod["containers"][0]["command"] = "run"
        assert _view(docs) == _swap(ref_docs, names, parts)
    assert not list(world.root.rglob("PWNED*"))
    COUNTS["files", category, "ran as named"] += 1


SYSTEM = settings(
    max_examples=40 * SCALE,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@SYSTEM
@given(NAMES, st.sampled_from(["one-node", "disaggregated"]), st.sampled_from(["vllm", "sglang", "trtllm"]))
def test_a_system_name_stays_in_its_comment(world, case, shape, engine):
    """A catalog system's name reaches the files only in a comment (the loader refuses what is not
    printable; a Catalog built in code need not): whatever it holds, the same lines, commands, objects."""
    category, name = case
    result, cfg = world.shapes[shape]
    launch = build_launches(result, cfg, world.cat.system(result.system), world.cat)[0][engine]
    named = dataclasses.replace(result, system=name)
    text, ref_text = slurm_files(launch, named)["launch.sbatch"], slurm_files(launch, result)["launch.sbatch"]
    assert sbatch_directives(text) == sbatch_directives(ref_text) and len(text.split("\n")) == len(ref_text.split("\n"))
    assert run_slurm(text, world.folder(), world.bin, launch.nodes) == expected_slurm(launch)
    try:
        docs = list(yaml.safe_load_all(k8s_files(launch, named)["manifests.yaml"]))
    except PlanError:
        docs = None
    else:
        assert docs == list(yaml.safe_load_all(k8s_files(launch, result)["manifests.yaml"]))
    assert not list(world.root.rglob("PWNED*"))
    COUNTS["system", category, "in its comment"] += 1


QUOTING = settings(
    max_examples=150 * SCALE,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@QUOTING
@given(NAMES)
def test_every_quoting_reads_back_as_written(world, case):
    """Below the boundary, whatever the name: a shell word is one word, a here-document writes its
    body (the addresses alone filled in), a YAML scalar reads back, a comment stays one line. A
    placeholder in the name is filled in as the commands' own are: why a name may not hold one."""
    category, name = case
    filled = re.sub(r"\$NODE(\d+)_IP", lambda m: {"0": ip(0), "1": ip(1)}.get(m.group(1), ""), name)
    cwd = world.folder()
    cwd.mkdir()
    body = to_yaml({"name": name, "urls": ["$NODE0_IP:8000", "$NODE1_IP:8001"], name: [name]})
    script = f"printf '%s' {shell_word(name)} > word\n{heredoc('f.yaml', body)}\n"
    env = {"PATH": "/usr/bin:/bin", "NODE0_IP": ip(0), "NODE1_IP": ip(1), "HOME": str(cwd)}
    subprocess.run(["bash", "-c", os.fsencode(script)], cwd=cwd, env=env, check=True)
    assert os.fsdecode((cwd / "word").read_bytes()) == filled
    want = {"name": filled, "urls": [f"{ip(0)}:8000", f"{ip(1)}:8001"], filled: [filled]}
    assert yaml.safe_load((cwd / "f.yaml").read_text(errors="surrogateescape")) == want
    comment = one_line(name)
    assert tomllib.loads(f"# {comment}\na = 1\n") == {"a": 1} and yaml.safe_load(f"# {comment}\na: 1\n") == {"a": 1}
    assert subprocess.run(["bash", "-c", f"# {comment}\ntrue"], env=env).returncode == 0
    assert sorted(p.name for p in cwd.iterdir()) == ["f.yaml", "word"]
    COUNTS["quote", category, "read back"] += 1


# --- the boundary: the command line -------------------------------------------------------------


def _model_folder(root: Path, name: str) -> str:
    path = os.path.join(os.fsencode(root), os.fsencode(name).replace(b"/", b"_"))
    os.makedirs(path)
    with open(os.path.join(path, b"config.json"), "wb") as fh:
        fh.write(LLAMA_8B.read_bytes())
    return os.fsdecode(path)


CLI_REFUSED = settings(
    max_examples=100 * SCALE,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@CLI_REFUSED
@given(
    NAMES.filter(lambda c: refused_if(c[1].replace("/", "_"))),
    st.sampled_from(["deploy-slurm", "deploy-k8s", "draft", "plan", "explain"]),
)
def test_the_command_line_refuses_in_one_line_and_writes_nothing(world, capsys, case, command):
    """plan and explain print the name but pass it to no command: a leading '-' or a placeholder is
    theirs to print (test_emit_safety.py runs one)."""
    category, name = case
    if command in ("plan", "explain") and not refused_if(name.replace("/", "_"), argument=False):
        command = "deploy-slurm"
    root = world.folder()
    root.mkdir()
    out = root / "out"
    model = _model_folder(root, name) if command != "draft" else "llama-3.1-8b"
    argv = {
        "deploy-slurm": ["deploy", "--gpus", "8", "--emit", "slurm", str(out)],
        "deploy-k8s": ["deploy", "--gpus", "8", "--emit", "k8s", str(out)],
        "draft": [
            "deploy",
            "--gpus",
            "8",
            "--speculative",
            "eagle",
            "--draft-model",
            name,
            "--emit",
            "slurm",
            str(out),
        ],
        "plan": ["plan", "--batch", "1"],
        "explain": ["explain"],
    }[command]
    rc = cli.main([argv[0], "--model", model, "--system", "hgx-h100", *argv[1:]])
    stdout, err = capsys.readouterr()
    assert rc == 2 and stdout == "" and err.startswith("error: "), (name, rc, stdout, err)
    assert len(err.splitlines()) == 1 and err.rstrip("\n").isprintable(), repr(err)
    assert not out.exists()
    COUNTS["cli", category, "refused"] += 1


CLI_ACCEPTED = settings(
    max_examples=16 * SCALE,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)


@CLI_ACCEPTED
@given(NAMES.filter(lambda c: not refused_if(c[1].replace("/", "_"))), st.sampled_from(["vllm", "sglang", "trtllm"]))
def test_the_command_line_writes_what_runs_as_named(world, capsys, case, engine):
    category, name = case
    root = world.folder()
    root.mkdir()
    model, out = _model_folder(root, name), root / "out"
    rc = cli.main(
        [
            "deploy",
            "--model",
            model,
            "--system",
            "hgx-h100",
            "--gpus",
            "8",
            "--engine",
            engine,
            "--emit",
            "slurm",
            str(out),
        ]
    )
    stdout, err = capsys.readouterr()
    assert rc == 0, err
    assert all(c.isprintable() or c in "\n\t" for c in stdout + err)
    cat = load_catalog()
    result = deploy(request(model, "hgx-h100", engine=engine, catalog=cat), gpus=8)
    launch = build_launches(result, load_model(model), cat.system("hgx-h100"), cat)[0][engine]
    assert run_slurm((out / "launch.sbatch").read_text(), root / "run", world.bin, 1) == expected_slurm(launch)
    assert not list(root.rglob("PWNED*"))
    COUNTS["cli", category, "ran as named"] += 1


def test_counts():
    """Every category tried at both levels; the counts per category and outcome (pytest -s)."""
    rows = sorted(COUNTS.items())
    print("\nfuzz cases per category (level, category, outcome: count)")
    for (level, category, outcome), n in rows:
        print(f"  {level:<6} {category:<12} {outcome:<13} {n}")
    print(f"  total {sum(COUNTS.values())}")
    if not COUNTS:
        pytest.skip("run with the fuzz tests above")
    for level in {level for level, _, _ in COUNTS} - {"cli"}:  # the levels that ran (pytest -k)
        assert {c for lv, c, _ in COUNTS if lv == level} == set(CATEGORIES), level
    refused = {c for lv, c, outcome in COUNTS if lv == "cli" and outcome == "refused"}
    assert not refused or refused >= {"newline", "ANSI escape", "not UTF-8", "leading dash", "placeholder"}
