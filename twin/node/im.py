"""Interaction Model server (Core spec ch. 8), sans-IO, serving one Device's cluster servers.

The node runtime hands every IM message (protocol 0x0001) to `handle(session, exchange, opcode,
payload, now_ms)`; the answer is a list of message-layer actions (`Send`, ...), produced by
sending on the exchange, so the caller only forwards them. `on_timer(now_ms)` and `next_timer()`
drive subscription reports, response timeouts and timed-request windows; `session_closed()`
ends the subscriptions of a session. Nothing here reads a clock or does IO.

Reads, writes and invokes go through `Device.read/write/invoke` (so the cross-cluster rules
apply to Matter callers too), with `clusters.base.current_access` set to who is asking.

Interactions:
- Read: ReportData, chunked with MoreChunkedMessages when it does not fit one message (the client
  answers each chunk but the last with a StatusResponse); the last has SuppressResponse. Chunks
  are encoded lazily, one per StatusResponse (`_report_chunks`): a huge wildcard read costs one
  message's encoding per turn of the event loop that every node of the process shares, and a
  pending interaction holds its place in the paths, not its remaining messages.
- Subscribe: priming ReportData chunks (each answered by StatusResponse), then SubscribeResponse.
  Later reports go on new exchanges and must be answered; a failure status, no answer, or MRP
  giving up ends the subscription.
- Write (concrete paths, list append by ListIndex null, chunked writes, DataVersion checks) and
  Invoke (one or more commands, CommandRef) with TimedRequest support.

Subscriptions report what changed, and only that: listeners on the cluster servers mark
attributes dirty. Values derived per tick (a transition's CurrentLevel, a room's MeasuredValue)
fire no listener; each server names them in `derived`, and the node samples the ones some
subscription covers (no others, and nothing without subscribers) once per `sample_ms` on one
timer, and marks dirty those whose value moved. A dirty attribute is read and encoded when its
subscription's report is due: never faster than the min interval, always the latest value; an
empty report keeps the subscription alive at the max interval. Nothing is re-read or
re-encoded while nothing changes.

Attributes a server lists in `changes_omitted` (the spec's "C" quality, e.g. UpTime) are read
normally but never reported because they changed. Quality "Q" attributes (CountdownTime,
RemainingTime) are derived per tick, so sampling reports them at most once per `sample_ms` (1 s);
a server may sample some less often (`sample_seconds`, e.g. a meter's cumulative energy).

DataVersion of a server with derived values: those move without the server's DataVersion
moving, so the IM reports `server.data_version + bump`, where `bump` is a per-node counter
raised whenever a sample sees one of the cluster's derived values move (samples also run before
a read reports or filters on the cluster's version). The simulation's own DataVersions (in
snapshots) are untouched, so step == fast-forward stays byte-identical.

Events (Core spec 8.x, "Event"): servers announce events through `ClusterServer.emit_event`;
the IM listens (`event_listeners`, no copy of server state) and keeps the node's event log:
per-node event numbers that only ever rise, the spec priority of each event
(`EVENT_PRIORITY`), and a bounded buffer per priority (`EVENT_BUFFER`, oldest dropped first).
The timestamp is a system timestamp: the twin's virtual time in ms (the home clock's tick * 100),
which is monotonic and deterministic; the node keeps no epoch time. Event numbers come from an
`EventNumbers` counter; the node runtime persists it, so numbers keep rising across restarts.
BasicInformation StartUp is logged when the IM is created (the node starts); `shutdown()` logs
ShutDown and sends it at once. Reads and subscriptions honour EventRequests (wildcards) and
EventFilters (EventMin); a subscription reports new matching events at its min interval, or at
once when the matching path has IsUrgent set.

Access control (`access_check`, see twin/node/access.py) is called for every attribute, command
and event; None allows all.
"""
from __future__ import annotations

import collections
import dataclasses
import itertools
import logging
import random
import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from chip.clusters import Objects as Clusters
from chip.clusters.ClusterObjects import ClusterCommand, ClusterEvent, ClusterObject
from chip.clusters.Types import NullValue

from clusters.base import TICKS_PER_SECOND, AccessContext, ClusterServer, current_access
from clusters.device import Device
from clusters.status import MatterError, Status
from clusters.values import to_json
from matter_protocol.exchange import ExchangeError
from matter_protocol.interaction import (
    FABRIC_INDEX_TAG,
    AttributeData,
    AttributePath,
    AttributeReport,
    AttributeStatus,
    CommandData,
    CommandPath,
    CommandStatus,
    EventData,
    EventPath,
    EventReport,
    EventStatus,
    InvokeRequest,
    InvokeResponse,
    InvokeResponseIB,
    Message,
    Opcode,
    ReadRequest,
    ReportData,
    StatusIB,
    StatusResponse,
    SubscribeRequest,
    SubscribeResponse,
    TimedRequest,
    WriteRequest,
    WriteResponse,
    decode_message,
)
from matter_protocol.message import ProtocolId
from matter_protocol.tlv import CodecError, Raw, Struct
from twin.node.access import AclCheck
from twin.node.values import Typed, decode_typed, encode_value, list_item_type, without_sensitive

log = logging.getLogger(__name__)

