"""The Home: rooms, devices, the virtual clock, physics, workflows, snapshots.

Device state lives only in the cluster servers; room state only here (one physics
trajectory per room variable, see twin/physics.py). Time moves only through `step`
(tick by tick, the reference path) and `advance`/`run_until` (event-driven
fast-forward). Both run the same per-tick settle, in this order:

1. servers' discrete events due now (`advance_to`), by device id, endpoint, cluster id;
2. workflows due now, by start tick then id; then automations whose trigger fires now, by
   id (twin/automations.py; rounds of 1-2 repeat while anything ran);
3. physics: rooms whose inputs changed (server listeners mark them dirty) or whose
   thermostat condition flips now are re-anchored, if their terms actually changed.

Fast-forward jumps straight to the next tick where any of these can happen (or the
target), so both paths reach byte-identical snapshots.

One job, hence one module past ~700 lines: the Home is the one object that owns the home's state
and moves it (every change, from a tool, a node, a hand or the clock, goes through it). What
stands on its own lives beside it: the copy-on-write copier (twin/fork.py), physics, workflows,
automations, faults, sensors and the weather.
"""
from __future__ import annotations

import copy
import dataclasses
import functools
import importlib.resources
import inspect
import random
import weakref
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any

from chip.clusters import Objects as Clusters
from chip.clusters.ClusterObjects import ClusterEvent
from pydantic import ValidationError

from clusters.base import ClusterServer
from clusters.clone import DumpError, Product, load_product, product_of, product_type, read_dump
from clusters.device import Device, DeviceType
from clusters.devices import DEVICE_TYPES, create_device
from clusters.lazy_objects import CLUSTER_ID
from clusters.status import MatterError
from clusters.values import to_json
from twin import physics, sensors
from twin.automations import Automations
from twin.clock import DEFAULT_START, TICKS_PER_SECOND, VirtualClock, parse_time
from twin.faults import FaultEngine
from twin.fork import Devices, GraphCopier, no_gc
from twin.layout import category_of
from twin.physics import VARIABLES, Trajectory
from twin.schema import HomeSpec, UnknownIdError, UserFileError, first_problem, parse_file
from twin.weather import Weather, WeatherSpec
from twin.workflows import StepFailed, Workflows

SNAPSHOT_FORMAT = 1
#: A pressure sensor's reading in a home without weather (kPa, the standard atmosphere).
STANDARD_PRESSURE_KPA = 101.325
#: Rounds of (server events, workflows) allowed at one tick before we call it a loop.
_MAX_ROUNDS = 1000

__all__ = ["Home", "Room", "UserFileError", "UnknownIdError", "InitialAttributeError"]


@dataclasses.dataclass(frozen=True)
class _DeviceMeta:
    """Where a device sits and how it was built; immutable, so forks share it."""
    type: str
    room: str
    name: str | None
    options: dict[str, Any]  # never mutated; handed out as copies
    tags: tuple[str, ...] = ()
    category: str | None = None   # None: the type's (twin/layout.py)

    def to_json(self) -> dict[str, Any]:
        # Tags and category only when set: snapshots of homes without them stay as they were.
        return {"type": self.type, "room": self.room, "name": self.name,
                "options": copy.deepcopy(self.options),
                **({"tags": list(self.tags)} if self.tags else {}),
                **({"category": self.category} if self.category else {})}


class InitialAttributeError(ValueError):
    """An initial attribute value that does not fit; `key` is "<ep>/<Cluster>/<Attribute>"."""

    def __init__(self, key: str, message: str):
        super().__init__(f"{key}: {message}")
        self.key = key
        self.message = message


class Room:
    """Read-only view of a room; values are at the home's current tick, natural units."""

    def __init__(self, home: Home, room_id: str, name: str, daylight_lux: float,
                 trajectories: dict[str, Trajectory], indoor_lux: float = 0.0,
                 floor: int = 0, kind: str | None = None, parent: str | None = None):
        self._home = home
        self.id = room_id
        self.name = name
        self.daylight_lux = float(daylight_lux)
        self.indoor_lux = float(indoor_lux)
        #: Layout: storey (0 ground), room type, and the room it lies inside or opens off.
        self.floor = int(floor)
        self.kind = kind
        self.parent = parent
        self._traj = trajectories

    def layout(self) -> dict[str, Any]:
        """{"floor", "kind", "parent"}, each only when set (views and snapshots use it)."""
        return {k: v for k, v in (("floor", self.floor), ("kind", self.kind), ("parent", self.parent)) if v}

    @property
    def temperature(self) -> float:
        """°C"""
        return self._traj["temperature"].value(self._home.clock.tick)

    @property
    def humidity(self) -> float:
        """%RH"""
        return self._traj["humidity"].value(self._home.clock.tick)

    @property
    def pm10(self) -> float:
        """µg/m³"""
        return self._traj["pm10"].value(self._home.clock.tick)

    @property
    def illuminance(self) -> float:
        """lux"""
        daylight = self.daylight_lux * self._home.outdoor("daylight", 1.0)
        lights_and_daylight = physics.illuminance(daylight, self._home.devices_to_read(self.id),
                                                  self._home.coefficients)
        return lights_and_daylight + self.indoor_lux

    def state(self) -> dict[str, float]:
        return {"temperature": self.temperature, "humidity": self.humidity,
                "illuminance": self.illuminance, "pm10": self.pm10}

    def terms(self) -> dict[str, list[dict[str, Any]]]:
        """The physics terms acting now (for explanations and debugging)."""
        return {var: [{"source": t.source, "k": t.k, "target": t.target, "active": on}
                      for t, on in zip(tr.terms, tr.active)] for var, tr in self._traj.items()}

    def __repr__(self) -> str:
        return f"Room({self.id!r}, {self.state()})"


