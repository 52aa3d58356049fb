"""Interaction Model codec: Matter TLV, the IM information blocks (IBs) and messages.

Layouts follow the Core spec, "Interaction Model Encoding" (and the TLV appendix). Every IM
message is one anonymous TLV structure whose fields carry context tags; paths (AttributePathIB,
EventPathIB, ClusterPathIB, CommandPathIB) are TLV *lists*, the other IBs structures. Each
message ends with InteractionModelRevision under context tag 0xFF.

Attribute values and command fields are encoded *by their declared chip type*
(`chip.clusters.Objects`): `uint` as TLV unsigned, `int` as signed, `float32` as 4-byte float
and `float` as 8-byte double, enums and bitmaps as unsigned, `Nullable` as TLV null, lists as
arrays and structs by field tag. Peers (matter.js, the CHIP SDK) check these types.

Decoding yields generic values: `Struct` and `TagList` (dicts keyed by tag), Python lists for
arrays, `chip.tlv.uint` for unsigned and `chip.tlv.float32` for 4-byte floats, so a value keeps
its wire type until `decode_typed` checks it against the type it should have.
"""
from __future__ import annotations

import enum
import struct
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar

from chip.clusters.ClusterObjects import ClusterObject
from chip.clusters.Types import Nullable, NullValue
from chip.tlv import float32, uint

from clusters.status import MatterError, Status
from clusters.values import from_json, type_name

INTERACTION_MODEL_REVISION = 11
REVISION_TAG = 0xFF
FABRIC_INDEX_TAG = 0xFE   # the FabricIndex field of fabric-scoped structs
MAX_DEPTH = 16            # nesting limit when decoding (IM messages need about 8)


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


class CodecError(ValueError):
    """Malformed TLV or an IM message missing a field; the text says what and where."""


# ---- TLV ------------------------------------------------------------------------------------
_SINT, _UINT, _FALSE, _TRUE, _FLOAT, _UTF8, _BYTES = 0x00, 0x04, 0x08, 0x09, 0x0A, 0x0C, 0x10
_NULL, _STRUCT, _ARRAY, _LIST, _END = 0x14, 0x15, 0x16, 0x17, 0x18


class Struct(dict):
    """A decoded TLV structure: tag -> value, in wire order."""


class TagList(dict):
    """A decoded TLV list (the IM uses lists for paths, whose tags are unique)."""


@dataclass(frozen=True)
class Typed:
    """A Matter value to encode by its declared chip type (an attribute value, command fields)."""
    typ: Any
    value: Any


@dataclass(frozen=True)
class Raw:
    """An already encoded anonymous TLV element, spliced in as is (given a tag if needed)."""
    data: bytes


def retag(element: bytes, tag: int | None) -> bytes:
    """An anonymous TLV element under a context tag (the value bytes do not change)."""
    if tag is None:
        return element
    if not element or element[0] & 0xE0:
        raise CodecError("only an anonymous TLV element can be given a tag")
    if not 0 <= tag <= 0xFF:
        raise CodecError(f"tag {tag!r} is not a context tag 0..255")
    return bytes((element[0] | 0x20, tag)) + element[1:]


