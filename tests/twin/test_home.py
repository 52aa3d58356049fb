"""The Home: virtual time (step == fast-forward), physics, workflows, snapshots, forks."""
import json
from datetime import datetime, timedelta

import pytest
from chip.clusters import Objects as Clusters

from twin import physics
from twin.clock import VirtualClock
from twin.home import Home, UnknownIdError


def dumps(home):
    return json.dumps(home.snapshot(), sort_keys=True)


def make_room_home(seed=0, **room):
    home = Home("test", seed, ambient={"temperature": 30.0, "humidity": 60.0, "pm10": 40.0})
    home.add_room("r", "Room", **room)
    return home


def ac_mode(ac, mode, setpoint=None, fan=100):
    """Drive an AC through Device (the single entry point): on, fan, mode, setpoint."""
    ac.invoke("OnOff", "On")
    ac.write("FanControl", "PercentSetting", fan)
    ac.write("Thermostat", "SystemMode", mode)
    if setpoint is not None:
        name = "OccupiedCoolingSetpoint" if mode == 3 else "OccupiedHeatingSetpoint"
        ac.write("Thermostat", name, int(round(setpoint * 100)))


def fan_on(device, percent):
    device.invoke("OnOff", "On")
    device.write("FanControl", "PercentSetting", percent)


def cmd(device, endpoint, cluster, command, args=None):
    return {"tool": "execute_command", "args": {"device.id": device, "endpoint.id": endpoint,
                                                 "cluster.id": cluster, "command.id": command,
                                                 "args": args or {}}}


def write(device, cluster, attribute, value):
    return {"tool": "write_attribute", "args": {"device_id": device, "cluster_id": cluster,
                                                 "attribute_id": attribute, "value": value}}


def level(value, tenths):
    return {"level": value, "transitionTime": tenths, "optionsMask": 0, "optionsOverride": 0}


# ---- the busy home used by the equivalence tests ---------------------------------------
def busy_home(seed=7):
    home = Home("busy", seed, ambient={"temperature": 30.0, "humidity": 62.0, "pm10": 45.0})
    home.add_room("living", "Living", temperature=23.95, humidity=50.0, pm10=60.0, daylight_lux=400)
    home.add_room("bed", "Bed", temperature=22.0, humidity=40.0, pm10=10.0, daylight_lux=100)
    ac1 = home.add_device("ac1", "air_conditioner", "living")
    ac2 = home.add_device("ac2", "air_conditioner", "bed")
    home.add_device("lamp", "dimmable_light", "living")
    home.add_device("hall", "on_off_light", "living")
    home.add_device("cover", "window_covering", "living")
    purifier = home.add_device("purifier", "air_purifier", "living")
    hum = home.add_device("hum", "humidifier", "bed")
    ac_mode(ac1, 3, setpoint=24.0, fan=100)   # room below setpoint: cooling switches on later
    ac_mode(ac2, 4, setpoint=23.0, fan=50)    # heating until the setpoint, then switches off
    fan_on(purifier, 60)
    fan_on(hum, 30)
    start = home.now
    def at(minutes):
        return start + timedelta(minutes=minutes)
    home.workflows.schedule(at(5), [cmd("lamp", 1, "OnOff", "On"),
                                    cmd("lamp", 1, "LevelControl", "MoveToLevel", level(200, 600))])
    home.workflows.schedule(at(20), [cmd("hall", 1, "OnOff", "OnWithTimedOff",
                                         {"onOffControl": 0, "onTime": 3000, "offWaitTime": 50})])
    home.workflows.schedule(at(30), [cmd("cover", 1, "WindowCovering", "GoToLiftPercentage",
                                         {"liftPercent100thsValue": 7500})])
    home.workflows.schedule(at(45), [write("ac1", "FanControl", "PercentSetting", 30),
                                     write("ac1", "Thermostat", "OccupiedCoolingSetpoint", 2500)])
    home.workflows.schedule(at(50), [cmd("nope", 1, "OnOff", "On"), cmd("lamp", 1, "OnOff", "Off")])
    home.workflows.schedule(at(70), [cmd("lamp", 1, "LevelControl", "MoveToLevel", level(20, 100)),
                                     cmd("hum", 1, "OnOff", "Off")])
    home.workflows.schedule(at(90), [cmd("ac1", 1, "OnOff", "Off")])
    return home


