"""PASE initiator <-> responder in memory: keys agree, wrong passcode and protocol abuse fail."""
import random

import pytest
from chip.tlv import uint

from matter_protocol.message import SecureChannelOpcode as Opcode
from matter_protocol.pase import PaseInitiator, PaseResponder, decode_struct, encode_struct
from matter_protocol.spake2p import make_verifier
from matter_protocol.status_report import GeneralCode, StatusReport
from matter_protocol.status_report import SecureChannelStatus as ProtocolCode

SALT = b"SPAKE2P Key Salt"
ITER = 1000
PASSCODE = 20202021
VERIFIER = make_verifier(PASSCODE, SALT, ITER)


def run(initiator, responder, first=None):
    """Shuttle messages until both sides are quiet; returns the list of (sender, opcode, payload)."""
    log = []
    msgs, to = (first if first is not None else initiator.start()), responder
    while msgs:
        out = []
        for op, payload in msgs:
            log.append(("I" if to is responder else "R", op, payload))
            out += to.handle(op, payload)
        msgs, to = out, (initiator if to is responder else responder)
    return log


def pair(passcode=PASSCODE, seed=1, **kw):
    rng = random.Random(seed)
    responder = PaseResponder(VERIFIER, SALT, ITER, local_session_id=0x1234, rng=rng, **kw.pop("responder", {}))
    initiator = PaseInitiator(passcode, local_session_id=0x4321, rng=rng, **kw.pop("initiator", {}))
    return initiator, responder, run(initiator, responder)


def test_pase_establishes_identical_session_keys():
    initiator, responder, log = pair(
        responder={"session_params": {"SESSION_IDLE_INTERVAL": 500, "SESSION_ACTIVE_INTERVAL": 300}},
        initiator={"session_params": {"SESSION_ACTIVE_THRESHOLD": 4000}},
    )
    assert [op for _, op, _ in log] == [0x20, 0x21, 0x22, 0x23, 0x24, 0x40]
    assert StatusReport.decode(log[-1][2]) == \
        StatusReport.secure_channel(GeneralCode.SUCCESS, ProtocolCode.SESSION_ESTABLISHMENT_SUCCESS)
    i, r = initiator.result, responder.result
    assert i is not None and r is not None and initiator.error is None and responder.error is None
    assert i.keys == r.keys
    assert len(i.keys.i2r_key) == len(i.keys.r2i_key) == len(i.keys.attestation_challenge) == 16
    assert len({i.keys.i2r_key, i.keys.r2i_key, i.keys.attestation_challenge}) == 3
    assert (i.local_session_id, i.peer_session_id) == (0x4321, 0x1234)
    assert (r.local_session_id, r.peer_session_id) == (0x1234, 0x4321)
    assert i.is_initiator and not r.is_initiator
    assert i.peer_node_id is None and i.fabric_index is None
    assert i.peer_mrp == {"SESSION_IDLE_INTERVAL": 500, "SESSION_ACTIVE_INTERVAL": 300}
    assert r.peer_mrp == {"SESSION_ACTIVE_THRESHOLD": 4000}


def test_pase_is_deterministic_with_a_seeded_rng_and_fresh_otherwise():
    a, _, log_a = pair(seed=5)
    b, _, log_b = pair(seed=5)
    assert log_a == log_b and a.result.keys == b.result.keys
    c, _, _ = pair(seed=6)
    assert c.result.keys != a.result.keys
    # Without an rng, the system CSPRNG is used: two runs differ.
    r1 = PaseResponder(VERIFIER, SALT, ITER, 1)
    r2 = PaseResponder(VERIFIER, SALT, ITER, 1)
    i1 = PaseInitiator(PASSCODE, 2)
    i2 = PaseInitiator(PASSCODE, 2)
    run(i1, r1), run(i2, r2)
    assert i1.result.keys == r1.result.keys and i1.result.keys != i2.result.keys


def test_pbkdf_parameters_are_sent_and_used():
    initiator, responder, log = pair()
    response = decode_struct(log[1][2], "resp")
    assert response[4] == {1: ITER, 2: SALT}
    # An initiator that already knows them says so and the node leaves them out.
    rng = random.Random(3)
    responder = PaseResponder(VERIFIER, SALT, ITER, 9, rng=rng)
    initiator = PaseInitiator(PASSCODE, 8, rng=rng, pbkdf_parameters=(ITER, SALT))
    log = run(initiator, responder)
    assert decode_struct(log[0][2], "req")[4] is True
    assert 4 not in decode_struct(log[1][2], "resp")
    assert initiator.result.keys == responder.result.keys


def test_wrong_passcode_fails_on_both_sides_with_invalid_parameter():
    initiator, responder, log = pair(passcode=PASSCODE + 1)
    assert initiator.result is None and responder.result is None
    assert initiator.error == ProtocolCode.INVALID_PARAMETER
    assert responder.error == ProtocolCode.INVALID_PARAMETER
    assert "cB" in initiator.error_message
    # The initiator detected the mismatch at Pake2 and told the node; Pake3 never went out.
    assert [op for _, op, _ in log] == [0x20, 0x21, 0x22, 0x23, 0x40]
    assert StatusReport.decode(log[-1][2]) == \
        StatusReport.secure_channel(GeneralCode.FAILURE, ProtocolCode.INVALID_PARAMETER)


