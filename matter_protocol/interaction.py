"""Interaction Model messages and information blocks (IBs), Core spec "Interaction Model Encoding".

Every IM message is one anonymous TLV structure whose fields carry context tags; paths
(AttributePathIB, EventPathIB, ClusterPathIB, CommandPathIB) are TLV *lists*, the other IBs
structures. Each message ends with InteractionModelRevision under context tag 0xFF. Each block
is declared by a field table, which drives both encoding and strict decoding.

Attribute values and command fields are carried as generic values: whatever `TLVWriter.generic`
writes (including values that encode themselves by their declared chip type, which the node
glue provides) and whatever `decode_tlv` reads.
"""
from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any, ClassVar

from chip.clusters.Types import NullValue

from matter_protocol.tlv import ARRAY, LIST, STRUCT, CodecError, Raw, Struct, TagList, TLVWriter, decode_tlv

INTERACTION_MODEL_REVISION = 11
REVISION_TAG = 0xFF
FABRIC_INDEX_TAG = 0xFE   # the FabricIndex field of fabric-scoped structs
SUCCESS = 0               # the IM status code SUCCESS (the full Status enum lives with the clusters)


class Opcode(enum.IntEnum):
    """Interaction Model protocol (0x0001) message types."""
    StatusResponse = 0x01
    ReadRequest = 0x02
    SubscribeRequest = 0x03
    SubscribeResponse = 0x04
    ReportData = 0x05
    WriteRequest = 0x06
    WriteResponse = 0x07
    InvokeRequest = 0x08
    InvokeResponse = 0x09
    TimedRequest = 0x0A


@dataclass(frozen=True)
class F:
    """One field of an IB or message: tag, attribute name, kind, required on decode, always encoded."""
    tag: int
    name: str
    kind: Any            # "bool", "uint", "nuint" (nullable), "any", an IB class, or [kind]
    required: bool = False
    always: bool = False


class _Block:
    """Base of IBs and messages: encode/decode through the class's field table."""
    _container: ClassVar[int] = STRUCT
    _fields: ClassVar[tuple[F, ...]] = ()

    def write(self, w: TLVWriter, tag: int | None) -> None:
        w.start(tag, self._container)
        for f in self._fields:
            value = getattr(self, f.name)
            if value is None or (value is False and not f.always):
                if f.required and value is None:
                    raise CodecError(f"{type(self).__name__}.{f.name} is required")
                continue
            _write_kind(w, f.tag, f.kind, value)
        self._write_tail(w)
        w.end()

    def _write_tail(self, w: TLVWriter) -> None:
        pass

    def element(self) -> bytes:
        """This block as an anonymous TLV element."""
        w = TLVWriter()
        self.write(w, None)
        return bytes(w.buf)

    @classmethod
    def read(cls, raw: Any, where: str = "") -> Any:
        where = where or cls.__name__
        if not isinstance(raw, TagList if cls._container == LIST else Struct):
            raise CodecError(f"{where} is not a TLV {'list' if cls._container == LIST else 'structure'}")
        values: dict[str, Any] = {}
        for f in cls._fields:
            if f.tag in raw:
                values[f.name] = _read_kind(f.kind, raw[f.tag], f"{where}.{f.name}")
            elif f.required:
                raise CodecError(f"{where}: missing {f.name} (tag {f.tag})")
        return cls(**values)


def _write_kind(w: TLVWriter, tag: int | None, kind: Any, value: Any) -> None:
    if isinstance(kind, list):
        w.start(tag, ARRAY)
        for item in value:
            _write_kind(w, None, kind[0], item)
        w.end()
    elif isinstance(kind, type) and issubclass(kind, _Block):
        if isinstance(value, Raw):
            value.write_tlv(w, tag)
        else:
            value.write(w, tag)
    elif kind == "bool":
        w.boolean(tag, bool(value))
    elif kind in ("uint", "nuint"):
        if value is NullValue and kind == "nuint":
            w.null(tag)
        else:
            w.uint(tag, int(value))
    elif kind == "any":
        w.generic(tag, value)
    else:
        raise CodecError(f"unknown field kind {kind!r}")