class TLVWriter:
    def __init__(self) -> None:
        self.buf = bytearray()

    def _head(self, tag: int | None, element_type: int) -> None:
        if tag is None:
            self.buf.append(element_type)
        elif isinstance(tag, int) and 0 <= tag <= 0xFF:
            self.buf += bytes((0x20 | element_type, tag))
        else:
            raise CodecError(f"tag {tag!r} is not supported; accepted: None or a context tag 0..255")

    def uint(self, tag: int | None, value: int) -> None:
        for size, code in ((1, 0), (2, 1), (4, 2), (8, 3)):
            if 0 <= value < 1 << (8 * size):
                self._head(tag, _UINT | code)
                self.buf += int(value).to_bytes(size, "little")
                return
        raise CodecError(f"{value} does not fit an unsigned 64-bit integer")

    def sint(self, tag: int | None, value: int) -> None:
        for size, code in ((1, 0), (2, 1), (4, 2), (8, 3)):
            if -(1 << (8 * size - 1)) <= value < 1 << (8 * size - 1):
                self._head(tag, _SINT | code)
                self.buf += int(value).to_bytes(size, "little", signed=True)
                return
        raise CodecError(f"{value} does not fit a signed 64-bit integer")

    def boolean(self, tag: int | None, value: bool) -> None:
        self._head(tag, _TRUE if value else _FALSE)

    def float32(self, tag: int | None, value: float) -> None:
        self._head(tag, _FLOAT)
        self.buf += struct.pack("<f", value)

    def float64(self, tag: int | None, value: float) -> None:
        self._head(tag, _FLOAT | 1)
        self.buf += struct.pack("<d", value)

    def _string(self, tag: int | None, base: int, data: bytes) -> None:
        for size, code in ((1, 0), (2, 1), (4, 2)):
            if len(data) < 1 << (8 * size):
                self._head(tag, base | code)
                self.buf += len(data).to_bytes(size, "little") + data
                return
        raise CodecError("string longer than 4 GiB")

    def utf8(self, tag: int | None, value: str) -> None:
        self._string(tag, _UTF8, value.encode("utf-8"))

    def octets(self, tag: int | None, value: bytes) -> None:
        self._string(tag, _BYTES, bytes(value))

    def null(self, tag: int | None) -> None:
        self._head(tag, _NULL)

    def start(self, tag: int | None, container: int) -> None:
        self._head(tag, container)

    def end(self) -> None:
        self.buf.append(_END)

    def generic(self, tag: int | None, value: Any) -> None:
        """Re-encode a decoded value (its Python type says its TLV type)."""
        if isinstance(value, Typed):
            encode_typed(self, tag, value.typ, value.value)
        elif isinstance(value, Raw):
            self.buf += retag(value.data, tag)
        elif value is None or value is NullValue:
            self.null(tag)
        elif isinstance(value, bool):
            self.boolean(tag, value)
        elif isinstance(value, (uint, enum.Enum)):
            self.uint(tag, int(value))
        elif isinstance(value, int):
            self.sint(tag, value)
        elif isinstance(value, float32):
            self.float32(tag, value)
        elif isinstance(value, float):
            self.float64(tag, value)
        elif isinstance(value, str):
            self.utf8(tag, value)
        elif isinstance(value, (bytes, bytearray)):
            self.octets(tag, value)
        elif isinstance(value, dict):
            self.start(tag, _LIST if isinstance(value, TagList) else _STRUCT)
            for t, v in value.items():
                self.generic(t, v)
            self.end()
        elif isinstance(value, (list, tuple)):
            self.start(tag, _ARRAY)
            for v in value:
                self.generic(None, v)
            self.end()
        else:
            raise CodecError(f"cannot TLV-encode {type(value).__name__}")


_END_MARK = object()


