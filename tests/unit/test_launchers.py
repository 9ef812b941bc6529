"""A launcher's SIGTERM (torchrun's agent ends its ranks when its rendezvous or a peer node is
lost) must not end a rank silently: it becomes an exception the harness reports, except while a
failing rank is still finding out which peer was lost."""

import os
import signal
import time

import pytest

from shardbudget.measure.harness.launchers import Launch, LauncherStopped, stops_reported

LAUNCH = Launch(
    name="torchrun", rank=1, world_size=2, local_rank=0, local_world_size=1, master_addr="10.0.0.1", master_port=29400
)


def _term_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.5)  # the handler runs here, in the main thread


def test_sigterm_becomes_an_exception_that_names_the_launcher():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(LauncherStopped, match="torchrun sent SIGTERM"):
        with stops_reported(LAUNCH, lambda: False):
            _term_self()
    signal.signal(signal.SIGTERM, before)


def test_sigterm_is_held_back_while_the_rank_reports_its_failure(monkeypatch):
    from shardbudget.measure.harness import launchers

    exits = []
    monkeypatch.setattr(launchers, "TERM_GRACE_S", 0.2)
    monkeypatch.setattr(launchers, "_exit_after_term", lambda launch: exits.append(launch.rank))
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RuntimeError, match="the failure on its way out"):
        with stops_reported(LAUNCH, lambda: True):
            _term_self()  # ignored: the rank is already failing
            raise RuntimeError("the failure on its way out")
    assert signal.getsignal(signal.SIGTERM) is not before  # kept until the process exits
    signal.signal(signal.SIGTERM, before)
    time.sleep(0.5)
    assert exits == [1]  # the grace period ran out: a stuck rank would exit here


def test_the_handler_is_removed_after_a_clean_run():
    before = signal.getsignal(signal.SIGTERM)
    with stops_reported(LAUNCH, lambda: False):
        pass
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_rank_stuck_on_its_way_out_ends_after_the_grace_period():
    """Held back is not held forever: torchrun SIGKILLs after 30 s, so a failing rank that is stuck
    (a store call, a process group that will not close) exits after TERM_GRACE_S, saying why."""
    import subprocess
    import sys

    code = (
        "import os, signal, time\n"
        "from shardbudget.measure.harness import launchers\n"
        "launchers.TERM_GRACE_S = 0.5\n"
        "launch = launchers.Launch(name='torchrun', rank=1, world_size=2, local_rank=0, local_world_size=1,"
        " master_addr='10.0.0.1', master_port=29400)\n"
        "with launchers.stops_reported(launch, lambda: True):\n"
        "    os.kill(os.getpid(), signal.SIGTERM)\n"
        "    time.sleep(30)\n"
    )
    t0 = time.monotonic()
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and time.monotonic() - t0 < 15
    assert "error: rank 1: torchrun sent SIGTERM while the rank was reporting its failure" in done.stderr
