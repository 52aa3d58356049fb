"""Goal predicates with partial credit, irrelevant-state preservation and the counterfactual."""
from __future__ import annotations

import pytest

from twin.goals import Goal, GoalError, changed_devices, simuhome_predicates
from twin.home import Home
from twin.schema import UnknownIdError, parse_data

pytestmark = pytest.mark.unit


def dev(device, cluster, attribute, op, value):
    return {"type": "device", "device_id": device, "cluster_id": cluster, "attribute_id": attribute,
            "op": op, "value": value}


def test_partial_credit_after_every_step_and_irrelevant_state():
    home = Home.default()
    goal = Goal(home, [dev("bedroom_light", "OnOff", "OnOff", "==", True),
                       dev("living_room_fan", "FanControl", "PercentSetting", "between", [40, 60]),
                       {"type": "unchanged", "except": ["bedroom_light", "living_room_fan"]}])
    assert goal.check() == {"satisfied": [False, False, True], "m": pytest.approx(1 / 3), "success": False}
    home.device("bedroom_light").invoke("OnOff", "On", {}, endpoint_id=1)
    home.advance(10)
    assert goal.check()["m"] == pytest.approx(2 / 3)
    home.device("living_room_fan").invoke("OnOff", "On", {}, endpoint_id=1)
    home.device("living_room_fan").write("FanControl", "PercentSetting", 50)
    home.advance(10)
    assert goal.check()["success"]
    home.device("kitchen_light").invoke("OnOff", "Toggle", {}, endpoint_id=1)   # not asked for
    result = goal.check()
    assert result["satisfied"] == [True, True, False] and result["m"] == pytest.approx(2 / 3)
    assert set(changed_devices(home, goal.counterfactual())) == {"kitchen_light", "living_room_fan", "bedroom_light"}


def test_what_a_device_measures_from_its_room_is_not_its_state():
    home = Home.from_spec(parse_data({"ambient": {"temperature": 29}, "rooms": [
        {"id": "living_room", "temperature": 27, "devices": [
            {"id": "living_room_ac", "type": "air_conditioner"}, {"id": "heat_pump", "type": "heat_pump"}]}]}))
    pump = home.device("heat_pump")
    before = pump.read("Thermostat", "LocalTemperature")
    goal = Goal(home, [{"type": "unchanged", "except": ["living_room_ac"]},
                       {"type": "room_change", "room_id": "living_room", "state": "temperature",
                        "direction": "decrease", "min_change": 0.01}])
    ac = home.device("living_room_ac")
    ac.invoke("OnOff", "On", {}, endpoint_id=1)
    ac.write("Thermostat", "SystemMode", 3)
    ac.write("Thermostat", "OccupiedCoolingSetpoint", 2200)
    ac.write("FanControl", "PercentSetting", 100)
    home.advance(1800)
    assert pump.read("Thermostat", "LocalTemperature") < before - 100   # the pump reads the cooler room
    assert goal.check()["satisfied"] == [True, True]


def test_quantifiers_rules_and_layout_selectors():
    home = Home.default()
    lights_off = {"type": "every", "devices": {"category": "lighting"},
                  "check": {"cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==", "value": False}}
    some_humid = {"type": "some", "rooms": {"exclude": "bathroom"},
                  "check": {"state": "humidity", "op": ">", "value": 52}}
    rule = {"type": "rule", "match": {"trigger": {"type": "time", "cron": "0 22 * * *"}, "enabled": True}}
    goal = Goal(home, [lights_off, some_humid, rule, {"type": "not", "of": rule},
                       {"type": "any", "of": [rule, lights_off]}])
    assert goal.check()["satisfied"] == [False, True, False, True, False]
    for light in ("living_room_light", "kitchen_light", "bedroom_light", "bathroom_light", "utility_room_light"):
        if light in home.devices:
            home.device(light).invoke("OnOff", "Off", {}, endpoint_id=1)
    home.automations.create({"type": "time", "at": "22:00"}, [{"tool": "execute_command", "args": {
        "device_id": "bedroom_light", "endpoint_id": 1, "cluster_id": "OnOff", "command_id": "On", "args": {}}}])
    assert goal.check()["satisfied"] == [True, True, True, False, True]
    fires = Goal(home, [{"type": "rule", "fires_like": {"type": "time", "cron": "0 22 * * *"}},
                        {"type": "rule", "fires_like": {"type": "time", "at": "22:00", "days": ["mon"]}}])
    assert fires.check()["satisfied"] == [True, False]
    home.automations.set_enabled("a1", False)
    assert fires.check()["satisfied"] == [False, False]


def test_simuhome_goals_as_predicates():
    home = Home.default()
    goals = [{"type": "device_attribute", "room_id": "bedroom", "device_id": "bedroom_light", "endpoint": 1,
              "cluster": "OnOff", "attribute": "OnOff", "value": True},
             {"type": "room_state", "room_id": "bedroom", "state": "illuminance", "direction": "increase"}]
    goal = Goal(home, simuhome_predicates(goals, {"illuminance": 0.5}))
    assert goal.check()["m"] == 0
    home.device("bedroom_light").invoke("OnOff", "On", {}, endpoint_id=1)
    assert goal.check()["success"]
    with pytest.raises(GoalError, match="judge"):
        simuhome_predicates([{"type": "room_state", "room_id": "bedroom", "state": "humidity", "value": 50}])


@pytest.mark.parametrize("predicate, error, words", [
    ({"type": "device", "device_id": "ghost", "cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==",
      "value": True}, UnknownIdError, "ghost"),
    ({"type": "room", "room_id": "kitchen", "state": "humidity", "op": ">", "value": 120}, GoalError, "never hold"),
    ({"type": "every", "devices": {"type": "refrigerator", "rooms": ["bathroom"]},
      "check": {"cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==", "value": True}}, GoalError, "no device"),
    ({"type": "some", "rooms": {"kind": "attic"}, "check": {"state": "humidity", "op": ">", "value": 1}},
     GoalError, "no room"),
    ({"type": "all", "of": []}, GoalError, "non-empty"),
    ({"type": "every", "devices": {"rooms": ["living_room"]},
      "check": {"cluster_id": "LevelControl", "attribute_id": "CurrentLevel", "op": ">", "value": 10}},
     GoalError, "living_room_ac"),
    ({"type": "unchanged", "except": ["ghost"]}, UnknownIdError, "ghost"),
    ({"type": "room_change", "room_id": "kitchen", "state": "humidity", "direction": "sideways"}, GoalError,
     "direction"),
    ({"type": "vibes"}, GoalError, "unknown predicate type"),
])
def test_bad_predicates_are_refused(predicate, error, words):
    with pytest.raises(error, match=words):
        Goal(Home.default(), [predicate])
