"""Shared fixtures and the `e2e` marker. Kept thin: the machinery lives in the modules it imports.

Tests mirror the packages (tests/protocol, tests/node, tests/clusters, ...). Tests that need a
network namespace, python-matter-server or matter.js carry `@pytest.mark.e2e`; the fast suite
is `pytest -m unit` (every test without `e2e` gets the `unit` marker). A test that creates a
namespace without the marker fails, so the fast suite can never start a controller or send a packet.
"""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import netns  # noqa: E402  (tests/ on the path first)
from adversarial import ADVERSARIAL  # noqa: E402

TESTS = Path(__file__).resolve().parent

# Shared helpers (netns, e2e_twin, ...) live in tests/; test modules import each other's
# fixtures (for example the IM `Link`) across package folders, so every folder is importable.
for folder in netns.test_folders():
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("e2e") is None:
            item.add_marker(pytest.mark.unit)
        if Path(item.path).relative_to(TESTS).as_posix() in ADVERSARIAL:
            item.add_marker(pytest.mark.adversarial)


def pytest_runtest_setup(item: pytest.Item) -> None:
    netns.ALLOWED = item.get_closest_marker("e2e") is not None


def pytest_runtest_teardown(item: pytest.Item) -> None:
    netns.ALLOWED = False


@pytest.fixture(name="netns")
def netns_fixture():
    """A fresh network namespace (see tests/netns.py), deleted after the test."""
    with netns.network_namespace() as ns:
        yield ns
