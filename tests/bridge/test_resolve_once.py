"""Each call path resolves its target once: an agent's execute_command and a Matter Invoke
locate the cluster server and resolve the command name one time each, and pass the resolved
server and spec name down (Device.invoke_on), not the ids to look up again."""
from __future__ import annotations

import collections

import pytest
from chip.clusters import Objects as C
from test_node_im_server import Link, invoke_status

from bridge import tools
from bridge.tools import call_tool
from bridge.twin_backend import TwinBackend
from clusters.base import ClusterServer
from clusters.device import Device
from clusters.devices import create_device
from matter_protocol.interaction import CommandData, CommandPath, InvokeRequest
from matter_protocol.tlv import Struct
from twin.home import Home


@pytest.fixture
def lookups(monkeypatch: pytest.MonkeyPatch) -> collections.Counter[str]:
    """Counts of every cluster lookup, command-name resolution and argument parse."""
    counts: collections.Counter[str] = collections.Counter()

    def counted(owner: object, name: str) -> None:
        original = getattr(owner, name)

        def wrapper(*args: object, **kwargs: object) -> object:
            counts[name] += 1
            return original(*args, **kwargs)
        monkeypatch.setattr(owner, name, wrapper)

    counted(Device, "locate")
    counted(ClusterServer, "resolve_command")
    counted(tools, "parse_arguments")
    return counts


def test_a_tool_call_resolves_its_target_once(lookups: collections.Counter[str]):
    home = Home.default()
    light = next(d for d in home.devices.values() if d.type.key == "dimmable_light")
    backend = TwinBackend(home)
    lookups.clear()   # building the home looks its servers up
    result = call_tool(backend, "execute_command", {"device.id": light.id, "endpoint.id": 1,
                                                   "cluster.id": "LevelControl", "command.id": "MoveToLevel",
                                                   "args": {"level": 100, "transitionTime": 0,
                                                            "optionsMask": 0, "optionsOverride": 0}})
    assert result["ok"], result
    assert lookups == {"locate": 1, "resolve_command": 1, "parse_arguments": 1}
    assert light.read("LevelControl", "CurrentLevel") == 100


def test_a_matter_invoke_resolves_its_target_once(lookups: collections.Counter[str]):
    device = create_device("lamp", "dimmable_light")
    link = Link(device)
    lookups.clear()   # setting the node up reads its own servers
    ib = invoke_status(link.request(InvokeRequest([CommandData(CommandPath(1, C.OnOff.id, 1), Struct())])))
    assert ib.status.status.status == 0
    assert lookups["locate"] == 1 and lookups["resolve_command"] == 1
    assert device.read("OnOff", "OnOff") is True
