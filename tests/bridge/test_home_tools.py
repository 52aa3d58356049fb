"""query_home: the whole home in one call (types, categories, tags, rooms, conditions, top N)."""
from __future__ import annotations

import pytest

from bridge.home_tools import HOME_TOOLS
from bridge.tools import TOOL_MODELS, Session, call_tool
from bridge.twin_backend import TwinBackend
from twin.home import Home
from twin.schema import parse_data

pytestmark = pytest.mark.unit

HOME = {"name": "q", "rooms": [
    {"id": "hall", "kind": "hallway", "humidity": 70, "devices": [{"id": "hall_light", "type": "on_off_light"}]},
    {"id": "living", "kind": "living_room", "humidity": 40, "devices": [
        {"id": "lamp", "type": "dimmable_light", "tags": ["reading"],
         "attributes": {"1/OnOff/OnOff": True, "1/LevelControl/CurrentLevel": 200}},
        {"id": "ceiling", "type": "dimmable_light", "attributes": {"1/OnOff/OnOff": True,
                                                                   "1/LevelControl/CurrentLevel": 100}},
        {"id": "tv", "type": "tv"}]},
    {"id": "bed", "kind": "bedroom", "floor": 1, "humidity": 65, "devices": [
        {"id": "bed_light", "type": "dimmable_light", "tags": ["bedside", "reading"]}]},
    {"id": "ensuite", "kind": "bathroom", "floor": 1, "parent": "bed", "humidity": 80, "devices": [
        {"id": "ensuite_dehum", "type": "dehumidifier"}]},
]}


@pytest.fixture
def backend():
    return TwinBackend(Home.from_spec(parse_data(HOME)))


def call_home_tool(backend, name, args, session=None):
    """A call in a session that carries the home tools, as a suite's agents make it."""
    return call_tool(backend, name, args, session or Session(tools=HOME_TOOLS))


def ids(result):
    assert result["ok"], result
    key = "devices" if "devices" in result else "rooms"
    return [x["device_id" if key == "devices" else "room_id"] for x in result[key]]


def test_rooms_by_state_except_one(backend):
    r = call_home_tool(backend, "query_home", {"room_where": [{"state": "humidity", "op": ">", "value": 60}],
                                               "exclude_rooms": ["hall"], "rooms_only": True})
    assert ids(r) == ["bed", "ensuite"] and r["rooms"][1]["parent"] == "bed"


def test_devices_by_type_category_tag_room_floor(backend):
    q = lambda **a: ids(call_home_tool(backend, "query_home", a))   # noqa: E731
    assert q(device_type=["dimmable_light"]) == ["lamp", "ceiling", "bed_light"]
    assert q(category=["lighting"], floor=1) == ["bed_light"]
    assert q(tags=["reading"]) == ["lamp", "bed_light"]
    assert q(tags=["reading", "bedside"]) == ["bed_light"]
    assert q(rooms=["bed"]) == ["bed_light", "ensuite_dehum"]     # the ensuite lies inside the bedroom
    assert q(room_kind=["bathroom"], category=["hvac"]) == ["ensuite_dehum"]
    assert q(category=["media"]) == ["tv"]


def test_attribute_conditions_reads_and_top_n(backend):
    r = call_home_tool(backend, "query_home", {
        "where": [{"cluster.id": "LevelControl", "attribute.id": "CurrentLevel", "op": ">=", "value": 100},
                  {"cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==", "value": True}],
        "read": ["LevelControl.CurrentLevel"],
        "order_by": {"cluster_id": "LevelControl", "attribute_id": "CurrentLevel", "limit": 1}})
    assert ids(r) == ["lamp"] and r["devices"][0]["values"] == {"LevelControl.CurrentLevel": 200}
    # Devices without the attribute do not match an attribute condition.
    r = call_home_tool(backend, "query_home", {"where": [
        {"cluster_id": "LevelControl", "attribute_id": "CurrentLevel", "op": "<=", "value": 254}]})
    assert ids(r) == ["lamp", "ceiling", "tv", "bed_light"]   # the TV has a volume level


