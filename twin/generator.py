"""Seeded home generator: from a one-room studio to 30+ rooms and 135+ devices.

Placement is by room kind: every room gets a light first, then each kind gets its
essential appliance (an AC in living rooms, bedrooms and offices, a refrigerator in the
kitchen, a washer in the utility room, a dehumidifier in the bathroom), then the remaining
devices go to random rooms, each drawing a type from that kind's weighted list. Only
registered device types are used. Same seed and sizes: the same HomeSpec and the same
YAML bytes (`to_yaml`).
"""
from __future__ import annotations

import random
from datetime import datetime

from clusters.devices import DEVICE_TYPES
from twin.clock import DEFAULT_START
from twin.schema import AmbientSpec, DeviceSpec, HomeSpec, RoomSpec, to_yaml

#: kind -> (display name, daylight lux range, essential type, {type: weight})
ROOM_KINDS: dict[str, tuple[str, tuple[int, int], str | None, dict[str, int]]] = {
    "studio": ("Studio", (200, 700), "air_conditioner", {
        "dimmable_light": 2, "on_off_light": 1, "air_conditioner": 1, "air_purifier": 1, "tv": 1,
        "window_covering": 1, "fan": 1, "humidifier": 1, "dehumidifier": 1, "refrigerator": 1,
        "freezer": 1, "dishwasher": 1, "laundry_washer": 1, "laundry_dryer": 1,
        "robot_vacuum_cleaner": 1, "electrical_sensor": 1, "heat_pump": 1}),
    "living_room": ("Living Room", (300, 800), "air_conditioner", {
        "dimmable_light": 3, "on_off_light": 1, "air_conditioner": 1, "air_purifier": 2, "tv": 2,
        "window_covering": 2, "fan": 1, "humidifier": 1, "robot_vacuum_cleaner": 1}),
    "kitchen": ("Kitchen", (200, 600), "refrigerator", {
        "on_off_light": 2, "dimmable_light": 1, "refrigerator": 1, "freezer": 1, "dishwasher": 2,
        "humidifier": 1, "air_purifier": 1, "electrical_sensor": 1}),
    "bedroom": ("Bedroom", (100, 400), "air_conditioner", {
        "dimmable_light": 2, "on_off_light": 1, "air_conditioner": 1, "humidifier": 1,
        "air_purifier": 1, "window_covering": 2, "fan": 1, "tv": 1}),
    "bathroom": ("Bathroom", (50, 200), "dehumidifier", {
        "on_off_light": 2, "dimmable_light": 1, "dehumidifier": 1, "fan": 1}),
    "utility_room": ("Utility Room", (30, 150), "laundry_washer", {
        "on_off_light": 2, "laundry_washer": 1, "laundry_dryer": 2, "heat_pump": 1,
        "electrical_sensor": 1, "robot_vacuum_cleaner": 1, "dehumidifier": 1}),
    "office": ("Office", (200, 600), "air_conditioner", {
        "dimmable_light": 2, "on_off_light": 1, "air_conditioner": 1, "window_covering": 1, "fan": 1,
        "air_purifier": 1, "electrical_sensor": 1}),
    "dining_room": ("Dining Room", (200, 600), None, {
        "dimmable_light": 2, "on_off_light": 1, "window_covering": 1, "air_conditioner": 1}),
    "hallway": ("Hallway", (50, 150), None, {
        "on_off_light": 2, "robot_vacuum_cleaner": 1, "electrical_sensor": 1}),
    "kids_room": ("Kids Room", (100, 400), "air_conditioner", {
        "dimmable_light": 2, "air_conditioner": 1, "humidifier": 1, "air_purifier": 1,
        "window_covering": 1, "tv": 1}),
    "guest_room": ("Guest Room", (100, 400), None, {
        "dimmable_light": 1, "on_off_light": 1, "air_conditioner": 1, "window_covering": 1, "fan": 1}),
}
#: The order rooms are added in; past its end, bedrooms, bathrooms and offices repeat.
ROOM_ORDER = ("living_room", "kitchen", "bedroom", "bathroom", "utility_room", "office",
              "bedroom", "bathroom", "dining_room", "hallway", "kids_room", "guest_room")
