"""The bridge on foreign hardware: matter.js devices (a dimmable light, a thermostat and a
multi-sensor, see hardware/standins/devices.mjs) behind python-matter-server, in a network
namespace this module creates. The bridge commissions them by pairing code, places them in
rooms, and the same tools drive them; then a mixed home (twin devices + the same nodes),
`twin bridge init`, and clear errors when the server or a node is gone.

The scenarios run inside the namespace (`Netns.call`), where the server listens.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from matterjs.lab import SERVER_URL, lab
from netns import REPO

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

LIGHT_ON = {"device.id": "light", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {}}
LIGHT_OFF = {**LIGHT_ON, "command.id": "Off"}


def level(value: int) -> dict[str, Any]:
    return {"device.id": "light", "endpoint.id": 1, "cluster.id": "LevelControl", "command.id": "MoveToLevel",
            "args": {"level": value, "transitionTime": 0, "optionsMask": 0, "optionsOverride": 0}}


@pytest.fixture(scope="module")
def the_lab(tmp_path_factory):
    with lab(tmp_path_factory.mktemp("bridge-lab")) as the_lab:
        cfg = the_lab.write_config("home.yaml", {
            "name": "Foreign flat", "server": SERVER_URL, "timeout": 15,
            "rooms": [{"id": "living", "name": "Living Room",
                       "sensors": {"temperature": {"device": "sensors", "endpoint": 1}}},
                      {"id": "hall", "name": "Hall",
                       "sensors": {"temperature": {"device": "sensors", "endpoint": 1},
                                   "humidity": {"device": "sensors", "endpoint": 2},
                                   "illuminance": {"device": "sensors", "endpoint": 3},
                                   "pm10": {"device": "sensors", "endpoint": 4}}}],
            "devices": [{"id": "light", "room": "living", "name": "Ceiling light",
                         "matter": {"pairing_code": the_lab.codes["light"], "endpoint": 1}},
                        {"id": "thermostat", "room": "living", "name": "Wall thermostat",
                         "matter": {"pairing_code": the_lab.codes["thermostat"], "endpoint": 1}},
                        {"id": "sensors", "room": "hall", "name": "Multi-sensor",
                         "matter": {"pairing_code": the_lab.codes["sensors"]}}]})
        the_lab.config = cfg
        yield the_lab


def call_in(the_lab: Any, fn: Any, *args: Any, timeout: float = 240) -> Any:
    try:
        return the_lab.ns.call(fn, *args, timeout=timeout)
    except Exception as err:
        raise AssertionError(f"{err}\n--- matter-server log ---\n{the_lab.log('server', 3000)}") from None


# ---- scenarios (run inside the namespace) -------------------------------------------------

def ok(backend: Any, name: str, args: dict[str, Any] | None = None) -> dict[str, Any]:
    from bridge.tools import call_tool
    result = call_tool(backend, name, args or {})
    assert result["ok"], f"{name} {args}: {result}"
    return result


def failed(backend: Any, name: str, args: dict[str, Any]) -> dict[str, Any]:
    from bridge.tools import call_tool
    result = call_tool(backend, name, args)
    assert not result["ok"], f"{name} {args} should have failed: {result}"
    return result["error"]


def wait_workflow(backend: Any, workflow_id: str, timeout: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        status = ok(backend, "get_workflow_status", {"workflow.id": workflow_id})
        if status["status"] not in ("scheduled", "running"):
            return status
        assert time.monotonic() < deadline, f"workflow {workflow_id} never finished: {status}"
        time.sleep(0.2)


def soon(backend: Any, seconds: int = 2) -> str:
    now = dt.datetime.strptime(ok(backend, "get_current_time")["current_time"], "%Y-%m-%d %H:%M:%S")
    return (now + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def foreign_scenario(config: str) -> dict[str, Any]:
    from bridge.config import load_config
    from bridge.matter_backend import MatterBackend
    loaded = load_config(config)
    b = MatterBackend(loaded)
    try:
        nodes = b.commission_all()  # by pairing code, through python-matter-server
        state = json.loads(loaded.state_path.read_text())["nodes"]
        assert {k: v["node_id"] for k, v in state.items()} == nodes, (state, nodes)

        assert ok(b, "get_rooms")["rooms"] == [{"room_id": "living", "name": "Living Room"},
                                               {"room_id": "hall", "name": "Hall"}]
        living = ok(b, "get_room_devices", {"room.id": "living"})["devices"]
        assert [(d["device_id"], d["name"], d["device_type"], d["endpoints"]) for d in living] == [
            ("light", "Ceiling light", "dimmable_light", [1]), ("thermostat", "Wall thermostat", "thermostat", [1])]
        hall = ok(b, "get_room_devices", {"room.id": "hall"})["devices"]
        assert hall[0]["endpoints"] == [1, 2, 3, 4]

        structure = ok(b, "get_device_structure", {"device.id": "light"})
        assert [e["endpoint_id"] for e in structure["endpoints"]] == [0, 1]
        ep1 = structure["endpoints"][1]
        assert ep1["device_types"][0]["id"] == 0x0101
        clusters = {c["name"]: c for c in ep1["clusters"]}
        assert {"OnOff", "LevelControl", "Descriptor"} <= set(clusters)
        level_attrs = {a["name"]: a for a in clusters["LevelControl"]["attributes"]}
        assert level_attrs["CurrentLevel"]["type"] == "unsigned integer or null"
        assert level_attrs["OnLevel"]["writable"] is True and level_attrs["CurrentLevel"]["writable"] is False
        commands = {c["name"]: c for c in clusters["LevelControl"]["commands"]}
        assert set(commands["MoveToLevel"]["fields"]) == {"level", "transitionTime", "optionsMask", "optionsOverride"}

        def read(c, a, d="light"):
            return ok(b, "get_attribute", {"device.id": d, "cluster.id": c, "attribute.id": a})
        assert read("OnOff", "OnOff")["value"] is False
        ok(b, "execute_command", LIGHT_ON)
        assert read(6, 0)["value"] is True  # numeric ids work too
        ok(b, "execute_command", level(200))
        assert read("LevelControl", "CurrentLevel") == {"ok": True, "device_id": "light", "endpoint_id": 1,
                                                         "cluster": "LevelControl", "attribute": "CurrentLevel",
                                                         "value": 200}
        # The device itself refuses what the spec forbids; the bridge passes its status on.
        assert failed(b, "execute_command", level(255))["code"] == "CONSTRAINT_ERROR"
        bad_cmd = failed(b, "execute_command", {**LIGHT_ON, "command.id": "Explode"})
        assert bad_cmd["code"] == "UNSUPPORTED_COMMAND" and "Toggle" in bad_cmd["accepted"]
        assert failed(b, "get_attribute", {"device.id": "light", "cluster.id": "FanControl",
                                           "attribute.id": "FanMode"})["code"] == "UNSUPPORTED_CLUSTER"
        assert failed(b, "get_attribute", {"device.id": "light", "endpoint.id": 7, "cluster.id": "OnOff",
                                           "attribute.id": "OnOff"})["accepted"] == [0, 1]
        bad_field = failed(b, "execute_command", {**level(10), "args": {"lvl": 10}})
        assert bad_field["code"] == "INVALID_COMMAND" and "lvl" in bad_field["message"]

        setpoint = {"device.id": "thermostat", "cluster.id": "Thermostat", "attribute.id": "OccupiedHeatingSetpoint"}
        assert ok(b, "write_attribute", {**setpoint, "value": 2150})["value"] == 2150
        assert read("Thermostat", "OccupiedHeatingSetpoint", "thermostat")["value"] == 2150
        assert failed(b, "write_attribute", {**setpoint, "value": 9000})["code"] == "CONSTRAINT_ERROR"
        readonly = failed(b, "write_attribute", {**setpoint, "attribute.id": "LocalTemperature", "value": 2000})
        assert readonly["code"] == "UNSUPPORTED_WRITE" and "OccupiedCoolingSetpoint" in readonly["accepted"]

        everything = ok(b, "get_all_attributes", {"device.id": "sensors"})["attributes"]
        assert everything["1.TemperatureMeasurement.MeasuredValue"] == 2150
        assert everything["4.Pm10ConcentrationMeasurement.MeasuredValue"] == 12.5
        assert not any(k.endswith(".AttributeList") for k in everything)

        hall_states = ok(b, "get_room_states", {"room.id": "hall"})
        assert {k: hall_states[k] for k in ("temperature", "humidity", "illuminance", "pm10")} == {
            "temperature": 2150, "humidity": 4820, "illuminance": 1000, "pm10": 12.5}
        partial = failed(b, "get_room_states", {"room.id": "living"})
        assert partial["code"] == "UNAVAILABLE"
        assert "no sensor for humidity, illuminance, pm10" in partial["message"]
        assert "temperature 21.5" in partial["message"]

        # A workflow on the wall clock: step 2 fails on the device, step 3 is skipped.
        wf = ok(b, "schedule_workflow", {"start_time": soon(b), "steps": [
            {"tool": "execute_command", "args": LIGHT_OFF},
            {"tool": "execute_command", "args": level(255)},
            {"tool": "execute_command", "args": LIGHT_ON}]})
        assert wf["status"] == "scheduled"
        assert read("OnOff", "OnOff")["value"] is True  # nothing ran early
        done = wait_workflow(b, wf["workflow_id"])
        assert done["status"] == "failed", done
        assert [s["status"] for s in done["steps"]] == ["ok", "error", "skipped"]
        assert done["steps"][1]["error"].startswith("CONSTRAINT_ERROR")
        assert read("OnOff", "OnOff")["value"] is False
        return {"nodes": nodes}
    finally:
        b.close()


def mixed_scenario(config: str) -> None:
    from bridge.mixed import MixedBackend, load_backend
    b = load_backend(config)
    try:
        assert isinstance(b, MixedBackend)
        lounge = ok(b, "get_room_devices", {"room.id": "lounge"})["devices"]
        assert [(d["device_id"], d["device_type"]) for d in lounge] == [
            ("twin_lamp", "dimmable_light"), ("real_lamp", "dimmable_light"), ("real_sensors", "temperature_sensor")]
        # One tool sequence over both kinds of device.
        for device in ("twin_lamp", "real_lamp"):
            ok(b, "execute_command", {**LIGHT_OFF, "device.id": device})
            ok(b, "execute_command", {**level(77), "device.id": device})  # ignored while off (spec)
            current = {"device.id": device, "cluster.id": "LevelControl", "attribute.id": "CurrentLevel"}
            assert ok(b, "get_attribute", current)["value"] != 77, device
            ok(b, "execute_command", {**LIGHT_ON, "device.id": device})
            ok(b, "execute_command", {**level(77), "device.id": device})
            got = ok(b, "get_attribute", current)
            assert (got["value"], got["device_id"]) == (77, device), got
            assert failed(b, "execute_command", {**level(255), "device.id": device})["code"] == "CONSTRAINT_ERROR"
        twin_structure = ok(b, "get_device_structure", {"device.id": "twin_lamp"})
        real_structure = ok(b, "get_device_structure", {"device.id": "real_lamp"})
        assert twin_structure["room_id"] == real_structure["room_id"] == "lounge"
        # Temperature from the real sensor, the rest from the linked twin room.
        states = ok(b, "get_room_states", {"room.id": "lounge"})
        assert states["temperature"] == 2150 and states["humidity"] == 5500
        # A workflow whose steps go to both.
        wf = ok(b, "schedule_workflow", {"start_time": soon(b), "steps": [
            {"tool": "execute_command", "args": {**LIGHT_OFF, "device.id": "real_lamp"}},
            {"tool": "execute_command", "args": {**LIGHT_OFF, "device.id": "twin_lamp"}}]})
        assert wait_workflow(b, wf["workflow_id"])["status"] == "completed"
        for device in ("twin_lamp", "real_lamp"):
            got = ok(b, "get_attribute", {"device.id": device, "cluster.id": "OnOff", "attribute.id": "OnOff"})
            assert got["value"] is False
    finally:
        b.close()


def init_scenario(workdir: str) -> str:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = Path(workdir) / "init.yaml"
    run = subprocess.run([sys.executable, "-m", "matter_twin.cli", "bridge", "init", "--server", SERVER_URL,
                          "-o", str(out)], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert run.returncode == 0, run.stderr
    tool = subprocess.run([sys.executable, "-m", "matter_twin.cli", "tool", "--backend", str(out), "get_room_devices",
                           '{"room.id": "unassigned"}'], capture_output=True, text=True, env=env, cwd=REPO, timeout=120)
    assert tool.returncode == 0, tool.stderr
    return out.read_text() + "\n---\n" + tool.stdout


def errors_scenario(config: str, dead_node: int) -> None:
    from bridge.config import parse_config
    from bridge.matter_backend import MatterBackend
    gone = MatterBackend(parse_config({"server": "ws://127.0.0.1:5599/ws", "timeout": 3, "rooms": [{"id": "r"}],
                                       "devices": [{"id": "x", "room": "r", "matter": {"node_id": 1}}]}))
    try:
        err = failed(gone, "get_attribute", {"device.id": "x", "cluster.id": "OnOff", "attribute.id": "OnOff"})
        assert err["code"] == "UNAVAILABLE" and "ws://127.0.0.1:5599/ws" in err["message"], err
        assert failed(gone, "get_room_devices", {"room.id": "r"})["code"] == "UNAVAILABLE"
    finally:
        gone.close()
    b = MatterBackend(parse_config({"server": SERVER_URL, "timeout": 4, "rooms": [{"id": "r"}],
                                    "devices": [{"id": "ghost", "room": "r", "matter": {"node_id": 999}},
                                                {"id": "dead", "room": "r", "matter": {"node_id": dead_node}}]}))
    try:
        err = failed(b, "get_attribute", {"device.id": "ghost", "cluster.id": "OnOff", "attribute.id": "OnOff"})
        assert err["code"] == "UNAVAILABLE" and "999" in err["message"], err
        t0 = time.monotonic()
        err = failed(b, "execute_command", {**LIGHT_ON, "device.id": "dead"})
        assert err["code"] in ("TIMEOUT", "UNAVAILABLE"), err
        assert time.monotonic() - t0 < 30
        # The failed step of a workflow is recorded, not dropped.
        wf = ok(b, "schedule_workflow", {"start_time": soon(b, 1), "steps": [
            {"tool": "execute_command", "args": {**LIGHT_ON, "device.id": "dead"}}]})
        done = wait_workflow(b, wf["workflow_id"], timeout=40)
        assert done["status"] == "failed" and done["steps"][0]["status"] == "error"
        assert done["steps"][0]["error"].split(":")[0] in ("TIMEOUT", "UNAVAILABLE"), done
    finally:
        b.close()


# ---- the tests ------------------------------------------------------------------------------

def test_foreign_hardware_is_commissioned_placed_in_rooms_and_driven_by_the_tools(the_lab):
    the_lab.node_ids = call_in(the_lab, foreign_scenario, str(the_lab.config))["nodes"]
    assert sorted(the_lab.node_ids) == ["light", "sensors", "thermostat"]


def test_a_mixed_home_of_twin_devices_and_matter_nodes(the_lab):
    nodes = the_lab.node_ids or call_in(the_lab, foreign_scenario, str(the_lab.config))["nodes"]
    cfg = the_lab.write_config("mixed.yaml", {
        "server": SERVER_URL,
        "rooms": [{"id": "lounge", "name": "Lounge", "twin": {"home": "default", "room": "living_room"},
                   "sensors": {"temperature": {"node_id": nodes["sensors"], "endpoint": 1}}}],
        "devices": [{"id": "twin_lamp", "room": "lounge", "twin": {"home": "default", "device": "living_room_light"}},
                    {"id": "real_lamp", "room": "lounge", "matter": {"node_id": nodes["light"], "endpoint": 1}},
                    {"id": "real_sensors", "room": "lounge", "matter": {"node_id": nodes["sensors"]}}]})
    call_in(the_lab, mixed_scenario, str(cfg))


def test_bridge_init_writes_a_config_from_the_servers_nodes(the_lab):
    if not the_lab.node_ids:
        the_lab.node_ids = call_in(the_lab, foreign_scenario, str(the_lab.config))["nodes"]
    text = call_in(the_lab, init_scenario, str(the_lab.workdir))
    config_text, tool_out = text.split("\n---\n")
    data = yaml.safe_load(config_text)
    assert data["server"] == SERVER_URL and data["rooms"] == [{"id": "unassigned", "name": "Unassigned"}]
    assert sorted(d["matter"]["node_id"] for d in data["devices"]) == sorted(the_lab.node_ids.values())
    light = next(d for d in data["devices"] if d["matter"]["node_id"] == the_lab.node_ids["light"])
    assert light["matter"]["endpoint"] == 1 and light["name"] == "Foreign light"
    assert "endpoint 1 DimmableLight" in config_text  # the comment lists device types
    devices = json.loads(tool_out)["devices"]
    assert sorted(d["device_type"] for d in devices) == ["dimmable_light", "temperature_sensor", "thermostat"]


def test_unreachable_server_missing_node_and_dead_device_are_clear_errors(the_lab):
    if not the_lab.node_ids:
        the_lab.node_ids = call_in(the_lab, foreign_scenario, str(the_lab.config))["nodes"]
    the_lab.stop("light")  # last test: the light is gone for good
    call_in(the_lab, errors_scenario, str(the_lab.config), the_lab.node_ids["light"])
