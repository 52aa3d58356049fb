"""CASE initiator <-> responder in memory with minted certificates; spec vectors for the KDFs."""
import random

import pytest
from chip.tlv import uint

from matter_protocol import case as case_mod
from matter_protocol import certs
from matter_protocol.case import CaseInitiator, CaseResponder, FabricInfo, destination_id
from matter_protocol.crypto import Crypto_GenerateKeypair
from matter_protocol.message import SecureChannelOpcode as Opcode
from matter_protocol.pase import decode_struct, encode_struct
from matter_protocol.status_report import GeneralCode, StatusReport
from matter_protocol.status_report import SecureChannelStatus as ProtocolCode

h = bytes.fromhex
FABRIC_ID = 0x2906C908D115D362
EPOCH_KEY = bytes(range(0x10, 0x20))
INVALID = bytes.fromhex("0100000000000200")


def run(initiator, responder, first=None):
    log = []
    msgs, to = (first if first is not None else initiator.start()), responder
    while msgs:
        out = []
        for op, payload in msgs:
            log.append(("I" if to is responder else "R", op, payload))
            out += to.handle(op, payload)
        msgs, to = out, (initiator if to is responder else responder)
    return log


def make_fabric(seed=1, icac=False, fabric_id=FABRIC_ID, node_ids=(0x11, 0x22), not_after=0, cats=()):
    """An RCAC (optionally an ICAC) and one NOC per node id: FabricInfo for each node."""
    rng = random.Random(seed)
    root, root_key = certs.mint_root(1, fabric_id, rng=rng)
    issuer, issuer_key = root, root_key
    if icac:
        issuer, issuer_key = certs.mint_icac(root, root_key, 2, fabric_id, rng=rng)
    fabrics = []
    for index, node_id in enumerate(node_ids, start=1):
        noc, key = certs.mint_noc(issuer, issuer_key, node_id, fabric_id, rng=rng, not_after=not_after, cats=cats)
        fabrics.append(FabricInfo.from_certificates(index, root.to_tlv(), noc.to_tlv(),
                                                    issuer.to_tlv() if icac else None, key, EPOCH_KEY))
    return fabrics


def test_destination_id_matches_spec_example():
    root_pub = h("044a9f42b1ca4840d37292bbc7f6a7e11e22200c976fc900dbc98a7a383a641cb8"
                 "254a2e56d4e295a847943b4e3897c4a773e930277b4d9fbede8a052686bfacfa")
    ipk = h("9bc61cd9c62a2df6d64dfcaa9dc472d4")
    initiator_random = h("7e171231568dfa17206b3accf8faec2f4d21b580113196f47c7c4deb810a73dc")
    expected = h("dc35dd5fc9134cc5544538c9c3fc4297c1ec3370c839136a80e10796451d4c53")
    assert destination_id(ipk, initiator_random, root_pub, FABRIC_ID, 0xCD5544AA7B13EF14) == expected
    assert destination_id(ipk, initiator_random, root_pub, FABRIC_ID, 0xCD5544AA7B13EF15) != expected


def test_ipk_operational_key_matches_chip_group_key_vector():
    root_pub = h("044a9f42b1ca4840d37292bbc7f6a7e11e22200c976fc900dbc98a7a383a641cb8"
                 "254a2e56d4e295a847943b4e3897c4a773e930277b4d9fbede8a052686bfacfa")
    fabric = FabricInfo(fabric_index=1, fabric_id=FABRIC_ID, node_id=1, root_public_key=root_pub,
                        ipk_epoch_key=bytes(16), rcac=b"", noc=b"", icac=None, operational_key=None)
    assert fabric.compressed_fabric_id == h("87e1b004e235a130")
    assert fabric.ipk == h("c5f2690187115150c356ad93b385bb0f")


