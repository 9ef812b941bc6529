"""Issue 33: names that reach what deploy writes and prints. Each numbered item of the issue, as the
user met it: a model folder (or a catalog system, a --draft-model, a topo input file) named with a
newline, `$(...)`, `$VAR`, a leading '-', an ANSI escape or bytes that are not UTF-8.

A name that cannot be written safely is refused at the boundary (one line, exit 2, nothing created);
a name with shell or YAML metacharacters runs exactly as named: the Slurm script is run under stub
programs (tests/launch_stubs.py) that record the words each engine received, and the manifests are
read back by a YAML parser. tests/integration/test_fuzz_names.py drives the same checks over many names.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
import tomli_w
import yaml

from launch_stubs import expected_slurm, ip, make_stubs, run_slurm, sbatch_directives
from shardbudget import cli
from shardbudget.decide.deploy import deploy
from shardbudget.decide.launch import build_launches
from shardbudget.decide.launch import emit as emitting
from shardbudget.errors import PlanError
from shardbudget.fabric.catalog import load_catalog
from shardbudget.fabric.topo_profile import TopoProfile
from shardbudget.measure.analysis.fit import fit_profile, write_profile
from shardbudget.measure.logs.read import MeasurementSet, Sample
from shardbudget.model import load_model
from shardbudget.decide.request import request

LLAMA_8B = Path(cli.__file__).parents[1] / "catalog" / "models" / "llama-3.1-8b.json"
TOPO = Path(__file__).parents[1] / "fixtures" / "topo" / "h100_hgx_nv18.txt"
ENGINES = ("vllm", "sglang", "trtllm")
INJECT = "x\ntouch PWNED\n"


def _folder(tmp_path: Path, name: str | bytes) -> str:
    """A model folder named `name` (bytes: as the file system holds it) with Llama-3.1-8B's config."""
    path = os.path.join(os.fsencode(tmp_path), os.fsencode(name))
    os.makedirs(path)
    with open(os.path.join(path, b"config.json"), "wb") as fh:
        fh.write(LLAMA_8B.read_bytes())
    return os.fsdecode(path)


def _cli(capsys, *argv: str) -> tuple[int, str, str]:
    rc = cli.main(list(argv))
    out, err = capsys.readouterr()
    return rc, out, err


def _refused(rc: int, out: str, err: str, *words: str) -> None:
    """Exit 2, one line on stderr naming the problem, nothing on stdout, no raw control character."""
    assert rc == 2 and out == "", (rc, out, err)
    assert len(err.strip().splitlines()) == 1 and err.startswith("error: "), err
    assert err.rstrip("\n").isprintable(), repr(err)
    assert all(w in err for w in words), err


def _deploy(model: str, *more: str, engine: str = "vllm", gpus: str = "8") -> list[str]:
    return ["deploy", "--model", model, "--system", "hgx-h100", "--gpus", gpus, "--engine", engine, *more]


# --- 1. a newline in a model name ---------------------------------------------------------------


@pytest.mark.parametrize("disaggregate", [(), ("--disaggregate", "4:12")], ids=["aggregated", "disaggregated"])
@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("kind", ["slurm", "k8s"])
def test_a_newline_in_a_model_folder_is_refused_before_anything_is_written(
    tmp_path, capsys, kind, engine, disaggregate
):
    model, out = _folder(tmp_path, INJECT), tmp_path / "out"
    gpus = "16" if disaggregate else "8"
    rc, stdout, err = _cli(capsys, *_deploy(model, *disaggregate, "--emit", kind, str(out), engine=engine, gpus=gpus))
    _refused(rc, stdout, err, "model name 'x\\ntouch PWNED\\n'", "control character")
    assert not out.exists() and not list(tmp_path.rglob("PWNED"))


def test_a_launch_refuses_a_name_the_cli_did_not_check():
    """The library's own boundary: a ModelConfig renamed after loading cannot become an argument."""
    cat = load_catalog()
    result = deploy(request("llama-3.1-8b", "hgx-h100", catalog=cat), gpus=8)
    cfg = load_model("llama-3.1-8b")
    for name, why in (
        (INJECT, "control character"),
        ("--trust-remote-code", "starts with '-'"),
        ("m$NODE0_IP", "placeholder"),
    ):
        with pytest.raises(PlanError, match=why):
            build_launches(
                dataclasses.replace(result, model=name),
                dataclasses.replace(cfg, name=name),
                cat.system("hgx-h100"),
                cat,
            )


