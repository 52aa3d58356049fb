"""Homes with floors, room kinds, parent rooms, device tags and categories."""
from __future__ import annotations

import json

import pytest

from bridge.tools import call_tool
from bridge.twin_backend import TwinBackend
from twin.home import Home
from twin.schema import UserFileError, parse_data, to_yaml

pytestmark = pytest.mark.unit

LAYOUT = {
    "name": "Two storeys",
    "rooms": [
        {"id": "living", "kind": "living_room", "devices": [
            {"id": "lamp", "type": "dimmable_light", "tags": ["reading"]}]},
        {"id": "balcony", "kind": "balcony", "parent": "living"},
        {"id": "ensuite", "kind": "bathroom", "floor": 1, "parent": "master", "devices": [
            {"id": "ensuite_fan", "type": "fan", "category": "ventilation"}]},
        {"id": "master", "kind": "bedroom", "floor": 1, "devices": [
            {"id": "master_light", "type": "on_off_light", "tags": ["bedside", "night"]}]},
    ],
}


def test_layout_reaches_the_home_the_tools_and_the_snapshot():
    home = Home.from_spec(parse_data(LAYOUT))
    assert home.rooms["ensuite"].floor == 1 and home.rooms["ensuite"].parent == "master"
    assert home.rooms_inside("master") == ["ensuite"]
    assert home.rooms_inside("living") == ["balcony"]
    assert home.tags_of("master_light") == ("bedside", "night")
    assert home.category_of("lamp") == "lighting"          # the type's library chapter
    assert home.category_of("ensuite_fan") == "ventilation"   # the file's own
    rooms = call_tool(TwinBackend(home), "get_rooms", {})["rooms"]
    assert rooms[2] == {"room_id": "ensuite", "name": "ensuite", "floor": 1, "kind": "bathroom",
                        "parent": "master"}
    assert rooms[1] == {"room_id": "balcony", "name": "balcony", "kind": "balcony", "parent": "living"}
    devices = call_tool(TwinBackend(home), "get_room_devices", {"room.id": "master"})["devices"]
    assert devices[0]["tags"] == ["bedside", "night"] and "category" not in devices[0]
    snap = home.snapshot()
    again = Home.restore(snap)
    assert json.dumps(again.snapshot(), sort_keys=True) == json.dumps(snap, sort_keys=True)
    assert again.rooms_inside("master") == ["ensuite"] and again.category_of("ensuite_fan") == "ventilation"
    fork = home.fork()
    assert fork.rooms["balcony"].parent == "living" and fork.tags_of("lamp") == ("reading",)
    # The YAML round trip keeps the layout.
    assert parse_data(__import__("yaml").safe_load(to_yaml(parse_data(LAYOUT)))) == parse_data(LAYOUT)


def test_homes_without_layout_dump_and_snapshot_as_before():
    home = Home.default()
    text = json.dumps(home.snapshot(), sort_keys=True)
    for key in ('"floor"', '"kind"', '"parent"', '"tags"', '"category"'):
        assert key not in text
    rooms = call_tool(TwinBackend(home), "get_rooms", {})["rooms"]
    assert all(set(r) == {"room_id", "name"} for r in rooms)
    spec = parse_data({"rooms": [{"id": "a", "devices": [{"id": "l", "type": "on_off_light"}]}]})
    assert spec.model_dump()["rooms"][0].keys() == {"id", "name", "temperature", "humidity", "pm10",
                                                   "daylight_lux", "indoor_lux", "devices"}


@pytest.mark.parametrize("change, field, words", [
    (lambda d: d["rooms"][1].update(parent="attic"), "rooms[1].parent", "no room 'attic'"),
    (lambda d: d["rooms"][0].update(parent="balcony"), "rooms[0].parent", "loop: living -> balcony -> living"),
    (lambda d: d["rooms"][0]["devices"][0].update(tags=["a b"]), "rooms[0].devices[0].tags", "tag 'a b'"),
    (lambda d: d["rooms"][3].update(floor="up"), "rooms[3].floor", "integer"),
])
def test_a_bad_layout_is_one_line_naming_the_field(change, field, words):
    data = json.loads(json.dumps(LAYOUT))
    change(data)
    with pytest.raises(UserFileError) as err:
        parse_data(data, "home.yaml")
    text = str(err.value)
    assert text.startswith(f"home.yaml: {field}: ") and words in text and "\n" not in text
