"""Automations: cron, device-state, room-state and time-and-state rules, exact under fast-forward."""
from __future__ import annotations

import json

import pytest

from twin.automations import AutomationError, Cron
from twin.home import Home
from twin.schema import UnknownIdError
from twin.tool_arguments import ArgumentError

pytestmark = pytest.mark.unit


def on(device, value=True, tool="execute_command"):
    return {"tool": tool, "args": {"device_id": device, "endpoint_id": 1, "cluster_id": "OnOff",
                                   "command_id": "On" if value else "Off", "args": {}}}


def dump(home):
    return json.dumps(home.snapshot(), sort_keys=True)


def onoff(home, device):
    return home.device(device).read("OnOff", "OnOff")


def test_cron_matching():
    c = Cron("30 7 * * 1-5")
    from datetime import datetime
    assert c.next_after(datetime(2025, 6, 1, 9, 0)) == datetime(2025, 6, 2, 7, 30)   # 1 June 2025 is a Sunday
    assert Cron("0 0 29 2 *").next_after(datetime(2025, 6, 1)) == datetime(2028, 2, 29)
    assert Cron("*/15 * * * *").next_after(datetime(2025, 6, 1, 9, 0)) == datetime(2025, 6, 1, 9, 15)
    assert Cron("0 12 1 * mon").next_after(datetime(2025, 6, 1, 13, 0)) == datetime(2025, 6, 2, 12, 0)
    assert Cron("0 0 31 2 *").next_after(datetime(2025, 6, 1)) is None


def scripted(home):
    """A home with one rule of each trigger kind; returns the rule ids."""
    a = home.automations
    rules = [
        a.create({"type": "time", "cron": "0 10 * * *"}, [on("living_room_light", False)], name="lights off at ten"),
        a.create({"type": "device", "device_id": "living_room_tv", "cluster_id": "OnOff", "attribute_id": "OnOff",
                  "op": "==", "value": True}, [on("living_room_fan")]),
        a.create({"type": "room", "room_id": "living_room", "state": "temperature", "op": "<", "value": 25.0},
                 [on("bedroom_light")]),
        a.create({"type": "time_and_state", "at": "10:30", "state": {"type": "device", "device_id": "living_room_fan",
                  "cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==", "value": True}},
                 [on("kitchen_light")]),
        a.create({"type": "time", "at": "11:00"}, [on("living_room_tv")],
                 conditions=[{"type": "time_window", "after": "22:00", "before": "06:00"}]),
    ]
    # Cool the living room, so its temperature crosses 25 °C at some tick between the events.
    ac = home.device("living_room_ac")
    ac.invoke("OnOff", "On", {}, endpoint_id=1)
    ac.write("Thermostat", "SystemMode", 3)   # Cool
    ac.write("Thermostat", "OccupiedCoolingSetpoint", 2200)
    ac.write("FanControl", "PercentSetting", 100)
    return [r.id for r in rules]


def test_rules_fire_at_the_same_ticks_stepped_and_fast_forwarded():
    stepped, fast = Home.default(), Home.default()
    scripted(stepped)
    scripted(fast)
    for home in (stepped, fast):
        # A device change between ticks (as a tool or Matter write makes it) triggers the device rule.
        home.device("living_room_tv").invoke("OnOff", "On", {}, endpoint_id=1)
    stepped.step(2 * 3600 * 10)
    fast.advance(2 * 3600)
    assert dump(stepped) == dump(fast)
    runs = {r.id: [run["time"] for run in r.runs] for r in fast.automations.list()}
    assert runs["a1"] == ["2025-06-01 10:00:00"]
    assert runs["a2"] == ["2025-06-01 09:00:00"]
    assert len(runs["a3"]) == 1 and runs["a3"][0] > "2025-06-01 09:00:00"
    assert runs["a4"] == ["2025-06-01 10:30:00"]      # the fan was on at 10:30
    assert runs["a5"] == []                           # 11:00 is outside 22:00-06:00
    assert onoff(fast, "living_room_fan") and onoff(fast, "bedroom_light") and onoff(fast, "kitchen_light")
    assert not onoff(fast, "living_room_light")
    # Snapshots, restores and forks carry the rules and continue alike.
    again = Home.restore(fast.snapshot())
    fork = fast.fork()
    for home in (fast, again, fork):
        home.advance(24 * 3600)
    assert dump(fast) == dump(again) == dump(fork)
    assert [run["time"] for run in fast.automations.get("a1").runs][-1] == "2025-06-02 10:00:00"


