"""Convert between Matter values (the types in `chip.clusters.Objects`) and plain JSON.

Cluster servers store values in the chip types, so the Matter node can TLV-encode them
directly. Tools, snapshots and home files speak JSON. `to_json` and `from_json` are the
only bridge between the two; `from_json` also validates, raising `MatterError`.
"""
from __future__ import annotations

import enum
from typing import Any

from chip.clusters.ClusterObjects import ClusterObject
from chip.clusters.Types import NullValue

from clusters.status import MatterError, Status
from clusters.value_types import Kind, is_optional, shape


def to_json(value: Any) -> Any:
    """A JSON-ready copy of a Matter value (structs become dicts keyed by field label)."""
    if value is NullValue or value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, enum.Enum):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str):
        return value
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, ClusterObject):
        return {f.Label: to_json(getattr(value, f.Label)) for f in value.descriptor.Fields
                if getattr(value, f.Label) is not None}
    if isinstance(value, (list, tuple)):
        return [to_json(v) for v in value]
    if isinstance(value, dict):
        return {k: to_json(v) for k, v in value.items()}
    raise TypeError(f"cannot express {type(value).__name__} as JSON")


def type_name(typ: Any) -> str:
    """A short human name for a chip type, used in error messages and docs."""
    s = shape(typ)
    if s.is_union:
        inner = " | ".join(type_name(a) for a in s.options)
        return f"{inner} or null" if s.nullable else inner
    return _NAMES[s.kind](s) if s.kind in _NAMES else str(typ)


_NAMES = {
    Kind.LIST: lambda s: f"list of {type_name(s.item)}",
    Kind.BOOL: lambda s: "boolean",
    Kind.BITMAP: lambda s: f"bitmap {s.typ.__name__}",
    Kind.ENUM: lambda s: f"enum {s.typ.__name__}",
    Kind.FLOAT32: lambda s: "number",
    Kind.FLOAT: lambda s: "number",
    Kind.UINT: lambda s: "unsigned integer",
    Kind.INT: lambda s: "integer",
    Kind.STR: lambda s: "string",
    Kind.BYTES: lambda s: "hex byte string",
    Kind.STRUCT: lambda s: f"struct {s.typ.__name__}",
}


def enum_members(typ: type[enum.Enum]) -> dict[str, int]:
    """Known members of a chip enum, without the library's placeholder for unknown values."""
    return {m.name: int(m.value) for m in typ if m.name != "kUnknownEnumValue"}


def from_json(typ: Any, data: Any, what: str = "value") -> Any:
    """Validate JSON `data` against chip type `typ` and build the Matter value.

    Raises MatterError(INVALID_DATA_TYPE) for a wrong shape and CONSTRAINT_ERROR for an
    enum value the spec does not define; `what` names the thing in the message.
    """
    s = shape(typ)
    if s.is_union:
        if data is None:
            if s.nullable:
                return NullValue
            if s.optional:
                return None
            raise MatterError(Status.CONSTRAINT_ERROR, f"{what} may not be null")
        errors = []
        for option in s.options:
            try:
                return from_json(option, data, what)
            except MatterError as exc:
                errors.append(exc)
        raise errors[0]
    kind = s.kind
    if kind is Kind.LIST:
        if not isinstance(data, list):
            raise _wrong(typ, data, what)
        return [from_json(s.item, v, f"{what}[{i}]") for i, v in enumerate(data)]
    if kind is Kind.ANY:
        return data
    if kind is Kind.BOOL:
        if isinstance(data, bool):
            return data
        raise _wrong(typ, data, what)
    if kind is Kind.BITMAP:
        if isinstance(data, bool) or not isinstance(data, int) or data < 0:
            raise _wrong(typ, data, what)
        known = 0
        for m in typ:
            known |= int(m)
        if data & ~known:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"{what}: bits {data & ~known:#x} are not defined in {typ.__name__}")
        return typ(data)
    if kind is Kind.ENUM:
        if isinstance(data, str) and data in enum_members(typ):
            return typ[data]
        if isinstance(data, bool) or not isinstance(data, int):
            raise _wrong(typ, data, what)
        members = enum_members(typ)
        if data not in members.values():
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"{what}={data} is not a {typ.__name__}; accepted: "
                              + ", ".join(f"{v} ({k})" for k, v in members.items()))
        return typ(data)
    if kind in (Kind.FLOAT32, Kind.FLOAT):
        if isinstance(data, bool) or not isinstance(data, (int, float)):
            raise _wrong(typ, data, what)
        return float(data)
    if kind is Kind.UINT:
        if isinstance(data, bool) or not isinstance(data, int) or data < 0:
            raise _wrong(typ, data, what)
        return int(data)
    if kind is Kind.INT:
        if isinstance(data, bool) or not isinstance(data, int):
            raise _wrong(typ, data, what)
        return int(data)
    if kind is Kind.STR:
        if not isinstance(data, str):
            raise _wrong(typ, data, what)
        return data
    if kind is Kind.BYTES:
        if isinstance(data, (bytes, bytearray)):
            return bytes(data)
        try:
            return bytes.fromhex(data)
        except (TypeError, ValueError):
            raise _wrong(typ, data, what) from None
    if kind is Kind.STRUCT:
        return struct_from_json(typ, data, what)
    raise MatterError(Status.INVALID_DATA_TYPE, f"{what}: unsupported type {typ!r}")


def struct_from_json(typ: type[ClusterObject], data: Any, what: str) -> ClusterObject:
    """Build a struct (or command payload) from a dict keyed by field label."""
    if isinstance(data, typ):
        return data
    if not isinstance(data, dict):
        raise _wrong(typ, data, what)
    fields = {f.Label: f for f in typ.descriptor.Fields}
    by_lower = {label.lower(): label for label in fields}
    values: dict[str, Any] = {}
    for key, raw in data.items():
        label = by_lower.get(str(key).lower())
        if label is None:
            raise MatterError(Status.INVALID_COMMAND,
                              f"{what}: unknown field {key!r}; accepted: {', '.join(fields) or 'none'}")
        values[label] = from_json(fields[label].Type, raw, f"{what}.{label}")
    for label, field in fields.items():
        if label in values:
            continue
        if is_optional(field.Type):
            values[label] = None
        else:
            raise MatterError(Status.INVALID_COMMAND,
                              f"{what}: missing field {label!r} ({type_name(field.Type)})")
    return typ(**values)


def _wrong(typ: Any, data: Any, what: str) -> MatterError:
    return MatterError(Status.INVALID_DATA_TYPE,
                       f"{what}={data!r} is not a {type_name(typ)}")
