"""What the parts of `InteractionModelServer` share, declared once so each part is typed.

The server is one class composed of one part per interaction (read.py, subscribe.py,
events.py, write.py, invoke.py, and server.py's dispatch). A part calls methods another part
defines, and reads state the server's `__init__` sets: `Part` declares both, for the type
checker only (the declarations below are not seen at run time, so the method resolution
order is the composed class's alone).
"""
from __future__ import annotations

import collections
import random
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from clusters.base import AccessContext, ClusterServer
from clusters.device import Device
from clusters.status import Status
from matter_protocol.exchange import Action, Exchange
from matter_protocol.interaction import AttributePath, DataVersionFilter, EventPath, Message
from twin.node.im.model import AccessCheck, Chunk, Derived, EventNumbers, EventRecord, Key, Subscription


class Part:
    """The server's shared state (set in `InteractionModelServer.__init__`) and the methods
    one part calls on another."""
    device: Device
    rng: random.Random
    sample_ms: int
    granted_max_interval_s: int
    access_check: AccessCheck | None
    on_dirty: Callable[[], None] | None
    subscriptions: dict[int, Subscription]
    events: dict[int, collections.deque[EventRecord]]
    event_numbers: EventNumbers
    _item_budget: int
    _writes: dict[Any, tuple[bool, float]]
    _write_access: dict[Any, dict[tuple[int, int, int], bool]]
    _bumps: dict[tuple[int, int], int]
    _derived: dict[tuple[int, int], list[Derived]] | None
    _watched: dict[tuple[int, int], list[Derived]]
    _sampled: dict[Key, Any]
    _next_sample_ms: float | None

    if TYPE_CHECKING:
        # server.py
        def _send(self, exchange: Exchange, message: Message | tuple[int, bytes], now_ms: float,
                  close: bool = False) -> list[Action]: ...

        def _status(self, exchange: Exchange, status: Status, now_ms: float, close: bool = True) -> list[Action]: ...

        def _start(self, exchange: Exchange, kind: str, chunks: Iterator[Chunk], now_ms: float,
                   subscription: Subscription | None = None, expect_last: bool = True) -> list[Action]: ...

        def _remove(self, sub: Subscription) -> None: ...

        @staticmethod
        def _access(session: Any) -> AccessContext: ...

        def _allowed(self, kind: str, access: AccessContext, endpoint: int, cluster: int, item: int) -> bool: ...

        @staticmethod
        def _as(access: AccessContext, fn: Callable[..., Any], *args: Any) -> Any: ...

        def _watch(self) -> None: ...

        def _endpoint(self, server: ClusterServer) -> int | None: ...

        def _basic_information(self) -> ClusterServer | None: ...

        # read.py
        def _expand(self, path: AttributePath) -> list[tuple[int, ClusterServer, str]]: ...

        def _expand_all(self, paths: list[AttributePath]) -> Iterator[tuple[int, ClusterServer, str]]: ...

        def _items(self, ep: int, server: ClusterServer, name: str, access: AccessContext,
                   fabric_filtered: bool) -> list[bytes]: ...

        def _read_items(self, paths: list[AttributePath], filters: list[DataVersionFilter] | None,
                        fabric_filtered: bool, access: AccessContext) -> Iterator[bytes]: ...

        def _report_chunks(self, items: Iterator[tuple[bool, bytes]], subscription_id: int | None,
                           for_read: bool) -> Iterator[Chunk]: ...

        # subscribe.py
        def _derived_attributes(self) -> dict[tuple[int, int], list[Derived]]: ...

        def _sample(self, clusters: dict[tuple[int, int], list[Derived]], count: int | None = None) -> None: ...

        def _notify(self) -> None: ...

        # events.py
        def _event_items(self, paths: list[EventPath], event_min: int, access: AccessContext,
                         concrete_status: bool = True, below: int | None = None) -> Iterator[bytes]: ...

        def _event_path_status(self, path: EventPath, access: AccessContext) -> int | None: ...


__all__ = ["Part"]
