"""Equivalence: one scripted tool sequence on the default home, once in process (TwinBackend)
and once over Matter (`twin run --matter` nodes behind python-matter-server, commissioned by
the bridge from their QR codes, in a network namespace this test creates). The sequence covers
discovery (rooms, a room's devices, a device's structure, all attributes), reads, commands, a
write, a dependency error, a scheduled workflow with a failing step, and room states (over
Matter: read from each room's `sensors@<room>` node).

The observations must be the same JSON, key order included, apart from:
- timestamps and timing (`TIMING` keys: virtual ticks and times in process, wall-clock times
  over Matter);
- the sentence of an error a node answered with a bare Matter status (`NODE_ANSWER`): the IM
  carries the status code only. The code, and every error either path raises itself, are
  compared word for word.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import re
import subprocess
import sys
import time
from typing import Any

import pytest
from e2e_twin import only_the_readers_entry, per_reader
from matterjs.lab import SERVER_URL, lab
from netns import REPO, wait_for_line

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

ROOM = "living_room"
LIGHT = {"device.id": "living_room_light", "endpoint.id": 1}
AC = {"device.id": "living_room_ac", "endpoint.id": 1}
#: The twin behind Matter runs this slowly (a virtual second per 1000 wall seconds), so its
#: rooms stay at the virtual time the in-process run reads them at: room physics drifts with
#: time (kitchen humidity +0.01 % per ~8 s), and how much wall time the Matter path takes is
#: timing, which the comparison leaves out. Device state does not wait for ticks.
SPEED = "0.001"


def sequence(start_time: str) -> list[tuple[str, dict[str, Any]]]:
    move = {**LIGHT, "cluster.id": "LevelControl", "command.id": "MoveToLevel",
            "args": {"level": 200, "transitionTime": 0, "optionsMask": 0, "optionsOverride": 0}}
    states = ("get_room_states", {"room.id": ROOM})
    return [
        ("get_rooms", {}),
        ("get_room_devices", {"room.id": ROOM}),
        states,
        ("get_device_structure", {"device.id": "living_room_light"}),
        ("get_attribute", {**LIGHT, "cluster.id": "OnOff", "attribute.id": "OnOff"}),
        ("get_attribute", {**LIGHT, "cluster.id": "LevelControl", "attribute.id": "CurrentLevel"}),
        ("execute_command", move),
        ("get_attribute", {**LIGHT, "cluster.id": "LevelControl", "attribute.id": "CurrentLevel"}),
        ("execute_command", {**LIGHT, "cluster.id": "OnOff", "command.id": "Toggle", "args": {}}),
        ("get_attribute", {**LIGHT, "cluster.id": "OnOff", "attribute.id": "OnOff"}),
        ("execute_command", {**move, "args": {**move["args"], "level": 255}}),
        states,  # the light's lux, through the room-sensor node
        ("get_room_states", {"room.id": "kitchen"}),
        ("get_attribute", {**AC, "cluster.id": "OnOff", "attribute.id": "OnOff"}),
        # a dependency error: the air conditioner is off
        ("write_attribute", {**AC, "cluster.id": "Thermostat", "attribute.id": "OccupiedCoolingSetpoint",
                             "value": 2400}),
        ("execute_command", {**AC, "cluster.id": "OnOff", "command.id": "On", "args": {}}),
        ("write_attribute", {**AC, "cluster.id": "Thermostat", "attribute.id": "OccupiedCoolingSetpoint",
                             "value": 2400}),
        ("get_attribute", {**AC, "cluster.id": "FanControl", "attribute.id": "PercentSetting"}),
        ("execute_command", {**AC, "cluster.id": "OnOff", "command.id": "Explode", "args": {}}),
        ("schedule_workflow", {"start_time": start_time, "steps": [
            {"tool": "execute_command", "args": {**LIGHT, "cluster.id": "OnOff", "command.id": "On", "args": {}}},
            {"tool": "write_attribute", "args": {**AC, "cluster.id": "Thermostat",
                                                 "attribute.id": "OccupiedCoolingSetpoint", "value": 9999}},
            {"tool": "execute_command", "args": {**LIGHT, "cluster.id": "OnOff", "command.id": "Off", "args": {}}}]}),
    ]


TIMING = {"start_time", "start_tick", "finished_tick", "finished_time", "tick", "time", "current_time"}
#: Over Matter a node's refusal carries only its status code (the IM has no text for it), and
#: the Matter backend says "the node answered <CODE> to <what>". Only those sentences are left
#: out of the comparison; errors either path raises itself are compared word for word.
NODE_ANSWER = re.compile(r"(?:(step \d+ \(\w+\)): )?([A-Z_]+): the node answered \2 to ")


def node_answers(value: Any) -> set[str]:
    """Error codes in an over-Matter observation that are a node's bare status."""
    found: set[str] = set()
    if isinstance(value, dict):
        error = value.get("error")
        if isinstance(error, dict) and str(error.get("message", "")).startswith(f"the node answered {error['code']} "):
            found.add(error["code"])
        elif isinstance(error, str):
            found.update(m.group(2) for m in NODE_ANSWER.finditer(error))
        for v in value.values():
            found |= node_answers(v)
    elif isinstance(value, list):
        for v in value:
            found |= node_answers(v)
    return found


