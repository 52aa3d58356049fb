"""The fault engine (twin/faults.py): schedules in virtual time, effects in process, the event
log, files with one-line errors, and determinism (byte-identical reruns, step == fast-forward,
fork == restore)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from twin.faults import FaultFile, load_fault_file, parse_fault
from twin.home import Home
from twin.room_sensors import room_sensor_device
from twin.schema import UserFileError

LIGHT = "kitchen_light"
ON = {"device.id": LIGHT, "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {}}
OFF = {**ON, "command.id": "Off"}
ON_OFF = {"device.id": LIGHT, "endpoint.id": 1, "cluster.id": "OnOff", "attribute.id": "OnOff"}

MIXED = {"faults": [
    {"id": "flaky", "device": LIGHT, "kind": "command_failure", "at": 5, "duration": 60, "severity": 0.5,
     "status": "BUSY", "repeat": {"every": 200, "times": 3}},
    {"id": "warm", "device": "sensors@kitchen", "kind": "sensor_bias", "at": 0, "duration": 100,
     "transition": "gradual", "ramp": 20, "severity": 2.0, "quantity": "temperature"},
    {"id": "hiss", "device": "sensors@kitchen", "kind": "sensor_noise", "at": 30, "severity": 0.5},
    {"id": "wander", "device": "kitchen_humidifier", "kind": "sensor_drift", "at": 10, "severity": 6.0},
    {"id": "boot", "device": "living_room_light", "kind": "reboot", "at": 50, "duration": 3},
    {"id": "away", "device": "bedroom_light", "kind": "offline", "at": 20, "duration": 40},
    {"id": "jammed", "device": "living_room_blinds", "kind": "stuck", "at": 0},
]}


def _home(faults: dict | None = None, seed: int = 5) -> Home:
    home = Home.default(seed=seed)
    if faults is not None:
        home.faults.load(FaultFile.model_validate(faults))
    return home


def _session() -> Session:
    return Session()


def _drive(home: Home) -> list[dict]:
    """A fixed sequence of calls through the tools over 10 virtual minutes; the results."""
    backend, session, out = TwinBackend(home), _session(), []
    for i in range(60):
        out.append(call_tool(backend, "execute_command", ON if i % 2 else OFF, session))
        out.append(call_tool(backend, "get_attribute", {**ON_OFF, "device.id": "bedroom_light"}, session))
        home.advance(10)
    return out


def test_schedule_levels_ramp_repeat_and_clear():
    home = _home()
    fid = home.faults.add(parse_fault({"device": LIGHT, "kind": "loss", "at": 10, "duration": 30,
                                       "transition": "gradual", "ramp": 10, "severity": 0.4,
                                       "repeat": {"every": 100, "times": 2}}))
    fault = home.faults.faults[fid]
    assert fault.occurrences() == [(100, 500), (1100, 1500)]   # ticks: onset + ramp + duration
    assert [fault.level(t) for t in (99, 100, 150, 200, 499, 500, 550, 600, 1150, 1700)] == \
        [0, 0, 0.5, 1, 1, 1, 0.5, 0, 0.5, 0]
    home.advance(115)
    assert home.faults.strength(LIGHT, "loss") == pytest.approx(0.4 * 0.5)
    home.faults.clear(fid)
    assert home.faults.strength(LIGHT, "loss") == 0
    home.advance(200)                       # the second visit was cleared too
    names = [(e["event"], e["tick"], e["fields"]["occurrence"]) for e in home.events]
    assert names == [("FaultStarted", 100, 0), ("FaultEnded", 600, 0), ("FaultStarted", 1100, 1),
                     ("FaultEnded", 1150, 1)]


def test_offline_tools_answer_unavailable_and_recover_with_events():
    home = _home({"faults": [{"device": LIGHT, "kind": "offline", "at": 10, "duration": 20}]})
    backend, session = TwinBackend(home), _session()
    assert call_tool(backend, "execute_command", ON, session)["ok"]
    home.advance(10)
    failed = call_tool(backend, "get_attribute", ON_OFF, session)
    assert failed["error"]["code"] == "UNAVAILABLE" and "offline" in failed["error"]["message"]
    assert call_tool(backend, "get_device_structure", {"device.id": LIGHT}, session)["ok"]   # known structure
    home.advance(20)
    assert call_tool(backend, "get_attribute", ON_OFF, session)["value"] is True
    assert [(e["event"], e["tick"], e["device"]) for e in home.events] == \
        [("FaultStarted", 100, LIGHT), ("FaultEnded", 300, LIGHT)]


def test_offline_and_reboot_faults_clear_basic_information_reachable_while_in_effect():
    home = _home({"faults": [{"id": "away", "device": LIGHT, "kind": "offline", "at": 10, "duration": 20},
                             {"id": "boot", "device": LIGHT, "kind": "reboot", "at": 60, "duration": 5}]})
    reachable = []
    for _ in range(8):
        reachable.append(home.devices[LIGHT].read("BasicInformation", "Reachable"))
        home.advance(10)
    assert reachable == [True, False, False, True, True, True, False, True]
    home.faults.add(parse_fault({"id": "gone", "device": LIGHT, "kind": "offline"}))
    assert home.devices[LIGHT].read("BasicInformation", "Reachable") is False
    home.faults.clear("gone")
    assert home.devices[LIGHT].read("BasicInformation", "Reachable") is True


def test_command_failure_status_and_stuck_actuator_through_every_caller():
    home = _home({"faults": [{"device": LIGHT, "kind": "command_failure", "status": "BUSY"},
                             {"device": "bedroom_light", "kind": "stuck"}]})
    backend, session = TwinBackend(home), _session()
    result = call_tool(backend, "execute_command", ON, session)
    assert result["error"]["code"] == "BUSY"
    label = call_tool(backend, "write_attribute", {"device.id": LIGHT, "endpoint.id": 0, "cluster.id":
                                                   "BasicInformation", "attribute.id": "NodeLabel", "value": "x"},
                      session)
    assert label["ok"]      # the root endpoint keeps working: it is the actuator that fails
    # A workflow step goes through the same device entry point: it fails the same way.
    stuck = {**ON, "device.id": "bedroom_light"}
    assert call_tool(backend, "execute_command", stuck, session)["ok"]      # accepted ...
    assert call_tool(backend, "get_attribute", {**ON_OFF, "device.id": "bedroom_light"}, session)["value"] is False
    write = call_tool(backend, "write_attribute", {"device.id": "bedroom_light", "endpoint.id": 1,
                                                   "cluster.id": "OnOff", "attribute.id": "OnTime", "value": 7},
                      session)
    assert write["ok"]
    assert home.devices["bedroom_light"].read("OnOff", "OnTime") == 0       # ... nothing moved


def test_command_failure_probability_is_seeded():
    spec = {"faults": [{"device": LIGHT, "kind": "command_failure", "severity": 0.5}]}
    outcomes = [[r["ok"] for r in _drive(_home(spec))[::2]] for _ in range(2)]
    assert outcomes[0] == outcomes[1] and 10 < outcomes[0].count(True) < 50


def test_sensor_bias_gradual_drift_noise_and_stale():
    home = _home({"faults": [
        {"device": "sensors@kitchen", "kind": "sensor_bias", "quantity": "temperature", "transition": "gradual",
         "ramp": 10, "severity": 3.0, "duration": 100},
        {"device": "kitchen_humidifier", "kind": "sensor_drift", "severity": 6.0},
        {"device": "sensors@bedroom", "kind": "sensor_noise", "quantity": "humidity", "severity": 1.0},
        {"device": "sensors@bathroom", "kind": "sensor_stale", "at": 5}]})
    kitchen = room_sensor_device(home, "kitchen")
    temperature = kitchen.endpoints[1].server("TemperatureMeasurement")
    truth = home.rooms["kitchen"].temperature
    home.advance(5)
    assert temperature.read("MeasuredValue") == round((home.rooms["kitchen"].temperature + 1.5) * 100)
    home.advance(20)
    assert temperature.read("MeasuredValue") == round((home.rooms["kitchen"].temperature + 3.0) * 100)
    home.advance(200)
    assert abs(temperature.read("MeasuredValue") - round(home.rooms["kitchen"].temperature * 100)) <= 1
    assert truth != 0
    # Drift: 6 %RH per hour, so 1.5 %RH after 15 minutes (from onset at tick 0).
    humidifier = home.devices["kitchen_humidifier"]
    home.advance(900 - 225)
    measured = humidifier.read("RelativeHumidityMeasurement", "MeasuredValue") / 100
    assert measured == pytest.approx(home.rooms["kitchen"].humidity + 1.5, abs=0.01)
    # Noise: seeded per tick, so the same reading twice in one tick, a different one later.
    bedroom = room_sensor_device(home, "bedroom")
    humidity = next(s for s in bedroom.servers() if s.name == "RelativeHumidityMeasurement")
    first = humidity.read("MeasuredValue")
    assert humidity.read("MeasuredValue") == first
    readings = set()
    for _ in range(20):
        home.advance(1)
        readings.add(humidity.read("MeasuredValue"))
    assert len(readings) > 10
    # Stale: frozen at the onset value while the room moves on.
    bathroom = room_sensor_device(home, "bathroom")
    light = next(s for s in bathroom.servers() if s.name == "TemperatureMeasurement")
    assert home.faults.faults["sensor_stale-4"].stale["temperature"] == pytest.approx(light.read("MeasuredValue") / 100,
                                                                                        abs=0.006)


def test_reboot_logs_shutdown_and_startup_and_powers_up():
    home = _home({"faults": [{"device": LIGHT, "kind": "reboot", "at": 10, "duration": 3}]})
    backend, session = TwinBackend(home), _session()
    call_tool(backend, "execute_command", ON, session)
    home.advance(11)
    assert call_tool(backend, "execute_command", OFF, session)["error"]["code"] == "UNAVAILABLE"
    home.advance(5)
    events = [(e["event"], e["tick"]) for e in home.events if e["device"] == LIGHT]
    assert events == [("FaultStarted", 100), ("ShutDown", 100), ("FaultEnded", 130), ("StartUp", 130)]
    assert home.faults.boots(LIGHT) == 1
    assert call_tool(backend, "get_attribute", ON_OFF, session)["value"] is True   # StartUpOnOff null: kept


def test_reruns_are_byte_identical_and_step_equals_fast_forward():
    def run() -> str:
        home = _home(MIXED)
        _drive(home)
        return json.dumps(home.snapshot(), sort_keys=True)
    first, second = run(), run()
    assert first == second
    assert '"FaultStarted"' in first and '"ShutDown"' in first
    stepped, jumped = _home(MIXED), _home(MIXED)
    stepped.step(7000)
    jumped.advance(700)
    assert json.dumps(stepped.snapshot(), sort_keys=True) == json.dumps(jumped.snapshot(), sort_keys=True)


def test_fork_and_restore_continue_identically():
    home = _home(MIXED)
    home.advance(40)
    fork, restored = home.fork(), Home.restore(json.loads(json.dumps(home.snapshot())))
    results = [_drive(h) for h in (home, fork, restored)]
    assert results[0] == results[1] == results[2]
    snaps = [json.dumps(h.snapshot(), sort_keys=True) for h in (home, fork, restored)]
    assert snaps[0] == snaps[1] == snaps[2]


def test_homes_without_faults_keep_their_snapshot_shape():
    assert "faults" not in _home().snapshot()


@pytest.mark.parametrize("text, expected", [
    ("faults:\n  - {device: kitchen_light, kind: melt}", "faults[0].kind"),
    ("faults:\n  - {device: nowhere, kind: offline}", "faults[0].device: no device 'nowhere'"),
    ("faults:\n  - {device: kitchen_light, kind: stuck, transition: gradual, ramp: 3}",
     "faults[0]: transition: stuck is on or off"),
    ("faults:\n  - {device: kitchen_light, kind: loss, severity: 2}", "loss takes a probability"),
    ("faults:\n  - {device: kitchen_light, kind: offline, repeat: {every: 5}}", "never ends"),
    ("faults:\n  - {device: sensors@kitchen, kind: reboot}", "room-sensor node"),
    ("faults: [", "YAML syntax error"),
    ("test_event_key: 12", "test_event_key"),
])
def test_bad_fault_files_are_one_line_and_add_nothing(tmp_path: Path, text: str, expected: str):
    path = tmp_path / "faults.yaml"
    path.write_text(text)
    home = _home()
    with pytest.raises(UserFileError) as err:
        home.faults.load(load_fault_file(path), str(path))
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(path)) and expected in message, message
    assert home.faults.faults == {}


def test_a_bad_fault_in_a_file_adds_none_of_it(tmp_path: Path):
    path = tmp_path / "faults.yaml"
    path.write_text("faults:\n  - {device: kitchen_light, kind: offline}\n  - {device: nowhere, kind: stuck}\n")
    home = _home()
    with pytest.raises(UserFileError, match=r"faults\[1\]\.device"):
        home.faults.load(load_fault_file(path), str(path))
    assert home.faults.faults == {} and home.events == []


def test_live_injection_errors_are_one_line():
    with pytest.raises(ValueError, match="severity") as err:
        parse_fault({"device": LIGHT, "kind": "latency", "severity": -1})
    assert "\n" not in str(err.value)
    home = _home()
    home.faults.add(parse_fault({"id": "x", "device": LIGHT, "kind": "stuck"}))
    with pytest.raises(ValueError, match="exists already"):
        home.faults.add(parse_fault({"id": "x", "device": LIGHT, "kind": "stuck"}))
