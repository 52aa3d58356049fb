"""A minimal ASN.1 DER codec: the few element forms Matter certificates, CSRs and the
Certification Declaration's CMS envelope need. Callers turn `DerError` into their own error."""
from __future__ import annotations


class DerError(ValueError):
    """Malformed or unexpected DER; the message names the element."""


def der_length(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def der_element(tag: int, content: bytes) -> bytes:
    """One DER element: tag, definite length, content."""
    return bytes([tag]) + der_length(len(content)) + content


def der_seq(*parts: bytes) -> bytes:
    return der_element(0x30, b"".join(parts))


def der_oid(dotted: str) -> bytes:
    arcs = [int(a) for a in dotted.split(".")]
    body = bytearray()
    for arc in [arcs[0] * 40 + arcs[1]] + arcs[2:]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.insert(0, 0x80 | (arc & 0x7F))
            arc >>= 7
        body += bytes(chunk)
    return der_element(0x06, bytes(body))


def der_int(v: int) -> bytes:
    """A non-negative INTEGER, minimally encoded."""
    return der_element(0x02, v.to_bytes(v.bit_length() // 8 + 1, "big"))


class DerReader:
    """Reads consecutive DER elements from `data`."""

    def __init__(self, data: bytes) -> None:
        self.data, self.pos = data, 0

    def done(self) -> bool:
        return self.pos >= len(self.data)

    def peek(self) -> int | None:
        return None if self.done() else self.data[self.pos]

    def read(self, expect: int | None = None, what: str = "element") -> tuple[int, bytes, bytes]:
        """Return (tag, content, whole element bytes)."""
        d, start = self.data, self.pos
        if start + 2 > len(d):
            raise DerError(f"DER truncated reading {what}")
        tag, n, p = d[start], d[start + 1], start + 2
        if expect is not None and tag != expect:
            raise DerError(f"DER {what}: tag {tag:#04x}, expected {expect:#04x}")
        if n & 0x80:
            k = n & 0x7F
            if k == 0 or k > 4 or p + k > len(d):
                raise DerError(f"DER {what}: unsupported length encoding")
            n, p = int.from_bytes(d[p:p + k], "big"), p + k
        if p + n > len(d):
            raise DerError(f"DER {what}: length runs past the end")
        self.pos = p + n
        return tag, d[p:p + n], d[start:p + n]

    def end(self, what: str) -> None:
        if not self.done():
            raise DerError(f"DER {what}: unexpected trailing data")


def oid_str(body: bytes) -> str:
    """The dotted form of an OBJECT IDENTIFIER's content bytes."""
    arcs, v = [], 0
    for b in body:
        v = (v << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(v)
            v = 0
    if not arcs:
        raise DerError("empty OID")
    first = min(arcs[0] // 40, 2)
    return ".".join(str(a) for a in [first, arcs[0] - 40 * first] + arcs[1:])


def read_oid(r: DerReader, what: str) -> str:
    return oid_str(r.read(0x06, what)[1])
