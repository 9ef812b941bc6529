"""Files in and out (issue 33, items 9 and 10): user files are read within a bound on the bytes read
(not st_size, 0 for devices), regular files only (a FIFO never hangs); writes never replace a file
that appeared since the check without --force, keep a replaced file's mode, and leave no temporary
file behind, whatever stops them."""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from shardbudget import atomic, cli
from shardbudget.atomic import check_output_path, read_user_file, write_atomic
from shardbudget.errors import OutputError, ShardbudgetError

SRC = str(Path(atomic.__file__).resolve().parents[1])


def _temps(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# --- reading --------------------------------------------------------------------------------


def test_a_regular_file_is_read_whole_up_to_the_limit(tmp_path):
    f = tmp_path / "a.log"
    f.write_bytes(b"x" * 1000)
    assert read_user_file(f, what="a log", limit=1000) == b"x" * 1000
    with pytest.raises(ShardbudgetError, match=r"a.log: larger than 999 B \(read stopped there\); expected a log"):
        read_user_file(f, what="a log", limit=999)


def test_devices_are_refused_before_reading(tmp_path):
    # st_size is 0 for both: the old size check let them through, to read without end
    for dev in ("/dev/zero", "/dev/urandom"):
        with pytest.raises(ShardbudgetError, match=f"{dev}: is a device, not a regular file; expected a log"):
            read_user_file(dev, what="a log", limit=2**20)


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    done = []
    t = threading.Thread(
        target=lambda: done.append(pytest.raises(ShardbudgetError, read_user_file, fifo, what="a log", limit=10))
    )
    t.start()
    t.join(5)
    assert not t.is_alive(), "reading a FIFO blocked"
    assert "is a FIFO (named pipe), not a regular file" in str(done[0].value)


def test_a_file_whose_size_says_0_is_still_bounded_by_what_is_read():
    # /proc files report st_size 0 and are regular: the bound is on the bytes read
    data = read_user_file("/proc/self/status", what="text", limit=1 << 20)
    assert data.startswith(b"Name:")
    with pytest.raises(ShardbudgetError, match="larger than 16 B"):
        read_user_file("/proc/self/status", what="text", limit=16)


def test_missing_and_folder(tmp_path):
    with pytest.raises(ShardbudgetError, match="nope: no such file"):
        read_user_file(tmp_path / "nope", what="a log", limit=10)
    with pytest.raises(ShardbudgetError, match="is a directory"):
        read_user_file(tmp_path, what="a log", limit=10)


@pytest.mark.parametrize(
    ("argv", "text"),
    [
        (["check", "/dev/zero", "--system", "hgx-h100"], "/dev/zero: is a device"),
        (["fit", "/dev/urandom", "--name", "x", "--base-system", "hgx-h100"], "/dev/urandom: is a device"),
        (["plan", "--model", "/dev/zero", "--system", "hgx-h100"], "/dev/zero: is a device"),
        (["fabrics", "--catalog", "/dev/urandom"], "/dev/urandom: is a device"),
        (["topo", "/dev/zero", "--name", "x", "--gpu", "l40s"], "/dev/zero: is a device"),
        (
            ["plan", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--jitter", "/dev/zero"],
            "/dev/zero: is a device",
        ),
        (
            ["report", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--measured", "/dev/zero", "--out", "r.html"],
            "/dev/zero: is a device",
        ),
    ],
)
def test_every_reader_of_user_files_refuses_a_device(argv, text, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert cli.main(argv) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and text in err, err
    assert list(tmp_path.iterdir()) == []


def test_every_reader_of_user_files_refuses_a_fifo_without_hanging(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [SRC, os.environ.get("PYTHONPATH")]))}
    for argv in (
        ["check", str(fifo), "--system", "hgx-h100"],
        ["plan", "--model", str(fifo), "--system", "hgx-h100"],
        ["fabrics", "--catalog", str(fifo)],
        ["topo", str(fifo), "--name", "x", "--gpu", "l40s"],
    ):
        p = subprocess.run(
            [sys.executable, "-m", "shardbudget", *argv],
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
            cwd=tmp_path,
        )
        assert p.returncode == 2 and "is a FIFO (named pipe)" in p.stderr, (argv, p.stderr)


# --- writing --------------------------------------------------------------------------------


def test_a_new_file_gets_the_umask_mode(tmp_path):
    old = os.umask(0o027)
    try:
        write_atomic(tmp_path / "a.txt", "x", force=False)
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "a.txt").stat().st_mode) == 0o640
    assert _temps(tmp_path) == []


