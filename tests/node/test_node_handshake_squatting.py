"""Issue #32, sans-IO (`NodeCore` fed bytes): nobody on the LAN can lock a node out.

- item 1: a PASE squatter (a well-formed PBKDFParamRequest whose reply it acks, then silence,
  again and again) neither keeps a commissioner out nor closes the window;
- item 2: replayed Sigma1s cost no Sigma2 and evict nobody: a genuine CASE gets through 100 of them;
- item 8: a second handshake message on an exchange whose last reply is not acked yet gets the
  handshake's StatusReport, not an ExchangeError traceback;
- peer-caused errors are logged at a bounded rate.
"""
from __future__ import annotations

import logging
import random

from test_node_handshake_hardening import raw_first_message, status_reports
from test_node_runtime import NODE, PAIRING, Wire, controller_side, make_core, make_fabric, pase

from matter_protocol.case import CaseInitiator
from matter_protocol.exchange import Deliver, MessageLayer, Send
from matter_protocol.message import ProtocolId, SecureChannelOpcode
from matter_protocol.pase import PaseInitiator
from matter_protocol.status_report import GeneralCode, SecureChannelStatus
from twin.node.core import MAX_HANDSHAKES_PER_PEER, MAX_PASE_HANDSHAKES

SQUATTER = ("fd99::66", 5540)
REPLAYER = ("fd99::77", 5540)
INVALID = (GeneralCode.FAILURE, SecureChannelStatus.INVALID_PARAMETER)


class Squatter:
    """One PBKDFParamRequest a pair: the request, then the ack of the node's reply; then silence."""

    def __init__(self, core, seed=7):
        self.core, self.layer, self.seed = core, MessageLayer(random.Random(seed)), seed

    def pair(self, now):
        self.seed += 1
        exchange = self.layer.new_exchange(self.layer.open_unsecured(NODE, now), ProtocolId.SECURE_CHANNEL)
        (opcode, payload), = PaseInitiator(1, 0x200, rng=random.Random(self.seed)).start()
        to_node = [a.data for a in self.layer.send(exchange, opcode, payload, now) if isinstance(a, Send)]
        while to_node:
            for action in self.core.receive(to_node.pop(0), SQUATTER, now):
                if isinstance(action, Send):
                    for event in self.layer.receive(action.data, NODE, now):
                        if isinstance(event, Deliver):   # the PBKDFParamResponse: ack it, say nothing
                            to_node += [a.data for a in event.exchange.close(now) if isinstance(a, Send)]


class SquattedWire(Wire):
    """A Wire on which the squatter sends `per_step` pairs before every message to the node."""

    def __init__(self, core, on_deliver, squatter, per_step):
        super().__init__(core, on_deliver)
        self.squatter, self.per_step = squatter, per_step

    def run(self):
        while self.queue:
            if self.queue[0][0] == "node":
                for _ in range(self.per_step):
                    self.now += 1000
                    self.squatter.pair(self.now)
            super_queue, self.queue = self.queue, self.queue[:1]
            Wire.run(self)
            self.queue += super_queue[1:]


def test_a_commissioner_succeeds_at_once_beside_a_pase_squatter(tmp_path):
    core, commissioning = make_core(tmp_path)
    squatter = Squatter(core)
    for second in range(600):   # ten minutes of one pair a second: what locked the node out before
        squatter.pair(1000.0 * second)
    assert sum(h.kind == "PASE" for h in core._handshakes.values()) <= MAX_PASE_HANDSHAKES
    initiators, reports = {}, []
    # The squatter keeps at it between every message of the commissioner, more than once.
    wire = SquattedWire(core, controller_side(initiators, reports), squatter, per_step=MAX_PASE_HANDSHAKES - 1)
    wire.now = core.clock.ms = 600_000.0
    assert pase(wire, PAIRING.passcode, initiators, reports).result is not None
    assert not any(r.general_code == GeneralCode.BUSY for r in reports)
    # The squatter tried no passcode: the window stays open, with no failed attempt.
    assert commissioning.window.is_open and commissioning.window.failed_attempts == 0
    assert core.counts["PASE established"] == 1


