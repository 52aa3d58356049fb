"""`twin bench import simuhome`: SimuHome-format episode files (written here, in its format,
one per query type and one per gap; SimuHome's own files may not be redistributed) become
our episodes, and `run_episode` scores them as SimuHome does."""
from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from bridge.tools import Session, call_tool
from bridge.twin_backend import TwinBackend
from matter_twin.cli_bench import bench_app
from scenarios.agents.simple import NullAgent, ScriptedAgent
from scenarios.simuhome.evaluate import build_home, endpoint_alias, run_episode
from scenarios.simuhome.importer import ImportError_, import_file, oracle_plan
from scenarios.simuhome.judges import RuleJudge
from scenarios.simuhome.schema import DeviceGoal, RoomGoal, TimedGoal, dump_episode, load_episodes

BASE = "2025-03-02 10:00:00"


# ---- SimuHome-format building blocks (our own values) ---------------------------------------
def light(device_id: str, on: bool = False) -> dict[str, Any]:
    return {"device_id": device_id, "device_type": "on_off_light",
            "attributes": {"0.BasicInformation.VendorName": "Acme", "1.OnOff.OnOff": on}}


def dimmer(device_id: str, on: bool = True, level: int = 127) -> dict[str, Any]:
    return {"device_id": device_id, "device_type": "dimmable_light",
            "attributes": {"1.OnOff.OnOff": on, "1.LevelControl.CurrentLevel": level,
                           "1.LevelControl.MinFrequency": 0, "1.LevelControl.MaxFrequency": 0,
                           "1.LevelControl.CurrentFrequency": 0, "1.LevelControl.RemainingTime": 0,
                           "1.LevelControl.StartUpCurrentLevel": None}}


def ac(device_id: str) -> dict[str, Any]:
    return {"device_id": device_id, "device_type": "air_conditioner",
            "attributes": {"1.OnOff.OnOff": False, "1.FanControl.FanMode": 0, "1.FanControl.PercentSetting": 0,
                           "1.FanControl.PercentCurrent": 0, "1.Thermostat.SystemMode": 0,
                           "1.Thermostat.LocalTemperature": 2700, "1.Thermostat.OccupiedCoolingSetpoint": 2400}}


def heat_pump(device_id: str) -> dict[str, Any]:
    return {"device_id": device_id, "device_type": "heat_pump",
            "attributes": {"1.PowerSource.Status": 1, "2.ElectricalPowerMeasurement.ActivePower": 1000,
                           "4.Thermostat.SystemMode": 0, "4.Thermostat.OccupiedHeatingSetpoint": 2000}}


def fridge(device_id: str, setpoint: int = 400) -> dict[str, Any]:
    return {"device_id": device_id, "device_type": "refrigerator",
            "attributes": {"1.RTCCMode.CurrentMode": 16384,
                           "1.RTCCMode.SupportedModes": [
                               {"Label": "Normal", "Mode": 0, "ModeTags": [0]},
                               {"Label": "Rapid Cool", "Mode": 16384, "ModeTags": [16384]}],
                           "1.TemperatureControl.TemperatureSetpoint": setpoint,
                           "1.TemperatureControl.MinTemperature": 100, "1.TemperatureControl.MaxTemperature": 700,
                           "1.TemperatureMeasurement.MeasuredValue": setpoint}}


def humidifier(device_id: str) -> dict[str, Any]:
    return {"device_id": device_id, "device_type": "humidifier",
            "attributes": {"1.OnOff.OnOff": False, "1.FanControl.PercentSetting": 0,
                           "2.RelativeHumidityMeasurement.MeasuredValue": 3000}}


def washer(device_id: str, remaining: int | None = None) -> dict[str, Any]:
    running = remaining is not None
    return {"device_id": device_id, "device_type": "laundry_washer",
            "attributes": {"1.OnOff.OnOff": True,
                           "1.LaundryWasherMode.SupportedModes": [
                               {"label": "Cotton", "mode": 7, "ModeTags": [16384]},
                               {"label": "Quick", "mode": 9, "ModeTags": [1]}],
                           "1.LaundryWasherMode.CurrentMode": 9,
                           "1.LaundryWasherControls.SpinSpeeds": [3, 5],
                           "1.LaundryWasherControls.SpinSpeedCurrent": 5,
                           "1.TemperatureControl.TemperatureSetpoint": 3000,
                           "1.TemperatureControl.MinTemperature": 500, "1.TemperatureControl.MaxTemperature": 9500,
                           "1.OperationalState.OperationalState": 1 if running else 0,
                           "1.OperationalState.CountdownTime": remaining}}


def dryer(device_id: str) -> dict[str, Any]:
    return {"device_id": device_id, "device_type": "laundry_dryer",
            "attributes": {"1.OnOff.OnOff": True, "1.OperationalState.OperationalState": 0,
                           "1.LaundryDryerControls.SelectedDrynessLevel": 1}}