class _Reader:
    def __init__(self, data: bytes):
        self.data = bytes(data)
        self.pos = 0

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise CodecError(f"TLV truncated at byte {self.pos}: {what} needs {n} bytes")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def element(self, depth: int) -> tuple[Any, Any]:
        """(tag, value) of the next element, or (None, _END_MARK) at an end-of-container."""
        at = self.pos
        control = self.take(1, "control byte")[0]
        tag_form, element_type = control >> 5, control & 0x1F
        tag: Any
        if tag_form == 0:
            tag = None
        elif tag_form == 1:
            tag = self.take(1, "context tag")[0]
        elif tag_form in (2, 4):      # common / implicit profile, 2-byte tag number
            tag = (0 if tag_form == 2 else None, int.from_bytes(self.take(2, "tag"), "little"))
        elif tag_form in (3, 5):      # common / implicit profile, 4-byte tag number
            tag = (0 if tag_form == 3 else None, int.from_bytes(self.take(4, "tag"), "little"))
        else:                         # fully qualified: vendor id, profile number, 2- or 4-byte tag
            vendor, profile = struct.unpack("<HH", self.take(4, "profile"))
            number = self.take(2 if tag_form == 6 else 4, "tag")
            tag = ((vendor << 16) | profile, int.from_bytes(number, "little"))
        if element_type == _END:
            if tag is not None:
                raise CodecError(f"end-of-container with a tag at byte {at}")
            return None, _END_MARK
        size = 1 << (element_type & 0x03)
        if element_type <= 0x03:
            return tag, int.from_bytes(self.take(size, "integer"), "little", signed=True)
        if element_type <= 0x07:
            return tag, uint(int.from_bytes(self.take(size, "integer"), "little"))
        if element_type in (_FALSE, _TRUE):
            return tag, element_type == _TRUE
        if element_type == _FLOAT:
            return tag, float32(struct.unpack("<f", self.take(4, "float"))[0])
        if element_type == _FLOAT | 1:
            return tag, struct.unpack("<d", self.take(8, "double"))[0]
        if _UTF8 <= element_type <= 0x13:
            length = int.from_bytes(self.take(size, "string length"), "little")
            raw = self.take(length, "string")
            if element_type >= _BYTES:
                return tag, raw
            try:
                return tag, raw.decode("utf-8")
            except UnicodeDecodeError:
                raise CodecError(f"invalid UTF-8 string at byte {at}") from None
        if element_type == _NULL:
            return tag, None
        if element_type in (_STRUCT, _ARRAY, _LIST):
            if depth >= MAX_DEPTH:
                raise CodecError(f"TLV nested deeper than {MAX_DEPTH} containers")
            return tag, self.container(element_type, depth + 1)
        raise CodecError(f"unknown TLV element type 0x{element_type:02x} at byte {at}")

    def container(self, kind: int, depth: int) -> Any:
        out: Any = [] if kind == _ARRAY else (Struct() if kind == _STRUCT else TagList())
        while True:
            tag, value = self.element(depth)
            if value is _END_MARK:
                return out
            if kind == _ARRAY:
                if tag is not None:
                    raise CodecError(f"tagged element {tag!r} inside an array")
                out.append(value)
            else:
                if tag is None:
                    raise CodecError("anonymous element inside a structure or path list")
                if tag in out:
                    raise CodecError(f"duplicate tag {tag!r} in a container")
                out[tag] = value


def decode_tlv(data: bytes) -> Any:
    """The value of the single top-level TLV element in `data` (which it must use up)."""
    reader = _Reader(data)
    _, value = reader.element(0)
    if value is _END_MARK:
        raise CodecError("TLV starts with an end-of-container")
    if reader.pos != len(reader.data):
        raise CodecError(f"{len(reader.data) - reader.pos} trailing bytes after the TLV element")
    return value


def encode_tlv(value: Any) -> bytes:
    """A value (generic or Typed) as one anonymous TLV element."""
    w = TLVWriter()
    w.generic(None, value)
    return bytes(w.buf)


# ---- values by declared chip type --------------------------------------------------------------
def _union_parts(typ: Any) -> tuple[bool, bool, Any] | None:
    """(nullable, optional, inner type) of a Union, or None when `typ` is not a Union."""
    if typing.get_origin(typ) not in (typing.Union, types.UnionType):
        return None
    args = typing.get_args(typ)
    inner = [a for a in args if a is not Nullable and a is not type(None)]
    if len(inner) != 1:
        raise CodecError(f"unsupported union type {typ!r}")
    return Nullable in args, type(None) in args, inner[0]


def list_item_type(typ: Any) -> Any | None:
    """The element type when `typ` (maybe nullable/optional) is a list, else None."""
    parts = _union_parts(typ)
    inner = parts[2] if parts else typ
    if typing.get_origin(inner) is list:
        return (typing.get_args(inner) or (Any,))[0]
    return None