#: Largest IM payload we send: 1280-byte UDP message minus secure header (8), payload header with
#: piggybacked ack and vendor id (12) and MIC (16), rounded down for headroom.
MAX_PAYLOAD = 1200
#: How long we wait for the client's StatusResponse to a report chunk before giving up.
RESPONSE_TIMEOUT_MS = 30_000
#: While subscribed, derived attributes (no listener) are sampled this often.
DEFAULT_SAMPLE_MS = 1_000
#: Event numbers are reserved in persistent storage this many at a time.
EVENT_NUMBER_BLOCK = 1_000
#: A max interval of 0 would report without pause; we raise it to at least this.
MIN_MAX_INTERVAL_S = 1
#: The longest max interval we grant (unless the client's floor is longer). A controller learns
#: that a node restarted or vanished only when a max interval passes without a report; those
#: that cannot take a resumed subscription (no CASE responder, e.g. python-matter-server 5.x in
#: Home Assistant) would otherwise stay stale for their whole ceiling (often 300 s). The cost is
#: one empty report per subscription per interval.
GRANTED_MAX_INTERVAL_S = 5
MAX_SUBSCRIPTIONS = 64
#: Core spec "Subscribe Interaction Limits": a publisher supports at least 3 subscriptions per
#: fabric. Each fabric present is guaranteed max(this, MAX_SUBSCRIPTIONS // fabrics) slots; a
#: fabric under its share evicts from the fabric furthest over its own (see `_make_room`).
MIN_SUBSCRIPTIONS_PER_FABRIC = 3
#: Paths (attribute + event) one ReadRequest or SubscribeRequest may carry. The spec's minimum
#: is 9 per read and 3 per subscription; a request beyond this bound is answered
#: PATHS_EXHAUSTED, as the CHIP SDK does when its path pool runs out (600 full wildcards fit
#: one datagram and would expand to the whole node 600 times).
MAX_PATHS_PER_REQUEST = 32

# WildcardPathFlags (AttributePathIB tag 6)
SKIP_ROOT_NODE = 0x01
SKIP_GLOBAL_ATTRIBUTES = 0x02
SKIP_ATTRIBUTE_LIST = 0x04
SKIP_COMMAND_LISTS = 0x10

_GLOBAL_IDS = {0xFFF8, 0xFFF9, 0xFFFA, 0xFFFB, 0xFFFC, 0xFFFD}
_COMMAND_LIST_IDS = {0xFFF8, 0xFFF9}

#: (kind, access, endpoint, cluster, attribute, command or event id) -> allowed?
#: kind: "read", "write", "invoke" or "event".
AccessCheck = Callable[[str, AccessContext, int, int, int], bool]

Key = tuple[int, int, int]   # (endpoint, cluster id, attribute id)

# Event priorities (Core spec PriorityLevel).
DEBUG, INFO, CRITICAL = 0, 1, 2
#: The spec priority of the events our servers emit (cluster spec, "Events" tables); chip's
#: Objects do not carry it. Anything not listed is INFO, the priority of most cluster events.
EVENT_PRIORITY: dict[tuple[int, int], int] = {
    (Clusters.BasicInformation.id, Clusters.BasicInformation.Events.StartUp.event_id): CRITICAL,
    (Clusters.BasicInformation.id, Clusters.BasicInformation.Events.ShutDown.event_id): CRITICAL,
    (Clusters.BasicInformation.id, Clusters.BasicInformation.Events.Leave.event_id): INFO,
    (Clusters.BridgedDeviceBasicInformation.id,
     Clusters.BridgedDeviceBasicInformation.Events.StartUp.event_id): CRITICAL,
    (Clusters.BridgedDeviceBasicInformation.id,
     Clusters.BridgedDeviceBasicInformation.Events.ShutDown.event_id): CRITICAL,
    (Clusters.OperationalState.id, Clusters.OperationalState.Events.OperationalError.event_id): CRITICAL,
    (Clusters.RvcOperationalState.id, Clusters.RvcOperationalState.Events.OperationalError.event_id): CRITICAL,
}
#: Events kept per priority (the spec's per-priority buffers; the oldest goes first).
EVENT_BUFFER = {DEBUG: 64, INFO: 256, CRITICAL: 64}


@dataclass(frozen=True)
class EventRecord:
    number: int
    priority: int
    endpoint: int
    cluster: int
    event: int
    system_ms: int
    data: bytes            # the event's fields, TLV-encoded by its chip type
    fabric_index: int | None = None   # fabric-sensitive events go to that fabric only


@dataclass(eq=False)
class Subscription:
    id: int
    session: Any
    layer: Any
    handler: Any
    paths: list[AttributePath]
    fabric_filtered: bool
    min_interval_ms: int
    max_interval_ms: int
    active: bool = False                  # SubscribeResponse sent
    last_report_ms: float = 0.0
    dirty: set[Key] = field(default_factory=set)
    busy: _Pending | None = None        # a report (or the priming) waiting for its answer
    event_paths: list[EventPath] = field(default_factory=list)
    event_min: int = 0                    # next event number to report
    events_due: bool = False              # a matching event is waiting
    urgent: bool = False                  # ... and an urgent path matched it

    @property
    def max_interval_s(self) -> int:
        return self.max_interval_ms // 1000

    def covers(self, key: Key) -> bool:
        ep, cl, attr = key
        return any(p.endpoint in (None, ep) and p.cluster in (None, cl) and p.attribute in (None, attr)
                   for p in self.paths)


class EventNumbers:
    """A node's event numbers (Core spec "Event Number": they only ever rise, restarts included).

    With `persist`, numbers are handed out in blocks: `persist(limit)` stores the end of a block
    before its first number is used, and a restart starts from the stored limit, so no number
    is ever handed out twice even if the process dies without warning.
    """

    def __init__(self, start: int = 0, persist: Callable[[int], None] | None = None,
                 block: int = EVENT_NUMBER_BLOCK):
        self.next = start
        self._limit = start
        self._persist = persist
        self._block = block

    def take(self) -> int:
        if self._persist is not None and self.next >= self._limit:
            self._limit = self.next + self._block
            self._persist(self._limit)
        number, self.next = self.next, self.next + 1
        return number


class _Derived(typing.NamedTuple):
    """A derived attribute the node samples (see the top)."""
    key: Key
    server: ClusterServer
    name: str
    every: int             # timer samples between re-reads (from the server's `sample_seconds`)


#: One message of a chunked answer: (opcode, payload, more chunks follow?).
Chunk = tuple[int, bytes, bool]


@dataclass(eq=False)
class _Pending:
    """An interaction waiting for the client's StatusResponse before its next message.

    `chunks` encodes the next message only when asked (see `_report_chunks`): what a pending
    read holds is its position in the expanded paths and at most one encoded item, however
    much is left to send."""
    exchange: Any
    kind: str                             # "read", "priming", "report" or "invoke"
    chunks: Iterator[Chunk]               # the rest, encoded one message per SUCCESS
    more: bool                            # `chunks` has another message
    deadline_ms: float
    subscription: Subscription | None = None


