"""Bridge mode (`twin run --as-bridge`): the whole home as one Matter Bridge node.

`build_bridge(home)` bridges every home device, then every room's sensor node
(twin/room_sensors.py), in that order, onto a `clusters.aggregator.Bridge`: root
endpoint 0, Aggregator on endpoint 1, bridged endpoints from 2. The bridge holds the home's
own servers, so tools, physics and Matter controllers act on the same state, and the home
itself is untouched (its devices, snapshots and random stream are the same with or without
a bridge).

The node runtime serves the returned object like any device node. It should persist
`bridge.allocation()` in its storage directory and pass it back (`allocation=`) after a
restart so controllers keep their endpoint ids; a device added to the home at run time is
bridged with `bridge.add_device(home.device(id))`.
"""
from __future__ import annotations

import random
from typing import Any

from clusters.aggregator import BRIDGE_PRODUCT_ID, BRIDGE_TYPE, Bridge
from clusters.basic_information import BasicInformationServer
from twin.room_sensors import room_sensor_devices

#: The bridge node's device id ('@' is outside the home-file id pattern: no clash with devices).
BRIDGE_ID = "@bridge"


def build_bridge(home: Any, *, room_sensors: bool = True,
                 allocation: dict[str, Any] | None = None) -> Bridge:
    rng = random.Random(f"{home.seed}/{BRIDGE_ID}")   # never home.rng: the home stays as it is
    identity = BasicInformationServer(
        VendorName="matter-twin", ProductName=f"Twin {BRIDGE_TYPE.label}"[:32], ProductID=BRIDGE_PRODUCT_ID,
        NodeLabel=str(home.name)[:32], SerialNumber=f"TW{rng.getrandbits(40):010X}",
        UniqueID=f"{rng.getrandbits(64):016X}")
    bridge = Bridge(BRIDGE_ID, identity, allocation=allocation)
    for server in bridge.servers():
        server.clock = home.clock
    for device in home.devices.values():
        bridge.add_device(device)
    if room_sensors:
        for device in room_sensor_devices(home).values():
            bridge.add_device(device)
    return bridge
