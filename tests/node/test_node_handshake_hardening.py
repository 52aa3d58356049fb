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
from test_node_runtime import CTRL, NODE, PAIRING, Wire, controller_side, handshake, make_core, make_fabric, pase

from matter_protocol import pase as pase_module
from matter_protocol.case import CaseInitiator
from matter_protocol.exchange import MessageLayer, Send
from matter_protocol.message import ProtocolId, SecureChannelOpcode
from matter_protocol.pase import PaseInitiator
from matter_protocol.status_report import GeneralCode, SecureChannelStatus, StatusReport
from twin.node.core import HANDSHAKE_TIMEOUT_MS, MAX_HANDSHAKES


def raw_first_message(opcode: int, payload: bytes, seed: int) -> bytes:
    """One datagram opening a fresh handshake (its own ephemeral node id and exchange)."""
    sender = MessageLayer(random.Random(seed))
    exchange = sender.new_exchange(sender.open_unsecured(NODE, 0), ProtocolId.SECURE_CHANNEL)
    (datagram,) = [a.data for a in sender.send(exchange, opcode, payload, 0) if isinstance(a, Send)]
    return datagram


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


# --- item 2 ------------------------------------------------------------------------------------

def test_a_replayed_sigma1_flood_is_bounded_and_a_genuine_peer_still_gets_through(tmp_path):
    core, commissioning = make_core(tmp_path)
    node_fabric, ctrl_fabric = make_fabric()
    commissioning.table.add_pending(node_fabric)
    commissioning.table.commit()
    # Genuine Sigma1s (each destination id matches the fabric, each with its own random), from
    # many ephemeral node ids and exchanges: each would hold a handshake and a session id.
    flood = 3 * MAX_HANDSHAKES + 5
    for seed in range(flood):
        (_, sigma1), = CaseInitiator(ctrl_fabric, 0x55, 7, rng=random.Random(1000 + seed)).start()
        peer = (f"fd99::{0x100 + seed:x}", 5540)   # many peers (one peer gets MAX_HANDSHAKES_PER_PEER)
        core.receive(raw_first_message(SecureChannelOpcode.CASE_Sigma1, sigma1, seed), peer, 1.0 + seed)
        assert len(core._handshakes) <= MAX_HANDSHAKES
        assert len(core.layer.sessions._reserved) <= MAX_HANDSHAKES
    assert core.counts["CASE failed"] == flood - MAX_HANDSHAKES  # the evicted ones
    # The same Sigma1 replayed (issue #32 item 2) is refused before any work: no slot, nobody evicted.
    held = set(core._handshakes)
    for seed in range(flood):
        core.receive(raw_first_message(SecureChannelOpcode.CASE_Sigma1, sigma1, 200 + seed), CTRL, 50.0)
    assert set(core._handshakes) == held and core.counts["replayed"] == flood
    # Junk evicts nobody: a malformed Sigma1 fails at once and leaves the others in place.
    held = set(core._handshakes)
    for seed in range(2 * MAX_HANDSHAKES):
        (report,) = send_first(core, SecureChannelOpcode.CASE_Sigma1, b"\x15", seed=500 + seed, now=100.0)
        assert (report.general_code, report.protocol_code) == INVALID
    assert set(core._handshakes) == held

    # Right after the flood, a genuine CASE and a genuine commissioning both succeed.
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    wire.now = core.clock.ms = 1000.0
    initiator = CaseInitiator(ctrl_fabric, 0x55, wire.ctrl.sessions.allocate_id(), rng=random.Random(8))
    initiators[handshake(wire, initiator, reports)] = initiator
    wire.run()
    assert initiator.result is not None
    assert pase(wire, PAIRING.passcode, initiators, reports).result is not None
    assert len(core._handshakes) <= MAX_HANDSHAKES


def test_handshakes_whose_unsecured_session_was_evicted_are_released(tmp_path):
    """The unsecured-session table evicts its least recently active entry when full; the
    handshake that ran on it must go with it (not linger, holding a session id, for 60 s)."""
    core, commissioning = make_core(tmp_path)
    node_fabric, ctrl_fabric = make_fabric()
    commissioning.table.add_pending(node_fabric)
    commissioning.table.commit()
    core.layer.sessions.max_unsecured = MAX_HANDSHAKES // 2  # sessions run out before handshake slots
    for seed in range(MAX_HANDSHAKES - 1):
        (_, sigma1), = CaseInitiator(ctrl_fabric, 0x55, 7, rng=random.Random(1000 + seed)).start()
        core.receive(raw_first_message(SecureChannelOpcode.CASE_Sigma1, sigma1, seed), (f"fd99::{0x100 + seed:x}", 1),
                     1.0 + seed)
    live = {id(s) for s in core.layer.sessions.unsecured_sessions()}
    assert all(id(h.exchange.session) in live for h in core._handshakes.values())
    assert len(core._handshakes) == MAX_HANDSHAKES // 2
    assert len(core.layer.sessions._reserved) == len(core._handshakes)


# --- item 10 -----------------------------------------------------------------------------------

def test_malformed_pbkdf_param_requests_are_not_failed_attempts(tmp_path):
    core, commissioning = make_core(tmp_path)
    for seed in range(25):
        (report,) = send_first(core, SecureChannelOpcode.PBKDFParamRequest, b"\x15\x18", seed=seed)
        assert (report.general_code, report.protocol_code) == INVALID
    assert commissioning.window.is_open and commissioning.window.failed_attempts == 0
    assert core.counts["PASE failed"] == 25
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    assert pase(wire, PAIRING.passcode, initiators, reports).result is not None


def test_a_pase_abandoned_after_pake2_counts_as_a_failed_attempt(tmp_path):
    """After Pake2 the peer can check its passcode guess against cB: that guess is spent,
    whether or not it ever sends Pake3. Otherwise stalling after Pake2 would be a way to try
    passcodes without limit."""
    core, commissioning = make_core(tmp_path)
    initiators, reports = {}, []
    stalled = PaseInitiator(PAIRING.passcode + 1, 0x101, rng=random.Random(5))
    answer = controller_side(initiators, reports)

    def stall_after_pake2(event, now):
        if event.opcode == SecureChannelOpcode.PASE_Pake2:
            return []  # never answers: the node waits for Pake3 until the handshake timeout
        return answer(event, now)
    wire = Wire(core, stall_after_pake2)
    initiators[handshake(wire, stalled, reports)] = stalled
    wire.run()
    assert commissioning.window.failed_attempts == 0
    wire.now += HANDSHAKE_TIMEOUT_MS
    core.clock.ms = wire.now
    wire.feed(core.on_timer(wire.now), "ctrl")
    assert commissioning.window.failed_attempts == 1 and core._handshakes == {}