def test_fast_forward_equals_tick_by_tick():
    stepped, jumped = busy_home(), busy_home()
    assert dumps(stepped) == dumps(jumped)
    # Two hours: 72,000 ticks one at a time, against irregular fast-forward jumps.
    for chunk in range(12):
        stepped.step(6000)
        if chunk == 3:  # 09:40: cooling in the living room switched on, heating in bed off
            assert stepped.rooms["living"]._traj["temperature"].active == (True, True)
            assert stepped.rooms["bed"]._traj["temperature"].active == (True, False)
            assert stepped.rooms["bed"]._traj["temperature"].tick0 > 0
    for seconds in (0.1, 299.9, 1234.5, 600):
        jumped.advance(seconds)
    jumped.run_until(datetime(2025, 6, 1, 10, 30))
    jumped.advance(1800)
    assert stepped.clock.tick == jumped.clock.tick == 72000
    assert dumps(stepped) == dumps(jumped)
    # The run really was busy: the flips happened and the workflows ran or failed.
    statuses = [w.status for w in jumped.workflows.list()]
    assert statuses == ["completed"] * 4 + ["failed"] + ["completed"] * 2
    assert not jumped.devices["hall"].read("OnOff", "OnOff")  # timed off by the server


def test_external_calls_between_jumps_keep_paths_equal():
    stepped, jumped = busy_home(), busy_home()
    stepped.step(3000)
    jumped.advance(300)
    for home in (stepped, jumped):  # the same tool call at the same tick in both paths
        home.devices["ac2"].write("Thermostat", "OccupiedHeatingSetpoint", 2600)
    stepped.step(9000)
    jumped.advance(900)
    assert dumps(stepped) == dumps(jumped)


def test_same_seed_same_bytes_and_restore_continues_identically():
    a, b = busy_home(seed=3), busy_home(seed=3)
    a.advance(3600)
    b.advance(3600)
    assert dumps(a) == dumps(b)
    assert dumps(busy_home(seed=4)) != dumps(busy_home(seed=3))  # identities come from the seed
    restored = Home.restore(json.loads(dumps(a)))
    assert dumps(restored) == dumps(a)
    a.advance(2 * 3600)
    restored.advance(2 * 3600)
    assert dumps(restored) == dumps(a)
    assert a.rng.random() == restored.rng.random()


def test_fork_is_independent():
    home = busy_home()
    home.advance(600)
    outside = []  # a listener added from outside (say, a Matter node reporting changes)
    home.devices["ac1"].locate("OnOff").listeners.append(lambda server, name: outside.append(name))
    fork = home.fork()
    fork.devices["ac1"].invoke("OnOff", "Off")
    assert outside == []  # left behind, as restore() would
    assert len(fork.devices["ac1"].locate("OnOff").listeners) == len(
        Home.restore(home.snapshot()).devices["ac1"].locate("OnOff").listeners)
    before = dumps(home)
    fork.devices["ac1"].invoke("OnOff", "Off")
    fork.workflows.cancel("w7")
    fork.advance(3600)
    fork.rng.random()
    assert dumps(home) == before
    assert fork.rooms["living"].temperature != home.rooms["living"].temperature


def test_ac_condition_flips_exactly_at_the_first_crossing():
    home = make_room_home(temperature=23.99)
    ac_mode(home.add_device("ac", "air_conditioner", "r"), 3, setpoint=24.0)
    home.step(0)
    trajectory = home.rooms["r"]._traj["temperature"]
    flip = trajectory.flip_tick
    assert flip is not None and flip > 0
    assert trajectory.value(flip - 1) <= 24.0 < trajectory.value(flip)
    home.advance(flip / 10)
    after = home.rooms["r"]._traj["temperature"]
    assert after.tick0 == flip and all(after.active)
    assert after.flip_tick is None  # no chatter: it stays on, settling just above the setpoint
    home.advance(6 * 3600)
    assert 24.0 < home.rooms["r"].temperature < 24.5


