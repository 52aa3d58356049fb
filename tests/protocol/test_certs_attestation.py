"""Device attestation (matter_protocol/attestation.py, credentials on disk in twin/node/credentials.py):
DAC chain, CD, attestation and CSR elements."""

import os
import random
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from matter_protocol.attestation import (
    OID_PRODUCT_ID,
    OID_VENDOR_ID,
    AttestationError,
    _cd_content,
    _cms_signed_data,
    attestation_elements,
    certification_declaration,
    decode_certification_declaration,
    generate_csr,
    nocsr_elements,
    product_id_for_device_type,
    sign_attestation_elements,
    verify_attestation_signature,
)
from matter_protocol.certs import mint_noc, mint_root, verify_chain
from matter_protocol.certs import tlv_tree as _read_tlv
from matter_protocol.crypto import public_key_bytes
from twin.node.credentials import DEV_CREDENTIALS_DIR, TEST_PAA_CERT_PATH, DeviceCredentials, write_paa_trust_store

DATA = Path(__file__).parents[1] / "data" / "certs"
CD_CERT = x509.load_pem_x509_certificate((DEV_CREDENTIALS_DIR / "Chip-Test-CD-Signing-Cert.pem").read_bytes())


@pytest.fixture
def creds(tmp_path):
    return DeviceCredentials.load_or_create(tmp_path / "node1", 0xFFF1, 0x8100, rng=random.Random(5))


def test_dev_credentials_are_the_public_test_paa_and_cd_signer():
    paa = x509.load_pem_x509_certificate(TEST_PAA_CERT_PATH.read_bytes())
    assert paa.subject.rfc4514_string() == "CN=Matter Test PAA"
    assert CD_CERT.subject.rfc4514_string() == "CN=Matter Test CD Signing Authority"
    paa.verify_directly_issued_by(paa)
    readme = (DEV_CREDENTIALS_DIR / "README.md").read_text()
    assert "never for production" in readme


def test_dac_chain_verifies_up_to_the_test_paa(creds):
    creds.pai.verify_directly_issued_by(creds.paa)
    creds.dac.verify_directly_issued_by(creds.pai)
    assert creds.paa.subject.rfc4514_string() == "CN=Matter Test PAA"
    assert creds.dac.subject.get_attributes_for_oid(OID_VENDOR_ID)[0].value == "FFF1"
    assert creds.dac.subject.get_attributes_for_oid(OID_PRODUCT_ID)[0].value == "8100"
    assert creds.pai.subject.get_attributes_for_oid(OID_VENDOR_ID)[0].value == "FFF1"
    assert not creds.pai.subject.get_attributes_for_oid(OID_PRODUCT_ID)
    # Spec profile: DAC is a non-CA signing-only leaf, PAI a CA with path length 0.
    dac_bc = creds.dac.extensions.get_extension_for_class(x509.BasicConstraints)
    pai_bc = creds.pai.extensions.get_extension_for_class(x509.BasicConstraints)
    assert dac_bc.critical and not dac_bc.value.ca
    assert pai_bc.critical and pai_bc.value.ca and pai_bc.value.path_length == 0
    ku = creds.dac.extensions.get_extension_for_class(x509.KeyUsage).value
    assert ku.digital_signature and not ku.key_cert_sign
    # The DAC's validity starts inside the PAA's (CHIP checks the chain at DAC not-before).
    assert creds.paa.not_valid_before_utc <= creds.pai.not_valid_before_utc <= creds.dac.not_valid_before_utc


def test_dac_persists_across_reload(tmp_path, creds):
    again = DeviceCredentials.load_or_create(tmp_path / "node1", 0xFFF1, 0x8100)
    assert again.dac_der == creds.dac_der and again.pai_der == creds.pai_der
    assert public_key_bytes(again.dac_key) == public_key_bytes(creds.dac_key)
    files = sorted(p.name for p in (tmp_path / "node1").iterdir())
    assert files == ["dac-cert.der", "dac-key.der", "pai-FFF1-cert.der", "pai-FFF1-key.der"]