_REPEAT = ("bedroom", "bathroom", "office", "bedroom", "guest_room", "hallway")

SHORT_NAMES = {"air_conditioner": "ac", "dimmable_light": "light", "on_off_light": "light",
               "window_covering": "blinds", "robot_vacuum_cleaner": "vacuum",
               "laundry_washer": "washer", "laundry_dryer": "dryer",
               "electrical_sensor": "energy_meter", "air_purifier": "purifier"}


def _room_kinds(count: int) -> list[str]:
    if count == 1:
        return ["studio"]
    return [ROOM_ORDER[i] if i < len(ROOM_ORDER) else _REPEAT[(i - len(ROOM_ORDER)) % len(_REPEAT)]
            for i in range(count)]


def generate_home(seed: int, rooms: int = 5, devices: int = 20,
                  start_time: datetime = DEFAULT_START) -> HomeSpec:
    """A plausible home with `rooms` rooms and `devices` devices, fully determined by `seed`."""
    if rooms < 1:
        raise ValueError(f"rooms must be at least 1, got {rooms}")
    if devices < rooms:
        raise ValueError(f"devices ({devices}) must be at least rooms ({rooms}): every room gets a light")
    rng = random.Random(seed)
    kinds = _room_kinds(rooms)
    seen: dict[str, int] = {}
    room_ids: list[str] = []
    room_specs: list[RoomSpec] = []
    for kind in kinds:
        seen[kind] = seen.get(kind, 0) + 1
        suffix = f"_{seen[kind]}" if seen[kind] > 1 else ""
        label, (lux_lo, lux_hi), _, _ = ROOM_KINDS[kind]
        humid = (60.0, 85.0) if kind == "bathroom" else (30.0, 70.0)
        room_ids.append(kind + suffix)
        room_specs.append(RoomSpec(
            id=kind + suffix, name=label + (f" {seen[kind]}" if suffix else ""),
            temperature=round(rng.uniform(21.0, 28.0), 1), humidity=round(rng.uniform(*humid), 1),
            pm10=round(rng.uniform(5.0, 80.0), 1), daylight_lux=float(rng.randint(lux_lo, lux_hi))))

    placements: list[tuple[int, str]] = []  # (room index, type key)
    for i, kind in enumerate(kinds):
        placements.append((i, "dimmable_light" if kind in ("living_room", "bedroom", "studio") else "on_off_light"))
    for i, kind in enumerate(kinds):
        essential = ROOM_KINDS[kind][2]
        if essential and len(placements) < devices:
            placements.append((i, essential))
    while len(placements) < devices:
        i = rng.randrange(rooms)
        weights = ROOM_KINDS[kinds[i]][3] or {"on_off_light": 1}
        types = sorted(weights)
        placements.append((i, rng.choices(types, weights=[weights[t] for t in types])[0]))

    counts: dict[str, int] = {}
    for i, type_key in sorted(placements, key=lambda p: p[0]):  # stable: keeps draw order per room
        base = f"{room_ids[i]}_{SHORT_NAMES.get(type_key, type_key)}"
        counts[base] = counts.get(base, 0) + 1
        n = counts[base]
        label = DEVICE_TYPES[type_key].label
        room_specs[i].devices.append(DeviceSpec(
            id=base if n == 1 else f"{base}_{n}", type=type_key,
            name=f"{room_specs[i].name} {label}" + (f" {n}" if n > 1 else "")))

    ambient = AmbientSpec(temperature=round(rng.uniform(18.0, 33.0), 1),
                          humidity=round(rng.uniform(40.0, 75.0), 1),
                          pm10=round(rng.uniform(10.0, 60.0), 1))
    return HomeSpec(name=f"Generated home {seed}", seed=seed, start_time=start_time,
                    ambient=ambient, rooms=room_specs)


__all__ = ["generate_home", "to_yaml", "ROOM_KINDS"]
