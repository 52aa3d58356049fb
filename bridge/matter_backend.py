"""`MatterBackend(config)`: the tools over python-matter-server's WebSocket API.

The same `Backend` the in-process twin implements, for any Matter nodes on that server's
fabric: twin nodes or real hardware. Every read, write and invoke is a Matter interaction
through the server (no attribute is cached here); the device structure comes from the node's
Descriptor (DeviceTypeList, ServerList, PartsList) and global attributes (AttributeList,
AcceptedCommandList, FeatureMap, ClusterRevision), read in one wildcard read. Names and
types come from `chip.clusters.Objects`, values leave as `clusters.values.to_json` shapes,
so an agent sees the same JSON it sees on the twin.

- **Threads.** python-matter-server's own client (`matter_server.client.MatterClient`) runs on
  a private asyncio loop in a background thread per server URL; the sync `Backend` methods
  wait on it with a timeout (`timeout` in the config).
- **Errors.** A Matter status from the node becomes a ToolError with its spec name
  (CONSTRAINT_ERROR, ...). The server unreachable or the connection lost: UNAVAILABLE; a node
  that does not answer in time: TIMEOUT; a node the server cannot reach: UNAVAILABLE.
- **Room states.** Read from the sensor endpoints the config names (Temperature-,
  RelativeHumidity-, Illuminance- and Pm10ConcentrationMeasurement), converted to the
  units `Backend.room_states` uses (°C, %RH, lux, µg/m³). A room without a sensor for some
  state answers get_room_states with a ToolError UNAVAILABLE naming the missing states (the
  tool's result has a number for every state, so a partial answer would have to invent one).
- **Time and workflows.** Wall-clock local time. Workflows live in the twin's own workflow
  table (twin/workflows.py), driven by the wall clock (bridge/wall_clock.py): steps go
  through the tools against this same backend, and a failing step is recorded in the
  workflow (status "failed", the error, the remaining steps "skipped"), never dropped.
- **Modules.** Values and names: bridge/matter_values.py; the server connection and its
  errors: bridge/matter_connection.py; one configured device: bridge/matter_device.py.
- **Node management.** The commissioning, credentials, ACL, group-key, network and
  diagnostics clusters (`NODE_MANAGEMENT`) belong to the controller: the tools neither show
  them (structure, all attributes, Descriptor.ServerList) nor reach them, as in process.
- **Writability.** Matter has no attribute that says which attributes are writable; for
  clusters this project implements, `writable` in get_device_structure is the spec's (from
  our cluster server with the same feature map), for others it is null (unknown; a write
  answers UNSUPPORTED_WRITE).
"""
from __future__ import annotations

import datetime as _dt
from collections.abc import Callable
from typing import Any

from chip.clusters import Objects as Clusters

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, TIME_FORMAT, UNAVAILABLE, DeviceLink, ToolError
from bridge.config import STATES, DeviceConfig, LoadedConfig, MatterRef, SensorRef
from bridge.matter_connection import TIMEOUT, MatterConnection
from bridge.matter_device import MatterDevice
from bridge.wall_clock import WallClockWorkflows
from twin.schema import UserFileError


def wall_now() -> _dt.datetime:
    return _dt.datetime.now()  # the edge: hardware lives in real local time


