"""A launcher's SIGTERM (torchrun's agent ends its ranks when its rendezvous or a peer node is
lost) must not end a rank silently: it becomes an exception the harness reports, except while a
failing rank is still finding out which peer was lost."""

import os
import signal
import time

import pytest

from shardbudget.measure.launchers import Launch, LauncherStopped, stops_reported

LAUNCH = Launch(name="torchrun", rank=1, world_size=2, local_rank=0, local_world_size=1,
                master_addr="10.0.0.1", master_port=29400)


def _term_self() -> None:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.5)  # the handler runs here, in the main thread


def test_sigterm_becomes_an_exception_that_names_the_launcher():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(LauncherStopped, match="torchrun sent SIGTERM"):
        with stops_reported(LAUNCH, lambda: False):
            _term_self()
    signal.signal(signal.SIGTERM, before)


def test_sigterm_is_held_back_while_the_rank_reports_its_failure():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(RuntimeError, match="the failure on its way out"):
        with stops_reported(LAUNCH, lambda: True):
            _term_self()  # ignored: the rank is already failing
            raise RuntimeError("the failure on its way out")
    assert signal.getsignal(signal.SIGTERM) is not before  # kept until the process exits
    signal.signal(signal.SIGTERM, before)


def test_the_handler_is_removed_after_a_clean_run():
    before = signal.getsignal(signal.SIGTERM)
    with stops_reported(LAUNCH, lambda: False):
        pass
    assert signal.getsignal(signal.SIGTERM) is before
