"""Read (Core spec 8.4): path expansion, attribute report items and lazily chunked ReportData."""
from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import AccessContext, ClusterServer
from clusters.status import MatterError, Status
from clusters.value_types import list_item_type
from matter_protocol.exchange import Action, Exchange
from matter_protocol.interaction import (
    AttributeData,
    AttributePath,
    AttributeReport,
    AttributeStatus,
    DataVersionFilter,
    Opcode,
    ReadRequest,
    ReportData,
    StatusIB,
)
from matter_protocol.tlv import CodecError, Raw
from twin.node.im.events import event_min_of
from twin.node.im.model import (
    MAX_PATHS_PER_REQUEST,
    Chunk,
    concrete,
    fabric_index_of,
)
from twin.node.im.parts import Part
from twin.node.values import encode_value, without_sensitive

log = logging.getLogger(__name__)


class Reads(Part):
    """Part of InteractionModelServer (server.py): the read interaction, on its state."""

    def _expand(self, path: AttributePath) -> list[tuple[int, ClusterServer, str]]:
        """Concrete attributes a path names. A concrete path that names nothing raises its
        status; a wildcard silently yields what exists (Core spec, "Wildcard paths")."""
        if path.list_index is not None:
            raise MatterError(Status.INVALID_ACTION, "read paths may not carry a ListIndex")
        target = concrete(path.endpoint, path.cluster, path.attribute)
        if target is not None:
            endpoint, cluster, attribute = target
            server = self.device.locate(cluster, endpoint)
            return [(endpoint, server, server.resolve_attribute(attribute))]
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

    def _status_item(self, path: AttributePath, status: int, cluster_status: int | None = None) -> bytes:
        return AttributeReport(attribute_status=AttributeStatus(
            path, StatusIB(status, cluster_status))).element()

    def _value(self, ep: int, server: ClusterServer, name: str, access: AccessContext,
               fabric_filtered: bool) -> bytes:
        """The attribute's current value, TLV-encoded by its declared type (raises MatterError)."""
        value = self._as(_read_access(access, fabric_filtered), self.device.read_on, server, name)
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
        value = self._as(_read_access(access, fabric_filtered), self.device.read_on, server, name)
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

    def _read_items(self, paths: list[AttributePath], filters: list[DataVersionFilter] | None, fabric_filtered: bool,
                    access: AccessContext) -> Iterator[bytes]:
        """The AttributeReportIBs of a read or priming report, encoded as they are consumed:
        the generator's position (path, then the path's expansion) is where the next chunk
        resumes, as the CHIP SDK's read handler keeps a path-expansion iterator across chunks."""
        versions = {(f.path.endpoint, f.path.cluster): f.data_version for f in filters or () if f.path is not None}
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

    def _read(self, exchange: Exchange, message: ReadRequest, access: AccessContext, now_ms: float) -> list[Action]:
        if not message.attribute_requests and not message.event_requests:
            return self._status(exchange, Status.INVALID_ACTION, now_ms)
        if len(message.attribute_requests or ()) + len(message.event_requests or ()) > MAX_PATHS_PER_REQUEST:
            return self._status(exchange, Status.PATHS_EXHAUSTED, now_ms)
        items = self._read_items(message.attribute_requests or [], message.data_version_filters,
                                 message.fabric_filtered, access)
        events = self._event_items(message.event_requests or [], event_min_of(message.event_filters), access,
                                   below=self.event_numbers.next)
        chunks = self._report_chunks(tagged(items, events), None, for_read=True)
        return self._start(exchange, "read", chunks, now_ms, expect_last=False)


# WildcardPathFlags (AttributePathIB tag 6)
SKIP_ROOT_NODE = 0x01


SKIP_GLOBAL_ATTRIBUTES = 0x02


SKIP_ATTRIBUTE_LIST = 0x04


SKIP_COMMAND_LISTS = 0x10


_GLOBAL_IDS = {0xFFF8, 0xFFF9, 0xFFFA, 0xFFFB, 0xFFFC, 0xFFFD}


_COMMAND_LIST_IDS = {0xFFF8, 0xFFF9}


def tagged(attributes: Iterator[bytes], events: Iterator[bytes]) -> Iterator[tuple[bool, bytes]]:
    """Report items as `_report_chunks` takes them: (is an event, encoded IB), attributes first."""
    for item in attributes:
        yield False, item
    for item in events:
        yield True, item


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
        return [v for v in value if fabric_index_of(v) in (None, access.fabric_index)]
    return without_sensitive(value, access.fabric_index)
