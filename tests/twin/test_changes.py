"""The change stream the live views share: listener-driven changes with their latest value,
derived values and rooms sampled at the subscriber's interval, events, and nothing when nothing
changed."""
import pytest

from twin.changes import ChangeStream
from twin.home import Home


def make_home():
    home = Home("changes", seed=1)
    home.add_room("hall", "Hall", daylight_lux=100.0)
    home.add_room("den", "Den")
    home.add_device("lamp", "dimmable_light", "hall")
    home.add_device("washer", "laundry_washer", "den")
    return home


def keys(batch):
    return {c.key: c.value for c in batch.changes} if batch is not None else {}


def test_a_stored_change_is_told_once_with_its_latest_value():
    home = make_home()
    stream = ChangeStream(home)
    sub = stream.subscribe(sample_s=1.0)
    sub.take(0.0)                                   # first samples
    assert sub.take(0.1) is None                    # nothing changed, nothing sampled yet
    lamp = home.devices["lamp"].endpoint(1)
    lamp.server("OnOff").invoke("On")
    lamp.server("OnOff").invoke("Off")
    lamp.server("OnOff").invoke("On")
    got = keys(sub.take(0.2))
    assert got[("attribute", "lamp", 1, "OnOff", "OnOff")] is True
    # The light's room is re-read at once (illuminance follows the light), before its sample is due.
    assert got[("room", "hall", "illuminance")] > 100
    assert sub.take(0.3) is None


def test_derived_values_are_sampled_at_the_subscribers_interval_only():
    home = make_home()
    stream = ChangeStream(home)
    slow, fast = stream.subscribe(sample_s=5.0), stream.subscribe(sample_s=0.5)
    slow.take(0.0)
    fast.take(0.0)
    level = home.devices["lamp"].endpoint(1).server("LevelControl")
    level.invoke("MoveToLevelWithOnOff", {"level": 200, "transitionTime": 100, "optionsMask": 0, "optionsOverride": 0})
    slow.take(0.1), fast.take(0.1)                  # the command's own stored changes
    home.advance(3)                                 # mid-transition: CurrentLevel moves, no listener fires
    key = ("attribute", "lamp", 1, "LevelControl", "CurrentLevel")
    assert key in keys(fast.take(0.6))
    assert key not in keys(slow.take(0.6))          # its 5 s have not passed
    assert key in keys(slow.take(5.1))


def test_room_values_move_only_when_sampled_and_only_if_they_moved():
    home = make_home()
    stream = ChangeStream(home)
    sub = stream.subscribe(sample_s=1.0)
    first = keys(sub.take(0.0))
    assert {k for k in first if k[0] == "room"} == {("room", r, q) for r in ("hall", "den")
                                                    for q in ("temperature", "humidity", "illuminance", "pm10")}
    assert sub.take(1.0) is None                    # sampled, nothing moved at its resolution
    home.advance(4 * 3600)                          # the envelope pulls the rooms toward ambient
    moved = keys(sub.take(2.0))
    assert ("room", "hall", "temperature") in moved
    assert ("room", "hall", "illuminance") not in moved


def test_events_are_told_in_order_and_a_closed_subscription_hears_nothing():
    home = make_home()
    stream = ChangeStream(home)
    sub, gone = stream.subscribe(), stream.subscribe()
    gone.close()
    washer = home.devices["washer"].endpoint(1)
    washer.server("OnOff").invoke("On")
    washer.server("OperationalState").invoke("Start")
    home.advance(4 * 3600)                          # the cycle completes: OperationCompletion
    batch = sub.take(0.0)
    events = [c for c in batch.changes if c.key[0] == "event"]
    assert [c.key[4] for c in events][-1] == "OperationCompletion"
    assert events[-1].to_json()["device"] == "washer"
    assert gone.dirty == {} and gone.events == []


def test_the_stream_leaves_forks_and_snapshots_alone_and_close_unhooks_it():
    home = make_home()
    before = home.snapshot()
    stream = ChangeStream(home)
    stream.subscribe()
    fork = home.fork()
    assert all(stream._on_change not in s.listeners for d in fork.devices.values() for s in d.servers())
    assert home.snapshot() == before
    stream.close()
    assert all(stream._on_change not in s.listeners for d in home.devices.values() for s in d.servers())


def test_rewire_follows_devices_added_later():
    home = make_home()
    stream = ChangeStream(home)
    sub = stream.subscribe()
    sub.take(0.0)
    home.add_device("fan", "fan", "den")
    stream.rewire()
    home.devices["fan"].endpoint(1).server("OnOff").invoke("On")
    assert ("attribute", "fan", 1, "OnOff", "OnOff") in keys(sub.take(0.1))


def test_a_sample_interval_below_one_tick_is_refused():
    with pytest.raises(ValueError, match="below the minimum"):
        ChangeStream(make_home()).subscribe(sample_s=0.01)
