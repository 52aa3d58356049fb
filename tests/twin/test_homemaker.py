"""HomeMaker: procedural homes with floors, nested rooms, priors over every type, state from weather."""
from __future__ import annotations

import json
from datetime import datetime

import pytest

from clusters.devices import DEVICE_TYPES
from twin.generator import TIERS, make_home, to_yaml, type_priors
from twin.home import Home
from twin.schema import parse_data

pytestmark = pytest.mark.unit


def sizes(spec):
    return len(spec.rooms), sum(len(r.devices) for r in spec.rooms)


def test_same_seed_same_bytes_and_the_file_loads_back():
    a = to_yaml(make_home(4, tier="complex"))
    assert a == to_yaml(make_home(4, tier="complex")) and a != to_yaml(make_home(5, tier="complex"))
    assert to_yaml(parse_data(__import__("yaml").safe_load(a))) == a


@pytest.mark.parametrize("tier", list(TIERS))
def test_tiers_match_smh_bench_sizes(tier):
    rooms, devices = zip(*(sizes(make_home(seed, tier=tier)) for seed in range(8)))
    room_choices, device_choices = TIERS[tier]
    assert set(rooms) <= set(room_choices) and set(devices) <= set(device_choices)
    mean_rooms, mean_devices = sum(rooms) / len(rooms), sum(devices) / len(devices)
    target = {"simple": (5.5, 5.5), "medium": (10.5, 35), "complex": (31, 135)}[tier]
    assert abs(mean_rooms - target[0]) <= 1 and abs(mean_devices - target[1]) <= 3


def test_layout_floors_nesting_and_every_room_kind():
    spec = make_home(1, tier="complex")
    floors = {r.floor for r in spec.rooms}
    assert floors == {-1, 0, 1, 2}
    ids = [r.id for r in spec.rooms]
    nested = [r for r in spec.rooms if r.parent]
    assert nested and all(ids.index(r.parent) < ids.index(r.id) for r in nested)
    parents = {r.id: r for r in spec.rooms}
    assert all(parents[r.parent].floor == r.floor for r in nested)
    assert {r.kind for r in nested} <= {"bathroom", "closet", "balcony", "pantry"}
    assert all(r.kind for r in spec.rooms)
    home = Home.from_spec(spec)
    bedroom = next(r.parent for r in nested if r.kind == "bathroom")
    assert any(home.rooms[c].kind == "bathroom" for c in home.rooms_inside(bedroom))


def test_devices_come_from_room_priors_over_every_type():
    priors = type_priors()
    drawn = set()
    for seed in range(6):
        spec = make_home(seed, rooms=20, devices=120)
        for room in spec.rooms:
            for device in room.devices:
                drawn.add(device.type)
                assert device.type in priors[room.kind] or device.type in ("on_off_light", "dimmable_light")
    catalogue_only = {t for kinds in priors.values() for t in kinds} - {
        "air_conditioner", "air_purifier", "dehumidifier", "dimmable_light", "dishwasher", "electrical_sensor",
        "fan", "freezer", "heat_pump", "humidifier", "laundry_dryer", "laundry_washer", "on_off_light",
        "refrigerator", "robot_vacuum_cleaner", "tv", "window_covering"}
    assert catalogue_only and drawn & catalogue_only            # beyond SimuHome's 17 types
    assert drawn <= set(DEVICE_TYPES)
    limited = make_home(3, rooms=6, devices=20, types=["on_off_light", "fan"])
    assert {d.type for r in limited.rooms for d in r.devices} <= {"on_off_light", "fan"}


def test_studio_to_a_hundred_and_more_devices_all_build():
    for rooms, devices in ((1, 1), (1, 4), (3, 2), (12, 60), (40, 220)):
        spec = make_home(9, rooms=rooms, devices=devices)
        assert sizes(spec) == (rooms, devices)
        home = Home.from_spec(spec)
        assert len(home.devices) == devices
    assert make_home(9, rooms=1, devices=2).rooms[0].kind == "studio"


def test_initial_state_follows_weather_layout_and_hour():
    winter_night = make_home(2, rooms=12, devices=40, start_time=datetime(2025, 1, 15, 22, 0))
    summer_noon = make_home(2, rooms=12, devices=40, start_time=datetime(2025, 7, 15, 12, 0))
    assert winter_night.ambient.temperature < summer_noon.ambient.temperature
    assert winter_night.weather.mean_c < summer_noon.weather.mean_c
    assert winter_night.weather.sunset < summer_noon.weather.sunset    # shorter winter days
    night, noon = Home.from_spec(winter_night), Home.from_spec(summer_noon)
    assert night.outdoor("daylight") == 0 and noon.outdoor("daylight") > 0.5
    assert night.outdoor("temperature") == winter_night.ambient.temperature
    lit = lambda spec: sum(any(k.endswith("/OnOff/OnOff") and v for k, v in d.attributes.items())   # noqa: E731
                           for r in spec.rooms for d in r.devices)
    assert lit(winter_night) > 0 and lit(summer_noon) == 0
    bathrooms = [r.humidity for r in summer_noon.rooms if r.kind == "bathroom"]
    others = [r.humidity for r in summer_noon.rooms if r.kind not in ("bathroom", "balcony", "garden")]
    assert bathrooms and min(bathrooms) > sum(others) / len(others)


def test_stepping_equals_fast_forward_on_a_homemaker_home():
    spec = make_home(7, tier="medium", start_time=datetime(2025, 3, 1, 20, 0))
    stepped, fast = Home.from_spec(spec), Home.from_spec(spec)
    stepped.step(300)
    fast.advance(30)
    assert json.dumps(stepped.snapshot(), sort_keys=True) == json.dumps(fast.snapshot(), sort_keys=True)


@pytest.mark.parametrize("kwargs, words", [
    ({"tier": "huge"}, "unknown tier"), ({}, "give rooms and devices"),
    ({"rooms": 0, "devices": 1}, "at least 1"), ({"rooms": 2, "devices": 2, "types": ["toaster"]}, "toaster"),
])
def test_bad_arguments(kwargs, words):
    with pytest.raises(ValueError, match=words):
        make_home(1, **kwargs)


def test_required_types_are_in_every_home_in_rooms_they_belong_in():
    five = ["refrigerator", "thermostat", "microwave_oven", "speaker", "tv"]
    for seed in range(5):
        spec = make_home(seed, rooms=6, devices=10, required=five)
        placed = {d.type: r.kind for r in spec.rooms for d in r.devices}
        assert set(five) <= set(placed) and sizes(spec) == (6, 10)
        assert placed["refrigerator"] in ("kitchen", "pantry", "studio")
        Home.from_spec(spec)
    assert sizes(make_home(1, rooms=8, devices=5, required=five)) == (8, 5)
    with pytest.raises(ValueError, match="do not fit"):
        make_home(1, rooms=3, devices=4, required=five)
    with pytest.raises(ValueError, match="belongs in any"):
        make_home(1, rooms=2, devices=6, types=["evse"])


def test_every_type_home_holds_one_of_each_type_and_draws_the_rest():
    from twin.generator import every_type_home
    spec = every_type_home(1, 12, 135)
    devices = [d for room in spec.rooms for d in room.devices]
    assert len(devices) == 135 and {d.type for d in devices} == set(DEVICE_TYPES)   # the lock too
    assert to_yaml(every_type_home(1, 12, 135)) == to_yaml(spec)                     # seeded
