"""The `Backend` protocol: everything the SimuHome tools need from a home.

The tools (bridge/tools.py) are written once against this protocol. It has three
implementations: the twin in process (bridge/twin_backend.py), any Matter home through
python-matter-server, the twin's nodes or real hardware (bridge/matter_backend.py), and the
two mixed, device by device (bridge/mixed.py).

Design choices:
- **Synchronous.** Agent loops, the CLI and tests call tools synchronously, and the
  in-process twin is synchronous. A Matter backend runs python-matter-server's asyncio
  client on its own event-loop thread and waits on `asyncio.run_coroutine_threadsafe`
  futures, so it fits this protocol without any change to the tools. The HTTP surface runs
  calls in a worker thread, one at a time.
- **Plain JSON in and out.** Ids are strings or ints exactly as the agent gave them
  (clusters, attributes and commands by spec name or numeric id); values are JSON
  (`clusters.values.to_json`). Nothing here exposes twin or chip objects, so a backend
  on the far side of a WebSocket returns the same shapes.
- **Errors are `ToolError`.** A backend raises `ToolError(code, message, accepted=...)`;
  `code` is a Matter status name (`CONSTRAINT_ERROR`, `UNSUPPORTED_COMMAND`, ...) where
  one applies, else one of the bridge codes below. `accepted` lists what would have been
  accepted (ids, names), so an agent can correct itself.
"""
from __future__ import annotations

from typing import Any, NamedTuple, Protocol, runtime_checkable

#: Bridge error codes that are not Matter statuses.
UNKNOWN_TOOL = "UNKNOWN_TOOL"
INVALID_ARGUMENT = "INVALID_ARGUMENT"
NOT_FOUND = "NOT_FOUND"            # room, device or workflow id that does not exist
UNAVAILABLE = "UNAVAILABLE"        # e.g. ask_user with nobody to ask

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"  # the one time format tools speak


class AttributeKey(NamedTuple):
    """An attribute's key in `read_all_attributes`: "<endpoint>.<Cluster>.<Attribute>" as
    agents read it, built and parsed only here."""
    endpoint: int
    cluster: str
    attribute: str

    def __str__(self) -> str:
        return f"{self.endpoint}.{self.cluster}.{self.attribute}"

    @classmethod
    def parse(cls, key: str) -> AttributeKey:
        endpoint, cluster, attribute = key.split(".", 2)
        return cls(int(endpoint), cluster, attribute)


class ToolError(Exception):
    """A failed tool call, as data: what was wrong and what would be accepted."""

    def __init__(self, code: str, message: str, accepted: list[Any] | None = None):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message
        self.accepted = accepted

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"code": self.code, "message": self.message}
        if self.accepted is not None:
            out["accepted"] = self.accepted
        return out


@runtime_checkable
class Backend(Protocol):
    """Operations behind the SimuHome tools. All arguments and results are plain JSON."""

    # ---- rooms ---------------------------------------------------------------------
    def rooms(self) -> list[dict[str, Any]]:
        """[{"room_id": str, "name": str}] for every room."""
        ...

    def room_devices(self, room_id: str) -> list[dict[str, Any]]:
        """[{"device_id", "device_type", "label", "endpoints": [int]}] in the room."""
        ...

    def room_states(self, room_id: str) -> dict[str, float]:
        """Raw room state: {"temperature": °C, "humidity": %RH, "illuminance": lux,
        "pm10": µg/m³}. The tools round; backends report what they measure."""
        ...

    # ---- devices -------------------------------------------------------------------
    def device_structure(self, device_id: str) -> dict[str, Any]:
        """{"device_id", "device_type", "label", "room_id", "endpoints": [{"endpoint_id",
        "device_types": [{"id", "revision"}], "clusters": [<cluster description>]}]}
        where a cluster description has id, name, feature_map, attributes (name, id,
        type, writable) and commands (name, id, fields)."""
        ...

    def read_attribute(self, device_id: str, endpoint_id: int | None, cluster: str | int,
                       attribute: str | int) -> dict[str, Any]:
        """{"endpoint_id", "cluster", "attribute", "value"} with spec names and a JSON value.
        `endpoint_id` None means the first endpoint that has the cluster."""
        ...

    def read_all_attributes(self, device_id: str) -> dict[str, Any]:
        """{"<endpoint>.<Cluster>.<Attribute>": value} for every attribute of the device."""
        ...

    def write_attribute(self, device_id: str, endpoint_id: int | None, cluster: str | int,
                        attribute: str | int, value: Any) -> dict[str, Any]:
        """Write, then return {"endpoint_id", "cluster", "attribute", "value"} (read back)."""
        ...

    def invoke(self, device_id: str, endpoint_id: int | None, cluster: str | int,
               command: str | int, args: dict[str, Any]) -> dict[str, Any]:
        """Run a command: {"endpoint_id", "cluster", "command", "response": JSON or None}."""
        ...

    # ---- time and workflows --------------------------------------------------------
    def current_time(self) -> str:
        """Virtual (or real, for hardware) local time as "YYYY-MM-DD HH:MM:SS"."""
        ...

    def schedule_workflow(self, start_time: str, steps: list[dict[str, Any]]) -> dict[str, Any]:
        """Schedule steps ({"tool": "execute_command"|"write_attribute", "args": {...}},
        args in the tools' dotted form) at `start_time` ("YYYY-MM-DD HH:MM:SS").
        Returns the workflow as JSON, including its "workflow_id"."""
        ...

    def cancel_workflow(self, workflow_id: str) -> dict[str, Any]:
        ...

    def workflow_status(self, workflow_id: str) -> dict[str, Any]:
        ...

    def workflows(self) -> list[dict[str, Any]]:
        ...


class DeviceLink(Protocol):
    """One configured device of a Matter or mixed home, wherever it lives: a Matter node
    (bridge/matter_device.py) or a twin device in process (bridge/mixed.py). The backend finds
    the device by id once and calls these; results are the `Backend` shapes."""

    def summary(self) -> dict[str, Any]:
        """{"device_type", "label", "endpoints": [int]} for room_devices."""
        ...

    def structure(self) -> dict[str, Any]: ...

    def read(self, endpoint_id: int | None, cluster: Any, attribute: Any) -> dict[str, Any]: ...

    def read_all(self) -> dict[str, Any]: ...

    def write(self, endpoint_id: int | None, cluster: Any, attribute: Any, value: Any) -> dict[str, Any]: ...

    def invoke(self, endpoint_id: int | None, cluster: Any, command: Any, args: dict[str, Any]) -> dict[str, Any]: ...


@runtime_checkable
class ClockControl(Protocol):
    """Optional: backends whose time can be moved by the caller (the twin, not hardware)."""

    def clock(self) -> dict[str, Any]:
        """{"tick": int, "time": "YYYY-MM-DD HH:MM:SS"}."""
        ...

    def advance(self, seconds: float) -> dict[str, Any]:
        """Move virtual time forward; returns clock()."""
        ...