def test_ac_cools_faster_at_higher_fan_speed():
    drops = {}
    for fan in (30, 100):
        home = make_room_home(temperature=29.0)
        ac_mode(home.add_device("ac", "air_conditioner", "r"), 3, setpoint=24.0, fan=fan)
        home.advance(300)
        drops[fan] = 29.0 - home.rooms["r"].temperature
    assert 0 < drops[30] < drops[100]
    assert 0.7 < drops[100] < 1.3  # ~1 °C in 5 minutes when 5 °C away at full fan


def test_ac_off_or_fan_only_does_nothing_and_heat_mode_heats():
    reference = make_room_home(temperature=20.0)
    reference.advance(600)
    drift = reference.rooms["r"].temperature - 20.0
    assert 0 < drift < 0.5  # the envelope alone: a slow pull towards the 30 °C outside
    home = make_room_home(temperature=20.0)
    ac = home.add_device("ac", "air_conditioner", "r")
    ac_mode(ac, 3, setpoint=22.0)  # cooling, but the room is below the setpoint
    home.advance(600)
    assert home.rooms["r"].temperature == reference.rooms["r"].temperature
    ac_mode(ac, 3, setpoint=16.0)
    ac.write("Thermostat", "SystemMode", 7)  # FanOnly
    home.advance(600)
    reference.advance(600)
    # re-anchored (the terms changed), so equal up to rounding only
    assert home.rooms["r"].temperature == pytest.approx(reference.rooms["r"].temperature, abs=1e-12)
    ac.write("Thermostat", "SystemMode", 4)
    ac.write("Thermostat", "OccupiedHeatingSetpoint", 2500)
    t0 = home.rooms["r"].temperature
    home.advance(600)
    assert home.rooms["r"].temperature - t0 > 4 * drift


def test_lights_and_covers_set_illuminance_exactly_during_transitions():
    home = make_room_home(daylight_lux=200)
    lamp = home.add_device("lamp", "dimmable_light", "r")
    plain = home.add_device("plain", "on_off_light", "r")
    cover = home.add_device("cover", "window_covering", "r")
    assert home.rooms["r"].illuminance == 200
    plain.invoke("OnOff", "On")
    assert home.rooms["r"].illuminance == 200 + physics.COEFFICIENTS["light_lux"]["on_off_light"]
    plain.invoke("OnOff", "Off")
    lamp.invoke("OnOff", "On")
    lamp.invoke("LevelControl", "MoveToLevel", level(254, 100))  # 10 s transition
    seen = []
    for _ in range(10):
        home.step(10)
        lux = home.rooms["r"].illuminance
        current = lamp.read("LevelControl", "CurrentLevel")
        assert lux == pytest.approx(200 + 400 * current / 254)
        seen.append(lux)
    assert seen == sorted(seen) and seen[-1] == pytest.approx(600)
    cover.invoke("WindowCovering", "DownOrClose")
    home.advance(120)
    assert cover.read("WindowCovering", "CurrentPositionLiftPercent100ths") == 10000
    assert home.rooms["r"].illuminance == pytest.approx(400)


def test_purifier_humidifier_dehumidifier_directions():
    home = make_room_home(pm10=80.0, humidity=50.0)
    home.add_room("wet", humidity=80.0)
    fan_on(home.add_device("p", "air_purifier", "r"), 100)
    fan_on(home.add_device("h", "humidifier", "r"), 100)
    fan_on(home.add_device("d", "dehumidifier", "wet"), 100)
    home.advance(1800)
    assert home.rooms["r"].pm10 < 40
    assert home.rooms["r"].humidity > 55
    assert home.rooms["wet"].humidity < 70


