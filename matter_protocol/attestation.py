"""Device attestation (Core spec 6.2-6.3, 11.18.4): DAC chain, Certification Declaration,
AttestationElements / NOCSRElements and their signatures, and the CSR for CSRRequest.

Everything here works on bytes and key objects. Which PAA, PAI and CD signing key a node uses,
and where they are kept, is the node glue's business (`twin.node.credentials`).
"""

from __future__ import annotations

import random
import secrets
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.x509.oid import NameOID

from matter_protocol.certs import CertificateError, tlv_tree
from matter_protocol.crypto import Crypto_GenerateKeypair
from matter_protocol.der import DerError, DerReader, der_element, der_int, der_oid, der_seq, read_oid
from matter_protocol.tlv import ARRAY, STRUCT, TLVWriter

__all__ = [
    "AttestationError", "CertificationDeclaration", "certification_declaration",
    "decode_certification_declaration", "attestation_elements", "sign_attestation_elements",
    "verify_attestation_signature", "nocsr_elements", "generate_csr", "product_id_for_device_type",
    "mint_pai", "mint_dac", "issued_by", "vendor_product_ids", "TEST_VENDOR_ID", "OID_VENDOR_ID", "OID_PRODUCT_ID",
]

TEST_VENDOR_ID = 0xFFF1
OID_VENDOR_ID = x509.ObjectIdentifier("1.3.6.1.4.1.37244.2.1")
OID_PRODUCT_ID = x509.ObjectIdentifier("1.3.6.1.4.1.37244.2.2")

# DAC/PAI validity: the CHIP verifier checks the chain at the DAC's not-before, which must
# therefore lie inside the PAA's validity (from 2021-06-28). No expiry, like the test PAA.
_NOT_BEFORE = datetime(2024, 1, 1, tzinfo=UTC)
_NOT_AFTER = datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)

_OID_SIGNED_DATA = "1.2.840.113549.1.7.2"
_OID_DATA = "1.2.840.113549.1.7.1"
_OID_SHA256 = "2.16.840.1.101.3.4.2.1"
_OID_ECDSA_SHA256 = "1.2.840.10045.4.3.2"


class AttestationError(ValueError):
    """Attestation material is malformed, inconsistent or does not verify."""


def product_id_for_device_type(device_type_id: int) -> int:
    """Our product id for a device type: 0x8000 | device type id (unique, in the test range)."""
    if not 0 <= device_type_id <= 0x7FFF:
        raise AttestationError(f"device type id {device_type_id:#x} does not fit a product id (0..0x7fff)")
    return 0x8000 | device_type_id


# --- PAI and DAC (X.509) ---------------------------------------------------------------

def issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """True when `issuer`'s key signed `cert` (and the names chain)."""
    try:
        cert.verify_directly_issued_by(issuer)
        return True
    except (ValueError, TypeError, InvalidSignature):
        return False


def vendor_product_ids(cert: x509.Certificate) -> tuple[int | None, int | None]:
    """The Matter vendor and product ids in a PAI/DAC subject (None where absent)."""
    def get(oid: x509.ObjectIdentifier) -> int | None:
        attrs = cert.subject.get_attributes_for_oid(oid)
        return int(str(attrs[0].value), 16) if attrs else None
    return get(OID_VENDOR_ID), get(OID_PRODUCT_ID)


def _serial(rng: random.Random | None) -> int:
    n = rng.getrandbits(63) if rng is not None else int.from_bytes(secrets.token_bytes(8), "big") >> 1
    return n or 1


def _mint_x509(subject: x509.Name, key: ec.EllipticCurvePrivateKey, issuer: x509.Certificate,
               issuer_key: ec.EllipticCurvePrivateKey, is_ca: bool, rng: random.Random | None) -> x509.Certificate:
    issuer_skid = issuer.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    return (x509.CertificateBuilder()
            .subject_name(subject).issuer_name(issuer.subject).public_key(key.public_key())
            .serial_number(_serial(rng)).not_valid_before(_NOT_BEFORE).not_valid_after(_NOT_AFTER)
            .add_extension(x509.BasicConstraints(ca=is_ca, path_length=0 if is_ca else None), critical=True)
            .add_extension(x509.KeyUsage(digital_signature=not is_ca, content_commitment=False,
                                         key_encipherment=False, data_encipherment=False, key_agreement=False,
                                         key_cert_sign=is_ca, crl_sign=is_ca, encipher_only=False,
                                         decipher_only=False), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier(issuer_skid, None, None), critical=False)
            .sign(issuer_key, hashes.SHA256()))


