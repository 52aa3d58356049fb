"""One change stream over a Home: what the live views (the web page, MQTT) are told.

It is the mechanism a Matter node reports with (twin/node/im/): a listener on every device's
cluster servers hears when a stored value changes, an event listener hears every emitted event.
Values the simulation derives per tick fire no listener: a room's temperature, humidity, PM10
and illuminance, and the attributes a server names in `derived` (a level mid-transition, a
countdown). Each subscriber samples those at the interval it asked for, as a Matter
subscription's min interval bounds its reports, and is told only those that moved.

Nothing is polled device by device and nothing is kept on the side: a listener records which
attribute changed (a key), and its value is read when the subscriber takes its batch, so a batch
always carries the latest value (as a Matter report does). The only values remembered are the
last samples of derived values, to tell whether they moved, as the IM does.

Callers hold the home's lock around `subscribe`, `take` and `close` (listeners fire inside it).
The wall time a subscriber passes to `take` only paces its sampling; nothing here reads a clock.
"""
from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from typing import Any

from chip.clusters.ClusterObjects import ClusterEvent

from clusters.base import ClusterServer
from clusters.values import to_json

#: Room quantities in natural units (Room's properties), and the resolution a view shows.
ROOM_UNITS = {"temperature": "°C", "humidity": "%RH", "illuminance": "lux", "pm10": "µg/m³"}
ROOM_DIGITS = {"temperature": 2, "humidity": 2, "illuminance": 0, "pm10": 1}
#: Fastest sampling a subscriber may ask for: one tick of wall time at speed 1.
MIN_SAMPLE_S = 0.1

#: ("attribute", device, endpoint, cluster, attribute) / ("event", device, endpoint, cluster, event) /
#: ("room", room, quantity) / ("message", topic): news from outside the home (`publish`)
Key = tuple[Any, ...]


@dataclasses.dataclass(frozen=True)
class Change:
    """One changed value. `key` says what (see `Key`); `value` is JSON (an event's fields)."""
    key: Key
    value: Any

    def to_json(self) -> dict[str, Any]:
        kind = self.key[0]
        if kind == "room":
            return {"kind": kind, "room": self.key[1], "quantity": self.key[2], "value": self.value,
                    "unit": ROOM_UNITS[self.key[2]]}
        if kind == "message":
            return {"kind": kind, "topic": self.key[1], "value": self.value}
        out = {"kind": kind, "device": self.key[1], "endpoint": self.key[2], "cluster": self.key[3],
               "attribute" if kind == "attribute" else "event": self.key[4], "value": self.value}
        return out


@dataclasses.dataclass(frozen=True)
class Batch:
    """What one `take` hands a subscriber: the virtual time it was read at, and the changes."""
    tick: int
    time: str
    changes: list[Change]


def room_value(room: Any, quantity: str) -> float:
    value = round(float(getattr(room, quantity)), ROOM_DIGITS[quantity])
    return value + 0.0   # no -0.0


class Subscription:
    """One subscriber's view of the stream: what changed since its last `take`."""

    def __init__(self, stream: ChangeStream, sample_s: float):
        if not sample_s >= MIN_SAMPLE_S:
            raise ValueError(f"sample interval {sample_s!r} s is below the minimum {MIN_SAMPLE_S} s")
        self.stream = stream
        self.sample_s = float(sample_s)
        self.dirty: dict[Key, None] = {}          # attributes changed (insertion order kept)
        self.events: list[Change] = []
        self.rooms_dirty: set[str] = set()        # rooms whose inputs changed: sample them now
        self._sampled: dict[Key, Any] = {}        # derived value -> last value sampled
        self._next_sample: float | None = None
        self._samples = 0
        self.closed = False

    def take(self, wall_now: float) -> Batch | None:
        """The changes since the last call (None if nothing changed). Derived values and rooms
        are sampled when `sample_s` has passed (wall seconds, the caller's clock), and the rooms
        of devices that changed at once."""
        home = self.stream.home
        changes: list[Change] = []
        dirty, self.dirty = self.dirty, {}
        for key in dirty:
            value = self.stream.read(key)
            if value is not _GONE:
                changes.append(Change(key, value))
        changes += self.events
        self.events = []
        due = self._next_sample is None or wall_now >= self._next_sample
        rooms = list(home.rooms) if due else [r for r in self.rooms_dirty if r in home.rooms]
        self.rooms_dirty = set()
        for room_id in rooms:
            room = home.rooms[room_id]
            for quantity in ROOM_UNITS:
                changes += self._moved(("room", room_id, quantity), room_value(room, quantity))
        if due:
            self._next_sample = wall_now + self.sample_s
            self._samples += 1
            for key, server, name, seconds in self.stream.derived():
                every = max(1, round(seconds / self.sample_s))
                if self._samples % every == 0 or key not in self._sampled:
                    try:
                        value = to_json(server.get(name))
                    except Exception:   # a derived value that cannot be read now is not news
                        continue
                    changes += self._moved(key, value)
        if not changes:
            return None
        return Batch(home.clock.tick, home.clock.format(), changes)

    def _moved(self, key: Key, value: Any) -> list[Change]:
        if key in self._sampled and self._sampled[key] == value:
            return []
        self._sampled[key] = value
        return [Change(key, value)]

    def close(self) -> None:
        self.closed = True
        if self in self.stream.subscriptions:
            self.stream.subscriptions.remove(self)


