"""Shared machinery of the real-controller acceptance tests (test_e2e_*.py): one namespace per
test module holding python-matter-server and `twin run`, and scenario functions run inside
it against the server's WebSocket API and the twin's HTTP tool API.

The processes come from test_e2e_matter_server (start_server / start_twin / stop / tail and
its `Twin` HTTP client), so every e2e test starts them the same way.
"""
from __future__ import annotations

import asyncio
import contextlib
import importlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from netns import Netns, network_namespace
from test_e2e_matter_server import controller_session, start_server, start_twin, stop, tail


@dataclass
class TwinLab:
    ns: Netns
    workdir: Path
    server: Any
    twin: Any

    def logs(self) -> str:
        return (f"--- twin:\n{tail(self.workdir / 'twin.log')}\n--- server:\n"
                f"{tail(self.workdir / 'server.log', 12000)}")

    def call(self, module: str, scenario: str, state: Any = None, timeout: float = 240) -> Any:
        """Run `module.scenario(client, twin, state)` inside the namespace; failures carry the logs."""
        try:
            return self.ns.call(run_scenario, module, scenario, state, timeout=timeout)
        except Exception as err:
            raise AssertionError(f"{err}\n{self.logs()}") from None


@contextlib.contextmanager
def twin_lab(workdir: Path, prefix: str, *twin_args: str) -> Iterator[TwinLab]:
    with network_namespace(prefix) as ns:
        server = start_server(ns, workdir)
        twin = None
        try:
            twin = start_twin(ns, workdir, "twin.log", *twin_args)
            yield TwinLab(ns, workdir, server, twin)
        finally:
            if twin is not None:
                stop(twin)
            stop(server)


def run_scenario(module: str, scenario: str, state: Any) -> Any:
    """In the namespace: connect to python-matter-server and run the scenario coroutine."""
    func = getattr(importlib.import_module(module), scenario)
    return asyncio.run(controller_session(func, state))


def attribute_classes(cluster_name: str, attribute_name: str) -> tuple[Any, Any]:
    """(cluster class, attribute class) from chip.clusters.Objects by spec names."""
    from chip.clusters import Objects as Clusters
    cluster = getattr(Clusters, cluster_name)
    return cluster, getattr(cluster.Attributes, attribute_name)


def per_reader(cluster_name: str, attribute_name: str) -> bool:
    """True for an attribute whose value depends on the reader's fabric (clusters.base.per_reader):
    the tool API reads with none, the controller with its own."""
    from clusters.base import per_reader as readers
    cluster, attribute = attribute_classes(cluster_name, attribute_name)
    return (cluster.id, attribute.attribute_id) in readers()


def only_the_readers_entry(got: Any, local: Any) -> bool:
    """A per-reader list (FabricSceneInfo) as the controller (fabric 1) read it, `got`, and as the
    tool API (no fabric) did, `local`: the controller's own entry alone, and nothing."""
    return local == [] and [e["fabricIndex"] for e in got] == [1]


def server_value_json(node: Any, endpoint: int, cluster_name: str, attribute_name: str) -> tuple[bool, Any]:
    """(present, value as the twin's JSON) of one attribute in python-matter-server's node."""
    from clusters.values import to_json
    cluster, attribute = attribute_classes(cluster_name, attribute_name)
    path = f"{endpoint}/{cluster.id}/{attribute.attribute_id}"
    if path not in node.node_data.attributes:
        return False, None
    return True, to_json(node.endpoints[endpoint].get_attribute_value(cluster.id, attribute))
