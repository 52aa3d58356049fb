"""`TwinBackend(home)`: the in-process backend over a `twin.home.Home`.

Every device access goes through `Device.locate/read/write/invoke`, so the cluster
constraints and the cross-cluster rules apply exactly as they do for Matter clients.
Matter errors become `ToolError`s that list what would have been accepted.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from bridge import workflow_calls
from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, TIME_FORMAT, UNAVAILABLE, AttributeKey, ToolError
from clusters.base import GLOBAL_ATTRIBUTES
from clusters.status import MatterError, Status
from clusters.values import to_json

EndpointAlias = Callable[[str, str, int], "int | None"]


class TwinBackend:
    """Implements `bridge.backend.Backend` and `ClockControl` over one `Home`."""

    def __init__(self, home: Any, endpoint_alias: EndpointAlias | None = None):
        self.home = home
        #: For a benchmark that numbers endpoints its own way (SimuHome): (device type key,
        #: cluster name, endpoint id asked) -> the endpoint of ours that holds that cluster,
        #: or None. Consulted only when the asked endpoint does not hold the cluster.
        self.endpoint_alias = endpoint_alias

    # ---- lookups with helpful errors -----------------------------------------------
    def _room(self, room_id: str) -> Any:
        try:
            return self.home.rooms[room_id]
        except (KeyError, TypeError):
            raise ToolError(NOT_FOUND, f"there is no room {room_id!r}",
                            accepted=sorted(self.home.rooms)) from None

    def _device(self, device_id: str, reach: bool = True) -> Any:
        """The device; with `reach`, one that answers now (an offline or rebooting device, a
        fault of twin/faults.py, is UNAVAILABLE, as the Matter backend says of such a node)."""
        try:
            device = self.home.devices[device_id]
        except (KeyError, TypeError):
            raise ToolError(NOT_FOUND, f"there is no device {device_id!r}",
                            accepted=sorted(self.home.devices)) from None
        reason = self.home.faults.unreachable(device_id) if reach else None
        if reason is not None:
            raise ToolError(UNAVAILABLE, reason)
        return device

    def _server(self, device: Any, endpoint_id: int | None, cluster: Any) -> Any:
        try:
            return device.locate(cluster, endpoint_id)
        except MatterError as err:
            aliased = self._aliased(device, endpoint_id, cluster)
            if aliased is not None:
                return device.locate(cluster, aliased)
            if err.status == Status.UNSUPPORTED_ENDPOINT:
                raise ToolError(err.status.name, err.message, accepted=sorted(device.endpoints)) from None
            servers = (device.endpoint(endpoint_id).servers.values() if endpoint_id is not None
                       else device.servers())
            names = sorted({s.name for s in servers})
            where = f"endpoint {endpoint_id} of {device.id}" if endpoint_id is not None else device.id
            raise ToolError(err.status.name, f"{where} has no cluster {cluster!r}",
                            accepted=names) from None

    def _aliased(self, device: Any, endpoint_id: int | None, cluster: Any) -> int | None:
        if self.endpoint_alias is None or endpoint_id is None:
            return None
        try:
            name = device.locate(cluster).name
        except MatterError:
            return None
        return self.endpoint_alias(device.type.key, name, endpoint_id)

    @staticmethod
    def _attribute(server: Any, attribute: Any) -> str:
        try:
            name: str = server.resolve_attribute(attribute)
            return name
        except MatterError as err:
            raise ToolError(err.status.name, f"{server.name} has no attribute {attribute!r}",
                            accepted=list(server.attribute_names())) from None

    @staticmethod
    def _command(server: Any, command: Any) -> str:
        try:
            name: str = server.resolve_command(command)
            return name
        except MatterError as err:
            raise ToolError(err.status.name, f"{server.name} does not accept command {command!r}",
                            accepted=list(server.commands)) from None

    @staticmethod
    def _matter(err: MatterError, server: Any | None = None) -> ToolError:
        accepted = None
        if err.status == Status.UNSUPPORTED_WRITE and server is not None:
            accepted = sorted(server.writable)
        out = ToolError(err.status.name, err.message, accepted=accepted)
        if err.cluster_status is not None:
            out.message += f" (cluster status {err.cluster_status})"
        return out

    # ---- rooms ---------------------------------------------------------------------
    def rooms(self) -> list[dict[str, Any]]:
        # Floor, kind and parent only where the home has a layout (SimuHome's homes have none).
        return [{"room_id": rid, "name": room.name, **room.layout()} for rid, room in self.home.rooms.items()]

    def _summary(self, device: Any) -> dict[str, Any]:
        info = self.home.device_info(device.id)
        return {"device_id": device.id, "name": info["label"],
                "device_type": device.type.key, "label": device.type.label,
                "endpoints": sorted(e for e in device.endpoints if e != 0),
                **{k: info[k] for k in ("tags", "category") if k in info}}

    def room_devices(self, room_id: str) -> list[dict[str, Any]]:
        self._room(room_id)
        return [self._summary(d) for d in self.home.devices_to_read(room_id)]   # a listing copies nothing

    def room_states(self, room_id: str) -> dict[str, float]:
        room = self._room(room_id)
        return {"temperature": room.temperature, "humidity": room.humidity,
                "illuminance": room.illuminance, "pm10": room.pm10}

    # ---- devices -------------------------------------------------------------------
    def device_structure(self, device_id: str) -> dict[str, Any]:
        device = self._device(device_id, reach=False)   # known structure, as a controller keeps it
        endpoints = []
        for ep_id, ep in sorted(device.endpoints.items()):
            endpoints.append({
                "endpoint_id": ep_id,
                "device_types": [{"id": d, "revision": r} for d, r in ep.device_types],
                "clusters": [s.describe() for _, s in sorted(ep.servers.items())]})
        return {"device_id": device.id, "name": self.home.device_info(device.id)["label"],
                "device_type": device.type.key, "label": device.type.label,
                "room_id": self.home.room_of(device.id), "endpoints": endpoints}

    def read_attribute(self, device_id: str, endpoint_id: int | None, cluster: Any,
                       attribute: Any) -> dict[str, Any]:
        device = self._device(device_id)
        server = self._server(device, endpoint_id, cluster)
        name = self._attribute(server, attribute)
        try:
            value = server.read(name)
        except MatterError as err:
            raise self._matter(err, server) from None
        return {"endpoint_id": server.endpoint.id, "cluster": server.name, "attribute": name,
                "value": to_json(value)}

    def read_all_attributes(self, device_id: str) -> dict[str, Any]:
        device = self._device(device_id)
        out: dict[str, Any] = {}
        for ep_id, ep in sorted(device.endpoints.items()):
            for _, server in sorted(ep.servers.items()):
                for name in server.attributes:  # global attributes: see get_device_structure
                    if name not in GLOBAL_ATTRIBUTES:
                        out[str(AttributeKey(ep_id, server.name, name))] = to_json(server.read(name))
        return out

    def write_attribute(self, device_id: str, endpoint_id: int | None, cluster: Any,
                        attribute: Any, value: Any) -> dict[str, Any]:
        device = self._device(device_id)
        server = self._server(device, endpoint_id, cluster)
        name = self._attribute(server, attribute)
        try:
            device.write_on(server, name, value)
        except MatterError as err:
            raise self._matter(err, server) from None
        return {"endpoint_id": server.endpoint.id, "cluster": server.name, "attribute": name,
                "value": to_json(server.read(name))}

    def invoke(self, device_id: str, endpoint_id: int | None, cluster: Any, command: Any,
               args: dict[str, Any]) -> dict[str, Any]:
        device = self._device(device_id)
        server = self._server(device, endpoint_id, cluster)
        name = self._command(server, command)
        try:
            response = device.invoke_on(server, name, args)
        except MatterError as err:
            raise self._matter(err, server) from None
        out = {"endpoint_id": server.endpoint.id, "cluster": server.name, "command": name,
               "response": to_json(response) if response is not None else None}
        if response is not None:
            out["response_command"] = type(response).__name__
        return out

    # ---- time and workflows --------------------------------------------------------
    def current_time(self) -> str:
        return str(self.home.now.strftime(TIME_FORMAT))

    def schedule_workflow(self, start_time: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
        if self.endpoint_alias is not None:
            steps = [self._alias_step(step) for step in steps]
        return workflow_calls.schedule_workflow(self.home.workflows, start_time, steps, self.home.now.tzinfo)

    def _alias_step(self, step: Any) -> Any:
        """A workflow step with an aliased endpoint id replaced by ours (others untouched)."""
        args = step.get("args") if isinstance(step, dict) else None
        if not isinstance(args, dict):
            return step
        device = self.home.devices.get(args.get("device.id", args.get("device_id")))
        cluster = args.get("cluster.id", args.get("cluster_id"))
        for key in ("endpoint.id", "endpoint_id"):
            if device is not None and isinstance(args.get(key), int) and cluster is not None:
                try:
                    device.locate(cluster, args[key])
                except MatterError:
                    aliased = self._aliased(device, args[key], cluster)
                    if aliased is not None:
                        return {**step, "args": {**args, key: aliased}}
        return step

    def cancel_workflow(self, workflow_id: str) -> dict[str, Any]:
        return workflow_calls.cancel_workflow(self.home.workflows, workflow_id)

    def workflow_status(self, workflow_id: str) -> dict[str, Any]:
        return workflow_calls.workflow_status(self.home.workflows, workflow_id)

    def workflows(self) -> list[dict[str, Any]]:
        return workflow_calls.workflows(self.home.workflows)

    # ---- ClockControl --------------------------------------------------------------
    def clock(self) -> dict[str, Any]:
        return {"tick": self.home.clock.tick, "time": self.current_time()}

    def advance(self, seconds: float) -> dict[str, Any]:
        if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or seconds < 0:
            raise ToolError(INVALID_ARGUMENT, f"seconds must be a number >= 0, got {seconds!r}")
        self.home.advance(seconds)
        return self.clock()
