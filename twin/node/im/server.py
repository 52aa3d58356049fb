"""The Interaction Model server: one class composed of one part per interaction (read.py,
subscribe.py, events.py, write.py, invoke.py). This part dispatches messages, runs the timers
and sends chunked answers (see the package docstring)."""
from __future__ import annotations

import collections
import logging
import random
from collections.abc import Callable, Iterator
from typing import Any

from chip.clusters import Objects as Clusters

from clusters.base import AccessContext, ClusterServer, current_access
from clusters.device import Device
from clusters.status import Status
from matter_protocol.exchange import Action, Exchange, ExchangeError
from matter_protocol.interaction import (
    InvokeRequest,
    Message,
    ReadRequest,
    ReportData,
    StatusResponse,
    SubscribeRequest,
    SubscribeResponse,
    TimedRequest,
    WriteRequest,
    decode_message,
)
from matter_protocol.tlv import CodecError
from twin.node.access import AclCheck
from twin.node.im.events import Events
from twin.node.im.invoke import Invokes
from twin.node.im.model import (
    DEFAULT_SAMPLE_MS,
    EVENT_BUFFER,
    GRANTED_MAX_INTERVAL_S,
    MAX_OPEN_PER_NODE,
    MAX_OPEN_PER_SESSION,
    MAX_PAYLOAD,
    RESPONSE_TIMEOUT_MS,
    AccessCheck,
    Chunk,
    Derived,
    EventNumbers,
    EventRecord,
    Key,
    Pending,
    Subscription,
)
from twin.node.im.read import Reads
from twin.node.im.subscribe import Subscriptions
from twin.node.im.write import Writes
from twin.ratelog import RateLimitedLog

log = logging.getLogger(__name__)
#: What peers cause (malformed messages, interactions refused or abandoned): a line per kind and 10 s.
peer_log = RateLimitedLog(log)


