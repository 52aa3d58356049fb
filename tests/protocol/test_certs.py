"""Matter certificate TLV <-> X.509 and chain verification (matter_protocol/certs.py).

The vectors in tests/data/certs are CHIP SDK test certificates (src/credentials/tests/
CHIPCert_test_vectors.cpp): each .chip is the TLV form and .pem the X.509 form of the same cert.
"""

import dataclasses
import random
from datetime import UTC, datetime
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

from matter_protocol.certs import (
    BasicConstraints,
    CertificateError,
    MatterCertificate,
    compressed_fabric_id,
    matter_time,
    mint_icac,
    mint_noc,
    mint_root,
    verify_chain,
)
from matter_protocol.crypto import public_key_bytes

DATA = Path(__file__).parents[1] / "data" / "certs"
NAMES = ["Root01", "ICA01", "Node01_02", "Root02", "ICA02", "Node02_01", "Node02_02"]


def tlv(name):
    return (DATA / f"{name}.chip").read_bytes()


def der(name):
    pem = (DATA / f"{name}.pem").read_bytes()
    return x509.load_pem_x509_certificate(pem).public_bytes(serialization.Encoding.DER)


@pytest.mark.parametrize("name", NAMES)
def test_chip_vectors_round_trip_byte_identical(name):
    cert = MatterCertificate.from_tlv(tlv(name))
    assert cert.to_tlv() == tlv(name)
    assert cert.to_der() == der(name)
    back = MatterCertificate.from_der(der(name))
    assert back == cert
    assert back.to_tlv() == tlv(name)
    assert MatterCertificate.from_x509(cert.to_x509()).to_tlv() == tlv(name)


def test_decoded_fields_of_a_chip_vector():
    noc = MatterCertificate.from_tlv(tlv("Node02_02"))
    assert noc.node_id == 0xDEDEDEDE00020002
    assert noc.fabric_id == 0xFAB000000000001D
    assert (1, "TEST CERT COMMON NAME Attr for Node02_02") in noc.subject
    assert noc.cert_type == "noc" and not noc.is_ca
    assert noc.key_purposes == (2, 1)
    assert MatterCertificate.from_tlv(tlv("Root02")).basic_constraints == BasicConstraints(True, 1)
    assert MatterCertificate.from_tlv(tlv("ICA01")).icac_id == 0xCACACACA00000003


def test_the_tbs_rebuilt_from_tlv_verifies_the_original_signature():
    # The X.509 signature of the CHIP vector must verify over our reconstructed TBS.
    root = x509.load_der_x509_certificate(der("Root01"))
    noc = MatterCertificate.from_tlv(tlv("Node01_02"))
    root.public_key().verify(x509.load_der_x509_certificate(der("Node01_02")).signature,
                             noc.tbs_der(), ec.ECDSA(hashes.SHA256()))


def test_verify_chain_accepts_chip_chains():
    node, fabric, pk = verify_chain(tlv("Node02_01"), tlv("ICA02"), tlv("Root02"))
    assert (node, fabric) == (0xDEDEDEDE00020001, 0xFAB000000000001D)
    assert pk == MatterCertificate.from_tlv(tlv("Node02_01")).public_key
    assert verify_chain(tlv("Node01_02"), None, tlv("Root01"))[:2] == (0xDEDEDEDE00010002, 0xFAB000000000001D)


def test_verify_chain_rejects_wrong_issuer():
    with pytest.raises(CertificateError, match="issuer DN"):
        verify_chain(tlv("Node02_01"), tlv("ICA02"), tlv("Root01"))
    with pytest.raises(CertificateError, match="issuer DN"):
        verify_chain(tlv("Node02_01"), None, tlv("Root02"))  # needs its ICAC


def test_verify_chain_rejects_tampered_signature_and_tbs():
    noc = MatterCertificate.from_tlv(tlv("Node01_02"))
    bad_sig = dataclasses.replace(noc, signature=noc.signature[:-1] + bytes([noc.signature[-1] ^ 1]))
    with pytest.raises(CertificateError, match="NOC: signature does not verify"):
        verify_chain(bad_sig.to_tlv(), None, tlv("Root01"))
    other_node = dataclasses.replace(noc, subject=((17, 0x1234), (21, noc.fabric_id)))
    with pytest.raises(CertificateError, match="signature does not verify"):
        verify_chain(other_node.to_tlv(), None, tlv("Root01"))


def test_verify_chain_rejects_not_a_noc_or_root():
    with pytest.raises(CertificateError, match="NOC subject has no matter-node-id"):
        verify_chain(tlv("ICA01"), None, tlv("Root01"))
    with pytest.raises(CertificateError, match="RCAC subject has no matter-rcac-id"):
        verify_chain(tlv("Node01_02"), None, tlv("ICA01"))


def minted_fabric(fabric_id=0x1122, rcac_fabric=None, rng_seed=7, not_after=0):
    rng = random.Random(rng_seed)
    root, root_key = mint_root(1, rcac_fabric, rng=rng)
    icac, icac_key = mint_icac(root, root_key, 2, rng=rng)
    noc, noc_key = mint_noc(icac, icac_key, 0x42, fabric_id, rng=rng, cats=[0x00010001], not_after=not_after)
    return root, icac, noc, noc_key


def test_minted_chain_verifies_and_is_valid_x509():
    root, icac, noc, noc_key = minted_fabric(rcac_fabric=0x1122)
    node, fabric, pk = verify_chain(noc.to_tlv(), icac.to_tlv(), root.to_tlv())
    assert (node, fabric, pk) == (0x42, 0x1122, public_key_bytes(noc_key))
    assert noc.case_authenticated_tags == (0x00010001,)
    # cryptography agrees with our X.509 form, and every minted cert round-trips.
    x_root, x_icac, x_noc = root.to_x509(), icac.to_x509(), noc.to_x509()
    x_icac.verify_directly_issued_by(x_root)
    x_noc.verify_directly_issued_by(x_icac)
    for c in (root, icac, noc):
        assert MatterCertificate.from_tlv(c.to_tlv()) == c
        assert MatterCertificate.from_x509(c.to_x509()) == c


