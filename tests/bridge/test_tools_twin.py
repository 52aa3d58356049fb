"""Every SimuHome tool end to end on a real Home through TwinBackend: happy paths and errors."""
import json

import pytest

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from clusters import rules
from clusters.status import Status
from twin.home import Home


def make_home(seed=1):
    home = Home("test home", seed=seed)
    home.add_room("living_room", "Living Room", temperature=24.123456, humidity=51.239,
                  pm10=17.26, daylight_lux=250.0)
    home.add_room("kitchen", "Kitchen")
    home.add_device("living_room_light_1", "on_off_light", "living_room", name="Reading Lamp")
    home.add_device("kitchen_light_1", "on_off_light", "kitchen")
    return home


@pytest.fixture
def home():
    return make_home()


@pytest.fixture
def call(home):
    backend, session = TwinBackend(home), Session()

    def run(name, args=None, ok=True):
        result = call_tool(backend, name, {} if args is None else args, session)
        json.dumps(result)  # always JSON
        assert result["ok"] is ok, result
        return result
    run.session = session
    return run


LIGHT = {"device.id": "living_room_light_1"}


def on(device="living_room_light_1"):
    return {"device.id": device, "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {}}


# ---- rooms --------------------------------------------------------------------------------

def test_get_rooms(call):
    assert call("get_rooms")["rooms"] == [{"room_id": "living_room", "name": "Living Room"},
                                          {"room_id": "kitchen", "name": "Kitchen"}]


def test_get_room_devices_and_unknown_room(call):
    r = call("get_room_devices", {"room.id": "living_room"})
    assert r["devices"] == [{"device_id": "living_room_light_1", "name": "Reading Lamp",
                             "device_type": "on_off_light",
                             "label": "On/Off Light", "endpoints": [1]}]
    err = call("get_room_devices", {"room_id": "attic"}, ok=False)["error"]
    assert err["code"] == "NOT_FOUND" and "attic" in err["message"]
    assert err["accepted"] == ["kitchen", "living_room"]


def test_get_room_states_rounds_at_the_edge(call, home):
    r = call("get_room_states", {"room.id": "living_room"})
    assert r["temperature"] == 2412 and r["humidity"] == 5124 and r["pm10"] == 17.26
    assert r["illuminance"] == 250  # daylight only, light off
    assert r["units"] == {"temperature": "0.01 °C", "humidity": "0.01 %RH", "illuminance": "lux",
                          "pm10": "µg/m³"}
    call("execute_command", on())
    assert call("get_room_states", {"room.id": "living_room"})["illuminance"] == 550
    assert home.rooms["living_room"].temperature == 24.123456  # the home keeps full precision


# ---- devices ------------------------------------------------------------------------------

def test_get_device_structure(call):
    r = call("get_device_structure", LIGHT)
    assert r["device_type"] == "on_off_light" and r["room_id"] == "living_room"
    assert [e["endpoint_id"] for e in r["endpoints"]] == [0, 1]
    ep1 = r["endpoints"][1]
    assert ep1["device_types"] == [{"id": 0x0100, "revision": 3}]
    onoff = next(c for c in ep1["clusters"] if c["name"] == "OnOff")
    assert onoff["id"] == 6
    assert {"name": "OnTime", "id": 0x4001, "type": "unsigned integer", "writable": True} in onoff["attributes"]
    assert [c["name"] for c in onoff["commands"]][:3] == ["Off", "On", "Toggle"]
    err = call("get_device_structure", {"device.id": "toaster"}, ok=False)["error"]
    assert err["code"] == "NOT_FOUND" and err["accepted"] == ["kitchen_light_1", "living_room_light_1"]


def test_get_all_attributes(call):
    attrs = call("get_all_attributes", LIGHT)["attributes"]
    assert attrs["1.OnOff.OnOff"] is False
    assert attrs["1.OnOff.StartUpOnOff"] is None
    assert attrs["0.Descriptor.PartsList"] == [1]
    assert not any(k.endswith(".AttributeList") for k in attrs)


@pytest.mark.parametrize("cluster,attribute", [("OnOff", "OnOff"), ("onoff", "onoff"), (6, 0),
                                               ("6", "0"), ("0x0006", "0x0000")])
def test_get_attribute_by_name_or_id(call, cluster, attribute):
    r = call("get_attribute", {**LIGHT, "cluster.id": cluster, "attribute.id": attribute})
    assert r == {"ok": True, "device_id": "living_room_light_1", "endpoint_id": 1,
                 "cluster": "OnOff", "attribute": "OnOff", "value": False}


def clusters_on(home, endpoint=None):
    device = home.devices["living_room_light_1"]
    servers = device.servers() if endpoint is None else device.endpoints[endpoint].servers.values()
    return sorted({s.name for s in servers})


@pytest.mark.parametrize("args,code,accepted", [
    ({"cluster.id": "LevelControl", "attribute.id": "CurrentLevel"}, "UNSUPPORTED_CLUSTER", None),
    ({"cluster.id": "OnOff", "attribute.id": "Brightness"}, "UNSUPPORTED_ATTRIBUTE",
     ["OnOff", "GlobalSceneControl", "OnTime", "OffWaitTime", "StartUpOnOff", "GeneratedCommandList",
      "AcceptedCommandList", "AttributeList", "FeatureMap", "ClusterRevision"]),
    ({"cluster.id": "OnOff", "attribute.id": "OnOff", "endpoint.id": 7}, "UNSUPPORTED_ENDPOINT", [0, 1]),
    ({"cluster.id": "OnOff", "attribute.id": "OnOff", "endpoint.id": 0}, "UNSUPPORTED_CLUSTER", 0),
])
def test_get_attribute_errors_list_what_is_accepted(call, home, args, code, accepted):
    err = call("get_attribute", {**LIGHT, **args}, ok=False)["error"]
    if code == "UNSUPPORTED_CLUSTER":  # every cluster the device (or endpoint) has
        accepted = clusters_on(home, accepted)
        assert "Descriptor" in accepted and ("OnOff" in accepted) == (args.get("endpoint.id") != 0)
    assert err["code"] == code and err["accepted"] == accepted


def test_endpoint_must_be_an_integer(call):
    err = call("execute_command", {**on(), "endpoint.id": "main"}, ok=False)["error"]
    assert err["code"] == "INVALID_ARGUMENT" and "endpoint.id" in err["message"]


def test_execute_command_changes_state(call):
    r = call("execute_command", on())
    assert r == {"ok": True, "device_id": "living_room_light_1", "endpoint_id": 1, "cluster": "OnOff",
                 "command": "On", "response": None}
    assert call("get_attribute", {**LIGHT, "cluster.id": "OnOff", "attribute.id": "OnOff"})["value"] is True
    call("execute_command", {**on(), "command.id": 2})  # Toggle by id
    assert call("get_attribute", {**LIGHT, "cluster.id": 6, "attribute.id": 0})["value"] is False


def test_execute_command_with_fields(call, home):
    call("execute_command", {**on(), "command.id": "OnWithTimedOff",
                             "args": {"onOffControl": 0, "onTime": 50, "offWaitTime": 0}})
    assert home.devices["living_room_light_1"].read("OnOff", "OnOff") is True
    home.advance(5)
    assert home.devices["living_room_light_1"].read("OnOff", "OnOff") is False


@pytest.mark.parametrize("command,args,code,fragment", [
    ("Dim", {}, "UNSUPPORTED_COMMAND", "does not accept command 'Dim'"),
    ("OnWithTimedOff", {}, "INVALID_COMMAND", "missing field 'onOffControl'"),
    ("OnWithTimedOff", {"onOffControl": 0, "onTime": 5, "offWaitTime": 0, "colour": 1},
     "INVALID_COMMAND", "unknown field 'colour'"),
    ("OnWithTimedOff", {"onOffControl": 0, "onTime": "long", "offWaitTime": 0},
     "INVALID_DATA_TYPE", "onTime='long' is not a unsigned integer"),
])
def test_execute_command_errors(call, home, command, args, code, fragment):
    err = call("execute_command", {**on(), "command.id": command, "args": args}, ok=False)["error"]
    assert err["code"] == code and fragment in err["message"], err
    if code == "UNSUPPORTED_COMMAND":
        assert err["accepted"] == ["Off", "On", "Toggle", "OffWithEffect", "OnWithRecallGlobalScene",
                                   "OnWithTimedOff"]
    assert home.devices["living_room_light_1"].read("OnOff", "OnOff") is False  # nothing applied


def test_write_attribute(call, home):
    r = call("write_attribute", {**LIGHT, "cluster.id": "OnOff", "attribute.id": "OnTime", "value": 100})
    assert r["value"] == 100 and r["endpoint_id"] == 1 and r["attribute"] == "OnTime"
    call("write_attribute", {**LIGHT, "cluster_id": 6, "attribute_id": 0x4003, "value": 1, "endpoint_id": 1})
    assert home.devices["living_room_light_1"].read("OnOff", "StartUpOnOff") == 1


@pytest.mark.parametrize("attribute,value,code,fragment", [
    ("OnOff", True, "UNSUPPORTED_WRITE", "read-only"),
    ("OnTime", 70000, "CONSTRAINT_ERROR", "outside 0..65535"),
    ("StartUpOnOff", 9, "CONSTRAINT_ERROR", "accepted: 0 (kOff), 1 (kOn), 2 (kToggle)"),
    ("OnTime", "soon", "INVALID_DATA_TYPE", "is not a unsigned integer"),
])
def test_write_attribute_errors(call, home, attribute, value, code, fragment):
    before = home.snapshot()
    err = call("write_attribute", {**LIGHT, "cluster.id": "OnOff", "attribute.id": attribute,
                                   "value": value}, ok=False)["error"]
    assert err["code"] == code and fragment in err["message"], err
    if code == "UNSUPPORTED_WRITE":
        assert err["accepted"] == ["OffWaitTime", "OnTime", "StartUpOnOff"]
    assert home.snapshot() == before  # nothing half-applied


def test_dependency_rules_are_enforced_through_the_tools(call, home):
    home.add_device("fan_1", "fan", "kitchen")
    speed = {"device.id": "fan_1", "cluster.id": "FanControl", "attribute.id": "PercentSetting", "value": 40}
    err = call("write_attribute", speed, ok=False)["error"]
    assert err["code"] == "INVALID_IN_STATE" and "turn it on (OnOff On)" in err["message"]
    assert home.devices["fan_1"].read("FanControl", "PercentSetting") != 40
    call("execute_command", on("fan_1"))
    assert call("write_attribute", speed)["value"] == 40


def test_a_custom_rule_applies_to_tools_too(call, monkeypatch):
    rule = rules.Rule(("on_off_light",), "OnOff", ("OnTime",),
                      lambda device: device.read("OnOff", "OnOff"),
                      Status.INVALID_IN_STATE, "OnTime can only be set while the light is on")
    monkeypatch.setattr(rules, "RULES", [rule])
    write = {**LIGHT, "cluster.id": "OnOff", "attribute.id": "OnTime", "value": 30}
    err = call("write_attribute", write, ok=False)["error"]
    assert err["code"] == "INVALID_IN_STATE" and "OnTime can only be set while the light is on" in err["message"]
    call("execute_command", on())
    assert call("write_attribute", write)["value"] == 30


# ---- time and workflows ---------------------------------------------------------------------

def test_get_current_time(call, home):
    assert call("get_current_time") == {"ok": True, "current_time": "2025-06-01 09:00:00"}
    home.advance(3725)
    assert call("get_current_time")["current_time"] == "2025-06-01 10:02:05"


def test_workflow_runs_at_its_start_time(call, home):
    r = call("schedule_workflow", {"start_time": "2025-06-01 09:10:00", "steps": [
        {"tool": "execute_command", "args": on()},
        {"tool": "write_attribute", "args": {"device_id": "kitchen_light_1", "cluster_id": "OnOff",
                                             "attribute_id": "OnTime", "value": 20}}]})
    wid = r["workflow_id"]
    assert r["status"] == "scheduled" and r["start_time"] == "2025-06-01 09:10:00"
    home.advance(599)
    assert call("get_workflow_status", {"workflow.id": wid})["status"] == "scheduled"
    assert home.devices["living_room_light_1"].read("OnOff", "OnOff") is False
    home.advance(1)
    status = call("get_workflow_status", {"workflow.id": wid})
    assert status["status"] == "completed"
    assert [s["status"] for s in status["steps"]] == ["ok", "ok"]
    assert home.devices["living_room_light_1"].read("OnOff", "OnOff") is True
    assert home.devices["kitchen_light_1"].read("OnOff", "OnTime") == 20


def test_workflow_that_fails_later_reports_why(call, home):
    wid = call("schedule_workflow", {"start_time": "2025-06-01 09:00:30", "steps": [
        {"tool": "execute_command", "args": on("no_such_light")}]})["workflow_id"]
    home.advance(30)
    status = call("get_workflow_status", {"workflow.id": wid})
    assert status["status"] == "failed" and "no_such_light" in status["error"]


def test_schedule_in_the_past_is_rejected(call, home):
    home.advance(60)
    err = call("schedule_workflow", {"start_time": "2025-06-01 09:00:00",
                                     "steps": [{"tool": "execute_command", "args": on()}]}, ok=False)["error"]
    assert err["code"] == "INVALID_ARGUMENT" and "in the past" in err["message"]
    assert call("get_workflow_list")["workflows"] == []


def test_cancel_list_and_unknown_workflows(call, home):
    step = [{"tool": "execute_command", "args": on()}]
    w1 = call("schedule_workflow", {"start_time": "2025-06-01 09:05:00", "steps": step})["workflow_id"]
    w2 = call("schedule_workflow", {"start_time": "2025-06-01 09:06:00", "steps": step})["workflow_id"]
    assert call("cancel_workflow", {"workflow.id": w1})["status"] == "cancelled"
    err = call("cancel_workflow", {"workflow.id": w1}, ok=False)["error"]
    assert err["code"] == "INVALID_IN_STATE"
    assert [w["workflow_id"] for w in call("get_workflow_list")["workflows"]] == [w1, w2]
    assert [w["workflow_id"] for w in call("get_workflow_list", {"status": "scheduled"})["workflows"]] == [w2]
    err = call("get_workflow_status", {"workflow.id": "w99"}, ok=False)["error"]
    assert err["code"] == "NOT_FOUND" and err["accepted"] == [w1, w2]
    home.advance(600)
    assert home.devices["living_room_light_1"].read("OnOff", "OnOff") is True  # w2 ran
    assert call("get_workflow_status", {"workflow.id": w1})["status"] == "cancelled"


def test_clock_control(home):
    backend = TwinBackend(home)
    assert backend.clock() == {"tick": 0, "time": "2025-06-01 09:00:00"}
    assert backend.advance(1.5) == {"tick": 15, "time": "2025-06-01 09:00:01"}


def test_same_calls_same_history():
    def episode():
        session = Session()
        backend = TwinBackend(make_home(seed=3))
        call_tool(backend, "execute_command", on(), session)
        call_tool(backend, "schedule_workflow", {"start_time": "2025-06-01 09:01:00", "steps": [
            {"tool": "execute_command", "args": {**on(), "command.id": "Off"}}]}, session)
        backend.advance(120)
        call_tool(backend, "get_room_states", {"room.id": "living_room"}, session)
        call_tool(backend, "get_workflow_list", {}, session)
        return json.dumps(session.history, sort_keys=True), json.dumps(backend.home.snapshot(), sort_keys=True)
    assert episode() == episode()


def test_twin_backend_implements_the_protocols(home):
    from bridge.backend import Backend, ClockControl
    backend = TwinBackend(home)
    assert isinstance(backend, Backend) and isinstance(backend, ClockControl)


def test_every_device_of_the_default_home_answers_every_read_tool():
    home = Home.default(seed=0)
    backend = TwinBackend(home)
    for device_id in home.devices:
        for tool in ("get_device_structure", "get_all_attributes"):
            result = call_tool(backend, tool, {"device.id": device_id})
            assert result["ok"], (device_id, tool, result)
            json.dumps(result)


def test_the_home_rejects_a_bad_step_with_the_tools_error(call, home):
    from twin.tool_arguments import ArgumentError
    bad = {"tool": "execute_command", "args": {"device_id": "l", "endpoint.id": "kitchen",
                                              "cluster.id": "OnOff", "command.id": "On", "args": {}}}
    tool = call("schedule_workflow", {"start_time": "2025-06-01 09:10:00", "steps": [bad]}, ok=False)["error"]
    with pytest.raises(ArgumentError) as err:
        home.workflows.schedule("2025-06-01 09:10:00", [bad])
    assert tool == {"code": "INVALID_ARGUMENT", "message": err.value.message}
    assert tool["message"] == "steps[0]: endpoint.id must be an integer, got 'kitchen'"
    assert home.workflows.list() == []
