"""Composition: a device is a set of endpoints, each a set of cluster servers.

`Endpoint` holds the servers of one endpoint. `Device` is one Matter node: root endpoint 0
(Descriptor, BasicInformation) plus application endpoints. Device types register a
builder in `DEVICE_TYPES` (see clusters/devices.py).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue

from clusters.base import ClusterServer
from clusters.rules import check_invoke, check_write
from clusters.status import MatterError, Status

ROOT_NODE_DEVICE_TYPE = (0x0016, 3)


class DescriptorServer(ClusterServer):
    """Descriptor: every value is derived from the composition, so nothing is stored. An
    endpoint with semantic tags (two cabinets of one fridge) has the TagList feature."""
    cluster = Clusters.Descriptor
    revision = 2
    attributes = ("DeviceTypeList", "ServerList", "ClientList", "PartsList")

    def __init__(self, tags: tuple[tuple[int, int, str | None], ...] = (), **initial: Any):
        """`tags`: (namespace id, tag, label) of each semantic tag of the endpoint."""
        self._tags = tuple(tags)
        if tags:
            self.attributes = DescriptorServer.attributes + ("TagList",)
        super().__init__(feature_map=int(Clusters.Descriptor.Bitmaps.Feature.kTagList) if tags else 0, **initial)

    def defaults(self) -> dict[str, Any]:
        return {"DeviceTypeList": [], "ServerList": [], "ClientList": [], "PartsList": [],
                "TagList": [Clusters.Descriptor.Structs.SemanticTagStruct(
                    mfgCode=NullValue, namespaceID=ns, tag=tag, label=label if label is not None else NullValue)
                    for ns, tag, label in self._tags]}

    def get(self, name: str) -> Any:
        ep: Endpoint = self.endpoint
        if name == "DeviceTypeList":
            return [Clusters.Descriptor.Structs.DeviceTypeStruct(deviceType=d, revision=r)
                    for d, r in ep.device_types]
        if name == "ServerList":
            return sorted(ep.servers)
        if name == "ClientList":
            return list(ep.client_clusters)
        if name == "PartsList":
            return ep.parts()
        return super().get(name)


@dataclass
class Endpoint:
    id: int
    device_types: list[tuple[int, int]]
    servers: dict[int, ClusterServer] = field(default_factory=dict)
    client_clusters: tuple[int, ...] = ()
    device: Device | None = None
    #: Semantic tags (namespace id, tag, label) that tell like endpoints apart (Descriptor.TagList).
    tags: tuple[tuple[int, int, str | None], ...] = ()
    #: The endpoints a composed device's endpoint is made of (a fridge's cabinets, a heat pump's
    #: thermostat): its PartsList, the spec's tree pattern.
    children: tuple[int, ...] = ()

    def add(self, server: ClusterServer) -> ClusterServer:
        server.endpoint = self
        self.servers[server.id] = server
        return server

    def parts(self) -> list[int]:
        """Endpoints below this one: all application endpoints for the root, else its children."""
        if self.id == 0 and self.device is not None:
            return [e for e in sorted(self.device.endpoints) if e != 0]
        return list(self.children)

    def server(self, cluster: Any) -> ClusterServer:
        """The server for a cluster given as chip class, id or (case-insensitive) name."""
        for server in self.servers.values():
            if cluster in (server.cluster, server.id) or (
                    isinstance(cluster, str) and cluster.lower() in (server.name.lower(), str(server.id))):
                return server
        raise MatterError(Status.UNSUPPORTED_CLUSTER,
                          f"endpoint {self.id} has no cluster {cluster!r}; present: "
                          + ", ".join(s.name for s in self.servers.values()))


@dataclass(frozen=True)
class DeviceType:
    """A SimuHome device type and how to build its application endpoints."""
    key: str                      # e.g. "air_conditioner" (used in home files and tools)
    label: str                    # e.g. "Air Conditioner"
    device_type_id: int           # spec device type id of the main application endpoint
    revision: int
    build: Callable[..., list[Endpoint]]  # (**options) -> application endpoints
    vendor_name: str = "matter-twin"
    product_id: int = 0x8000
    #: (node_label) -> endpoint 0's servers besides the Descriptor, for types that bring
    #: their own identity (clones of real products); None: the twin's BasicInformation.
    root: Callable[[str | None], list[ClusterServer]] | None = None
    #: The kinds of room it belongs in (living_room, kitchen, ...): a home generator's prior.
    room_kinds: tuple[str, ...] = ()


DEVICE_TYPES: dict[str, DeviceType] = {}


def register(device_type: DeviceType) -> DeviceType:
    DEVICE_TYPES[device_type.key] = device_type
    return device_type


class Device:
    """One Matter node: endpoint 0 plus the device type's application endpoints.

    `interceptor` (set by the home: its fault engine) sees every write and invoke before it
    runs, whoever calls (tools, workflows, the Matter node): it raises MatterError to fail the
    call, or returns False to accept it without effect (a stuck actuator).

    `before_change` (set by a home that lends the device to its forks, see twin/fork.py) is
    called by the device's servers before anything in the device changes."""

    interceptor: Callable[[Device, str, ClusterServer, str], bool] | None = None
    before_change: Callable[[Device], None] | None = None

    def __init__(self, device_id: str, device_type: DeviceType, endpoints: list[Endpoint],
                 root_servers: list[ClusterServer]):
        self.id = device_id
        self.type = device_type
        self.endpoints: dict[int, Endpoint] = {}
        root = Endpoint(0, [ROOT_NODE_DEVICE_TYPE])
        for ep in [root, *endpoints]:
            ep.device = self
            if Clusters.Descriptor.id not in ep.servers:
                ep.add(DescriptorServer(tags=ep.tags))
            self.endpoints[ep.id] = ep
        for server in root_servers:
            root.add(server)
        for server in self.servers():
            server.attach()

    def servers(self) -> Iterator[ClusterServer]:
        for ep in self.endpoints.values():
            yield from ep.servers.values()

    def endpoint(self, endpoint_id: int) -> Endpoint:
        try:
            return self.endpoints[int(endpoint_id)]
        except (KeyError, ValueError, TypeError):
            raise MatterError(Status.UNSUPPORTED_ENDPOINT,
                              f"device {self.id} has no endpoint {endpoint_id!r}; endpoints: "
                              + ", ".join(str(e) for e in sorted(self.endpoints))) from None

    # ---- the one entry point for reads, writes and invokes ---------------------------
    # Tools, workflows and the Matter node all come through here, so the cross-attribute
    # rules in clusters/rules.py apply the same way to every caller.
    def locate(self, cluster: Any, endpoint_id: int | None = None) -> ClusterServer:
        """The server for `cluster`, on `endpoint_id` or else the first endpoint that has it."""
        if endpoint_id is not None:
            return self.endpoint(endpoint_id).server(cluster)
        for ep_id in sorted(self.endpoints):
            try:
                return self.endpoints[ep_id].server(cluster)
            except MatterError:
                continue
        raise MatterError(Status.UNSUPPORTED_CLUSTER,
                          f"device {self.id} has no cluster {cluster!r}; present: "
                          + ", ".join(sorted({s.name for s in self.servers()})))

    def read(self, cluster: Any, attribute: Any, endpoint_id: int | None = None) -> Any:
        return self.locate(cluster, endpoint_id).read(attribute)

    def read_on(self, server: ClusterServer, name: str) -> Any:
        """`read` of a resolved target: attribute `name` (its spec name) of `server`."""
        return server.read(name)

    def write(self, cluster: Any, attribute: Any, value: Any, endpoint_id: int | None = None) -> None:
        server = self.locate(cluster, endpoint_id)
        self.write_on(server, server.resolve_attribute(attribute), value)

    def invoke(self, cluster: Any, command: Any, fields: Any = None, endpoint_id: int | None = None) -> Any:
        server = self.locate(cluster, endpoint_id)
        return self.invoke_on(server, server.resolve_command(command), fields)

    # A caller that has resolved its target (the tool backend, the IM) passes it on: the
    # server (one of this device's) and the spec name, located and resolved once per call.
    def write_on(self, server: ClusterServer, name: str, value: Any) -> None:
        """`write` to a resolved target: attribute `name` (its spec name) of `server`."""
        if self.interceptor is not None and not self.interceptor(self, "write", server, name):
            return
        check_write(self, server, name, value)
        server.write(name, value)

    def invoke_on(self, server: ClusterServer, name: str, fields: Any = None) -> Any:
        """`invoke` on a resolved target: command `name` (its spec name) of `server`."""
        if self.interceptor is not None and not self.interceptor(self, "invoke", server, name):
            response = server.command_class(name).response_type
            # Stuck: accepted, nothing moves; a command with a response answers its defaults.
            return getattr(server.cluster.Commands, response)() if response else None
        check_invoke(self, server, name, fields)
        return server.invoke(name, fields)