def test_the_job_name_is_one_sbatch_word_and_every_directive_is_read(tmp_path):
    """sbatch reads #SBATCH lines as words until the first line that is not a comment."""
    cat = load_catalog()
    result = deploy(request("llama-3.1-8b", "hgx-h100", catalog=cat), gpus=8)
    name = "m --nodes=99 #x"
    launches, _ = build_launches(
        dataclasses.replace(result, model=name),
        dataclasses.replace(load_model("llama-3.1-8b"), name=name),
        cat.system("hgx-h100"),
        cat,
    )
    text = emitting.slurm_files(launches["vllm"], dataclasses.replace(result, model=name))["launch.sbatch"]
    assert sbatch_directives(text) == [
        ["--job-name=shardbudget-m---nodes-99-x"],
        ["--nodes=1"],
        ["--ntasks-per-node=1"],
        ["--gpus-per-node=8"],
        ["--exclusive"],
    ]


# --- 2. a newline in a catalog system's name --------------------------------------------------------


def _catalog_with_system(tmp_path: Path, name: str) -> Path:
    """A user catalog with hgx-h100's entry under another name (`name`, as TOML's escapes write it)."""
    entry = tomllib.loads((Path(cli.__file__).parents[1] / "catalog" / "systems.toml").read_text())["systems"][
        "hgx-h100"
    ]
    path = tmp_path / "catalog.toml"
    path.write_text(tomli_w.dumps({"systems": {name: entry}}))
    return path


@pytest.mark.parametrize("engine", ENGINES)
def test_a_newline_in_a_catalog_system_name_runs_no_command(tmp_path, capsys, engine):
    """Refused where the catalog is read (fabric/catalog.py), or, where it is not, only ever in a
    comment: the script runs the same commands as on hgx-h100 and no other."""
    system = "h\ntouch PWNED\n#"
    catalog, out, bin_dir = _catalog_with_system(tmp_path, system), tmp_path / "out", make_stubs(tmp_path)
    argv = ["deploy", "--model", "llama-3.1-8b", "--gpus", "8", "--engine", engine, "--catalog", str(catalog)]
    rc, stdout, err = _cli(capsys, *argv, "--system", system, "--emit", "slurm", str(out))
    assert "\x1b" not in stdout + err
    if rc == 2:
        _refused(rc, stdout, err)
        assert not out.exists()
        return
    assert rc == 0, err
    ref = tmp_path / "ref"
    assert _cli(capsys, *argv, "--system", "hgx-h100", "--emit", "slurm", str(ref))[0] == 0
    text = (out / "launch.sbatch").read_text()
    assert len(sbatch_directives(text)) == 5
    got = run_slurm(text, tmp_path / "run", bin_dir, 1)
    assert got == run_slurm((ref / "launch.sbatch").read_text(), tmp_path / "run-ref", bin_dir, 1)
    assert not list(tmp_path.rglob("PWNED"))


# --- 3. TensorRT-LLM's here-document ----------------------------------------------------------------


def test_a_placeholder_in_a_draft_model_is_refused(tmp_path, capsys):
    rc, out, err = _cli(
        capsys,
        "deploy",
        "--model",
        "llama-3.1-70b",
        "--system",
        "hgx-h100",
        "--gpus",
        "16",
        "--disaggregate",
        "4:12",
        "--engine",
        "trtllm",
        "--speculative",
        "eagle",
        "--draft-model",
        "x$NODE0_IP$(touch PWNED)",
        "--emit",
        "slurm",
        str(tmp_path / "out"),
    )
    _refused(rc, out, err, "$NODE0_IP", "placeholder")
    assert not (tmp_path / "out").exists()