def _read_kind(kind: Any, raw: Any, where: str) -> Any:
    if isinstance(kind, list):
        if not isinstance(raw, list):
            raise CodecError(f"{where} is not an array")
        return [_read_kind(kind[0], v, f"{where}[{i}]") for i, v in enumerate(raw)]
    if isinstance(kind, type) and issubclass(kind, _Block):
        return kind.read(raw, where)
    if kind == "bool":
        if not isinstance(raw, bool):
            raise CodecError(f"{where}={raw!r} is not a boolean")
        return raw
    if kind in ("uint", "nuint"):
        if raw is None and kind == "nuint":
            return NullValue
        # Lenient on signedness: some encoders write small non-negative ids as signed.
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise CodecError(f"{where}={raw!r} is not an unsigned integer")
        return int(raw)
    if kind == "any":
        return raw
    raise CodecError(f"unknown field kind {kind!r}")


class Message(_Block):
    opcode: ClassVar[Opcode]

    def _write_tail(self, w: TLVWriter) -> None:
        w.uint(REVISION_TAG, INTERACTION_MODEL_REVISION)

    def encode(self) -> bytes:
        return self.element()


# IBs -------------------------------------------------------------------------------------------
@dataclass
class AttributePath(_Block):
    """AttributePathIB. A missing endpoint/cluster/attribute is a wildcard. list_index: None
    absent, NullValue = append one item (list chunks), an int = one item (not used by Matter 1.x)."""
    endpoint: int | None = None
    cluster: int | None = None
    attribute: int | None = None
    node: int | None = None
    list_index: Any = None
    wildcard_flags: int | None = None
    enable_tag_compression: bool = False
    _container = LIST
    _fields = (F(0, "enable_tag_compression", "bool"), F(1, "node", "uint"), F(2, "endpoint", "uint"),
               F(3, "cluster", "uint"), F(4, "attribute", "uint"), F(5, "list_index", "nuint"),
               F(6, "wildcard_flags", "uint"))

    @property
    def concrete(self) -> bool:
        return None not in (self.endpoint, self.cluster, self.attribute)


@dataclass
class ClusterPath(_Block):
    endpoint: int | None = None
    cluster: int | None = None
    node: int | None = None
    _container = LIST
    _fields = (F(0, "node", "uint"), F(1, "endpoint", "uint", True), F(2, "cluster", "uint", True))


@dataclass
class EventPath(_Block):
    endpoint: int | None = None
    cluster: int | None = None
    event: int | None = None
    node: int | None = None
    is_urgent: bool = False
    _container = LIST
    _fields = (F(0, "node", "uint"), F(1, "endpoint", "uint"), F(2, "cluster", "uint"),
               F(3, "event", "uint"), F(4, "is_urgent", "bool"))


@dataclass
class EventFilter(_Block):
    event_min: int | None = None
    node: int | None = None
    _fields = (F(0, "node", "uint"), F(1, "event_min", "uint", True))


@dataclass
class DataVersionFilter(_Block):
    path: ClusterPath | None = None
    data_version: int | None = None
    _fields = (F(0, "path", ClusterPath, True), F(1, "data_version", "uint", True))


@dataclass
class StatusIB(_Block):
    status: int = SUCCESS
    cluster_status: int | None = None
    _fields = (F(0, "status", "uint", True), F(1, "cluster_status", "uint"))


@dataclass
class AttributeData(_Block):
    """AttributeDataIB. `data`: a Typed value to send, or the generic value decoded."""
    path: AttributePath | None = None
    data: Any = None
    data_version: int | None = None
    _fields = (F(0, "data_version", "uint"), F(1, "path", AttributePath, True), F(2, "data", "any", True))

    @classmethod
    def read(cls, raw: Any, where: str = "") -> Any:
        # Data may legitimately be a TLV null, which the generic table reads as "absent".
        block = super().read(raw, where)
        if isinstance(raw, dict) and 2 not in raw:
            raise CodecError(f"{where or cls.__name__}: missing data (tag 2)")
        return block

    def write(self, w: TLVWriter, tag: int | None) -> None:
        w.start(tag, STRUCT)
        if self.data_version is not None:
            w.uint(0, self.data_version)
        if self.path is None:
            raise CodecError("AttributeData.path is required")
        self.path.write(w, 1)
        w.generic(2, self.data)   # None here is a TLV null (a nullable attribute's value)
        w.end()


