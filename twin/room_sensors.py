"""Room-sensor nodes: each room's temperature, humidity, illuminance and PM10 as Matter sensors.

A controller (or the Matter backend) reads a room exactly as it would read real sensors. Each
room gets one `room_sensor` device (clusters/devices.py: Temperature, Humidity, Light and Air
Quality Sensor endpoints). The devices are views: every MeasuredValue is derived at read time
from the room through `sensor_source` (the same wiring the home gives device sensors, see
`Home._place`), so nothing of the room is stored twice.

They are deliberately not in `home.devices`: tools, snapshots, forks and the benchmark see
exactly the SimuHome devices. The node runtime serves them as extra nodes (one per room), and
bridge mode bridges them next to the home's devices.

Their identities come from `random.Random(f"{home.seed}/{room_id}")`, never from `home.rng`,
so building them leaves the home's random stream (and so its snapshots) untouched.
"""
from __future__ import annotations

import functools
import random
from typing import Any

from clusters.device import Device
from clusters.devices import NODE_ONLY_TYPES, create_device
from twin import physics

ROOM_SENSOR_TYPE = NODE_ONLY_TYPES["room_sensor"]


def room_sensor_id(room_id: str) -> str:
    """The sensor node's device id. '@' is outside the home-file id pattern, so it never
    clashes with a device or room id (node storage directories are named by device id)."""
    return f"sensors@{room_id}"


def _room_value(home: Any, device_id: str, room_id: str, quantity: str) -> float:
    """The room's value as the sensor node measures it (through its faults, twin/faults.py)."""
    return home.faults.sense(device_id, quantity, getattr(home.rooms[room_id], quantity))


def room_sensor_device(home: Any, room_id: str) -> Device:
    """The sensor node of one room, its measurements wired to the room and clock to the home."""
    room = home.rooms[room_id]
    device = create_device(room_sensor_id(room_id), ROOM_SENSOR_TYPE,
                           rng=random.Random(f"{home.seed}/{room_id}"), name=f"{room.name} sensors")
    for server in device.servers():
        server.clock = home.clock
        quantity = physics.sensor_quantity(device, server)
        if quantity is not None:
            server.sensor_source = functools.partial(_room_value, home, device.id, room_id, quantity)
    return device


def room_sensor_devices(home: Any) -> dict[str, Device]:
    """One sensor node per room of `home`, keyed by room id, in the home's room order."""
    return {room_id: room_sensor_device(home, room_id) for room_id in home.rooms}
