"""Locks and sensors driven by the home: mounted contacts, presence, smoke and freeze thresholds,
open windows, scenario events, the jammed fault; stepping == fast-forward == fork == restore."""
import json

import pytest
from chip.clusters import Objects as Clusters

from twin.faults import parse_fault
from twin.home import Home, UnknownIdError

DL = Clusters.DoorLock
CLOSED_LIFT = "1/WindowCovering/CurrentPositionLiftPercent100ths"


def dumps(home):
    return json.dumps(home.snapshot(), sort_keys=True)


def house(seed=0):
    home = Home("t", seed, ambient={"temperature": 10.0, "humidity": 70.0, "pm10": 20.0})
    home.add_room("hall", temperature=21.0)
    home.add_room("living", temperature=21.0, pm10=400.0)
    home.add_device("front", "door_lock", "hall", options={"users": [{"name": "Ann", "pin": "1234"}],
                                                           "auto_relock_s": 20})
    home.add_device("door_contact", "contact_sensor", "hall", options={"mounted_on": "front"})
    home.add_device("window", "window_covering", "living",
                    attributes={"1/WindowCovering/CurrentPositionLiftPercent100ths": 10000})
    home.add_device("window_contact", "contact_sensor", "living", options={"mounted_on": "window"})
    home.add_device("motion", "occupancy_sensor", "living", options={"hold_time_s": 30})
    home.add_device("smoke", "smoke_co_alarm", "living")
    home.add_device("purifier", "air_purifier", "living")
    home.add_device("leak", "water_leak_detector", "hall")
    home._settle()
    return home


def script(home, run):
    """The same calls at the same virtual times; `run(home, seconds)` moves time."""
    home.device("purifier").invoke("OnOff", "On")
    home.device("purifier").write("FanControl", "PercentSetting", 100)
    run(home, 60)
    home.set_presence("ann", "living")
    home.device_event("front", "keypad", {"op": "unlock", "pin": "1234"})
    home.device_event("front", "open")
    run(home, 45)
    home.device_event("front", "close")
    home.device("window").invoke("WindowCovering", "UpOrOpen")
    home.set_presence("ann", None)
    run(home, 600)
    home.device_event("leak", "detect")
    run(home, 1200)


def test_sensors_follow_the_home_and_step_equals_fast_forward():
    stepped, fast = house(), house()
    script(stepped, lambda h, s: h.step(s * 10))
    script(fast, lambda h, s: h.advance(s))
    assert dumps(stepped) == dumps(fast)
    events = [(e["device"], e["event"]) for e in fast.events]
    assert ("door_contact", "StateChange") in events and ("window_contact", "StateChange") in events
    assert ("motion", "OccupancyChanged") in events and ("leak", "StateChange") in events
    smoke = [e for e in fast.events if e["device"] == "smoke"]
    assert smoke[0]["event"] == "SmokeAlarm" and smoke[-1]["event"] == "AllClear"   # purifier cleared it
    # the alarm cleared exactly when PM10 fell through the warning level
    tick = smoke[-1]["tick"]
    probe = house()
    script(probe, lambda h, s: h.advance(s))
    assert probe.device("smoke").read("SmokeCoAlarm", "SmokeState") == 0
    relock = [e for e in fast.events if e["event"] == "LockOperation" and e["fields"]["operationSource"] == 4]
    assert relock, "the lock relocked itself once the door closed"
    assert fast.device("window_contact").read("BooleanState", "StateValue") is False
    assert fast.device("motion").read("OccupancySensing", "Occupancy") == 0
    assert tick > 0


def test_smoke_alarm_trips_at_the_exact_tick_pm10_crosses_the_level():
    home = Home("t", 0, ambient={"temperature": 20.0, "humidity": 50.0, "pm10": 500.0})
    home.add_room("k", pm10=20.0)
    home.add_device("smoke", "smoke_co_alarm", "k")
    home.advance(6 * 3600)
    trip = next(e["tick"] for e in home.events if e["event"] == "SmokeAlarm")
    traj = home.rooms["k"]._traj["pm10"]
    assert home.rooms["k"].pm10 > 150
    probe = Home.restore(json.loads(dumps(home)))
    assert probe.rooms["k"]._traj["pm10"].state() == traj.state()
    # one tick before the trip PM10 was below the warning level, at the trip at or above it
    stepped = Home("t", 0, ambient={"temperature": 20.0, "humidity": 50.0, "pm10": 500.0})
    stepped.add_room("k", pm10=20.0)
    stepped.add_device("smoke", "smoke_co_alarm", "k")
    stepped.step(trip - 1)
    assert stepped.rooms["k"].pm10 < 150 and stepped.device("smoke").read("SmokeCoAlarm", "SmokeState") == 0
    stepped.step(1)
    assert stepped.device("smoke").read("SmokeCoAlarm", "SmokeState") == 1


