"""Device attestation (Core spec 6.2-6.3, 11.18.4): DAC chain, Certification Declaration,
AttestationElements / NOCSRElements and their signatures, and the CSR for CSRRequest.

Development setup, stated plainly: the chain ends at the public CHIP "Matter Test PAA" and the
CD is signed by the public test CD signing key (both in `dev_credentials/`, private keys
published by the CSA). Controllers accept this only in development/test mode, with the test
PAA in their trust store. Our PAI (VID 0xFFF1) and each node's DAC are generated on first use
and kept in the node's storage directory, so a node attests with the same DAC across restarts.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from chip.tlv import TLVWriter
from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.x509.oid import NameOID

from twin.node.files import write_atomic
from twin.protocol.certs import (
    CertificateError, _Der, _int, _oid, _read_oid, _read_tlv, _seq, _tlv, generate_key,
)

__all__ = [
    "AttestationError", "DeviceCredentials", "CertificationDeclaration", "certification_declaration",
    "decode_certification_declaration", "attestation_elements", "sign_attestation_elements",
    "verify_attestation_signature", "nocsr_elements", "generate_csr", "product_id_for_device_type",
    "write_paa_trust_store", "DEV_CREDENTIALS_DIR", "TEST_PAA_CERT_PATH", "TEST_VENDOR_ID", "OID_VENDOR_ID", "OID_PRODUCT_ID",
]

DEV_CREDENTIALS_DIR = Path(__file__).parent.parent / "node" / "dev_credentials"
TEST_PAA_CERT_PATH = DEV_CREDENTIALS_DIR / "Chip-Test-PAA-NoVID-Cert.pem"
_TEST_PAA_KEY_PATH = DEV_CREDENTIALS_DIR / "Chip-Test-PAA-NoVID-Key.pem"
_TEST_CD_CERT_PATH = DEV_CREDENTIALS_DIR / "Chip-Test-CD-Signing-Cert.pem"
_TEST_CD_KEY_PATH = DEV_CREDENTIALS_DIR / "Chip-Test-CD-Signing-Key.pem"

TEST_VENDOR_ID = 0xFFF1
OID_VENDOR_ID = x509.ObjectIdentifier("1.3.6.1.4.1.37244.2.1")
OID_PRODUCT_ID = x509.ObjectIdentifier("1.3.6.1.4.1.37244.2.2")

# DAC/PAI validity: the CHIP verifier checks the chain at the DAC's not-before, which must
# therefore lie inside the PAA's validity (from 2021-06-28). No expiry, like the test PAA.
_NOT_BEFORE = datetime(2024, 1, 1, tzinfo=timezone.utc)
_NOT_AFTER = datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone.utc)

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


# --- files -----------------------------------------------------------------------------

def _key_der(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _load_pem_cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _load_pem_key(path: Path) -> ec.EllipticCurvePrivateKey:
    return serialization.load_pem_private_key(path.read_bytes(), None)


def _issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(issuer)
        return True
    except (ValueError, TypeError, InvalidSignature):
        return False


def _vid_pid(cert: x509.Certificate) -> tuple[int | None, int | None]:
    def get(oid):
        attrs = cert.subject.get_attributes_for_oid(oid)
        return int(attrs[0].value, 16) if attrs else None
    return get(OID_VENDOR_ID), get(OID_PRODUCT_ID)


def _serial(rng: random.Random | None) -> int:
    n = rng.getrandbits(63) if rng is not None else int.from_bytes(os.urandom(8), "big") >> 1
    return n or 1


def _mint_x509(subject: x509.Name, key: ec.EllipticCurvePrivateKey, issuer: x509.Certificate,
               issuer_key: ec.EllipticCurvePrivateKey, is_ca: bool, rng: random.Random | None) -> x509.Certificate:
    usage = dict(digital_signature=not is_ca, content_commitment=False, key_encipherment=False,
                 data_encipherment=False, key_agreement=False, key_cert_sign=is_ca, crl_sign=is_ca,
                 encipher_only=False, decipher_only=False)
    issuer_skid = issuer.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    return (x509.CertificateBuilder()
            .subject_name(subject).issuer_name(issuer.subject).public_key(key.public_key())
            .serial_number(_serial(rng)).not_valid_before(_NOT_BEFORE).not_valid_after(_NOT_AFTER)
            .add_extension(x509.BasicConstraints(ca=is_ca, path_length=0 if is_ca else None), critical=True)
            .add_extension(x509.KeyUsage(**usage), critical=True)
            .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
            .add_extension(x509.AuthorityKeyIdentifier(issuer_skid, None, None), critical=False)
            .sign(issuer_key, hashes.SHA256()))


def write_paa_trust_store(directory: str | os.PathLike) -> Path:
    """Put the public test PAA, as DER, into a controller's PAA trust directory.

    The CHIP SDK (python-matter-server `--paa-root-cert-dir`, chip-tool `--paa-trust-store-path`)
    loads only `*.der` files from that directory. python-matter-server also empties a directory
    that has no `.version` stamp and re-downloads the roots when the stamp is over a day old;
    a fresh stamp keeps our PAA and keeps it from reaching for the network. Returns the
    written certificate file.
    """
    target = Path(directory)
    target.mkdir(parents=True, exist_ok=True)
    path = target / "Chip-Test-PAA-NoVID-Cert.der"
    write_atomic(path, _load_pem_cert(TEST_PAA_CERT_PATH).public_bytes(serialization.Encoding.DER))
    write_atomic(target / ".version", b"matter-twin test PAA\n")
    return path


# --- the per-node credentials ----------------------------------------------------------

@dataclass(frozen=True)
class DeviceCredentials:
    """A node's attestation identity: DAC (+ key) under our PAI under the public test PAA."""

    vendor_id: int
    product_id: int
    dac: x509.Certificate
    dac_key: ec.EllipticCurvePrivateKey
    pai: x509.Certificate
    paa: x509.Certificate

    @property
    def dac_der(self) -> bytes:
        return self.dac.public_bytes(serialization.Encoding.DER)

    @property
    def pai_der(self) -> bytes:
        return self.pai.public_bytes(serialization.Encoding.DER)

    @classmethod
    def load_or_create(cls, storage_dir: str | os.PathLike, vendor_id: int = TEST_VENDOR_ID,
                       product_id: int = 0x8000, rng: random.Random | None = None,
                       pai_dir: str | os.PathLike | None = None) -> "DeviceCredentials":
        """Load the DAC kept in `storage_dir`, creating PAI and DAC on first use.

        The PAI lives in `pai_dir` (default: `storage_dir`) so many nodes may share one.
        `rng` makes new keys and serials reproducible (twin and tests); without it the OS
        CSPRNG is used. An existing DAC for another vendor/product is an error, never replaced.
        """
        for name, v in (("vendor id", vendor_id), ("product id", product_id)):
            if not 1 <= v <= 0xFFFE:
                raise AttestationError(f"{name} {v:#x} out of range 0x0001..0xfffe")
        storage, pai_store = Path(storage_dir), Path(pai_dir) if pai_dir is not None else Path(storage_dir)
        storage.mkdir(parents=True, exist_ok=True)
        pai_store.mkdir(parents=True, exist_ok=True)
        paa, paa_key = _load_pem_cert(TEST_PAA_CERT_PATH), _load_pem_key(_TEST_PAA_KEY_PATH)

        pai_cert_path, pai_key_path = pai_store / f"pai-{vendor_id:04X}-cert.der", pai_store / f"pai-{vendor_id:04X}-key.der"
        if pai_cert_path.exists() and pai_key_path.exists():
            pai = x509.load_der_x509_certificate(pai_cert_path.read_bytes())
            pai_key = serialization.load_der_private_key(pai_key_path.read_bytes(), None)
        else:
            pai_key = generate_key(rng)
            pai = _mint_x509(x509.Name([
                x509.NameAttribute(NameOID.COMMON_NAME, f"Matter Twin Dev PAI 0x{vendor_id:04X} no PID"),
                x509.NameAttribute(OID_VENDOR_ID, f"{vendor_id:04X}")]), pai_key, paa, paa_key, True, rng)
            write_atomic(pai_key_path, _key_der(pai_key))
            write_atomic(pai_cert_path, pai.public_bytes(serialization.Encoding.DER))
        if not _issued_by(pai, paa) or _vid_pid(pai)[0] != vendor_id:
            raise AttestationError(f"{pai_cert_path} is not a PAI for vendor {vendor_id:#06x} under the test PAA")

        dac_cert_path, dac_key_path = storage / "dac-cert.der", storage / "dac-key.der"
        if dac_cert_path.exists() and dac_key_path.exists():
            dac = x509.load_der_x509_certificate(dac_cert_path.read_bytes())
            dac_key = serialization.load_der_private_key(dac_key_path.read_bytes(), None)
            if _vid_pid(dac) != (vendor_id, product_id):
                have = _vid_pid(dac)
                raise AttestationError(
                    f"{dac_cert_path} holds a DAC for vendor/product {have}, not ({vendor_id:#06x}, {product_id:#06x}); "
                    "use another storage directory or delete the DAC files")
        else:
            dac_key = generate_key(rng)
            dac = _mint_x509(x509.Name([
                x509.NameAttribute(NameOID.COMMON_NAME, f"Matter Twin Dev DAC 0x{vendor_id:04X}/0x{product_id:04X}"),
                x509.NameAttribute(OID_VENDOR_ID, f"{vendor_id:04X}"),
                x509.NameAttribute(OID_PRODUCT_ID, f"{product_id:04X}")]), dac_key, pai, pai_key, False, rng)
            write_atomic(dac_key_path, _key_der(dac_key))
            write_atomic(dac_cert_path, dac.public_bytes(serialization.Encoding.DER))
        if not _issued_by(dac, pai):
            raise AttestationError(f"{dac_cert_path} was not issued by the PAI in {pai_cert_path}")
        if dac.public_key().public_numbers() != dac_key.public_key().public_numbers():
            raise AttestationError(f"{dac_key_path} does not match the DAC in {dac_cert_path}")
        return cls(vendor_id, product_id, dac, dac_key, pai, paa)

    def certification_declaration(self, device_type_id: int, **kwargs) -> bytes:
        """A CD for this node's vendor/product (see `certification_declaration`)."""
        return certification_declaration(self.vendor_id, [self.product_id], device_type_id, **kwargs)

    def sign(self, elements: bytes, attestation_challenge: bytes) -> bytes:
        """AttestationSignature / CSR signature: DAC ECDSA over elements || challenge, as r||s."""
        return sign_attestation_elements(elements, attestation_challenge, self.dac_key)


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


