"""Bridge config files: validation one-liners, the node state file, twin-only mixed homes
(no network), wall-clock workflows and the CLI's --backend errors."""
from __future__ import annotations

import copy
import datetime as dt
import json
import subprocess
import sys
import time

import pytest
from netns import REPO

from bridge.backend import Backend
from bridge.config import load_config, parse_config
from bridge.mixed import MixedBackend, load_backend
from bridge.tools import call_tool
from twin.schema import UserFileError

BASE = {
    "server": "ws://127.0.0.1:5580/ws",
    "rooms": [{"id": "lounge", "name": "Lounge", "twin": {"room": "living_room"},
               "sensors": {"temperature": {"device": "probe", "endpoint": 1}}},
              {"id": "den"}],
    "devices": [{"id": "probe", "room": "lounge", "matter": {"pairing_code": "3497-011-2332"}},
                {"id": "lamp", "room": "lounge", "name": "Lamp", "twin": {"device": "living_room_light"}}],
}


def test_a_good_config_parses_with_defaults():
    config = parse_config(copy.deepcopy(BASE)).config
    assert config.devices[0].matter.pairing_code == "34970112332"  # separators dropped
    assert config.devices[1].twin.home == "default"
    assert config.server_of(config.devices[0].matter) == "ws://127.0.0.1:5580/ws"
    assert config.rooms[1].display_name == "den"
    assert config.timeout == 10


@pytest.mark.parametrize("change, field, words", [
    (lambda d: d["devices"][0].update(room="attic"), "devices[0].room", "no room 'attic'; rooms: lounge, den"),
    (lambda d: d["devices"][0]["matter"].update(node_id=3), "devices[0].matter", "exactly one of node_id"),
    (lambda d: d["devices"][0]["matter"].update(pairing_code="123"), "devices[0].matter.pairing_code",
     "neither a QR payload"),
    (lambda d: d["devices"][1].pop("twin"), "devices[1]", "say where the device lives"),
    (lambda d: d.update(server="http://host:5580"), "server", "not a WebSocket URL"),
    (lambda d: d["rooms"][0]["sensors"]["temperature"].update(device="ghost"),
     "rooms[0].sensors.temperature.device", "no device 'ghost'"),
    (lambda d: d["rooms"][0]["sensors"].update(co2={"device": "probe"}), "rooms[0].sensors.co2", "Input should be"),
    (lambda d: d["devices"].append({"id": "probe", "room": "den", "twin": {"device": "x"}}),
     "devices[2].id", "defined twice"),
    (lambda d: d.pop("server"), "devices[0].matter.server", "no default server"),
    (lambda d: d["devices"][0].update(colour="red"), "devices[0].colour", "Extra inputs"),
    (lambda d: d["devices"][0]["matter"].update(endpoint=-1), "devices[0].matter.endpoint",
     "greater than or equal to 0"),
    (lambda d: d.update(rooms=[]), "rooms", "at least 1 item"),
    (lambda d: d["rooms"][0]["sensors"].update(humidity={"node_id": 4, "device": "probe"}),
     "rooms[0].sensors.humidity", "exactly one of device"),
    (lambda d: d["devices"][0]["matter"].update(renumber={7: 1, 8: 1}), "devices[0].matter",
     "its own shown endpoint id"),
    (lambda d: d["devices"][0]["matter"].update(endpoint=9, renumber={7: 1}), "devices[0].matter",
     "endpoint 9 is not renumbered"),
])
def test_bad_configs_name_the_file_the_field_and_the_problem(change, field, words):
    data = copy.deepcopy(BASE)
    change(data)
    with pytest.raises(UserFileError) as info:
        parse_config(data, "home/bridge.yaml")
    message = str(info.value)
    assert message.startswith(f"home/bridge.yaml: {field}: "), message
    assert words in message and "\n" not in message


