"""Events (Core spec 8.x "Event"): the node's event log and EventReportIBs."""
from __future__ import annotations

import logging
from collections.abc import Iterator

from chip.clusters.ClusterObjects import ClusterEvent

from clusters.base import TICKS_PER_SECOND, AccessContext, ClusterServer
from clusters.status import Status
from matter_protocol.interaction import (
    EventData,
    EventFilter,
    EventPath,
    EventReport,
    EventStatus,
    StatusIB,
)
from matter_protocol.tlv import CodecError, Raw
from twin.node.im.model import (
    EVENT_PRIORITY,
    INFO,
    EventRecord,
    fabric_index_of,
)
from twin.node.im.parts import Part
from twin.node.values import encode_value

log = logging.getLogger(__name__)


class Events(Part):
    """Part of InteractionModelServer (server.py): the events interaction, on its state."""

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
                             server.clock.tick * 1000 // TICKS_PER_SECOND, data, fabric_index_of(event))
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
        ep = self.device.endpoints.get(path.endpoint) if path.endpoint is not None else None
        if ep is None or path.endpoint is None:
            return Status.UNSUPPORTED_ENDPOINT
        if path.cluster is None or path.cluster not in ep.servers:
            return Status.UNSUPPORTED_CLUSTER
        if path.event is not None and not self._allowed("event", access, path.endpoint, path.cluster, path.event):
            return Status.UNSUPPORTED_ACCESS
        return None


def _event_matches(path: EventPath, record: EventRecord) -> bool:
    return (path.endpoint in (None, record.endpoint) and path.cluster in (None, record.cluster)
            and path.event in (None, record.event))


def event_min_of(filters: list[EventFilter] | None) -> int:
    """The EventMin of the request's EventFilters (the node filter is ours or absent)."""
    return max((f.event_min for f in filters or () if f.event_min is not None), default=0)