class ChangeStream:
    """Listens to a home's devices once; hands each subscriber what changed."""

    def __init__(self, home: Any):
        self.home = home
        self.subscriptions: list[Subscription] = []
        self._wired: dict[int, tuple[ClusterServer, str]] = {}   # id(server) -> (server, device id)
        self._derived: list[tuple[Key, ClusterServer, str, float]] | None = None
        self.rewire()

    # ---- wiring -------------------------------------------------------------------------
    def rewire(self) -> None:
        """Listen to the servers of devices added since (and forget removed ones); call after
        the home's devices change."""
        current: dict[int, tuple[ClusterServer, str]] = {}
        for device in self.home.devices.values():
            for server in device.servers():
                if server.in_snapshot:   # node-only servers (fabrics, ACLs) are not the home's state
                    current[id(server)] = (server, device.id)
        for sid, (server, _) in self._wired.items():
            if sid not in current:
                self._unlisten(server)
        for sid, (server, _) in current.items():
            if sid not in self._wired:
                server.listeners.append(self._on_change)
                server.event_listeners.append(self._on_event)
        self._wired = current
        self._derived = None

    def _unlisten(self, server: ClusterServer) -> None:
        if self._on_change in server.listeners:
            server.listeners.remove(self._on_change)
        if self._on_event in server.event_listeners:
            server.event_listeners.remove(self._on_event)

    def close(self) -> None:
        for server, _ in self._wired.values():
            self._unlisten(server)
        self._wired = {}
        for sub in list(self.subscriptions):
            sub.close()

    def subscribe(self, sample_s: float = 1.0) -> Subscription:
        sub = Subscription(self, sample_s)
        self.subscriptions.append(sub)
        return sub

    def publish(self, topic: str, value: Any) -> None:
        """News about the home that no cluster server holds (a lab session's calls, a real
        device's reports, divergences): handed to every subscriber with its next batch, like
        an event, and kept nowhere else. Inside the home's lock; `value` is JSON."""
        change = Change(("message", topic), value)
        for sub in self.subscriptions:
            sub.events.append(change)

    # ---- listeners (inside the home's lock) -------------------------------------------
    def _key(self, server: ClusterServer, kind: str, name: str) -> Key | None:
        wired = self._wired.get(id(server))
        if wired is None or server.endpoint is None:
            return None
        return (kind, wired[1], server.endpoint.id, server.name, name)

    def _on_change(self, server: ClusterServer, name: str) -> None:
        if not self.subscriptions or name in server.changes_omitted:
            return
        key = self._key(server, "attribute", name)
        if key is None:
            return
        room = self.home.room_of(key[1])
        for sub in self.subscriptions:
            sub.dirty[key] = None
            sub.rooms_dirty.add(room)   # illuminance follows a light at once

    def _on_event(self, server: ClusterServer, event: ClusterEvent) -> None:
        if not self.subscriptions:
            return
        key = self._key(server, "event", type(event).__name__)
        if key is None:
            return
        change = Change(key, to_json(event))
        for sub in self.subscriptions:
            sub.events.append(change)

    # ---- reading ----------------------------------------------------------------------
    def read(self, key: Key) -> Any:
        """The current JSON value of an attribute key (`_GONE` if its device went away)."""
        _, device_id, endpoint, cluster, name = key
        device = self.home.devices.get(device_id)
        if device is None or endpoint not in device.endpoints:
            return _GONE
        try:
            return to_json(device.endpoints[endpoint].server(cluster).get(name))
        except Exception:   # a server that cannot answer now: the next change will tell
            return _GONE

    def derived(self) -> list[tuple[Key, ClusterServer, str, float]]:
        """(key, server, attribute, seconds between samples) of each derived attribute: a
        server's quieter `sample_seconds` (Q quality) are honoured, as the Matter node does."""
        if self._derived is None:
            self._derived = []
            for server, device_id in self._wired.values():
                names = sorted(server.derived.intersection(server.attributes) - server.changes_omitted)
                for name in names:
                    key = ("attribute", device_id, server.endpoint.id, server.name, name)
                    self._derived.append((key, server, name, server.sample_seconds.get(name, 0)))
        return self._derived

    def attributes(self) -> Iterator[Change]:
        """Every device attribute's current value (a view's starting point), globals excluded."""
        for server, device_id in self._wired.values():
            for name in server.attributes:
                key = ("attribute", device_id, server.endpoint.id, server.name, name)
                value = self.read(key)
                if value is not _GONE:
                    yield Change(key, value)


class _Gone:
    def __repr__(self) -> str:
        return "<gone>"


_GONE: Any = _Gone()