def test_the_here_documents_are_quoted_and_only_the_addresses_filled_in(tmp_path, capsys):
    """The draft's name reaches the options YAML exactly, in the script and in the printed text; the
    front end's YAML gets the nodes' addresses."""
    draft, out, bin_dir = "x$(touch PWNED)`touch PWNED2`$HOME\\n", tmp_path / "out", make_stubs(tmp_path)
    argv = [
        "deploy",
        "--model",
        "llama-3.1-70b",
        "--system",
        "hgx-h100",
        "--gpus",
        "16",
        "--disaggregate",
        "4:12",
        "--budget",
        "50ms",
        "--engine",
        "trtllm",
        "--speculative",
        "eagle",
        "--draft-model",
        draft,
    ]
    rc, stdout, err = _cli(capsys, *argv, "--emit", "slurm", str(out))
    assert rc == 0, err
    text = (out / "launch.sbatch").read_text()
    assert "<<EOF" not in text and text.count("<<'EOF'") == 3
    run = tmp_path / "run"
    run_slurm(text, run, bin_dir, 2)
    for side in ("context", "generation"):
        spec = yaml.safe_load((run / f"trtllm-{side}.yaml").read_text())["speculative_config"]
        assert spec["speculative_model_dir"] == draft
    urls = yaml.safe_load((run / "trtllm-disagg.yaml").read_text())["context_servers"]["urls"]
    assert urls == [f"{ip(0)}:8000", f"{ip(0)}:8001"]
    # the printed text, pasted into bash with the addresses filled in, writes the same files
    printed = stdout.split("trtllm: ", 1)[1].replace("\n" + " " * 9, "\n").split("\n[node")[0]
    pasted = tmp_path / "pasted"
    pasted.mkdir()
    env = {"PATH": "/usr/bin:/bin", "NODE0_IP": ip(0), "NODE1_IP": ip(1)}
    subprocess.run(["bash", "-c", printed], cwd=pasted, env=env, check=True)
    for name in ("trtllm-context.yaml", "trtllm-generation.yaml", "trtllm-disagg.yaml"):
        assert (pasted / name).read_text() == (run / name).read_text(), name
    assert not list(tmp_path.rglob("PWNED*"))


# --- 4. $VAR and a leading '-' ----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["m$HOME", "m$HOME ${PATH} 'q' \"d\" #c"], ids=["bare", "quoted"])
@pytest.mark.parametrize("engine", ENGINES)
def test_a_dollar_in_a_model_name_reaches_the_engine_as_written(tmp_path, capsys, engine, name):
    model, out, bin_dir = _folder(tmp_path, name), tmp_path / "out", make_stubs(tmp_path)
    rc, _, err = _cli(capsys, *_deploy(model, "--emit", "slurm", str(out), engine=engine))
    assert rc == 0, err
    got = run_slurm((out / "launch.sbatch").read_text(), tmp_path / "run", bin_dir, 1)
    cat = load_catalog()
    result = deploy(request(model, "hgx-h100", engine=engine, catalog=cat), gpus=8)
    launch = build_launches(result, load_model(model), cat.system("hgx-h100"), cat)[0][engine]
    assert got == expected_slurm(launch)
    assert all(model in rec for rec in got)  # every server got the folder, by its path, as one word
    assert model.endswith("/" + name) and os.path.isabs(model)


def test_a_leading_dash_is_refused_where_the_name_becomes_an_argument(tmp_path, capsys):
    model = _folder(tmp_path, "--trust-remote-code")
    _refused(*_cli(capsys, *_deploy(model)), "'--trust-remote-code' starts with '-'")
    _refused(*_cli(capsys, *_deploy("llama-3.1-8b", "--speculative", "eagle", "--draft-model", "-x")), "'-x'")
    rc, out, err = _cli(capsys, "plan", "--model", model, "--system", "hgx-h100", "--batch", "1")
    assert rc in (0, 1) and "--trust-remote-code" in out  # plan prints it; no command line takes it


# --- 5. a topo input file's name, fit's header --------------------------------------------------------


def test_a_newline_in_a_topo_input_name_is_refused(tmp_path, capsys):
    bad = tmp_path / "a\n[nccl.base_latency_us]\nring = { ll = 600.0, ll128 = 14.0, simple = 8.4 }\n#.txt"
    bad.write_bytes(TOPO.read_bytes())
    rc, out, err = _cli(
        capsys, "topo", str(bad), "--name", "mine", "--gpu", "h100-sxm", "--out", str(tmp_path / "p.toml")
    )
    _refused(rc, out, err, "topo input file name")
    assert not (tmp_path / "p.toml").exists()


INJECTED_TABLE = "x\n[nccl.base_latency_us]\nring = { ll = 600.0, ll128 = 14.0, simple = 8.4 }\n#"


def test_a_profile_header_cannot_carry_a_table():
    profile = TopoProfile(name="mine", system={"gpu": "h100-sxm"}, inputs=(INJECTED_TABLE,))
    text = profile.toml()
    assert set(tomllib.loads(text)) == {"meta", "systems"}
    assert tomllib.loads(text)["meta"]["inputs"] == [INJECTED_TABLE]
    assert text.split("\n")[0].startswith("# ") and "\\n[nccl.base_latency_us]" in text.split("\n")[0]