class InteractionModelServer:
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
        if access_check == "acl":
            access_check = _acl_check(data_model)
        self.access_check = access_check
        #: Called when a subscription gets something to report, so the runtime can re-arm its timer.
        self.on_dirty: Callable[[], None] | None = None
        #: Called when a subscription became active or ended, so the runtime can persist them.
        self.on_subscriptions: Callable[[], None] | None = None
        self.subscriptions: dict[int, Subscription] = {}
        self._pending: dict[Any, _Pending] = {}
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
        self._derived: dict[tuple[int, int], list[_Derived]] | None = None
        #: The part of it some subscription covers: what the sampling timer re-reads.
        self._watched: dict[tuple[int, int], list[_Derived]] = {}
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

    # ---- entry points ----------------------------------------------------------------------
    def handle(self, session: Any, exchange: Any, opcode: int, payload: bytes, now_ms: float) -> list:
        if not getattr(session, "is_secure", False):
            return exchange.close(now_ms)   # the IM runs only on PASE/CASE sessions
        try:
            message = decode_message(opcode, payload)
        except CodecError as e:
            log.info("malformed IM message 0x%02x: %s", opcode, e)
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

        if isinstance(message, ReadRequest):
            return self._read(exchange, message, access, now_ms)
        if isinstance(message, SubscribeRequest):
            return self._subscribe(session, exchange, message, access, now_ms)
        if isinstance(message, WriteRequest):
            return self._write(exchange, message, timed, access, now_ms)
        if isinstance(message, InvokeRequest):
            return self._invoke(exchange, message, timed, access, now_ms)
        if isinstance(message, TimedRequest):
            self._timed[exchange] = now_ms + message.timeout_ms
            return self._send(exchange, StatusResponse(Status.SUCCESS), now_ms)
        if isinstance(message, StatusResponse):
            return exchange.close(now_ms)   # nothing of ours is waiting for it
        return self._status(exchange, Status.INVALID_ACTION, now_ms)

    def on_timer(self, now_ms: float) -> list:
        actions: list = []
        for pending in list(self._pending.values()):
            if pending.exchange.closed or now_ms >= pending.deadline_ms:
                log.info("IM %s on exchange %d got no answer; abandoned", pending.kind,
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

    def session_closed(self, session: Any, now_ms: float = 0.0) -> list:
        for sub in [s for s in self.subscriptions.values() if s.session is session]:
            self._remove(sub)
        for exchange in [e for e in (*self._pending, *self._timed, *self._writes) if e.session is session]:
            self._forget(exchange)
        return []

    def exchange_failed(self, exchange: Any, now_ms: float = 0.0) -> list:
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

    # ---- sending helpers ---------------------------------------------------------------------
    def _send(self, exchange: Any, message: Message | tuple[int, bytes], now_ms: float,
              close: bool = False) -> list:
        opcode, payload = (message.opcode, message.encode()) if isinstance(message, Message) else message
        try:
            actions = exchange.send(opcode, payload, now_ms)
        except ExchangeError as e:
            log.info("IM could not send 0x%02x: %s", opcode, e)
            return [] if exchange.closed else exchange.close(now_ms)
        return actions + (exchange.close(now_ms) if close else [])

    def _status(self, exchange: Any, status: Status, now_ms: float, close: bool = True) -> list:
        return self._send(exchange, StatusResponse(status), now_ms, close=close)

    def _start(self, exchange: Any, kind: str, chunks: Iterator[Chunk], now_ms: float,
               subscription: Subscription | None = None, expect_last: bool = True) -> list:
        """Send the first chunk; each of the others is encoded when the SUCCESS StatusResponse
        to the one before it comes in."""
        opcode, payload, more = next(chunks)
        if not more and not expect_last:
            return self._send(exchange, (opcode, payload), now_ms, close=True)
        pending = _Pending(exchange, kind, chunks, more, now_ms + RESPONSE_TIMEOUT_MS, subscription)
        self._pending[exchange] = pending
        if subscription is not None:
            subscription.busy = pending
        actions = self._send(exchange, (opcode, payload), now_ms)
        if exchange.closed:
            return actions + self._abandon(pending, now_ms)
        return actions

    def _continue(self, pending: _Pending, status: int, now_ms: float) -> list:
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

    def _abandon(self, pending: _Pending, now_ms: float) -> list:
        self._pending.pop(pending.exchange, None)
        if pending.subscription is not None:
            self._remove(pending.subscription)
        return [] if pending.exchange.closed else pending.exchange.close(now_ms)

    def _forget(self, exchange: Any) -> None:
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

    # ---- access --------------------------------------------------------------------------
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

    # ---- paths ---------------------------------------------------------------------------
    def _expand(self, path: AttributePath) -> list[tuple[int, ClusterServer, str]]:
        """Concrete attributes a path names. A concrete path that names nothing raises its
        status; a wildcard silently yields what exists (Core spec, "Wildcard paths")."""
        if path.list_index is not None:
            raise MatterError(Status.INVALID_ACTION, "read paths may not carry a ListIndex")
        if path.concrete:
            server = self.device.locate(path.cluster, path.endpoint)
            return [(path.endpoint, server, server.resolve_attribute(path.attribute))]
        flags = path.wildcard_flags or 0
        out = []
        for ep_id in sorted(self.device.endpoints):
            if path.endpoint is not None and ep_id != path.endpoint:
                continue
            if path.endpoint is None and ep_id == 0 and flags & SKIP_ROOT_NODE:
                continue
            servers = self.device.endpoints[ep_id].servers
            for cluster_id in sorted(servers):
                if path.cluster is not None and cluster_id != path.cluster:
                    continue
                server = servers[cluster_id]
                for name in server.attribute_names():
                    attr_id = server.attribute_class(name).attribute_id
                    if path.attribute is not None and attr_id != path.attribute:
                        continue
                    if path.attribute is None and (
                            (flags & SKIP_GLOBAL_ATTRIBUTES and attr_id in _GLOBAL_IDS)
                            or (flags & SKIP_ATTRIBUTE_LIST and attr_id == 0xFFFB)
                            or (flags & SKIP_COMMAND_LISTS and attr_id in _COMMAND_LIST_IDS)):
                        continue
                    out.append((ep_id, server, name))
        return out

    def _expand_all(self, paths: list[AttributePath]) -> Iterator[tuple[int, ClusterServer, str]]:
        for path in paths:
            try:
                yield from self._expand(path)
            except MatterError:
                continue

    # ---- report items ---------------------------------------------------------------------
    def _status_item(self, path: AttributePath, status: int, cluster_status: int | None = None) -> bytes:
        return AttributeReport(attribute_status=AttributeStatus(
            path, StatusIB(status, cluster_status))).element()

    def _value(self, ep: int, server: ClusterServer, name: str, access: AccessContext,
               fabric_filtered: bool) -> bytes:
        """The attribute's current value, TLV-encoded by its declared type (raises MatterError)."""
        value = self._as(_read_access(access, fabric_filtered), self.device.read, server.id, name, ep)
        value = _for_reader(value, access, fabric_filtered)
        typ = server.attribute_class(name).attribute_type.Type
        try:
            return encode_value(typ, value)
        except CodecError as e:
            log.error("%s.%s on endpoint %d holds a value its type rejects: %s", server.name, name, ep, e)
            raise MatterError(Status.FAILURE, str(e)) from None

    def _items(self, ep: int, server: ClusterServer, name: str, access: AccessContext,
               fabric_filtered: bool) -> list[bytes]:
        attr_cls = server.attribute_class(name)
        path = AttributePath(endpoint=ep, cluster=server.id, attribute=attr_cls.attribute_id)
        try:
            data = self._value(ep, server, name, access, fabric_filtered)
        except MatterError as e:
            return [self._status_item(path, e.status, e.cluster_status)]
        except Exception:   # a bug in one server must not break the whole report
            log.exception("reading %s.%s on endpoint %d failed", server.name, name, ep)
            return [self._status_item(path, Status.FAILURE)]
        version = self._version(ep, server)
        item = AttributeReport(attribute_data=AttributeData(path, Raw(data), version)).element()
        if len(item) <= self._item_budget:
            return [item]
        # Too big for one message: the spec's list chunking, an empty list then one append per item.
        typ = attr_cls.attribute_type.Type
        item_typ = list_item_type(typ)
        value = self._as(_read_access(access, fabric_filtered), self.device.read, server.id, name, ep)
        if item_typ is None or not isinstance(value, list):
            return [self._status_item(path, Status.RESOURCE_EXHAUSTED)]
        append = dataclasses.replace(path, list_index=NullValue)
        pieces = [AttributeReport(attribute_data=AttributeData(path, Raw(encode_value(typ, [])), version)).element()]
        for v in _for_reader(value, access, fabric_filtered):
            piece = AttributeReport(attribute_data=AttributeData(
                append, Raw(encode_value(item_typ, v)), version)).element()
            if len(piece) > self._item_budget:
                return [self._status_item(path, Status.RESOURCE_EXHAUSTED)]
            pieces.append(piece)
        return pieces

    def _version(self, ep: int, server: ClusterServer) -> int:
        """The DataVersion we report: the server's plus our bumps for derived values (see top)."""
        return (server.data_version + self._bumps.get((ep, server.id), 0)) & 0xFFFFFFFF

    # ---- derived values -------------------------------------------------------------------
    def _derived_attributes(self) -> dict[tuple[int, int], list[_Derived]]:
        if self._derived is None:
            self._derived = {}
            for ep_id, endpoint in self.device.endpoints.items():
                for server in endpoint.servers.values():
                    # What this instance has (features vary), minus C quality: not reported.
                    names = sorted(server.derived.intersection(server.attributes) - server.changes_omitted)
                    if names:
                        self._derived[(ep_id, server.id)] = [
                            _Derived((ep_id, server.id, server.attribute_class(n).attribute_id), server, n,
                                     max(1, round(server.sample_seconds.get(n, 1) * 1000 / self.sample_ms)))
                            for n in names]
        return self._derived

    def _watch_derived(self, now_ms: float | None = None) -> None:
        """Sample the derived attributes the subscriptions cover (on a timer only if any);
        called whenever subscriptions or the composition change."""
        self._watched = {}
        for cluster, attributes in self._derived_attributes().items():
            covered = [a for a in attributes if any(s.covers(a.key) for s in self.subscriptions.values())]
            if covered:
                self._watched[cluster] = covered
        if not self._watched:
            self._next_sample_ms = None
        elif self._next_sample_ms is None and now_ms is not None:
            self._next_sample_ms = now_ms + self.sample_ms

    def _sample(self, clusters: dict[tuple[int, int], list[_Derived]], count: int | None = None) -> None:
        """Re-read these clusters' derived attributes (on the timer's `count`-th sample, those
        due then). A value that moved since the last sample bumps its cluster's DataVersion
        and is dirty for the subscriptions that cover it."""
        marked = False
        for cluster, attributes in clusters.items():
            moved = False
            for key, server, name, every in attributes:
                if count is not None and count % every:
                    continue
                try:
                    value = server.get(name)
                except Exception:   # reported as an error status when actually read
                    continue
                if key in self._sampled and self._sampled[key] != value:
                    moved = True
                    marked = self._mark_dirty(key) or marked
                self._sampled[key] = value
            if moved:
                self._bumps[cluster] = self._bumps.get(cluster, 0) + 1
        if marked:
            self._notify()

    def _read_items(self, paths: list[AttributePath], filters: list, fabric_filtered: bool,
                    access: AccessContext) -> Iterator[bytes]:
        """The AttributeReportIBs of a read or priming report, encoded as they are consumed:
        the generator's position (path, then the path's expansion) is where the next chunk
        resumes, as the CHIP SDK's read handler keeps a path-expansion iterator across chunks."""
        versions = {(f.path.endpoint, f.path.cluster): f.data_version for f in filters or ()}
        derived = self._derived_attributes()
        sampled: set[tuple[int, int]] = set()
        for path in paths:
            try:
                targets = self._expand(path)
            except MatterError as e:
                yield self._status_item(path, e.status, e.cluster_status)
                continue
            for ep, server, name in targets:
                attr_id = server.attribute_class(name).attribute_id
                if not self._allowed("read", access, ep, server.id, attr_id):
                    if path.concrete:
                        yield self._status_item(path, Status.UNSUPPORTED_ACCESS)
                    continue
                cluster = (ep, server.id)
                if cluster in derived and cluster not in sampled:   # before we report its version
                    sampled.add(cluster)
                    self._sample({cluster: derived[cluster]})
                if versions.get(cluster) == self._version(ep, server):
                    continue   # the client already holds this cluster's data
                yield from self._items(ep, server, name, access, fabric_filtered)

    def _report_chunks(self, items: Iterator[tuple[bool, bytes]], subscription_id: int | None,
                       for_read: bool) -> Iterator[Chunk]:
        """ReportData messages holding `items` ((is an event, EventReportIB or AttributeReportIB),
        attributes first), in order, each within max_payload, at least one (maybe empty).

        Lazy: each message is encoded when the caller asks for it, from the items it takes off
        `items`; the one item that did not fit waits for the next message (it is how we know
        whether MoreChunkedMessages is set). So a pending interaction never holds more than one
        message's worth of encoded data, and one turn of the event loop encodes one message."""
        carry = next(items, None)
        while True:
            attrs: list[Raw] = []
            events: list[Raw] = []
            size = 0
            while carry is not None and (size == 0 or size + len(carry[1]) <= self._item_budget):
                (events if carry[0] else attrs).append(Raw(carry[1]))
                size += len(carry[1])
                carry = next(items, None)
            more = carry is not None
            message = ReportData(subscription_id=subscription_id, attribute_reports=attrs or None,
                                 event_reports=events or None, more_chunked=more,
                                 suppress_response=for_read and not more)
            yield Opcode.ReportData, message.encode(), more
            if not more:
                return

    # ---- read ----------------------------------------------------------------------------
    def _read(self, exchange: Any, message: ReadRequest, access: AccessContext, now_ms: float) -> list:
        if not message.attribute_requests and not message.event_requests:
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        if len(message.attribute_requests or ()) + len(message.event_requests or ()) > MAX_PATHS_PER_REQUEST:
            return self._status(exchange, Status.PATHS_EXHAUSTED, now_ms)
        items = self._read_items(message.attribute_requests or [], message.data_version_filters,
                                 message.fabric_filtered, access)
        events = self._event_items(message.event_requests or [], _event_min(message.event_filters), access,
                                   below=self.event_numbers.next)
        chunks = self._report_chunks(_tagged(items, events), None, for_read=True)
        return self._start(exchange, "read", chunks, now_ms, expect_last=False)

    # ---- subscribe -----------------------------------------------------------------------
    def _subscribe(self, session: Any, exchange: Any, message: SubscribeRequest, access: AccessContext,
                   now_ms: float) -> list:
        floor, ceiling = message.min_interval_floor, message.max_interval_ceiling
        if floor > ceiling or floor > 0xFFFF or ceiling > 0xFFFF:
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        if not message.attribute_requests and not message.event_requests:
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        if len(message.attribute_requests or ()) + len(message.event_requests or ()) > MAX_PATHS_PER_REQUEST:
            return self._status(exchange, Status.PATHS_EXHAUSTED, now_ms)
        if not self._may_read_any(message.attribute_requests or [], message.event_requests or [], access):
            # As the CHIP SDK does: a subscription to nothing the peer may read is refused
            # outright (its read would only answer UNSUPPORTED_ACCESS per path).
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        if not message.keep_subscriptions:
            for old in [s for s in self.subscriptions.values() if _same_peer(s.session, session)]:
                self._remove(old)
        if len(self.subscriptions) >= MAX_SUBSCRIPTIONS and not self._make_room(access.fabric_index):
            return self._status(exchange, Status.RESOURCE_EXHAUSTED, now_ms)
        sub_id = self.rng.getrandbits(32)
        while sub_id in self.subscriptions:
            sub_id = self.rng.getrandbits(32)
        # The publisher may pick any max interval in [floor, max(limit, ceiling)]: the client's
        # ceiling, but at most ours (see GRANTED_MAX_INTERVAL_S), never below the floor or zero.
        max_interval = max(min(ceiling, self.granted_max_interval_s), floor, MIN_MAX_INTERVAL_S)
        sub = Subscription(sub_id, session, exchange.layer, exchange.handler,
                           list(message.attribute_requests or []), message.fabric_filtered,
                           floor * 1000, max_interval * 1000,
                           event_paths=list(message.event_requests or []))
        self._watch()
        items = self._read_items(sub.paths, message.data_version_filters, sub.fabric_filtered, access)
        sub.event_min = self.event_numbers.next   # later events come in reports
        events = self._event_items(sub.event_paths, _event_min(message.event_filters), access, below=sub.event_min)
        self.subscriptions[sub_id] = sub
        self._watch_derived(now_ms)
        chunks = self._report_chunks(_tagged(items, events), sub_id, for_read=False)
        return self._start(exchange, "priming", chunks, now_ms, subscription=sub)

    def resume(self, sub: Subscription, now_ms: float) -> None:
        """Take back a subscription persisted before a restart (`sub.session`: a CASE session
        this node opened to the subscriber): its first report, due now, carries every path it
        covers and the buffered events, a fresh priming report under the same subscription id,
        as the CHIP SDK's subscription resumption sends."""
        self._watch()
        sub.active, sub.last_report_ms = True, now_ms - sub.max_interval_ms
        sub.dirty = {(ep, server.id, server.attribute_class(name).attribute_id)
                     for ep, server, name in self._expand_all(sub.paths)}
        sub.event_min, sub.events_due = 0, bool(sub.event_paths)
        self.subscriptions[sub.id] = sub
        self._watch_derived(now_ms)
        self._notify()

    def _make_room(self, fabric_index: int | None) -> bool:
        """All slots are taken: evict one subscription for a newcomer of `fabric_index`, if that
        fabric holds fewer than its fair share and another holds more than its own.

        The share of each fabric with subscriptions (the newcomer's included) is
        max(MIN_SUBSCRIPTIONS_PER_FABRIC, MAX_SUBSCRIPTIONS // fabrics). As the spec's eviction
        rule asks, the victim comes from the fabric most over its share: the subscription with
        the most paths there, the oldest of those. PASE subscriptions (no fabric yet) count as
        one more "fabric"."""
        counts = collections.Counter(getattr(s.session, "fabric_index", None) for s in self.subscriptions.values())
        share = max(MIN_SUBSCRIPTIONS_PER_FABRIC, MAX_SUBSCRIPTIONS // len(set(counts) | {fabric_index}))
        if counts[fabric_index] >= share:
            return False
        over = [f for f, n in counts.items() if f != fabric_index and n > share]
        if not over:
            return False
        crowded = max(over, key=lambda f: counts[f])
        victim = max((s for s in self.subscriptions.values() if getattr(s.session, "fabric_index", None) == crowded),
                     key=lambda s: len(s.paths) + len(s.event_paths))   # max keeps the first (oldest) of ties
        log.info("subscription 0x%08x of fabric %s evicted for one of fabric %s (%d slots, share %d)",
                 victim.id, crowded, fabric_index, MAX_SUBSCRIPTIONS, share)
        self._remove(victim)
        return True

    def _may_read_any(self, paths: list[AttributePath], event_paths: list[EventPath],
                      access: AccessContext) -> bool:
        """Does the peer have read access to anything these paths name? A concrete path is
        checked on its ids (whether or not it exists), a wildcard on what it expands to."""
        if self.access_check is None:
            return True
        for path in paths:
            if path.concrete:
                if self._allowed("read", access, path.endpoint, path.cluster, path.attribute):
                    return True
                continue
            try:
                targets = self._expand(path)
            except MatterError:
                continue
            if any(self._allowed("read", access, ep, server.id, server.attribute_class(name).attribute_id)
                   for ep, server, name in targets):
                return True
        for path in event_paths:
            for ep_id, endpoint in self.device.endpoints.items():
                if path.endpoint not in (None, ep_id):
                    continue
                for cluster_id in endpoint.servers:
                    if path.cluster not in (None, cluster_id):
                        continue
                    if self._allowed("event", access, ep_id, cluster_id, path.event or 0):
                        return True
            if path.endpoint is not None and path.cluster is not None and self._allowed(
                    "event", access, path.endpoint, path.cluster, path.event or 0):
                return True
        return False

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

    # ---- events --------------------------------------------------------------------------
    def _on_event(self, server: ClusterServer, event: ClusterEvent, urgent: bool = False) -> None:
        ep = self._endpoint(server)
        if ep is None:
            return
        try:
            data = encode_value(type(event), event)
        except CodecError as e:
            log.error("%s event %s does not encode: %s", server.name, type(event).__name__, e)
            return
        priority = EVENT_PRIORITY.get((event.cluster_id, event.event_id), INFO)
        record = EventRecord(self.event_numbers.take(), priority, ep, event.cluster_id, event.event_id,
                             server.clock.tick * 1000 // TICKS_PER_SECOND, data, _fabric_index(event))
        self.events[priority].append(record)
        marked = False
        for sub in self.subscriptions.values():
            matching = [p for p in sub.event_paths if _event_matches(p, record)]
            if matching:
                sub.events_due = True
                sub.urgent = sub.urgent or urgent or any(p.is_urgent for p in matching)
                marked = True
        if marked:
            self._notify()

    def _event_items(self, paths: list[EventPath], event_min: int, access: AccessContext,
                     concrete_status: bool = True, below: int | None = None) -> Iterator[bytes]:
        """EventReportIBs for the logged events the paths name, numbers `event_min` to `below`
        (excluded; events logged while a chunked report is under way go in the next one),
        encoded as they are consumed."""
        for path in paths:
            if concrete_status and path.endpoint is not None and path.cluster is not None:
                status = self._event_path_status(path, access)
                if status is not None:
                    yield EventReport(event_status=EventStatus(path, StatusIB(status))).element()
        records = sorted((r for q in self.events.values() for r in q), key=lambda r: r.number)
        for r in records:
            if below is not None and r.number >= below:
                break
            if r.number < event_min or not any(_event_matches(p, r) for p in paths):
                continue
            if not self._allowed("event", access, r.endpoint, r.cluster, r.event):
                continue
            if r.fabric_index is not None and r.fabric_index != access.fabric_index:
                continue   # a fabric-sensitive event (e.g. AccessControlEntryChanged) of another fabric
            yield EventReport(event_data=EventData(
                EventPath(endpoint=r.endpoint, cluster=r.cluster, event=r.event), r.number, r.priority,
                system_timestamp=r.system_ms, data=Raw(r.data))).element()

    def _event_path_status(self, path: EventPath, access: AccessContext) -> int | None:
        """The status for a concrete event path that names nothing we serve, or may not be read."""
        ep = self.device.endpoints.get(path.endpoint)
        if ep is None:
            return Status.UNSUPPORTED_ENDPOINT
        if path.cluster not in ep.servers:
            return Status.UNSUPPORTED_CLUSTER
        if path.event is not None and not self._allowed("event", access, path.endpoint, path.cluster, path.event):
            return Status.UNSUPPORTED_ACCESS
        return None

    def _on_change(self, server: ClusterServer, name: str) -> None:
        if not self.subscriptions or server.endpoint is None or name in server.changes_omitted:
            return
        ep = self._endpoint(server)
        if ep is None:
            return
        if self._mark_dirty((ep, server.id, server.attribute_class(name).attribute_id)):
            self._notify()

    def _mark_dirty(self, key: Key) -> bool:
        """Mark the attribute dirty for the subscriptions that cover it; did any?"""
        marked = False
        for sub in self.subscriptions.values():
            if sub.covers(key):
                sub.dirty.add(key)
                marked = True
        return marked

    def _notify(self) -> None:
        if self.on_dirty is not None:
            self.on_dirty()

    def _due(self, sub: Subscription) -> float | None:
        """When this subscription next has something to send (None while it waits)."""
        if not sub.active or sub.busy is not None:
            return None
        earliest_allowed = sub.last_report_ms + sub.min_interval_ms
        due = sub.last_report_ms + sub.max_interval_ms
        if sub.dirty or sub.events_due:
            due = min(due, earliest_allowed)
        if sub.urgent:
            due = min(due, sub.last_report_ms)   # urgent events do not wait for the min interval
        return due

    def _dirty_items(self, keys: list[Key], access: AccessContext, fabric_filtered: bool) -> Iterator[bytes]:
        """The AttributeReportIBs of a report of changes, encoded as they are consumed."""
        for key in keys:
            ep, cluster, attribute = key
            server = self.device.endpoints[ep].servers.get(cluster) if ep in self.device.endpoints else None
            if server is None or not self._allowed("read", access, *key):
                continue   # gone since it changed (a bridged device removed), or not theirs to see
            yield from self._items(ep, server, server.resolve_attribute(attribute), access, fabric_filtered)

    def _report(self, sub: Subscription, now_ms: float) -> list:
        access = self._access(sub.session)
        dirty, sub.dirty = sorted(sub.dirty), set()
        items = self._dirty_items(dirty, access, sub.fabric_filtered)
        events: Iterator[bytes] = iter(())
        if sub.events_due:
            below = self.event_numbers.next
            events = self._event_items(sub.event_paths, sub.event_min, access, concrete_status=False, below=below)
            sub.event_min = below
            sub.events_due = sub.urgent = False
        stream = _tagged(items, events)
        head = next(stream, None)
        if head is None and now_ms < sub.last_report_ms + sub.max_interval_ms:
            return []   # what changed is gone or hidden, and no keepalive is due yet
        try:
            exchange = sub.layer.new_exchange(sub.session, ProtocolId.INTERACTION_MODEL, handler=sub.handler)
        except ExchangeError as e:
            log.info("subscription 0x%08x ended: %s", sub.id, e)
            self._remove(sub)
            return []
        sub.last_report_ms = now_ms
        chunks = self._report_chunks(itertools.chain(() if head is None else (head,), stream), sub.id, for_read=False)
        return self._start(exchange, "report", chunks, now_ms, subscription=sub)

    # ---- write ---------------------------------------------------------------------------
    def _write(self, exchange: Any, message: WriteRequest, timed: bool, access: AccessContext,
               now_ms: float) -> list:
        decided = self._write_access.setdefault(exchange, {})
        statuses = [AttributeStatus(_concrete(ad.path), StatusIB(*self._write_one(ad, timed, access, decided)))
                    for ad in message.write_requests]
        if message.more_chunked:
            self._writes[exchange] = (timed, now_ms + RESPONSE_TIMEOUT_MS)   # the next chunk comes here
        else:
            self._write_access.pop(exchange, None)
        if message.suppress_response:
            return [] if message.more_chunked else exchange.close(now_ms)
        return self._send(exchange, WriteResponse(statuses), now_ms, close=not message.more_chunked)

    def _write_one(self, ad: AttributeData, timed: bool, access: AccessContext,
                   decided: dict[tuple[int, int, int], bool] | None = None) -> tuple[int, int | None]:
        path = ad.path
        try:
            if not path.concrete:
                raise MatterError(Status.INVALID_ACTION, "write paths must name endpoint, cluster and attribute")
            server = self.device.locate(path.cluster, path.endpoint)
            name = server.resolve_attribute(path.attribute)
            key = (path.endpoint, path.cluster, path.attribute)
            allowed = decided.get(key) if decided is not None else None
            if allowed is None:
                allowed = self._allowed("write", access, path.endpoint, path.cluster, path.attribute)
                if decided is not None:
                    decided[key] = allowed
            if not allowed:
                raise MatterError(Status.UNSUPPORTED_ACCESS, f"{server.name}.{name} may not be written by this peer")
            if name not in server.writable:
                raise MatterError(Status.UNSUPPORTED_WRITE, f"{server.name}.{name} is read-only")
            attr_cls = server.attribute_class(name)
            if attr_cls.must_use_timed_write and not timed:
                raise MatterError(Status.NEEDS_TIMED_INTERACTION, f"{server.name}.{name} needs a timed write")
            if ad.data_version is not None and ad.data_version != server.data_version:
                raise MatterError(Status.DATA_VERSION_MISMATCH,
                                  f"{server.name} is at DataVersion {server.data_version}, not {ad.data_version}")
            typ = attr_cls.attribute_type.Type
            what = f"{server.name}.{name}"
            if path.list_index is None:
                value = _stamp_fabric(decode_typed(typ, ad.data, what), access.fabric_index)
            elif path.list_index is NullValue:
                item_typ = list_item_type(typ)
                if item_typ is None:
                    raise MatterError(Status.INVALID_ACTION, f"{what} is not a list; ListIndex is for lists")
                item = _stamp_fabric([decode_typed(item_typ, ad.data, f"{what}[+]")], access.fabric_index)
                # Append = this fabric's current entries plus the new one (fabric-scoped lists are
                # written per fabric; entries of other fabrics are the server's to keep).
                current = self._as(access, self.device.read, server.id, name, path.endpoint)
                value = [v for v in current if _fabric_index(v) in (None, access.fabric_index)] + item
                access = dataclasses.replace(access, list_append=True)   # AccessControl's events tell
            else:
                raise MatterError(Status.INVALID_ACTION, f"{what}: only ListIndex null (append) is writable")
            self._as(access, self.device.write, server.id, name, to_json(value), path.endpoint)
            return Status.SUCCESS, None
        except MatterError as e:
            return e.status, e.cluster_status
        except Exception:
            log.exception("write to %s failed", path)
            return Status.FAILURE, None

    # ---- invoke --------------------------------------------------------------------------
    def _max_paths_per_invoke(self) -> int:
        try:
            return int(self.device.read(Clusters.BasicInformation.id, "MaxPathsPerInvoke", 0))
        except MatterError:
            return 1

    def _invoke(self, exchange: Any, message: InvokeRequest, timed: bool, access: AccessContext,
                now_ms: float) -> list:
        requests = message.invoke_requests
        refs = [r.ref for r in requests]
        if (not requests or len(requests) > self._max_paths_per_invoke()
                or any(r.path.endpoint is None for r in requests)
                or (len(requests) > 1 and (None in refs or len(set(refs)) != len(refs)))):
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        responses = [self._invoke_one(r, timed, access) for r in requests]
        if message.suppress_response:
            return exchange.close(now_ms)
        items = []
        for response in responses:
            item = response.element()
            if len(item) > self._item_budget:   # a response that cannot fit any message
                path = (response.command or response.status).path
                ref = (response.command or response.status).ref
                item = InvokeResponseIB(status=CommandStatus(
                    CommandPath(path.endpoint, path.cluster, path.command), StatusIB(Status.RESOURCE_EXHAUSTED),
                    ref)).element()
            items.append(item)
        batches: list[list[bytes]] = [[]]
        size = 0
        for item in items:
            if batches[-1] and size + len(item) > self._item_budget:
                batches.append([])
                size = 0
            batches[-1].append(item)
            size += len(item)
        last = len(batches) - 1
        chunks = ((Opcode.InvokeResponse, InvokeResponse([Raw(b) for b in batch], more_chunked=i < last).encode(),
                   i < last) for i, batch in enumerate(batches))
        return self._start(exchange, "invoke", chunks, now_ms, expect_last=False)

    def _invoke_one(self, request: CommandData, timed: bool, access: AccessContext) -> InvokeResponseIB:
        path = request.path

        def status(code: int, cluster_status: int | None = None) -> InvokeResponseIB:
            return InvokeResponseIB(status=CommandStatus(
                CommandPath(path.endpoint, path.cluster, path.command), StatusIB(code, cluster_status), request.ref))

        try:
            server = self.device.locate(path.cluster, path.endpoint)
            name = server.resolve_command(path.command)
            if not self._allowed("invoke", access, path.endpoint, path.cluster, path.command):
                raise MatterError(Status.UNSUPPORTED_ACCESS, f"{server.name}.{name} may not be invoked by this peer")
            cls = server.command_class(name)
            if cls.must_use_timed_invoke and not timed:
                raise MatterError(Status.NEEDS_TIMED_INTERACTION, f"{server.name}.{name} needs a timed invoke")
            fields = Struct() if request.fields is None else request.fields   # no fields: an empty struct
            command = decode_typed(cls, fields, f"{server.name}.{name}", bad=Status.INVALID_COMMAND)
            result = self._as(access, self.device.invoke, server.id, name, command, path.endpoint)
        except MatterError as e:
            return status(e.status, e.cluster_status)
        except Exception:
            log.exception("invoke %s failed", path)
            return status(Status.FAILURE)
        if result is None:
            return status(Status.SUCCESS)
        if not isinstance(result, ClusterCommand):
            log.error("%s returned %r; accepted: None or a response command", path, result)
            return status(Status.FAILURE)
        return InvokeResponseIB(command=CommandData(
            CommandPath(path.endpoint, path.cluster, result.command_id), Typed(type(result), result), request.ref))


# ---- helpers -------------------------------------------------------------------------------
def _acl_check(device: Device) -> AccessCheck | None:
    root = device.endpoints.get(0)
    server = root.servers.get(Clusters.AccessControl.id) if root is not None else None
    node = getattr(server, "node", None)
    return AclCheck(node, device) if node is not None and hasattr(node, "table") else None


def _tagged(attributes: Iterator[bytes], events: Iterator[bytes]) -> Iterator[tuple[bool, bytes]]:
    """Report items as `_report_chunks` takes them: (is an event, encoded IB), attributes first."""
    for item in attributes:
        yield False, item
    for item in events:
        yield True, item


def _event_matches(path: EventPath, record: EventRecord) -> bool:
    return (path.endpoint in (None, record.endpoint) and path.cluster in (None, record.cluster)
            and path.event in (None, record.event))


def _event_min(filters: list | None) -> int:
    """The EventMin of the request's EventFilters (the node filter is ours or absent)."""
    return max((f.event_min for f in filters or () if f.event_min is not None), default=0)


def _concrete(path: AttributePath) -> AttributePath:
    return AttributePath(endpoint=path.endpoint, cluster=path.cluster, attribute=path.attribute, node=path.node)


def _read_access(access: AccessContext, fabric_filtered: bool) -> AccessContext:
    """The access a read's attribute getter runs under: it says whether the read is fabric-filtered."""
    return access if access.fabric_filtered == fabric_filtered else dataclasses.replace(
        access, fabric_filtered=fabric_filtered)


def _for_reader(value: Any, access: AccessContext, fabric_filtered: bool) -> Any:
    """A fabric-scoped list as the reader sees it: its own fabric's entries in a fabric-filtered
    read; every fabric's otherwise, other fabrics' without their fabric-sensitive fields."""
    if not isinstance(value, list):
        return value
    if fabric_filtered:
        return [v for v in value if _fabric_index(v) in (None, access.fabric_index)]
    return without_sensitive(value, access.fabric_index)


def _fabric_index(value: Any) -> int | None:
    """The FabricIndex of a fabric-scoped struct, None for anything else."""
    if isinstance(value, ClusterObject):
        for f in value.descriptor.Fields:
            if f.Tag == FABRIC_INDEX_TAG:
                return getattr(value, f.Label)
    return None


def _stamp_fabric(value: Any, fabric_index: int | None) -> Any:
    """Fabric-scoped list entries written by a client belong to the accessing fabric (spec)."""
    if fabric_index is None or not isinstance(value, list):
        return value
    out = []
    for v in value:
        if isinstance(v, ClusterObject) and _fabric_index(v) is not None:
            label = next(f.Label for f in v.descriptor.Fields if f.Tag == FABRIC_INDEX_TAG)
            v = dataclasses.replace(v, **{label: fabric_index})
        out.append(v)
    return out


def _same_peer(a: Any, b: Any) -> bool:
    """Same subscriber: same CASE peer on the same fabric, or the same PASE session."""
    if a is b:
        return True
    peer_a, peer_b = getattr(a, "peer_node_id", None), getattr(b, "peer_node_id", None)
    return (peer_a is not None and peer_a == peer_b
            and getattr(a, "fabric_index", None) == getattr(b, "fabric_index", None))