def test_file_level_errors(tmp_path):
    with pytest.raises(UserFileError, match=r"missing\.yaml: \(file\): cannot read"):
        load_config(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("rooms: [\n")
    with pytest.raises(UserFileError, match=r"bad\.yaml: line \d+ column \d+: YAML syntax error"):
        load_config(bad)
    bad.write_text("- just a list\n")
    with pytest.raises(UserFileError, match=r"bad\.yaml: \(top level\): expected a mapping"):
        load_config(bad)


def test_twin_references_are_checked_when_the_backend_is_built(tmp_path):
    path = tmp_path / "b.yaml"
    data = {"rooms": [{"id": "r"}], "devices": [{"id": "x", "room": "r", "twin": {"device": "no_such"}}]}
    path.write_text(json.dumps(data))
    path = path.rename(tmp_path / "b.json")
    with pytest.raises(UserFileError, match=r"b\.json: devices\[0\]\.twin\.device: home has no device 'no_such'"):
        load_backend(path)
    data["devices"][0]["twin"] = {"home": "nowhere.yaml", "device": "lamp"}
    path.write_text(json.dumps(data))
    with pytest.raises(UserFileError, match=r"devices\[0\]\.twin\.home: .*nowhere\.yaml"):
        load_backend(path)
    data["devices"] = []
    data["rooms"][0]["twin"] = {"room": "cellar"}
    path.write_text(json.dumps(data))
    with pytest.raises(UserFileError, match=r"rooms\[0\]\.twin\.room: home has no room 'cellar'"):
        load_backend(path)


def test_the_state_file_remembers_commissioned_nodes(tmp_path):
    path = tmp_path / "flat.yaml"
    path.write_text(json.dumps(BASE))
    loaded = load_config(path)
    assert loaded.state_path == tmp_path / "flat.state.json"
    assert loaded.remembered_node("probe", "ws://127.0.0.1:5580/ws", "34970112332") is None
    loaded.remember_node("probe", "ws://127.0.0.1:5580/ws", "34970112332", 7)
    again = load_config(path)
    assert again.remembered_node("probe", "ws://127.0.0.1:5580/ws", "34970112332") == 7
    # Another code or server means another device: commission it anew.
    assert again.remembered_node("probe", "ws://127.0.0.1:5580/ws", "24970212336") is None
    assert again.remembered_node("probe", "ws://127.0.0.1:5581/ws", "34970112332") is None


@pytest.fixture
def twin_only(tmp_path):
    path = tmp_path / "twin.yaml"
    path.write_text(json.dumps({"rooms": [{"id": "lounge", "name": "Lounge", "twin": {"room": "living_room"}},
                                          {"id": "den", "name": "Den"}],
                                "devices": [{"id": "lamp", "room": "lounge", "name": "Lamp",
                                             "twin": {"device": "living_room_light"}},
                                            {"id": "ac", "room": "den", "twin": {"device": "bedroom_ac"}}]}))
    backend = load_backend(path)
    yield backend
    backend.close()


def test_a_twin_only_bridge_home_routes_and_renames(twin_only):
    b = twin_only
    assert isinstance(b, MixedBackend) and isinstance(b, Backend)
    assert call_tool(b, "get_rooms")["rooms"] == [{"room_id": "lounge", "name": "Lounge"},
                                                  {"room_id": "den", "name": "Den"}]
    devices = call_tool(b, "get_room_devices", {"room.id": "lounge"})["devices"]
    assert devices == [{"device_id": "lamp", "name": "Lamp", "device_type": "dimmable_light",
                        "label": "Dimmable Light", "endpoints": [1]}]
    structure = call_tool(b, "get_device_structure", {"device.id": "lamp"})
    assert (structure["device_id"], structure["room_id"], structure["name"]) == ("lamp", "lounge", "Lamp")
    off = call_tool(b, "execute_command", {"device.id": "lamp", "endpoint.id": 1, "cluster.id": "OnOff",
                                           "command.id": "Off", "args": {}})
    assert off["ok"] and off["device_id"] == "lamp"
    assert call_tool(b, "get_attribute", {"device.id": "lamp", "cluster.id": 6, "attribute.id": 0})["value"] is False
    states = call_tool(b, "get_room_states", {"room.id": "lounge"})
    assert states["ok"] and states["temperature"] == 2650  # the linked twin room, 26.5 °C
    # A room with neither sensors nor a twin room says so, naming what is missing.
    den = call_tool(b, "get_room_states", {"room.id": "den"})
    assert den["error"]["code"] == "UNAVAILABLE"
    assert "no sensor for temperature, humidity, illuminance, pm10" in den["error"]["message"]
    # The twin's rules still apply behind the bridge.
    err = call_tool(b, "write_attribute", {"device.id": "ac", "cluster.id": "Thermostat",
                                           "attribute.id": "OccupiedCoolingSetpoint", "value": 2400})
    assert err["error"]["code"] == "INVALID_IN_STATE"
    assert call_tool(b, "get_attribute", {"device.id": "nope", "cluster.id": 6, "attribute.id": 0})["error"] == {
        "code": "NOT_FOUND", "message": "there is no device 'nope'", "accepted": ["ac", "lamp"]}


def test_wall_clock_workflows_run_record_failures_and_cancel(twin_only):
    b = twin_only
    now = dt.datetime.strptime(call_tool(b, "get_current_time")["current_time"], "%Y-%m-%d %H:%M:%S")
    assert abs((dt.datetime.now() - now).total_seconds()) < 2  # the wall clock, not the twin's
    at = (now + dt.timedelta(seconds=1)).strftime("%Y-%m-%d %H:%M:%S")
    later = (now + dt.timedelta(hours=1)).strftime("%Y-%m-%d %H:%M:%S")
    step_on = {"tool": "execute_command", "args": {"device.id": "lamp", "endpoint.id": 1, "cluster.id": "OnOff",
                                                   "command.id": "Off", "args": {}}}
    step_bad = {"tool": "write_attribute", "args": {"device.id": "ac", "cluster.id": "Thermostat",
                                                    "attribute.id": "OccupiedCoolingSetpoint", "value": 2400}}
    w1 = call_tool(b, "schedule_workflow", {"start_time": at, "steps": [step_on, step_bad, step_on]})
    w2 = call_tool(b, "schedule_workflow", {"start_time": later, "steps": [step_on]})
    assert w1["status"] == "scheduled" and w2["workflow_id"] == "w2"
    past = call_tool(b, "schedule_workflow", {"start_time": "2020-01-01 00:00:00", "steps": [step_on]})
    assert past["error"]["code"] == "INVALID_ARGUMENT" and "in the past" in past["error"]["message"]
    assert call_tool(b, "cancel_workflow", {"workflow.id": "w2"})["status"] == "cancelled"
    deadline = time.monotonic() + 10
    while call_tool(b, "get_workflow_status", {"workflow.id": "w1"})["status"] in ("scheduled", "running"):
        assert time.monotonic() < deadline, "the workflow never ran"
        time.sleep(0.1)
    done = call_tool(b, "get_workflow_status", {"workflow.id": "w1"})
    assert done["status"] == "failed"
    assert [s["status"] for s in done["steps"]] == ["ok", "error", "skipped"]
    assert done["steps"][1]["error"].startswith("INVALID_IN_STATE: ")
    assert done["error"].startswith("step 2 (write_attribute): INVALID_IN_STATE")
    assert [w["workflow_id"] for w in call_tool(b, "get_workflow_list", {"status": "cancelled"})["workflows"]] == ["w2"]
    assert call_tool(b, "cancel_workflow", {"workflow.id": "w1"})["error"]["code"] == "INVALID_IN_STATE"
    assert call_tool(b, "get_workflow_status", {"workflow.id": "w9"})["error"]["accepted"] == ["w1", "w2"]


def test_twin_homes_follow_the_wall_clock(twin_only):
    (home,) = twin_only.twin_homes().values()
    start = home.clock.tick
    time.sleep(0.5)
    call_tool(twin_only, "get_attribute", {"device.id": "lamp", "cluster.id": "OnOff", "attribute.id": "OnOff"})
    assert home.clock.tick - start >= 4  # >= 0.4 s of virtual time after 0.5 s of wall time


def test_cli_backend_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("rooms: []\n")
    for args in (["tool", "--backend", str(bad), "get_rooms"], ["mcp", "--backend", str(bad)],
                 ["serve", "--backend", str(tmp_path / "none.yaml")]):
        run = subprocess.run([sys.executable, "-m", "matter_twin.cli", *args], capture_output=True, text=True,
                             cwd=REPO, timeout=60)
        assert run.returncode == 2, run.stderr
        assert run.stderr.count("\n") == 1 and run.stderr.startswith("error: "), run.stderr
    assert "rooms: List should have at least 1 item" in subprocess.run(
        [sys.executable, "-m", "matter_twin.cli", "tool", "--backend", str(bad), "get_rooms"],
        capture_output=True, text=True, cwd=REPO, timeout=60).stderr
