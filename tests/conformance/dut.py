"""The device under test, as the conformance test cases (TC_*) see it.

A test case is written once against `Dut` and runs against two implementations:
- in process, through our Interaction Model server (fast; the unit suite), and
- over the network, through the CHIP SDK's Python controller after on-network commissioning,
  inside a test-created namespace (the e2e suite; what the certification harness would do).

Attributes, commands and values are `chip.clusters.Objects` types both ways, e.g.
`dut.read(1, C.OnOff.Attributes.OnOff)`, `dut.invoke(1, C.OnOff.Commands.Toggle())`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol


class DutStatusError(Exception):
    """The DUT answered a path or command with a non-SUCCESS Interaction Model status."""

    def __init__(self, status: int, what: str = "", cluster_status: int | None = None) -> None:
        super().__init__(f"{what}: status 0x{status:02X}" if what else f"status 0x{status:02X}")
        self.status = status   # chip.interaction_model.Status value (e.g. 0x87 CONSTRAINT_ERROR)
        self.cluster_status = cluster_status   # the cluster-specific status, when the DUT gave one


@dataclass
class DutEvent:
    """One event record as a controller decodes it."""
    endpoint: int
    event: Any        # the Objects event class (e.g. C.OperationalState.Events.OperationCompletion)
    number: int       # the node's event number
    priority: int     # 0 DEBUG, 1 INFO, 2 CRITICAL
    data: Any         # the decoded event (an instance of `event`)


@dataclass
class AttributeReport:
    """One attribute value a subscription reported."""
    endpoint: int
    attribute: Any    # the Objects attribute class
    value: Any


def event_class(cluster_id: int, event_id: int) -> Any:
    """The Objects event class of a cluster's event id."""
    from chip.clusters.ClusterObjects import ALL_CLUSTERS, ClusterEvent
    events = vars(ALL_CLUSTERS[cluster_id].Events).values()
    return next(c for c in events if isinstance(c, type) and issubclass(c, ClusterEvent) and c.event_id == event_id)


class DutSubscription(Protocol):
    max_interval: int   # the max interval the DUT granted, in seconds

    def poll(self, timeout: float) -> list[AttributeReport | DutEvent]:
        """What the DUT reported since the last poll (priming report included), waiting up to
        `timeout` seconds of the DUT's time for the first item; [] if nothing came."""

    def close(self) -> None:
        """End the subscription."""


class Dut(Protocol):
    name: str          # the device's name in the home (e.g. "living_room_light"), or the bridge's
    device_type: str   # clusters.device key of the device (e.g. "dimmable_light"); "bridge" for a bridge

    def endpoints(self) -> list[int]:
        """Endpoint 0 and every endpoint in its Descriptor PartsList."""

    def read(self, endpoint: int, attribute: Any) -> Any:
        """One attribute's value (`attribute` is an Objects attribute class); DutStatusError if not SUCCESS."""

    def read_cluster(self, endpoint: int, cluster: Any) -> dict[str, Any]:
        """Every attribute the cluster serves on the endpoint, by attribute class name (wildcard read)."""

    def write(self, endpoint: int, attribute: Any, value: Any, timed_ms: int | None = None) -> None:
        """Write one attribute (optionally as a timed write); DutStatusError if not SUCCESS."""

    def invoke(self, endpoint: int, command: Any, timed_ms: int | None = None) -> Any:
        """Invoke an Objects command instance; its response object, or None for a plain SUCCESS."""

    def wait(self, seconds: float) -> None:
        """Let `seconds` of the DUT's time pass (in process: advance the home's clock; network: sleep)."""

    def presence(self, person: str, here: bool) -> None:
        """A resident enters the device's room (`here`) or leaves the home (Home.set_presence; over
        the network `POST /presence`), a plan's manual step for an occupancy sensor."""

    def hand(self, action: str, **args: Any) -> Any:
        """A hand on the device from outside Matter, as a plan's manual step (Home.hand: smoke in the
        room, a leak detected, a switch pressed); in process the home's, over the network `POST /hand`."""

    def read_events(self, endpoint: int, event: Any, event_min: int | None = None,
                    fabric_filtered: bool = True) -> list[DutEvent]:
        """The events the DUT holds for one event path (an Objects event class), oldest first;
        with `event_min`, only those numbered from it on (an EventFilter)."""

    def subscribe(self, paths: list[tuple[int, Any]], min_interval: int, max_interval: int,
                  event_min: int | None = None) -> DutSubscription:
        """Subscribe to (endpoint, Objects attribute or event class) paths; `event_min` is the
        EventFilter's minimum event number."""
