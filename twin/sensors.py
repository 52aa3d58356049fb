"""Sensors the home drives: what contact, occupancy, smoke/CO, leak, freeze and rain sensors detect.

The cluster servers hold what a sensor currently reports (clusters/sensors.py); this module
decides it from the home, as discrete changes at exact ticks:

- **contact** sensors with `options: {mounted_on: <device>}` follow that device: a door lock's
  door (DoorState) or a window covering (closed = lift fully closed and not moving). The home
  calls `follow()` whenever the watched device changes (its listener), so a contact opens the
  tick a covering starts to open and closes the tick it arrives closed.
- **occupancy** sensors follow the residents (`Home.set_presence`): occupied when anyone is in
  the room, clearing HoldTime seconds after the last one left.
- **smoke** alarms follow the room's PM10, **freeze** detectors the room's temperature. A
  threshold crossing of a continuous quantity is found exactly: each threshold is a zero-strength
  physics term (`physics.watch_terms`) whose flip the home already jumps to, and `refresh_room`
  re-reads the levels whenever a room's physics is re-derived.
- **rain** sensors follow the weather (twin/weather.py); **leak** detectors, unmounted contact
  sensors, CO and smoke incidents, door openings and keypad entries are scenario events
  (`apply_event`, also reachable over HTTP).
"""
from __future__ import annotations

from typing import Any

from chip.clusters import Objects as Clusters

from clusters.devices import BOOLEAN_SENSORS, WINDOW_COVERING
from clusters.lazy_objects import CLUSTER_ID
from clusters.status import MatterError
from clusters.window_covering import CLOSED

#: PM10 (µg/m³) at which a smoke alarm at Standard sensitivity warns and goes critical; High
#: sensitivity alarms at 0.7 times these, Low at 1.5 times.
SMOKE_PM10 = (150.0, 300.0)
SENSITIVITY = (0.7, 1.0, 1.5)          # SensitivityEnum High, Standard, Low
FREEZE_C = 1.0                          # a freeze detector trips below this room temperature (°C)

EVENTS = ("open", "close", "detect", "clear", "smoke", "co", "keypad", "manual", "flow")


def our_server(servers: dict[int, Any], cluster: str) -> Any:
    """The endpoint's server of `cluster` (a class name of the data model) if it is ours, else
    None: a cloned product's servers are stores of its values."""
    server = servers.get(getattr(CLUSTER_ID, cluster))
    return server if server is not None and is_ours(server, cluster) else None


def is_ours(server: Any, cluster: str) -> bool:
    """Whether `server` of `cluster` is our server class. Those are imported here, once a server
    of theirs exists (their modules are imported by then), so a home without such devices builds
    none of their clusters (start-up time)."""
    if cluster == "DoorLock":
        from clusters.door_lock import DoorLockServer
        return isinstance(server, DoorLockServer)
    from clusters.sensors import (
        BooleanStateServer,
        OccupancySensingServer,
        PressureMeasurementServer,
        SmokeCoAlarmServer,
    )
    ours = {"BooleanState": BooleanStateServer, "OccupancySensing": OccupancySensingServer,
            "SmokeCoAlarm": SmokeCoAlarmServer, "PressureMeasurement": PressureMeasurementServer}
    return isinstance(server, ours[cluster])


def boolean_kind(device: Any) -> str | None:
    """"contact" / "leak" / "freeze" / "rain" for a device whose endpoint 1 is such a sensor."""
    endpoint = device.endpoints.get(1)
    if endpoint is None or our_server(endpoint.servers, "BooleanState") is None:
        return None
    return next((BOOLEAN_SENSORS[t] for t, _ in endpoint.device_types if t in BOOLEAN_SENSORS), None)


def smoke_levels(alarm: Any) -> tuple[float, float]:
    """PM10 warning and critical levels of a SmokeCoAlarm server at its sensitivity."""
    level = alarm.get("SmokeSensitivityLevel") if "SmokeSensitivityLevel" in alarm.attributes else 1
    factor = SENSITIVITY[int(level)] if int(level) < len(SENSITIVITY) else 1.0
    return SMOKE_PM10[0] * factor, SMOKE_PM10[1] * factor


# ---- contact sensors mounted on a door or a window ---------------------------------------------
def mountable(device: Any) -> bool:
    """A door lock with a door position sensor, or a window covering."""
    for endpoint in device.endpoints.values():
        lock = our_server(endpoint.servers, "DoorLock")
        if lock is not None and lock.door_sensor:
            return True
        if CLUSTER_ID.WindowCovering in endpoint.servers and \
                WINDOW_COVERING[0] in {t for t, _ in endpoint.device_types}:
            return True
    return False


def has_door(device: Any) -> bool:
    """A door lock that sees its door (DoorState)."""
    return any((lock := our_server(ep.servers, "DoorLock")) is not None and lock.door_sensor
               for ep in device.endpoints.values())


def is_closed(device: Any) -> bool:
    """Whether the door or window of a mountable device is closed now."""
    for endpoint in device.endpoints.values():
        lock = our_server(endpoint.servers, "DoorLock")
        if lock is not None and lock.door_sensor:
            return not lock.door_is_open()
        cover = endpoint.servers.get(CLUSTER_ID.WindowCovering)
        if cover is not None:
            return cover.get("CurrentPositionLiftPercent100ths") == CLOSED and not cover.get("OperationalStatus")
    return True