def split_per_reader(result: Any) -> tuple[Any, dict[str, Any]]:
    """(a get_all_attributes result without its per-reader attributes, those attributes)."""
    attributes = result.get("attributes") if isinstance(result, dict) else None
    if not isinstance(attributes, dict):
        return result, {}
    kept, apart = {}, {}
    for key, value in attributes.items():
        _, cluster, attribute = key.split(".")
        (apart if per_reader(cluster, attribute) else kept)[key] = value
    return {**result, "attributes": kept}, apart


def normalize(value: Any, status_only: set[str]) -> Any:
    """Drop timestamps and timing; for codes in `status_only`, keep the code, not the sentence."""
    if isinstance(value, dict):
        out = {k: normalize(v, status_only) for k, v in value.items() if k not in TIMING}
        error = value.get("error")
        if isinstance(error, dict) and error.get("code") in status_only:
            out["error"] = {**error, "message": "(a node's status)"}
        elif isinstance(error, str):  # workflows: "step N (tool): <CODE>: sentence"
            match = re.match(r"(step \d+ \(\w+\): )?([A-Z_]+): ", error)
            if match and match.group(2) in status_only:
                out["error"] = match.group(0) + "(a node's status)"
        return out
    if isinstance(value, list):
        return [normalize(v, status_only) for v in value]
    return value


def run_sequence(backend: Any, advance: Any) -> list[Any]:
    from bridge.tools import call_tool
    out = [call_tool(backend, name, args) for name, args in sequence("")[:-1]]
    # The workflow (the last call) starts 2 s after it is scheduled: over Matter the calls before
    # it take wall time (seconds on a loaded machine), so a start read before them may be past.
    now = dt.datetime.strptime(call_tool(backend, "get_current_time")["current_time"], "%Y-%m-%d %H:%M:%S")
    out.append(call_tool(backend, *sequence((now + dt.timedelta(seconds=2)).strftime("%Y-%m-%d %H:%M:%S"))[-1]))
    advance(3)
    workflow = {"workflow.id": out[-1].get("workflow_id", "w1")}
    # Over Matter the steps take wall time of their own (three invokes, each up to the config's
    # timeout on a loaded machine): wait for the workflow to end, not for a guess of how long.
    deadline = time.monotonic() + 90
    while (call_tool(backend, "get_workflow_status", workflow).get("status") in ("scheduled", "running")
           and time.monotonic() < deadline):
        time.sleep(0.2)
    out.append(call_tool(backend, "get_workflow_status", workflow))
    out.append(call_tool(backend, "get_workflow_list"))
    out.append(call_tool(backend, "get_attribute", {**LIGHT, "cluster.id": "OnOff", "attribute.id": "OnOff"}))
    out.append(call_tool(backend, "get_all_attributes", {"device.id": "living_room_light"}))
    return out


def both_paths(config: str) -> tuple[list[Any], list[Any]]:
    from bridge.config import load_config
    from bridge.matter_backend import MatterBackend
    from bridge.twin_backend import TwinBackend
    from twin.home import Home
    twin = TwinBackend(Home.default())
    in_process = run_sequence(twin, twin.advance)
    matter = MatterBackend(load_config(config))
    try:
        matter.commission_all()
        over_matter = run_sequence(matter, time.sleep)
    finally:
        matter.close()
    return in_process, over_matter