class Home:
    """A simulated home. Build one with `load`, `default`, `from_spec` or `restore`
    (or `Home(...)` plus `add_room`/`add_device`); move time with `step`, `advance` or
    `run_until`; copy it with `snapshot`/`restore` or `fork`."""

    def __init__(self, name: str = "home", seed: int = 0, start: datetime = DEFAULT_START,
                 ambient: dict[str, float] | None = None, physics_overrides: dict[str, Any] | None = None):
        self.name = name
        #: This home's calibrated coefficients (home files' `physics:`), and the table in use.
        self.physics_overrides = copy.deepcopy(physics_overrides or {})
        self.coefficients = physics.with_overrides(self.physics_overrides)
        self.seed = int(seed)
        self.rng = random.Random(self.seed)  # the only randomness source
        self.clock = VirtualClock(start)
        self.ambient = {"temperature": 26.0, "humidity": 55.0, "pm10": 25.0, **(ambient or {})}
        self.rooms: dict[str, Room] = {}
        self.devices = Devices(self)
        self.events: list[dict[str, Any]] = []
        self.workflows = Workflows(self.clock, self._run_step)
        self.automations = Automations(self)
        self.faults = FaultEngine(self)
        self._meta: dict[str, _DeviceMeta] = {}
        #: Where a switch's commands to Binding targets on other nodes go (device id, sends): the
        #: node manager sets it when the devices are served as Matter nodes; None: in process only.
        self.bound_sender: Callable[[str, list[dict[str, Any]]], None] | None = None
        #: Device types cloned from real products (home files' `products`), by type key.
        self.products: dict[str, DeviceType] = {}
        self._room_devices: dict[str, list[str]] = {}
        self._timed: dict[str, list[ClusterServer]] | None = {}  # see _timed_servers; None: rebuild
        # id(server) -> how many of its listeners belong to the device and the home; any
        # added later (a Matter node's reporting, say) stay behind when the home is forked.
        self._wired: dict[int, int] = {}
        self._borrowers: weakref.WeakSet[Home] = weakref.WeakSet()  # forks that may share our devices
        self._dirty: set[str] = set()                     # rooms whose physics inputs changed
        self._next_flip: int | None = None
        # One bound-method object each, shared by every server (forks remap it once).
        #: Residents' whereabouts: person -> room id (`set_presence`); occupancy sensors and the
        #: occupants' heat follow it.
        self.presence: dict[str, str] = {}
        #: device id -> the contact sensors mounted on it; room id -> its occupancy, smoke and
        #: freeze sensors (twin/sensors.py). Both are derived from the devices as they are placed.
        self.mounts: dict[str, list[str]] = {}
        self.watchers: dict[str, list[str]] = {}
        #: The outdoor weather (twin/weather.py), or None: the constant `ambient` (SimuHome's homes).
        self.weather: Weather | None = None
        self._weather_tick: int | None = None       # the next hour at which the weather changes
        self._listener = self._on_change
        self._event_sink = self._on_event
        self._intercept = self.faults.intercept

    # ---- building ------------------------------------------------------------------
    def add_room(self, room_id: str, name: str | None = None, temperature: float = 24.0,
                 humidity: float = 50.0, pm10: float = 20.0, daylight_lux: float = 300.0,
                 indoor_lux: float = 0.0, floor: int = 0, kind: str | None = None,
                 parent: str | None = None) -> Room:
        if room_id in self.rooms or room_id in self.devices:
            raise ValueError(f"id {room_id!r} is already used in this home")
        if parent is not None:
            self._check_room(parent)
        initial = {"temperature": temperature, "humidity": humidity, "pm10": pm10}
        terms = physics.room_terms([], self.ambient, self.coefficients)
        room = Room(self, room_id, name or room_id, daylight_lux,
                    {v: Trajectory(initial[v], self.clock.tick, terms[v]) for v in VARIABLES}, indoor_lux,
                    floor, kind, parent)
        self.rooms[room_id] = room
        self._room_devices[room_id] = []
        self._refresh_next_flip()
        return room

    def add_product(self, key: str, product: Product) -> DeviceType:
        """Make a product cloned from a node dump a device type of this home (`key`)."""
        if key in DEVICE_TYPES:
            raise ValueError(f"product key {key!r} is a built-in device type")
        self.products[key] = product_type(key, product)
        return self.products[key]

    def add_device(self, device_id: str, type_key: str, room_id: str, name: str | None = None,
                   options: dict[str, Any] | None = None,
                   attributes: dict[str, Any] | None = None,
                   tags: list[str] | tuple[str, ...] = (), category: str | None = None) -> Device:
        """Create a device of a registered type in a room, with optional initial attributes.

        Raises MatterError for an unknown type, InitialAttributeError for a bad attribute;
        the home is unchanged on error.
        """
        if device_id in self.devices or device_id in self.rooms:
            raise ValueError(f"id {device_id!r} is already used in this home")
        self._check_room(room_id)
        options = dict(options or {})
        check_options(type_key, options)
        device = _create(device_id, self.products.get(type_key, type_key), self.rng, name,
                         _with_rooms(type_key, options, self.rooms))
        for server in device.servers():
            server.clock = self.clock  # initial values may start anchored behaviour
        for key, value in (attributes or {}).items():
            _apply_initial(device, key, value)
        mounted = options.get("mounted_on")
        if mounted is not None:
            target = self.devices.get(mounted) if isinstance(mounted, str) else None
            if target is None or not sensors.mountable(target):
                raise ValueError(f"mounted_on: {mounted!r} is not a door lock with a door sensor or a window "
                                 "covering of this home (list the device before its contact sensor)")
            device.endpoint(1).server("BooleanState").set_state(sensors.is_closed(target))
        if sensors.watches_room(device):
            sensors.read_room(self, device, room_id)   # its first reading, before it is wired: no event
        if self.weather is not None and sensors.boolean_kind(device) == "rain":
            device.endpoint(1).server("BooleanState").set_state(self.outdoor("raining"))
        self._place(device, room_id, name, options, tuple(tags), category)
        if device.type.key == "solar_power":
            self._wire_solar()
        return device

    def _place(self, device: Device, room_id: str, name: str | None, options: dict[str, Any],
               tags: tuple[str, ...] = (), category: str | None = None) -> None:
        for server in device.servers():
            server.clock = self.clock
            server.event_sink = self._event_sink
            server.listeners.append(self._listener)
            self._wired[id(server)] = len(server.listeners)
            quantity = physics.sensor_quantity(device, server)
            if quantity is not None:
                server.sensor_source = functools.partial(self.sensed, device.id, room_id, quantity)
            elif server.id == CLUSTER_ID.PressureMeasurement and sensors.is_ours(server, "PressureMeasurement") \
                    and server.sensor_source is None:
                server.sensor_source = functools.partial(self.outdoor, "pressure", STANDARD_PRESSURE_KPA)
        device.interceptor = self._intercept   # faults: failing, stuck, unreachable calls
        self.devices[device.id] = device
        self._meta[device.id] = _DeviceMeta(device.type.key, room_id, name, copy.deepcopy(options),
                                            tags, category)
        self._room_devices[room_id].append(device.id)
        if options.get("mounted_on") is not None:
            self.mounts.setdefault(options["mounted_on"], []).append(device.id)
            # on a door the lock's DoorState already trades air with outside: the contact adds none
            device.endpoint(1).server("BooleanState").on_door = sensors.has_door(self.devices[options["mounted_on"]])
        if sensors.watches_room(device):
            self.watchers.setdefault(room_id, []).append(device.id)
        self._timed = None
        self._dirty.add(room_id)

    @property
    def _timed_servers(self) -> dict[str, list[ClusterServer]]:
        """device id -> its servers whose class can schedule events of its own (overrides
        `next_event_tick`), in settle order (device id, endpoint id, cluster id): the only
        ones stepping asks, once per tick (most servers never schedule anything, and a home
        of a thousand devices has thousands of them). A borrowed device's are its lender's
        objects (asking them changes nothing); `_adopt` swaps in the copy's."""
        if self._timed is None:
            objects = self.devices.objects
            self._timed = {device_id: servers for device_id in sorted(objects)
                           if (servers := _timed_of(objects[device_id]))}
        return self._timed

    # ---- callbacks from servers ------------------------------------------------------
    def _on_change(self, server: ClusterServer, attribute: str) -> None:
        device_id = server.endpoint.device.id
        self._dirty.add(self._meta[device_id].room)
        if device_id in self.automations.watched:
            self.automations.touched(device_id)
        if device_id in self.mounts:
            sensors.follow(self, device_id)

    # ---- residents and scenario events ----------------------------------------------------
    def occupants(self, room_id: str) -> int:
        """How many residents are in the room now."""
        return sum(1 for room in self.presence.values() if room == room_id)

    def set_presence(self, person: str, room_id: str | None) -> None:
        """Where a resident is now (None: away from home). Occupancy sensors follow at once; the
        occupants' heat from the next physics update. UnknownIdError for an unknown room."""
        if not isinstance(person, str) or not person:
            raise ValueError(f"person: a non-empty name, got {person!r}")
        if room_id is not None:
            self._check_room(room_id)
        before = self.presence.get(person)
        if before == room_id:
            return
        if room_id is None:
            del self.presence[person]
        else:
            self.presence[person] = room_id
        for room in (before, room_id):
            if room is not None:
                self._dirty.add(room)
                sensors.refresh_room(self, room)

    def mounted_on(self, device_id: str) -> str | None:
        """The door lock or covering a contact sensor is mounted on, if any."""
        return self._meta[device_id].options.get("mounted_on") if device_id in self._meta else None

    # ---- the outdoor weather -------------------------------------------------------------
    def outdoor(self, quantity: str, default: Any = None) -> Any:
        """The weather's `quantity` now (twin/weather.py QUANTITIES), or `default` without weather."""
        return default if self.weather is None else self.weather.at(self.clock.now)[quantity]

    def set_weather(self, spec: WeatherSpec | dict[str, Any] | None) -> None:
        """Give the home an outdoor weather (a WeatherSpec or its dict; None: back to the constant
        ambient). ValueError for a bad spec, nothing changed."""
        if spec is None:
            self.weather, self._weather_tick = None, None
            self._wire_solar()
            return
        try:
            weather = Weather(spec if isinstance(spec, WeatherSpec) else WeatherSpec.model_validate(spec), self.seed)
        except ValidationError as exc:
            path, problem = first_problem(exc, "weather")
            raise ValueError(f"weather.{path}: {problem}" if path != "weather" else f"weather: {problem}") from None
        self.weather = weather
        self._apply_weather(self.clock.tick)
        self._wire_solar()

    def pin_weather(self, values: dict[str, Any]) -> dict[str, Any]:
        """Hold weather quantities (`{"temperature": 35}`; null releases one) from now on; returns
        the weather now. ValueError for a bad value, or a home without weather."""
        if self.weather is None:
            raise ValueError("this home has no weather; give it one (home file `weather:`) first")
        self.weather.set(values)
        self._apply_weather(self.clock.tick)
        self._wire_solar()
        return self.weather.at(self.clock.now)

    def _wire_solar(self) -> None:
        """Solar inverters' sun is the weather's daylight (twin/weather.py: hour by hour, a third
        in rain), or without weather a clear day's. Each gets a frozen copy of the weather: a pin
        or a new weather wires them again, and a fork's pin cannot reach its parent's."""
        sky: Callable[[datetime], float] | None = None
        if self.weather is not None:
            frozen = Weather.from_state(self.weather.state(), self.seed)
            sky = lambda when: float(frozen.at(when)["daylight"])  # noqa: E731
        for device in self.devices.values():
            if device.type.key == "solar_power":
                device.endpoint(1).server("ElectricalEnergyMeasurement").power_source.sky = sky

    def _apply_weather(self, tick: int) -> None:
        """The hour's weather becomes the rooms' outside (each room re-anchors), rain sensors follow."""
        assert self.weather is not None
        now = self.clock.time_at(tick)
        outside = self.weather.at(now)
        self.ambient = {**self.ambient, "temperature": outside["temperature"], "humidity": outside["humidity"]}
        self._dirty.update(self.rooms)
        self._weather_tick = self.clock.tick_at(self.weather.next_change(now))
        sensors.rain_changed(self, outside["raining"])

    def device_event(self, device_id: str, event: str, value: Any = None) -> None:
        """A scenario event on a device (a door opens, a leak, smoke, a keypad entry; see
        twin/sensors.py `apply_event`). ValueError says what was wrong."""
        sensors.apply_event(self, device_id, event, value)

    def _on_event(self, server: ClusterServer, event: ClusterEvent) -> None:
        self.events.append({
            "tick": self.clock.tick, "time": self.clock.format(),
            "device": server.endpoint.device.id, "endpoint": server.endpoint.id,
            "cluster": server.name, "event": type(event).__name__, "fields": to_json(event)})

    def sensed(self, device_id: str, room_id: str, quantity: str) -> float:
        """What a device's sensor measures of its room: the true value through its faults."""
        return self.faults.sense(device_id, quantity, getattr(self.rooms[room_id], quantity))

    def mark_dirty(self, device_id: str) -> None:
        """The device changed without its listeners hearing (a power-up): re-derive its room."""
        self._dirty.add(self._meta[device_id].room)

    # ---- lookups -------------------------------------------------------------------
    @property
    def now(self) -> datetime:
        return self.clock.now

    def _check_room(self, room_id: str) -> None:
        if room_id not in self.rooms:
            raise UnknownIdError(f"no room {room_id!r}; rooms: " + ", ".join(self.rooms))

    def device(self, device_id: str) -> Device:
        try:
            return self.devices[device_id]
        except (KeyError, TypeError):
            raise UnknownIdError(f"no device {device_id!r}; devices: "
                                 + ", ".join(sorted(self.devices))) from None

    def _run_step(self, tool: str, args: dict[str, Any]) -> Any:
        """Run one workflow step on this home's devices, through `Device.invoke`/`write`
        like the tools and the Matter node; a refusal is the step's recorded failure."""
        try:
            device = self.device(args["device_id"])
            if tool == "execute_command":
                response = device.invoke(args["cluster_id"], args["command_id"], args["args"],
                                         endpoint_id=args["endpoint_id"])
                return to_json(response) if response is not None else None
            device.write(args["cluster_id"], args["attribute_id"], args["value"],
                         endpoint_id=args.get("endpoint_id"))
            return None
        except (MatterError, UnknownIdError) as exc:
            raise StepFailed(str(exc)) from None

    def room_of(self, device_id: str) -> str:
        self._check_device(device_id)
        return self._meta[device_id].room

    def _check_device(self, device_id: str) -> None:
        """UnknownIdError unless `device_id` is a device here (without copying a borrowed one)."""
        if not isinstance(device_id, str) or device_id not in self.devices:
            self.device(device_id)

    def devices_in(self, room_id: str) -> list[Device]:
        self._check_room(room_id)
        objects, borrowed = self.devices.objects, self.devices.borrowed   # devices[d], without a call per device
        return [self._adopt(d) if d in borrowed else objects[d] for d in self._room_devices[room_id]]

    def devices_to_read(self, room_id: str) -> list[Device]:
        """`devices_in` for reading only: a borrowed device as lent, while its lender's clock is
        at ours (what moves with time, a level in transition, is read on the lender's clock), so
        a read copies nothing; else our own copy. Never change what this returns."""
        self._check_room(room_id)
        objects, borrowed, tick = self.devices.objects, self.devices.borrowed, self.clock.tick
        return [self._adopt(d) if d in borrowed and borrowed[d].clock.tick != tick else objects[d]
                for d in self._room_devices[room_id]]

    def device_info(self, device_id: str) -> dict[str, Any]:
        """{"id", "type", "label", "room", "name", "options"} for one device, plus "tags" and
        "category" where the home file gave them."""
        self._check_device(device_id)
        meta = self._meta[device_id].to_json()
        return {"id": device_id, "label": meta["name"] or self.devices.objects[device_id].type.label, **meta}

    def tags_of(self, device_id: str) -> tuple[str, ...]:
        self._check_device(device_id)
        return self._meta[device_id].tags

    def category_of(self, device_id: str) -> str:
        """The device's category: its own, else its type's Matter device library chapter."""
        self._check_device(device_id)
        meta = self._meta[device_id]
        return meta.category or category_of(self.devices.objects[device_id].type)

    def rooms_inside(self, room_id: str) -> list[str]:
        """Ids of the rooms inside (or opening off) `room_id`, nested ones included, in home order."""
        self._check_room(room_id)
        inside, grew = {room_id}, True
        while grew:   # a file may list a child before its parent
            grew = False
            for rid, room in self.rooms.items():
                if room.parent in inside and rid not in inside:
                    inside.add(rid)
                    grew = True
        return [rid for rid in self.rooms if rid in inside and rid != room_id]

    # ---- a hand on a device ------------------------------------------------------------
    def press(self, device_id: str, action: str = "press", presses: int = 1, hold_seconds: float = 0.2,
              position: int = 1, value: Any = None) -> dict[str, Any]:
        """A hand operates a switch: a Generic Switch's button (`presses`, each held
        `hold_seconds`; a latching switch moves to `position`), or a light switch's `action`
        (toggle, on, off, brighter, dimmer, hue, color_temperature with `value`), whose
        commands go to the devices the switch is bound to (its `bound_to` option), through
        their servers like any caller's. Answers what was sent and each target's result;
        ValueError/MatterError for a device that is no switch or an action it lacks."""
        device = self.device(device_id)
        for ep in device.endpoints.values():
            server = ep.servers.get(CLUSTER_ID.Switch)
            if server is not None and action == "press":
                server.press(presses=presses, hold_seconds=hold_seconds, position=position)
                self._settle()
                return {"device": device_id, "endpoint": ep.id, "presses": presses, "hold_seconds": hold_seconds}
        controller = next((ep for ep in device.endpoints.values() if CLUSTER_ID.Binding in ep.servers
                           and CLUSTER_ID.OnOff in ep.client_clusters), None)
        if controller is None:
            raise ValueError(f"device {device_id!r} is not a switch a hand can press "
                             "(a Generic Switch, or an On/Off, Dimmer or Color Dimmer Switch)")
        from clusters.switches import controller_commands  # here: it builds the switch clusters' model
        commands = controller_commands(controller.client_clusters, action, value)
        results = []
        for target in self._meta[device_id].options.get("bound_to") or []:
            target_id, _, endpoint = target.partition(":")
            for cluster, command, fields in commands:
                try:
                    self.device(target_id).invoke(cluster, command, fields,
                                                  endpoint_id=int(endpoint) if endpoint else None)
                    results.append({"target": target, "command": f"{cluster}.{command}", "status": "SUCCESS"})
                except (MatterError, UnknownIdError, ValueError) as exc:
                    results.append({"target": target, "command": f"{cluster}.{command}", "error": str(exc)})
        remote = self._remote_sends(controller, commands)
        if remote:
            if self.bound_sender is not None:
                self.bound_sender(device_id, remote)
            results += [{"target": f"node {s['node']:#x}:{s['endpoint']}", "command": f"{s['cluster']}.{s['command']}",
                         "status": "QUEUED" if self.bound_sender is not None else "NOT SERVED OVER MATTER"}
                        for s in remote]
        self._settle()
        return {"device": device_id, "action": action, "sent": results}

    @staticmethod
    def _remote_sends(controller: Any, commands: list[tuple[str, str, dict[str, Any]]]) -> list[dict[str, Any]]:
        """The commands for the Binding entries (written over Matter) that name a node and
        endpoint, each entry's optional cluster narrowing what goes to it. Group entries are not
        sent (no group messaging yet)."""
        sends = []
        for target in controller.servers[CLUSTER_ID.Binding].get("Binding"):
            if target.node is None or target.endpoint is None:
                continue
            for cluster, command, fields in commands:
                if target.cluster is not None and target.cluster != getattr(CLUSTER_ID, cluster):
                    continue
                sends.append({"fabric_index": target.fabricIndex, "node": target.node, "endpoint": target.endpoint,
                              "cluster": cluster, "command": command, "fields": fields})
        return sends

    #: A hand's actions on devices (`hand`), and the arguments each takes.
    HAND_ACTIONS = {"press": ("presses", "hold_seconds", "position"), "toggle": (), "on": (), "off": (),
                    "brighter": (), "dimmer": (), "hue": ("value",), "color_temperature": ("value",),
                    "plug_in": ("capacity_kwh", "soc_percent", "target_percent"), "unplug": (),
                    "draw_water": ("litres",),
                    # doors, locks and sensors (twin/sensors.py apply_event)
                    "open": (), "close": (), "detect": (), "clear": (), "smoke": ("level",), "co": ("level",),
                    "keypad": ("op", "pin"), "manual": ("op",), "flow": ("m3_per_h",)}

    def hand(self, device_id: str, action: str, **args: Any) -> dict[str, Any]:
        """A resident's hand on a device (one entry for HTTP and scripts): press a switch or a
        light switch's action (`press`), plug a car into a charger or unplug it, draw hot water;
        open or close a door, enter a PIN at a lock's keypad, and the scenario events of sensors
        (a leak, smoke, CO: `device_event`).
        ValueError naming what is accepted for an unknown action or argument; MatterError from
        the device for a state it cannot do it in."""
        if action not in self.HAND_ACTIONS:
            raise ValueError(f"unknown action {action!r}; accepted: {', '.join(self.HAND_ACTIONS)}")
        unknown = sorted(set(args) - set(self.HAND_ACTIONS[action]))
        if unknown:
            raise ValueError(f"action {action!r} takes {', '.join(self.HAND_ACTIONS[action]) or 'no arguments'}; "
                             f"not {', '.join(unknown)}")
        if action == "plug_in":
            self.plug_in_ev(device_id, **args)
        elif action == "unplug":
            self.unplug_ev(device_id)
        elif action == "draw_water":
            self.draw_hot_water(device_id, **args)
        elif action in sensors.EVENTS:
            names = self.HAND_ACTIONS[action]
            value = dict(args) if action == "keypad" else args.get(names[0]) if names else None
            sensors.apply_event(self, device_id, action, value)
        else:
            return self.press(device_id, action, **args)
        return {"device": device_id, "action": action}

    def _server_of(self, device_id: str, cluster: Any) -> Any:
        server = self.device(device_id).locate(cluster)
        server.changing()
        return server

    def plug_in_ev(self, device_id: str, capacity_kwh: float = 60.0, soc_percent: float = 20.0,
                   target_percent: float = 80.0) -> None:
        """A car is plugged into an EV charger (it charges once the charger is enabled)."""
        self._server_of(device_id, Clusters.EnergyEvse).plug_in(capacity_kwh, soc_percent, target_percent)
        self._settle()

    def unplug_ev(self, device_id: str) -> None:
        self._server_of(device_id, Clusters.EnergyEvse).unplug()
        self._settle()

    def draw_hot_water(self, device_id: str, litres: float) -> None:
        """Hot water is drawn from a water heater's tank (a shower, a bath)."""
        self._server_of(device_id, Clusters.WaterHeaterManagement).draw(litres)
        self._settle()

    def set_room_state(self, room_id: str, **values: float) -> None:
        """Set room values now (°C, %RH, µg/m³), as a scenario's start state says; the
        physics goes on from them. Illuminance is not a state: it follows its sources."""
        self._check_room(room_id)
        unknown = sorted(set(values) - set(VARIABLES))
        if unknown:
            raise ValueError(f"{', '.join(unknown)}: not a room state; accepted: {', '.join(VARIABLES)}")
        self._settle()
        room = self.rooms[room_id]
        tick = self.clock.tick
        for var, value in values.items():
            room._traj[var] = Trajectory(float(value), tick, room._traj[var].terms)
        self._refresh_next_flip()

    # ---- time ----------------------------------------------------------------------
    def step(self, ticks: int = 1) -> None:
        """Tick-by-tick reference path: settle every single tick."""
        if isinstance(ticks, bool) or not isinstance(ticks, int) or ticks < 0:
            raise ValueError(f"ticks must be a non-negative integer, got {ticks!r}")
        self._settle()
        for _ in range(ticks):
            self.clock.tick += 1
            self._settle()

    def advance(self, seconds: float) -> None:
        """Fast-forward by `seconds` of virtual time (rounded to whole ticks)."""
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not seconds >= 0:
            raise ValueError(f"seconds must be a non-negative number, got {seconds!r}")
        self._run_to(self.clock.tick + round(seconds * TICKS_PER_SECOND))

    def run_until(self, when: datetime | str) -> None:
        target = self.clock.tick_at(parse_time(when))
        if target < self.clock.tick:
            raise ValueError(f"{when} is before the current virtual time {self.clock.format()}")
        self._run_to(target)

    def _run_to(self, target: int) -> None:
        self._settle()
        while self.clock.tick < target:
            nxt = target
            # After a settle nothing is due before the next tick, so one tick ahead needs no search.
            for servers in self._timed_servers.values() if target > self.clock.tick + 1 else ():
                for server in servers:
                    tick = server.next_event_tick()
                    if tick is not None and tick < nxt:
                        nxt = tick
            tick = self.workflows.next_tick()
            if tick is not None and tick < nxt:
                nxt = tick
            tick = self.automations.next_tick()
            if tick is not None and tick < nxt:
                nxt = tick
            tick = self.faults.next_tick()
            if tick is not None and tick < nxt:
                nxt = tick
            if self._next_flip is not None and self._next_flip < nxt:
                nxt = self._next_flip
            if self._weather_tick is not None and self._weather_tick < nxt:
                nxt = self._weather_tick
            self.clock.tick = max(nxt, self.clock.tick + 1)
            self._settle()

    def _settle(self) -> None:
        tick = self.clock.tick
        self.faults.run_due(tick)   # faults starting now apply before anything else this tick
        if self._weather_tick is not None and tick >= self._weather_tick:
            self._apply_weather(tick)
        for _ in range(_MAX_ROUNDS):
            due = [(device_id, s) for device_id, servers in self._timed_servers.items() for s in servers
                   if (t := s.next_event_tick()) is not None and t <= tick]
            for device_id, server in due:
                # our own copy of the server (a borrowed device is copied in first), lent to no fork
                mine = self.devices[device_id].endpoints[server.endpoint.id].servers[server.id]
                mine.changing()
                mine.advance_to(tick)
            ran = self.workflows.run_due(tick)
            fired = self.automations.run_due(tick)
            if not due and not ran and not fired:
                break
        else:
            raise RuntimeError(f"tick {tick}: server events keep rescheduling at the same tick: "
                               + ", ".join(f"{d}/{s.endpoint.id}/{s.name}" for d, s in due))
        if self._dirty or (self._next_flip is not None and self._next_flip <= tick):
            self._update_physics(tick)

    def _update_physics(self, tick: int) -> None:
        touched: list[str] = []
        for room_id, room in self.rooms.items():
            dirty = room_id in self._dirty
            if not dirty and not any(tr.flip_tick is not None and tr.flip_tick <= tick
                                     for tr in room._traj.values()):
                continue
            terms = (physics.room_terms(self.devices_in(room_id), self.ambient, self.coefficients,
                                        self.occupants(room_id) if self.presence else 0)
                     if dirty else None)
            touched.append(room_id)
            for var in VARIABLES:
                old = room._traj[var]
                new_terms = terms[var] if terms is not None else old.terms
                x = old.value(tick)
                if new_terms == old.terms and tuple(t.active_at(x) for t in new_terms) == old.active:
                    continue  # same coefficients: keep the anchor
                room._traj[var] = Trajectory(x, tick, new_terms)
        for room_id in touched:
            if room_id in self.watchers:
                sensors.refresh_room(self, room_id)   # a threshold crossed, or the room changed
        self._dirty.clear()
        self._refresh_next_flip()

    def _refresh_next_flip(self) -> None:
        flips = [tr.flip_tick for room in self.rooms.values() for tr in room._traj.values()
                 if tr.flip_tick is not None]
        self._next_flip = min(flips) if flips else None

    # ---- snapshots -----------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """JSON-ready state; same seed and calls give byte-identical json.dumps(sort_keys=True)."""
        version, internal, gauss = self.rng.getstate()
        return {
            "format": SNAPSHOT_FORMAT,
            "name": self.name,
            "seed": self.seed,
            "clock": self.clock.state(),
            "ambient": dict(self.ambient),
            "rooms": [{"id": r.id, "name": r.name, "daylight_lux": r.daylight_lux,
                       **({"indoor_lux": r.indoor_lux} if r.indoor_lux else {}), **r.layout(),
                       "physics": {v: tr.state() for v, tr in r._traj.items()}}
                      for r in self.rooms.values()],
            "devices": [{"id": d.id, **self._meta[d.id].to_json(),
                         "servers": {f"{ep.id}/{s.name}": s.state()
                                     for ep in d.endpoints.values() for s in ep.servers.values()
                                     if s.in_snapshot}}
                        for d in self.devices.values()],
            "workflows": self.workflows.state(),
            **({"automations": self.automations.state()} if self.automations else {}),
            "events": copy.deepcopy(self.events),
            "rng": [version, list(internal), gauss],
            "dirty": sorted(self._dirty),
            **({"physics": copy.deepcopy(self.physics_overrides)} if self.physics_overrides else {}),
            **({"products": {k: product_of(t).attributes for k, t in self.products.items()}}
               if self.products else {}),
            **({"presence": dict(sorted(self.presence.items()))} if self.presence else {}),
            **({"weather": {**self.weather.state(), "next_tick": self._weather_tick}} if self.weather else {}),
            # Only with faults: snapshots of homes without any stay as they were.
            **({"faults": self.faults.state()} if self.faults.faults or self.faults.test_event_key else {}),
        }

    @classmethod
    def restore(cls, snapshot: dict[str, Any]) -> Home:
        if snapshot.get("format") != SNAPSHOT_FORMAT:
            raise ValueError(f"snapshot format {snapshot.get('format')!r} is not supported; "
                             f"expected {SNAPSHOT_FORMAT}")
        clock = VirtualClock.from_state(snapshot["clock"])
        home = cls(snapshot["name"], snapshot["seed"], clock.start, snapshot["ambient"], snapshot.get("physics"))
        home.clock.tick = clock.tick
        for key, attributes in snapshot.get("products", {}).items():
            home.add_product(key, load_product({"attributes": attributes}, f"snapshot product {key}"))
        for r in snapshot["rooms"]:
            home.rooms[r["id"]] = Room(home, r["id"], r["name"], r["daylight_lux"],
                                       {v: Trajectory.from_state(s) for v, s in r["physics"].items()},
                                       r.get("indoor_lux", 0.0), r.get("floor", 0), r.get("kind"), r.get("parent"))
            home._room_devices[r["id"]] = []
        for d in snapshot["devices"]:
            # Identity (serials) comes back with the server state, so this rng is throwaway.
            device = _create(d["id"], home.products.get(d["type"], d["type"]), random.Random(0), d["name"],
                             _with_rooms(d["type"], d["options"], home.rooms))
            for key, state in d["servers"].items():
                ep, name = key.split("/", 1)
                device.endpoint(int(ep)).server(name).load_state(state)
            home._place(device, d["room"], d["name"], copy.deepcopy(d["options"]),
                        tuple(d.get("tags", ())), d.get("category"))
        home.workflows.load_state(copy.deepcopy(snapshot["workflows"]))
        if "automations" in snapshot:
            home.automations.load_state(copy.deepcopy(snapshot["automations"]))
        home.events = copy.deepcopy(snapshot["events"])
        version, internal, gauss = snapshot["rng"]
        home.rng.setstate((version, tuple(internal), gauss))
        home._dirty = set(snapshot["dirty"])
        home.presence = dict(snapshot.get("presence", {}))
        if "weather" in snapshot:
            state = dict(snapshot["weather"])
            home._weather_tick = state.pop("next_tick")
            home.weather = Weather.from_state(state, home.seed)
            home._wire_solar()
        if "faults" in snapshot:
            home.faults.load_state(copy.deepcopy(snapshot["faults"]))
        home._refresh_next_flip()
        return home

    def fork(self) -> Home:
        """An independent copy that continues exactly like this home would.

        Equivalent to `Home.restore(self.snapshot())` (tested) but copies live objects instead
        of going through JSON: the home's own state (rooms, clock, workflows, faults, rng) as
        an object graph (`GraphCopier`, twin/fork.py), and devices only when either side first touches
        them (copy on write, see `Devices`).
        """
        copier = GraphCopier(self._wired)
        # Records are shared, not copied: stored events, workflow steps and step results
        # are replaced or appended, never mutated; only the containers are copied.
        copier.share(self.events)
        for wf in self.workflows.list():
            copier.memo[id(wf)] = wf.copy()
        home = copier.memo[id(self)] = object.__new__(Home)
        with no_gc():
            vars(home).update(copier.copy({k: v for k, v in vars(self).items() if k not in _NOT_FORKED}))
        home.events = list(self.events)
        home._wired = {}
        home._borrowers = weakref.WeakSet()
        home.bound_sender = None   # a what-if fork sends nothing over the network
        home._timed = None if self._timed is None else dict(self._timed)  # same objects: valid as is
        home.devices = self.devices.lend_to(home)
        hook = self._unlend
        for device_id, device in self.devices.objects.items():
            if device_id not in self.devices.borrowed:
                device.before_change = hook
        for lender in {self, *self.devices.borrowed.values()}:
            lender._borrowers.add(home)
        return home

    def own_devices(self) -> None:
        """Copy in every device still borrowed from the home this was forked from, so that
        the two share nothing: a fork that another thread uses while its parent keeps
        changing calls this first, under the parent's lock (see `Devices`)."""
        self.devices.adopt_all()

    def _wiring(self) -> tuple[Any, ...]:
        """The home's own objects that its devices refer to (a copied device is rewired to the
        copying home's)."""
        return (self, self.clock, self.faults, self._listener, self._event_sink, self._intercept)

    def _adopt(self, device_id: str) -> Device:
        """Replace a borrowed device by a copy of our own (see `Devices`)."""
        lender = self.devices.borrowed.pop(device_id)
        theirs = self.devices.objects[device_id]
        copier = GraphCopier(lender._wired)
        copier.memo.update(zip(map(id, lender._wiring()), self._wiring()))
        with no_gc():
            mine = copier.copy(theirs)
        mine.before_change = None   # lent to nobody yet
        for old, new in zip(theirs.servers(), mine.servers()):
            self._wired[id(new)] = lender._wired[id(old)]
            new.event_sink = self._event_sink
        self.devices.objects[device_id] = mine
        if self._timed is not None and device_id in self._timed:
            self._timed[device_id] = _timed_of(mine)
        return mine

    def _unlend(self, device: Device) -> None:
        """`device` (ours) is about to change: forks still borrowing it copy it first."""
        device.before_change = None
        for fork in list(self._borrowers):
            if fork.devices.borrowed.get(device.id) is self:
                fork._adopt(device.id)

    # ---- home files ----------------------------------------------------------------
    @classmethod
    def from_spec(cls, spec: HomeSpec, seed: int | None = None, source: str = "<spec>") -> Home:
        """Build a home; any bad device option or attribute raises UserFileError."""
        if seed is None:
            seed = spec.seed if spec.seed is not None else 0
        home = cls(spec.name, seed, spec.start_time, spec.ambient.model_dump(), spec.physics)
        base = Path(source).parent if source not in ("<spec>", "<home>") else Path(".")
        for key, product_file in spec.products.items():
            try:
                home.add_product(key, read_dump(str(base / product_file)))
            except DumpError as exc:
                raise UserFileError(source, f"products.{key}", str(exc)) from None
        if spec.weather is not None:
            home.set_weather(spec.weather)
        for room in spec.rooms:
            home.add_room(room.id, room.name, room.temperature, room.humidity, room.pm10,
                          room.daylight_lux, room.indoor_lux, room.floor, room.kind)
        for room in spec.rooms:   # parents may come after their children in the file
            home.rooms[room.id].parent = room.parent
        for i, room in enumerate(spec.rooms):
            for j, dev in enumerate(room.devices):
                where = f"rooms[{i}].devices[{j}]"
                try:
                    home.add_device(dev.id, dev.type, room.id, dev.name, dev.options, dev.attributes,
                                    dev.tags, dev.category)
                except InitialAttributeError as exc:
                    raise UserFileError(source, f"{where}.attributes.{exc.key}", exc.message) from None
                except (MatterError, TypeError, ValueError) as exc:
                    # create_device rejected the type or its options
                    raise UserFileError(source, f"{where}.options", str(exc)) from None
        for i, room in enumerate(spec.rooms):   # a switch's targets may come after it
            for j, dev in enumerate(room.devices):
                for target in dev.options.get("bound_to") or []:
                    if target.partition(":")[0] not in home.devices:
                        raise UserFileError(source, f"rooms[{i}].devices[{j}].options.bound_to",
                                            f"no device {target.partition(':')[0]!r} in this home")
        for i, rule in enumerate(spec.automations):
            try:
                made = home.automations.create(rule.trigger, rule.steps, rule.conditions, rule.name)
            except (ValueError, UnknownIdError) as exc:   # AutomationError, ArgumentError: ValueErrors
                raise UserFileError(source, f"automations[{i}]", str(exc)) from None
            if not rule.enabled:
                home.automations.set_enabled(made.id, False)
        home._settle()
        return home

    @classmethod
    def load(cls, path: str | Path, seed: int | None = None) -> Home:
        """A home from a YAML or JSON file (pydantic-validated); errors are UserFileError."""
        return cls.from_spec(parse_file(path), seed, source=str(path))

    @classmethod
    def default(cls, seed: int = 0) -> Home:
        """The packaged default home (twin/default_home.yaml)."""
        with importlib.resources.as_file(importlib.resources.files("twin") / "default_home.yaml") as path:
            return cls.load(path, seed)

    @classmethod
    def embedded(cls, name: str, seed: int | None = None) -> Home:
        """A packaged home by name (EMBEDDED_HOMES: "default", SimuHome's 17 types in five rooms;
        "modern", a typical modern household); UnknownIdError for another name."""
        if name not in EMBEDDED_HOMES:
            raise UnknownIdError(f"no embedded home {name!r}; embedded homes: {', '.join(EMBEDDED_HOMES)}")
        with importlib.resources.as_file(importlib.resources.files("twin") / EMBEDDED_HOMES[name]) as path:
            return cls.load(path, seed)