def mint_pai(vendor_id: int, paa: x509.Certificate, paa_key: ec.EllipticCurvePrivateKey,
             rng: random.Random | None = None) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new PAI for `vendor_id` (no product id) under the PAA. Returns (certificate, key)."""
    key = Crypto_GenerateKeypair(rng)
    return _mint_x509(x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, f"Matter Twin Dev PAI 0x{vendor_id:04X} no PID"),
        x509.NameAttribute(OID_VENDOR_ID, f"{vendor_id:04X}")]), key, paa, paa_key, True, rng), key


def mint_dac(vendor_id: int, product_id: int, pai: x509.Certificate, pai_key: ec.EllipticCurvePrivateKey,
             rng: random.Random | None = None) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A new DAC for vendor/product under the PAI. Returns (certificate, key)."""
    key = Crypto_GenerateKeypair(rng)
    return _mint_x509(x509.Name([
        x509.NameAttribute(NameOID.COMMON_NAME, f"Matter Twin Dev DAC 0x{vendor_id:04X}/0x{product_id:04X}"),
        x509.NameAttribute(OID_VENDOR_ID, f"{vendor_id:04X}"),
        x509.NameAttribute(OID_PRODUCT_ID, f"{product_id:04X}")]), key, pai, pai_key, False, rng), key


# --- Certification Declaration ----------------------------------------------------------

@dataclass(frozen=True)
class CertificationDeclaration:
    format_version: int
    vendor_id: int
    product_ids: tuple[int, ...]
    device_type_id: int
    certificate_id: str
    security_level: int
    security_information: int
    version_number: int
    certification_type: int
    dac_origin_vendor_id: int | None = None
    dac_origin_product_id: int | None = None
    signer_key_id: bytes = b""
    content: bytes = b""  # the signed TLV
    signature: bytes = b""  # DER ECDSA signature over `content`


def _cd_content(vendor_id: int, product_ids: list[int], device_type_id: int, certificate_id: str,
                security_level: int, security_information: int, version_number: int, certification_type: int,
                dac_origin_vendor_id: int | None, dac_origin_product_id: int | None) -> bytes:
    checks = [
        (0 <= vendor_id <= 0xFFFF, "vendor id must be 16-bit"),
        (1 <= len(product_ids) <= 100 and all(0 <= p <= 0xFFFF for p in product_ids),
         "product ids must be 1..100 16-bit values"),
        (0 <= device_type_id <= 0xFFFFFFFF, "device type id must be 32-bit"),
        (len(certificate_id) == 19, "certificate id must be exactly 19 characters"),
        (0 <= security_level <= 0xFF and 0 <= certification_type <= 0xFF,
         "security level and certification type are 8-bit"),
        (0 <= security_information <= 0xFFFF and 0 <= version_number <= 0xFFFF,
         "security information and version are 16-bit"),
        ((dac_origin_vendor_id is None) == (dac_origin_product_id is None),
         "DAC origin vendor and product go together"),
    ]
    for ok, msg in checks:
        if not ok:
            raise AttestationError(f"certification declaration: {msg}")
    w = TLVWriter()
    w.start(None, STRUCT)
    w.uint(0, 1)  # format_version
    w.uint(1, vendor_id)
    w.start(2, ARRAY)
    for p in product_ids:
        w.uint(None, p)
    w.end()
    w.uint(3, device_type_id)
    w.utf8(4, certificate_id)
    w.uint(5, security_level)
    w.uint(6, security_information)
    w.uint(7, version_number)
    w.uint(8, certification_type)
    if dac_origin_vendor_id is not None and dac_origin_product_id is not None:
        w.uint(9, dac_origin_vendor_id)
        w.uint(10, dac_origin_product_id)
    w.end()
    return bytes(w.buf)


