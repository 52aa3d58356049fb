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
from twin.home import Home
from twin.physics import Trajectory

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


def mutable_objects(home):
    """id -> object of every mutable object reachable from the home's devices, rooms, clock,
    rng, workflows and faults. Attribute values (replaced, never mutated), frozen records and
    stored events (appended, never mutated) are shared on purpose and not walked."""
    seen, stack = {}, [home]
    while stack:
        obj = stack.pop()
        if isinstance(obj, _IMMUTABLE) or isinstance(obj, ClusterObject) or id(obj) in seen:
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
    shared = set(mutable_objects(home)) & set(mutable_objects(fork))
    assert not shared, [type(mutable_objects(home)[i]).__name__ for i in shared]


@pytest.mark.parametrize("mutated", ["fork", "parent"])
def test_mutating_every_device_type_leaves_the_other_side_untouched(mutated):
    home = every_type_home()
    fork = home.fork()
    assert dumps(fork) == dumps(home)
    changed, other = (fork, home) if mutated == "fork" else (home, fork)
    before = dumps(other)
    mutate_everything(changed)
    assert dumps(changed) != before
    assert dumps(other) == before
    other.advance(3600)   # and the untouched side still runs like a restore of itself
    restored = Home.restore(json.loads(before))
    restored.advance(3600)
    assert dumps(other) == dumps(restored)
