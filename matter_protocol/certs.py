"""Matter operational certificates (Core spec 6.4-6.5).

A Matter certificate travels in a compact TLV form; its signature is over the X.509 DER
TBSCertificate that the TLV form stands for. So the conversion TLV -> DER must reproduce
the signed bytes exactly: every choice the spec fixes (one attribute per RDN, UTF8String for
Matter ids as upper-case hex, critical flags, UTCTime before 2050 ...) is made here once, in
`_tbs_der`, and `from_der` refuses any X.509 input that does not re-encode byte-identically.

Times are Matter epoch seconds (since 2000-01-01T00:00:00Z); 0 as not-after means "no
well-defined expiration" (99991231235959Z). Nothing here reads the clock: callers pass `at`.
One job, the certificate format both ways, hence one module over ~700 lines.
"""

from __future__ import annotations

import dataclasses
import hashlib
import random
import secrets
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from chip.tlv import uint
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.hazmat.primitives.kdf.hkdf import HKDF

from matter_protocol.crypto import Crypto_GenerateKeypair, CryptoError, load_public_key, public_key_bytes
from matter_protocol.der import DerError, DerReader, der_element, der_int, der_oid, der_seq, read_oid
from matter_protocol.tlv import ARRAY, END_OF_CONTAINER, LIST, STRUCT, CodecError, Fields, Tag, TLVReader, TLVWriter

__all__ = [
    "CertificateError", "MatterCertificate", "BasicConstraints", "verify_chain",
    "compressed_fabric_id", "mint_root", "mint_icac", "mint_noc", "key_id", "matter_time",
    "MATTER_EPOCH", "KeyUsage", "KeyPurpose", "DN_TAG", "tlv_tree",
]

MATTER_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)
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

DNValue = int | str
DN = tuple[tuple[int, DNValue], ...]


@dataclass(frozen=True)
class BasicConstraints:
    is_ca: bool
    path_len: int | None = None


#: Extension values by tag: basic constraints, key usage bits, key purposes, key ids or raw DER (future).
ExtensionValue = BasicConstraints | int | tuple[int, ...] | bytes
Extension = tuple[int, ExtensionValue]
#: A decoded TLV element in wire order: (context tag, kind, value); containers hold lists of nodes.
TLVNode = tuple[int | None, str, Any]
_T = TypeVar("_T")