def test_other_nodes_get_their_own_dac_under_a_shared_pai(tmp_path):
    a = DeviceCredentials.load_or_create(tmp_path / "a", product_id=0x8100, pai_dir=tmp_path / "pai")
    b = DeviceCredentials.load_or_create(tmp_path / "b", product_id=0x8302, pai_dir=tmp_path / "pai")
    assert a.pai_der == b.pai_der and a.dac_der != b.dac_der
    b.dac.verify_directly_issued_by(a.pai)


def test_existing_dac_for_another_product_is_refused_not_replaced(tmp_path, creds):
    before = (tmp_path / "node1" / "dac-cert.der").read_bytes()
    with pytest.raises(AttestationError, match="holds a DAC for vendor/product"):
        DeviceCredentials.load_or_create(tmp_path / "node1", 0xFFF1, 0x8200)
    assert (tmp_path / "node1" / "dac-cert.der").read_bytes() == before
    with pytest.raises(AttestationError, match="product id"):
        DeviceCredentials.load_or_create(tmp_path / "x", 0xFFF1, 0)


def test_cd_parses_back_and_verifies_with_the_test_cd_signing_cert(creds):
    cms = creds.certification_declaration(0x0100)
    cd = decode_certification_declaration(cms, CD_CERT)
    assert (cd.format_version, cd.vendor_id, cd.product_ids, cd.device_type_id) == (1, 0xFFF1, (0x8100,), 0x0100)
    assert cd.certification_type == 0 and len(cd.certificate_id) == 19
    assert cd.signer_key_id == CD_CERT.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value.digest
    # A CD signed by another key is rejected.
    other = ec.generate_private_key(ec.SECP256R1())
    forged = certification_declaration(0xFFF1, [0x8100], 0x100, signing_key=other, signing_cert=CD_CERT)
    with pytest.raises(AttestationError, match="signature does not verify"):
        decode_certification_declaration(forged, CD_CERT)


def test_cd_matches_the_chip_sdk_vector_byte_for_byte():
    # CHIP SDK TestCertificationDeclaration.cpp, case 2 (with DAC origin vendor/product).
    vector = (DATA / "Chip-Test-CD-FFF2-8001-8002.cms.der").read_bytes()
    cd = decode_certification_declaration(vector, CD_CERT)
    assert (cd.vendor_id, cd.product_ids, cd.device_type_id) == (0xFFF2, (0x8001, 0x8002), 0x1234)
    assert (cd.certificate_id, cd.version_number) == ("ZIG20142ZB330002-24", 0x2694)
    assert (cd.dac_origin_vendor_id, cd.dac_origin_product_id) == (0xFFF1, 0x8000)
    content = _cd_content(0xFFF2, [0x8001, 0x8002], 0x1234, "ZIG20142ZB330002-24", 0, 0, 0x2694, 0, 0xFFF1, 0x8000)
    assert content == cd.content
    assert _cms_signed_data(content, cd.signer_key_id, cd.signature) == vector


def test_cd_rejects_bad_parameters_and_tampering(creds):
    with pytest.raises(AttestationError, match="19 characters"):
        certification_declaration(0xFFF1, [1], 0x100, certificate_id="short")
    with pytest.raises(AttestationError, match="product ids"):
        certification_declaration(0xFFF1, [], 0x100)
    cms = bytearray(creds.certification_declaration(0x0100))
    cms[cms.index(b"\x25\x01\xf1\xff") + 2] ^= 1  # vendor id byte inside the signed content
    with pytest.raises(AttestationError, match="signature does not verify"):
        decode_certification_declaration(bytes(cms), CD_CERT)
    with pytest.raises(AttestationError, match="malformed"):
        decode_certification_declaration(bytes(cms[:40]), CD_CERT)


