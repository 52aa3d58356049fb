"""Issue #12, hardening of the node's handshakes (sans-IO, `NodeCore` fed bytes):

- item 1: a malformed or undecodable handshake message ends that handshake at once, answers
  StatusReport(FAILURE, INVALID_PARAMETER) and frees its slot and session id;
- item 2: half-open handshakes are bounded (`MAX_HANDSHAKES`), the oldest is evicted when full,
  so a replayed-Sigma1 flood neither grows state nor keeps a genuine peer out;
- item 10: only a PASE exchange in which a passcode was tried (the node answered Pake1 with
  Pake2) counts toward the 20 failed attempts that close the commissioning window.
"""
from __future__ import annotations

import random

import pytest
from test_node_runtime import CTRL, NODE, PAIRING, Wire, controller_side, make_core, pase

from twin.protocol import pase as pase_module
from twin.protocol.exchange import MessageLayer, Send
from twin.protocol.message import ProtocolId, SecureChannelOpcode
from twin.protocol.status_report import GeneralCode, SecureChannelStatus, StatusReport


def status_reports(core_actions, ctrl: MessageLayer) -> list[StatusReport]:
    """What the node answered, as the sending controller decodes it."""
    out = []
    for action in core_actions:
        if isinstance(action, Send):
            for event in ctrl.receive(action.data, NODE, 1):
                if getattr(event, "opcode", None) == SecureChannelOpcode.StatusReport:
                    out.append(StatusReport.decode(event.payload))
    return out


def send_first(core, opcode: int, payload: bytes, seed: int, now: float = 1.0) -> list[StatusReport]:
    ctrl = MessageLayer(random.Random(seed))
    exchange = ctrl.new_exchange(ctrl.open_unsecured(NODE, 0), ProtocolId.SECURE_CHANNEL)
    (datagram,) = [a.data for a in ctrl.send(exchange, opcode, payload, 0) if isinstance(a, Send)]
    return status_reports(core.receive(datagram, CTRL, now), ctrl)


INVALID = (GeneralCode.FAILURE, SecureChannelStatus.INVALID_PARAMETER)


# --- item 1 ------------------------------------------------------------------------------------

@pytest.mark.parametrize("opcode", [SecureChannelOpcode.PBKDFParamRequest, SecureChannelOpcode.CASE_Sigma1])
@pytest.mark.parametrize("payload", [b"\x15", b"\x15\x18", b"\x15\x30\x01", b""])
def test_a_malformed_first_message_ends_its_handshake_at_once(tmp_path, opcode, payload):
    core, commissioning = make_core(tmp_path)
    (report,) = send_first(core, opcode, payload, seed=1)
    assert (report.general_code, report.protocol_code) == INVALID
    assert core._handshakes == {} and not core.layer.sessions._reserved
    # The next commissioner is served at once, not answered BUSY for 60 s.
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    assert pase(wire, PAIRING.passcode, initiators, reports).result is not None


def test_an_unexpected_decoder_failure_still_ends_the_handshake_in_one_place(tmp_path, monkeypatch):
    """The old struct decoder raised IndexError on b'\\x15'. Whatever a decoder raises, the
    handshake ends at once with the StatusReport the spec calls for (the CHIP SDK answers
    every PASE/CASE processing error with FAILURE / INVALID_PARAMETER), and frees its slot."""
    core, commissioning = make_core(tmp_path)

    def broken_decoder(data):
        raise IndexError("index out of range")
    monkeypatch.setattr(pase_module, "decode_tlv", broken_decoder)
    for opcode, seed in ((SecureChannelOpcode.PBKDFParamRequest, 1), (SecureChannelOpcode.CASE_Sigma1, 2)):
        (report,) = send_first(core, opcode, b"\x15", seed=seed)
        assert (report.general_code, report.protocol_code) == INVALID
        assert core._handshakes == {} and not core.layer.sessions._reserved
    monkeypatch.undo()
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    assert pase(wire, PAIRING.passcode, initiators, reports).result is not None
    assert core.counts["PASE failed"] == 1 and core.counts["CASE failed"] == 1
