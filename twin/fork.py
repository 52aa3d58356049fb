"""Forks by copy on write: `Devices`, a home's device table that lends devices to forks until
either side changes one, and `GraphCopier`, which copies a home's own object graph (or one
device) with every reference rewired to the copies. `Home.fork` uses both (twin/home.py)."""
from __future__ import annotations

import contextlib
import copy
import dataclasses
import enum
import functools
import gc
import random
import types
from collections.abc import Callable, ItemsView, Iterator, MutableMapping, ValuesView
from datetime import datetime
from typing import Any, Protocol

from chip.clusters.ClusterObjects import ClusterObject
from chip.clusters.Types import Nullable

from clusters.base import ClusterServer
from clusters.device import Device
from twin import physics
from twin.physics import Trajectory


class Lender(Protocol):
    """What `Devices` needs of its home (twin.home.Home): the table of servers with timed
    events, dropped when devices change, and copying a borrowed device in."""
    _timed: dict[str, list[ClusterServer]] | None

    def _adopt(self, device_id: str) -> Device: ...


_SERVER_SPECIAL = frozenset({"_values", "listeners", "event_sink", "event_listeners"})


@contextlib.contextmanager
def no_gc() -> Iterator[None]:
    """Copies make many objects at once; collections mid-copy would only slow them down."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Devices(MutableMapping[str, Device]):
    """`Home.devices`: device id -> Device, in the order the devices were added.

    A fork shares its parent's devices until either side changes one (copy on write):
    - a fork starts out *borrowing* every device: `objects` holds the lender's object and
      `borrowed` names the lender. Neither side changes a lent object;
    - the fork copies a borrowed device in (`Home._adopt`) the first time it hands it out
      (`devices[...]`, `values()`, `device()`, `devices_in()`: its physics and tools included)
      or one of its events falls due; until then its settle only asks the lender's servers
      `next_event_tick`, which changes nothing;
    - the lender, before one of its lent devices changes (every server calls
      `Device.before_change` first, see `ClusterServer.changing`), has every fork still
      borrowing it copy it in first (`Home._unlend`).
    So a fork costs a few dict copies, and each device is copied only if someone touches it.
    A lender's changes copy devices into its forks, so a fork used from another thread while
    its lender keeps changing first takes its own copies (`Home.own_devices`).
    """

    def __init__(self, home: Lender, objects: dict[str, Device] | None = None,
                 borrowed: dict[str, Lender] | None = None) -> None:
        self._home = home
        self.objects: dict[str, Device] = objects or {}   # ours, or the lender's if borrowed
        self.borrowed: dict[str, Lender] = borrowed or {}   # device id -> lender

    def lend_to(self, fork: Lender) -> Devices:
        """The fork's table: every device borrowed, from us or from whom we borrow it."""
        return Devices(fork, dict(self.objects), {**dict.fromkeys(self.objects, self._home), **self.borrowed})

    def __getitem__(self, device_id: str) -> Device:
        if device_id in self.borrowed:
            return self._home._adopt(device_id)
        return self.objects[device_id]

    def __setitem__(self, device_id: str, device: Device) -> None:
        self.borrowed.pop(device_id, None)
        self.objects[device_id] = device
        self._home._timed = None

    def __delitem__(self, device_id: str) -> None:
        del self.objects[device_id]
        self.borrowed.pop(device_id, None)
        self._home._timed = None

    def __contains__(self, device_id: object) -> bool:
        return device_id in self.objects

    def values(self) -> ValuesView[Device]:  # type: ignore[override]
        self.adopt_all()
        return self.objects.values()

    def items(self) -> ItemsView[str, Device]:  # type: ignore[override]
        self.adopt_all()
        return self.objects.items()

    def adopt_all(self) -> None:
        if self.borrowed:
            with no_gc():   # one copy of many objects, like a whole fork
                for device_id in list(self.borrowed):
                    self._home._adopt(device_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self.objects)

    def __len__(self) -> int:
        return len(self.objects)

    def __repr__(self) -> str:
        return f"Devices({list(self.objects)})"