def test_attestation_elements_and_signature(creds):
    nonce, challenge = os.urandom(32), os.urandom(16)
    cd = creds.certification_declaration(0x0100)
    elements = attestation_elements(cd, nonce, timestamp=0)
    tag, kind, fields = _read_tlv(elements)
    assert (tag, kind) == (None, "struct")
    assert [(t, k, v) for t, k, v in fields] == [(1, "bytes", cd), (2, "bytes", nonce), (3, "uint", 0)]
    signature = creds.sign(elements, challenge)
    assert len(signature) == 64
    verify_attestation_signature(elements, challenge, signature, creds.dac)
    with pytest.raises(AttestationError, match="does not verify"):
        verify_attestation_signature(elements, os.urandom(16), signature, creds.dac)
    with pytest.raises(AttestationError, match="32 required"):
        attestation_elements(cd, b"short")
    with pytest.raises(AttestationError, match="16 required"):
        sign_attestation_elements(elements, b"x", creds.dac_key)
    with_fw = attestation_elements(cd, nonce, 7, firmware_information=b"fw")
    assert _read_tlv(with_fw)[2][3] == (4, "bytes", b"fw")


def test_csr_and_nocsr_elements_lead_to_a_verifying_noc(creds):
    csr_der, op_key = generate_csr()
    csr = x509.load_der_x509_csr(csr_der)
    assert csr.is_signature_valid
    assert csr.public_key().public_numbers() == op_key.public_key().public_numbers()
    nonce, challenge = os.urandom(32), os.urandom(16)
    elements = nocsr_elements(csr_der, nonce)
    assert [(t, v) for t, _, v in _read_tlv(elements)[2]] == [(1, csr_der), (2, nonce)]
    verify_attestation_signature(elements, challenge, creds.sign(elements, challenge), creds.dac)
    # A commissioner issues a NOC for the CSR's key; the chain verifies to that key.
    root, root_key = mint_root(1, rng=random.Random(0))
    noc, _ = mint_noc(root, root_key, 0x99, 0x7, public_key=csr.public_key())
    assert verify_chain(noc.to_tlv(), None, root.to_tlv())[2] == public_key_bytes(op_key)


def test_product_id_per_device_type():
    assert product_id_for_device_type(0x0100) == 0x8100
    assert product_id_for_device_type(0x0302) == 0x8302
    with pytest.raises(AttestationError):
        product_id_for_device_type(0x12345)


def test_paa_trust_store_gets_the_test_paa_as_der(tmp_path, creds):
    path = write_paa_trust_store(tmp_path / "paa")
    assert path.suffix == ".der"  # the CHIP SDK trust store only loads *.der
    paa = x509.load_der_x509_certificate(path.read_bytes())
    creds.pai.verify_directly_issued_by(paa)


def test_openssl_strict_chain_check_at_dac_not_before(tmp_path, creds):
    """What the CHIP verifier does: OpenSSL X509_STRICT validation at the DAC's not-before time."""
    import shutil
    import subprocess
    # scripts/install-test-deps.sh installs it; missing, this fails rather than skips.
    assert shutil.which("openssl") is not None, "the openssl command is not installed"
    pem = serialization.Encoding.PEM
    (tmp_path / "paa.pem").write_bytes(creds.paa.public_bytes(pem))
    (tmp_path / "pai.pem").write_bytes(creds.pai.public_bytes(pem))
    (tmp_path / "dac.pem").write_bytes(creds.dac.public_bytes(pem))
    at = str(int(creds.dac.not_valid_before_utc.timestamp()))
    proc = subprocess.run(["openssl", "verify", "-x509_strict", "-attime", at, "-CAfile", str(tmp_path / "paa.pem"),
                           "-untrusted", str(tmp_path / "pai.pem"), str(tmp_path / "dac.pem")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stdout + proc.stderr
    # A DAC from another (untrusted) chain must fail the same check.
    other = DeviceCredentials.load_or_create(tmp_path / "other", pai_dir=tmp_path / "other-pai")
    (tmp_path / "dac2.pem").write_bytes(other.dac.public_bytes(pem))
    proc = subprocess.run(["openssl", "verify", "-x509_strict", "-attime", at, "-CAfile", str(tmp_path / "paa.pem"),
                           "-untrusted", str(tmp_path / "pai.pem"), str(tmp_path / "dac2.pem")],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0
