"""Home.fork(): a fork and its parent share no mutable object, so whatever one does
(writes, commands, time) leaves the other byte-identical."""
import dataclasses
import enum
import functools
import json
import random
import types
from datetime import datetime

import pytest
from chip.clusters.ClusterObjects import ClusterObject
from chip.clusters.Types import Nullable

from clusters.devices import DEVICE_TYPES
from clusters.status import MatterError
from twin.clock import VirtualClock
from twin.faults import FaultEngine
from twin.home import Home, Room
from twin.physics import Trajectory
from twin.workflows import Workflows

# Trajectories are immutable by convention: physics replaces them, never mutates them.
_IMMUTABLE = (int, float, str, bytes, type(None), enum.Enum, datetime, frozenset, type, Nullable, Trajectory)


def dumps(home):
    return json.dumps(home.snapshot(), sort_keys=True)


def every_type_home():
    home = Home("every type", seed=5)
    home.add_room("r", "Room")
    for key in DEVICE_TYPES:
        home.add_device(key, key, "r")
    home.advance(90)
    return home


def mutable_objects(home, leaves=()):
    """id -> object of every mutable object reachable from the home's devices, rooms, clock,
    rng, workflows and faults (objects of types `leaves` are listed but not walked). Attribute
    values (replaced, never mutated), frozen records and stored events (appended, never
    mutated) are shared on purpose and not walked."""
    seen, stack = {}, [home]
    while stack:
        obj = stack.pop()
        if isinstance(obj, _IMMUTABLE) or isinstance(obj, ClusterObject) or id(obj) in seen:
            continue
        if isinstance(obj, leaves):
            seen[id(obj)] = obj
            continue
        if dataclasses.is_dataclass(obj) and type(obj).__dataclass_params__.frozen:
            continue
        if isinstance(obj, types.FunctionType):
            stack.extend(c.cell_contents for c in obj.__closure__ or () if c.cell_contents is not None)
            continue
        if isinstance(obj, types.MethodType):
            stack.append(obj.__self__)
            continue
        if isinstance(obj, tuple):
            stack.extend(obj)
            continue
        seen[id(obj)] = obj
        if isinstance(obj, functools.partial):
            stack.extend((obj.func, *obj.args, *obj.keywords.values()))
        elif isinstance(obj, dict):
            stack.extend(obj.values())
        elif isinstance(obj, (list, set)):
            stack.extend(obj)
        elif isinstance(obj, random.Random):
            pass
        elif hasattr(obj, "__dict__"):
            stack.extend(v for k, v in vars(obj).items() if k not in ("_values", "events"))
            for k in ("_values", "events"):
                if isinstance(vars(obj).get(k), list | dict):
                    seen[id(vars(obj)[k])] = vars(obj)[k]   # the container itself is the fork's own
    return seen


def mutate_everything(home):
    """Every writable attribute to another accepted value and every command without fields,
    on every server of every device, then an hour of time."""
    for device in home.devices.values():
        for endpoint in device.endpoints.values():
            for server in endpoint.servers.values():
                for name in sorted(server.writable):
                    value = server.get(name)
                    for other in ((not value,) if isinstance(value, bool) else
                                  (value + 1, value - 1) if isinstance(value, int) else ()):
                        try:
                            server.write(name, other)
                            break
                        except MatterError:
                            continue
                for command in server.commands:
                    try:
                        server.invoke(command, {})
                    except (MatterError, TypeError, ValueError):
                        pass
    home.advance(3600)


def test_a_fork_shares_no_mutable_object_with_its_parent():
    home = every_type_home()
    fork = home.fork()
    list(fork.devices.values())   # handing devices out copies in the ones still shared (twin.fork.Devices)
    shared = set(mutable_objects(home)) & set(mutable_objects(fork))
    assert not shared, [type(mutable_objects(home)[i]).__name__ for i in shared]


@pytest.mark.parametrize("mutated", ["fork", "parent", "parent of a fork that still borrows everything"])
def test_mutating_every_device_type_leaves_the_other_side_untouched(mutated):
    home = every_type_home()
    fork = home.fork()
    if mutated in ("fork", "parent"):
        assert dumps(fork) == dumps(home)   # a snapshot hands out, so copies in, every device
    changed, other = (fork, home) if mutated == "fork" else (home, fork)
    before = dumps(home)
    mutate_everything(changed)
    assert dumps(changed) != before
    assert dumps(other) == before
    other.advance(3600)   # and the untouched side still runs like a restore of itself
    restored = Home.restore(json.loads(before))
    restored.advance(3600)
    assert dumps(other) == dumps(restored)


# ---- copy on write: a fork borrows its parent's devices until either side touches one ----------
def light_home():
    home = Home("lights", seed=3)
    home.add_room("r", "Room")
    for i in range(3):
        home.add_device(f"light{i}", "on_off_light", "r")
    home.advance(1)
    return home


def toggle(device):
    device.invoke("OnOff", "Toggle", {}, endpoint_id=1)


def is_on(device):
    return device.read("OnOff", "OnOff", endpoint_id=1)