def _cd_content(vendor_id, product_ids, device_type_id, certificate_id, security_level,
                security_information, version_number, certification_type,
                dac_origin_vendor_id, dac_origin_product_id) -> bytes:
    checks = [
        (0 <= vendor_id <= 0xFFFF, "vendor id must be 16-bit"),
        (1 <= len(product_ids) <= 100 and all(0 <= p <= 0xFFFF for p in product_ids),
         "product ids must be 1..100 16-bit values"),
        (0 <= device_type_id <= 0xFFFFFFFF, "device type id must be 32-bit"),
        (len(certificate_id) == 19, "certificate id must be exactly 19 characters"),
        (0 <= security_level <= 0xFF and 0 <= certification_type <= 0xFF, "security level and certification type are 8-bit"),
        (0 <= security_information <= 0xFFFF and 0 <= version_number <= 0xFFFF, "security information and version are 16-bit"),
        ((dac_origin_vendor_id is None) == (dac_origin_product_id is None), "DAC origin vendor and product go together"),
    ]
    for ok, msg in checks:
        if not ok:
            raise AttestationError(f"certification declaration: {msg}")
    w = TLVWriter()
    w.startStructure(None)
    w.putUnsignedInt(0, 1)  # format_version
    w.putUnsignedInt(1, vendor_id)
    w.startArray(2)
    for p in product_ids:
        w.putUnsignedInt(None, p)
    w.endContainer()
    w.putUnsignedInt(3, device_type_id)
    w.putString(4, certificate_id)
    w.putUnsignedInt(5, security_level)
    w.putUnsignedInt(6, security_information)
    w.putUnsignedInt(7, version_number)
    w.putUnsignedInt(8, certification_type)
    if dac_origin_vendor_id is not None:
        w.putUnsignedInt(9, dac_origin_vendor_id)
        w.putUnsignedInt(10, dac_origin_product_id)
    w.endContainer()
    return bytes(w.encoding)