@dataclass
class AttributeStatus(_Block):
    path: AttributePath | None = None
    status: StatusIB | None = None
    _fields = (F(0, "path", AttributePath, True), F(1, "status", StatusIB, True))


@dataclass
class AttributeReport(_Block):
    attribute_status: AttributeStatus | None = None
    attribute_data: AttributeData | None = None
    _fields = (F(0, "attribute_status", AttributeStatus), F(1, "attribute_data", AttributeData))


@dataclass
class EventData(_Block):
    path: EventPath | None = None
    event_number: int | None = None
    priority: int | None = None
    epoch_timestamp: int | None = None
    system_timestamp: int | None = None
    delta_epoch_timestamp: int | None = None
    delta_system_timestamp: int | None = None
    data: Any = None
    _fields = (F(0, "path", EventPath, True), F(1, "event_number", "uint", True),
               F(2, "priority", "uint", True), F(3, "epoch_timestamp", "uint"),
               F(4, "system_timestamp", "uint"), F(5, "delta_epoch_timestamp", "uint"),
               F(6, "delta_system_timestamp", "uint"), F(7, "data", "any"))


@dataclass
class EventStatus(_Block):
    path: EventPath | None = None
    status: StatusIB | None = None
    _fields = (F(0, "path", EventPath, True), F(1, "status", StatusIB, True))


@dataclass
class EventReport(_Block):
    event_status: EventStatus | None = None
    event_data: EventData | None = None
    _fields = (F(0, "event_status", EventStatus), F(1, "event_data", EventData))


@dataclass
class CommandPath(_Block):
    endpoint: int | None = None
    cluster: int | None = None
    command: int | None = None
    _container = LIST
    _fields = (F(0, "endpoint", "uint"), F(1, "cluster", "uint", True), F(2, "command", "uint", True))


@dataclass
class CommandData(_Block):
    """CommandDataIB. `fields`: a Typed command object to send, or the decoded Struct."""
    path: CommandPath | None = None
    fields: Any = None
    ref: int | None = None
    _fields = (F(0, "path", CommandPath, True), F(1, "fields", "any"), F(2, "ref", "uint"))


@dataclass
class CommandStatus(_Block):
    path: CommandPath | None = None
    status: StatusIB | None = None
    ref: int | None = None
    _fields = (F(0, "path", CommandPath, True), F(1, "status", StatusIB, True), F(2, "ref", "uint"))


@dataclass
class InvokeResponseIB(_Block):
    command: CommandData | None = None
    status: CommandStatus | None = None
    _fields = (F(0, "command", CommandData), F(1, "status", CommandStatus))


# Messages ----------------------------------------------------------------------------------------
@dataclass
class StatusResponse(Message):
    status: int = SUCCESS
    opcode = Opcode.StatusResponse
    _fields = (F(0, "status", "uint", True),)


@dataclass
class ReadRequest(Message):
    attribute_requests: list[AttributePath] | None = None
    event_requests: list[EventPath] | None = None
    event_filters: list[EventFilter] | None = None
    fabric_filtered: bool = False
    data_version_filters: list[DataVersionFilter] | None = None
    opcode = Opcode.ReadRequest
    _fields = (F(0, "attribute_requests", [AttributePath]), F(1, "event_requests", [EventPath]),
               F(2, "event_filters", [EventFilter]), F(3, "fabric_filtered", "bool", always=True),
               F(4, "data_version_filters", [DataVersionFilter]))