def encode_typed(w: TLVWriter, tag: int | None, typ: Any, value: Any, what: str = "value") -> None:
    """Write `value` as the TLV type its declared chip type `typ` calls for."""
    parts = _union_parts(typ)
    if parts is not None:
        nullable, _, inner = parts
        if value is NullValue:
            if not nullable:
                raise CodecError(f"{what} is null but {type_name(typ)} is not nullable")
            w.null(tag)
            return
        if value is None:
            raise CodecError(f"{what} is absent; optional fields are omitted by their struct")
        typ = inner
    if typing.get_origin(typ) is list:
        (item,) = typing.get_args(typ) or (Any,)
        if not isinstance(value, (list, tuple)):
            raise CodecError(f"{what}={value!r} is not a list")
        w.start(tag, _ARRAY)
        for i, v in enumerate(value):
            encode_typed(w, None, item, v, f"{what}[{i}]")
        w.end()
        return
    if typ is Any:
        w.generic(tag, value)
        return
    if not isinstance(typ, type):
        raise CodecError(f"{what}: unsupported declared type {typ!r}")
    if issubclass(typ, ClusterObject):
        if not isinstance(value, ClusterObject):
            raise CodecError(f"{what}={value!r} is not a {typ.__name__}")
        w.start(tag, _STRUCT)
        for f in typ.descriptor.Fields:
            v = getattr(value, f.Label, None)
            parts = _union_parts(f.Type)
            if v is None:
                if parts and parts[1]:
                    continue   # optional field, absent
                if not (parts and parts[0]):
                    raise CodecError(f"{what}.{f.Label} is missing and not optional")
                v = NullValue   # a nullable field left None by its builder
            encode_typed(w, f.Tag, f.Type, v, f"{what}.{f.Label}")
        w.end()
    elif issubclass(typ, bool):
        if not isinstance(value, bool):
            raise CodecError(f"{what}={value!r} is not a boolean")
        w.boolean(tag, value)
    elif issubclass(typ, (enum.Enum, uint)):   # enums and bitmaps are unsigned on the wire
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CodecError(f"{what}={value!r} is not an unsigned integer")
        w.uint(tag, int(value))
    elif issubclass(typ, float32):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CodecError(f"{what}={value!r} is not a number")
        w.float32(tag, float(value))
    elif issubclass(typ, float):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CodecError(f"{what}={value!r} is not a number")
        w.float64(tag, float(value))
    elif issubclass(typ, int):
        if isinstance(value, bool) or not isinstance(value, int):
            raise CodecError(f"{what}={value!r} is not an integer")
        w.sint(tag, int(value))
    elif issubclass(typ, str):
        if not isinstance(value, str):
            raise CodecError(f"{what}={value!r} is not a string")
        w.utf8(tag, value)
    elif issubclass(typ, bytes):
        if not isinstance(value, (bytes, bytearray)):
            raise CodecError(f"{what}={value!r} is not an octet string")
        w.octets(tag, value)
    else:
        raise CodecError(f"{what}: unsupported declared type {typ.__name__}")


def encode_value(typ: Any, value: Any) -> bytes:
    """One Matter value as an anonymous TLV element, by its declared type."""
    w = TLVWriter()
    encode_typed(w, None, typ, value)
    return bytes(w.buf)