def test_a_genuine_case_gets_through_100_replayed_sigma1(tmp_path):
    core, commissioning = make_core(tmp_path)
    node_fabric, ctrl_fabric = make_fabric()
    commissioning.table.add_pending(node_fabric)
    commissioning.table.commit()
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = CaseInitiator(ctrl_fabric, 0x55, wire.ctrl.sessions.allocate_id(), rng=random.Random(8))
    exchange = wire.ctrl.new_exchange(wire.ctrl.open_unsecured(NODE, 0), ProtocolId.SECURE_CHANNEL)
    initiators[exchange] = initiator
    (opcode, sigma1), = initiator.start()
    wire.feed(wire.ctrl.send(exchange, opcode, sigma1, 0), "node")
    wire.feed(core.receive(wire.queue.pop(0)[1], ("fd99::2", 40000), 1), "ctrl")   # Sigma2 now queued
    for seed in range(100):   # between the controller's Sigma1 and its Sigma3, each from a new exchange
        replayer = MessageLayer(random.Random(1000 + seed))
        replay = replayer.new_exchange(replayer.open_unsecured(NODE, 0), ProtocolId.SECURE_CHANNEL)
        (datagram,) = [a.data for a in replayer.send(replay, opcode, sigma1, 0) if isinstance(a, Send)]
        (report,) = status_reports(core.receive(datagram, REPLAYER, 2 + seed), replayer)
        assert (report.general_code, report.protocol_code) == INVALID
        assert len(core._handshakes) == 1   # no Sigma2 computed, no slot held
    assert core.counts["replayed"] == 100 and core.counts["CASE failed"] == 0
    wire.run()
    assert initiator.result is not None and core.counts["CASE established"] == 1


def test_a_message_before_the_ack_of_the_last_reply_gets_a_status_report_not_a_traceback(tmp_path, caplog):
    core, commissioning = make_core(tmp_path)
    ctrl = MessageLayer(random.Random(3))
    exchange = ctrl.new_exchange(ctrl.open_unsecured(NODE, 0), ProtocolId.SECURE_CHANNEL)
    (opcode, payload), = PaseInitiator(PAIRING.passcode, 1, rng=random.Random(4)).start()
    (first,) = [a.data for a in ctrl.send(exchange, opcode, payload, 0) if isinstance(a, Send)]
    core.receive(first, ("fd99::2", 40000), 1)   # the node's PBKDFParamResponse is not acked
    exchange.mrp.take_ack()   # the controller forgets to ack it, and sends again on the exchange
    exchange.mrp.outstanding = None
    (second,) = [a.data for a in ctrl.send(exchange, SecureChannelOpcode.PASE_Pake1, b"\x15\x18", 2)
                 if isinstance(a, Send)]
    with caplog.at_level(logging.INFO):
        answer = core.receive(second, ("fd99::2", 40000), 3)
    assert not [r for r in caplog.records if r.exc_info or r.levelno >= logging.ERROR]
    (report,) = status_reports(answer, ctrl)
    assert (report.general_code, report.protocol_code) == INVALID
    assert core._handshakes == {} and not core.layer.sessions._reserved
    # The next commissioner is served as usual.
    initiators, replies = {}, []
    assert pase(Wire(core, controller_side(initiators, replies)), PAIRING.passcode, initiators, replies).result


def test_peer_caused_handshake_errors_are_logged_at_a_bounded_rate(tmp_path, caplog):
    core, commissioning = make_core(tmp_path)
    with caplog.at_level(logging.INFO, logger="twin.node.core"):
        for seed in range(2000):
            core.receive(raw_first_message(SecureChannelOpcode.CASE_Sigma1, b"\x15", seed), SQUATTER, 1.0 + seed)
            pbkdf = raw_first_message(SecureChannelOpcode.PBKDFParamRequest, b"\x15", 5000 + seed)
            core.receive(pbkdf, SQUATTER, 1.0 + seed)
    assert core.counts["CASE failed"] == core.counts["PASE failed"] == 2000
    # 2,000 ms of flood, a line per kind and 10 s at most.
    assert len(caplog.records) <= 4


def test_one_peer_address_cannot_push_out_the_handshakes_of_others(tmp_path):
    core, commissioning = make_core(tmp_path)
    node_fabric, ctrl_fabric = make_fabric()
    commissioning.table.add_pending(node_fabric)
    commissioning.table.commit()
    (_, other), = CaseInitiator(ctrl_fabric, 0x55, 7, rng=random.Random(1)).start()
    core.receive(raw_first_message(SecureChannelOpcode.CASE_Sigma1, other, 1), REPLAYER, 1.0)
    (held,) = core._handshakes.values()
    for seed in range(20):   # genuine Sigma1s (a fabric member's), all from one address
        (_, sigma1), = CaseInitiator(ctrl_fabric, 0x55, 7, rng=random.Random(100 + seed)).start()
        core.receive(raw_first_message(SecureChannelOpcode.CASE_Sigma1, sigma1, 100 + seed), SQUATTER, 2.0 + seed)
    assert held in core._handshakes.values()
    assert sum(h.exchange.session.peer_address == SQUATTER for h in core._handshakes.values()) \
        == MAX_HANDSHAKES_PER_PEER
