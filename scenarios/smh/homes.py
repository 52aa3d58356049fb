"""SMH-Bench's homes in three tiers, generated from a seed (twin.generator's rooms, our devices).

- simple: 4-7 rooms and 4-7 devices (about 5.5 of each), one floor;
- medium: 9-12 rooms (about 10.5), 30-40 devices (about 35), two floors, an ensuite;
- complex: 31 rooms on three floors with ensuites inside bedrooms and balconies off rooms,
  135 devices of exactly 17 types.
Rooms carry a floor, a kind and (nested ones) a parent; lights carry tags (ceiling, bedside,
reading). Home `tier-k` is `home_spec("tier", k)`: the same bytes every time.
"""
from __future__ import annotations

import functools
import random

from clusters.devices import DEVICE_TYPES
from twin.generator import generate_home
from twin.schema import DeviceSpec, HomeSpec, RoomSpec

TIERS = ("simple", "medium", "complex")
#: tier -> (rooms low-high, devices low-high, floors)
SIZES = {"simple": ((4, 7), (4, 7), 1), "medium": ((9, 12), (30, 40), 2), "complex": ((29, 29), (135, 135), 3)}
BALCONIES = {"complex": 2}   # added to the generated rooms: 29 + 2 = 31
#: How many distinct homes each tier has (tasks draw from them).
HOMES = {"simple": 24, "medium": 12, "complex": 6}
#: The 17 device types of the benchmark's homes.
TYPES = ("on_off_light", "dimmable_light", "color_temperature_light", "extended_color_light",
         "air_conditioner", "air_purifier", "fan", "humidifier", "dehumidifier", "tv", "speaker",
         "window_covering", "robot_vacuum_cleaner", "refrigerator", "dishwasher", "laundry_washer",
         "on_off_plug")
LIGHTS = TYPES[:4]
#: room kind -> {type: weight} for devices beyond each room's first light
KIND_DEVICES: dict[str, dict[str, int]] = {
    "living_room": {"dimmable_light": 3, "color_temperature_light": 2, "extended_color_light": 2, "tv": 2,
                    "speaker": 2, "air_conditioner": 1, "air_purifier": 1, "window_covering": 2, "fan": 1},
    "kitchen": {"on_off_light": 2, "dimmable_light": 1, "refrigerator": 1, "dishwasher": 1, "speaker": 1,
                "on_off_plug": 2, "air_purifier": 1},
    "bedroom": {"dimmable_light": 2, "color_temperature_light": 2, "air_conditioner": 1, "humidifier": 1,
                "window_covering": 2, "fan": 1, "speaker": 1, "tv": 1},
    "bathroom": {"on_off_light": 2, "dimmable_light": 1, "dehumidifier": 2, "fan": 1},
    "utility_room": {"on_off_light": 2, "laundry_washer": 2, "dehumidifier": 1, "robot_vacuum_cleaner": 1,
                     "on_off_plug": 1},
    "office": {"dimmable_light": 2, "color_temperature_light": 1, "air_conditioner": 1, "window_covering": 1,
               "fan": 1, "on_off_plug": 1, "speaker": 1},
    "dining_room": {"dimmable_light": 2, "extended_color_light": 1, "window_covering": 1, "air_conditioner": 1},
    "hallway": {"on_off_light": 2, "robot_vacuum_cleaner": 1},
    "kids_room": {"dimmable_light": 2, "extended_color_light": 1, "air_conditioner": 1, "humidifier": 1,
                  "air_purifier": 1, "window_covering": 1},
    "guest_room": {"dimmable_light": 1, "on_off_light": 1, "air_conditioner": 1, "window_covering": 1, "fan": 1},
    "balcony": {"on_off_light": 2, "on_off_plug": 1},
    "studio": {"dimmable_light": 2, "air_conditioner": 1, "tv": 1, "fan": 1},
}
ESSENTIAL = {"living_room": "air_conditioner", "kitchen": "refrigerator", "bedroom": "air_conditioner",
             "bathroom": "dehumidifier", "utility_room": "laundry_washer"}