def decode_typed(typ: Any, raw: Any, what: str = "value",
                 bad: Status = Status.INVALID_DATA_TYPE) -> Any:
    """Check a decoded TLV value against chip type `typ` and build the Matter value.

    A wrong wire type raises MatterError(`bad`) (INVALID_COMMAND for command fields); an enum
    value the spec does not define raises CONSTRAINT_ERROR. Unknown struct fields are ignored,
    as the spec asks of receivers; a missing FabricIndex is left 0 for the IM to fill in.
    """
    def wrong() -> MatterError:
        return MatterError(bad, f"{what}={raw!r} is not a {type_name(typ)}")

    parts = _union_parts(typ)
    if parts is not None:
        nullable, _, inner = parts
        if raw is None:
            if nullable:
                return NullValue
            raise MatterError(bad, f"{what} may not be null ({type_name(typ)})")
        typ = inner
    elif raw is None:
        raise MatterError(bad, f"{what} may not be null ({type_name(typ)})")
    if typing.get_origin(typ) is list:
        (item,) = typing.get_args(typ) or (Any,)
        if not isinstance(raw, list):
            raise wrong()
        return [decode_typed(item, v, f"{what}[{i}]", bad) for i, v in enumerate(raw)]
    if typ is Any:
        return raw
    if not isinstance(typ, type):
        raise MatterError(Status.FAILURE, f"{what}: unsupported declared type {typ!r}")
    if issubclass(typ, ClusterObject):
        if not isinstance(raw, Struct):
            raise wrong()
        values: dict[str, Any] = {}
        for f in typ.descriptor.Fields:
            if f.Tag in raw:
                values[f.Label] = decode_typed(f.Type, raw[f.Tag], f"{what}.{f.Label}", bad)
            elif (_union_parts(f.Type) or (False, False))[1]:
                values[f.Label] = None
            elif f.Tag == FABRIC_INDEX_TAG:
                values[f.Label] = 0
            else:
                raise MatterError(bad, f"{what}: missing field {f.Label} (tag {f.Tag}, {type_name(f.Type)})")
        return typ(**values)
    if issubclass(typ, bool):
        if not isinstance(raw, bool):
            raise wrong()
        return raw
    if issubclass(typ, enum.Enum):
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise wrong()
        return from_json(typ, int(raw), what)   # CONSTRAINT_ERROR for undefined values/bits
    if issubclass(typ, uint):
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise wrong()
        return int(raw)
    if issubclass(typ, float):
        if not isinstance(raw, float):
            raise wrong()
        return float(raw)
    if issubclass(typ, int):
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise wrong()
        return int(raw)
    if issubclass(typ, str):
        if not isinstance(raw, str):
            raise wrong()
        return raw
    if issubclass(typ, bytes):
        if not isinstance(raw, bytes):
            raise wrong()
        return raw
    raise MatterError(Status.FAILURE, f"{what}: unsupported declared type {typ!r}")


# ---- IBs and messages, declared by their field tables ---------------------------------------------
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
    _container: ClassVar[int] = _STRUCT
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
        if not isinstance(raw, TagList if cls._container == _LIST else Struct):
            raise CodecError(f"{where} is not a TLV {'list' if cls._container == _LIST else 'structure'}")
        values: dict[str, Any] = {}
        for f in cls._fields:
            if f.tag in raw:
                values[f.name] = _read_kind(f.kind, raw[f.tag], f"{where}.{f.name}")
            elif f.required:
                raise CodecError(f"{where}: missing {f.name} (tag {f.tag})")
        return cls(**values)


def _write_kind(w: TLVWriter, tag: int | None, kind: Any, value: Any) -> None:
    if isinstance(kind, list):
        w.start(tag, _ARRAY)
        for item in value:
            _write_kind(w, None, kind[0], item)
        w.end()
    elif isinstance(kind, type) and issubclass(kind, _Block):
        if isinstance(value, Raw):
            w.buf += retag(value.data, tag)
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
    _container = _LIST
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
    _container = _LIST
    _fields = (F(0, "node", "uint"), F(1, "endpoint", "uint", True), F(2, "cluster", "uint", True))


@dataclass
class EventPath(_Block):
    endpoint: int | None = None
    cluster: int | None = None
    event: int | None = None
    node: int | None = None
    is_urgent: bool = False
    _container = _LIST
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
    status: int = Status.SUCCESS
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
        w.start(tag, _STRUCT)
        if self.data_version is not None:
            w.uint(0, self.data_version)
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
    _container = _LIST
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
    status: int = Status.SUCCESS
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
    invoke_responses: list[InvokeResponseIB] = field(default_factory=list)
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
    return cls.read(raw)