def test_a_fork_copies_a_device_only_when_it_is_handed_out():
    home = light_home()
    fork = home.fork()
    assert set(fork.devices.borrowed) == set(home.devices)
    assert fork.room_of("light0") == "r" and fork.device_info("light0")["type"] == "on_off_light"
    assert set(fork.devices.borrowed) == set(home.devices)   # metadata copies nothing
    light = fork.device("light0")
    assert light is not home.device("light0") and fork.device("light0") is light
    assert set(fork.devices.borrowed) == {"light1", "light2"}
    fork.advance(60)   # stepping alone copies nothing more
    assert set(fork.devices.borrowed) == {"light1", "light2"}


def test_when_the_parent_changes_a_lent_device_the_fork_keeps_the_old_state():
    home = light_home()
    held = home.device("light0")   # a reference from before the fork (a Matter node holds these)
    server = home.device("light1").endpoint(1).server("OnOff")
    fork = home.fork()
    before = dumps(home)
    toggle(held)
    server.set("OnOff", True)
    home.device("light2").write("OnOff", "OnTime", 7, endpoint_id=1)
    home.advance(5)
    assert dumps(home) != before
    assert dumps(fork) == before
    assert not is_on(fork.device("light2")) and fork.device("light0") is not held


def test_a_fork_of_a_fork_borrows_from_the_first_lender_and_all_three_stay_apart():
    home = light_home()
    child = home.fork()
    grandchild = child.fork()   # borrows light0..2 from `home`, through `child`
    assert set(grandchild.devices.borrowed.values()) == {home}
    toggle(home.device("light0"))
    toggle(child.device("light1"))
    grandchild.advance(30)
    assert [is_on(h.device("light0")) for h in (home, child, grandchild)] == [True, False, False]
    assert [is_on(h.device("light1")) for h in (home, child, grandchild)] == [False, True, False]
    restored = Home.restore(child.snapshot())
    for h in (child, restored):
        toggle(h.device("light2"))
        h.advance(60)
    assert dumps(child) == dumps(restored)
    assert not is_on(grandchild.device("light2"))


def test_a_copied_device_is_wired_to_its_own_home():
    home = light_home()
    heard = []
    parent_server = home.device("light0").endpoint(1).server("OnOff")
    parent_server.listeners.append(lambda server, name: heard.append(name))   # an outside observer
    fork = home.fork()
    light = fork.device("light0")
    server = light.endpoint(1).server("OnOff")
    toggle(light)
    assert heard == []                    # outside observers stay with the parent
    assert fork._dirty == {"r"} and home._dirty == set()   # the fork's listener marked the fork's room
    toggle(home.device("light0"))
    assert heard == ["OnOff"]             # and still hear it (a Matter node serving the parent, say)
    assert server.clock is fork.clock and server.event_sink.__self__ is fork
    assert light.interceptor.__self__ is fork.faults
    list(fork.devices.values())   # nothing borrowed left, so the walk below stays in the fork
    reached = mutable_objects(light).values()
    assert fork in reached and not any(obj is home or obj is home.clock or obj is home.faults for obj in reached)


def test_an_event_due_in_a_borrowed_device_runs_in_the_fork_alone():
    home = light_home()
    home.device("light0").endpoint(1).server("Identify").invoke("Identify", {"identifyTime": 3})
    fork = home.fork()
    assert "light0" in fork.devices.borrowed
    fork.advance(10)   # the Identify ends in the fork: it copies the device in first
    assert fork.device("light0").read("Identify", "IdentifyTime", endpoint_id=1) == 0
    assert home.device("light0").read("Identify", "IdentifyTime", endpoint_id=1) == 3
    home.advance(10)
    assert dumps(home) == dumps(fork)


def test_own_devices_leaves_nothing_borrowed_for_the_parent_to_touch():
    home = light_home()
    fork = home.fork()
    fork.own_devices()
    assert not fork.devices.borrowed
    objects = dict(fork.devices.objects)
    toggle(home.device("light0"))   # the parent's change no longer reaches into the fork
    assert fork.devices.objects == objects and not is_on(fork.device("light0"))


def test_every_device_type_copied_into_a_fork_reaches_only_the_forks_home_objects():
    home = every_type_home()
    fork = home.fork()
    fork.own_devices()
    homewide = (Home, Room, VirtualClock, FaultEngine, Workflows, random.Random)
    allowed = {id(fork), id(fork.clock), id(fork.faults), id(fork.workflows), id(fork.rng),
               *map(id, fork.rooms.values())}
    for device in fork.devices.values():
        reached = [o for o in mutable_objects(device, leaves=homewide).values() if isinstance(o, homewide)]
        assert reached and all(id(o) in allowed for o in reached), (device.id, reached)


def test_reading_a_rooms_light_copies_nothing_yet_follows_the_forks_own_clock():
    from bridge.tools import call_tool
    from bridge.twin_backend import TwinBackend
    base = Home.default()
    backend = TwinBackend(base)
    for command, args in (("On", {}), ("MoveToLevel", {"level": 254, "transitionTime": 100, "optionsMask": 0,
                                                       "optionsOverride": 0})):
        assert call_tool(backend, "execute_command", {"device.id": "living_room_light", "endpoint.id": 1,
                                                      "cluster.id": "LevelControl" if args else "OnOff",
                                                      "command.id": command, "args": args})["ok"]
    fork = base.fork()
    lux = fork.rooms["living_room"].illuminance
    assert "living_room_light" in fork.devices.borrowed   # read as lent: no copy
    base.advance(5)   # the lender's light brightens; the fork, still at its tick, must not see it
    assert fork.rooms["living_room"].illuminance == lux
    assert base.rooms["living_room"].illuminance > lux
