"""Matter TLV (Core spec appendix A): the one codec every protocol module uses.

Writing: `TLVWriter` has one method per element type, and `generic` picks the element type from
the Python type of a value. A value that knows its own encoding (a cluster value typed by its
declared chip type, a pre-encoded `Raw` element) provides `write_tlv(writer, tag)`, so this
module needs to know nothing about clusters.

Reading is strict: malformed input raises `CodecError` saying what and where, and containers
nest at most `MAX_DEPTH` deep. Decoded values keep their wire type: `Struct` and `TagList`
(dicts keyed by tag), Python lists for arrays, `uint` for unsigned integers and `float32` for
4-byte floats. With `ordered=True`, structures and lists come back as `Fields` instead: wire
order, repeated tags kept (Matter certificates repeat DN tags).
"""
from __future__ import annotations

import enum
import struct
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from chip.clusters.Types import NullValue
from chip.tlv import float32, uint

MAX_DEPTH = 16            # nesting limit when decoding (IM messages need about 8)

#: A decoded tag: None (anonymous), a context tag 0..255, or (profile or None, number).
Tag = int | tuple[int | None, int] | None

SINT, UINT, FALSE, TRUE, FLOAT, UTF8, BYTES = 0x00, 0x04, 0x08, 0x09, 0x0A, 0x0C, 0x10
NULL, STRUCT, ARRAY, LIST, END = 0x14, 0x15, 0x16, 0x17, 0x18


class CodecError(ValueError):
    """Malformed TLV or a message missing a field; the text says what and where."""


class Struct(dict[Tag, Any]):
    """A decoded TLV structure: tag -> value, in wire order."""


class TagList(dict[Tag, Any]):
    """A decoded TLV list (the IM uses lists for paths, whose tags are unique)."""


class Fields(list[tuple[Tag, Any]]):
    """A structure or list decoded in wire order with repeated tags kept; `kind` says which."""

    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind   # "struct" or "list"


@runtime_checkable
class TLVEncodable(Protocol):
    """A value that writes itself (the hook `TLVWriter.generic` calls)."""

    def write_tlv(self, writer: TLVWriter, tag: int | None) -> None: ...


def retag(element: bytes, tag: int | None) -> bytes:
    """An anonymous TLV element under a context tag (the value bytes do not change)."""
    if tag is None:
        return element
    if not element or element[0] & 0xE0:
        raise CodecError("only an anonymous TLV element can be given a tag")
    if not 0 <= tag <= 0xFF:
        raise CodecError(f"tag {tag!r} is not a context tag 0..255")
    return bytes((element[0] | 0x20, tag)) + element[1:]


@dataclass(frozen=True)
class Raw:
    """An already encoded anonymous TLV element, spliced in as is (given a tag if needed)."""
    data: bytes

    def write_tlv(self, writer: TLVWriter, tag: int | None) -> None:
        writer.buf += retag(self.data, tag)


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
                self._head(tag, UINT | code)
                self.buf += int(value).to_bytes(size, "little")
                return
        raise CodecError(f"{value} does not fit an unsigned 64-bit integer")

    def sint(self, tag: int | None, value: int) -> None:
        for size, code in ((1, 0), (2, 1), (4, 2), (8, 3)):
            if -(1 << (8 * size - 1)) <= value < 1 << (8 * size - 1):
                self._head(tag, SINT | code)
                self.buf += int(value).to_bytes(size, "little", signed=True)
                return
        raise CodecError(f"{value} does not fit a signed 64-bit integer")

    def boolean(self, tag: int | None, value: bool) -> None:
        self._head(tag, TRUE if value else FALSE)

    def float32(self, tag: int | None, value: float) -> None:
        self._head(tag, FLOAT)
        self.buf += struct.pack("<f", value)

    def float64(self, tag: int | None, value: float) -> None:
        self._head(tag, FLOAT | 1)
        self.buf += struct.pack("<d", value)

    def _string(self, tag: int | None, base: int, data: bytes) -> None:
        for size, code in ((1, 0), (2, 1), (4, 2)):
            if len(data) < 1 << (8 * size):
                self._head(tag, base | code)
                self.buf += len(data).to_bytes(size, "little") + data
                return
        raise CodecError("string longer than 4 GiB")

    def utf8(self, tag: int | None, value: str) -> None:
        self._string(tag, UTF8, value.encode("utf-8"))

    def octets(self, tag: int | None, value: bytes) -> None:
        self._string(tag, BYTES, bytes(value))

    def null(self, tag: int | None) -> None:
        self._head(tag, NULL)

    def start(self, tag: int | None, container: int) -> None:
        """Open a STRUCT, ARRAY or LIST; close it with `end`."""
        self._head(tag, container)

    def end(self) -> None:
        self.buf.append(END)

    def generic(self, tag: int | None, value: Any) -> None:
        """Encode a value by its Python type (a decoded value re-encodes to the same bytes).

        Dict keys are written in the dict's order; a value with `write_tlv` writes itself.
        """
        if isinstance(value, TLVEncodable):
            value.write_tlv(self, tag)
        elif value is None or value is NullValue:
            self.null(tag)
        elif isinstance(value, bool):
            self.boolean(tag, value)
        elif isinstance(value, enum.Enum):
            self.uint(tag, int(value.value))
        elif isinstance(value, uint):
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
            self.octets(tag, bytes(value))
        elif isinstance(value, dict):
            self.start(tag, LIST if isinstance(value, TagList) else STRUCT)
            for t, v in value.items():
                self.generic(t, v)
            self.end()
        elif isinstance(value, (list, tuple)):
            self.start(tag, ARRAY)
            for v in value:
                self.generic(None, v)
            self.end()
        else:
            raise CodecError(f"cannot TLV-encode {type(value).__name__}")