class GraphCopier:
    """Copies an object graph (a home without its devices, or one device), rewiring every
    reference to the copies; `memo` can be seeded to map objects to existing ones.

    Plain objects (home, rooms, devices, endpoints, servers and their helpers) are copied
    field by field; containers are copied; closures, bound methods and partials that
    capture copied objects (server listeners, builders' power sources, sensor sources)
    are rebuilt around the copies. Server listeners added from outside after the device
    was placed are left behind, as `restore()` would. Values that are immutable by type (numbers, strings,
    enums, frozen dataclasses, trajectories) or by convention (Matter attribute values:
    servers replace them through `set()`, never mutate them) are shared.
    """

    # How each type is copied, decided once per type.
    SHARE, DICT, LIST, METHOD, TUPLE, OBJECT, SERVER, FUNCTION, PARTIAL, SET, RANDOM, DEEP = range(12)
    _kinds: dict[type, int] = {}
    _shared: set[type] = set()  # the types whose kind is SHARE, for C-speed container checks

    def __init__(self, wired: dict[int, int]) -> None:
        self.memo: dict[int, Any] = {}
        self.wired = wired  # id(server) -> listeners to keep (the rest are external)

    def share(self, obj: Any) -> None:
        self.memo[id(obj)] = obj

    @classmethod
    def _kind(cls, t: type) -> int:
        if (issubclass(t, (int, float, str, bytes, type(None), enum.Enum, datetime, frozenset,
                           type, Nullable, ClusterObject, Trajectory, physics.Term))
                or (dataclasses.is_dataclass(t) and t.__dataclass_params__.frozen)):
            kind = cls.SHARE
        else:
            kind = {dict: cls.DICT, list: cls.LIST, types.MethodType: cls.METHOD, tuple: cls.TUPLE,
                    types.FunctionType: cls.FUNCTION, functools.partial: cls.PARTIAL, set: cls.SET,
                    random.Random: cls.RANDOM}.get(t)
            if kind is None:
                plain = hasattr(t, "__dict__") and not hasattr(t, "__slots__")
                kind = cls.SERVER if issubclass(t, ClusterServer) else cls.OBJECT if plain else cls.DEEP
        cls._kinds[t] = kind
        if kind == cls.SHARE:
            cls._shared.add(t)
        return kind

    def copy(self, root: Any) -> Any:
        memo, kinds, kind_of, wired = self.memo, self._kinds, self._kind, self.wired
        all_shared = self._shared.issuperset
        SHARE, DICT, LIST, METHOD, TUPLE, OBJECT, SERVER = (
            self.SHARE, self.DICT, self.LIST, self.METHOD, self.TUPLE, self.OBJECT, self.SERVER)

        def cp(v: Any) -> Any:
            t = type(v)
            kind = kinds.get(t)
            if kind is None:
                kind = kind_of(t)
            if kind == SHARE:
                return v
            done = memo.get(id(v))
            if done is not None:
                return done
            # Below, `x if shared else memo.get(id(x)) or cp(x)` is cp(x) without the call
            # for the common cases (values, and objects already copied).
            if kind == SERVER:
                new = object.__new__(t)
                memo[id(v)] = new
                fields = {k: x if kinds.get(type(x)) == SHARE else memo.get(id(x)) or cp(x)
                          for k, x in v.__dict__.items() if k not in _SERVER_SPECIAL}
                fields["_values"] = v._values.copy()  # attribute values are replaced, never mutated
                fields["listeners"] = [memo.get(id(x)) or cp(x) for x in v.listeners[:wired[id(v)]]]
                fields["event_sink"] = None  # set to the new home's by fork()
                fields["event_listeners"] = []  # observers from outside (nodes) stay behind
                new.__dict__.update(fields)
                return new
            if kind == OBJECT:
                new = object.__new__(t)
                memo[id(v)] = new  # before the fields: the graph has cycles
                new.__dict__.update({k: x if kinds.get(type(x)) == SHARE else memo.get(id(x)) or cp(x)
                                     for k, x in v.__dict__.items()})
                return new
            if kind == DICT:
                if all_shared(map(type, v.values())):
                    return v.copy()
                return {k: x if kinds.get(type(x)) == SHARE else memo.get(id(x)) or cp(x)
                        for k, x in v.items()}
            if kind == LIST:
                if all_shared(map(type, v)):
                    return v.copy()
                return [x if kinds.get(type(x)) == SHARE else memo.get(id(x)) or cp(x) for x in v]
            if kind == METHOD:
                new = memo[id(v)] = types.MethodType(v.__func__, cp(v.__self__))
                return new
            if kind == TUPLE:
                if all_shared(map(type, v)):
                    return v
                items = tuple(cp(x) for x in v)
                return v if all(a is b for a, b in zip(items, v)) else items
            return self._other(kind, v, cp)

        return cp(root)

    def _other(self, kind: int, v: Any, cp: Callable[[Any], Any]) -> Any:
        if kind == self.FUNCTION:
            if not v.__closure__:
                return v
            cells = tuple(types.CellType() for _ in v.__closure__)
            new = types.FunctionType(v.__code__, v.__globals__, v.__name__, v.__defaults__, cells)
            new.__kwdefaults__ = v.__kwdefaults__
            self.memo[id(v)] = new
            for old, cell in zip(v.__closure__, cells):
                try:
                    cell.cell_contents = cp(old.cell_contents)
                except ValueError:  # an empty cell stays empty
                    pass
            return new
        if kind == self.PARTIAL:
            return functools.partial(cp(v.func), *(cp(a) for a in v.args),
                                     **{k: cp(x) for k, x in v.keywords.items()})
        if kind == self.SET:
            return {cp(x) for x in v}
        if kind == self.RANDOM:
            rng = random.Random(0)   # not Random(): seeding from the OS is slow, and overwritten
            rng.setstate(v.getstate())
            self.memo[id(v)] = rng
            return rng
        return copy.deepcopy(v, self.memo)
