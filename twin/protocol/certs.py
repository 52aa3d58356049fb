"""Matter operational certificates (Core spec 6.4-6.5).

A Matter certificate travels in a compact TLV form; its signature is over the X.509 DER
TBSCertificate that the TLV form stands for. So the conversion TLV -> DER must reproduce
the signed bytes exactly: every choice the spec fixes (one attribute per RDN, UTF8String for
Matter ids as upper-case hex, critical flags, UTCTime before 2050 ...) is made here once, in
`_tbs_der`, and `from_der` refuses any X.509 input that does not re-encode byte-identically.

Times are Matter epoch seconds (since 2000-01-01T00:00:00Z); 0 as not-after means "no
well-defined expiration" (99991231235959Z). Nothing here reads the clock: callers pass `at`.
"""

from __future__ import annotations

import dataclasses
import hashlib
import os
import random
import struct
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Iterable, Union

from chip.tlv import TLVReader, TLVWriter
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

__all__ = [
    "CertificateError", "MatterCertificate", "BasicConstraints", "verify_chain",
    "compressed_fabric_id", "mint_root", "mint_icac", "mint_noc", "generate_key",
    "public_key_bytes", "public_key_from_bytes", "key_id", "matter_time", "MATTER_EPOCH",
    "KeyUsage", "KeyPurpose", "DN_TAG",
]

MATTER_EPOCH = datetime(2000, 1, 1, tzinfo=timezone.utc)
# Default not-before for minted certificates: fixed (deterministic), in the past, and
# below 2050 so X.509 tools read it as a normal UTCTime.
DEFAULT_NOT_BEFORE = 631152000  # 2020-01-01T00:00:00Z


class CertificateError(ValueError):
    """A certificate or chain is malformed or does not verify; the message says why."""


# --- spec constants --------------------------------------------------------------------

class KeyUsage:
    """Key usage bits as the TLV form carries them (bit 0 = digitalSignature)."""
    digitalSignature = 0x0001
    nonRepudiation = 0x0002
    keyEncipherment = 0x0004
    dataEncipherment = 0x0008
    keyAgreement = 0x0010
    keyCertSign = 0x0020
    cRLSign = 0x0040
    encipherOnly = 0x0080
    decipherOnly = 0x0100


class KeyPurpose:
    serverAuth = 1
    clientAuth = 2
    codeSigning = 3
    emailProtection = 4
    timeStamping = 5
    OCSPSigning = 6


_KEY_PURPOSE_OID = {
    1: "1.3.6.1.5.5.7.3.1", 2: "1.3.6.1.5.5.7.3.2", 3: "1.3.6.1.5.5.7.3.3",
    4: "1.3.6.1.5.5.7.3.4", 5: "1.3.6.1.5.5.7.3.8", 6: "1.3.6.1.5.5.7.3.9",
}
_OID_KEY_PURPOSE = {v: k for k, v in _KEY_PURPOSE_OID.items()}

# DN attribute TLV tags (bit 0x80 set = PrintableString variant of tags 1..15).
DN_TAG = {
    "common-name": 1, "surname": 2, "serial-num": 3, "country-name": 4, "locality-name": 5,
    "state-or-province-name": 6, "org-name": 7, "org-unit-name": 8, "title": 9, "name": 10,
    "given-name": 11, "initials": 12, "gen-qualifier": 13, "dn-qualifier": 14, "pseudonym": 15,
    "domain-component": 16, "matter-node-id": 17, "matter-firmware-signing-id": 18,
    "matter-icac-id": 19, "matter-rcac-id": 20, "matter-fabric-id": 21, "matter-noc-cat": 22,
    "matter-vvs-id": 23,
}
_ATTR_OID = {
    1: "2.5.4.3", 2: "2.5.4.4", 3: "2.5.4.5", 4: "2.5.4.6", 5: "2.5.4.7", 6: "2.5.4.8",
    7: "2.5.4.10", 8: "2.5.4.11", 9: "2.5.4.12", 10: "2.5.4.41", 11: "2.5.4.42", 12: "2.5.4.43",
    13: "2.5.4.44", 14: "2.5.4.46", 15: "2.5.4.65", 16: "0.9.2342.19200300.100.1.25",
    **{t: f"1.3.6.1.4.1.37244.1.{t - 16}" for t in range(17, 24)},
}
_OID_ATTR = {v: k for k, v in _ATTR_OID.items()}
_MATTER_64BIT = {17, 18, 19, 20, 21, 23}
_MATTER_32BIT = {22}

_OID_EC_PUBLIC_KEY = "1.2.840.10045.2.1"
_OID_PRIME256V1 = "1.2.840.10045.3.1.7"
_OID_ECDSA_SHA256 = "1.2.840.10045.4.3.2"
_EXT_OID = {1: "2.5.29.19", 2: "2.5.29.15", 3: "2.5.29.37", 4: "2.5.29.14", 5: "2.5.29.35"}
_OID_EXT = {v: k for k, v in _EXT_OID.items()}
_CRITICAL_EXTS = {1, 2, 3}  # basic constraints, key usage, extended key usage

# TLV tags of the certificate structure.
_T_SERIAL, _T_SIG_ALGO, _T_ISSUER, _T_NOT_BEFORE, _T_NOT_AFTER, _T_SUBJECT = 1, 2, 3, 4, 5, 6
_T_PK_ALGO, _T_CURVE, _T_PUBKEY, _T_EXTENSIONS, _T_SIGNATURE = 7, 8, 9, 10, 11
_EXT_BASIC, _EXT_KEY_USAGE, _EXT_EKU, _EXT_SKID, _EXT_AKID, _EXT_FUTURE = 1, 2, 3, 4, 5, 6

DNValue = Union[int, str]
DN = tuple[tuple[int, DNValue], ...]