def follow(home: Any, target_id: str) -> None:
    """The watched device changed: its contact sensors report whether it is closed now."""
    closed = is_closed(home.devices[target_id])
    for sensor_id in home.mounts.get(target_id, ()):
        home.devices[sensor_id].endpoint(1).server(Clusters.BooleanState).set_state(closed)


# ---- rooms: occupancy, smoke, freeze --------------------------------------------------------------
def watches_room(device: Any) -> bool:
    """Whether the device senses its room's occupancy, smoke or frost (`refresh_room` reads it).
    Our servers only: a cloned product's clusters are stores of its values."""
    endpoint = device.endpoints.get(1)
    return endpoint is not None and (
        our_server(endpoint.servers, "OccupancySensing") is not None
        or our_server(endpoint.servers, "SmokeCoAlarm") is not None
        or boolean_kind(device) == "freeze")


def read_room(home: Any, device: Any, room_id: str) -> None:
    """One occupancy, smoke or freeze sensor reads its room now."""
    room = home.rooms[room_id]
    endpoint = device.endpoint(1)
    occupancy = our_server(endpoint.servers, "OccupancySensing")
    if occupancy is not None:
        occupancy.set_present(home.occupants(room_id) > 0)
    alarm = our_server(endpoint.servers, "SmokeCoAlarm")
    if alarm is not None and not alarm.incident:
        warning, critical = smoke_levels(alarm)
        pm10 = room.pm10
        alarm.sense_smoke(2 if pm10 >= critical else 1 if pm10 >= warning else 0)
    if boolean_kind(device) == "freeze":
        state = endpoint.server(Clusters.BooleanState)
        if not state.held:
            state.set_state(room.temperature < FREEZE_C)


def refresh_room(home: Any, room_id: str) -> None:
    """Occupancy, smoke and freeze sensors of a room read what the room is like now."""
    for device_id in home.watchers.get(room_id, ()):
        read_room(home, home.devices[device_id], room_id)


def rain_changed(home: Any, raining: bool) -> None:
    for device in home.devices.values():
        if boolean_kind(device) == "rain":
            device.endpoint(1).server(Clusters.BooleanState).set_state(raining)


# ---- scenario events ------------------------------------------------------------------------------
def apply_event(home: Any, device_id: str, event: str, value: Any = None) -> None:
    """A scenario event on a device; ValueError (one line) names what was wrong, and nothing changes.

    open / close: a door lock's door, or an unmounted contact sensor's contact;
    detect / clear: a leak, freeze, rain or unmounted contact sensor starts / stops detecting;
    smoke / co: an incident at a smoke/CO alarm, value 0 (normal), 1 (warning) or 2 (critical);
    keypad: value {"op": "lock"|"unlock", "pin": "1234"} entered at a door lock's keypad;
    manual: value "lock"|"unlock" with the thumb turn; flow: a flow sensor's m³/h.
    """
    if event not in EVENTS:
        raise ValueError(f"event {event!r}; accepted: {', '.join(EVENTS)}")
    device = home.device(device_id)
    endpoint = device.endpoints.get(1)
    servers = endpoint.servers if endpoint is not None else {}
    lock = our_server(servers, "DoorLock")
    kind = boolean_kind(device)
    mounted = home.mounted_on(device_id)
    try:
        if event in ("open", "close") and lock is not None:
            lock.set_door(event == "open")
        elif event in ("open", "close", "detect", "clear") and kind is not None:
            if mounted is not None:
                raise ValueError(f"{device_id} follows {mounted}; open or close that instead")
            if event in ("open", "close") and kind != "contact":
                raise ValueError(f"{device_id} is a {kind} sensor: use detect / clear")
            # a contact sensor's StateValue TRUE is "closed"; the others' TRUE is "detected"
            state = servers[CLUSTER_ID.BooleanState]
            state.set_state(event in ("close", "detect") if kind == "contact" else event == "detect")
            if kind == "freeze":   # a detection holds until cleared; then the room is read again
                state.held = event == "detect"
                if not state.held:
                    refresh_room(home, home.room_of(device_id))
        elif event in ("smoke", "co") and (alarm := our_server(servers, "SmokeCoAlarm")) is not None:
            level = _level(value)
            if event == "co":
                alarm.sense_co(level)
            else:
                alarm.changing()
                alarm.incident = level != 0      # a scenario's smoke holds until cleared (value 0)
                alarm.sense_smoke(level)
                if level == 0:
                    refresh_room(home, home.room_of(device_id))
        elif event == "keypad" and lock is not None:
            if not isinstance(value, dict) or set(value) != {"op", "pin"}:
                raise ValueError('keypad: value {"op": "lock"|"unlock", "pin": "<digits>"}')
            lock.keypad(value["op"], str(value["pin"]))
        elif event == "manual" and lock is not None:
            lock.manual(str(value))
        elif event == "flow" and CLUSTER_ID.FlowMeasurement in servers:
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 6553:
                raise ValueError(f"flow: m³/h 0..6553, got {value!r}")
            servers[CLUSTER_ID.FlowMeasurement].set("MeasuredValue", round(value * 10))
        else:
            raise ValueError(f"{device_id} ({device.type.key}) takes no {event!r} event")
    except MatterError as exc:         # a refused keypad entry: recorded as LockOperationError
        raise ValueError(f"{device_id}: {exc.message}") from None


def _level(value: Any) -> int:
    if isinstance(value, bool) or value not in (0, 1, 2):
        raise ValueError(f"level: 0 (normal), 1 (warning) or 2 (critical), got {value!r}")
    return int(value)
