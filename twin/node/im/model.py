"""The Interaction Model server's records and limits: subscriptions, event records and
numbers, pending interactions, and the bounds the server enforces."""
from __future__ import annotations

import typing
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from chip.clusters import Objects as Clusters
from chip.clusters.ClusterObjects import ClusterObject

from clusters.base import AccessContext, ClusterServer
from matter_protocol.exchange import Exchange
from matter_protocol.interaction import (
    FABRIC_INDEX_TAG,
    AttributePath,
    EventPath,
)

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
#: Interactions a node keeps open between messages (a chunked read, subscribe priming or invoke
#: waiting for the peer's StatusResponse, a TimedRequest waiting for its action, a chunked write):
#: at most this many per session and per node (issue #32: 3,000 unanswered reads held 68 MB, 3,000
#: TimedRequests 3,000 exchanges). Beyond, a new one is answered RESOURCE_EXHAUSTED at once, as the
#: spec lets a server answer an interaction it has no resources for. The CHIP SDK's pools are
#: smaller still (e.g. CHIP_IM_MAX_NUM_READS 4, CHIP_IM_MAX_NUM_TIMED_HANDLERS 8).
MAX_OPEN_PER_SESSION = 8
MAX_OPEN_PER_NODE = 64
#: Core spec "Subscribe Interaction Limits": a publisher supports at least 3 subscriptions per
#: fabric. Each fabric present is guaranteed max(this, MAX_SUBSCRIPTIONS // fabrics) slots; a
#: fabric under its share evicts from the fabric furthest over its own (see `_make_room`).
MIN_SUBSCRIPTIONS_PER_FABRIC = 3
#: Paths (attribute + event) one ReadRequest or SubscribeRequest may carry. The spec's minimum
#: is 9 per read and 3 per subscription; a request beyond this bound is answered
#: PATHS_EXHAUSTED, as the CHIP SDK does when its path pool runs out (600 full wildcards fit
#: one datagram and would expand to the whole node 600 times).
MAX_PATHS_PER_REQUEST = 32

#: (kind, access, endpoint, cluster, attribute, command or event id) -> allowed?
#: kind: "read", "write", "invoke" or "event".
AccessCheck = Callable[[str, AccessContext, int, int, int], bool]
Key = tuple[int, int, int]   # (endpoint, cluster id, attribute id)


def concrete(endpoint: int | None, cluster: int | None, item: int | None) -> tuple[int, int, int] | None:
    """A path's (endpoint, cluster, attribute, command or event id) when it names all three,
    None when any is a wildcard: the one typed form the interactions work on."""
    if endpoint is None or cluster is None or item is None:
        return None
    return endpoint, cluster, item

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
    busy: Pending | None = None        # a report (or the priming) waiting for its answer
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


class Derived(typing.NamedTuple):
    """A derived attribute the node samples (see the top)."""
    key: Key
    server: ClusterServer
    name: str
    every: int             # timer samples between re-reads (from the server's `sample_seconds`)
#: One message of a chunked answer: (opcode, payload, more chunks follow?).
Chunk = tuple[int, bytes, bool]


@dataclass(eq=False)
class Pending:
    """An interaction waiting for the client's StatusResponse before its next message.

    `chunks` encodes the next message only when asked (see `_report_chunks`): what a pending
    read holds is its position in the expanded paths and at most one encoded item, however
    much is left to send."""
    exchange: Exchange
    kind: str                             # "read", "priming", "report" or "invoke"
    chunks: Iterator[Chunk]               # the rest, encoded one message per SUCCESS
    more: bool                            # `chunks` has another message
    deadline_ms: float
    subscription: Subscription | None = None


def fabric_index_of(value: Any) -> int | None:
    """The FabricIndex of a fabric-scoped struct, None for anything else."""
    if isinstance(value, ClusterObject):
        for f in value.descriptor.Fields:
            if f.Tag == FABRIC_INDEX_TAG:
                index: int | None = getattr(value, f.Label)
                return index
    return None