def test_the_same_tool_sequence_gives_the_same_observations_in_process_and_over_matter(tmp_path):
    from matter_twin.console import codes_rows
    from twin.home import Home
    home = Home.default()
    codes = {row["device"]: row for row in codes_rows(home)}
    with lab(tmp_path) as the_lab:
        log = tmp_path / "twin.log"
        env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
        the_lab.processes["twin"] = the_lab.ns.popen(
            [sys.executable, "-m", "matter_twin.cli", "run", "--speed", SPEED, "--matter",
             "--storage", str(tmp_path / "twin"),
             "--base-port", "5560", "--open-windows", "all-qr"], stdout=open(log, "w"), stderr=subprocess.STDOUT,
            cwd=str(tmp_path), env=env)
        try:
            wait_for_line(log, lambda line: line.startswith("matter: ") or line.startswith("error: "), 90)
            assert the_lab.processes["twin"].poll() is None, log.read_text()[-3000:]
        except TimeoutError:
            raise AssertionError(f"twin run did not come up:\n{log.read_text()[-3000:]}") from None
        devices = [d.id for d in home.devices_in(ROOM)]
        cfg = the_lab.write_config("twin.yaml", {
            "server": SERVER_URL, "timeout": 15,
            "rooms": [{"id": rid, "name": room.name, "sensors": {
                state: {"pairing_code": codes[f"sensors@{rid}"]["qr_code"]}
                for state in ("temperature", "humidity", "illuminance", "pm10")}}
                for rid, room in home.rooms.items()],
            "devices": [{"id": d, "room": ROOM, "name": home.device_info(d)["label"],
                         "matter": {"pairing_code": codes[d]["qr_code"]}} for d in devices]})
        try:
            in_process, over_matter = the_lab.ns.call(both_paths, str(cfg), timeout=400)
            (tmp_path / "observations.json").write_text(json.dumps(  # for a look after a failure
                {"in_process": in_process, "over_matter": over_matter}, indent=1))
        except Exception as err:
            raise AssertionError(f"{err}\n--- twin ---\n{log.read_text()[-2000:]}\n--- server ---\n"
                                 f"{the_lab.log('server', 2000)}") from None
    names = [name for name, _ in sequence("x")] + ["get_workflow_status", "get_workflow_list",
                                                    "get_attribute", "get_all_attributes"]
    assert len(in_process) == len(over_matter) == len(names)
    # The sequence does what it claims (else equal failures would pass).
    observed = dict(zip(names, in_process))  # the last of each name
    assert all(r["ok"] for r in in_process[:5]), in_process[:5]
    assert [r["error"]["code"] for r in in_process if not r["ok"]] == [
        "CONSTRAINT_ERROR", "INVALID_IN_STATE", "UNSUPPORTED_COMMAND"]
    assert in_process[2]["illuminance"] == 700 and in_process[11]["illuminance"] == 500  # light off
    assert observed["get_workflow_status"]["status"] == "failed"
    assert [s["status"] for s in observed["get_workflow_status"]["steps"]] == ["ok", "error", "skipped"]
    assert observed["get_attribute"]["value"] is True  # step 1 ran, step 3 never did
    # The dependency error and the workflow's failing write were the twin node's own answers.
    assert node_answers(over_matter[names.index("write_attribute")]) == {"INVALID_IN_STATE"}, \
        over_matter[names.index("write_attribute")]
    assert node_answers(over_matter[-4]) == {"CONSTRAINT_ERROR"}, over_matter[-4]
    for name, a, b in zip(names, in_process, over_matter):
        status_only = node_answers(b)
        # FabricSceneInfo: over Matter the bridge's fabric reads its own entry, in process no fabric reads.
        (a, a_apart), (b, b_apart) = split_per_reader(a), split_per_reader(b)
        assert set(a_apart) == set(b_apart) and all(
            only_the_readers_entry(b_apart[k], a_apart[k]) for k in a_apart), (a_apart, b_apart)
        a, b = normalize(a, status_only), normalize(b, status_only)
        assert a == b, f"{name} differs:\nin process: {a}\nover Matter: {b}"
        # the same JSON, in the same order (dict equality alone ignores key order)
        assert json.dumps(a) == json.dumps(b), f"{name}: order differs"


def test_a_room_sensor_can_be_a_node_to_commission_by_pairing_code():
    """The config behind the test above: sensors by pairing code, one of three ways only."""
    from bridge.config import parse_config
    from twin.schema import UserFileError
    room = {"id": "hall", "sensors": {"temperature": {"pairing_code": "MT:WGKT44QI14296J0DP10"},
                                      "pm10": {"pairing_code": "3365-582-1720", "endpoint": 4}}}
    sensors = parse_config({"server": SERVER_URL, "rooms": [room]}).config.rooms[0].sensors
    assert sensors["temperature"].pairing_code == "MT:WGKT44QI14296J0DP10"
    assert sensors["temperature"].endpoint is None  # the first endpoint with the cluster
    assert sensors["pm10"].pairing_code == "33655821720" and sensors["pm10"].endpoint == 4
    bad = [({"pairing_code": "MT:WGKT44QI14296J0DP10", "node_id": 3}, "exactly one of device"),
           ({"pairing_code": "12"}, "neither a QR payload"),
           ({"device": "lamp", "server": SERVER_URL}, "server goes with node_id or pairing_code")]
    for ref, problem in bad:
        try:
            parse_config({"server": SERVER_URL, "rooms": [{"id": "hall", "sensors": {"humidity": ref}}]},
                         "home.yaml")
        except UserFileError as err:
            assert str(err).startswith("home.yaml: rooms[0].sensors.humidity") and problem in str(err), err
        else:
            raise AssertionError(f"accepted {ref}")
    try:
        parse_config({"rooms": [{"id": "hall", "sensors": {"pm10": {"pairing_code": "33655821720"}}}]}, "h.yaml")
    except UserFileError as err:
        assert "rooms[0].sensors.pm10.server: missing" in str(err), err
    else:
        raise AssertionError("a pairing code without a server was accepted")
