"""Write (Core spec 8.7): concrete paths, list append, chunked and timed writes."""
from __future__ import annotations

import dataclasses
import logging
from typing import Any

from chip.clusters.ClusterObjects import ClusterObject
from chip.clusters.Types import NullValue

from clusters.base import AccessContext
from clusters.status import MatterError, Status
from clusters.value_types import list_item_type
from clusters.values import to_json
from matter_protocol.exchange import Action, Exchange
from matter_protocol.interaction import (
    FABRIC_INDEX_TAG,
    AttributeData,
    AttributePath,
    AttributeStatus,
    StatusIB,
    WriteRequest,
    WriteResponse,
)
from twin.node.im.model import (
    RESPONSE_TIMEOUT_MS,
    concrete,
    fabric_index_of,
)
from twin.node.im.parts import Part
from twin.node.values import decode_typed

log = logging.getLogger(__name__)


class Writes(Part):
    """Part of InteractionModelServer (server.py): the write interaction, on its state."""

    def _write(self, exchange: Exchange, message: WriteRequest, timed: bool, access: AccessContext,
               now_ms: float) -> list[Action]:
        decided = self._write_access.setdefault(exchange, {})
        statuses = [AttributeStatus(_concrete(ad.path or AttributePath()),
                                    StatusIB(*self._write_one(ad, timed, access, decided)))
                    for ad in message.write_requests or []]
        if message.more_chunked:
            self._writes[exchange] = (timed, now_ms + RESPONSE_TIMEOUT_MS)   # the next chunk comes here
        else:
            self._write_access.pop(exchange, None)
        if message.suppress_response:
            return [] if message.more_chunked else exchange.close(now_ms)
        return self._send(exchange, WriteResponse(statuses), now_ms, close=not message.more_chunked)

    def _write_one(self, ad: AttributeData, timed: bool, access: AccessContext,
                   decided: dict[tuple[int, int, int], bool] | None = None) -> tuple[int, int | None]:
        path = ad.path or AttributePath()   # decoding requires it; an empty one is a wildcard
        try:
            key = concrete(path.endpoint, path.cluster, path.attribute)
            if key is None:
                raise MatterError(Status.INVALID_ACTION, "write paths must name endpoint, cluster and attribute")
            endpoint, cluster, attribute = key
            server = self.device.locate(cluster, endpoint)
            name = server.resolve_attribute(attribute)
            allowed = decided.get(key) if decided is not None else None
            if allowed is None:
                allowed = self._allowed("write", access, endpoint, cluster, attribute)
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
                current = self._as(access, self.device.read_on, server, name)
                value = [v for v in current if fabric_index_of(v) in (None, access.fabric_index)] + item
                access = dataclasses.replace(access, list_append=True)   # AccessControl's events tell
            else:
                raise MatterError(Status.INVALID_ACTION, f"{what}: only ListIndex null (append) is writable")
            self._as(access, self.device.write_on, server, name, to_json(value))
            return Status.SUCCESS, None
        except MatterError as e:
            return e.status, e.cluster_status
        except Exception:
            log.exception("write to %s failed", path)
            return Status.FAILURE, None


def _concrete(path: AttributePath) -> AttributePath:
    return AttributePath(endpoint=path.endpoint, cluster=path.cluster, attribute=path.attribute, node=path.node)


def _stamp_fabric(value: Any, fabric_index: int | None) -> Any:
    """Fabric-scoped list entries written by a client belong to the accessing fabric (spec)."""
    if fabric_index is None or not isinstance(value, list):
        return value
    out = []
    for v in value:
        if isinstance(v, ClusterObject) and fabric_index_of(v) is not None:
            label = next(f.Label for f in v.descriptor.Fields if f.Tag == FABRIC_INDEX_TAG)
            v = dataclasses.replace(v, **{label: fabric_index})
        out.append(v)
    return out
