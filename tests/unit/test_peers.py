"""measure.harness.peers: how a surviving rank names the peer that is gone (no torch, no processes)."""

from shardbudget.measure.harness.peers import PeerReport, describe, node_count, ranks_at_addresses, short_error

GLOO = (
    "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error [10.0.0.2]:41234: "
    "Connection reset by peer. This is typically caused by a remote worker hanging or bugs in the "
    "application. Check the logs of the remote worker before reporting an error. GLHF!\nmore"
)
HOSTS, ADDRS = ["a", "b", "b", "c"], ["10.0.0.1", "10.0.0.2", "10.0.0.2", "fe80::3"]


def test_short_error_keeps_the_cause_and_drops_the_advice():
    assert short_error(GLOO) == (
        "[/pytorch/third_party/gloo/gloo/transport/tcp/pair.cc:537] Read error "
        "[10.0.0.2]:41234: Connection reset by peer"
    )


def test_lost_ranks_are_those_whose_heartbeat_stopped():
    report = PeerReport(store_ok=True, lost=(1, 2), failed=(3,), at={0: 4, 1: 4, 2: 4, 3: 4}, silence_s=2.5)
    assert (
        describe(report, rank=0, index=4, error=GLOO, hosts=HOSTS, addrs=ADDRS)
        == "lost ranks 1 (b, 10.0.0.2), 2 (b, 10.0.0.2): no heartbeat for 2.5 s"
    )


def test_a_rank_that_never_started_the_size_hung():
    report = PeerReport(store_ok=True, at={0: 4, 1: 4, 2: 3, 3: 4}, silence_s=2.5)
    assert (
        describe(report, rank=0, index=4, error="Timed out", hosts=HOSTS, addrs=ADDRS)
        == "rank 2 (b, 10.0.0.2) never started this size (hung?)"
    )
    assert (
        describe(
            PeerReport(store_ok=True, at={r: 4 for r in range(4)}), rank=0, index=4, error="", hosts=HOSTS, addrs=ADDRS
        )
        == ""
    )


def test_without_the_store_the_error_address_names_the_rank():
    report = PeerReport(store_ok=False, store_error="Connection reset by peer")
    assert describe(report, rank=3, index=1, error=GLOO, hosts=HOSTS, addrs=ADDRS) == (
        "the rendezvous store is unreachable (its node may be down); the error names ranks "
        "1 (b, 10.0.0.2), 2 (b, 10.0.0.2)"
    )
    assert (
        describe(report, rank=3, index=1, error="no address", hosts=HOSTS, addrs=ADDRS)
        == "the rendezvous store is unreachable (its node may be down)"
    )
    # the store's own address names its node, whether or not the error carries one (a launcher's
    # SIGTERM can end the rank before the collective reports the lost peer)
    there = PeerReport(store_ok=False, store_error="Connection refused", store_host="10.0.0.2")
    assert describe(
        there, rank=3, index=1, error="LauncherStopped: torchrun sent SIGTERM", hosts=HOSTS, addrs=ADDRS
    ) == (
        "the rendezvous store is unreachable (it ran on the node of ranks "
        "1 (b, 10.0.0.2), 2 (b, 10.0.0.2), which may be down)"
    )
    assert describe(there, rank=1, index=1, error="", hosts=HOSTS, addrs=ADDRS).endswith(
        "of rank 2 (b, 10.0.0.2), which may be down)"
    )
    # no heartbeats at all (a failure before they started): the address alone
    assert (
        describe(None, rank=3, index=1, error=GLOO, hosts=HOSTS, addrs=ADDRS)
        == "the error names ranks 1 (b, 10.0.0.2), 2 (b, 10.0.0.2)"
    )
    assert describe(None, rank=3, index=1, error="no address", hosts=HOSTS, addrs=ADDRS) == ""


def test_addresses_in_error_texts():
    assert ranks_at_addresses("peer [fe80::3]:5 and 10.0.0.1:77", ADDRS, exclude=0) == [3]
    assert ranks_at_addresses("version 2.27.3.1 at 10.0.0.11", ADDRS, exclude=-1) == []  # not 10.0.0.1


def test_nodes_are_distinct_host_and_address_pairs():
    assert node_count(["vm", "vm"], ["10.250.1.1", "10.250.1.2"]) == 2  # namespaces on one machine
    assert node_count(["a"] * 8 + ["b"] * 8, ["10.0.0.1"] * 8 + ["10.0.0.2"] * 8) == 2
    assert node_count(["a", "a"], None) == 1
