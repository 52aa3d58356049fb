"""Matter values encoded by their declared chip type (`chip.clusters.Objects`).

`uint` is TLV unsigned, `int` signed, `float32` a 4-byte float and `float` an 8-byte double,
enums and bitmaps unsigned, `Nullable` a TLV null, lists arrays and structs by field tag. Peers
(matter.js, the CHIP SDK) check these types. `decode_typed` checks a generic decoded value
against the type it should have and answers with Matter status codes, which is why this lives
in the node glue and not in the pure TLV codec: it needs the cluster value model.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from chip.clusters import Objects as Clusters
from chip.clusters.ClusterObjects import ClusterObject
from chip.clusters.Types import NullValue

from clusters.status import MatterError, Status
from clusters.value_types import Kind, Shape, shape
from clusters.values import from_json, type_name
from matter_protocol.interaction import FABRIC_INDEX_TAG
from matter_protocol.tlv import ARRAY, STRUCT, CodecError, Struct, TLVWriter

#: The fabric-sensitive fields of fabric-scoped structs (Matter Core spec data model, fabric
#: quality "S"; chip.clusters.Objects does not mark them). A read that is not fabric-filtered
#: shows other fabrics' entries without them, as the CHIP SDK's attribute encoder does.
FABRIC_SENSITIVE: dict[type, frozenset[str]] = {
    Clusters.AccessControl.Structs.AccessControlEntryStruct:
        frozenset({"privilege", "authMode", "subjects", "targets"}),
    Clusters.AccessControl.Structs.AccessControlExtensionStruct: frozenset({"data"}),
    Clusters.OperationalCredentials.Structs.NOCStruct: frozenset({"noc", "icac"}),
}


class _Omitted:
    """A struct field left out of the encoding (a fabric-sensitive field of another fabric)."""

    def __repr__(self) -> str:
        return "OMITTED"


OMITTED: Any = _Omitted()


def without_sensitive(value: Any, accessing_fabric: int | None) -> Any:
    """`value` (a fabric-scoped list) as another fabric may see it: entries of fabrics other than
    `accessing_fabric` (None: no fabric) with their fabric-sensitive fields OMITTED."""
    if not isinstance(value, list):
        return value
    out = []
    for v in value:
        hidden = FABRIC_SENSITIVE.get(type(v))
        if hidden and getattr(v, "fabricIndex", None) != accessing_fabric:
            v = dataclasses.replace(v, **dict.fromkeys(hidden, OMITTED))
        out.append(v)
    return out


@dataclass(frozen=True)
class Typed:
    """A Matter value to encode by its declared chip type (an attribute value, command fields)."""
    typ: Any
    value: Any

    def write_tlv(self, writer: TLVWriter, tag: int | None) -> None:
        encode_typed(writer, tag, self.typ, self.value)

def _shape(typ: Any) -> Shape:
    s = shape(typ)
    if s.is_union and len(s.options) != 1:
        raise CodecError(f"unsupported union type {typ!r}")
    return s


def encode_typed(w: TLVWriter, tag: int | None, typ: Any, value: Any, what: str = "value") -> None:
    """Write `value` as the TLV type its declared chip type `typ` calls for."""
    s = _shape(typ)
    if s.is_union:
        if value is NullValue:
            if not s.nullable:
                raise CodecError(f"{what} is null but {type_name(typ)} is not nullable")
            w.null(tag)
            return
        if value is None:
            raise CodecError(f"{what} is absent; optional fields are omitted by their struct")
    kind, typ = s.kind, s.typ
    if kind is Kind.LIST:
        if not isinstance(value, (list, tuple)):
            raise CodecError(f"{what}={value!r} is not a list")
        w.start(tag, ARRAY)
        for i, v in enumerate(value):
            encode_typed(w, None, s.item, v, f"{what}[{i}]")
        w.end()
    elif kind is Kind.ANY:
        w.generic(tag, value)
    elif kind is Kind.OWN:   # a type that encodes its own values (clusters.clone.Opaque)
        typ.encode_tlv(w, tag, value)
    elif kind is Kind.STRUCT:
        if not isinstance(value, ClusterObject):
            raise CodecError(f"{what}={value!r} is not a {typ.__name__}")
        w.start(tag, STRUCT)
        for f in typ.descriptor.Fields:
            v = getattr(value, f.Label, None)
            if v is OMITTED:
                continue
            if v is None:
                field = _shape(f.Type)
                if field.optional:
                    continue   # optional field, absent
                if not field.nullable:
                    raise CodecError(f"{what}.{f.Label} is missing and not optional")
                v = NullValue   # a nullable field left None by its builder
            encode_typed(w, f.Tag, f.Type, v, f"{what}.{f.Label}")
        w.end()
    elif kind is Kind.BOOL:
        if not isinstance(value, bool):
            raise CodecError(f"{what}={value!r} is not a boolean")
        w.boolean(tag, value)
    elif kind in (Kind.ENUM, Kind.BITMAP, Kind.UINT):   # enums and bitmaps are unsigned on the wire
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise CodecError(f"{what}={value!r} is not an unsigned integer")
        w.uint(tag, int(value))
    elif kind in (Kind.FLOAT32, Kind.FLOAT):
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise CodecError(f"{what}={value!r} is not a number")
        (w.float32 if kind is Kind.FLOAT32 else w.float64)(tag, float(value))
    elif kind is Kind.INT:
        if isinstance(value, bool) or not isinstance(value, int):
            raise CodecError(f"{what}={value!r} is not an integer")
        w.sint(tag, int(value))
    elif kind is Kind.STR:
        if not isinstance(value, str):
            raise CodecError(f"{what}={value!r} is not a string")
        w.utf8(tag, value)
    elif kind is Kind.BYTES:
        if not isinstance(value, (bytes, bytearray)):
            raise CodecError(f"{what}={value!r} is not an octet string")
        w.octets(tag, bytes(value))
    else:
        raise CodecError(f"{what}: unsupported declared type {getattr(typ, '__name__', typ)!r}")


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

    s = _shape(typ)
    if raw is None:
        if s.nullable:
            return NullValue
        raise MatterError(bad, f"{what} may not be null ({type_name(typ)})")
    kind, typ = s.kind, s.typ
    if kind is Kind.LIST:
        if not isinstance(raw, list):
            raise wrong()
        return [decode_typed(s.item, v, f"{what}[{i}]", bad) for i, v in enumerate(raw)]
    if kind is Kind.ANY:
        return raw
    if kind is Kind.STRUCT:
        if not isinstance(raw, Struct):
            raise wrong()
        values: dict[str, Any] = {}
        for f in typ.descriptor.Fields:
            if f.Tag in raw:
                values[f.Label] = decode_typed(f.Type, raw[f.Tag], f"{what}.{f.Label}", bad)
            elif _shape(f.Type).optional:
                values[f.Label] = None
            elif f.Tag == FABRIC_INDEX_TAG:
                values[f.Label] = 0
            else:
                raise MatterError(bad, f"{what}: missing field {f.Label} (tag {f.Tag}, {type_name(f.Type)})")
        return typ(**values)
    if kind is Kind.BOOL:
        if not isinstance(raw, bool):
            raise wrong()
        return raw
    if kind in (Kind.ENUM, Kind.BITMAP):
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise wrong()
        return from_json(typ, int(raw), what)   # CONSTRAINT_ERROR for undefined values/bits
    if kind is Kind.UINT:
        if isinstance(raw, bool) or not isinstance(raw, int) or raw < 0:
            raise wrong()
        return int(raw)
    if kind in (Kind.FLOAT32, Kind.FLOAT):
        if not isinstance(raw, float):
            raise wrong()
        return float(raw)
    if kind is Kind.INT:
        if isinstance(raw, bool) or not isinstance(raw, int):
            raise wrong()
        return int(raw)
    if kind is Kind.STR:
        if not isinstance(raw, str):
            raise wrong()
        return raw
    if kind is Kind.BYTES:
        if not isinstance(raw, bytes):
            raise wrong()
        return raw
    raise MatterError(Status.FAILURE, f"{what}: unsupported declared type {typ!r}")