#: What `TLVReader.element` returns as the value of an end-of-container element.
END_OF_CONTAINER = object()


class TLVReader:
    """Reads elements from `data`; `ordered` decodes structures and lists as `Fields`."""

    def __init__(self, data: bytes, ordered: bool = False) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.ordered = ordered

    def take(self, n: int, what: str) -> bytes:
        if self.pos + n > len(self.data):
            raise CodecError(f"TLV truncated at byte {self.pos}: {what} needs {n} bytes")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def element(self, depth: int = 0) -> tuple[Tag, Any]:
        """(tag, value) of the next element, or (None, END_OF_CONTAINER) at an end-of-container."""
        at = self.pos
        control = self.take(1, "control byte")[0]
        tag_form, element_type = control >> 5, control & 0x1F
        tag: Tag
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
        if element_type == END:
            if tag is not None:
                raise CodecError(f"end-of-container with a tag at byte {at}")
            return None, END_OF_CONTAINER
        size = 1 << (element_type & 0x03)
        if element_type <= 0x03:
            return tag, int.from_bytes(self.take(size, "integer"), "little", signed=True)
        if element_type <= 0x07:
            return tag, uint(int.from_bytes(self.take(size, "integer"), "little"))
        if element_type in (FALSE, TRUE):
            return tag, element_type == TRUE
        if element_type == FLOAT:
            return tag, float32(struct.unpack("<f", self.take(4, "float"))[0])
        if element_type == FLOAT | 1:
            return tag, struct.unpack("<d", self.take(8, "double"))[0]
        if UTF8 <= element_type <= 0x13:
            length = int.from_bytes(self.take(size, "string length"), "little")
            raw = self.take(length, "string")
            if element_type >= BYTES:
                return tag, raw
            try:
                return tag, raw.decode("utf-8")
            except UnicodeDecodeError:
                raise CodecError(f"invalid UTF-8 string at byte {at}") from None
        if element_type == NULL:
            return tag, None
        if element_type in (STRUCT, ARRAY, LIST):
            if depth >= MAX_DEPTH:
                raise CodecError(f"TLV nested deeper than {MAX_DEPTH} containers")
            return tag, self.container(element_type, depth + 1)
        raise CodecError(f"unknown TLV element type 0x{element_type:02x} at byte {at}")

    def container(self, kind: int, depth: int) -> Any:
        if kind == ARRAY:
            items: list[Any] = []
            while (item := self.element(depth))[1] is not END_OF_CONTAINER:
                if item[0] is not None:
                    raise CodecError(f"tagged element {item[0]!r} inside an array")
                items.append(item[1])
            return items
        if self.ordered:
            fields = Fields("struct" if kind == STRUCT else "list")
            while (item := self.element(depth))[1] is not END_OF_CONTAINER:
                if item[0] is None:
                    raise CodecError("anonymous element inside a structure or list")
                fields.append(item)
            return fields
        out: dict[Tag, Any] = Struct() if kind == STRUCT else TagList()
        while (item := self.element(depth))[1] is not END_OF_CONTAINER:
            tag, value = item
            if tag is None:
                raise CodecError("anonymous element inside a structure or path list")
            if tag in out:
                raise CodecError(f"duplicate tag {tag!r} in a container")
            out[tag] = value
        return out


def decode_tlv(data: bytes, *, ordered: bool = False) -> Any:
    """The value of the single top-level TLV element in `data` (which it must use up)."""
    reader = TLVReader(data, ordered)
    _, value = reader.element(0)
    if value is END_OF_CONTAINER:
        raise CodecError("TLV starts with an end-of-container")
    if reader.pos != len(reader.data):
        raise CodecError(f"{len(reader.data) - reader.pos} trailing bytes after the TLV element")
    return value


def encode_tlv(value: Any) -> bytes:
    """A value (generic, or one with `write_tlv`) as one anonymous TLV element."""
    w = TLVWriter()
    w.generic(None, value)
    return bytes(w.buf)
