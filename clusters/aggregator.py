"""Bridge composition: many devices served as one Matter Bridge node (Core spec, "Bridge for
non-Matter devices", and the Aggregator and Bridged Node device types).

Endpoints of a `Bridge`:

- 0, Root Node: Descriptor and the bridge's own BasicInformation (node-only servers are
  added here by the runtime, as on any node). PartsList: every other endpoint.
- 1, Aggregator (0x000E): Descriptor only. PartsList: every bridged endpoint (the
  full-family pattern the spec asks of the root and of aggregators).
- 2, 3, ...: the bridged devices. Each device's application endpoints in order, renumbered.
  The device's lowest endpoint is its top: its DeviceTypeList adds Bridged Node (0x0013),
  it carries BridgedDeviceBasicInformation (read from the device's BasicInformation), and
  its PartsList lists the device's other endpoints (the tree pattern of composed devices,
  so a fridge's cabinet or a heat pump's thermostat stays under its device).

One source of truth: a bridged endpoint holds the device's own server objects. A server's
`endpoint` stays the device's endpoint, so sibling lookups, physics and rules keep working;
only the Descriptor (and BDBI) on a bridged endpoint belong to the bridge. Reads, writes and
invokes on a borrowed server are handed to the device that owns it, so clusters/rules.py
applies to operations arriving through the bridge exactly as to tools.

Change notifications and events: a borrowed server tells its listeners `(server, attribute)`
with the server itself, whose `endpoint` is the device's. `endpoint_of(server)` gives the
bridged endpoint id it is served at; the Interaction Model (twin/node/im/) uses it to report
bridged paths, so nothing here wraps or relays the servers.

Endpoint ids are handed out in order and never reused after a removal. `allocation()` gives
the assignment, and `Bridge(..., allocation=...)` restores it, so a restarted bridge keeps
each device's ids (controllers remember them).
"""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from chip.clusters import Objects as Clusters

from clusters.base import ClusterServer
from clusters.bridged import BridgedDeviceBasicInformationServer
from clusters.device import DescriptorServer, Device, DeviceType, Endpoint
from clusters.status import MatterError, Status

AGGREGATOR = (0x000E, 1)       # Matter 1.3 Device Library revisions
BRIDGED_NODE = (0x0013, 2)
AGGREGATOR_ENDPOINT = 1
FIRST_BRIDGED_ENDPOINT = 2
MAX_ENDPOINT = 0xFFFE          # endpoint ids are uint16; 0xFFFF is the wildcard
#: The bridge node's ProductID: after the SimuHome types (0x8001..0x8011) and room_sensor (0x8012).
BRIDGE_PRODUCT_ID = 0x8013
BRIDGE_TYPE = DeviceType("bridge", "Matter Bridge", *AGGREGATOR, build=lambda **_: [],
                         product_id=BRIDGE_PRODUCT_ID)


class _AggregatorEndpoint(Endpoint):
    def parts(self) -> list[int]:
        return sorted(i for i, ep in self.device.endpoints.items() if isinstance(ep, BridgedEndpoint))


@dataclass(eq=False)
class BridgedEndpoint(Endpoint):
    """A device's endpoint as seen through the bridge: its servers under a new id."""
    source: Endpoint | None = None            # the device's own endpoint
    children: list[int] = field(default_factory=list)

    def parts(self) -> list[int]:
        return list(self.children)


