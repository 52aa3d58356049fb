"""What NodeManager serves: the home's devices plus one room-sensor node per room (codes,
names, cores built on the room's live values), and the discrete events of servers the home
does not step (a room sensor's Identify ends on time)."""
from __future__ import annotations

import asyncio
import random

from chip.clusters import Objects as Clusters

from matter_twin.console import codes_rows
from twin.home import Home
from twin.node.manager import MatterNode, NodeManager
from twin.node.pairing import home_pairings


def small_home() -> Home:
    home = Home("small", seed=4)
    home.add_room("kitchen")
    home.add_room("bedroom")
    home.add_device("light", "on_off_light", "kitchen", name="Kitchen Light")
    return home


def build(home, storage):
    async def go():
        manager = NodeManager(home, storage, rng=random.Random(1))
        nodes = {device_id: MatterNode(device, manager._build_core(device, manager.pairings[device_id]),
                                       manager.base_port + index)
                 for index, (device_id, device) in enumerate(manager.devices.items())}
        return manager, nodes
    return asyncio.run(go())


def test_every_room_gets_a_sensor_node_with_its_own_codes(tmp_path):
    home = small_home()
    manager, nodes = build(home, tmp_path)
    assert list(manager.devices) == ["light", "sensors@kitchen", "sensors@bedroom"]
    rows = manager.codes()
    assert [(r["device"], r["name"], r["port"]) for r in rows] == [
        ("light", "Kitchen Light", 5540), ("sensors@kitchen", "kitchen sensors", 5541),
        ("sensors@bedroom", "bedroom sensors", 5542)]
    assert len({r["discriminator"] for r in rows}) == 3 and len({r["manual_code"] for r in rows}) == 3
    # The device's codes do not depend on the sensors; `twin codes` lists the same rows.
    assert manager.pairings["light"] == home_pairings(home)["light"]
    assert [{k: v for k, v in r.items() if k != "port"} for r in rows] == codes_rows(home)
    assert (tmp_path / "sensors@kitchen").is_dir()   # its own attestation material and fabrics

    # The node's servers are views of the room: a changed room is what the node reads.
    sensor = nodes["sensors@kitchen"].device
    temperature = next(s for s in sensor.servers() if s.cluster is Clusters.TemperatureMeasurement)
    assert temperature.read("MeasuredValue") == round(home.rooms["kitchen"].temperature * 100)
    home.device("light").invoke(Clusters.OnOff, "On")
    home.advance(3600)                       # the lit room warms and brightens over an hour
    assert temperature.read("MeasuredValue") == round(home.rooms["kitchen"].temperature * 100)


def test_poll_runs_the_events_the_home_does_not_step(tmp_path):
    home = small_home()
    manager, nodes = build(home, tmp_path)
    identify = next(s for s in nodes["sensors@bedroom"].device.servers() if s.cluster is Clusters.Identify)
    heard = []
    identify.listeners.append(lambda server, name: heard.append(name))
    identify.invoke("Identify", Clusters.Identify.Commands.Identify(identifyTime=2))
    home.advance(1.0)
    assert identify.read("IdentifyTime") == 1
    home.advance(1.5)
    assert identify.read("IdentifyTime") == 0 and identify.next_event_tick() is not None
    heard.clear()
    manager._settle_unstepped()              # what poll() does after each simulation step
    assert identify.next_event_tick() is None and "IdentifyTime" in heard


def build_bridge_manager(home, storage):
    async def go():
        manager = NodeManager(home, storage, rng=random.Random(1), as_bridge=True)
        (device_id, device), = manager.devices.items()
        manager.nodes[device_id] = MatterNode(device, manager._build_core(device, manager.pairings[device_id]),
                                              manager.base_port)
        return manager
    return asyncio.run(go())


def parts(bridge, endpoint):
    return bridge.read(Clusters.Descriptor, "PartsList", endpoint)


def test_bridge_mode_is_one_node_whose_endpoint_ids_survive_restarts_and_follow_the_home(tmp_path):
    home = small_home()
    manager = build_bridge_manager(home, tmp_path)
    bridge = manager.bridge
    assert list(manager.devices) == ["@bridge"] and [r["device"] for r in manager.codes()] == ["@bridge"]
    # `twin codes @bridge` / `--aggregator` print the codes this node takes
    assert [{k: r[k] for k in ("device", "manual_code", "qr_code")} for r in manager.codes()] == \
        [{k: r[k] for k in ("device", "manual_code", "qr_code")} for r in codes_rows(home, aggregator=True)]
    assert sorted(bridge.bridged) == ["light", "sensors@bedroom", "sensors@kitchen"]
    ids = {d: bridge.endpoint_ids(d) for d in bridge.bridged}
    assert (tmp_path / "@bridge" / "bridge.json").exists()

    # A device added to the home at run time is bridged at the next poll; the IM hears it.
    im = manager.nodes["@bridge"].core.im
    home.add_device("fan", "fan", "kitchen")
    manager._sync_bridge()                   # what poll() does first after each step
    fan_ids = bridge.endpoint_ids("fan")
    assert set(fan_ids) <= set(parts(bridge, 1)) and set(fan_ids) <= set(parts(bridge, 0))
    fan_server = bridge.endpoints[fan_ids[0]].servers[Clusters.FanControl.id]
    assert im._on_change in fan_server.listeners    # (the IM maps it to its bridged path)

    # A restart on the same storage keeps every id, the run-time addition's too.
    again = build_bridge_manager(home, tmp_path).bridge
    assert {d: again.endpoint_ids(d) for d in ids} == ids and again.endpoint_ids("fan") == fan_ids

    # A device gone from the home is unbridged: out of PartsList, its ids never reused.
    del home.devices["light"]
    manager._sync_bridge()                   # what poll() does first after each step
    assert "light" not in bridge.bridged and not set(ids["light"]) & set(parts(bridge, 1))
    home.add_device("lamp", "on_off_light", "bedroom")
    manager._sync_bridge()                   # what poll() does first after each step
    assert not set(bridge.endpoint_ids("lamp")) & set(ids["light"])