class MatterBackend:
    """Implements `bridge.backend.Backend` for a bridge config whose devices are Matter nodes
    (`MixedBackend` adds twin devices). Call `close()` when done."""

    def __init__(self, loaded: LoadedConfig, now: Callable[[], _dt.datetime] = wall_now,
                 connection: MatterConnection | None = None):
        """`connection`: an open connection to reuse for its server (the caller closes it)."""
        self.loaded = loaded
        self.config = loaded.config
        self._now = now
        self._connections: dict[str, MatterConnection] = {}
        self._borrowed = connection
        if connection is not None:
            self._connections[connection.url] = connection
        self._devices: dict[str, DeviceLink] = {}
        self._sensor_nodes: dict[tuple[str, str], MatterDevice] = {}
        for spec in self.config.devices:
            self._devices[spec.id] = self._make_device(spec)
        self._workflows = WallClockWorkflows(self, now)

    def _make_device(self, spec: DeviceConfig) -> DeviceLink:
        if spec.matter is None:
            raise UserFileError(self.loaded.source, f"devices.{spec.id}.twin",
                                "MatterBackend drives Matter devices only; use "
                                "bridge.mixed.load_backend for twin devices")
        return MatterDevice(spec, self.loaded, self.connection(self.config.server_of(spec.matter)))

    def connection(self, url: str) -> MatterConnection:
        if url not in self._connections:
            self._connections[url] = MatterConnection(url, self.config.timeout)
        return self._connections[url]

    def close(self) -> None:
        self._workflows.close()
        for conn in self._connections.values():
            if conn is not self._borrowed:
                conn.close()

    def commission_all(self) -> dict[str, int]:
        """Adopt or commission every Matter device and sensor node now (else on first use):
        id -> node id."""
        out = {d.spec.id: d.node_id for d in self._devices.values() if isinstance(d, MatterDevice)}
        for room in self.config.rooms:
            for ref in room.sensors.values():
                if ref.pairing_code is not None:
                    device = self._sensor_device(ref)
                    if isinstance(device, MatterDevice):   # a pairing code names a node
                        out[device.spec.id] = device.node_id
        return out

    # ---- lookups ---------------------------------------------------------------------
    def _device(self, device_id: str) -> DeviceLink:
        try:
            return self._devices[device_id]
        except (KeyError, TypeError):
            raise ToolError(NOT_FOUND, f"there is no device {device_id!r}",
                            accepted=sorted(self._devices)) from None

    def node_id(self, device_id: str) -> int:
        """The Matter node id behind a Matter device (adopted or commissioned now);
        ToolError NOT_FOUND for an unknown id, INVALID_ARGUMENT for a twin device."""
        device = self._device(device_id)
        if not isinstance(device, MatterDevice):
            raise ToolError(INVALID_ARGUMENT, f"device {device_id!r} is not a Matter device")
        return device.node_id

    def _room(self, room_id: str) -> Any:
        for room in self.config.rooms:
            if room.id == room_id:
                return room
        raise ToolError(NOT_FOUND, f"there is no room {room_id!r}",
                        accepted=sorted(r.id for r in self.config.rooms))

    def _spec(self, device_id: str) -> DeviceConfig:
        spec = self.config.device(device_id)
        if spec is None:
            raise ToolError(NOT_FOUND, f"there is no device {device_id!r}", accepted=sorted(self._devices))
        return spec

    def _name(self, device_id: str) -> str:
        return self._spec(device_id).name or device_id

    # ---- rooms ---------------------------------------------------------------------
    def rooms(self) -> list[dict[str, Any]]:
        return [{"room_id": r.id, "name": r.display_name} for r in self.config.rooms]

    def room_devices(self, room_id: str) -> list[dict[str, Any]]:
        self._room(room_id)
        out = []
        for spec in self.config.devices:
            if spec.room == room_id:
                out.append({"device_id": spec.id, "name": self._name(spec.id),
                            **self._devices[spec.id].summary()})
        return out

    def room_states(self, room_id: str) -> dict[str, float]:
        room = self._room(room_id)
        states = {s: self._sensor(room_id, s, ref) for s, ref in room.sensors.items()}
        missing = [s for s in STATES if s not in states]
        if missing:
            states.update(self._fallback_states(room, missing))
        missing = [s for s in STATES if s not in states]
        if missing:
            have = ", ".join(f"{k} {v:g}" for k, v in states.items()) or "nothing"
            raise ToolError(UNAVAILABLE, f"room {room_id!r} has no sensor for {', '.join(missing)} "
                            f"(add them under the room's sensors in the bridge config); measured: {have}")
        return {s: states[s] for s in STATES}

    def _fallback_states(self, room: Any, missing: list[str]) -> dict[str, float]:
        return {}  # MixedBackend: the room's twin

    #: state -> (measurement cluster, converter from MeasuredValue to the Backend unit)
    _SENSORS: dict[str, tuple[str, Callable[[Any, Any], float]]] = {
        "temperature": ("TemperatureMeasurement", lambda v, unit: v / 100),
        "humidity": ("RelativeHumidityMeasurement", lambda v, unit: v / 100),
        "illuminance": ("IlluminanceMeasurement", lambda v, unit: 0.0 if v == 0 else 10 ** ((v - 1) / 10000)),
        "pm10": ("Pm10ConcentrationMeasurement", lambda v, unit: v * {3: 1000.0, 5: 0.001}.get(unit, 1.0)),
    }

    def _sensor(self, room_id: str, state: str, ref: SensorRef) -> float:
        cluster, convert = self._SENSORS[state]
        device = self._sensor_device(ref)
        value = self._measure(device, ref.endpoint, cluster, "MeasuredValue")
        if value["value"] is None:
            raise ToolError(UNAVAILABLE, f"room {room_id!r}: the {state} sensor has no reading "
                            f"(MeasuredValue is null on endpoint {value['endpoint_id']})")
        unit = None
        if state == "pm10":
            unit = self._measure(device, value["endpoint_id"], cluster, "MeasurementUnit")["value"]
        return float(convert(value["value"], unit))

    @staticmethod
    def _measure(device: DeviceLink, endpoint: int | None, cluster: str, attribute: str) -> dict[str, Any]:
        """A sensor attribute: read straight at its path when the endpoint is known (no
        structure read first); else, or if it is not there, looked up by name (which explains)."""
        if endpoint is not None and isinstance(device, MatterDevice):
            cls = getattr(Clusters, cluster)
            try:
                return {"endpoint_id": endpoint, "value": device.read_value(
                    endpoint, cls.id, getattr(cls.Attributes, attribute).attribute_id)}
            except ToolError as err:
                if err.code in (UNAVAILABLE, TIMEOUT):
                    raise
        return device.read(endpoint, cluster, attribute)

    def _sensor_device(self, ref: SensorRef) -> DeviceLink:
        if ref.device is not None:
            return self._device(ref.device)
        url = self.config.server_of(ref)
        if ref.pairing_code is not None:
            # One node per code, commissioned once and remembered in the state file under an
            # id made from the code (QR payloads are base38: only ':' falls outside ids).
            key = (url, ref.pairing_code)
            if key not in self._sensor_nodes:
                spec = DeviceConfig(id="sensor-node-" + ref.pairing_code.replace(":", "."),
                                    room=self.config.rooms[0].id,
                                    matter=MatterRef(server=url, pairing_code=ref.pairing_code))
                self._sensor_nodes[key] = MatterDevice(spec, self.loaded, self.connection(url))
            return self._sensor_nodes[key]
        key = (url, f"node {ref.node_id}")
        if key not in self._sensor_nodes:
            spec = DeviceConfig(id=f"node-{ref.node_id}", room=self.config.rooms[0].id,
                                matter=MatterRef(server=url, node_id=ref.node_id))
            self._sensor_nodes[key] = MatterDevice(spec, self.loaded, self.connection(url))
        return self._sensor_nodes[key]

    # ---- devices -------------------------------------------------------------------
    def device_structure(self, device_id: str) -> dict[str, Any]:
        structure = self._device(device_id).structure()
        return {"device_id": device_id, "name": self._name(device_id),
                "device_type": structure["device_type"], "label": structure["label"],
                "room_id": self._spec(device_id).room, "endpoints": structure["endpoints"]}

    def read_attribute(self, device_id: str, endpoint_id: int | None, cluster: Any,
                       attribute: Any) -> dict[str, Any]:
        return self._device(device_id).read(endpoint_id, cluster, attribute)

    def read_all_attributes(self, device_id: str) -> dict[str, Any]:
        return self._device(device_id).read_all()

    def write_attribute(self, device_id: str, endpoint_id: int | None, cluster: Any,
                        attribute: Any, value: Any) -> dict[str, Any]:
        return self._device(device_id).write(endpoint_id, cluster, attribute, value)

    def invoke(self, device_id: str, endpoint_id: int | None, cluster: Any, command: Any,
               args: dict[str, Any]) -> dict[str, Any]:
        return self._device(device_id).invoke(endpoint_id, cluster, command, args)

    # ---- time and workflows --------------------------------------------------------
    def current_time(self) -> str:
        return self._now().strftime(TIME_FORMAT)

    def schedule_workflow(self, start_time: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
        return self._workflows.schedule(start_time, steps)

    def cancel_workflow(self, workflow_id: str) -> dict[str, Any]:
        return self._workflows.cancel(workflow_id)

    def workflow_status(self, workflow_id: str) -> dict[str, Any]:
        return self._workflows.get(workflow_id)

    def workflows(self) -> list[dict[str, Any]]:
        return self._workflows.list()


__all__ = ["MatterBackend", "wall_now"]