#: The homes packaged with the twin, by name.
EMBEDDED_HOMES = {"default": "default_home.yaml", "modern": "modern_home.yaml"}


#: Home fields `fork` sets itself rather than copying: devices are lent, not copied.
_NOT_FORKED = frozenset({"devices", "_timed", "_wired", "_borrowers", "bound_sender"})


def _timed_of(device: Device) -> list[ClusterServer]:
    """A device's servers that can schedule events of their own, by endpoint then cluster id."""
    return [s for _, s in sorted(((ep.id, s.id), s) for ep in device.endpoints.values()
                                 for s in ep.servers.values())
            if type(s).next_event_tick is not ClusterServer.next_event_tick]


def _create(device_id: str, type_key: str | DeviceType, rng: random.Random, name: str | None,
            options: dict[str, Any]) -> Device:
    return create_device(device_id, type_key, rng=rng, name=name, **options)


@functools.cache
def _builder_options(build: Callable[..., Any]) -> tuple[str, ...]:
    params = inspect.signature(build).parameters.values()
    return tuple(p.name for p in params if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL))


def _with_rooms(type_key: str, options: dict[str, Any], rooms: dict[str, Room]) -> dict[str, Any]:
    """A device that works room by room (a robot vacuum's service areas) is given the home's
    rooms, by name (by id where names repeat), unless its options name its areas."""
    device_type = DEVICE_TYPES.get(type_key)
    if device_type is None or "areas" not in _builder_options(device_type.build) or "areas" in options \
            or not rooms:
        return options
    names = [r.name[:128] for r in rooms.values()]
    return {**options, "areas": names if len(set(names)) == len(names) else [r.id[:128] for r in rooms.values()]}


def check_options(type_key: str, options: dict[str, Any]) -> None:
    """Reject options the type's builder does not name (builders swallow unknown ones)."""
    device_type = DEVICE_TYPES.get(type_key)
    if device_type is None:
        return  # create_device reports the unknown type
    known = _builder_options(device_type.build)
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise ValueError(f"unknown option(s) {', '.join(map(repr, unknown))} for {type_key}; "
                         f"accepted: {', '.join(known) or 'none'}")


def _apply_initial(device: Device, key: str, value: Any) -> None:
    """Set one initial attribute: type-checked and constraint-checked like a write, but
    writability is not required (it is the device's starting state)."""
    ep, cluster, attribute = key.split("/")
    try:
        server = device.endpoint(int(ep)).server(cluster)
        name = server.resolve_attribute(attribute)
        coerced = server._coerce(name, value)
        server.validate_write(name, coerced)
    except MatterError as exc:
        raise InitialAttributeError(key, str(exc)) from None
    server.set(name, coerced)