@pytest.mark.parametrize("icac", [False, True], ids=["root+noc", "root+icac+noc"])
def test_case_establishes_identical_session_keys(icac):
    node, controller = make_fabric(icac=icac)
    rng = random.Random(9)
    responder = CaseResponder([node], local_session_id=0x0101, rng=rng,
                              session_params={"SESSION_IDLE_INTERVAL": 500})
    initiator = CaseInitiator(controller, peer_node_id=node.node_id, local_session_id=0x0202, rng=rng,
                              session_params={"SESSION_ACTIVE_INTERVAL": 300})
    log = run(initiator, responder)
    assert [op for _, op, _ in log] == [0x30, 0x31, 0x32, 0x40]
    assert StatusReport.decode(log[-1][2]) == \
        StatusReport.secure_channel(GeneralCode.SUCCESS, ProtocolCode.SESSION_ESTABLISHMENT_SUCCESS)
    i, r = initiator.result, responder.result
    assert i is not None and r is not None
    assert i.keys == r.keys and len(set(vars(i.keys).values())) == 3
    assert (i.peer_node_id, r.peer_node_id) == (0x11, 0x22)
    assert (i.fabric_index, r.fabric_index) == (controller.fabric_index, node.fabric_index)
    assert (i.local_session_id, i.peer_session_id) == (0x0202, 0x0101)
    assert (r.local_session_id, r.peer_session_id) == (0x0101, 0x0202)
    assert i.peer_mrp == {"SESSION_IDLE_INTERVAL": 500} and r.peer_mrp == {"SESSION_ACTIVE_INTERVAL": 300}
    # The certificates travel encrypted: the NOC bytes never appear in the clear.
    assert all(node.noc not in payload and controller.noc not in payload for _, _, payload in log)


def test_peer_case_authenticated_tags_are_exposed():
    node, controller = make_fabric(cats=(0x00010001, 0xABCD0002))
    responder = CaseResponder([node], 1, rng=random.Random(0))
    initiator = CaseInitiator(controller, node.node_id, 2, rng=random.Random(1))
    run(initiator, responder)
    assert responder.result is not None
    assert responder.peer_cats == initiator.peer_cats == (0x00010001, 0xABCD0002)


def test_case_is_reproducible_with_a_seeded_rng():
    node, controller = make_fabric()
    runs = []
    for _ in range(2):
        rng = random.Random(4)
        i, r = CaseInitiator(controller, 0x11, 5, rng=rng), CaseResponder([node], 6, rng=rng)
        runs.append((run(i, r), i.result.keys))
    assert runs[0] == runs[1]
    i, r = CaseInitiator(controller, 0x11, 5), CaseResponder([node], 6)
    run(i, r)
    assert i.result.keys == r.result.keys != runs[0][1]


def test_responder_picks_the_fabric_the_destination_names():
    other = make_fabric(seed=2, fabric_id=0x77, node_ids=(0x11, 0x33))
    node, controller = make_fabric(seed=1)
    node = FabricInfo(**{**vars(node), "fabric_index": 5})
    responder = CaseResponder([other[0], node], 1, rng=random.Random(0))
    initiator = CaseInitiator(controller, 0x11, 2, rng=random.Random(1))
    run(initiator, responder)
    assert responder.result.fabric_index == 5 and initiator.result.keys == responder.result.keys


def test_wrong_ipk_fails_with_no_shared_trust_roots():
    node, controller = make_fabric()
    controller = FabricInfo(**{**vars(controller), "ipk_epoch_key": bytes(16)})
    responder = CaseResponder([node], 1, rng=random.Random(0))
    initiator = CaseInitiator(controller, node.node_id, 2, rng=random.Random(1))
    log = run(initiator, responder)
    assert [op for _, op, _ in log] == [0x30, 0x40]
    assert StatusReport.decode(log[-1][2]) == \
        StatusReport.secure_channel(GeneralCode.FAILURE, ProtocolCode.NO_SHARED_TRUST_ROOTS)
    assert responder.error == initiator.error == ProtocolCode.NO_SHARED_TRUST_ROOTS
    assert responder.result is None and initiator.result is None
    assert "destinationId" in responder.error_message


