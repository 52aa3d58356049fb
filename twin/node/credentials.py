"""A node's attestation credentials on disk: the development PAA and CD signer, our PAI, its DAC.

Development setup, stated plainly: the chain ends at the public CHIP "Matter Test PAA" and the
CD is signed by the public test CD signing key (both in `dev_credentials/`, private keys
published by the CSA). Controllers accept this only in development/test mode, with the test
PAA in their trust store. Our PAI (VID 0xFFF1) and each node's DAC are generated on first use
and kept in the node's storage directory, so a node attests with the same DAC across restarts.
The attestation formats themselves are pure protocol (`matter_protocol.attestation`).
"""
from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from matter_protocol.attestation import (
    TEST_VENDOR_ID,
    AttestationError,
    certification_declaration,
    issued_by,
    mint_dac,
    mint_pai,
    sign_attestation_elements,
    vendor_product_ids,
)
from twin.node.files import write_atomic

DEV_CREDENTIALS_DIR = Path(__file__).parent / "dev_credentials"
TEST_PAA_CERT_PATH = DEV_CREDENTIALS_DIR / "Chip-Test-PAA-NoVID-Cert.pem"
_TEST_PAA_KEY_PATH = DEV_CREDENTIALS_DIR / "Chip-Test-PAA-NoVID-Key.pem"
_TEST_CD_CERT_PATH = DEV_CREDENTIALS_DIR / "Chip-Test-CD-Signing-Cert.pem"
_TEST_CD_KEY_PATH = DEV_CREDENTIALS_DIR / "Chip-Test-CD-Signing-Key.pem"


def _load_pem_cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _load_pem_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise AttestationError(f"{path} is not an EC private key")
    return key


def _load_der_key(path: Path) -> ec.EllipticCurvePrivateKey:
    key = serialization.load_der_private_key(path.read_bytes(), None)
    if not isinstance(key, ec.EllipticCurvePrivateKey):
        raise AttestationError(f"{path} is not an EC private key")
    return key


def _key_der(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(serialization.Encoding.DER, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def development_cd_signing_cert() -> x509.Certificate:
    """The public test CD signing certificate (what controllers in test mode trust for CDs)."""
    return _load_pem_cert(_TEST_CD_CERT_PATH)


def development_cd_signing_key() -> ec.EllipticCurvePrivateKey:
    return _load_pem_key(_TEST_CD_KEY_PATH)


def write_paa_trust_store(directory: str | os.PathLike[str]) -> Path:
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
    def load_or_create(cls, storage_dir: str | os.PathLike[str], vendor_id: int = TEST_VENDOR_ID,
                       product_id: int = 0x8000, rng: random.Random | None = None,
                       pai_dir: str | os.PathLike[str] | None = None) -> DeviceCredentials:
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

        pai_cert_path = pai_store / f"pai-{vendor_id:04X}-cert.der"
        pai_key_path = pai_store / f"pai-{vendor_id:04X}-key.der"
        if pai_cert_path.exists() and pai_key_path.exists():
            pai = x509.load_der_x509_certificate(pai_cert_path.read_bytes())
            pai_key = _load_der_key(pai_key_path)
        else:
            pai, pai_key = mint_pai(vendor_id, paa, paa_key, rng)
            write_atomic(pai_key_path, _key_der(pai_key))
            write_atomic(pai_cert_path, pai.public_bytes(serialization.Encoding.DER))
        if not issued_by(pai, paa) or vendor_product_ids(pai)[0] != vendor_id:
            raise AttestationError(f"{pai_cert_path} is not a PAI for vendor {vendor_id:#06x} under the test PAA")

        dac_cert_path, dac_key_path = storage / "dac-cert.der", storage / "dac-key.der"
        if dac_cert_path.exists() and dac_key_path.exists():
            dac = x509.load_der_x509_certificate(dac_cert_path.read_bytes())
            dac_key = _load_der_key(dac_key_path)
            if vendor_product_ids(dac) != (vendor_id, product_id):
                have = vendor_product_ids(dac)
                raise AttestationError(
                    f"{dac_cert_path} holds a DAC for vendor/product {have}, "
                    f"not ({vendor_id:#06x}, {product_id:#06x}); "
                    "use another storage directory or delete the DAC files")
        else:
            dac, dac_key = mint_dac(vendor_id, product_id, pai, pai_key, rng)
            write_atomic(dac_key_path, _key_der(dac_key))
            write_atomic(dac_cert_path, dac.public_bytes(serialization.Encoding.DER))
        if not issued_by(dac, pai):
            raise AttestationError(f"{dac_cert_path} was not issued by the PAI in {pai_cert_path}")
        spki = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
        if dac.public_key().public_bytes(*spki) != dac_key.public_key().public_bytes(*spki):
            raise AttestationError(f"{dac_key_path} does not match the DAC in {dac_cert_path}")
        return cls(vendor_id, product_id, dac, dac_key, pai, paa)

    def certification_declaration(self, device_type_id: int, **kwargs: Any) -> bytes:
        """A CD for this node's vendor/product, signed by the test CD key unless `kwargs` say otherwise."""
        kwargs.setdefault("signing_key", development_cd_signing_key())
        kwargs.setdefault("signing_cert", development_cd_signing_cert())
        return certification_declaration(self.vendor_id, [self.product_id], device_type_id, **kwargs)

    def sign(self, elements: bytes, attestation_challenge: bytes) -> bytes:
        """AttestationSignature / CSR signature: DAC ECDSA over elements || challenge, as r||s."""
        return sign_attestation_elements(elements, attestation_challenge, self.dac_key)
