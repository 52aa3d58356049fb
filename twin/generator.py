"""Seeded home generator: from a one-room studio to 30+ rooms and 135+ devices.

Placement is by room kind: every room gets a light first, then each kind gets its
essential appliance (an AC in living rooms, bedrooms and offices, a refrigerator in the
kitchen, a washer in the utility room, a dehumidifier in the bathroom), then the remaining
devices go to random rooms, each drawing a type from that kind's weighted list. Only
registered device types are used. Same seed and sizes: the same HomeSpec and the same
YAML bytes (`to_yaml`).
"""
from __future__ import annotations

import functools
import math
import random
from datetime import datetime
from typing import Any

from clusters.devices import DEVICE_TYPES, create_device
from twin.clock import DEFAULT_START
from twin.schema import AmbientSpec, DeviceSpec, HomeSpec, RoomSpec, to_yaml
from twin.weather import Weather, WeatherSpec

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




# ---- HomeMaker: procedural homes with floors, nesting, priors over every type and weather ----
#
# `make_home` (issue #29's HomeMaker) builds a home in four steps, all from one seeded RNG:
# 1. an outdoor weather for the season (twin/weather.py: monthly mean, day-night swing, rain,
#    sunrise and sunset by the month), and its state at the start time;
# 2. a layout: floors by size (one up to 7 rooms, two up to 16, three beyond, a basement from
#    28), top-level rooms by floor (living spaces below, bedrooms above), and rooms nested in
#    them (an ensuite in a bedroom, a walk-in closet, a balcony off the living room, a pantry);
# 3. devices from room-semantic priors over every registered type: the SimuHome types'
#    weights above plus each type's own room kinds (DeviceType.room_kinds);
#    every room a light first when there are enough devices, then the kinds' essentials,
#    then the rest drawn room by room;
# 4. initial state from weather and layout: rooms between outdoors and a heated/cooled
#    indoors (upper floors warmer, basements cooler, bathrooms humid, kitchens dustier),
#    daylight from the weather hour by hour, lights on after dark in living spaces, blinds
#    closed at night.
# The SMH-Bench tiers (`TIERS`) draw rooms and devices around the paper's means.

#: kind -> (display name, daylight lux range, essential type, {type: weight}) for kinds the
#: SimuHome generator above does not have.
EXTRA_KINDS: dict[str, tuple[str, tuple[int, int], str | None, dict[str, int]]] = {
    "balcony": ("Balcony", (2000, 8000), None, {"on_off_light": 2, "window_covering": 1}),
    "closet": ("Walk-in Closet", (0, 50), None, {"on_off_light": 2}),
    "pantry": ("Pantry", (0, 80), None, {"on_off_light": 2, "freezer": 1, "refrigerator": 1}),
    "garage": ("Garage", (20, 200), None, {"on_off_light": 2, "freezer": 1, "electrical_sensor": 1}),
    "storage": ("Storage Room", (0, 50), None, {"on_off_light": 2, "dehumidifier": 1}),
    "garden": ("Garden", (5000, 20000), None, {"on_off_light": 2}),
}
ALL_KINDS = {**ROOM_KINDS, **EXTRA_KINDS}
#: Nested rooms: kind of the parent -> [(child kind, probability it is there)].
NESTED = {"bedroom": [("bathroom", 0.45), ("closet", 0.25)], "living_room": [("balcony", 0.4)],
          "kitchen": [("pantry", 0.3)]}
#: Top-level rooms by floor, in the order a home of that size has them (cycled past the end).
SINGLE_FLOOR = ("living_room", "kitchen", "bedroom", "bathroom", "bedroom", "hallway", "office",
                "dining_room", "utility_room", "kids_room", "guest_room")
GROUND = ("living_room", "kitchen", "hallway", "dining_room", "bathroom", "office", "utility_room",
          "garage", "guest_room", "living_room")
UPPER = ("hallway", "bedroom", "bathroom", "bedroom", "kids_room", "bedroom", "office", "guest_room",
         "bathroom", "kids_room")