def test_minting_without_icac():
    rng = random.Random(1)
    root, key = mint_root(9, rng=rng)
    noc, _ = mint_noc(root, key, 5, 77, public_key=public_key_bytes(ec.generate_private_key(ec.SECP256R1())))
    assert verify_chain(noc.to_tlv(), None, root.to_tlv())[:2] == (5, 77)


def test_verify_chain_rejects_wrong_fabric():
    root, icac, noc, _ = minted_fabric(fabric_id=0x1122, rcac_fabric=0x9999)
    with pytest.raises(CertificateError, match="RCAC fabric id 0x9999 differs from NOC fabric id 0x1122"):
        verify_chain(noc.to_tlv(), icac.to_tlv(), root.to_tlv())


def test_verify_chain_checks_validity_period():
    not_after = matter_time(datetime(2030, 1, 1, tzinfo=UTC))
    root, icac, noc, _ = minted_fabric(not_after=not_after)
    args = (noc.to_tlv(), icac.to_tlv(), root.to_tlv())
    assert verify_chain(*args, at=not_after - 1)[0] == 0x42
    with pytest.raises(CertificateError, match="NOC has expired"):
        verify_chain(*args, at=not_after + 1)
    with pytest.raises(CertificateError, match="not valid yet"):
        verify_chain(*args, at=100)


def test_verify_chain_rejects_root_that_forbids_intermediates():
    rng = random.Random(3)
    root, root_key = mint_root(1, rng=rng, path_len=0)
    icac, icac_key = mint_icac(root, root_key, 2, rng=rng)
    noc, _ = mint_noc(icac, icac_key, 7, 8, rng=rng)
    with pytest.raises(CertificateError, match="path length 0"):
        verify_chain(noc.to_tlv(), icac.to_tlv(), root.to_tlv())


def test_minting_is_reproducible_from_a_seeded_rng():
    a, _, _, ka = minted_fabric(rng_seed=11)
    b, _, _, kb = minted_fabric(rng_seed=11)
    assert a.public_key == b.public_key and a.serial_number == b.serial_number
    assert public_key_bytes(ka) == public_key_bytes(kb)


def test_no_expiry_and_2050_times_encode_per_x509_rules():
    root, _, _, _ = minted_fabric()
    assert root.to_x509().not_valid_after_utc == datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC)
    late = matter_time(datetime(2060, 5, 1, tzinfo=UTC))
    rng = random.Random(2)
    r, _ = mint_root(1, rng=rng, not_after=late)
    assert b"\x18\x0f20600501000000Z" in r.to_der()  # GeneralizedTime from 2050 on
    assert b"\x17\x0d200101000000Z" in r.to_der()  # UTCTime before
    assert MatterCertificate.from_der(r.to_der()).not_after == late


@pytest.mark.parametrize("mutate, reason", [
    (lambda b: b[:-1], "truncated"),
    (lambda b: b + b"\x04\x05", "exactly one element"),
    (lambda b: b + b"\x00", "truncated"),
    (lambda b: b"\x17" + b[1:], "anonymous TLV structure"),
    (lambda b: b.replace(b"\x24\x07\x01", b"\x24\x07\x02", 1), "public key algorithm 2"),
    (lambda b: b.replace(b"\x30\x0b\x40", b"\x30\x0b\x3f", 1), "truncated"),
])
def test_from_tlv_rejects_malformed_input_with_a_reason(mutate, reason):
    with pytest.raises(CertificateError, match=reason):
        MatterCertificate.from_tlv(mutate(tlv("Root01")))


def test_from_der_rejects_certificates_without_a_matter_form():
    # The public CD signing cert uses a PrintableString-free CN but is not a Matter operational
    # cert; it still converts. A cert whose critical flags differ from the Matter rules cannot.
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "x")])
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(5).not_valid_before(datetime(2021, 1, 1)).not_valid_after(datetime(2031, 1, 1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=False)
            .sign(key, hashes.SHA256()))
    with pytest.raises(CertificateError, match="re-encoding differs"):
        MatterCertificate.from_x509(cert)
    with pytest.raises(CertificateError):
        MatterCertificate.from_der(der("Root01")[:-3])


def test_compressed_fabric_id_spec_example():
    # Matter Core spec 4.3.2.2 worked example.
    root_pk = bytes.fromhex(
        "044a9f42b1ca4840d37292bbc7f6a7e11e22200c976fc900dbc98a7a383a641cb8"
        "254a2e56d4e295a847943b4e3897c4a773e930277b4d9fbede8a052686bfacfa")
    assert compressed_fabric_id(root_pk, 0x2906C908D115D362) == bytes.fromhex("87E1B004E235A130")
    assert compressed_fabric_id(root_pk[1:], 0x2906C908D115D362) == bytes.fromhex("87E1B004E235A130")
    with pytest.raises(CertificateError):
        compressed_fabric_id(b"\x04" + bytes(10), 1)


def test_verify_chain_rejects_a_noc_naming_two_node_ids():
    rng = random.Random(4)
    root, key = mint_root(1, rng=rng)
    noc, _ = mint_noc(root, key, 5, 77, rng=rng)
    double = dataclasses.replace(noc, subject=((17, 5), (17, 6), (21, 77)))
    with pytest.raises(CertificateError, match="one certificate type"):
        verify_chain(double.to_tlv(), None, root.to_tlv())