@pytest.mark.parametrize("args, code, words", [
    ({"rooms": ["attic"]}, "NOT_FOUND", "no room 'attic'"),
    ({"device_type": ["toaster"]}, "INVALID_ARGUMENT", "unknown 'toaster'"),
    ({"room_where": [{"state": "humidity", "op": ">", "value": "high"}]}, "INVALID_ARGUMENT", "needs a number"),
    ({"room_where": [{"state": "noise", "op": ">", "value": 1}]}, "INVALID_ARGUMENT", "state"),
    ({"read": ["OnOff"]}, "INVALID_ARGUMENT", "Cluster.Attribute"),
    ({"rooms_only": True, "category": ["lighting"]}, "INVALID_ARGUMENT", "leave rooms_only out"),
    ({"where": [{"cluster_id": "OnOff", "attribute_id": "OnOff", "op": "between", "value": [3, 1]}]},
     "INVALID_ARGUMENT", "empty"),
])
def test_bad_queries_are_one_clear_error(backend, args, code, words):
    session = Session(tools=HOME_TOOLS)
    r = call_home_tool(backend, "query_home", args, session)
    assert not r["ok"] and r["error"]["code"] == code and words in r["error"]["message"]
    assert session.history[-1]["tool"] == "query_home"


def test_extra_tools_stay_out_of_simuhomes_table(backend):
    assert not set(HOME_TOOLS.models) & set(TOOL_MODELS)
    assert call_tool(backend, "query_home", {})["error"]["code"] == "UNKNOWN_TOOL"
    schema = next(t for t in HOME_TOOLS.schemas if t["function"]["name"] == "query_home")["function"]
    assert schema["name"] == "query_home" and "room_where" in schema["parameters"]["properties"]


STEP = {"tool": "execute_command", "args": {"device.id": "bed_light", "endpoint.id": 1, "cluster.id": "OnOff",
                                            "command.id": "On", "args": {}}}


def test_automation_tools_create_list_disable_enable_delete(backend):
    made = call_home_tool(backend, "create_automation", {
        "trigger": {"type": "room", "room_id": "ensuite", "state": "humidity", "op": "<", "value": 90},
        "steps": [STEP], "name": "damp"})
    assert made["ok"] and made["automation"]["rule_id"] == "a1" and made["automation"]["steps"] == [STEP]
    timed = call_home_tool(backend, "create_automation", {"trigger": {"type": "time", "at": "09:30"},
                                                          "steps": [STEP]})
    assert timed["automation"]["trigger"] == {"type": "time", "cron": "30 9 * * *"}
    assert call_home_tool(backend, "disable_automation", {"automation.id": "a2"})["automation"]["enabled"] is False
    backend.advance(3600)
    rules = call_home_tool(backend, "list_automations", {})["automations"]
    assert [len(r["runs"]) for r in rules] == [0, 0]   # humidity was already below 90; a2 disabled
    assert call_home_tool(backend, "enable_automation", {"automation_id": "a2"})["automation"]["enabled"]
    backend.advance(24 * 3600)
    assert [r["time"] for r in call_home_tool(backend, "list_automations", {})["automations"][1]["runs"]] == [
        "2025-06-02 09:30:00"]
    assert call_home_tool(backend, "delete_automation", {"automation.id": "a1"})["deleted"]["rule_id"] == "a1"
    assert [r["rule_id"] for r in call_home_tool(backend, "list_automations", {})["automations"]] == ["a2"]


@pytest.mark.parametrize("args, code, words", [
    ({"trigger": {"type": "time", "cron": "0 0 30 2 *"}, "steps": [STEP]}, "INVALID_ARGUMENT", "never matches"),
    ({"trigger": {"type": "time", "at": "07:00"}, "steps": [{**STEP, "args": {**STEP["args"], "device.id": "x"}}]},
     "NOT_FOUND", "no device 'x'"),
    ({"trigger": {"type": "time", "at": "07:00"}, "steps": []}, "INVALID_ARGUMENT", "steps"),
    ({"trigger": {"type": "time", "at": "07:00"}, "steps": [{"tool": "execute_command", "args": {}}]},
     "INVALID_ARGUMENT", "steps[0]"),
])
def test_automation_refusals_are_tool_errors(backend, args, code, words):
    r = call_home_tool(backend, "create_automation", args)
    assert not r["ok"] and r["error"]["code"] == code and words in r["error"]["message"], r
    assert call_home_tool(backend, "list_automations", {})["automations"] == []
    assert call_home_tool(backend, "delete_automation", {"automation.id": "a1"})["error"]["code"] == "NOT_FOUND"