def test_responder_rejects_bad_cA():
    rng = random.Random(4)
    responder = PaseResponder(VERIFIER, SALT, ITER, 9, rng=rng)
    initiator = PaseInitiator(PASSCODE, 8, rng=rng)
    (op, req), = initiator.start()
    (op, resp), = responder.handle(op, req)
    (op, pake1), = initiator.handle(op, resp)
    (op, pake2), = responder.handle(op, pake1)
    (op, pake3), = initiator.handle(op, pake2)
    cA = decode_struct(pake3, "pake3")[1]
    out = responder.handle(Opcode.PASE_Pake3, encode_struct({1: bytes([cA[0] ^ 1]) + cA[1:]}))
    assert out == [(Opcode.StatusReport, bytes.fromhex("0100000000000200"))]
    assert responder.error == ProtocolCode.INVALID_PARAMETER and responder.result is None
    # Finished: later messages, even the right one, are ignored.
    assert responder.handle(Opcode.PASE_Pake3, pake3) == []
    assert responder.result is None


def test_second_pbkdf_param_request_on_the_exchange_is_rejected():
    rng = random.Random(2)
    responder = PaseResponder(VERIFIER, SALT, ITER, 9, rng=rng)
    (op, req), = PaseInitiator(PASSCODE, 8, rng=rng).start()
    assert responder.handle(op, req)[0][0] == Opcode.PBKDFParamResponse
    out = responder.handle(op, req)
    assert out == [(Opcode.StatusReport, bytes.fromhex("0100000000000200"))]
    assert responder.error == ProtocolCode.INVALID_PARAMETER
    assert "PBKDFParamRequest" in responder.error_message or "0x20" in responder.error_message


@pytest.mark.parametrize("payload, why", [
    (b"", "TLV"),
    (b"\x15\x30\x01", "TLV"),
    (encode_struct({1: b"x" * 31, 2: uint(1), 3: uint(0), 4: False}), "initiatorRandom"),
    (encode_struct({1: b"x" * 32, 2: uint(70000), 3: uint(0), 4: False}), "initiatorSessionId"),
    (encode_struct({1: b"x" * 32, 2: uint(1), 3: uint(1), 4: False}), "passcodeId"),
    (encode_struct({1: b"x" * 32, 2: uint(1), 3: uint(0)}), "hasPBKDFParameters"),
    (encode_struct({1: b"x" * 32, 2: uint(1), 3: uint(0), 4: False, 5: b"no"}), "session parameters"),
])
def test_malformed_pbkdf_param_request_fails_cleanly(payload, why):
    responder = PaseResponder(VERIFIER, SALT, ITER, 9, rng=random.Random(0))
    out = responder.handle(Opcode.PBKDFParamRequest, payload)
    assert out == [(Opcode.StatusReport, bytes.fromhex("0100000000000200"))]
    assert responder.error == ProtocolCode.INVALID_PARAMETER
    assert why in responder.error_message


def test_initiator_rejects_bad_pbkdf_parameters_and_foreign_random():
    for params, why in [({1: uint(10), 2: SALT}, "iterations"), ({1: uint(ITER), 2: b"salt"}, "salt")]:
        initiator = PaseInitiator(PASSCODE, 8, rng=random.Random(0))
        (_, req), = initiator.start()
        rnd = decode_struct(req, "req")[1]
        out = initiator.handle(Opcode.PBKDFParamResponse, encode_struct({1: rnd, 2: b"r" * 32, 3: uint(5), 4: params}))
        assert out[0][0] == Opcode.StatusReport and initiator.error == ProtocolCode.INVALID_PARAMETER
        assert why in initiator.error_message
    initiator = PaseInitiator(PASSCODE, 8, rng=random.Random(0))
    initiator.start()
    response = encode_struct({1: b"z" * 32, 2: b"r" * 32, 3: uint(5), 4: {1: uint(ITER), 2: SALT}})
    initiator.handle(Opcode.PBKDFParamResponse, response)
    assert "initiatorRandom" in initiator.error_message


def test_invalid_pake1_point_fails():
    rng = random.Random(2)
    responder = PaseResponder(VERIFIER, SALT, ITER, 9, rng=rng)
    initiator = PaseInitiator(PASSCODE, 8, rng=rng)
    (op, req), = initiator.start()
    responder.handle(op, req)
    out = responder.handle(Opcode.PASE_Pake1, encode_struct({1: b"\x04" + b"\x01" * 64}))
    assert out[0][0] == Opcode.StatusReport and responder.error == ProtocolCode.INVALID_PARAMETER
    assert "curve" in responder.error_message


def test_failure_status_report_from_peer_ends_handshake_without_reply():
    rng = random.Random(2)
    responder = PaseResponder(VERIFIER, SALT, ITER, 9, rng=rng)
    (op, req), = PaseInitiator(PASSCODE, 8, rng=rng).start()
    responder.handle(op, req)
    assert responder.handle(Opcode.StatusReport, bytes.fromhex("0100000000000400")) == []
    assert responder.error == ProtocolCode.BUSY and responder.result is None


def test_bad_local_configuration_is_rejected_up_front():
    with pytest.raises(Exception, match="97"):
        PaseResponder(VERIFIER[:-1], SALT, ITER, 1)
    with pytest.raises(Exception, match="iterations"):
        PaseResponder(VERIFIER, SALT, 10, 1)
    with pytest.raises(ValueError, match="session id"):
        PaseResponder(VERIFIER, SALT, ITER, 0)
    with pytest.raises(ValueError, match="unknown session parameters"):
        PaseInitiator(PASSCODE, 1, session_params={"IDLE": 5})