def certification_declaration(vendor_id: int, product_ids: Iterable[int], device_type_id: int, *,
                              certificate_id: str = "TWN00000MTWIN000-01", security_level: int = 0,
                              security_information: int = 0, version_number: int = 1,
                              certification_type: int = 0, dac_origin_vendor_id: int | None = None,
                              dac_origin_product_id: int | None = None,
                              signing_key: ec.EllipticCurvePrivateKey | None = None,
                              signing_cert: x509.Certificate | None = None) -> bytes:
    """CMS SignedData (DER) carrying the CD TLV, signed with `signing_key` (its certificate
    `signing_cert` names the signer). The node glue passes the public test CD signing key.

    certification_type 0 = development and test, as a twin is.
    """
    content = _cd_content(vendor_id, list(product_ids), device_type_id, certificate_id, security_level,
                          security_information, version_number, certification_type,
                          dac_origin_vendor_id, dac_origin_product_id)
    if signing_key is None or signing_cert is None:
        raise AttestationError("certification declaration: a signing key and its certificate are needed")
    skid = signing_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    return _cms_signed_data(content, skid, signing_key.sign(content, ec.ECDSA(hashes.SHA256())))


def _cms_signed_data(content: bytes, signer_key_id: bytes, der_signature: bytes) -> bytes:
    """The CD's CMS SignedData: no certificates, no signed attributes, signer by key id."""
    signer_info = der_seq(der_int(3), der_element(0x80, signer_key_id), der_seq(der_oid(_OID_SHA256)),
                       der_seq(der_oid(_OID_ECDSA_SHA256)), der_element(0x04, der_signature))
    signed_data = der_seq(der_int(3), der_element(0x31, der_seq(der_oid(_OID_SHA256))),
                       der_seq(der_oid(_OID_DATA), der_element(0xA0, der_element(0x04, content))),
                       der_element(0x31, signer_info))
    return der_seq(der_oid(_OID_SIGNED_DATA), der_element(0xA0, signed_data))


def decode_certification_declaration(cms: bytes, signing_cert: x509.Certificate | None = None,
                                     verify: bool = True) -> CertificationDeclaration:
    """Parse a CD; with `verify`, check its signature against `signing_cert` (then required)."""
    try:
        outer = DerReader(bytes(cms))
        ci = DerReader(outer.read(0x30, "ContentInfo")[1])
        outer.end("ContentInfo")
        if read_oid(ci, "content type") != _OID_SIGNED_DATA:
            raise AttestationError("CD is not CMS SignedData")
        sd = DerReader(DerReader(ci.read(0xA0, "content")[1]).read(0x30, "SignedData")[1])
        if sd.read(0x02, "version")[1] != b"\x03":
            raise AttestationError("CD SignedData version must be 3")
        algs = DerReader(sd.read(0x31, "digestAlgorithms")[1])
        if read_oid(DerReader(algs.read(0x30, "digest algorithm")[1]), "digest") != _OID_SHA256:
            raise AttestationError("CD digest algorithm must be SHA-256")
        eci = DerReader(sd.read(0x30, "encapContentInfo")[1])
        if read_oid(eci, "eContentType") != _OID_DATA:
            raise AttestationError("CD content type must be pkcs7-data")
        content = DerReader(eci.read(0xA0, "eContent")[1]).read(0x04, "CD content")[1]
        si = DerReader(DerReader(sd.read(0x31, "signerInfos")[1]).read(0x30, "SignerInfo")[1])
        if si.read(0x02, "signer version")[1] != b"\x03":
            raise AttestationError("CD SignerInfo version must be 3")
        skid = si.read(0x80, "subjectKeyIdentifier")[1]
        if read_oid(DerReader(si.read(0x30, "digestAlgorithm")[1]), "digest") != _OID_SHA256 or \
                read_oid(DerReader(si.read(0x30, "signatureAlgorithm")[1]), "signature algorithm") != _OID_ECDSA_SHA256:
            raise AttestationError("CD must be signed with ecdsa-with-SHA256")
        signature = si.read(0x04, "signature")[1]
        root = tlv_tree(content)
    except (CertificateError, DerError) as e:
        raise AttestationError(f"malformed certification declaration: {e}") from None

    if verify:
        if signing_cert is None:
            raise AttestationError("verifying a CD needs the CD signing certificate")
        want = signing_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
        if skid != want:
            raise AttestationError("CD signer key id does not match the signing certificate")
        key = signing_cert.public_key()
        if not isinstance(key, ec.EllipticCurvePublicKey):
            raise AttestationError("the CD signing certificate must carry an EC public key")
        try:
            key.verify(signature, content, ec.ECDSA(hashes.SHA256()))
        except InvalidSignature:
            raise AttestationError("CD signature does not verify with the signing certificate") from None

    fields = {tag: (kind, val) for tag, kind, val in root[2]}
    order = [tag for tag, _, _ in root[2]]
    if root[1] != "struct" or order[:9] != list(range(9)) or order[9:] not in ([], [9, 10]):
        raise AttestationError(f"CD content fields are {order}; expected tags 0..8 then optionally 9, 10")
    for tag, (kind, _) in fields.items():
        want_kind = "array" if tag == 2 else "str" if tag == 4 else "uint"
        if kind != want_kind:
            raise AttestationError(f"CD field {tag} is {kind}; expected {want_kind}")
    v = {tag: val for tag, (_, val) in fields.items()}
    return CertificationDeclaration(
        format_version=v[0], vendor_id=v[1], product_ids=tuple(p for _, _, p in v[2]), device_type_id=v[3],
        certificate_id=v[4], security_level=v[5], security_information=v[6], version_number=v[7],
        certification_type=v[8], dac_origin_vendor_id=v.get(9), dac_origin_product_id=v.get(10),
        signer_key_id=skid, content=content, signature=signature)


