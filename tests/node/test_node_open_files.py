"""A thousand nodes need a thousand UDP sockets: the node manager raises the soft RLIMIT_NOFILE
(often 1,024) within the hard limit, or refuses with one clear line before opening any port."""
from __future__ import annotations

import resource

import pytest

from twin.node import manager
from twin.node.manager import SPARE_OPEN_FILES, ensure_open_files


@pytest.fixture
def limits():
    """This process's soft limit, put back after the test (the hard limit is left alone)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    yield hard
    resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))


def test_the_soft_limit_is_raised_to_what_the_nodes_need(limits):
    nodes = 300
    if limits != resource.RLIM_INFINITY and limits < nodes + SPARE_OPEN_FILES:
        pytest.fail(f"this machine's hard RLIMIT_NOFILE ({limits}) is below what the test needs")
    resource.setrlimit(resource.RLIMIT_NOFILE, (128, limits))
    ensure_open_files(nodes)
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (nodes + SPARE_OPEN_FILES, limits)
    ensure_open_files(10)     # enough already: left alone
    assert resource.getrlimit(resource.RLIMIT_NOFILE) == (nodes + SPARE_OPEN_FILES, limits)


def test_a_hard_limit_too_low_is_one_clear_refusal_and_changes_nothing(monkeypatch):
    changed = []
    monkeypatch.setattr(manager.resource, "getrlimit", lambda which: (256, 1024))
    monkeypatch.setattr(manager.resource, "setrlimit", lambda which, value: changed.append(value))
    with pytest.raises(OSError) as refused:
        ensure_open_files(1000)
    assert str(refused.value) == (
        f"1000 nodes need about {1000 + SPARE_OPEN_FILES} open files, but this process may open at most 1024 "
        "(hard RLIMIT_NOFILE): raise it (ulimit -Hn, or LimitNOFILE= in a systemd unit) or serve fewer nodes")
    assert changed == []