def test_state_trigger_fires_on_becoming_true_only_and_rules_can_be_disabled():
    home = Home.default()
    rule = home.automations.create({"type": "device", "device_id": "bedroom_light", "cluster_id": "OnOff",
                                    "attribute_id": "OnOff", "op": "==", "value": True}, [on("living_room_fan")])
    light = home.device("bedroom_light")
    light.invoke("OnOff", "On", {}, endpoint_id=1)
    home.step()
    light.invoke("LevelControl", "MoveToLevel", {"level": 50, "transitionTime": 0, "optionsMask": 0,
                                                  "optionsOverride": 0}, endpoint_id=1)
    home.step()   # another attribute changed: still true, no new run
    assert len(rule.runs) == 1
    home.automations.set_enabled(rule.id, False)
    light.invoke("OnOff", "Off", {}, endpoint_id=1)
    light.invoke("OnOff", "On", {}, endpoint_id=1)
    home.step()
    assert len(rule.runs) == 1
    home.automations.set_enabled(rule.id, True)   # already true when enabled: waits for a new edge
    home.step()
    light.invoke("OnOff", "Off", {}, endpoint_id=1)
    home.step()
    light.invoke("OnOff", "On", {}, endpoint_id=1)
    home.step()
    assert len(rule.runs) == 2
    home.automations.delete(rule.id)
    assert home.automations.list() == [] and "automations" in home.snapshot()


def test_rule_steps_can_trigger_other_rules_once_per_tick():
    home = Home.default()
    a = home.automations
    cond = {"device_id": "living_room_tv", "cluster_id": "OnOff", "attribute_id": "OnOff"}
    a.create({"type": "device", **cond, "op": "==", "value": True}, [on("living_room_tv", False)])
    a.create({"type": "device", **cond, "op": "==", "value": False}, [on("living_room_tv", True)])
    home.device("living_room_tv").invoke("OnOff", "On", {}, endpoint_id=1)
    home.step(3)   # each fires once in the tick (no endless loop); the flapping ends with the TV on
    assert [len(r.runs) for r in a.list()] == [1, 1] and onoff(home, "living_room_tv")


@pytest.mark.parametrize("trigger, steps, error, words", [
    ({"type": "time", "cron": "0 0 31 2 *"}, None, AutomationError, "never matches"),
    ({"type": "time", "cron": "61 * * * *"}, None, AutomationError, "outside 0-59"),
    ({"type": "time", "cron": "0 7 * *"}, None, AutomationError, "five fields"),
    ({"type": "time", "cron": "5-1 * * * *"}, None, AutomationError, "empty range"),
    ({"type": "device", "device_id": "living_room_tv", "cluster_id": "OnOff", "attribute_id": "OnOff",
      "op": "=="}, None, AutomationError, "needs value"),
    ({"type": "time", "at": "25:00"}, None, AutomationError, "HH:MM"),
    ({"type": "device", "device_id": "ghost", "cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==",
      "value": True}, None, UnknownIdError, "no device 'ghost'"),
    ({"type": "device", "device_id": "living_room_tv", "cluster_id": "Thermostat", "attribute_id": "SystemMode",
      "op": "==", "value": 1}, None, AutomationError, "no cluster"),
    ({"type": "device", "device_id": "living_room_tv", "cluster_id": "OnOff", "attribute_id": "OnOff",
      "op": ">", "value": 1}, None, AutomationError, "not a number"),
    ({"type": "device", "device_id": "living_room_tv", "cluster_id": "OnOff", "attribute_id": "OnOff",
      "op": "==", "value": "yes"}, None, AutomationError, "can never be 'yes'"),
    ({"type": "room", "room_id": "kitchen", "state": "humidity", "op": ">", "value": 100}, None,
     AutomationError, "can never hold"),
    ({"type": "room", "room_id": "kitchen", "state": "humidity", "op": "between", "value": [70, 60]}, None,
     AutomationError, "empty"),
    ({"type": "room", "room_id": "attic", "state": "humidity", "op": ">", "value": 60}, None,
     UnknownIdError, "no room 'attic'"),
    ({"type": "room", "room_id": "kitchen", "state": "humidity", "op": "==", "value": 60}, None,
     AutomationError, "varies continuously"),
    ({"type": "sunset"}, None, AutomationError, "unknown type"),
    ({"type": "time", "at": "07:00"}, [on("ghost")], UnknownIdError, "no device 'ghost'"),
    ({"type": "time", "at": "07:00"}, [{"tool": "execute_command", "args": {
        "device_id": "living_room_tv", "endpoint_id": 1, "cluster_id": "OnOff", "command_id": "Explode",
        "args": {}}}], AutomationError, "Explode"),
    ({"type": "time", "at": "07:00"}, [{"tool": "dance"}], ArgumentError, "steps[0]"),
    ({"type": "time", "at": "07:00"}, [], AutomationError, "non-empty"),
])
def test_rules_that_cannot_fire_or_name_missing_things_are_refused(trigger, steps, error, words):
    home = Home.default()
    before = dump(home)
    with pytest.raises(error) as err:
        home.automations.create(trigger, [on("living_room_light")] if steps is None else steps)
    assert words in str(err.value)
    assert dump(home) == before          # nothing half-applied