def test_sensors_read_the_room():
    home = make_room_home(temperature=21.5, humidity=44.0, pm10=12.0)
    ac = home.add_device("ac", "air_conditioner", "r")
    hum = home.add_device("h", "humidifier", "r")
    assert ac.read("Thermostat", "LocalTemperature") == 2150
    assert hum.read("RelativeHumidityMeasurement", "MeasuredValue") == 4400
    home.advance(3600)
    assert ac.read("Thermostat", "LocalTemperature") == round(home.rooms["r"].temperature * 100)


def test_workflows_run_at_their_tick_and_record_failures():
    home = make_room_home()
    home.add_device("l", "on_off_light", "r")
    good = home.workflows.schedule("2025-06-01 09:10:00", [cmd("l", 1, "OnOff", "On")])
    bad = home.workflows.schedule(datetime(2025, 6, 1, 9, 20), [
        cmd("l", 1, "OnOff", "Off"),
        write("l", "OnOff", "OnOff", True),  # read-only attribute
        cmd("l", 1, "OnOff", "On")])
    assert good.id == "w1" and bad.id == "w2"
    home.advance(599.9)
    assert good.status == "scheduled" and not home.devices["l"].read("OnOff", "OnOff")
    home.step(1)
    assert good.status == "completed" and home.devices["l"].read("OnOff", "OnOff")
    assert good.to_json()["steps"][0]["tick"] == 6000
    home.advance(3600)
    out = bad.to_json()
    assert out["status"] == "failed" and out["finished_tick"] == 12000
    assert [s["status"] for s in out["steps"]] == ["ok", "error", "skipped"]
    assert "UNSUPPORTED_WRITE" in out["steps"][1]["error"] and "step 2" in out["error"]
    assert not home.devices["l"].read("OnOff", "OnOff")  # the step after the failure never ran


def test_workflow_validation_and_cancel():
    home = make_room_home()
    home.add_device("l", "on_off_light", "r")
    home.advance(60)
    with pytest.raises(ValueError, match="in the past"):
        home.workflows.schedule("2025-06-01 09:00:30", [cmd("l", 1, "OnOff", "On")])
    with pytest.raises(ValueError, match="accepted: execute_command, write_attribute"):
        home.workflows.schedule("2025-06-01 10:00:00", [{"tool": "reboot", "args": {}}])
    with pytest.raises(ValueError, match=r"missing required argument\(s\) command\.id"):
        home.workflows.schedule("2025-06-01 10:00:00", [{"tool": "execute_command", "args": {
            "device.id": "l", "endpoint.id": 1, "cluster.id": "OnOff"}}])
    with pytest.raises(ValueError, match="not a date and time"):
        home.workflows.schedule("tomorrow", [cmd("l", 1, "OnOff", "On")])
    assert home.workflows.list() == []  # nothing half-registered
    wf = home.workflows.schedule("2025-06-01 10:00:00", [cmd("l", 1, "OnOff", "On")])
    assert home.workflows.cancel(wf.id).status == "cancelled"
    home.advance(7200)
    assert not home.devices["l"].read("OnOff", "OnOff")
    with pytest.raises(ValueError, match="only scheduled"):
        home.workflows.cancel(wf.id)
    with pytest.raises(UnknownIdError, match="no workflow 'w9'"):
        home.workflows.get("w9")


def test_clock_and_argument_errors():
    clock = VirtualClock(datetime(2025, 6, 1, 9))
    assert clock.tick_at("2025-06-01 09:00:00.05") == 1  # between ticks rounds up
    assert clock.tick_at(datetime(2025, 6, 1, 10)) == 36000
    clock.tick = 36005
    assert clock.format() == "2025-06-01 10:00:00.5"
    home = make_room_home()
    with pytest.raises(ValueError):
        home.advance(-1)
    with pytest.raises(ValueError):
        home.step(1.5)
    with pytest.raises(ValueError, match="before the current"):
        home.run_until("2025-06-01 08:00:00")
    with pytest.raises(UnknownIdError, match="no device 'x'"):
        home.room_of("x")
    with pytest.raises(UnknownIdError, match="no room 'x'"):
        home.devices_in("x")