class InteractionModelServer(Reads, Subscriptions, Events, Writes, Invokes):
    def __init__(self, data_model: Device, rng: random.Random, *, max_payload: int = MAX_PAYLOAD,
                 sample_ms: int = DEFAULT_SAMPLE_MS, access_check: AccessCheck | None | str = "acl",
                 event_numbers: EventNumbers | None = None,
                 granted_max_interval_s: int = GRANTED_MAX_INTERVAL_S):
        self.device = data_model
        self.granted_max_interval_s = granted_max_interval_s
        self.rng = rng
        self.max_payload = max_payload
        self.sample_ms = sample_ms
        #: Who may do what: "acl" enforces the node's ACL when the device has the node's
        #: AccessControl server (twin/node/access.py), a callable decides itself, None allows all.
        if isinstance(access_check, str):
            if access_check != "acl":   # a typo would otherwise be called on the first read
                raise ValueError(f"access_check={access_check!r}; accepted: 'acl', a callable or None")
            access_check = _acl_check(data_model)
        self.access_check = access_check
        #: Called when a subscription gets something to report, so the runtime can re-arm its timer.
        self.on_dirty: Callable[[], None] | None = None
        #: Called when a subscription became active or ended, so the runtime can persist them.
        self.on_subscriptions: Callable[[], None] | None = None
        self.subscriptions: dict[int, Subscription] = {}
        #: Whether a change made now would be kept (None: always): while it says no (the node's
        #: state cannot be saved, e.g. a full disk), writes and commands are RESOURCE_EXHAUSTED.
        self.can_change: Callable[[], bool] | None = None
        self._pending: dict[Any, Pending] = {}
        self._timed: dict[Any, float] = {}        # exchange -> TimedRequest deadline (ms)
        self._writes: dict[Any, tuple[bool, float]] = {}   # chunked write: exchange -> (timed, deadline)
        #: Access decided per concrete path for a (chunked) write interaction, as the CHIP SDK
        #: does: replacing a list with [] then appending keeps the privilege the write began with.
        self._write_access: dict[Any, dict[tuple[int, int, int], bool]] = {}
        overhead = len(ReportData(subscription_id=0xFFFFFFFF, attribute_reports=[], more_chunked=True,
                                  suppress_response=True).encode())
        self._item_budget = max_payload - overhead
        #: Bridge nodes serve other devices' servers at their own endpoint ids.
        self._endpoint_of: Callable[[ClusterServer], int | None] | None = getattr(data_model, "endpoint_of", None)
        self._bumps: dict[tuple[int, int], int] = {}            # (endpoint, cluster) -> DataVersion bump
        #: (endpoint, cluster) -> the derived attributes we serve there; None: to be rebuilt
        #: (the composition changed).
        self._derived: dict[tuple[int, int], list[Derived]] | None = None
        #: The part of it some subscription covers: what the sampling timer re-reads.
        self._watched: dict[tuple[int, int], list[Derived]] = {}
        self._sampled: dict[Key, Any] = {}                       # derived attribute -> last value seen
        self._next_sample_ms: float | None = None                # None: nothing watched, no timer
        self._samples = 0                                        # timer samples so far
        self.events: dict[int, collections.deque[EventRecord]] = {
            p: collections.deque(maxlen=n) for p, n in EVENT_BUFFER.items()}
        self.event_numbers = event_numbers if event_numbers is not None else EventNumbers()
        self._watch()
        basic = self._basic_information()
        if basic is not None:
            # Node-level, not simulation: logged here only, not in the home's event list.
            self._on_event(basic, Clusters.BasicInformation.Events.StartUp(
                softwareVersion=int(basic.get("SoftwareVersion"))))

    def handle(self, session: Any, exchange: Exchange, opcode: int, payload: bytes, now_ms: float) -> list[Action]:
        if not getattr(session, "is_secure", False):
            return exchange.close(now_ms)   # the IM runs only on PASE/CASE sessions
        try:
            message = decode_message(opcode, payload)
        except CodecError as e:
            peer_log.info("malformed", now_ms, "malformed IM message 0x%02x: %s", opcode, e)
            self._forget(exchange)
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        pending = self._pending.get(exchange)
        if pending is not None:
            if isinstance(message, StatusResponse):
                return self._continue(pending, message.status, now_ms)
            return self._status(exchange, Status.INVALID_ACTION, now_ms, close=False) + self._abandon(pending, now_ms)
        access = self._access(session)
        if exchange in self._writes:
            timed_write, _ = self._writes.pop(exchange)
            if not isinstance(message, WriteRequest):
                self._write_access.pop(exchange, None)
                return self._status(exchange, Status.INVALID_ACTION, now_ms)
            return self._write(exchange, message, timed_write, access, now_ms)
        timed = False
        if exchange in self._timed:
            deadline = self._timed.pop(exchange)
            if not isinstance(message, (WriteRequest, InvokeRequest)):
                return self._status(exchange, Status.INVALID_ACTION, now_ms)
            if not message.timed_request:
                return self._status(exchange, Status.TIMED_REQUEST_MISMATCH, now_ms)
            if now_ms > deadline:
                return self._status(exchange, Status.TIMEOUT, now_ms)
            timed = True
        elif isinstance(message, (WriteRequest, InvokeRequest)) and message.timed_request:
            return self._status(exchange, Status.TIMED_REQUEST_MISMATCH, now_ms)
        elif isinstance(message, (ReadRequest, SubscribeRequest, WriteRequest, InvokeRequest, TimedRequest)) \
                and self._open_too_many(session):
            peer_log.info("exhausted", now_ms, "IM: a new interaction refused: %d open on its session, %d on "
                          "the node", self._open(session), self._open())
            return self._status(exchange, Status.RESOURCE_EXHAUSTED, now_ms)

        if isinstance(message, ReadRequest):
            return self._read(exchange, message, access, now_ms)
        if isinstance(message, SubscribeRequest):
            return self._subscribe(session, exchange, message, access, now_ms)
        if isinstance(message, (WriteRequest, InvokeRequest)) and self.can_change is not None \
                and not self.can_change():
            peer_log.info("unsaved", now_ms, "IM: a write or command refused: the node's state cannot be saved")
            return self._status(exchange, Status.RESOURCE_EXHAUSTED, now_ms)
        if isinstance(message, WriteRequest):
            return self._write(exchange, message, timed, access, now_ms)
        if isinstance(message, InvokeRequest):
            return self._invoke(exchange, message, timed, access, now_ms)
        if isinstance(message, TimedRequest):
            # The spec's Timeout is uint16 (ms); the CHIP SDK reads it as one and answers anything
            # else INVALID_ACTION. Only a peer the ACL grants something may hold a timed exchange.
            if not isinstance(message.timeout_ms, int) or not 0 <= message.timeout_ms <= 0xFFFF:
                return self._status(exchange, Status.INVALID_ACTION, now_ms)
            admits = getattr(self.access_check, "admits", None)
            if admits is not None and not admits(access):
                return self._status(exchange, Status.UNSUPPORTED_ACCESS, now_ms)
            self._timed[exchange] = now_ms + message.timeout_ms
            return self._send(exchange, StatusResponse(Status.SUCCESS), now_ms)
        if isinstance(message, StatusResponse):
            return exchange.close(now_ms)   # nothing of ours is waiting for it
        return self._status(exchange, Status.INVALID_ACTION, now_ms)

    def _open(self, session: Any = None) -> int:
        """Interactions held open between messages (of `session`; None: of the node)."""
        return sum(1 for e in (*self._pending, *self._timed, *self._writes) if session is None or e.session is session)

    def _open_too_many(self, session: Any) -> bool:
        return self._open(session) >= MAX_OPEN_PER_SESSION or self._open() >= MAX_OPEN_PER_NODE

    def on_timer(self, now_ms: float) -> list[Action]:
        actions: list[Action] = []
        for pending in list(self._pending.values()):
            if pending.exchange.closed or now_ms >= pending.deadline_ms:
                peer_log.info("abandoned", now_ms, "IM %s on exchange %d got no answer; abandoned", pending.kind,
                              pending.exchange.exchange_id)
                actions += self._abandon(pending, now_ms)
        for exchange, deadline in list(self._timed.items()):
            if exchange.closed or now_ms >= deadline + RESPONSE_TIMEOUT_MS:
                del self._timed[exchange]
                actions += [] if exchange.closed else exchange.close(now_ms)
        for exchange, (_, deadline) in list(self._writes.items()):
            if exchange.closed or now_ms >= deadline:   # the next write chunk never came
                del self._writes[exchange]
                self._write_access.pop(exchange, None)
                actions += [] if exchange.closed else exchange.close(now_ms)
        if self._watched and self._next_sample_ms is None:   # watched since a re-composition
            self._next_sample_ms = now_ms + self.sample_ms
        elif self._next_sample_ms is not None and now_ms >= self._next_sample_ms:
            self._next_sample_ms = now_ms + self.sample_ms
            self._samples += 1
            self._sample(self._watched, self._samples)
        for sub in list(self.subscriptions.values()):
            due = self._due(sub)
            if due is not None and now_ms >= due:
                actions += self._report(sub, now_ms)
        return actions

    def next_timer(self) -> float | None:
        due = [p.deadline_ms for p in self._pending.values()]
        due += [d + RESPONSE_TIMEOUT_MS for d in self._timed.values()]
        due += [d for _, d in self._writes.values()]
        due += [d for s in self.subscriptions.values() if (d := self._due(s)) is not None]
        if self._next_sample_ms is not None:
            due.append(self._next_sample_ms)
        return min(due) if due else None

    def session_closed(self, session: Any, now_ms: float = 0.0) -> list[Action]:
        for sub in [s for s in self.subscriptions.values() if s.session is session]:
            self._remove(sub)
        for exchange in [e for e in (*self._pending, *self._timed, *self._writes) if e.session is session]:
            self._forget(exchange)
        return []

    def exchange_failed(self, exchange: Exchange, now_ms: float = 0.0) -> list[Action]:
        """MRP gave up on an exchange (on_timer notices this by itself too)."""
        pending = self._pending.get(exchange)
        return self._abandon(pending, now_ms) if pending is not None else []

    def shutdown(self) -> None:
        """The node is going down: log BasicInformation ShutDown and make it due at once for
        the subscriptions that want it (the runtime gives them one last turn)."""
        basic = self._basic_information()
        if basic is not None:
            self._on_event(basic, Clusters.BasicInformation.Events.ShutDown(), urgent=True)

    def reporting(self) -> bool:
        """Whether a subscription has a report unanswered or events still to send."""
        return any(sub.busy is not None or sub.events_due for sub in self.subscriptions.values())

    def _basic_information(self) -> ClusterServer | None:
        root = self.device.endpoints.get(0)
        return root.servers.get(Clusters.BasicInformation.id) if root is not None else None

    def changed(self, endpoint: int | None = None, cluster: int | None = None) -> None:
        """Mark attributes changed that no listener reports (e.g. a PartsList after re-composition)."""
        self._derived = None   # endpoints may have come or gone
        self._watch_derived()
        for sub in self.subscriptions.values():
            for ep, server, name in self._expand_all(sub.paths):
                if endpoint in (None, ep) and cluster in (None, server.id):
                    sub.dirty.add((ep, server.id, server.attribute_class(name).attribute_id))
        self._notify()

    def _send(self, exchange: Exchange, message: Message | tuple[int, bytes], now_ms: float,
              close: bool = False) -> list[Action]:
        opcode, payload = (message.opcode, message.encode()) if isinstance(message, Message) else message
        try:
            actions = exchange.send(opcode, payload, now_ms)
        except ExchangeError as e:
            log.info("IM could not send 0x%02x: %s", opcode, e)
            return [] if exchange.closed else exchange.close(now_ms)
        return actions + (exchange.close(now_ms) if close else [])

    def _status(self, exchange: Exchange, status: Status, now_ms: float, close: bool = True) -> list[Action]:
        return self._send(exchange, StatusResponse(status), now_ms, close=close)

    def _start(self, exchange: Exchange, kind: str, chunks: Iterator[Chunk], now_ms: float,
               subscription: Subscription | None = None, expect_last: bool = True) -> list[Action]:
        """Send the first chunk; each of the others is encoded when the SUCCESS StatusResponse
        to the one before it comes in."""
        opcode, payload, more = next(chunks)
        if not more and not expect_last:
            return self._send(exchange, (opcode, payload), now_ms, close=True)
        pending = Pending(exchange, kind, chunks, more, now_ms + RESPONSE_TIMEOUT_MS, subscription)
        self._pending[exchange] = pending
        if subscription is not None:
            subscription.busy = pending
        actions = self._send(exchange, (opcode, payload), now_ms)
        if exchange.closed:
            return actions + self._abandon(pending, now_ms)
        return actions

    def _continue(self, pending: Pending, status: int, now_ms: float) -> list[Action]:
        exchange = pending.exchange
        if status != Status.SUCCESS:
            log.info("IM %s answered with status 0x%02x; ended", pending.kind, status)
            return self._abandon(pending, now_ms)
        if pending.more:
            try:
                opcode, payload, pending.more = next(pending.chunks)
            except Exception:   # a bug while encoding must end this interaction, not the node
                log.exception("IM %s: encoding the next chunk failed", pending.kind)
                return self._abandon(pending, now_ms)
            pending.deadline_ms = now_ms + RESPONSE_TIMEOUT_MS
            last_of_read = pending.kind in ("read", "invoke") and not pending.more
            if last_of_read:
                del self._pending[exchange]
            return self._send(exchange, (opcode, payload), now_ms, close=last_of_read)
        del self._pending[exchange]
        sub = pending.subscription
        if sub is not None:
            sub.busy = None
        if pending.kind == "priming" and sub is not None:
            sub.active = True
            sub.last_report_ms = now_ms
            if self.on_subscriptions is not None:
                self.on_subscriptions()
            return self._send(exchange, SubscribeResponse(sub.id, sub.max_interval_s), now_ms, close=True)
        return exchange.close(now_ms)

    def _abandon(self, pending: Pending, now_ms: float) -> list[Action]:
        self._pending.pop(pending.exchange, None)
        if pending.subscription is not None:
            self._remove(pending.subscription)
        return [] if pending.exchange.closed else pending.exchange.close(now_ms)

    def _forget(self, exchange: Exchange) -> None:
        pending = self._pending.pop(exchange, None)
        if pending is not None and pending.subscription is not None:
            self._remove(pending.subscription)
        self._timed.pop(exchange, None)
        self._writes.pop(exchange, None)
        self._write_access.pop(exchange, None)

    def _remove(self, sub: Subscription) -> None:
        if self.subscriptions.pop(sub.id, None) is not None and self.on_subscriptions is not None:
            self.on_subscriptions()
        self._watch_derived()
        if sub.busy is not None:
            self._pending.pop(sub.busy.exchange, None)
            sub.busy = None

    @staticmethod
    def _access(session: Any) -> AccessContext:
        peer = getattr(session, "peer_node_id", None)
        return AccessContext(auth_mode="case" if peer is not None else "pase",
                             fabric_index=getattr(session, "fabric_index", None),
                             peer_node_id=peer, session=session)

    def _allowed(self, kind: str, access: AccessContext, endpoint: int, cluster: int, item: int) -> bool:
        return self.access_check is None or self.access_check(kind, access, endpoint, cluster, item)

    @staticmethod
    def _as(access: AccessContext, fn: Callable[..., Any], *args: Any) -> Any:
        token = current_access.set(access)
        try:
            return fn(*args)
        finally:
            current_access.reset(token)

    def _watch(self) -> None:
        """Listen to every server (node-only servers may have been added since last time)."""
        self._derived = None
        for server in self.device.servers():
            if self._on_change not in server.listeners:
                server.listeners.append(self._on_change)
            if self._on_event not in server.event_listeners:
                server.event_listeners.append(self._on_event)

    def _endpoint(self, server: ClusterServer) -> int | None:
        """The endpoint id at which this node serves `server` (None: not served, e.g. a device
        removed from a bridge, whose servers still carry our listeners)."""
        if self._endpoint_of is not None:
            return self._endpoint_of(server)
        return server.endpoint.id if server.endpoint is not None else None


def _acl_check(device: Device) -> AccessCheck | None:
    root = device.endpoints.get(0)
    server = root.servers.get(Clusters.AccessControl.id) if root is not None else None
    node = getattr(server, "node", None)
    return AclCheck(node, device) if node is not None and hasattr(node, "table") else None
