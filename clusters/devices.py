"""The 17 SimuHome device types (Appendix D) as Matter compositions.

Each builder returns the application endpoints; `create_device` adds the root endpoint.
"""
from __future__ import annotations

import random
from typing import Any

from .device import DEVICE_TYPES, Device, DeviceType, Endpoint, register
from .onoff import OnOffServer
from .status import MatterError, Status


def _on_off_light(**options: Any) -> list[Endpoint]:
    ep = Endpoint(1, [(0x0100, 3)])
    ep.add(OnOffServer(lighting=True))
    return [ep]


register(DeviceType("on_off_light", "On/Off Light", 0x0100, 3, _on_off_light))


def create_device(device_id: str, type_key: str, rng: random.Random | None = None,
                  **options: Any) -> Device:
    """Build a device of a registered type. `rng` seeds per-device identity (serials)."""
    try:
        device_type = DEVICE_TYPES[type_key]
    except KeyError:
        raise MatterError(Status.NOT_FOUND, f"unknown device type {type_key!r}; known: "
                          + ", ".join(sorted(DEVICE_TYPES))) from None
    return Device(device_id, device_type, device_type.build(**options), root_servers=[])