BASEMENT = ("storage", "utility_room", "storage")
#: tier -> (room counts drawn from, device counts drawn from): SMH-Bench's simple ~5.5/5.5,
#: medium ~10.5/35, complex 31/135.
TIERS = {"simple": ((5, 6), (5, 6)), "medium": ((10, 11), (32, 33, 34, 35, 36, 37, 38)),
         "complex": ((31,), (135,))}
#: Monthly mean outdoor temperature (°C) of a temperate climate, January first.
_MONTHLY_C = (3, 4, 8, 12, 16, 20, 23, 22, 18, 13, 8, 4)
_LIVING = ("living_room", "kitchen", "dining_room", "hallway", "studio")
LIGHTS = ("on_off_light", "dimmable_light", "color_temperature_light", "extended_color_light")


def type_priors() -> dict[str, dict[str, int]]:
    """Room kind -> {device type: weight} over every registered type: the hand weights of the
    kinds above, plus weight 1 in each room kind a type names as its own (`DeviceType.room_kinds`)."""
    priors = {kind: {t: w for t, w in spec[3].items() if t in DEVICE_TYPES} for kind, spec in ALL_KINDS.items()}
    for type_key, device_type in sorted(DEVICE_TYPES.items()):
        for kind in device_type.room_kinds:
            priors.setdefault(kind, {}).setdefault(type_key, 1)
    return priors


def _layout(rng: random.Random, count: int) -> list[tuple[str, int, int | None]]:
    """[(kind, floor, index of the parent or None)] for `count` rooms, parents before children."""
    if count == 1:
        return [("studio", 0, None)]
    floors = [0] if count <= 7 else [0, 1] if count <= 16 else [0, 1, 2]
    if count >= 28:
        floors.append(-1)
    pools = {0: SINGLE_FLOOR if len(floors) == 1 else GROUND, 1: UPPER, 2: UPPER, -1: BASEMENT}
    taken = dict.fromkeys(floors, 0)
    rooms: list[tuple[str, int, int | None]] = []
    turn = 0
    while len(rooms) < count:
        floor = floors[turn % len(floors)]
        turn += 1
        if floor == -1 and taken[-1] >= 3:
            continue   # a basement holds a few rooms only
        pool = pools[floor]
        kind = pool[taken[floor] % len(pool)]
        taken[floor] += 1
        rooms.append((kind, floor, None))
        parent = len(rooms) - 1
        for child, chance in NESTED.get(kind, ()):
            if len(rooms) < count and rng.random() < chance:
                rooms.append((child, floor, parent))
    order = sorted(range(len(rooms)), key=lambda i: rooms[i][1])   # floor by floor, stable
    where = {old: new for new, old in enumerate(order)}
    return [(rooms[i][0], rooms[i][1], None if rooms[i][2] is None else where[rooms[i][2]]) for i in order]


def _weather(rng: random.Random, start: datetime, seed: int) -> tuple[WeatherSpec, dict[str, Any]]:
    """A seasonal outdoor weather for the home (twin/weather.py) and its state at `start`."""
    month = start.month - 1
    season = math.cos(2 * math.pi * (month - 6) / 12)          # 1 in July, -1 in January
    hours = 12.0 + 4.0 * season                                # daylight hours
    spec = WeatherSpec(mean_c=round(min(45.0, max(-40.0, _MONTHLY_C[month] + rng.gauss(0, 2.0))), 1),
                       swing_c=round(rng.uniform(3.0, 7.0), 1), humidity=round(rng.uniform(50.0, 80.0), 1),
                       rain_chance=round(0.25 - 0.1 * season, 2),
                       sunrise=round(13 - hours / 2), sunset=round(13 + hours / 2))
    return spec, Weather(spec, seed).at(start)


@functools.cache
def _endpoint_of(type_key: str, cluster: str) -> int | None:
    """The endpoint of a type that holds `cluster` (None: it has none), from a probe device."""
    device = create_device("probe", type_key, rng=random.Random(0))
    for ep_id in sorted(device.endpoints):
        if ep_id and any(s.name == cluster for s in device.endpoints[ep_id].servers.values()):
            return ep_id
    return None