class Bridge(Device):
    """A Matter Bridge node over existing devices; `.endpoints` and `read/write/invoke/locate`
    work as on `Device`, so the Interaction Model serves it unchanged."""

    def __init__(self, bridge_id: str, identity: ClusterServer,
                 allocation: dict[str, Any] | None = None):
        self._served: dict[int, int] = {}                     # id(borrowed server) -> bridged endpoint id
        super().__init__(bridge_id, BRIDGE_TYPE, [_AggregatorEndpoint(AGGREGATOR_ENDPOINT, [AGGREGATOR])],
                         root_servers=[identity])
        allocation = allocation or {}
        self._saved: dict[str, list[int]] = {k: list(v) for k, v in allocation.get("endpoints", {}).items()}
        self._next = max(int(allocation.get("next_endpoint", FIRST_BRIDGED_ENDPOINT)), FIRST_BRIDGED_ENDPOINT,
                         *(i + 1 for ids in self._saved.values() for i in ids))   # never below a saved id
        self.bridged: dict[str, Device] = {}
        self._ids: dict[str, list[int]] = {}                  # device id -> its endpoint ids, top first
        #: Called after a device is added or removed (the runtime re-arms its IM listeners here).
        self.composition_listeners: list[Callable[[Bridge], None]] = []

    # ---- composition ---------------------------------------------------------------------
    def add_device(self, device: Device) -> list[int]:
        """Bridge `device`; returns its bridged endpoint ids, top first."""
        if not isinstance(device, Device) or isinstance(device, Bridge):
            raise MatterError(Status.INVALID_COMMAND, f"a bridge bridges devices, not {device!r}")
        if device.id in self.bridged:
            raise MatterError(Status.CONSTRAINT_ERROR, f"device {device.id} is already bridged at "
                              f"endpoints {self._ids[device.id]}")
        sources = [device.endpoints[i] for i in sorted(device.endpoints) if i != 0]
        if not sources:
            raise MatterError(Status.CONSTRAINT_ERROR, f"device {device.id} has no application endpoint to bridge")
        basic = device.endpoint(0).server(Clusters.BasicInformation)   # checked before anything changes
        ids = self._allocate(device.id, len(sources))
        for k, (source, ep_id) in enumerate(zip(sources, ids)):
            ep = BridgedEndpoint(ep_id, list(source.device_types) + ([BRIDGED_NODE] if k == 0 else []),
                                 client_clusters=source.client_clusters, device=self, source=source,
                                 children=ids[1:] if k == 0 else [])
            for cluster_id, server in source.servers.items():
                if cluster_id != Clusters.Descriptor.id:
                    ep.servers[cluster_id] = server   # borrowed, not re-homed: no Endpoint.add
            ep.add(DescriptorServer(tags=source.tags))
            if k == 0:
                ep.add(BridgedDeviceBasicInformationServer(basic))
            self._served.update((id(s), ep_id) for s in ep.servers.values() if s.endpoint is not ep)
            self.endpoints[ep_id] = ep
        self.bridged[device.id] = device
        self._ids[device.id] = ids
        self._recomposed()
        return list(ids)

    def remove_device(self, device_id: str) -> None:
        """Unbridge a device; its endpoint ids are never handed out again."""
        if device_id not in self.bridged:
            raise MatterError(Status.NOT_FOUND, f"device {device_id!r} is not bridged; bridged: "
                              + ", ".join(self.bridged))
        for ep_id in self._ids.pop(device_id):
            ep = self.endpoints.pop(ep_id)
            for server in ep.servers.values():
                if self._served.get(id(server)) == ep_id:
                    del self._served[id(server)]
            bdbi = ep.servers.get(Clusters.BridgedDeviceBasicInformation.id)
            if bdbi is not None:
                bdbi.detach()
        del self.bridged[device_id]
        self._saved.pop(device_id, None)
        self._recomposed()

    def endpoint_ids(self, device_id: str) -> list[int]:
        """A bridged device's endpoint ids on the bridge, top first."""
        if device_id not in self._ids:
            raise MatterError(Status.NOT_FOUND, f"device {device_id!r} is not bridged")
        return list(self._ids[device_id])

    def endpoint_of(self, server: ClusterServer) -> int | None:
        """The bridge endpoint id at which a server is served (its bridged id for a borrowed
        server), or None if the bridge does not serve it (any more)."""
        ep_id = self._served.get(id(server))
        if ep_id is not None:
            return ep_id
        if server.endpoint is not None and self.endpoints.get(server.endpoint.id) is server.endpoint:
            return server.endpoint.id   # one of the bridge's own (root, aggregator, Descriptor, BDBI)
        for ep_id, ep in self.endpoints.items():
            if ep.servers.get(server.id) is server:
                return ep_id
        return None

    def allocation(self) -> dict[str, Any]:
        """Endpoint assignment to persist, for `Bridge(..., allocation=...)` after a restart."""
        return {"next_endpoint": self._next, "endpoints": {k: list(v) for k, v in self._ids.items()}}

    def _allocate(self, device_id: str, count: int) -> list[int]:
        saved = self._saved.get(device_id)
        taken = set(self.endpoints) | {i for ids in self._saved.values() if ids is not saved for i in ids}
        if saved is not None and len(saved) == count and not taken & set(saved):
            return list(saved)
        start = self._next
        if start + count - 1 > MAX_ENDPOINT:
            raise MatterError(Status.RESOURCE_EXHAUSTED,
                              f"no endpoint ids left for {device_id}: ids up to {MAX_ENDPOINT:#x} are used")
        self._next = start + count
        return list(range(start, start + count))

    def _recomposed(self) -> None:
        """PartsList of the root and the aggregator changed: tell their listeners."""
        for ep_id in (0, AGGREGATOR_ENDPOINT):
            descriptor = self.endpoints[ep_id].servers[Clusters.Descriptor.id]
            descriptor.data_version = (descriptor.data_version + 1) & 0xFFFFFFFF
            for listener in list(descriptor.listeners):
                listener(descriptor, "PartsList")
        for listener in list(self.composition_listeners):
            listener(self)

    # ---- the entry points: borrowed servers go through their own device -------------------
    def servers(self) -> Iterator[Any]:
        for ep in self.endpoints.values():
            yield from ep.servers.values()

    def _owner(self, server: ClusterServer) -> Device:
        return server.endpoint.device

    def read(self, cluster: Any, attribute: Any, endpoint_id: int | None = None) -> Any:
        server = self.locate(cluster, endpoint_id)
        owner = self._owner(server)
        if owner is self:
            return server.read(attribute)
        return owner.read(server.id, attribute, server.endpoint.id)

    def write_on(self, server: ClusterServer, name: str, value: Any) -> None:
        owner = self._owner(server)
        if owner is self:
            return super().write_on(server, name, value)
        return owner.write_on(server, name, value)

    def invoke_on(self, server: ClusterServer, name: str, fields: Any = None) -> Any:
        owner = self._owner(server)
        if owner is self:
            return super().invoke_on(server, name, fields)
        return owner.invoke_on(server, name, fields)
