"""Every command a cloned product accepts is served: each accepted command of each committed
dump (the hand-written product and the export of each of our device types) is invoked with its
default arguments on the clone; it succeeds or answers a spec status, never
UNSUPPORTED_COMMAND for a command its AcceptedCommandList names, and never an exception.
(Device-level rules of our own types, such as an AC refusing setpoints while off, are not
part of a dump, so a clone is not held to them; test_clone.py checks that the RVC, thermostat
and colour light clones answer exactly as ours.)"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import chip.clusters.Objects as Clusters
import pytest

from clusters.clone import export_attributes, load_product, product_type, read_dump
from clusters.devices import DEVICE_TYPES, create_device
from clusters.status import MatterError

PLUG = Path(__file__).parent.parent / "data" / "products" / "acme_plug.json"
CLUSTERS = {c.id: c for c in vars(Clusters).values() if isinstance(c, type) and hasattr(c, "Commands")
            and isinstance(getattr(c, "id", None), int)}


def _accepted(device: Any) -> list[tuple[int, type, type]]:
    """(endpoint, cluster class, command class) for every accepted command of the device."""
    out = []
    for ep_id, endpoint in sorted(device.endpoints.items()):
        for cluster_id, server in sorted(endpoint.servers.items()):
            cluster = CLUSTERS.get(cluster_id)
            if cluster is None:
                continue
            commands = {k.command_id: k for k in vars(cluster.Commands).values()
                        if isinstance(k, type) and getattr(k, "is_client", False)}
            out += [(ep_id, cluster, commands[c]) for c in server.read("AcceptedCommandList") or []
                    if c in commands]
    return out


def _outcome(device: Any, ep_id: int, cluster: type, command: type) -> str:
    defaults = command()
    args = {f.Label: getattr(defaults, f.Label) for f in command.descriptor.Fields}
    try:
        return repr(device.invoke(cluster.__name__, command.__name__, args, ep_id))
    except MatterError as exc:
        return f"MatterError: {exc}"


def _clone(dump: dict[str, Any]) -> Any:
    return create_device("clone", product_type("clone", load_product({"attributes": dump})))


@pytest.mark.parametrize("key", sorted(DEVICE_TYPES))
def test_every_accepted_command_of_a_cloned_type_is_served(key):
    ours = create_device("d", key)
    clone = _clone(json.loads(json.dumps(export_attributes(ours))))
    accepted = _accepted(clone)
    assert [(e, c.__name__, k.__name__) for e, c, k in accepted] == \
        [(e, c.__name__, k.__name__) for e, c, k in _accepted(ours)]
    for ep_id, cluster, command in accepted:
        theirs = _outcome(clone, ep_id, cluster, command)
        assert "UNSUPPORTED_COMMAND" not in theirs, (ep_id, cluster.__name__, command.__name__, theirs)


def test_every_accepted_command_of_the_hand_written_product_acts():
    device = create_device("plug", product_type("acme_plug", read_dump(str(PLUG))))
    accepted = _accepted(device)
    assert accepted
    before = json.dumps(export_attributes(device), sort_keys=True, default=str)
    for ep_id, cluster, command in accepted:
        assert "UNSUPPORTED_COMMAND" not in _outcome(device, ep_id, cluster, command), command.__name__
    assert json.dumps(export_attributes(device), sort_keys=True, default=str) != before
