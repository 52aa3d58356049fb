"""What the node layer needs of a home, as `typing.Protocol`s.

`twin.home.Home` is the one implementation. The node layer (pairing, the manager, the clock
loop) is typed against these few members rather than the whole Home, so its dependence on
the home stays visible and small.
"""
from __future__ import annotations

from collections.abc import Callable, MutableMapping
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:   # types only: the node layer reaches faults through the home
    from clusters.device import Device
    from twin.faults import FaultEngine


class NodeClock(Protocol):
    """The home's virtual clock: ticks of 0.1 s."""
    tick: int


class NodeHome(Protocol):
    """A home served as Matter nodes: its devices, seed, clock, faults and time."""
    seed: int
    #: Where a switch's commands to Binding targets on other nodes go (the manager sets it).
    bound_sender: Callable[[str, list[dict[str, Any]]], None] | None

    @property
    def devices(self) -> MutableMapping[str, Device]: ...

    @property
    def clock(self) -> NodeClock: ...

    @property
    def faults(self) -> FaultEngine: ...

    def device_info(self, device_id: str) -> dict[str, Any]:
        """The home's description of a device ("name", "room", ...)."""
        ...

    def advance(self, seconds: float) -> None:
        """Move virtual time forward, running everything due on the way."""
        ...


__all__ = ["NodeClock", "NodeHome"]