def _dn_uint(tag: int, val: DNValue) -> int:
    """A Matter id DN attribute value; `_check` guarantees it for checked certificates."""
    if not isinstance(val, int):
        raise CertificateError(f"DN attribute {tag} needs an unsigned integer, got {val!r}")
    return val


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

    @classmethod
    def _dn_id(cls, dn: DN, tag: int) -> int | None:
        v = cls._dn_get(dn, tag)
        return None if v is None else _dn_uint(tag, v)

    def _ext(self, tag: int, kind: type[_T]) -> _T | None:
        for t, v in self.extensions:
            if t == tag:
                if not isinstance(v, kind):  # `_check` guarantees the type for checked certificates
                    raise CertificateError(f"extension {tag} is {v!r}; expected {kind.__name__}")
                return v
        return None

    @property
    def node_id(self) -> int | None:
        return self._dn_id(self.subject, 17)

    @property
    def fabric_id(self) -> int | None:
        return self._dn_id(self.subject, 21)

    @property
    def rcac_id(self) -> int | None:
        return self._dn_id(self.subject, 20)

    @property
    def icac_id(self) -> int | None:
        return self._dn_id(self.subject, 19)

    @property
    def issuer_fabric_id(self) -> int | None:
        return self._dn_id(self.issuer, 21)

    @property
    def case_authenticated_tags(self) -> tuple[int, ...]:
        return tuple(_dn_uint(t, v) for t, v in self.subject if t == 22)

    @property
    def basic_constraints(self) -> BasicConstraints | None:
        return self._ext(_EXT_BASIC, BasicConstraints)

    @property
    def is_ca(self) -> bool:
        bc = self.basic_constraints
        return bool(bc and bc.is_ca)

    @property
    def key_usage(self) -> int | None:
        return self._ext(_EXT_KEY_USAGE, int)

    @property
    def key_purposes(self) -> tuple[int, ...]:
        return self._ext(_EXT_EKU, tuple) or ()

    @property
    def subject_key_id(self) -> bytes | None:
        return self._ext(_EXT_SKID, bytes)

    @property
    def authority_key_id(self) -> bytes | None:
        return self._ext(_EXT_AKID, bytes)

    @property
    def cert_type(self) -> str:
        """'root', 'icac', 'noc', 'firmware' or 'other', from the subject DN."""
        tags = [t for t, _ in self.subject]
        kinds = [k for k, t in (("root", 20), ("icac", 19), ("noc", 17), ("firmware", 18))
                 for _ in range(tags.count(t))]
        if len(kinds) > 1 or tags.count(21) > 1:
            raise CertificateError(f"subject DN must name one certificate type and at most one fabric id, has {kinds}")
        return kinds[0] if kinds else "other"

    def public_key_object(self) -> ec.EllipticCurvePublicKey:
        return _public_key(self.public_key)

    # -- TLV --
    @classmethod
    def from_tlv(cls, data: bytes) -> MatterCertificate:
        """Decode the Matter TLV form; raises CertificateError naming what is wrong."""
        root = tlv_tree(bytes(data))
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
        w.start(None, STRUCT)
        w.octets(_T_SERIAL, self.serial_number)
        w.uint(_T_SIG_ALGO, self.signature_algorithm)
        _dn_to_tlv(w, _T_ISSUER, self.issuer)
        w.uint(_T_NOT_BEFORE, self.not_before)
        w.uint(_T_NOT_AFTER, self.not_after)
        _dn_to_tlv(w, _T_SUBJECT, self.subject)
        w.uint(_T_PK_ALGO, self.public_key_algorithm)
        w.uint(_T_CURVE, self.curve_id)
        w.octets(_T_PUBKEY, self.public_key)
        w.start(_T_EXTENSIONS, LIST)
        for tag, val in self.extensions:
            if isinstance(val, BasicConstraints):
                w.start(_EXT_BASIC, STRUCT)
                w.boolean(1, val.is_ca)
                if val.path_len is not None:
                    w.uint(2, val.path_len)
                w.end()
            elif isinstance(val, int):
                w.uint(tag, val)
            elif isinstance(val, tuple):
                w.start(tag, ARRAY)
                for p in val:
                    w.uint(None, p)
                w.end()
            else:
                w.octets(tag, val)
        w.end()
        w.octets(_T_SIGNATURE, self.signature)
        w.end()
        return bytes(w.buf)

    # -- X.509 --
    def tbs_der(self) -> bytes:
        """DER TBSCertificate: the exact bytes the signature covers."""
        self._check()
        return _tbs_der(self)

    def to_der(self) -> bytes:
        r, s = int.from_bytes(self.signature[:32], "big"), int.from_bytes(self.signature[32:], "big")
        return der_seq(self.tbs_der(), der_seq(der_oid(_OID_ECDSA_SHA256)),
                    der_element(0x03, b"\x00" + encode_dss_signature(r, s)))

    def to_x509(self) -> x509.Certificate:
        return x509.load_der_x509_certificate(self.to_der())

    @classmethod
    def from_der(cls, der: bytes) -> MatterCertificate:
        """Convert X.509 DER; refuses certificates without an exact Matter TLV equivalent."""
        der = bytes(der)
        try:
            cert = _from_der(der)
        except CertificateError:
            raise
        except DerError as e:
            raise CertificateError(str(e)) from None
        except (ValueError, IndexError, KeyError, struct.error) as e:
            raise CertificateError(f"malformed X.509 certificate: {e}") from None
        if cert.to_der() != der:
            raise CertificateError(
                "X.509 certificate uses an encoding the Matter TLV form cannot reproduce "
                "(re-encoding differs, so its signature would not survive conversion)")
        return cert

    @classmethod
    def from_x509(cls, cert: x509.Certificate) -> MatterCertificate:
        return cls.from_der(cert.public_bytes(serialization.Encoding.DER))

    def verify_signature(self, issuer_public_key: bytes | ec.EllipticCurvePublicKey) -> None:
        """Raise CertificateError unless `issuer_public_key` signed this certificate."""
        key = issuer_public_key if isinstance(issuer_public_key, ec.EllipticCurvePublicKey) \
            else _public_key(issuer_public_key)
        r, s = int.from_bytes(self.signature[:32], "big"), int.from_bytes(self.signature[32:], "big")
        try:
            key.verify(encode_dss_signature(r, s), self.tbs_der(), ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise CertificateError("signature does not verify with the issuer's public key") from None

    # -- structural checks shared by every path in and out --
    def _check(self) -> None:
        if self.signature_algorithm != 1:
            raise CertificateError(
                f"signature algorithm {self.signature_algorithm} unsupported; only 1 (ecdsa-with-SHA256)")
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
        for ext_tag, ext_val in self.extensions:
            if ext_tag in seen and ext_tag != _EXT_FUTURE:
                raise CertificateError(f"extension {ext_tag} appears twice")
            seen.add(ext_tag)
            _check_extension(ext_tag, ext_val)


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
        if not isinstance(val, BasicConstraints) or (
                val.path_len is not None and not (val.is_ca and 0 <= val.path_len <= 255)):
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


# --- TLV reading: a (tag, kind, value) tree in wire order, so the checks can be exact ---------

def _kind(value: object) -> str:
    if isinstance(value, Fields):
        return value.kind
    for typ, kind in ((bool, "bool"), (uint, "uint"), (int, "int"), (str, "str"), (bytes, "bytes"),
                      (list, "array"), (type(None), "null"), (float, "float")):
        if isinstance(value, typ):
            return kind
    raise CertificateError(f"unexpected TLV value {value!r}")


def tlv_tree(data: bytes) -> TLVNode:
    """One TLV element as (tag, kind, value); containers hold lists of such nodes."""
    reader = TLVReader(bytes(data), ordered=True)
    elements = []
    try:
        while reader.pos < len(reader.data):
            elements.append(reader.element())
    except CodecError as e:
        raise CertificateError(f"malformed TLV (truncated or invalid element): {e}") from None
    if len(elements) != 1 or elements[0][1] is END_OF_CONTAINER:
        raise CertificateError("certificate TLV must be exactly one element with nothing after it")
    return _node(*elements[0])


def _node(tag: Tag, value: Any) -> TLVNode:
    if isinstance(tag, tuple):
        raise CertificateError("profile-specific TLV tags are not used in Matter certificates")
    kind = _kind(value)
    if kind in ("struct", "list"):
        return tag, kind, [_node(t, v) for t, v in value]
    if kind == "array":
        return tag, kind, [_node(None, v) for v in value]
    if kind in ("uint", "int"):
        return tag, kind, int(value)
    return tag, kind, value


def _dn_from_tlv(items: list[TLVNode], what: str) -> DN:
    out: list[tuple[int, DNValue]] = []
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
    w.start(tag, LIST)
    for t, v in dn:
        if isinstance(v, int):
            w.uint(t, v)
        else:
            w.utf8(t, v)
    w.end()


def _extensions_from_tlv(items: list[TLVNode]) -> tuple[Extension, ...]:
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


# --- DER writing (the X.509 form of a Matter certificate) ---------------------------------------------

def _time_der(t: int) -> bytes:
    if t == 0:
        return der_element(0x18, b"99991231235959Z")
    dt = MATTER_EPOCH + timedelta(seconds=t)
    if dt.year >= 2050:
        return der_element(0x18, dt.strftime("%Y%m%d%H%M%SZ").encode())
    return der_element(0x17, dt.strftime("%y%m%d%H%M%SZ").encode())


def _name_der(dn: DN) -> bytes:
    rdns = []
    for tag, val in dn:
        base = tag & 0x7F
        if base in _MATTER_64BIT:
            text, stag = f"{val:016X}", 0x0C
        elif base in _MATTER_32BIT:
            text, stag = f"{val:08X}", 0x0C
        else:
            # tbs_der() ran _check: attributes other than Matter ids hold strings.
            assert isinstance(val, str), f"DN attribute {tag} holds {val!r}"
            text = val
            stag = 0x16 if base == 16 else (0x13 if tag & 0x80 else 0x0C)
        rdns.append(der_element(0x31, der_seq(der_oid(_ATTR_OID[base]), der_element(stag, text.encode()))))
    return der_seq(*rdns)


def _bits_der(bits: int) -> bytes:
    """A named-bit BIT STRING: bit 0 is the most significant bit of the first byte."""
    if bits == 0:
        return der_element(0x03, b"\x00")
    nbytes = (bits.bit_length() + 7) // 8
    body = bytes(int(f"{(bits >> (8 * i)) & 0xFF:08b}"[::-1], 2) for i in range(nbytes))
    unused = (body[-1] & -body[-1]).bit_length() - 1  # trailing zero bits of the last byte
    return der_element(0x03, bytes([unused]) + body)


def _extension_der(tag: int, val: ExtensionValue) -> bytes:
    # tbs_der() ran _check, which pairs each extension tag with its value type.
    if tag == _EXT_FUTURE:
        assert isinstance(val, bytes)
        return val
    if tag == _EXT_BASIC:
        assert isinstance(val, BasicConstraints)
        inner = der_seq((der_element(0x01, b"\xff") if val.is_ca else b"")
                     + (der_int(val.path_len) if val.path_len is not None else b""))
    elif tag == _EXT_KEY_USAGE:
        assert isinstance(val, int)
        inner = _bits_der(val)
    elif tag == _EXT_EKU:
        assert isinstance(val, tuple)
        inner = der_seq(*[der_oid(_KEY_PURPOSE_OID[p]) for p in val])
    elif tag == _EXT_SKID:
        assert isinstance(val, bytes)
        inner = der_element(0x04, val)
    else:  # authority key id: SEQUENCE { [0] IMPLICIT keyIdentifier }
        assert isinstance(val, bytes)
        inner = der_seq(der_element(0x80, val))
    critical = der_element(0x01, b"\xff") if tag in _CRITICAL_EXTS else b""
    return der_seq(der_oid(_EXT_OID[tag]), critical, der_element(0x04, inner))


def _tbs_der(c: MatterCertificate) -> bytes:
    return der_seq(
        der_element(0xA0, der_int(2)),
        der_element(0x02, c.serial_number),
        der_seq(der_oid(_OID_ECDSA_SHA256)),
        _name_der(c.issuer),
        der_seq(_time_der(c.not_before), _time_der(c.not_after)),
        _name_der(c.subject),
        der_seq(der_seq(der_oid(_OID_EC_PUBLIC_KEY), der_oid(_OID_PRIME256V1)),
                der_element(0x03, b"\x00" + c.public_key)),
        der_element(0xA3, der_seq(*[_extension_der(t, v) for t, v in c.extensions])),
    )


# --- DER reading (the X.509 form of a Matter certificate) ---------------------------------------------

def _time_from_der(tag: int, body: bytes) -> int:
    text = body.decode("ascii")
    if tag == 0x17 and len(text) == 13 and text.endswith("Z"):
        yy = int(text[:2])
        text = f"{1900 + yy if yy >= 50 else 2000 + yy}{text[2:]}"
    elif not (tag == 0x18 and len(text) == 15 and text.endswith("Z")):
        raise CertificateError(f"unsupported X.509 time {text!r}")
    if text == "99991231235959Z":
        return 0
    dt = datetime.strptime(text, "%Y%m%d%H%M%SZ").replace(tzinfo=UTC)
    secs = int((dt - MATTER_EPOCH).total_seconds())
    if not 0 < secs <= 0xFFFFFFFF:
        raise CertificateError(f"time {text} is outside the 32-bit Matter epoch range")
    return secs


def _name_from_der(body: bytes, what: str) -> DN:
    r = DerReader(body)
    out: list[tuple[int, DNValue]] = []
    while not r.done():
        rdn = DerReader(r.read(0x31, f"{what} RDN")[1])
        atv = DerReader(rdn.read(0x30, f"{what} attribute")[1])
        rdn.end(f"{what} RDN (one attribute per RDN only)")
        oid = read_oid(atv, f"{what} attribute type")
        stag, sbody, _ = atv.read(None, f"{what} attribute value")
        atv.end(f"{what} attribute")
        if oid not in _OID_ATTR:
            raise CertificateError(f"{what} attribute {oid} has no Matter TLV tag")
        tag = _OID_ATTR[oid]
        text = sbody.decode("utf-8")
        if tag in _MATTER_64BIT or tag in _MATTER_32BIT:
            width = 8 if tag in _MATTER_32BIT else 16
            if stag != 0x0C or len(text) != width or text.upper() != text:
                raise CertificateError(
                    f"{what} Matter attribute {oid} must be {width} upper-case hex digits in a UTF8String")
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
    r = DerReader(body)
    oid = read_oid(r, "extension id")
    if r.peek() == 0x01:
        r.read(0x01, "extension critical flag")
    value = r.read(0x04, "extension value")[1]
    r.end("extension")
    tag = _OID_EXT.get(oid)
    if tag is None:
        return _EXT_FUTURE, whole
    v = DerReader(value)
    if tag == _EXT_BASIC:
        inner = DerReader(v.read(0x30, "basic constraints")[1])
        is_ca = inner.peek() == 0x01 and inner.read(0x01, "cA")[1] == b"\xff"
        path = int.from_bytes(inner.read(0x02, "pathLen")[1], "big") if inner.peek() == 0x02 else None
        inner.end("basic constraints")
        result: ExtensionValue = BasicConstraints(is_ca, path)
    elif tag == _EXT_KEY_USAGE:
        result = _bits_from_der(v.read(0x03, "key usage")[1])
    elif tag == _EXT_EKU:
        inner = DerReader(v.read(0x30, "extended key usage")[1])
        purposes: list[int] = []
        while not inner.done():
            p = read_oid(inner, "key purpose")
            if p not in _OID_KEY_PURPOSE:
                raise CertificateError(f"key purpose {p} has no Matter TLV form")
            purposes.append(_OID_KEY_PURPOSE[p])
        result = tuple(purposes)
    elif tag == _EXT_SKID:
        result = v.read(0x04, "subject key id")[1]
    else:
        inner = DerReader(v.read(0x30, "authority key id")[1])
        result = inner.read(0x80, "authority keyIdentifier")[1]
        inner.end("authority key id (only keyIdentifier is allowed)")
    v.end("extension value")
    return tag, result


def _from_der(der: bytes) -> MatterCertificate:
    outer = DerReader(der)
    cert = DerReader(outer.read(0x30, "Certificate")[1])
    outer.end("Certificate")
    tbs = DerReader(cert.read(0x30, "TBSCertificate")[1])
    alg = DerReader(cert.read(0x30, "signatureAlgorithm")[1])
    if read_oid(alg, "signature algorithm") != _OID_ECDSA_SHA256:
        raise CertificateError("only ecdsa-with-SHA256 signatures have a Matter TLV form")
    sig_bits = cert.read(0x03, "signatureValue")[1]
    cert.end("Certificate")
    if not sig_bits or sig_bits[0] != 0:
        raise CertificateError("malformed signature BIT STRING")
    r_, s_ = decode_dss_signature(sig_bits[1:])
    signature = r_.to_bytes(32, "big") + s_.to_bytes(32, "big")

    if tbs.read(0xA0, "version")[1] != der_int(2):
        raise CertificateError("only X.509 v3 certificates have a Matter TLV form")
    serial = tbs.read(0x02, "serialNumber")[1]
    alg = DerReader(tbs.read(0x30, "TBS signature")[1])
    if read_oid(alg, "TBS signature algorithm") != _OID_ECDSA_SHA256:
        raise CertificateError("only ecdsa-with-SHA256 signatures have a Matter TLV form")
    issuer = _name_from_der(tbs.read(0x30, "issuer")[1], "issuer")
    validity = DerReader(tbs.read(0x30, "validity")[1])
    nb_tag, nb, _ = validity.read(None, "notBefore")
    na_tag, na, _ = validity.read(None, "notAfter")
    validity.end("validity")
    subject = _name_from_der(tbs.read(0x30, "subject")[1], "subject")
    spki = DerReader(tbs.read(0x30, "subjectPublicKeyInfo")[1])
    algo = DerReader(spki.read(0x30, "public key algorithm")[1])
    if read_oid(algo, "key algorithm") != _OID_EC_PUBLIC_KEY or read_oid(algo, "curve") != _OID_PRIME256V1:
        raise CertificateError("only EC P-256 public keys have a Matter TLV form")
    pk_bits = spki.read(0x03, "subjectPublicKey")[1]
    if not pk_bits or pk_bits[0] != 0:
        raise CertificateError("malformed public key BIT STRING")
    exts_outer = DerReader(tbs.read(0xA3, "extensions")[1])
    exts = DerReader(exts_outer.read(0x30, "extensions")[1])
    tbs.end("TBSCertificate")
    extensions = []
    while not exts.done():
        _, body, whole = exts.read(0x30, "extension")
        extensions.append(_extension_from_der(whole, body))
    return MatterCertificate(
        serial_number=serial, issuer=issuer, not_before=_time_from_der(nb_tag, nb),
        not_after=_time_from_der(na_tag, na), subject=subject, public_key=pk_bits[1:],
        extensions=tuple(extensions), signature=signature)


def _public_key(data: bytes) -> ec.EllipticCurvePublicKey:
    try:
        return load_public_key(bytes(data))
    except CryptoError:
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
        root_constraints = root.basic_constraints  # present: root.is_ca was checked above
        if root_constraints is not None and root_constraints.path_len == 0:
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
    if node_id is None:
        raise CertificateError("NOC subject has no matter-node-id")
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
    raw = bytearray(rng.randbytes(8) if rng is not None else secrets.token_bytes(8))
    raw[0] = (raw[0] & 0x7F) or 0x01  # positive and DER-minimal as an INTEGER
    return bytes(raw)


_UNSIGNED = bytes(64)  # placeholder signature of a certificate about to be signed


def _sign(unsigned: MatterCertificate, issuer_key: ec.EllipticCurvePrivateKey) -> MatterCertificate:
    der_sig = issuer_key.sign(unsigned.tbs_der(), ec.ECDSA(hashes.SHA256()))
    r, s = decode_dss_signature(der_sig)
    return dataclasses.replace(unsigned, signature=r.to_bytes(32, "big") + s.to_bytes(32, "big"))


def _pub(key: bytes | bytearray | ec.EllipticCurvePublicKey) -> bytes:
    if isinstance(key, (bytes, bytearray)):
        _public_key(bytes(key))  # validates the point
        return bytes(key)
    return public_key_bytes(key)


def _authority_key_id(issuer: MatterCertificate) -> bytes:
    skid = issuer.subject_key_id
    if skid is None:  # the same complaint `_check` makes about the issued certificate
        raise CertificateError(f"key identifier extension {_EXT_AKID} must be 20 bytes")
    return skid


def mint_root(rcac_id: int, fabric_id: int | None = None, *, key: ec.EllipticCurvePrivateKey | None = None,
              rng: random.Random | None = None, not_before: int = DEFAULT_NOT_BEFORE, not_after: int = 0,
              path_len: int | None = None) -> tuple[MatterCertificate, ec.EllipticCurvePrivateKey]:
    """A self-signed RCAC. Returns (certificate, its private key)."""
    key = key or Crypto_GenerateKeypair(rng)
    pk = public_key_bytes(key)
    dn: DN = ((20, rcac_id),) + (((21, fabric_id),) if fabric_id is not None else ())
    return _sign(MatterCertificate(
        serial_number=_serial(rng), issuer=dn, not_before=not_before, not_after=not_after, subject=dn,
        public_key=pk, extensions=((1, BasicConstraints(True, path_len)),
                                   (2, KeyUsage.keyCertSign | KeyUsage.cRLSign),
                                   (4, key_id(pk)), (5, key_id(pk))), signature=_UNSIGNED), key), key


def mint_icac(issuer: MatterCertificate, issuer_key: ec.EllipticCurvePrivateKey, icac_id: int,
              fabric_id: int | None = None, *, key: ec.EllipticCurvePrivateKey | None = None,
              rng: random.Random | None = None, not_before: int = DEFAULT_NOT_BEFORE,
              not_after: int = 0) -> tuple[MatterCertificate, ec.EllipticCurvePrivateKey]:
    """An ICAC signed by `issuer` (an RCAC). Returns (certificate, its private key)."""
    key = key or Crypto_GenerateKeypair(rng)
    pk = public_key_bytes(key)
    if fabric_id is None:
        fabric_id = issuer.fabric_id
    dn: DN = ((19, icac_id),) + (((21, fabric_id),) if fabric_id is not None else ())
    return _sign(MatterCertificate(
        serial_number=_serial(rng), issuer=issuer.subject, not_before=not_before, not_after=not_after,
        subject=dn, public_key=pk, extensions=((1, BasicConstraints(True, 0)),
                                               (2, KeyUsage.keyCertSign | KeyUsage.cRLSign),
                                               (4, key_id(pk)), (5, _authority_key_id(issuer))),
        signature=_UNSIGNED), issuer_key), key


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
        key = Crypto_GenerateKeypair(rng)
        public_key = key.public_key()
    pk = _pub(public_key)
    dn: DN = ((17, node_id), (21, fabric_id)) + tuple((22, c) for c in cats)
    return _sign(MatterCertificate(
        serial_number=_serial(rng), issuer=issuer.subject, not_before=not_before, not_after=not_after,
        subject=dn, public_key=pk, extensions=((1, BasicConstraints(False)), (2, KeyUsage.digitalSignature),
                                               (3, (KeyPurpose.clientAuth, KeyPurpose.serverAuth)),
                                               (4, key_id(pk)), (5, _authority_key_id(issuer))),
        signature=_UNSIGNED), issuer_key), key
