"""A node as a Binding's sender, sans-IO: two `NodeCore`s on one fabric, fed each other's
datagrams. The switch's core opens CASE to the light as an initiator, then invokes over it; a
second press reuses the session; the light's ACL decides; a target on no fabric of ours is
refused without sending anything."""
from __future__ import annotations

import logging
import random

from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue
from test_node_runtime import make_core

from matter_protocol import certs
from matter_protocol.exchange import Send
from matter_protocol.interaction import CommandData, CommandPath
from twin.node.fabrics import Fabric
from twin.node.values import Typed

AC = Clusters.AccessControl
SWITCH, LIGHT = 0x55, 0x66
ADDRESS = {"switch": ("fe80::55", 5540), "light": ("fe80::66", 5540)}


def fabrics(operate: bool) -> tuple[Fabric, Fabric]:
    rng = random.Random(4)
    root, root_key = certs.mint_root(1, 0x1234, rng=rng)
    built = []
    for node_id in (SWITCH, LIGHT):
        noc, key = certs.mint_noc(root, root_key, node_id, 0x1234, rng=rng)
        built.append(Fabric.build(1, root.to_tlv(), None, noc.to_tlv(), key, bytes(range(16)), vendor_id=0xFFF1))
    if operate:   # the light lets the switch's node id operate its OnOff (endpoint 1)
        built[1].acl.append(AC.Structs.AccessControlEntryStruct(
            privilege=AC.Enums.AccessControlEntryPrivilegeEnum.kOperate,
            authMode=AC.Enums.AccessControlEntryAuthModeEnum.kCase, subjects=[SWITCH],
            targets=[AC.Structs.AccessControlTargetStruct(cluster=Clusters.OnOff.id, endpoint=1,
                                                          deviceType=NullValue)], fabricIndex=1))
    return built[0], built[1]


def pair(tmp_path, operate: bool = True):
    cores = {}
    for name, fabric in zip(("switch", "light"), fabrics(operate), strict=True):
        core, commissioning = make_core(tmp_path / name)
        commissioning.table.add_pending(fabric)
        commissioning.table.commit()
        cores[name] = core
    return cores


def pump(cores, actions, sender: str, now: float) -> float:
    queue = [(sender, a.data) for a in actions if isinstance(a, Send)]
    while queue:
        sender, data = queue.pop(0)
        to = "light" if sender == "switch" else "switch"
        now += 1
        queue += [(to, a.data) for a in cores[to].receive(data, ADDRESS[sender], now) if isinstance(a, Send)]
    return now


def toggle() -> list[CommandData]:
    command = Clusters.OnOff.Commands.Toggle()
    return [CommandData(CommandPath(1, Clusters.OnOff.id, command.command_id), Typed(type(command), command))]


def test_the_switch_opens_case_to_the_light_then_invokes_and_reuses_the_session(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="twin.node.core")
    cores = pair(tmp_path)
    light = cores["light"].im.device
    assert not light.read("OnOff", "OnOff")
    now = pump(cores, cores["switch"].invoke_remote(1, LIGHT, ADDRESS["light"], toggle(), 0), "switch", 0)
    assert light.read("OnOff", "OnOff")
    assert cores["switch"].counts["CASE established"] == 1 and cores["light"].counts["CASE established"] == 1
    (session,) = cores["switch"].layer.sessions.secure_sessions()
    assert (session.peer_node_id, session.local_node_id, session.fabric_index) == (LIGHT, SWITCH, 1)
    pump(cores, cores["switch"].invoke_remote(1, LIGHT, ADDRESS["light"], toggle(), now), "switch", now)
    assert not light.read("OnOff", "OnOff")
    assert cores["switch"].counts["CASE established"] == 1   # the session it had
    assert caplog.text.count(f"bound command 0x6/0x2 to node {LIGHT:#x} endpoint 1: status 0x0") == 2


def test_the_lights_acl_decides_and_an_unknown_fabric_sends_nothing(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="twin.node.core")
    cores = pair(tmp_path, operate=False)
    pump(cores, cores["switch"].invoke_remote(1, LIGHT, ADDRESS["light"], toggle(), 0), "switch", 0)
    assert not cores["light"].im.device.read("OnOff", "OnOff")
    assert "status 0x7e" in caplog.text   # UNSUPPORTED_ACCESS
    assert cores["switch"].invoke_remote(2, LIGHT, ADDRESS["light"], toggle(), 100) == []
    assert "no fabric 2" in caplog.text