def tv(device_id: str) -> dict[str, Any]:
    return {"device_id": device_id, "device_type": "tv",
            "attributes": {"1.OnOff.OnOff": True, "1.LevelControl.CurrentLevel": 20,
                           "1.LevelControl.MinFrequency": 0, "1.LevelControl.MaxFrequency": 0,
                           "1.LevelControl.CurrentFrequency": 0, "1.LevelControl.RemainingTime": 0,
                           "1.LevelControl.StartUpCurrentLevel": None, "1.MediaPlayback.CurrentState": 2}}


def rvc(device_id: str, paused_remaining: int | None = None) -> dict[str, Any]:
    attributes: dict[str, Any] = {
        "1.RVCRunMode.SupportedModes": [{"Label": "Idle", "Mode": 1, "ModeTags": [16384]},
                                        {"Label": "Vacuum", "Mode": 2, "ModeTags": [16385]}],
        "1.RVCCleanMode.SupportedModes": [{"Label": "Vacuum", "Mode": 1, "ModeTags": [16385]},
                                          {"Label": "Mop", "Mode": 3, "ModeTags": [16386]}],
        "1.RVCCleanMode.CurrentMode": 1, "1.RVCRunMode.CurrentMode": 1,
        "1.RVCOperationalState.OperationalState": 0x42, "1.RVCOperationalState.CountdownTime": None}
    if paused_remaining is not None:
        attributes.update({"1.RVCRunMode.CurrentMode": 2, "1.RVCOperationalState.OperationalState": 2,
                           "1.RVCOperationalState.CurrentPhase": 0,
                           "1.RVCOperationalState.PhaseList": ["Cleaning", "SeekingCharger", "Docked"],
                           "1.RVCOperationalState.CountdownTime": paused_remaining})
    return {"device_id": device_id, "device_type": "rvc", "attributes": attributes}


def room(*devices: dict[str, Any], temperature: float = 2600, humidity: float = 4000,
         illuminance: float = 100, pm10: float = 20) -> dict[str, Any]:
    return {"devices": list(devices), "state": {"temperature": temperature, "humidity": humidity,
                                                "illuminance": illuminance, "pm10": pm10}}


def write(tmp_path: Path, name: str, qt: str, case: str, rooms: dict[str, Any], goals: list[dict[str, Any]],
          query: str = "Please help.", required: list[dict[str, Any]] | None = None, **extra: Any) -> Path:
    meta = {"seed": 1, "query_type": qt, "case": case, **extra.pop("meta", {})}
    data = {"meta": meta, "query": query, "user_location": next(iter(rooms)),
            "initial_home_config": {"tick_interval": 0.1, "base_time": BASE, "rooms": rooms},
            "eval": {"required_actions": required if required is not None else
                     [{"tool": "get_room_devices", "params": {"room_id": next(iter(rooms))}}], "goals": goals},
            **extra}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def call(device: str, cluster: str, command: str, args: dict[str, Any] | None = None, endpoint: int = 1):
    return {"tool": "execute_command", "args": {"device.id": device, "endpoint.id": endpoint, "cluster.id": cluster,
                                                "command.id": command, "args": args or {}}}


def look(room_id: str) -> dict[str, Any]:
    return {"tool": "get_room_devices", "args": {"room.id": room_id}}


