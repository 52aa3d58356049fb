"""Shared fixtures. Kept thin: the machinery lives in the modules it imports."""
import pytest

from netns import network_namespace


@pytest.fixture
def netns():
    """A fresh network namespace (see tests/netns.py), deleted after the test."""
    with network_namespace() as ns:
        yield ns