@dataclass
class SubscribeRequest(Message):
    min_interval_floor: int | None = None
    max_interval_ceiling: int | None = None
    keep_subscriptions: bool = False
    attribute_requests: list[AttributePath] | None = None
    event_requests: list[EventPath] | None = None
    event_filters: list[EventFilter] | None = None
    fabric_filtered: bool = False
    data_version_filters: list[DataVersionFilter] | None = None
    opcode = Opcode.SubscribeRequest
    _fields = (F(0, "keep_subscriptions", "bool", always=True), F(1, "min_interval_floor", "uint", True),
               F(2, "max_interval_ceiling", "uint", True), F(3, "attribute_requests", [AttributePath]),
               F(4, "event_requests", [EventPath]), F(5, "event_filters", [EventFilter]),
               F(7, "fabric_filtered", "bool", always=True),
               F(8, "data_version_filters", [DataVersionFilter]))


@dataclass
class SubscribeResponse(Message):
    subscription_id: int | None = None
    max_interval: int | None = None
    opcode = Opcode.SubscribeResponse
    _fields = (F(0, "subscription_id", "uint", True), F(2, "max_interval", "uint", True))


@dataclass
class ReportData(Message):
    """ReportDataMessage; attribute_reports items may be Raw pre-encoded AttributeReportIBs."""
    subscription_id: int | None = None
    attribute_reports: list[Any] | None = None
    event_reports: list[Any] | None = None
    more_chunked: bool = False
    suppress_response: bool = False
    opcode = Opcode.ReportData
    _fields = (F(0, "subscription_id", "uint"), F(1, "attribute_reports", [AttributeReport]),
               F(2, "event_reports", [EventReport]), F(3, "more_chunked", "bool"),
               F(4, "suppress_response", "bool"))


@dataclass
class WriteRequest(Message):
    write_requests: list[AttributeData] | None = None
    suppress_response: bool = False
    timed_request: bool = False
    more_chunked: bool = False
    opcode = Opcode.WriteRequest
    _fields = (F(0, "suppress_response", "bool", always=True), F(1, "timed_request", "bool", always=True),
               F(2, "write_requests", [AttributeData], True), F(3, "more_chunked", "bool"))


@dataclass
class WriteResponse(Message):
    write_responses: list[AttributeStatus] = field(default_factory=list)
    opcode = Opcode.WriteResponse
    _fields = (F(0, "write_responses", [AttributeStatus], True),)


@dataclass
class InvokeRequest(Message):
    invoke_requests: list[CommandData] | None = None
    suppress_response: bool = False
    timed_request: bool = False
    opcode = Opcode.InvokeRequest
    _fields = (F(0, "suppress_response", "bool", always=True), F(1, "timed_request", "bool", always=True),
               F(2, "invoke_requests", [CommandData], True))


@dataclass
class InvokeResponse(Message):
    invoke_responses: list[InvokeResponseIB | Raw] = field(default_factory=list)   # Raw: pre-encoded IBs
    suppress_response: bool = False
    more_chunked: bool = False
    opcode = Opcode.InvokeResponse
    _fields = (F(0, "suppress_response", "bool", always=True),
               F(1, "invoke_responses", [InvokeResponseIB], True), F(2, "more_chunked", "bool"))


@dataclass
class TimedRequest(Message):
    timeout_ms: int | None = None
    opcode = Opcode.TimedRequest
    _fields = (F(0, "timeout_ms", "uint", True),)


MESSAGES: dict[int, type[Message]] = {cls.opcode: cls for cls in (
    StatusResponse, ReadRequest, SubscribeRequest, SubscribeResponse, ReportData, WriteRequest,
    WriteResponse, InvokeRequest, InvokeResponse, TimedRequest)}


def decode_message(opcode: int, payload: bytes) -> Message:
    """Decode an IM message; raises CodecError for unknown opcodes and malformed payloads."""
    cls = MESSAGES.get(opcode)
    if cls is None:
        raise CodecError(f"unknown Interaction Model opcode 0x{opcode:02x}; accepted: "
                         + ", ".join(f"0x{int(o):02x} ({o.name})" for o in Opcode))
    raw = decode_tlv(payload)
    if not isinstance(raw, Struct):
        raise CodecError(f"{cls.__name__} is not a TLV structure")
    message: Message = cls.read(raw)
    return message