def test_open_window_cools_a_room_toward_outside_and_occupants_warm_it():
    def run(open_window, people):
        home = Home("t", 0, ambient={"temperature": 5.0, "humidity": 60.0, "pm10": 20.0})
        home.add_room("r", temperature=21.0)
        home.add_device("w", "window_covering", "r", attributes={CLOSED_LIFT: 10000})
        home.add_device("c", "contact_sensor", "r", options={"mounted_on": "w"})
        for i in range(people):
            home.set_presence(f"p{i}", "r")
        if open_window:
            home.device("w").invoke("WindowCovering", "UpOrOpen")
        home.advance(3600)
        return home.rooms["r"].temperature
    closed, opened, crowded = run(False, 0), run(True, 0), run(False, 4)
    assert opened < closed - 5 and opened > 5.0
    assert crowded > closed


def test_jammed_fault_and_keypad_refusals():
    home = house()
    home.faults.add(parse_fault({"device": "front", "kind": "jammed", "at": 10, "duration": 60}))
    home.advance(11)
    lock = home.device("front")
    assert lock.read("DoorLock", "LockState") == DL.Enums.DlLockState.kNotFullyLocked
    with pytest.raises(Exception, match="jammed"):
        lock.invoke("DoorLock", "UnlockDoor", {})
    home.advance(60)
    lock.invoke("DoorLock", "UnlockDoor", {})
    assert lock.read("DoorLock", "LockState") == DL.Enums.DlLockState.kUnlocked
    with pytest.raises(ValueError, match="wrong code"):
        home.device_event("front", "keypad", {"op": "lock", "pin": "0000"})
    with pytest.raises(ValueError, match="no door lock"):
        home.faults.add(parse_fault({"device": "leak", "kind": "jammed"}))


def test_bad_events_and_mounts_are_one_clear_line():
    home = house()
    before = dumps(home)
    for device, event, value, message in [
            ("leak", "open", None, "use detect"), ("window_contact", "close", None, "follows window"),
            ("front", "smoke", 1, "takes no"), ("smoke", "smoke", 5, "level"), ("front", "keypad", "1234", "keypad"),
            ("front", "explode", None, "accepted"), ("front", "open", None, "locked")]:
        with pytest.raises(ValueError, match=message):
            home.device_event(device, event, value)
    assert dumps(home) == before
    with pytest.raises(ValueError, match="mounted_on"):
        home.add_device("c2", "contact_sensor", "hall", options={"mounted_on": "leak"})
    with pytest.raises(UnknownIdError, match="attic"):
        home.set_presence("ann", "attic")


def test_fork_and_restore_continue_like_the_original():
    home = house()
    home.set_presence("ann", "living")
    home.device_event("front", "keypad", {"op": "unlock", "pin": "1234"})
    fork, restored = home.fork(), Home.restore(json.loads(dumps(home)))
    for h in (home, fork, restored):
        h.device_event("front", "open")
        h.set_presence("ann", None)
        h.advance(900)
    assert dumps(home) == dumps(fork) == dumps(restored)


def test_a_freeze_detection_holds_until_cleared_then_the_room_is_read_again():
    """A hand's or scenario's freeze holds whatever the (warm) room reads, as a smoke incident does;
    before, the next time the room changed (a device, a presence) the detector read 21 °C and cleared."""
    home = house()
    home.add_device("frost", "water_freeze_detector", "living")
    home._settle()
    home.device_event("frost", "detect")
    home.device("purifier").invoke("OnOff", "On")   # the room changes: its sensors read it again
    home.set_presence("ann", "living")
    home.advance(60)
    assert home.device("frost").read("BooleanState", "StateValue") is True
    restored = Home.restore(json.loads(dumps(home)))
    restored.set_presence("bob", "living")
    assert restored.device("frost").read("BooleanState", "StateValue") is True
    home.device_event("frost", "clear")
    assert home.device("frost").read("BooleanState", "StateValue") is False