def test_wrong_target_node_id_fails_with_no_shared_trust_roots():
    node, controller = make_fabric()
    responder = CaseResponder([node], 1, rng=random.Random(0))
    initiator = CaseInitiator(controller, node.node_id + 1, 2, rng=random.Random(1))
    run(initiator, responder)
    assert responder.error == initiator.error == ProtocolCode.NO_SHARED_TRUST_ROOTS


def test_tampered_sigma2_signature_is_rejected(monkeypatch):
    node, controller = make_fabric()
    responder = CaseResponder([node], 1, rng=random.Random(0))
    initiator = CaseInitiator(controller, node.node_id, 2, rng=random.Random(1))
    (op, sigma1), = initiator.start()
    real_sign = case_mod.Crypto_Sign

    def flipped(key, message):
        sig = real_sign(key, message)
        return sig[:10] + bytes([sig[10] ^ 0x40]) + sig[11:]

    monkeypatch.setattr(case_mod, "Crypto_Sign", flipped)
    (op, sigma2), = responder.handle(op, sigma1)
    monkeypatch.setattr(case_mod, "Crypto_Sign", real_sign)
    out = initiator.handle(op, sigma2)
    assert out == [(Opcode.StatusReport, INVALID)]
    assert initiator.error == ProtocolCode.INVALID_PARAMETER and initiator.result is None
    assert "signature" in initiator.error_message
    assert responder.handle(*out[0]) == [] and responder.error == ProtocolCode.INVALID_PARAMETER


def test_tampered_sigma2_ciphertext_fails_the_mic():
    node, controller = make_fabric()
    responder = CaseResponder([node], 1, rng=random.Random(0))
    initiator = CaseInitiator(controller, node.node_id, 2, rng=random.Random(1))
    (op, sigma1), = initiator.start()
    (op, sigma2), = responder.handle(op, sigma1)
    s = decode_struct(sigma2, "sigma2")
    enc = bytearray(s[4])
    enc[20] ^= 1
    s[4] = bytes(enc)
    s[2] = uint(s[2])
    assert initiator.handle(op, encode_struct(s)) == [(Opcode.StatusReport, INVALID)]
    assert "MIC" in initiator.error_message


def test_initiator_with_a_foreign_chain_is_rejected_at_sigma3():
    """Knowing the IPK and root key is not enough: the NOC must chain to the node's root."""
    node, _ = make_fabric(seed=1)
    _, stranger = make_fabric(seed=3)  # same fabric id, different root CA
    impostor = FabricInfo(**{**vars(stranger), "rcac": node.rcac, "root_public_key": node.root_public_key})
    responder = CaseResponder([node], 1, rng=random.Random(0))
    # The impostor can't verify the node either (its rcac is the node's, fine), so it gets to Sigma3.
    initiator = CaseInitiator(impostor, node.node_id, 2, rng=random.Random(1))
    log = run(initiator, responder)
    assert [op for _, op, _ in log] == [0x30, 0x31, 0x32, 0x40]
    assert responder.error == initiator.error == ProtocolCode.INVALID_PARAMETER
    assert "certificate chain" in responder.error_message
    assert responder.result is None and initiator.result is None


def test_expired_peer_certificate_is_rejected_when_time_is_given():
    node, controller = make_fabric(not_after=certs.DEFAULT_NOT_BEFORE + 1000)
    now = certs.DEFAULT_NOT_BEFORE + 500
    i, r = CaseInitiator(controller, 0x11, 2, at=now), CaseResponder([node], 1, at=now)
    run(i, r)
    assert i.result is not None and i.result.keys == r.result.keys
    later = certs.DEFAULT_NOT_BEFORE + 2000
    i, r = CaseInitiator(controller, 0x11, 2, at=later), CaseResponder([node], 1, at=later)
    run(i, r)
    assert i.error == ProtocolCode.INVALID_PARAMETER and "expired" in i.error_message