def clock(episode, seconds: int) -> str:
    """The wall time `seconds` after the episode starts, as schedule_workflow takes it."""
    return (episode.initial.start_time + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")


def later(episode, seconds: int, device: str, cluster: str, command: str, args: dict[str, Any] | None = None):
    return {"tool": "schedule_workflow", "args": {"start_time": clock(episode, seconds), "steps": [
        call(device, cluster, command, args)]}}


def score(episode, calls: list[dict[str, Any]], answer: str = "Done."):
    return run_episode(episode, ScriptedAgent(calls, answer), RuleJudge())


def asserts(room_id: str, device_id: str, device_type: str, *pairs: tuple[str, Any]) -> dict[str, Any]:
    return {"room_id": room_id, "device_id": device_id, "device_type": device_type,
            "asserts": [{"attribute": a, "value": v, "description": a} for a, v in pairs]}


def timed(at_s: int, tolerance_s: int, *targets: dict[str, Any], relation: str = "after",
          anchor: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"when": {"at_tick": at_s * 10, "tolerance_ticks": tolerance_s * 10, "relation": relation},
            "anchor": anchor or {}, "targets": list(targets)}


# ---- one file per query type ---------------------------------------------------------------------
def test_qt1_feasible_values_are_the_twins(tmp_path):
    path = write(tmp_path, "qt1_f", "qt1", "feasible", {"kitchen": room(light("kitchen_light_1"), illuminance=250)},
                 [{"variant": "room_state", "room_id": "kitchen", "room_state": "illuminance", "current_value": 250,
                   "unit": "lux"},
                  {"variant": "device_attribute", "room_id": "kitchen", "device_id": "kitchen_light_1",
                   "device_type": "on_off_light", "attribute": "1.OnOff.OnOff"}],
                 required=[{"tool": "get_room_states", "params": {"room_id": "kitchen"}}])
    ep = import_file(path).episode
    assert ep.category == "QT1-F" and ep.source == "simuhome" and ep.id == "simuhome-qt1_f"
    room_goal, device_goal = ep.goals
    assert isinstance(room_goal, RoomGoal) and room_goal.value == pytest.approx(250)
    assert isinstance(device_goal, DeviceGoal) and device_goal.value is False
    assert ep.required_actions[0].args == {"room.id": "kitchen"}
    assert build_home(ep).rooms["kitchen"].illuminance == pytest.approx(250)


def test_qt1_infeasible_is_a_missing_device(tmp_path):
    path = write(tmp_path, "qt1_if", "qt1", "infeasible", {"kitchen": room(light("kitchen_light_1"))},
                 [{"variant": "device_attribute", "room_id": "kitchen", "device_id": "kitchen_window_covering_1",
                   "device_type": "window_covering_controller", "attribute": "1.WindowCovering.SafetyStatus"}])
    ep = import_file(path).episode
    assert ep.category == "QT1-IF" and ep.infeasibility.kind == "missing_device"
    assert ep.infeasibility.room_ids == ["kitchen"]
    good = score(ep, [look("kitchen")], "There is no window covering in the kitchen, so I cannot read it.")
    assert good["success"], good["failures"]


def test_qt2_feasible_direction(tmp_path):
    path = write(tmp_path, "qt2_f", "qt2", "feasible", {"office": room(ac("office_ac_1"), temperature=2800)},
                 [{"room_id": "office", "room_state": "temperature", "direction": "decrease", "feasibility": True}])
    ep = import_file(path).episode
    assert ep.category == "QT2-F" and isinstance(ep.goals[0], RoomGoal)
    cool = [look("office"), call("office_ac_1", "OnOff", "On"),
            {"tool": "write_attribute", "args": {"device.id": "office_ac_1", "endpoint.id": 1,
                                                 "cluster.id": "Thermostat", "attribute.id": "SystemMode",
                                                 "value": 3}},
            {"tool": "write_attribute", "args": {"device.id": "office_ac_1", "endpoint.id": 1,
                                                 "cluster.id": "FanControl", "attribute.id": "PercentSetting",
                                                 "value": 100}}]
    assert score(ep, cool)["success"]
    assert not run_episode(ep, NullAgent(), RuleJudge())["success"]


def test_qt2_infeasible_families(tmp_path):
    rooms = {"office": room(light("office_light_1"))}
    goal = [{"room_id": "office", "room_state": "humidity", "direction": "increase", "feasibility": True}]
    none = import_file(write(tmp_path, "a", "qt2", "infeasible", rooms, goal,
                             meta={"infeasible_family": "nonexistence"})).episode
    full = import_file(write(tmp_path, "b", "qt2", "infeasible", rooms, goal,
                             meta={"infeasible_family": "contextual_saturation"})).episode
    assert (none.infeasibility.kind, full.infeasibility.kind) == ("no_actuator", "at_capacity")


def test_qt3_feasible_device_goals(tmp_path):
    path = write(tmp_path, "qt3_f", "qt3", "feasible", {"hall": room(light("hall_light_1"))},
                 [asserts("hall", "hall_light_1", "on_off_light", ("1.OnOff.OnOff", True))])
    ep = import_file(path).episode
    assert ep.goals == [DeviceGoal(room_id="hall", device_id="hall_light_1", cluster="OnOff",
                                   attribute="OnOff", value=True)]
    assert score(ep, [look("hall"), call("hall_light_1", "OnOff", "On")])["success"]
    assert not run_episode(ep, NullAgent(), RuleJudge())["success"]


def test_qt3_infeasible_expects_the_feasible_part_done(tmp_path):
    # SimuHome's QT3-IF: one device asked for is missing; the goals are the part that can be done.
    path = write(tmp_path, "qt3_if", "qt3", "infeasible", {"hall": room(light("hall_light_1")),
                                                            "den": room(light("den_light_1"))},
                 [asserts("hall", "hall_light_1", "on_off_light", ("1.OnOff.OnOff", True))],
                 required=[{"tool": "get_room_devices", "params": {"room_id": "den"}}])
    ep = import_file(path).episode
    assert ep.category == "QT3-IF" and not ep.goals and len(ep.feasible_part) == 1
    answer = "I turned on the hall light, but there is no washer in the den, so I cannot stop it."
    done = score(ep, [look("den"), look("hall"), call("hall_light_1", "OnOff", "On")], answer)
    assert done["success"], done["failures"]
    skipped = score(ep, [look("den"), look("hall")], answer)
    assert not skipped["success"] and any("hall_light_1" in f for f in skipped["failures"])
    assert "feasible_part" in dump_episode(ep)


def test_qt4_1_feasible_window_of_30_seconds(tmp_path):
    target = asserts("hall", "hall_light_1", "on_off_light", ("1.OnOff.OnOff", True))
    path = write(tmp_path, "qt4_1", "qt4-1", "feasible", {"hall": room(light("hall_light_1"))},
                 [timed(600, 30, target)])
    ep = import_file(path).episode
    (goal,) = ep.goals
    assert isinstance(goal, TimedGoal) and (goal.at_seconds, goal.tolerance_seconds) == (600, 30)
    def at(seconds: int) -> dict[str, Any]:
        return later(ep, seconds, "hall_light_1", "OnOff", "On")
    assert score(ep, [look("hall"), at(620)])["success"]      # 20 s late: inside the window
    assert score(ep, [look("hall"), at(575)])["success"]      # 25 s early: inside too (no "not before")
    late = score(ep, [look("hall"), at(640)])
    assert not late["success"] and "±30 s" in late["failures"][0]


def test_qt4_2_and_4_3_still_holds_at_t(tmp_path):
    # "Start the dryer now; pause it when the washer finishes": running one minute before the
    # washer ends (tolerance 0), paused at its end (±30 s).
    rooms = {"utility": room(washer("utility_washer_1", remaining=1200), dryer("utility_dryer_1"))}
    anchor = {"room_id": "utility", "device_id": "utility_washer_1", "device_type": "laundry_washer"}
    running = asserts("utility", "utility_dryer_1", "laundry_dryer", ("1.OperationalState.OperationalState", 1))
    paused = asserts("utility", "utility_dryer_1", "laundry_dryer", ("1.OperationalState.OperationalState", 2))
    path = write(tmp_path, "qt4_3", "qt4-3", "feasible", rooms,
                 [timed(1140, 0, running, relation="before", anchor=anchor), timed(1200, 30, paused, anchor=anchor)])
    ep = import_file(path).episode
    assert [g.tolerance_seconds for g in ep.goals] == [0, 30]
    home = build_home(ep)
    assert home.device("utility_washer_1").read("OperationalState", "CountdownTime") == 1200
    plan = [look("utility"), call("utility_dryer_1", "OperationalState", "Start"),
            later(ep, 1200, "utility_dryer_1", "OperationalState", "Pause")]
    assert score(ep, plan)["success"]
    started_late = [look("utility"), later(ep, 1141, "utility_dryer_1", "OperationalState", "Start"),
                    later(ep, 1200, "utility_dryer_1", "OperationalState", "Pause")]
    assert not score(ep, started_late)["success"]          # not yet running at t: "still holds" fails
    never_started = score(ep, [look("utility")])
    assert not never_started["success"]


def test_qt4_infeasible_keeps_the_conflict_times(tmp_path):
    target = asserts("hall", "hall_light_1", "on_off_light", ("1.OnOff.OnOff", True))
    path = write(tmp_path, "qt4_1_if", "qt4-1", "infeasible", {"hall": room(light("hall_light_1"))},
                 [timed(780, 30, target)], required=[],
                 temporal_conflict={"type": "absolute_time_mismatch_nonop_multi", "expected_time": "10:13:00",
                                    "conflict_time": "09:58:00"})
    ep = import_file(path).episode
    assert ep.category == "QT4-1-IF" and ep.infeasibility.kind == "time_conflict"
    assert ep.infeasibility.times == ["10:13"]


# ---- one file per gap -------------------------------------------------------------------------------
def test_simuhome_endpoint_ids_work_for_agents_and_goals(tmp_path):
    rooms = {"den": room(heat_pump("den_heat_pump_1"), humidifier("den_humidifier_1")),
             "kitchen": room(fridge("kitchen_fridge_1"))}
    goals = [asserts("den", "den_heat_pump_1", "heat_pump", ("4.Thermostat.SystemMode", 4)),
             asserts("kitchen", "kitchen_fridge_1", "refrigerator", ("1.TemperatureControl.TemperatureSetpoint", 300))]
    ep = import_file(write(tmp_path, "endpoints", "qt3", "feasible", rooms, goals)).episode
    assert [(g.endpoint, g.cluster) for g in ep.goals] == [(2, "Thermostat"), (2, "TemperatureControl")]
    # An agent that uses SimuHome's ids (Thermostat on 4, the cabinet on 1) succeeds.
    plan = [look("den"), {"tool": "write_attribute", "args": {
        "device.id": "den_heat_pump_1", "endpoint.id": 4, "cluster.id": "Thermostat", "attribute.id": "SystemMode",
        "value": 4}}, call("kitchen_fridge_1", "TemperatureControl", "SetTemperature", {"targetTemperature": 300})]
    result = score(ep, plan)
    assert result["success"], result["failures"]
    # ... and reads the humidifier's humidity sensor on SimuHome's endpoint 2.
    backend = TwinBackend(build_home(ep), endpoint_alias=endpoint_alias(ep))
    read = call_tool(backend, "get_attribute", {"device.id": "den_humidifier_1", "endpoint.id": 2,
                                                "cluster.id": "RelativeHumidityMeasurement",
                                                "attribute.id": "MeasuredValue"}, Session())
    assert read["ok"] and read["value"] == 4000
    # Our own episodes keep the spec's endpoints strictly.
    strict = call_tool(TwinBackend(build_home(ep)), "get_attribute", {
        "device.id": "den_heat_pump_1", "endpoint.id": 4, "cluster.id": "Thermostat", "attribute.id": "SystemMode"},
        Session())
    assert not strict["ok"] and strict["error"]["code"] == "UNSUPPORTED_ENDPOINT"


def test_level_frequency_and_tv_startup_attributes(tmp_path):
    rooms = {"den": room(dimmer("den_dimmer_1"), tv("den_tv_1"), illuminance=300)}
    goals = [{"variant": "device_attribute", "room_id": "den", "device_id": "den_tv_1", "device_type": "tv",
              "attribute": "1.LevelControl.StartUpCurrentLevel"},
             {"variant": "device_attribute", "room_id": "den", "device_id": "den_dimmer_1",
              "device_type": "dimmable_light", "attribute": "1.LevelControl.CurrentFrequency"}]
    imported = import_file(write(tmp_path, "level", "qt1", "feasible", rooms, goals))
    assert imported.differences == []
    home = build_home(imported.episode)
    for device in ("den_dimmer_1", "den_tv_1"):
        level = home.device(device).locate("LevelControl")
        # CurrentFrequency, MinFrequency, MaxFrequency, RemainingTime, StartUpCurrentLevel
        assert {0x0004, 0x0005, 0x0006, 0x0001, 0x4000} <= set(level.read("AttributeList"))
        assert level.read("FeatureMap") & 0x04  # Frequency
    tv_level = home.device("den_tv_1").locate("LevelControl")
    tv_level.write("StartUpCurrentLevel", 40)
    assert tv_level.read("StartUpCurrentLevel") == 40
    call_tool(TwinBackend(home), "execute_command", call("den_dimmer_1", "LevelControl", "MoveToClosestFrequency",
                                                         {"frequency": 50})["args"], Session())
    assert home.device("den_dimmer_1").read("LevelControl", "CurrentFrequency") == 0  # 0..0 Hz supported
    assert [g.value for g in imported.episode.goals] == [None, 0]


def test_struct_field_goal_current_channel_major_number(tmp_path):
    rooms = {"den": room(tv("den_tv_1"))}
    goals = [asserts("den", "den_tv_1", "tv", ("1.Channel.CurrentChannel.MajorNumber", 7),
                     ("1.Channel.CurrentChannel.MinorNumber", 0))]
    ep = import_file(write(tmp_path, "channel", "qt3", "feasible", rooms, goals)).episode
    assert ep.goals[0].attribute == "CurrentChannel.MajorNumber"
    tv_ = build_home(ep).device("den_tv_1")
    current = tv_.read("Channel", "CurrentChannel").majorNumber
    other = next(c for c in tv_.read("Channel", "ChannelList") if c.majorNumber != current)
    ep.goals[0].value, ep.goals[1].value = other.majorNumber, other.minorNumber
    plan = [look("den"), call("den_tv_1", "Channel", "ChangeChannelByNumber",
                              {"majorNumber": other.majorNumber, "minorNumber": other.minorNumber})]
    result = score(ep, plan)
    assert result["success"], result["failures"]
    failed = run_episode(ep, NullAgent(), RuleJudge())
    assert not failed["success"] and any("CurrentChannel.MajorNumber" in f for f in failed["failures"])


def test_initial_modes_spin_speeds_remaining_time_and_illuminance(tmp_path):
    rooms = {"utility": room(washer("utility_washer_1", remaining=2000), light("utility_light_1", on=True),
                             illuminance=450),
             "kitchen": room(fridge("kitchen_fridge_1"), rvc("kitchen_rvc_1", paused_remaining=900),
                             illuminance=80)}
    goals = [asserts("kitchen", "kitchen_fridge_1", "refrigerator", ("1.RTCCMode.CurrentMode", 0))]
    imported = import_file(write(tmp_path, "state", "qt3", "feasible", rooms, goals))
    assert imported.differences == []
    home = build_home(imported.episode)
    washer_ = home.device("utility_washer_1")
    assert [m.mode for m in washer_.read("LaundryWasherMode", "SupportedModes")] == [7, 9]
    assert washer_.read("LaundryWasherMode", "CurrentMode") == 9
    assert washer_.read("LaundryWasherControls", "SpinSpeeds") == ["3", "5"]
    assert washer_.read("LaundryWasherControls", "SpinSpeedCurrent") == 1
    assert washer_.read("OperationalState", "OperationalState") == 1
    assert washer_.read("OperationalState", "CountdownTime") == 2000
    assert washer_.read("TemperatureControl", "TemperatureSetpoint") == 3000  # by number, as SimuHome's
    fridge_ = home.device("kitchen_fridge_1")
    modes = {m.label: m.mode for m in fridge_.read("RefrigeratorAndTemperatureControlledCabinetMode",
                                                     "SupportedModes")}
    assert modes["Normal"] == 0 and modes["Rapid Cool"] <= 255    # 16384 is not a uint8 mode id
    assert fridge_.read("RefrigeratorAndTemperatureControlledCabinetMode", "CurrentMode") == modes["Rapid Cool"]
    robot = home.device("kitchen_rvc_1")
    assert robot.read("RvcOperationalState", "OperationalState") == 2
    assert robot.read("RvcOperationalState", "CountdownTime") == 900
    assert home.rooms["utility"].illuminance == pytest.approx(450)
    assert home.rooms["kitchen"].illuminance == pytest.approx(80)
    # Lights still move illuminance; blinds and the unmodelled rest do not.
    backend = TwinBackend(home)
    call_tool(backend, "execute_command", call("utility_light_1", "OnOff", "Off")["args"], Session())
    assert home.rooms["utility"].illuminance == pytest.approx(150)


def test_vacuum_paused_and_stopped_goals(tmp_path):
    rooms = {"hall": room(rvc("hall_rvc_1", paused_remaining=600))}
    stopped = asserts("hall", "hall_rvc_1", "rvc", ("1.RVCOperationalState.OperationalState", 0))
    running = asserts("hall", "hall_rvc_1", "rvc", ("1.RVCOperationalState.OperationalState", 1))
    ep = import_file(write(tmp_path, "rvc", "qt4-1", "feasible", rooms,
                           [timed(120, 30, running), timed(300, 30, stopped)])).episode

    plan = [look("hall"), later(ep, 120, "hall_rvc_1", "RvcOperationalState", "Resume"),
            later(ep, 300, "hall_rvc_1", "RvcRunMode", "ChangeToMode", {"newMode": 1})]
    result = score(ep, plan)
    assert result["success"], result["failures"]
    assert not run_episode(ep, NullAgent(), RuleJudge())["success"]


def test_temperature_setpoint_is_set_by_command_not_written(tmp_path):
    rooms = {"kitchen": room(fridge("kitchen_fridge_1"))}
    goal = [asserts("kitchen", "kitchen_fridge_1", "refrigerator", ("1.TemperatureControl.TemperatureSetpoint", 500))]
    ep = import_file(write(tmp_path, "setpoint", "qt3", "feasible", rooms, goal)).episode
    write_it = {"tool": "write_attribute", "args": {"device.id": "kitchen_fridge_1", "endpoint.id": 1,
                                                    "cluster.id": "TemperatureControl",
                                                    "attribute.id": "TemperatureSetpoint", "value": 500}}
    written = score(ep, [look("kitchen"), write_it])
    assert not written["success"]
    commanded = score(ep, [look("kitchen"), call("kitchen_fridge_1", "TemperatureControl", "SetTemperature",
                                                  {"targetTemperature": 500})])
    assert commanded["success"], commanded["failures"]


# ---- bad input and the command line -----------------------------------------------------------------
def test_bad_files_are_one_line_each(tmp_path):
    bad_json = tmp_path / "broken.json"
    bad_json.write_text("{", encoding="utf-8")
    with pytest.raises(ImportError_, match=r"broken.json: line 1 column 2: JSON syntax error"):
        import_file(bad_json)
    no_query = write(tmp_path, "no_query", "qt3", "feasible", {"hall": room(light("hall_light_1"))}, [])
    data = json.loads(no_query.read_text())
    del data["query"]
    no_query.write_text(json.dumps(data))
    with pytest.raises(ImportError_, match=r"no_query.json: query: Field required"):
        import_file(no_query)
    unknown = write(tmp_path, "unknown", "qt9", "feasible", {"hall": room(light("hall_light_1"))}, [])
    with pytest.raises(ImportError_, match=r"meta.query_type: 'qt9'"):
        import_file(unknown)
    bad_device = write(tmp_path, "bad_device", "qt3", "feasible",
                       {"hall": room({"device_id": "hall_toaster_1", "device_type": "toaster", "attributes": {}})},
                       [asserts("hall", "hall_toaster_1", "toaster", ("1.OnOff.OnOff", True))])
    with pytest.raises(ImportError_, match=r"bad_device.json: .*toaster"):
        import_file(bad_device)


def test_cli_imports_a_directory_and_runs_it(tmp_path):
    src = tmp_path / "benchmark"
    src.mkdir()
    write(src, "qt3_feasible_seed_1", "qt3", "feasible", {"hall": room(light("hall_light_1"))},
          [asserts("hall", "hall_light_1", "on_off_light", ("1.OnOff.OnOff", True))])
    write(src, "qt2_feasible_seed_2", "qt2", "feasible", {"office": room(ac("office_ac_1"))},
          [{"room_id": "office", "room_state": "temperature", "direction": "decrease", "feasibility": True}])
    (src / "qt1_feasible_seed_3.json").write_text("[]", encoding="utf-8")
    out = tmp_path / "simuhome.jsonl"
    result = CliRunner().invoke(bench_app, ["import", "simuhome", str(src), "--out", str(out)])
    assert result.exit_code == 1
    assert "imported 2 of 3 files" in result.output
    assert result.output.count("error:") == 1 and "qt1_feasible_seed_3.json" in result.output
    episodes = load_episodes(out)
    assert [e.id for e in episodes] == ["simuhome-qt2_feasible_seed_2", "simuhome-qt3_feasible_seed_1"]
    run = CliRunner().invoke(bench_app, ["run", "--agent", "null", "--episodes", str(out),
                                         "--out", str(tmp_path / "run"), "--workers", "1"])
    assert run.exit_code == 0 and "0/2 episodes succeeded" in run.output
    wrong = CliRunner().invoke(bench_app, ["import", "homeflow", str(src)])
    assert wrong.exit_code == 2 and "accepted: simuhome" in wrong.output


def test_oracle_meets_every_sample_goal_and_cycles_last_as_simuhome_says(tmp_path):
    # A dryer started now must still run at +2 h (a "still holds" goal): longer than our cycle.
    rooms = {"utility": room(washer("utility_washer_1", remaining=7300), dryer("utility_dryer_1")),
             "hall": room(light("hall_light_1"), tv("hall_tv_1"))}
    running = asserts("utility", "utility_dryer_1", "laundry_dryer", ("1.OperationalState.OperationalState", 1))
    paused = asserts("utility", "utility_dryer_1", "laundry_dryer", ("1.OperationalState.OperationalState", 2))
    playing = asserts("hall", "hall_tv_1", "tv", ("1.MediaPlayback.CurrentState", 0))
    ep = import_file(write(tmp_path, "oracle", "qt4-3", "feasible", rooms,
                           [timed(7240, 0, running, relation="before"), timed(7300, 30, paused),
                            timed(600, 30, playing)])).episode
    dryer_spec = next(d for r in ep.initial.home.rooms for d in r.devices if d.id == "utility_dryer_1")
    assert all(sum(s for _, s in m["cycle"]) >= 7300 for m in dryer_spec.options["modes"])
    result = score(ep, oracle_plan(ep))
    assert result["success"], result["failures"]


# ---- the start state is SimuHome's ------------------------------------------------------------------
def test_first_room_reads_are_the_files_values_after_a_warm_up(tmp_path):
    """A running washer makes the import start the home in the past (a warm-up), while a cooling
    AC and the room's drift would move the rooms: the agent's first reads are still the file's
    initial values, at the tool's resolution (0.01 °C/%RH, lux, 0.01 µg/m³)."""
    cooling = ac("utility_ac_1")
    cooling["attributes"].update({"1.OnOff.OnOff": True, "1.Thermostat.SystemMode": 3,
                                  "1.FanControl.PercentSetting": 100, "1.Thermostat.OccupiedCoolingSetpoint": 1800})
    rooms = {"utility": room(washer("utility_washer_1", remaining=2000), cooling, temperature=2912.6,
                             humidity=6123.4, illuminance=321.5, pm10=41.4883),
             "hall": room(light("hall_light_1"), temperature=1987.2, humidity=3011.9, illuminance=12.25, pm10=7.06)}
    imported = import_file(write(tmp_path, "start", "qt1", "feasible", rooms,
                                 [{"variant": "room_state", "room_id": "utility", "room_state": "pm10",
                                   "current_value": 41.49, "unit": "µg/m³"}]))
    episode = imported.episode
    assert episode.initial.start_time > episode.initial.home.start_time   # there is a warm-up
    backend, session = TwinBackend(build_home(episode)), Session()
    for room_id, values in rooms.items():
        first = call_tool(backend, "get_room_states", {"room.id": room_id}, session)
        assert first["temperature"] == round(values["state"]["temperature"])
        assert first["humidity"] == round(values["state"]["humidity"])
        assert first["illuminance"] == round(values["state"]["illuminance"])
        assert first["pm10"] == round(values["state"]["pm10"], 2)
    # the goal is the value the agent reads, and the physics goes on from there
    assert episode.goals[0].value == pytest.approx(41.4883)
    home = build_home(episode)
    home.advance(600)
    assert home.rooms["utility"].temperature < 29.126 - 0.05


def test_simuhome_ac_only_cools_and_heat_pump_only_heats(tmp_path):
    """SimuHome's premise (its QT2-IF "warm the room" episodes with only an AC there): an
    imported AC cannot heat and an imported heat pump cannot cool."""
    rooms = {"den": room(ac("den_ac_1"), heat_pump("den_hp_1"), temperature=2000)}
    imported = import_file(write(tmp_path, "one_way", "qt2", "infeasible", rooms,
                                 [{"room_id": "den", "room_state": "temperature", "direction": "increase",
                                   "feasibility": False}], meta={"infeasible_family": "contextual_saturation"}))
    assert imported.differences == []
    backend, session = TwinBackend(build_home(imported.episode)), Session()
    assert call_tool(backend, "execute_command", call("den_ac_1", "OnOff", "On")["args"], session)["ok"]
    for device, endpoint, mode in (("den_ac_1", 1, 4), ("den_hp_1", 2, 3)):
        r = call_tool(backend, "write_attribute", {"device.id": device, "endpoint.id": endpoint,
                                                   "cluster.id": "Thermostat", "attribute.id": "SystemMode",
                                                   "value": mode}, session)
        assert not r["ok"] and r["error"]["code"] == "CONSTRAINT_ERROR", r
    r = call_tool(backend, "write_attribute", {"device.id": "den_hp_1", "endpoint.id": 2, "cluster.id": "Thermostat",
                                               "attribute.id": "SystemMode", "value": 4}, session)
    assert r["ok"], r


def test_qt3_infeasible_the_feasible_half_may_be_done_and_reported(tmp_path):
    """SimuHome's agents do what they can of a partly feasible request and report the rest:
    that passes, as does only offering it; acting on a device the request does not name fails."""
    rooms = {"hall": room(light("hall_light_1")), "den": room(light("den_light_1"))}
    goals = [asserts("hall", "hall_fan_1", "fan", ("1.OnOff.OnOff", True))]
    ep = import_file(write(tmp_path, "half", "qt3", "infeasible", rooms, goals,
                           query="Turn on hall light 1, and turn on hall fan 1 at 30 percent.")).episode
    assert ep.feasible_part == [] and ep.infeasibility.kind == "missing_device"
    done = score(ep, [look("hall"), call("hall_light_1", "OnOff", "On")],
                 "I turned on the light 1 in the hall, but there is no fan 1 in the hall, so I couldn't turn it on.")
    assert done["success"], done["failures"]
    offered = score(ep, [look("hall")], "There is no fan 1 in the hall, so I can't turn it on. "
                                        "Shall I turn on the hall light 1 anyway?")
    assert offered["success"], offered["failures"]
    elsewhere = score(ep, [look("hall"), call("den_light_1", "OnOff", "On")],
                      "There is no fan 1 in the hall, so I couldn't turn it on.")
    assert not elsewhere["success"] and any("changed device state" in f for f in elsewhere["failures"])
    claimed = score(ep, [look("hall")], "I turned on the light 1 in the hall; there is no fan 1 in the hall.")
    assert not claimed["success"] and any("did not do" in f for f in claimed["failures"])


def test_an_imported_robot_cleans_as_long_as_simuhome_s_does(tmp_path):
    """SimuHome's robot has no battery (ours drains one and goes home to charge after about
    83 min of work): an imported robot's charge stays put while it cleans; a built-in's drains."""
    rooms = {"hall": room(rvc("hall_rvc_1"))}
    running = asserts("hall", "hall_rvc_1", "rvc", ("1.RVCOperationalState.OperationalState", 1))
    ep = import_file(write(tmp_path, "rvc", "qt4-1", "feasible", rooms, [timed(120, 30, running)])).episode
    home = build_home(ep)
    home.add_device("builtin_rvc", "robot_vacuum_cleaner", "hall")
    backend, session = TwinBackend(home), Session()
    for device, cleaning in (("hall_rvc_1", 2), ("builtin_rvc", 1)):   # SimuHome's Vacuum mode; our Cleaning
        assert call_tool(backend, "execute_command", call(device, "RvcRunMode", "ChangeToMode",
                                                         {"newMode": cleaning})["args"], session)["ok"]
    home.advance(20 * 60)

    def read(device: str, cluster: str, attribute: str) -> Any:
        return call_tool(backend, "get_attribute", {"device.id": device, "endpoint.id": 1, "cluster.id": cluster,
                                                    "attribute.id": attribute}, session)["value"]
    assert read("hall_rvc_1", "RvcOperationalState", "OperationalState") == 1
    assert read("hall_rvc_1", "PowerSource", "BatPercentRemaining") == 200
    assert read("builtin_rvc", "PowerSource", "BatPercentRemaining") < 200