@dataclass(frozen=True)
class BasicConstraints:
    is_ca: bool
    path_len: int | None = None


Extension = tuple[int, object]  # (tag, BasicConstraints | int | tuple[int,...] | bytes)


# --- the certificate -------------------------------------------------------------------

@dataclass(frozen=True)
class MatterCertificate:
    """One Matter certificate, field for field as the TLV form carries it."""

    serial_number: bytes
    issuer: DN
    not_before: int
    not_after: int
    subject: DN
    public_key: bytes  # uncompressed P-256 point, 65 bytes
    extensions: tuple[Extension, ...]
    signature: bytes  # r || s, 64 bytes
    signature_algorithm: int = 1  # ecdsa-with-SHA256
    public_key_algorithm: int = 1  # ec-pub-key
    curve_id: int = 1  # prime256v1

    # -- DN and extension accessors --
    @staticmethod
    def _dn_get(dn: DN, tag: int) -> DNValue | None:
        for t, v in dn:
            if t == tag:
                return v
        return None

    def _ext(self, tag: int):
        for t, v in self.extensions:
            if t == tag:
                return v
        return None

    @property
    def node_id(self) -> int | None:
        return self._dn_get(self.subject, 17)

    @property
    def fabric_id(self) -> int | None:
        return self._dn_get(self.subject, 21)

    @property
    def rcac_id(self) -> int | None:
        return self._dn_get(self.subject, 20)

    @property
    def icac_id(self) -> int | None:
        return self._dn_get(self.subject, 19)

    @property
    def issuer_fabric_id(self) -> int | None:
        return self._dn_get(self.issuer, 21)

    @property
    def case_authenticated_tags(self) -> tuple[int, ...]:
        return tuple(v for t, v in self.subject if t == 22)

    @property
    def basic_constraints(self) -> BasicConstraints | None:
        return self._ext(_EXT_BASIC)

    @property
    def is_ca(self) -> bool:
        bc = self.basic_constraints
        return bool(bc and bc.is_ca)

    @property
    def key_usage(self) -> int | None:
        return self._ext(_EXT_KEY_USAGE)

    @property
    def key_purposes(self) -> tuple[int, ...]:
        return self._ext(_EXT_EKU) or ()

    @property
    def subject_key_id(self) -> bytes | None:
        return self._ext(_EXT_SKID)

    @property
    def authority_key_id(self) -> bytes | None:
        return self._ext(_EXT_AKID)

    @property
    def cert_type(self) -> str:
        """'root', 'icac', 'noc', 'firmware' or 'other', from the subject DN."""
        tags = [t for t, _ in self.subject]
        kinds = [k for k, t in (("root", 20), ("icac", 19), ("noc", 17), ("firmware", 18)) for _ in range(tags.count(t))]
        if len(kinds) > 1 or tags.count(21) > 1:
            raise CertificateError(f"subject DN must name one certificate type and at most one fabric id, has {kinds}")
        return kinds[0] if kinds else "other"

    def public_key_object(self) -> ec.EllipticCurvePublicKey:
        return public_key_from_bytes(self.public_key)

    # -- TLV --
    @classmethod
    def from_tlv(cls, data: bytes) -> "MatterCertificate":
        """Decode the Matter TLV form; raises CertificateError naming what is wrong."""
        root = _read_tlv(bytes(data))
        if root[0] is not None or root[1] != "struct":
            raise CertificateError("a Matter certificate is an anonymous TLV structure")
        fields = root[2]
        expected = [(_T_SERIAL, "bytes"), (_T_SIG_ALGO, "uint"), (_T_ISSUER, "list"),
                    (_T_NOT_BEFORE, "uint"), (_T_NOT_AFTER, "uint"), (_T_SUBJECT, "list"),
                    (_T_PK_ALGO, "uint"), (_T_CURVE, "uint"), (_T_PUBKEY, "bytes"),
                    (_T_EXTENSIONS, "list"), (_T_SIGNATURE, "bytes")]
        got = [(t, k) for t, k, _ in fields]
        if got != expected:
            raise CertificateError(
                f"certificate fields (tag, type) are {got}; expected exactly {expected} in that order")
        v = [val for _, _, val in fields]
        cert = cls(
            serial_number=v[0], signature_algorithm=v[1], issuer=_dn_from_tlv(v[2], "issuer"),
            not_before=v[3], not_after=v[4], subject=_dn_from_tlv(v[5], "subject"),
            public_key_algorithm=v[6], curve_id=v[7], public_key=v[8],
            extensions=_extensions_from_tlv(v[9]), signature=v[10])
        cert._check()
        return cert

    def to_tlv(self) -> bytes:
        self._check()
        w = TLVWriter()
        w.startStructure(None)
        w.putBytes(_T_SERIAL, self.serial_number)
        w.putUnsignedInt(_T_SIG_ALGO, self.signature_algorithm)
        _dn_to_tlv(w, _T_ISSUER, self.issuer)
        w.putUnsignedInt(_T_NOT_BEFORE, self.not_before)
        w.putUnsignedInt(_T_NOT_AFTER, self.not_after)
        _dn_to_tlv(w, _T_SUBJECT, self.subject)
        w.putUnsignedInt(_T_PK_ALGO, self.public_key_algorithm)
        w.putUnsignedInt(_T_CURVE, self.curve_id)
        w.putBytes(_T_PUBKEY, self.public_key)
        w.startPath(_T_EXTENSIONS)
        for tag, val in self.extensions:
            if tag == _EXT_BASIC:
                w.startStructure(_EXT_BASIC)
                w.putBool(1, val.is_ca)
                if val.path_len is not None:
                    w.putUnsignedInt(2, val.path_len)
                w.endContainer()
            elif tag == _EXT_KEY_USAGE:
                w.putUnsignedInt(tag, val)
            elif tag == _EXT_EKU:
                w.startArray(tag)
                for p in val:
                    w.putUnsignedInt(None, p)
                w.endContainer()
            else:
                w.putBytes(tag, val)
        w.endContainer()
        w.putBytes(_T_SIGNATURE, self.signature)
        w.endContainer()
        return bytes(w.encoding)

    # -- X.509 --
    def tbs_der(self) -> bytes:
        """DER TBSCertificate: the exact bytes the signature covers."""
        self._check()
        return _tbs_der(self)

    def to_der(self) -> bytes:
        r, s = int.from_bytes(self.signature[:32], "big"), int.from_bytes(self.signature[32:], "big")
        return _seq(self.tbs_der(), _seq(_oid(_OID_ECDSA_SHA256)),
                    _tlv(0x03, b"\x00" + encode_dss_signature(r, s)))

    def to_x509(self) -> x509.Certificate:
        return x509.load_der_x509_certificate(self.to_der())

    @classmethod
    def from_der(cls, der: bytes) -> "MatterCertificate":
        """Convert X.509 DER; refuses certificates without an exact Matter TLV equivalent."""
        der = bytes(der)
        try:
            cert = _from_der(der)
        except CertificateError:
            raise
        except (ValueError, IndexError, KeyError, struct.error) as e:
            raise CertificateError(f"malformed X.509 certificate: {e}") from None
        if cert.to_der() != der:
            raise CertificateError(
                "X.509 certificate uses an encoding the Matter TLV form cannot reproduce "
                "(re-encoding differs, so its signature would not survive conversion)")
        return cert

    @classmethod
    def from_x509(cls, cert: x509.Certificate) -> "MatterCertificate":
        return cls.from_der(cert.public_bytes(serialization.Encoding.DER))

    def verify_signature(self, issuer_public_key: bytes | ec.EllipticCurvePublicKey) -> None:
        """Raise CertificateError unless `issuer_public_key` signed this certificate."""
        key = issuer_public_key if isinstance(issuer_public_key, ec.EllipticCurvePublicKey) \
            else public_key_from_bytes(issuer_public_key)
        r, s = int.from_bytes(self.signature[:32], "big"), int.from_bytes(self.signature[32:], "big")
        try:
            key.verify(encode_dss_signature(r, s), self.tbs_der(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise CertificateError("signature does not verify with the issuer's public key") from None

    # -- structural checks shared by every path in and out --
    def _check(self) -> None:
        if self.signature_algorithm != 1:
            raise CertificateError(f"signature algorithm {self.signature_algorithm} unsupported; only 1 (ecdsa-with-SHA256)")
        if self.public_key_algorithm != 1:
            raise CertificateError(f"public key algorithm {self.public_key_algorithm} unsupported; only 1 (ec-pub-key)")
        if self.curve_id != 1:
            raise CertificateError(f"elliptic curve {self.curve_id} unsupported; only 1 (prime256v1)")
        if not 1 <= len(self.serial_number) <= 20:
            raise CertificateError(f"serial number is {len(self.serial_number)} bytes; 1..20 accepted")
        if len(self.public_key) != 65 or self.public_key[0] != 4:
            raise CertificateError("public key must be a 65-byte uncompressed P-256 point (04||X||Y)")
        if len(self.signature) != 64:
            raise CertificateError(f"signature is {len(self.signature)} bytes; 64 (r||s) accepted")
        for name, t in (("not-before", self.not_before), ("not-after", self.not_after)):
            if not 0 <= t <= 0xFFFFFFFF:
                raise CertificateError(f"{name} {t} is not a 32-bit Matter epoch time")
        if self.not_after and self.not_before >= self.not_after:
            raise CertificateError("not-before must be earlier than not-after")
        if not self.issuer or not self.subject:
            raise CertificateError("issuer and subject DNs must each have at least one attribute")
        for dn in (self.issuer, self.subject):
            for tag, val in dn:
                _check_dn_attr(tag, val)
        if not self.extensions:
            raise CertificateError("a Matter certificate must have at least one extension")
        seen = set()
        for tag, val in self.extensions:
            if tag in seen and tag != _EXT_FUTURE:
                raise CertificateError(f"extension {tag} appears twice")
            seen.add(tag)
            _check_extension(tag, val)


# --- validation helpers ----------------------------------------------------------------

def _check_dn_attr(tag: int, val: DNValue) -> None:
    base = tag & 0x7F
    if base not in _ATTR_OID or (tag & 0x80 and base > 15):
        raise CertificateError(f"unknown DN attribute tag {tag:#x}; accepted 1..23 and 0x81..0x8f")
    if base in _MATTER_64BIT or base in _MATTER_32BIT:
        limit = 0xFFFFFFFF if base in _MATTER_32BIT else 0xFFFFFFFFFFFFFFFF
        if not isinstance(val, int) or isinstance(val, bool) or not 0 <= val <= limit:
            raise CertificateError(f"DN attribute {tag} needs an unsigned integer up to {limit:#x}, got {val!r}")
    elif not isinstance(val, str):
        raise CertificateError(f"DN attribute {tag} needs a string, got {val!r}")


def _check_extension(tag: int, val: object) -> None:
    if tag == _EXT_BASIC:
        if not isinstance(val, BasicConstraints) or (val.path_len is not None and not (val.is_ca and 0 <= val.path_len <= 255)):
            raise CertificateError("basic constraints need is-ca, and a path length 0..255 only when is-ca")
    elif tag == _EXT_KEY_USAGE:
        if not isinstance(val, int) or not 0 < val <= 0x1FF:
            raise CertificateError(f"key usage {val!r} must be a nonzero bitmap within 0x1ff")
    elif tag == _EXT_EKU:
        if not isinstance(val, tuple) or not val or any(p not in _KEY_PURPOSE_OID for p in val):
            raise CertificateError(f"extended key usage {val!r} must be a non-empty tuple of purposes 1..6")
    elif tag in (_EXT_SKID, _EXT_AKID):
        if not isinstance(val, bytes) or len(val) != 20:
            raise CertificateError(f"key identifier extension {tag} must be 20 bytes")
    elif tag == _EXT_FUTURE:
        if not isinstance(val, bytes) or not val:
            raise CertificateError("future extension must be the DER of an X.509 Extension")
    else:
        raise CertificateError(f"unknown extension tag {tag}; accepted 1..6")


# --- TLV reading (chip.tlv gives a typed decoding tree; walk it strictly) --------------

_KINDS = (("Unsigned Integer", "uint"), ("Signed Integer", "int"), ("Boolean", "bool"),
          ("UTF-8 String", "str"), ("Byte String", "bytes"), ("Structure", "struct"),
          ("Array", "array"), ("Path", "list"), ("Null", "null"), ("Floating Point", "float"))


def _read_tlv(data: bytes):
    reader = TLVReader(data)
    try:
        reader.get()
    except (struct.error, KeyError, ValueError, IndexError) as e:
        raise CertificateError(f"malformed TLV (truncated or invalid element): {e}") from None
    if len(reader.decoding) != 1:
        raise CertificateError("certificate TLV must be exactly one element with nothing after it")
    return _node(reader.decoding[0])


def _node(d: dict):
    if "profileTag" in d:
        raise CertificateError("profile-specific TLV tags are not used in Matter certificates")
    etype = d["type"]
    kind = next((k for prefix, k in _KINDS if etype.startswith(prefix)), None)
    if kind is None:
        raise CertificateError(f"unexpected TLV element {etype!r}")
    value = d.get("value")
    if kind in ("struct", "array", "list"):
        children = d[etype]
        if not children or children[-1]["type"] != "End of Collection":
            raise CertificateError("TLV container is truncated (no end-of-container)")
        value = [_node(c) for c in children[:-1]]
    elif kind == "str" and not isinstance(value, str):
        raise CertificateError("TLV UTF-8 string is not valid UTF-8")
    elif kind in ("uint", "int"):
        value = int(value)
    elif kind == "bytes":
        value = bytes(value)
    return d["tag"], kind, value


def _dn_from_tlv(items, what: str) -> DN:
    out = []
    for tag, kind, val in items:
        if tag is None:
            raise CertificateError(f"{what} DN attribute without a context tag")
        base = tag & 0x7F
        want = "uint" if base in _MATTER_64BIT or base in _MATTER_32BIT else "str"
        if kind != want:
            raise CertificateError(f"{what} DN attribute {tag} is TLV {kind}; expected {want}")
        if base == 16 and tag & 0x80:
            raise CertificateError("domain-component is always an IA5String; tag 0x90 is not valid")
        _check_dn_attr(tag, val)
        out.append((tag, val))
    return tuple(out)


def _dn_to_tlv(w: TLVWriter, tag: int, dn: DN) -> None:
    w.startPath(tag)
    for t, v in dn:
        if isinstance(v, int):
            w.putUnsignedInt(t, v)
        else:
            w.putString(t, v)
    w.endContainer()


def _extensions_from_tlv(items) -> tuple[Extension, ...]:
    out: list[Extension] = []
    for tag, kind, val in items:
        if tag == _EXT_BASIC and kind == "struct":
            parts = {t: (k, v) for t, k, v in val}
            if [t for t, _, _ in val] not in ([1], [1, 2]) or parts[1][0] != "bool" \
                    or (2 in parts and parts[2][0] != "uint"):
                raise CertificateError("basic constraints must be {is-ca: bool, path-len?: uint}")
            out.append((tag, BasicConstraints(parts[1][1], parts[2][1] if 2 in parts else None)))
        elif tag == _EXT_KEY_USAGE and kind == "uint":
            out.append((tag, val))
        elif tag == _EXT_EKU and kind == "array":
            if any(k != "uint" for _, k, _ in val):
                raise CertificateError("extended key usage entries must be unsigned integers")
            out.append((tag, tuple(v for _, _, v in val)))
        elif tag in (_EXT_SKID, _EXT_AKID, _EXT_FUTURE) and kind == "bytes":
            out.append((tag, val))
        else:
            raise CertificateError(f"extension tag {tag} with TLV type {kind} is not a Matter certificate extension")
    return tuple(out)


# --- DER writing -----------------------------------------------------------------------

def _der_len(n: int) -> bytes:
    if n < 0x80:
        return bytes([n])
    b = n.to_bytes((n.bit_length() + 7) // 8, "big")
    return bytes([0x80 | len(b)]) + b


def _tlv(tag: int, content: bytes) -> bytes:
    return bytes([tag]) + _der_len(len(content)) + content


def _seq(*parts: bytes) -> bytes:
    return _tlv(0x30, b"".join(parts))


def _oid(dotted: str) -> bytes:
    arcs = [int(a) for a in dotted.split(".")]
    body = bytearray()
    for arc in [arcs[0] * 40 + arcs[1]] + arcs[2:]:
        chunk = [arc & 0x7F]
        arc >>= 7
        while arc:
            chunk.insert(0, 0x80 | (arc & 0x7F))
            arc >>= 7
        body += bytes(chunk)
    return _tlv(0x06, bytes(body))


def _int(v: int) -> bytes:
    return _tlv(0x02, v.to_bytes(v.bit_length() // 8 + 1, "big"))


def _time_der(t: int) -> bytes:
    if t == 0:
        return _tlv(0x18, b"99991231235959Z")
    dt = MATTER_EPOCH + timedelta(seconds=t)
    if dt.year >= 2050:
        return _tlv(0x18, dt.strftime("%Y%m%d%H%M%SZ").encode())
    return _tlv(0x17, dt.strftime("%y%m%d%H%M%SZ").encode())


def _name_der(dn: DN) -> bytes:
    rdns = []
    for tag, val in dn:
        base = tag & 0x7F
        if base in _MATTER_64BIT:
            text, stag = f"{val:016X}", 0x0C
        elif base in _MATTER_32BIT:
            text, stag = f"{val:08X}", 0x0C
        else:
            text = val
            stag = 0x16 if base == 16 else (0x13 if tag & 0x80 else 0x0C)
        rdns.append(_tlv(0x31, _seq(_oid(_ATTR_OID[base]), _tlv(stag, text.encode()))))
    return _seq(*rdns)


def _bits_der(bits: int) -> bytes:
    """A named-bit BIT STRING: bit 0 is the most significant bit of the first byte."""
    if bits == 0:
        return _tlv(0x03, b"\x00")
    nbytes = (bits.bit_length() + 7) // 8
    body = bytes(int(f"{(bits >> (8 * i)) & 0xFF:08b}"[::-1], 2) for i in range(nbytes))
    unused = (body[-1] & -body[-1]).bit_length() - 1  # trailing zero bits of the last byte
    return _tlv(0x03, bytes([unused]) + body)


def _extension_der(tag: int, val) -> bytes:
    if tag == _EXT_FUTURE:
        return val
    if tag == _EXT_BASIC:
        inner = _seq((_tlv(0x01, b"\xff") if val.is_ca else b"")
                     + (_int(val.path_len) if val.path_len is not None else b""))
    elif tag == _EXT_KEY_USAGE:
        inner = _bits_der(val)
    elif tag == _EXT_EKU:
        inner = _seq(*[_oid(_KEY_PURPOSE_OID[p]) for p in val])
    elif tag == _EXT_SKID:
        inner = _tlv(0x04, val)
    else:  # authority key id: SEQUENCE { [0] IMPLICIT keyIdentifier }
        inner = _seq(_tlv(0x80, val))
    critical = _tlv(0x01, b"\xff") if tag in _CRITICAL_EXTS else b""
    return _seq(_oid(_EXT_OID[tag]), critical, _tlv(0x04, inner))


def _tbs_der(c: MatterCertificate) -> bytes:
    return _seq(
        _tlv(0xA0, _int(2)),
        _tlv(0x02, c.serial_number),
        _seq(_oid(_OID_ECDSA_SHA256)),
        _name_der(c.issuer),
        _seq(_time_der(c.not_before), _time_der(c.not_after)),
        _name_der(c.subject),
        _seq(_seq(_oid(_OID_EC_PUBLIC_KEY), _oid(_OID_PRIME256V1)), _tlv(0x03, b"\x00" + c.public_key)),
        _tlv(0xA3, _seq(*[_extension_der(t, v) for t, v in c.extensions])),
    )


# --- DER reading -----------------------------------------------------------------------

class _Der:
    def __init__(self, data: bytes):
        self.data, self.pos = data, 0

    def done(self) -> bool:
        return self.pos >= len(self.data)

    def peek(self) -> int | None:
        return None if self.done() else self.data[self.pos]

    def read(self, expect: int | None = None, what: str = "element") -> tuple[int, bytes, bytes]:
        """Return (tag, content, whole element bytes)."""
        d, start = self.data, self.pos
        if start + 2 > len(d):
            raise CertificateError(f"DER truncated reading {what}")
        tag, n, p = d[start], d[start + 1], start + 2
        if expect is not None and tag != expect:
            raise CertificateError(f"DER {what}: tag {tag:#04x}, expected {expect:#04x}")
        if n & 0x80:
            k = n & 0x7F
            if k == 0 or k > 4 or p + k > len(d):
                raise CertificateError(f"DER {what}: unsupported length encoding")
            n, p = int.from_bytes(d[p:p + k], "big"), p + k
        if p + n > len(d):
            raise CertificateError(f"DER {what}: length runs past the end")
        self.pos = p + n
        return tag, d[p:p + n], d[start:p + n]

    def end(self, what: str) -> None:
        if not self.done():
            raise CertificateError(f"DER {what}: unexpected trailing data")


def _oid_str(body: bytes) -> str:
    arcs, v = [], 0
    for b in body:
        v = (v << 7) | (b & 0x7F)
        if not b & 0x80:
            arcs.append(v)
            v = 0
    if not arcs:
        raise CertificateError("empty OID")
    first = min(arcs[0] // 40, 2)
    return ".".join(str(a) for a in [first, arcs[0] - 40 * first] + arcs[1:])


def _read_oid(r: _Der, what: str) -> str:
    return _oid_str(r.read(0x06, what)[1])


def _time_from_der(tag: int, body: bytes) -> int:
    text = body.decode("ascii")
    if tag == 0x17 and len(text) == 13 and text.endswith("Z"):
        yy = int(text[:2])
        text = f"{1900 + yy if yy >= 50 else 2000 + yy}{text[2:]}"
    elif not (tag == 0x18 and len(text) == 15 and text.endswith("Z")):
        raise CertificateError(f"unsupported X.509 time {text!r}")
    if text == "99991231235959Z":
        return 0
    dt = datetime.strptime(text, "%Y%m%d%H%M%SZ").replace(tzinfo=timezone.utc)
    secs = int((dt - MATTER_EPOCH).total_seconds())
    if not 0 < secs <= 0xFFFFFFFF:
        raise CertificateError(f"time {text} is outside the 32-bit Matter epoch range")
    return secs


def _name_from_der(body: bytes, what: str) -> DN:
    r, out = _Der(body), []
    while not r.done():
        rdn = _Der(r.read(0x31, f"{what} RDN")[1])
        atv = _Der(rdn.read(0x30, f"{what} attribute")[1])
        rdn.end(f"{what} RDN (one attribute per RDN only)")
        oid = _read_oid(atv, f"{what} attribute type")
        stag, sbody, _ = atv.read(None, f"{what} attribute value")
        atv.end(f"{what} attribute")
        if oid not in _OID_ATTR:
            raise CertificateError(f"{what} attribute {oid} has no Matter TLV tag")
        tag = _OID_ATTR[oid]
        text = sbody.decode("utf-8")
        if tag in _MATTER_64BIT or tag in _MATTER_32BIT:
            width = 8 if tag in _MATTER_32BIT else 16
            if stag != 0x0C or len(text) != width or text.upper() != text:
                raise CertificateError(f"{what} Matter attribute {oid} must be {width} upper-case hex digits in a UTF8String")
            out.append((tag, int(text, 16)))
        elif stag == 0x13 and tag != 16:
            out.append((tag | 0x80, text))
        elif (stag == 0x0C and tag != 16) or (stag == 0x16 and tag == 16):
            out.append((tag, text))
        else:
            raise CertificateError(f"{what} attribute {oid} has string type {stag:#04x} that Matter cannot carry")
    return tuple(out)


def _bits_from_der(body: bytes) -> int:
    if not body or body[0] > 7:
        raise CertificateError("malformed key usage BIT STRING")
    return sum(int(f"{b:08b}"[::-1], 2) << (8 * i) for i, b in enumerate(body[1:]))


def _extension_from_der(whole: bytes, body: bytes) -> Extension:
    r = _Der(body)
    oid = _read_oid(r, "extension id")
    if r.peek() == 0x01:
        r.read(0x01, "extension critical flag")
    value = r.read(0x04, "extension value")[1]
    r.end("extension")
    tag = _OID_EXT.get(oid)
    if tag is None:
        return _EXT_FUTURE, whole
    v = _Der(value)
    if tag == _EXT_BASIC:
        inner = _Der(v.read(0x30, "basic constraints")[1])
        is_ca = inner.peek() == 0x01 and inner.read(0x01, "cA")[1] == b"\xff"
        path = int.from_bytes(inner.read(0x02, "pathLen")[1], "big") if inner.peek() == 0x02 else None
        inner.end("basic constraints")
        result: object = BasicConstraints(is_ca, path)
    elif tag == _EXT_KEY_USAGE:
        result = _bits_from_der(v.read(0x03, "key usage")[1])
    elif tag == _EXT_EKU:
        inner = _Der(v.read(0x30, "extended key usage")[1])
        purposes = []
        while not inner.done():
            p = _read_oid(inner, "key purpose")
            if p not in _OID_KEY_PURPOSE:
                raise CertificateError(f"key purpose {p} has no Matter TLV form")
            purposes.append(_OID_KEY_PURPOSE[p])
        result = tuple(purposes)
    elif tag == _EXT_SKID:
        result = v.read(0x04, "subject key id")[1]
    else:
        inner = _Der(v.read(0x30, "authority key id")[1])
        result = inner.read(0x80, "authority keyIdentifier")[1]
        inner.end("authority key id (only keyIdentifier is allowed)")
    v.end("extension value")
    return tag, result


def _from_der(der: bytes) -> MatterCertificate:
    outer = _Der(der)
    cert = _Der(outer.read(0x30, "Certificate")[1])
    outer.end("Certificate")
    tbs = _Der(cert.read(0x30, "TBSCertificate")[1])
    alg = _Der(cert.read(0x30, "signatureAlgorithm")[1])
    if _read_oid(alg, "signature algorithm") != _OID_ECDSA_SHA256:
        raise CertificateError("only ecdsa-with-SHA256 signatures have a Matter TLV form")
    sig_bits = cert.read(0x03, "signatureValue")[1]
    cert.end("Certificate")
    if not sig_bits or sig_bits[0] != 0:
        raise CertificateError("malformed signature BIT STRING")
    r_, s_ = decode_dss_signature(sig_bits[1:])
    signature = r_.to_bytes(32, "big") + s_.to_bytes(32, "big")

    if tbs.read(0xA0, "version")[1] != _int(2):
        raise CertificateError("only X.509 v3 certificates have a Matter TLV form")
    serial = tbs.read(0x02, "serialNumber")[1]
    alg = _Der(tbs.read(0x30, "TBS signature")[1])
    if _read_oid(alg, "TBS signature algorithm") != _OID_ECDSA_SHA256:
        raise CertificateError("only ecdsa-with-SHA256 signatures have a Matter TLV form")
    issuer = _name_from_der(tbs.read(0x30, "issuer")[1], "issuer")
    validity = _Der(tbs.read(0x30, "validity")[1])
    nb_tag, nb, _ = validity.read(None, "notBefore")
    na_tag, na, _ = validity.read(None, "notAfter")
    validity.end("validity")
    subject = _name_from_der(tbs.read(0x30, "subject")[1], "subject")
    spki = _Der(tbs.read(0x30, "subjectPublicKeyInfo")[1])
    algo = _Der(spki.read(0x30, "public key algorithm")[1])
    if _read_oid(algo, "key algorithm") != _OID_EC_PUBLIC_KEY or _read_oid(algo, "curve") != _OID_PRIME256V1:
        raise CertificateError("only EC P-256 public keys have a Matter TLV form")
    pk_bits = spki.read(0x03, "subjectPublicKey")[1]
    if not pk_bits or pk_bits[0] != 0:
        raise CertificateError("malformed public key BIT STRING")
    exts_outer = _Der(tbs.read(0xA3, "extensions")[1])
    exts = _Der(exts_outer.read(0x30, "extensions")[1])
    tbs.end("TBSCertificate")
    extensions = []
    while not exts.done():
        _, body, whole = exts.read(0x30, "extension")
        extensions.append(_extension_from_der(whole, body))
    return MatterCertificate(
        serial_number=serial, issuer=issuer, not_before=_time_from_der(nb_tag, nb),
        not_after=_time_from_der(na_tag, na), subject=subject, public_key=pk_bits[1:],
        extensions=tuple(extensions), signature=signature)


# --- keys ------------------------------------------------------------------------------

def generate_key(rng: random.Random | None = None) -> ec.EllipticCurvePrivateKey:
    """A new P-256 key: from the OS CSPRNG, or reproducibly from `rng` (twin/test use only)."""
    if rng is None:
        return ec.generate_private_key(ec.SECP256R1())
    n = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    return ec.derive_private_key(rng.getrandbits(256) % (n - 1) + 1, ec.SECP256R1())


def public_key_bytes(key: ec.EllipticCurvePublicKey | ec.EllipticCurvePrivateKey) -> bytes:
    if isinstance(key, ec.EllipticCurvePrivateKey):
        key = key.public_key()
    return key.public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)


def public_key_from_bytes(data: bytes) -> ec.EllipticCurvePublicKey:
    try:
        return ec.EllipticCurvePublicKey.from_encoded_point(ec.SECP256R1(), bytes(data))
    except ValueError:
        raise CertificateError("public key is not a valid P-256 point") from None


def key_id(public_key: bytes) -> bytes:
    """Subject/authority key identifier: SHA-1 of the public key point (RFC 5280 method 1)."""
    return hashlib.sha1(public_key).digest()


def matter_time(dt: datetime) -> int:
    """Matter epoch seconds for an aware datetime (a convenience for callers and tests)."""
    return int((dt - MATTER_EPOCH).total_seconds())


def compressed_fabric_id(root_public_key: bytes, fabric_id: int) -> bytes:
    """Core spec 4.3.2.2: HKDF-SHA256(IKM=root key X||Y, salt=fabric id BE, info="CompressedFabric")."""
    pk = bytes(root_public_key)
    if len(pk) == 65 and pk[0] == 4:
        pk = pk[1:]
    if len(pk) != 64:
        raise CertificateError("root public key must be a 65-byte uncompressed P-256 point")
    return HKDF(hashes.SHA256(), 8, fabric_id.to_bytes(8, "big"), b"CompressedFabric").derive(pk)


# --- chain verification ----------------------------------------------------------------

_MAX_OPERATIONAL_NODE_ID = 0xFFFFFFEFFFFFFFFF


def verify_chain(noc: bytes, icac: bytes | None, rcac: bytes, at: int | None = None) -> tuple[int, int, bytes]:
    """Verify NOC [-> ICAC] -> RCAC and return (node_id, fabric_id, NOC public key bytes).

    `at` is the current time in Matter epoch seconds; when given, every certificate must be
    within its validity period. Raises CertificateError with the reason otherwise.
    """
    root = _decode(rcac, "RCAC")
    inter = _decode(icac, "ICAC") if icac is not None else None
    leaf = _decode(noc, "NOC")

    if root.cert_type != "root":
        raise CertificateError("RCAC subject has no matter-rcac-id")
    if not root.is_ca or not (root.key_usage or 0) & KeyUsage.keyCertSign:
        raise CertificateError("RCAC must be a CA with keyCertSign usage")
    if root.issuer != root.subject:
        raise CertificateError("RCAC must be self-issued (issuer == subject)")
    if root.authority_key_id is not None and root.authority_key_id != root.subject_key_id:
        raise CertificateError("RCAC authority key id differs from its subject key id")
    _checked_signature(root, root, "RCAC")

    signer = root
    if inter is not None:
        if inter.cert_type != "icac":
            raise CertificateError("ICAC subject has no matter-icac-id")
        if not inter.is_ca or not (inter.key_usage or 0) & KeyUsage.keyCertSign:
            raise CertificateError("ICAC must be a CA with keyCertSign usage")
        if root.basic_constraints.path_len == 0:
            raise CertificateError("RCAC path length 0 forbids an intermediate certificate")
        _check_issued_by(inter, root, "ICAC", "RCAC")
        signer = inter

    if leaf.cert_type != "noc":
        raise CertificateError("NOC subject has no matter-node-id")
    if leaf.is_ca:
        raise CertificateError("NOC must not be a CA certificate")
    if not (leaf.key_usage or 0) & KeyUsage.digitalSignature:
        raise CertificateError("NOC key usage must include digitalSignature")
    if not {KeyPurpose.serverAuth, KeyPurpose.clientAuth} <= set(leaf.key_purposes):
        raise CertificateError("NOC extended key usage must include serverAuth and clientAuth")
    _check_issued_by(leaf, signer, "NOC", "ICAC" if inter is not None else "RCAC")

    node_id, fabric_id = leaf.node_id, leaf.fabric_id
    if not 1 <= node_id <= _MAX_OPERATIONAL_NODE_ID:
        raise CertificateError(f"NOC node id {node_id:#x} is not an operational node id")
    if not fabric_id:
        raise CertificateError("NOC must carry a nonzero matter-fabric-id")
    for name, c in (("RCAC", root), ("ICAC", inter)):
        if c is not None and c.fabric_id is not None and c.fabric_id != fabric_id:
            raise CertificateError(f"{name} fabric id {c.fabric_id:#x} differs from NOC fabric id {fabric_id:#x}")
    cats = leaf.case_authenticated_tags
    if len(cats) > 3 or any(c & 0xFFFF == 0 for c in cats):
        raise CertificateError("NOC may carry at most 3 CASE authenticated tags, each with a nonzero version")

    if at is not None:
        for name, c in (("RCAC", root), ("ICAC", inter), ("NOC", leaf)):
            if c is None:
                continue
            if at < c.not_before:
                raise CertificateError(f"{name} is not valid yet (not-before {c.not_before} > now {at})")
            if c.not_after and at > c.not_after:
                raise CertificateError(f"{name} has expired (not-after {c.not_after} < now {at})")
    return node_id, fabric_id, leaf.public_key


def _decode(data: bytes, name: str) -> MatterCertificate:
    try:
        return MatterCertificate.from_tlv(data)
    except CertificateError as e:
        raise CertificateError(f"{name}: {e}") from None


def _checked_signature(cert: MatterCertificate, issuer: MatterCertificate, name: str) -> None:
    try:
        cert.verify_signature(issuer.public_key)
    except CertificateError as e:
        raise CertificateError(f"{name}: {e}") from None


def _check_issued_by(cert: MatterCertificate, issuer: MatterCertificate, name: str, issuer_name: str) -> None:
    if cert.issuer != issuer.subject:
        raise CertificateError(f"{name} issuer DN does not match the {issuer_name} subject DN")
    if cert.authority_key_id != issuer.subject_key_id:
        raise CertificateError(f"{name} authority key id does not match the {issuer_name} subject key id")
    _checked_signature(cert, issuer, name)


# --- minting ---------------------------------------------------------------------------

def _serial(rng: random.Random | None) -> bytes:
    raw = bytearray(rng.randbytes(8) if rng is not None else os.urandom(8))
    raw[0] = (raw[0] & 0x7F) or 0x01  # positive and DER-minimal as an INTEGER
    return bytes(raw)


def _sign(fields: dict, issuer_key: ec.EllipticCurvePrivateKey) -> MatterCertificate:
    unsigned = MatterCertificate(signature=bytes(64), **fields)
    der_sig = issuer_key.sign(unsigned.tbs_der(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der_sig)
    return dataclasses.replace(unsigned, signature=r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def _pub(key) -> bytes:
    if isinstance(key, (bytes, bytearray)):
        public_key_from_bytes(key)  # validates the point
        return bytes(key)
    return public_key_bytes(key)


def mint_root(rcac_id: int, fabric_id: int | None = None, *, key: ec.EllipticCurvePrivateKey | None = None,
              rng: random.Random | None = None, not_before: int = DEFAULT_NOT_BEFORE, not_after: int = 0,
              path_len: int | None = None) -> tuple[MatterCertificate, ec.EllipticCurvePrivateKey]:
    """A self-signed RCAC. Returns (certificate, its private key)."""
    key = key or generate_key(rng)
    pk = public_key_bytes(key)
    dn: DN = ((20, rcac_id),) + (((21, fabric_id),) if fabric_id is not None else ())
    return _sign(dict(
        serial_number=_serial(rng), issuer=dn, not_before=not_before, not_after=not_after, subject=dn,
        public_key=pk, extensions=((1, BasicConstraints(True, path_len)),
                                   (2, KeyUsage.keyCertSign | KeyUsage.cRLSign),
                                   (4, key_id(pk)), (5, key_id(pk)))), key), key


def mint_icac(issuer: MatterCertificate, issuer_key: ec.EllipticCurvePrivateKey, icac_id: int,
              fabric_id: int | None = None, *, key: ec.EllipticCurvePrivateKey | None = None,
              rng: random.Random | None = None, not_before: int = DEFAULT_NOT_BEFORE,
              not_after: int = 0) -> tuple[MatterCertificate, ec.EllipticCurvePrivateKey]:
    """An ICAC signed by `issuer` (an RCAC). Returns (certificate, its private key)."""
    key = key or generate_key(rng)
    pk = public_key_bytes(key)
    if fabric_id is None:
        fabric_id = issuer.fabric_id
    dn: DN = ((19, icac_id),) + (((21, fabric_id),) if fabric_id is not None else ())
    return _sign(dict(
        serial_number=_serial(rng), issuer=issuer.subject, not_before=not_before, not_after=not_after,
        subject=dn, public_key=pk, extensions=((1, BasicConstraints(True, 0)),
                                               (2, KeyUsage.keyCertSign | KeyUsage.cRLSign),
                                               (4, key_id(pk)), (5, issuer.subject_key_id))), issuer_key), key


def mint_noc(issuer: MatterCertificate, issuer_key: ec.EllipticCurvePrivateKey, node_id: int, fabric_id: int,
             public_key: bytes | ec.EllipticCurvePublicKey | None = None, *, cats: Iterable[int] = (),
             rng: random.Random | None = None, not_before: int = DEFAULT_NOT_BEFORE,
             not_after: int = 0) -> tuple[MatterCertificate, ec.EllipticCurvePrivateKey | None]:
    """A NOC signed by `issuer` (RCAC or ICAC) for `public_key` (e.g. from a CSR).

    Without a public key a new key pair is made and its private key returned; otherwise
    the second element is None.
    """
    key = None
    if public_key is None:
        key = generate_key(rng)
        public_key = key.public_key()
    pk = _pub(public_key)
    dn: DN = ((17, node_id), (21, fabric_id)) + tuple((22, c) for c in cats)
    return _sign(dict(
        serial_number=_serial(rng), issuer=issuer.subject, not_before=not_before, not_after=not_after,
        subject=dn, public_key=pk, extensions=((1, BasicConstraints(False)), (2, KeyUsage.digitalSignature),
                                               (3, (KeyPurpose.clientAuth, KeyPurpose.serverAuth)),
                                               (4, key_id(pk)), (5, issuer.subject_key_id))), issuer_key), key
