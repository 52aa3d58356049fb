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

from twin.node.im.model import (
    CRITICAL,
    DEBUG,
    DEFAULT_SAMPLE_MS,
    EVENT_BUFFER,
    EVENT_PRIORITY,
    GRANTED_MAX_INTERVAL_S,
    INFO,
    MAX_PATHS_PER_REQUEST,
    MAX_PAYLOAD,
    MAX_SUBSCRIPTIONS,
    MIN_SUBSCRIPTIONS_PER_FABRIC,
    RESPONSE_TIMEOUT_MS,
    AccessCheck,
    EventNumbers,
    EventRecord,
    Key,
    Subscription,
)
from twin.node.im.server import InteractionModelServer

__all__ = [
    "InteractionModelServer", "Subscription", "EventNumbers", "EventRecord", "AccessCheck", "Key", "DEBUG", "INFO",
    "CRITICAL", "EVENT_PRIORITY", "EVENT_BUFFER", "MAX_PAYLOAD", "RESPONSE_TIMEOUT_MS", "DEFAULT_SAMPLE_MS",
    "GRANTED_MAX_INTERVAL_S", "MAX_SUBSCRIPTIONS", "MIN_SUBSCRIPTIONS_PER_FABRIC", "MAX_PATHS_PER_REQUEST",
]
