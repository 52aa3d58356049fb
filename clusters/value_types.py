"""What a chip type is, decided once: the one reading of `chip.clusters.Objects` types that every
value conversion dispatches on (JSON in and out: clusters/values.py; TLV in and out:
twin/node/values.py).

A declared type is a concrete type (a struct, enum, bitmap, number, string, octet string,
boolean), a list of one, or either of those made nullable (`Nullable` in a Union: the value
may be null) and/or optional (`None` in a Union: a struct field may be absent). `shape(typ)`
unwraps that once and names the kind; it is cached per type, so conversions on the hot paths
(every attribute a node reports, every tool argument) do no typing introspection.
"""
from __future__ import annotations

import enum
import functools
import types
import typing
from dataclasses import dataclass
from typing import Any

from chip import tlv
from chip.clusters.ClusterObjects import ClusterObject
from chip.clusters.Types import Nullable


class Kind(enum.Enum):
    ANY = "any"            # typing.Any: whatever the value is
    LIST = "list"
    STRUCT = "struct"      # a ClusterObject: a struct or a command's fields
    BOOL = "bool"
    BITMAP = "bitmap"      # an IntFlag
    ENUM = "enum"
    FLOAT32 = "float32"
    FLOAT = "float"        # float64 on the wire
    UINT = "uint"
    INT = "int"
    STR = "str"
    BYTES = "bytes"
    OWN = "own"            # a type that encodes its own values (clusters.clone.Opaque)
    UNKNOWN = "unknown"


@dataclass(frozen=True)
class Shape:
    kind: Kind
    typ: Any                       # the concrete type, the Union unwrapped
    nullable: bool = False
    optional: bool = False
    #: Every concrete member of the Union (chip's types have one; `from_json` tries each).
    options: tuple[Any, ...] = ()
    item: Any = None               # LIST: the element type

    @property
    def is_union(self) -> bool:
        return bool(self.options)


@functools.cache
def shape(typ: Any) -> Shape:
    """The shape of a declared chip type (see the module docstring)."""
    if typing.get_origin(typ) in (typing.Union, types.UnionType):
        args = typing.get_args(typ)
        options = tuple(a for a in args if a is not Nullable and a is not type(None))
        inner = _concrete(options[0]) if len(options) == 1 else Shape(Kind.UNKNOWN, typ)
        return Shape(inner.kind, inner.typ, Nullable in args, type(None) in args, options, inner.item)
    return _concrete(typ)


def _concrete(typ: Any) -> Shape:
    if typing.get_origin(typ) is list:
        return Shape(Kind.LIST, typ, item=(typing.get_args(typ) or (Any,))[0])
    if typ is Any:
        return Shape(Kind.ANY, typ)
    if hasattr(typ, "encode_tlv"):
        return Shape(Kind.OWN, typ)
    if not isinstance(typ, type):
        return Shape(Kind.UNKNOWN, typ)
    # Order matters: bool and the enums are ints, float32 is a float, uint an int.
    for base, kind in ((ClusterObject, Kind.STRUCT), (bool, Kind.BOOL), (enum.IntFlag, Kind.BITMAP),
                       (enum.Enum, Kind.ENUM), (tlv.float32, Kind.FLOAT32), (float, Kind.FLOAT),
                       (tlv.uint, Kind.UINT), (int, Kind.INT), (str, Kind.STR), (bytes, Kind.BYTES)):
        if issubclass(typ, base):
            return Shape(kind, typ)
    return Shape(Kind.UNKNOWN, typ)


def is_optional(typ: Any) -> bool:
    """Whether a struct field of this type may be absent."""
    return shape(typ).optional


def list_item_type(typ: Any) -> Any | None:
    """The element type when `typ` (maybe nullable/optional) is a list, else None."""
    s = shape(typ)
    return s.item if s.kind is Kind.LIST else None