def test_events_are_recorded_with_tick_and_source():
    home = make_room_home()
    home.add_device("ac", "air_conditioner", "r")
    server = home.devices["ac"].locate("Thermostat")
    server.emit_event(Clusters.BasicInformation.Events.StartUp(softwareVersion=1))
    home.advance(10)
    (event,) = home.events
    assert event["tick"] == 0 and event["device"] == "ac" and event["endpoint"] == 1
    assert event["cluster"] == "Thermostat" and event["event"] == "StartUp"
    assert event["fields"] == {"softwareVersion": 1}
    assert json.loads(json.dumps(event)) == event
    assert Home.restore(home.snapshot()).events == home.events


def default_busy(seed=0):
    """The default home (all 17 types) with operational cycles, a heat pump and workflows."""
    home = Home.default(seed)
    d = home.devices
    for appliance in ("kitchen_dishwasher", "utility_room_washer"):
        d[appliance].invoke("OnOff", "On")
        d[appliance].invoke("OperationalState", "Start")
    d["utility_room_vacuum"].invoke("RvcRunMode", "ChangeToMode", {"newMode": 1})
    d["utility_room_heat_pump"].write("Thermostat", "SystemMode", 4)
    d["utility_room_heat_pump"].write("Thermostat", "OccupiedHeatingSetpoint", 2450)
    ac_mode(d["bedroom_ac"], 3, setpoint=23.5, fan=66)
    fan_on(d["bathroom_dehumidifier"], 100)
    start = home.now
    home.workflows.schedule(start + timedelta(minutes=40), [
        cmd("utility_room_dryer", 1, "OnOff", "On"),
        cmd("utility_room_dryer", 1, "OperationalState", "Start"),
        cmd("living_room_blinds", 1, "WindowCovering", "DownOrClose")])
    home.workflows.schedule(start + timedelta(minutes=55), [
        write("utility_room_heat_pump", "Thermostat", "SystemMode", 0)])
    return home


def test_default_home_all_types_step_fast_forward_fork_and_restore_agree():
    stepped, jumped = default_busy(), default_busy()
    stepped.step(27000)           # 45 min tick by tick
    jumped.advance(2700)
    assert dumps(stepped) == dumps(jumped)
    fork, restored = jumped.fork(), Home.restore(json.loads(dumps(jumped)))
    assert dumps(fork) == dumps(jumped) == dumps(restored)
    stepped.step(27000)
    for home in (jumped, fork, restored):
        home.advance(2700)
    assert dumps(stepped) == dumps(jumped) == dumps(fork) == dumps(restored)
    kinds = {(e["cluster"], e["event"]) for e in jumped.events}
    assert ("OperationalState", "OperationCompletion") in kinds  # a cycle finished on time
    assert [w.status for w in jumped.workflows.list()] == ["completed", "completed"]
    # the fork's wiring points at its own objects: changing it leaves the parent alone
    before = dumps(jumped)
    fork.devices["utility_room_heat_pump"].write("Thermostat", "SystemMode", 4)
    fork.devices["kitchen_dishwasher"].invoke("OperationalState", "Start")
    fork.advance(3600)
    assert dumps(jumped) == before


def test_set_room_state_reanchors_and_the_physics_goes_on():
    """A scenario's start state: the room reads what was set, then drifts on as before, the
    same way in a restored snapshot; illuminance and unknown names are refused."""
    home = make_room_home(temperature=20.0)
    home.advance(600)
    home.set_room_state("r", temperature=25.5, pm10=3.25)
    assert home.rooms["r"].temperature == 25.5 and home.rooms["r"].pm10 == 3.25
    twin = Home.restore(home.snapshot())
    home.advance(600)
    twin.advance(600)
    assert 25.5 < home.rooms["r"].temperature < 30.0   # towards the 30 °C ambient
    assert dumps(home) == dumps(twin)
    with pytest.raises(ValueError, match="illuminance: not a room state"):
        home.set_room_state("r", illuminance=10)
    with pytest.raises(UnknownIdError):
        home.set_room_state("nowhere", temperature=20)
