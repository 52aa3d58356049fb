"""The device catalogue: every device type a home file can name, described from the type
itself (a device built from it), never from a hand-kept list.

Each entry: its key and label, Matter device type id and revision, ProductID, its endpoints
(device types, server and client clusters), whether it has physics (it moves or reads the
room's physics, or simulates something of its own: a tank, an oven cavity, a car, the sun),
the room kinds it belongs in (a home generator's prior) and its device library chapter.
`twin device types [--json|--markdown]`, docs/devices.md's table and the cluster
documentation's "carried by" lines come from here.
"""
from __future__ import annotations

import functools
from typing import Any

from chip.clusters.ClusterObjects import ALL_CLUSTERS

from clusters.devices import DEVICE_TYPES, HOME_DRIVEN, create_device
from clusters.devices_appl import PHYSICS
from twin import physics
from twin.layout import category_of

#: Room kinds of SimuHome's types (the newer types carry theirs: DeviceType.room_kinds).
_SIMUHOME_ROOM_KINDS: dict[str, tuple[str, ...]] = {
    "air_conditioner": ("living_room", "bedroom", "office", "kids_room"),
    "air_purifier": ("living_room", "bedroom", "kids_room"), "dehumidifier": ("bathroom", "utility_room"),
    "dimmable_light": ("living_room", "bedroom", "dining_room", "office"),
    "dishwasher": ("kitchen",), "electrical_sensor": ("utility_room", "kitchen", "hallway"),
    "fan": ("living_room", "bedroom", "office"), "freezer": ("kitchen", "utility_room"),
    "heat_pump": ("utility_room",), "humidifier": ("bedroom", "living_room", "kids_room"),
    "laundry_dryer": ("utility_room",), "laundry_washer": ("utility_room",),
    "on_off_light": ("kitchen", "bathroom", "hallway", "utility_room"), "refrigerator": ("kitchen",),
    "robot_vacuum_cleaner": ("living_room", "hallway"), "tv": ("living_room", "bedroom"),
    "window_covering": ("living_room", "bedroom", "office", "dining_room"),
}


def _name(cluster_id: int) -> str:
    cls = ALL_CLUSTERS.get(cluster_id)
    return cls.__name__ if cls is not None else f"0x{cluster_id:04X}"


def has_physics(key: str, device: Any) -> bool:
    """Whether the type takes part in the simulation's physics: it drives a room variable or
    the illuminance, measures the room, or simulates something of its own."""
    if key in PHYSICS or key in HOME_DRIVEN:
        return True
    if any(physics.sensor_quantity(device, s) for s in device.servers()):
        return True
    for ep in device.endpoints.values():
        types = {t for t, _ in ep.device_types}
        if types & set(physics.LIGHT_TYPES) or physics.WINDOW_COVERING[0] in types \
                or physics.air_role(device, ep) is not None:
            return True
        if physics.measures_room(device) and any(s.name == "Thermostat" for s in ep.servers.values()):
            return True
    return False


@functools.cache
def _entry(key: str) -> dict[str, Any]:
    device_type = DEVICE_TYPES[key]
    device = create_device("catalogue", key)
    return {
        "key": key, "label": device_type.label,
        "device_type_id": device_type.device_type_id, "revision": device_type.revision,
        "product_id": device_type.product_id,
        "endpoints": [{"id": ep.id,
                       "device_types": [{"id": t, "revision": r} for t, r in ep.device_types],
                       "servers": [s.name for s in sorted(ep.servers.values(), key=lambda s: s.id)],
                       "clients": [_name(c) for c in ep.client_clusters]}
                      for ep_id, ep in sorted(device.endpoints.items()) if ep_id != 0],
        "physics": has_physics(key, device),
        "room_kinds": list(device_type.room_kinds or _SIMUHOME_ROOM_KINDS.get(key, ())),
        "category": category_of(device_type),
    }


def catalogue() -> list[dict[str, Any]]:
    """Every registered device type, by key (copies: callers may change them)."""
    return [dict(_entry(key)) for key in sorted(DEVICE_TYPES)]


def markdown(entries: list[dict[str, Any]] | None = None) -> str:
    """The catalogue as a Markdown table (docs/devices.md)."""
    rows = ["| key | device type | id / rev | ProductID | endpoints: server clusters (client) | physics | rooms |",
            "|---|---|---|---|---|---|---|"]
    for e in entries if entries is not None else catalogue():
        eps = "; ".join(f"{ep['id']}: " + ", ".join(ep["servers"]) + (f" ({', '.join(ep['clients'])})"
                                                                       if ep["clients"] else "")
                        for ep in e["endpoints"])
        rows.append(f"| `{e['key']}` | {e['label']} | 0x{e['device_type_id']:04X} / {e['revision']} | "
                    f"0x{e['product_id']:04X} | {eps} | {'yes' if e['physics'] else ''} | "
                    f"{', '.join(e['room_kinds'])} |")
    return "\n".join(rows) + "\n"