def certification_declaration(vendor_id: int, product_ids, device_type_id: int, *,
                              certificate_id: str = "TWN00000MTWIN000-01", security_level: int = 0,
                              security_information: int = 0, version_number: int = 1,
                              certification_type: int = 0, dac_origin_vendor_id: int | None = None,
                              dac_origin_product_id: int | None = None,
                              signing_key: ec.EllipticCurvePrivateKey | None = None,
                              signing_cert: x509.Certificate | None = None) -> bytes:
    """CMS SignedData (DER) carrying the CD TLV, signed by the public test CD key by default.

    certification_type 0 = development and test, as a twin is.
    """
    content = _cd_content(vendor_id, list(product_ids), device_type_id, certificate_id, security_level,
                          security_information, version_number, certification_type,
                          dac_origin_vendor_id, dac_origin_product_id)
    if signing_key is None:
        signing_key, signing_cert = _load_pem_key(_TEST_CD_KEY_PATH), _load_pem_cert(_TEST_CD_CERT_PATH)
    skid = signing_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    return _cms_signed_data(content, skid, signing_key.sign(content, ec.ECDSA(hashes.SHA256())))


def _cms_signed_data(content: bytes, signer_key_id: bytes, der_signature: bytes) -> bytes:
    """The CD's CMS SignedData: no certificates, no signed attributes, signer by key id."""
    signer_info = _seq(_int(3), _tlv(0x80, signer_key_id), _seq(_oid(_OID_SHA256)),
                       _seq(_oid(_OID_ECDSA_SHA256)), _tlv(0x04, der_signature))
    signed_data = _seq(_int(3), _tlv(0x31, _seq(_oid(_OID_SHA256))),
                       _seq(_oid(_OID_DATA), _tlv(0xA0, _tlv(0x04, content))),
                       _tlv(0x31, signer_info))
    return _seq(_oid(_OID_SIGNED_DATA), _tlv(0xA0, signed_data))