def _initial(rng: random.Random, type_key: str, kind: str, dark: bool) -> dict[str, Any]:
    """Initial attributes of a device from the hour and its room."""
    attributes: dict[str, Any] = {}
    if DEVICE_TYPES[type_key].device_type_id in (0x0100, 0x0101, 0x010C, 0x010D):   # lights
        ep = _endpoint_of(type_key, "OnOff")
        if ep is not None and dark and rng.random() < (0.6 if kind in _LIVING else 0.2):
            attributes[f"{ep}/OnOff/OnOff"] = True
    elif type_key == "window_covering" and dark:
        ep = _endpoint_of(type_key, "WindowCovering")
        if ep is not None and rng.random() < 0.8:
            for name in ("CurrentPositionLiftPercent100ths", "TargetPositionLiftPercent100ths"):
                attributes[f"{ep}/WindowCovering/{name}"] = 10000
    return attributes


def make_home(seed: int, rooms: int | None = None, devices: int | None = None, tier: str | None = None,
              start_time: datetime = DEFAULT_START, types: list[str] | None = None,
              required: list[str] | None = None) -> HomeSpec:
    """A HomeMaker home, fully determined by its arguments: `rooms` and `devices` (or a
    SMH-Bench `tier`: simple, medium, complex), from a studio to hundreds of devices;
    `types` limits the device types drawn from; `required` types are in every home (one
    each, in a room of a kind they belong in; PersonalHomeBench's five appliances)."""
    rng = random.Random(seed)
    if tier is not None:
        if tier not in TIERS:
            raise ValueError(f"unknown tier {tier!r}; accepted: {', '.join(TIERS)}")
        room_choices, device_choices = TIERS[tier]
        rooms = rooms if rooms is not None else rng.choice(room_choices)
        devices = devices if devices is not None else rng.choice(device_choices)
    if rooms is None or devices is None:
        raise ValueError("give rooms and devices, or a tier")
    if rooms < 1 or devices < 0:
        raise ValueError(f"rooms must be at least 1 and devices at least 0, got {rooms} and {devices}")
    priors = type_priors()
    if types is not None:
        unknown = sorted(set(types) - set(DEVICE_TYPES))
        if unknown:
            raise ValueError(f"unknown device type(s) {', '.join(unknown)}; known: {', '.join(sorted(DEVICE_TYPES))}")
        priors = {k: {t: w for t, w in p.items() if t in types} for k, p in priors.items()}
    required = list(required or ())
    unknown = sorted(set(required) - set(DEVICE_TYPES))
    if unknown:
        raise ValueError(f"unknown required type(s) {', '.join(unknown)}; known: {', '.join(sorted(DEVICE_TYPES))}")
    if len(required) > devices:
        raise ValueError(f"{len(required)} required types do not fit in {devices} devices")
    weather, outdoors_now = _weather(rng, start_time, seed)
    ambient = AmbientSpec(temperature=outdoors_now["temperature"], humidity=outdoors_now["humidity"],
                          pm10=round(rng.uniform(8.0, 60.0), 1))
    layout = _layout(rng, rooms)

    seen: dict[str, int] = {}
    specs: list[RoomSpec] = []
    for kind, floor, parent in layout:
        label, (lux_lo, lux_hi), _, _ = ALL_KINDS[kind]
        stem = kind
        if kind == "bathroom" and parent is not None:
            stem, label = "ensuite", "Ensuite"
        seen[stem] = seen.get(stem, 0) + 1
        n = seen[stem]
        room_id = stem + (f"_{n}" if n > 1 else "")
        # Heated or cooled towards 21 °C, a fifth of the way out to the weather; warmer upstairs.
        indoor = 21.0 + 0.2 * (ambient.temperature - 21.0) + 0.5 * floor + rng.gauss(0, 0.8)
        humidity = ambient.humidity * 0.7 + (22.0 if kind == "bathroom" else 8.0) + rng.gauss(0, 4)
        outdoors = kind in ("balcony", "garden")
        specs.append(RoomSpec(
            id=room_id, name=label + (f" {n}" if n > 1 else ""), floor=floor, kind=kind,
            parent=None if parent is None else specs[parent].id,
            temperature=round(ambient.temperature if outdoors else indoor, 1),
            humidity=round(min(95.0, max(20.0, ambient.humidity if outdoors else humidity)), 1),
            pm10=round(ambient.pm10 * (1.0 if outdoors else 0.6) + (15.0 if kind == "kitchen" else 0.0)
                       + rng.uniform(0, 10), 1),
            # In full sun: the weather's daylight fraction scales it hour by hour.
            daylight_lux=float(round(rng.randint(lux_lo, lux_hi) * (1.15 if floor > 0 else 1.0)))))

    def draw(kind: str) -> str | None:
        weights = priors.get(kind) or priors.get("hallway") or {}
        if not weights:
            return None
        keys = sorted(weights)
        return rng.choices(keys, weights=[weights[k] for k in keys])[0]

    placements: list[tuple[int, str]] = []
    kinds = [kind for kind, _, _ in layout]
    if devices > len(required) and not any(priors.get(k) for k in kinds) and not priors.get("hallway"):
        raise ValueError("no device type of those allowed belongs in any of this home's rooms")
    for type_key in required:
        fitting = [i for i, kind in enumerate(kinds)
                   if type_key in priors.get(kind, {}) or kind in DEVICE_TYPES[type_key].room_kinds]
        placements.append((rng.choice(fitting) if fitting else 0, type_key))
    if devices <= rooms:   # small homes: one device in each of the first free rooms, from its prior
        free = [i for i in range(rooms) if i not in {p[0] for p in placements}]
        while len(placements) < devices:
            i = free.pop(0) if free else rng.randrange(rooms)
            type_key = draw(kinds[i])
            if type_key is not None:
                placements.append((i, type_key))
    else:
        for i, kind in enumerate(kinds):
            light = "dimmable_light" if kind in ("living_room", "bedroom", "studio") else "on_off_light"
            if (types is None or light in types) and len(placements) < devices:
                placements.append((i, light))
        for i, kind in enumerate(kinds):
            essential = ALL_KINDS[kind][2]
            if essential and len(placements) < devices and (types is None or essential in types):
                placements.append((i, essential))
        while len(placements) < devices:
            i = rng.randrange(rooms)
            type_key = draw(kinds[i])
            if type_key is not None:
                placements.append((i, type_key))
    counts: dict[str, int] = {}
    dark = outdoors_now["daylight"] < 0.1
    for i, type_key in sorted(placements, key=lambda p: p[0]):
        room = specs[i]
        base = f"{room.id}_{SHORT_NAMES.get(type_key, type_key)}"
        counts[base] = counts.get(base, 0) + 1
        n = counts[base]
        label = DEVICE_TYPES[type_key].label
        # Lights say where they hang: a room's first one is its ceiling light, later ones are
        # bedside lamps in bedrooms and reading lamps elsewhere (so "the bedside lamps" resolve).
        lights_here = sum(d.type in LIGHTS for d in room.devices)
        tags = [] if type_key not in LIGHTS else ["ceiling"] if lights_here == 0 else \
            ["bedside"] if kinds[i] == "bedroom" else ["reading"]
        room.devices.append(DeviceSpec(
            id=base if n == 1 else f"{base}_{n}", type=type_key, tags=tags,
            name=f"{room.name} {label}" + (f" {n}" if n > 1 else ""),
            attributes=_initial(rng, type_key, kinds[i], dark)))
    size = tier or f"{rooms} rooms"
    return HomeSpec(name=f"HomeMaker home {seed} ({size})", seed=seed, start_time=start_time,
                    ambient=ambient, weather=weather, rooms=specs)


def every_type_home(seed: int, rooms: int, devices: int) -> HomeSpec:
    """A HomeMaker home holding one device of every registered type, each in a room of a kind it
    belongs in, and the rest drawn by room kind: what the benches measure as "every device type"
    (a plain draw of 135 devices can miss a type, e.g. the lock)."""
    return make_home(seed, rooms, devices, required=sorted(DEVICE_TYPES))


__all__ = ["generate_home", "make_home", "every_type_home", "to_yaml", "ROOM_KINDS", "TIERS"]