SHORT = {"on_off_light": "light", "dimmable_light": "lamp", "color_temperature_light": "white_light",
         "extended_color_light": "color_light", "air_conditioner": "ac", "air_purifier": "purifier",
         "window_covering": "blinds", "robot_vacuum_cleaner": "vacuum", "laundry_washer": "washer",
         "on_off_plug": "plug"}
#: Floor of each kind in multi-storey homes (others: upstairs).
GROUND = ("living_room", "kitchen", "dining_room", "hallway", "utility_room")


def _kind(room: RoomSpec) -> str:
    return room.id.rstrip("0123456789").rstrip("_")


@functools.cache
def home_spec(tier: str, index: int) -> HomeSpec:
    """Home `index` of `tier`; raises ValueError for an unknown tier."""
    if tier not in SIZES:
        raise ValueError(f"unknown tier {tier!r}; accepted: {', '.join(TIERS)}")
    (r_lo, r_hi), (d_lo, d_hi), floors = SIZES[tier]
    rng = random.Random(f"smh-home:{tier}:{index}")
    n_rooms = rng.randint(r_lo, r_hi)
    n_devices = max(rng.randint(d_lo, d_hi), n_rooms)
    base = generate_home(rng.randrange(1 << 30), n_rooms, n_rooms)
    rooms: list[RoomSpec] = []
    for room in base.rooms:
        kind = _kind(room)
        floor = 0 if floors == 1 or kind in GROUND else 1 + (len(rooms) % (floors - 1))
        rooms.append(room.model_copy(update={"kind": kind, "floor": floor, "devices": []}))
    bedrooms = [r for r in rooms if r.kind == "bedroom"]
    # Ensuites: every bathroom after the first lies inside a bedroom (medium and complex).
    if tier != "simple":
        for k, room in enumerate([r for r in rooms if r.kind == "bathroom"][1:]):
            host = bedrooms[k % len(bedrooms)]
            room.parent, room.floor = host.id, host.floor
    for k in range(BALCONIES.get(tier, 0)):
        host = [r for r in rooms if r.kind in ("living_room", "bedroom")][k]
        rooms.append(RoomSpec(id=f"balcony_{k + 1}", name=f"Balcony {k + 1}", kind="balcony", floor=host.floor,
                              parent=host.id, temperature=host.temperature, humidity=host.humidity,
                              daylight_lux=800.0))
    placements: list[tuple[int, str]] = [(i, "dimmable_light" if r.kind in ("living_room", "bedroom") else
                                          "on_off_light") for i, r in enumerate(rooms)]
    for i, room in enumerate(rooms):
        if ESSENTIAL.get(room.kind or "") and len(placements) < n_devices:
            placements.append((i, ESSENTIAL[room.kind or ""]))
    while len(placements) < n_devices:
        i = rng.randrange(len(rooms))
        weights = KIND_DEVICES[rooms[i].kind or "studio"]
        kinds = sorted(weights)
        placements.append((i, rng.choices(kinds, [weights[t] for t in kinds])[0]))
    if tier == "complex":   # exactly the 17 types: each missing one replaces a duplicate extra device
        present = {t for _, t in placements}
        for missing in [t for t in TYPES if t not in present]:
            spare = [k for k in range(len(rooms), len(placements))
                     if sum(t == placements[k][1] for _, t in placements) > 2]
            placements[spare[rng.randrange(len(spare))]] = (placements[spare[0]][0], missing)
    counts: dict[str, int] = {}
    for i, type_key in sorted(placements, key=lambda p: p[0]):
        room = rooms[i]
        stem = f"{room.id}_{SHORT.get(type_key, type_key)}"
        counts[stem] = counts.get(stem, 0) + 1
        n = counts[stem]
        lights_here = sum(d.type in LIGHTS for d in room.devices)
        tags = [] if type_key not in LIGHTS else ["ceiling"] if lights_here == 0 else \
            ["bedside"] if room.kind == "bedroom" else ["reading"]
        room.devices.append(DeviceSpec(id=stem if n == 1 else f"{stem}_{n}", type=type_key, tags=tags,
                                       name=f"{room.name} {DEVICE_TYPES[type_key].label}" + (f" {n}" if n > 1 else "")))
    return base.model_copy(update={"name": f"SMH {tier} home {index}", "rooms": rooms})


__all__ = ["HOMES", "LIGHTS", "TIERS", "TYPES", "home_spec"]