def _measured(t_us: float, bw_bytes_per_s: float) -> MeasurementSet:
    """All-reduce on 2-8 GPUs: t = t_us + size / bw (enough for fit_profile to fit)."""
    samples = tuple(
        Sample(
            op="all-reduce",
            msg_bytes=size,
            time_s=t_us * 1e-6 + size / bw_bytes_per_s,
            algbw_bytes_per_s=size / (t_us * 1e-6 + size / bw_bytes_per_s),
            busbw_bytes_per_s=0.0,
            n_ranks=p,
            n_nodes=1,
            in_place=False,
            graph=False,
            dtype="float",
            redop="sum",
            source="synthetic",
        )
        for p in (2, 4, 8)
        for size in (2.0**k for k in range(3, 31, 2))
    )
    return MeasurementSet(samples=samples, source="synthetic.txt", tool="nccl-tests", env={}, warnings=())


def test_fit_header_cannot_carry_a_table(tmp_path):
    r = fit_profile([_measured(20.0, 200e9)], name="h100-slow", base_system="hgx-h100", holdout=False)
    path = write_profile(dataclasses.replace(r, base_system=INJECTED_TABLE), tmp_path / "p.toml")
    doc = tomllib.loads(path.read_text())
    assert "nccl" not in doc and path.read_text().split("\n")[1].startswith("[")


# --- 6. escape sequences on the terminal --------------------------------------------------------------

ANSI = "m\x1b]0;PWNED\x07\x1b[31mred\x1b[0m"


@pytest.mark.parametrize("command", [["plan", "--batch", "1"], ["explain"], ["deploy", "--gpus", "8"]])
def test_an_escape_sequence_in_a_model_name_never_reaches_the_terminal(tmp_path, capsys, command):
    model = _folder(tmp_path, ANSI)
    rc, out, err = _cli(capsys, command[0], "--model", model, "--system", "hgx-h100", *command[1:])
    _refused(rc, out, err, "\\x1b")


def test_escape_sequences_from_a_config_or_a_catalog_are_printed_escaped(tmp_path, capsys):
    """What the boundary does not refuse (a config's model_type, a catalog's description and system
    name where the catalog takes them) is escaped when printed."""
    folder = tmp_path / "model"
    folder.mkdir()
    raw = LLAMA_8B.read_text().replace('"model_type": "llama"', '"model_type": "llama\\u001b[31m"')
    (folder / "config.json").write_text(raw)
    rc, out, err = _cli(capsys, "plan", "--model", str(folder), "--system", "hgx-h100", "--batch", "1")
    assert "\x1b" not in out + err, (rc, out, err)
    catalog = _catalog_with_system(tmp_path, ANSI)
    for command in (["plan", "--batch", "1"], ["explain"], ["deploy", "--gpus", "8"]):
        rc, out, err = _cli(
            capsys, command[0], "--model", "llama-3.1-8b", "--system", ANSI, "--catalog", str(catalog), *command[1:]
        )
        assert "\x1b" not in out + err and "\x07" not in out + err, (command, rc)
        assert rc == 2 or "\\x1b" in out, (command, rc, out[:300])


# --- 8. an output folder that cannot be written; a name that is not UTF-8 ---------------------------


def test_an_unwritable_emit_folder_is_refused_before_any_work(tmp_path, capsys, monkeypatch):
    real = os.access
    monkeypatch.setattr(os, "access", lambda p, mode, **kw: False if Path(p) == tmp_path else real(p, mode, **kw))
    _refused(*_cli(capsys, *_deploy("llama-3.1-8b", "--emit", "slurm", str(tmp_path / "out"))), "not writable")
    assert not (tmp_path / "out").exists()


def test_a_failed_write_is_one_line_and_leaves_nothing(tmp_path, capsys, monkeypatch):
    def read_only(path, data, **_):
        raise OSError(30, "Read-only file system")

    monkeypatch.setattr(emitting, "write_atomic", read_only)
    rc, out, err = _cli(capsys, *_deploy("llama-3.1-8b", "--emit", "k8s", str(tmp_path / "out")))
    assert rc == 2 and "internal error" not in err and len(err.strip().splitlines()) == 1, err
    assert "cannot write into" in err and "Read-only file system" in err
    assert not (tmp_path / "out").exists()
    rc, out, err = _cli(capsys, *_deploy("llama-3.1-8b", "--emit", "k8s", str(tmp_path / "out")))  # no --force needed
    assert "exists" not in err


def test_a_model_folder_not_in_utf8_is_refused_before_the_output_folder(tmp_path, capsys):
    model = _folder(tmp_path, b"bad\xff")
    _refused(*_cli(capsys, *_deploy(model, "--emit", "slurm", str(tmp_path / "out"))), "not valid UTF-8")
    assert not (tmp_path / "out").exists()