def test_a_matter_invoke_triggers_rules_as_a_tool_call_does():
    """The node's Interaction Model server changes the same cluster servers, whose listeners
    the rules watch (a real IM server and message layers, in memory)."""
    from chip.clusters import Objects as C
    from test_node_im_server import Link, invoke_status

    from matter_protocol.interaction import CommandData, CommandPath, InvokeRequest

    by_matter, by_tool = Home.default(), Home.default()
    for home in (by_matter, by_tool):
        home.automations.create({"type": "device", "device_id": "bedroom_light", "cluster_id": "OnOff",
                                 "attribute_id": "OnOff", "op": "==", "value": True}, [on("living_room_fan")])
    link = Link(by_matter.device("bedroom_light"))
    path = CommandPath(1, C.OnOff.id, C.OnOff.Commands.On.command_id)
    ib = invoke_status(link.request(InvokeRequest([CommandData(path)])))
    assert ib.status.status.status == 0
    by_tool.device("bedroom_light").invoke("OnOff", "On", {}, endpoint_id=1)
    for home in (by_matter, by_tool):
        home.advance(1)
    assert onoff(by_matter, "living_room_fan")
    ticks = [[r["tick"] for r in home.automations.get("a1").runs] for home in (by_matter, by_tool)]
    assert ticks[0] == ticks[1] == [0]


def test_same_firing_compares_what_triggers_do_not_how_they_are_written():
    a = Home.default().automations
    light = {"type": "device", "device_id": "bedroom_light", "cluster_id": "OnOff", "attribute_id": "OnOff"}
    level = {"type": "device", "device_id": "bedroom_light", "cluster_id": 8, "attribute_id": "currentlevel"}
    assert a.same_firing({"type": "time", "at": "07:30", "days": ["mon", "tue", "wed", "thu", "fri"]},
                         {"type": "time", "cron": "30 7 * * 1-5"})
    assert not a.same_firing({"type": "time", "at": "07:30"}, {"type": "time", "cron": "30 7 * * 1-5"})
    assert a.same_firing({"type": "time", "cron": "0 8 * * sun"}, {"type": "time", "cron": "0 8 * * 0"})
    assert a.same_firing({**light, "op": "==", "value": True}, {**light, "op": "!=", "value": False})
    assert a.same_firing({**level, "op": ">", "value": 99},
                         {**level, "cluster_id": "LevelControl", "attribute_id": "CurrentLevel", "op": ">=",
                          "value": 100})
    assert not a.same_firing({**level, "op": ">", "value": 99}, {**level, "op": ">", "value": 100})
    room = {"type": "room", "room_id": "kitchen", "state": "humidity"}
    assert a.same_firing({**room, "op": ">", "value": 60}, {**room, "op": ">", "value": 60.0})
    assert not a.same_firing({**room, "op": ">", "value": 60}, {**room, "op": ">=", "value": 60})
    assert not a.same_firing({"type": "time", "at": "07:30"}, {**room, "op": ">", "value": 60})
    tas = {"type": "time_and_state", "at": "22:00", "state": {**light, "op": "==", "value": True}}
    assert a.same_firing(tas, {"type": "time_and_state", "cron": "0 22 * * *", "state": {**light, "op": "==",
                                                                                      "value": True}})
    assert not a.same_firing(tas, {**tas, "state": {**light, "op": "==", "value": False}})
    assert a.list() == []   # comparing creates nothing