# --- AttestationElements, NOCSRElements, signatures, CSR ---------------------------------

def attestation_elements(certification_declaration: bytes, attestation_nonce: bytes, timestamp: int = 0,
                         firmware_information: bytes | None = None) -> bytes:
    """AttestationElements TLV for AttestationResponse (spec 11.18.4.6)."""
    if len(attestation_nonce) != 32:
        raise AttestationError(f"attestation nonce is {len(attestation_nonce)} bytes; 32 required")
    if not 0 <= timestamp <= 0xFFFFFFFF:
        raise AttestationError("timestamp must be 32-bit epoch seconds (0 when unknown)")
    w = TLVWriter()
    w.start(None, STRUCT)
    w.octets(1, certification_declaration)
    w.octets(2, attestation_nonce)
    w.uint(3, timestamp)
    if firmware_information is not None:
        w.octets(4, firmware_information)
    w.end()
    return bytes(w.buf)


def nocsr_elements(csr_der: bytes, csr_nonce: bytes) -> bytes:
    """NOCSRElements TLV for CSRResponse (spec 11.18.4.9)."""
    if len(csr_nonce) != 32:
        raise AttestationError(f"CSR nonce is {len(csr_nonce)} bytes; 32 required")
    w = TLVWriter()
    w.start(None, STRUCT)
    w.octets(1, csr_der)
    w.octets(2, csr_nonce)
    w.end()
    return bytes(w.buf)


def sign_attestation_elements(elements: bytes, attestation_challenge: bytes,
                              dac_key: ec.EllipticCurvePrivateKey) -> bytes:
    """ECDSA-SHA256 over elements || attestation challenge, raw r||s (64 bytes)."""
    if len(attestation_challenge) != 16:
        raise AttestationError(f"attestation challenge is {len(attestation_challenge)} bytes; 16 required")
    r, s = decode_dss_signature(dac_key.sign(bytes(elements) + bytes(attestation_challenge), ec.ECDSA(hashes.SHA256())))
    return r.to_bytes(32, "big") + s.to_bytes(32, "big")


def verify_attestation_signature(elements: bytes, attestation_challenge: bytes, signature: bytes,
                                 dac: x509.Certificate) -> None:
    """Raise AttestationError unless `signature` is the DAC's over elements || challenge."""
    if len(signature) != 64:
        raise AttestationError("attestation signature must be 64 bytes (r||s)")
    der = encode_dss_signature(int.from_bytes(signature[:32], "big"), int.from_bytes(signature[32:], "big"))
    key = dac.public_key()
    if not isinstance(key, ec.EllipticCurvePublicKey):
        raise AttestationError("the DAC must carry an EC public key")
    try:
        key.verify(der, bytes(elements) + bytes(attestation_challenge), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise AttestationError("attestation signature does not verify with the DAC") from None


def generate_csr(rng: random.Random | None = None) -> tuple[bytes, ec.EllipticCurvePrivateKey]:
    """A new operational key pair and its PKCS#10 CSR (DER), for CSRRequest."""
    key = Crypto_GenerateKeypair(rng)
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "CSA")]))
           .sign(key, hashes.SHA256()))
    return csr.public_bytes(serialization.Encoding.DER), key