def test_force_keeps_the_mode_of_the_file_it_replaces(tmp_path):
    f = tmp_path / "secret.toml"
    f.write_text("old")
    f.chmod(0o600)
    write_atomic(f, "new", force=True)
    assert f.read_text() == "new" and stat.S_IMODE(f.stat().st_mode) == 0o600
    assert _temps(tmp_path) == []


def test_a_file_that_appeared_since_the_check_is_not_replaced(tmp_path):
    f = tmp_path / "launch.sbatch"
    check_output_path(f, force=False)  # the command's check, before its work
    f.write_text("the other run's script")  # another run finished first
    with pytest.raises(OutputError, match="launch.sbatch exists .*another run.* pass --force"):
        write_atomic(f, "ours", force=False)
    assert f.read_text() == "the other run's script" and _temps(tmp_path) == []


@pytest.mark.parametrize("exc", [KeyboardInterrupt, OSError])
def test_the_temporary_file_is_removed_when_the_write_fails(exc, tmp_path, monkeypatch):
    def boom(fd):
        raise exc("stopped")

    monkeypatch.setattr(atomic.os, "fsync", boom)
    with pytest.raises(exc):
        write_atomic(tmp_path / "out.json", "{}", force=True)
    assert list(tmp_path.iterdir()) == []


def test_sigterm_during_a_write_removes_the_temporary_file_and_exits_143(tmp_path):
    code = (
        "import os, signal, sys\n"
        "from shardbudget import atomic\n"
        "real = os.fsync\n"
        "def slow(fd):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    real(fd)\n"
        "atomic.os.fsync = slow\n"
        f"atomic.write_atomic({str(tmp_path / 'out.json')!r}, 'x' * 100, force=True)\n"
        "print('not reached')\n"
    )
    env = {**os.environ, "PYTHONPATH": SRC}
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env)
    assert p.returncode == 128 + signal.SIGTERM and "not reached" not in p.stdout, p.stderr
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # this process's own handler untouched


def test_a_killed_writers_temporary_file_is_swept_by_the_next_write(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    pid = int(dead.stdout)
    host = atomic._host()
    stale = tmp_path / f".out.json.{pid}@{host}.0123abcd.tmp"
    mine = tmp_path / f".out.json.{os.getpid()}@{host}.89abcdef.tmp"  # a live writer's: kept
    other_host = tmp_path / f".out.json.{pid}@elsewhere.0123abcd.tmp"  # another host's: cannot tell, kept
    for f in (stale, mine, other_host):
        f.write_text("half")
    write_atomic(tmp_path / "out.json", "{}", force=False)
    assert not stale.exists() and mine.exists() and other_host.exists()


def test_two_deploy_emits_into_one_folder_do_not_both_say_wrote(tmp_path, monkeypatch, capsys):
    """The second of two runs started together: its check passed before the first wrote; it must fail
    and leave the first run's file, not print 'wrote' over it (issue 33, item 10)."""
    from shardbudget.decide.launch import emit as emit_module

    real = emit_module.slurm_files

    def first_run_finishes_meanwhile(launch, result):
        files = real(launch, result)
        (tmp_path / "D").mkdir(exist_ok=True)
        (tmp_path / "D" / "launch.sbatch").write_text("#!/bin/bash\n# the first run's\n")
        return files

    monkeypatch.setattr(emit_module, "slurm_files", first_run_finishes_meanwhile)
    monkeypatch.chdir(tmp_path)
    code = cli.main(
        ["deploy", "--model", "llama-3.1-8b", "--system", "hgx-h100", "--gpus", "8", "--emit", "slurm", "D"]
    )
    err = capsys.readouterr().err
    assert code == 2 and "launch.sbatch exists" in err and "wrote" not in err, err
    assert (tmp_path / "D" / "launch.sbatch").read_text().endswith("# the first run's\n")
    assert _temps(tmp_path / "D") == []