def test_rules_on_a_large_homemaker_home_stepped_and_fast_forwarded():
    from twin.generator import make_home
    spec = make_home(3, tier="complex")
    homes = [Home.from_spec(spec), Home.from_spec(spec)]
    lights = [d for d in homes[0].devices if homes[0].device_info(d)["type"] == "on_off_light"][:3]
    room = homes[0].room_of(lights[0])
    for home in homes:
        a = home.automations
        a.create({"type": "time", "cron": "*/5 * * * *"}, [{"tool": "execute_command", "args": {
            "device_id": lights[0], "endpoint_id": 1, "cluster_id": "OnOff", "command_id": "Toggle", "args": {}}}])
        a.create({"type": "device", "device_id": lights[0], "cluster_id": "OnOff", "attribute_id": "OnOff",
                  "op": "==", "value": True}, [on(lights[1])])
        a.create({"type": "device", "device_id": lights[0], "cluster_id": "OnOff", "attribute_id": "OnOff",
                  "op": "==", "value": False}, [on(lights[1], False)])
        traj = home.rooms[room]._traj["temperature"]
        at_ten_minutes = traj.value(home.clock.tick + 6000)   # crossed at about ten minutes
        a.create({"type": "room", "room_id": room, "state": "temperature",
                  "op": ">" if traj.xstar > traj.x0 else "<", "value": at_ten_minutes}, [on(lights[2])])
    homes[0].step(20 * 60 * 10)
    homes[1].advance(20 * 60)
    assert dump(homes[0]) == dump(homes[1])
    assert len(homes[1].automations.get("a1").runs) == 4
    assert len(homes[1].automations.get("a2").runs) == 2 and len(homes[1].automations.get("a3").runs) == 2
    assert [r["time"][11:16] for r in homes[1].automations.get("a4").runs] in (["09:10"], ["09:11"])


def test_home_files_carry_automations_and_a_bad_one_is_one_line():
    import yaml

    from twin.schema import UserFileError, parse_data, to_yaml
    data = {"name": "rules", "rooms": [{"id": "hall", "devices": [
        {"id": "lamp", "type": "on_off_light"}, {"id": "fan", "type": "fan"}]}],
        "automations": [{"name": "lamp at seven", "trigger": {"type": "time", "at": "07:00"},
                         "steps": [on("lamp")]},
                        {"trigger": {"type": "device", "device_id": "lamp", "cluster_id": "OnOff",
                                     "attribute_id": "OnOff", "op": "==", "value": True},
                         "steps": [on("fan")], "enabled": False}]}
    spec = parse_data(data)
    assert parse_data(yaml.safe_load(to_yaml(spec))) == spec
    home = Home.from_spec(spec)
    assert [(r.name, r.enabled) for r in home.automations.list()] == [("lamp at seven", True), ("a2", False)]
    home.run_until("2025-06-02 07:00:00")
    assert onoff(home, "lamp") and not onoff(home, "fan")
    data["automations"][1]["steps"] = [on("ghost")]
    with pytest.raises(UserFileError) as err:
        Home.from_spec(parse_data(data, "rules.yaml"), source="rules.yaml")
    assert str(err.value).startswith("rules.yaml: automations[1]: ") and "ghost" in str(err.value)
    assert "automations" not in Home.default().snapshot() and "automations" not in to_yaml(
        parse_data({"rooms": [{"id": "a"}]}))