def test_resumption_request_is_answered_with_a_full_handshake():
    node, controller = make_fabric()
    responder = CaseResponder([node], 1, rng=random.Random(0))
    initiator = CaseInitiator(controller, node.node_id, 2, rng=random.Random(1))
    (op, sigma1), = initiator.start()
    s = decode_struct(sigma1, "sigma1")
    s.update({2: uint(s[2]), 6: b"\x04" * 16, 7: b"\x05" * 16})
    sigma1 = encode_struct(s)
    initiator._messages[0] = sigma1  # as if the initiator had sent the resumption fields itself
    log = run(initiator, responder, first=[(op, sigma1)])
    assert responder.resumption_requested
    assert [op for _, op, _ in log] == [0x30, 0x31, 0x32, 0x40]
    assert initiator.result.keys == responder.result.keys


def _sigma1(override=None):
    fields = {1: b"r" * 32, 2: uint(1), 3: b"d" * 32, 4: b"\x04" + b"\x01" * 64}
    fields.update(override or {})
    return encode_struct(fields)


@pytest.mark.parametrize("payload, why", [
    (b"\x15\x18\x18", "TLV"),
    (_sigma1({1: b"r" * 31}), "initiatorRandom"),
    (_sigma1({2: uint(0x10000)}), "initiatorSessionId"),
    (_sigma1({3: b"d" * 33}), "destinationId"),
    (_sigma1({4: b"\x04" * 64}), "initiatorEphPubKey"),
    (_sigma1({6: b"\x04" * 16}), "resumptionID and initiatorResumeMIC"),
    (_sigma1({6: b"\x04" * 15, 7: b"\x05" * 16}), "resumptionID"),
])
def test_malformed_sigma1_fails_cleanly(payload, why):
    node, _ = make_fabric()
    responder = CaseResponder([node], 1, rng=random.Random(0))
    assert responder.handle(Opcode.CASE_Sigma1, payload) == [(Opcode.StatusReport, INVALID)]
    assert responder.error == ProtocolCode.INVALID_PARAMETER and why in responder.error_message


def test_valid_destination_with_an_invalid_ephemeral_point_fails():
    node, controller = make_fabric()
    rnd = b"r" * 32
    payload = _sigma1({1: rnd, 3: node.destination_id(rnd, node.node_id)})
    responder = CaseResponder([node], 1, rng=random.Random(0))
    assert responder.handle(Opcode.CASE_Sigma1, payload) == [(Opcode.StatusReport, INVALID)]
    assert "ephemeral" in responder.error_message


def test_out_of_order_messages_fail():
    node, controller = make_fabric()
    responder = CaseResponder([node], 1, rng=random.Random(0))
    assert responder.handle(Opcode.CASE_Sigma3, encode_struct({1: b"x" * 40})) == [(Opcode.StatusReport, INVALID)]
    assert "unexpected" in responder.error_message
    initiator = CaseInitiator(controller, 0x11, 2)
    initiator.start()
    assert initiator.handle(Opcode.CASE_Sigma2_Resume, b"\x15\x18")[0][0] == Opcode.StatusReport
    assert initiator.error == ProtocolCode.INVALID_PARAMETER


def test_fabric_info_rejects_mismatched_key():
    rng = random.Random(1)
    root, root_key = certs.mint_root(1, FABRIC_ID, rng=rng)
    noc, _ = certs.mint_noc(root, root_key, 0x11, FABRIC_ID, rng=rng)
    with pytest.raises(certs.CertificateError, match="does not match"):
        FabricInfo.from_certificates(1, root.to_tlv(), noc.to_tlv(), None, Crypto_GenerateKeypair(rng), EPOCH_KEY)