def decode_certification_declaration(cms: bytes, signing_cert: x509.Certificate | None = None,
                                     verify: bool = True) -> CertificationDeclaration:
    """Parse a CD; with `verify`, check its signature against `signing_cert` (default: test CD cert)."""
    try:
        outer = _Der(bytes(cms))
        ci = _Der(outer.read(0x30, "ContentInfo")[1])
        outer.end("ContentInfo")
        if _read_oid(ci, "content type") != _OID_SIGNED_DATA:
            raise AttestationError("CD is not CMS SignedData")
        sd = _Der(_Der(ci.read(0xA0, "content")[1]).read(0x30, "SignedData")[1])
        if sd.read(0x02, "version")[1] != b"\x03":
            raise AttestationError("CD SignedData version must be 3")
        algs = _Der(sd.read(0x31, "digestAlgorithms")[1])
        if _read_oid(_Der(algs.read(0x30, "digest algorithm")[1]), "digest") != _OID_SHA256:
            raise AttestationError("CD digest algorithm must be SHA-256")
        eci = _Der(sd.read(0x30, "encapContentInfo")[1])
        if _read_oid(eci, "eContentType") != _OID_DATA:
            raise AttestationError("CD content type must be pkcs7-data")
        content = _Der(eci.read(0xA0, "eContent")[1]).read(0x04, "CD content")[1]
        si = _Der(_Der(sd.read(0x31, "signerInfos")[1]).read(0x30, "SignerInfo")[1])
        if si.read(0x02, "signer version")[1] != b"\x03":
            raise AttestationError("CD SignerInfo version must be 3")
        skid = si.read(0x80, "subjectKeyIdentifier")[1]
        if _read_oid(_Der(si.read(0x30, "digestAlgorithm")[1]), "digest") != _OID_SHA256 or \
                _read_oid(_Der(si.read(0x30, "signatureAlgorithm")[1]), "signature algorithm") != _OID_ECDSA_SHA256:
            raise AttestationError("CD must be signed with ecdsa-with-SHA256")
        signature = si.read(0x04, "signature")[1]
        root = _read_tlv(content)
    except CertificateError as e:
        raise AttestationError(f"malformed certification declaration: {e}") from None

    if verify:
        signing_cert = signing_cert or _load_pem_cert(_TEST_CD_CERT_PATH)
        want = signing_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
        if skid != want:
            raise AttestationError("CD signer key id does not match the signing certificate")
        try:
            signing_cert.public_key().verify(signature, content, ec.ECDSA(hashes.SHA256()))
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
    w.startStructure(None)
    w.putBytes(1, certification_declaration)
    w.putBytes(2, attestation_nonce)
    w.putUnsignedInt(3, timestamp)
    if firmware_information is not None:
        w.putBytes(4, firmware_information)
    w.endContainer()
    return bytes(w.encoding)


def nocsr_elements(csr_der: bytes, csr_nonce: bytes) -> bytes:
    """NOCSRElements TLV for CSRResponse (spec 11.18.4.9)."""
    if len(csr_nonce) != 32:
        raise AttestationError(f"CSR nonce is {len(csr_nonce)} bytes; 32 required")
    w = TLVWriter()
    w.startStructure(None)
    w.putBytes(1, csr_der)
    w.putBytes(2, csr_nonce)
    w.endContainer()
    return bytes(w.encoding)


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
    try:
        dac.public_key().verify(der, bytes(elements) + bytes(attestation_challenge), ec.ECDSA(hashes.SHA256()))
    except InvalidSignature:
        raise AttestationError("attestation signature does not verify with the DAC") from None


def generate_csr(rng: random.Random | None = None) -> tuple[bytes, ec.EllipticCurvePrivateKey]:
    """A new operational key pair and its PKCS#10 CSR (DER), for CSRRequest."""
    key = generate_key(rng)
    csr = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "CSA")]))
           .sign(key, hashes.SHA256()))
    return csr.public_bytes(serialization.Encoding.DER), key
