"""The node runtime without sockets: pairing codes from the home seed, and `NodeCore` wiring the
PASE/CASE responders to a MessageLayer (window gating, BUSY, wrong passcode, abandoned
handshakes, CASE with the fabric table's FabricInfo, established sessions carrying IM traffic)."""
from __future__ import annotations

import random

import pytest

from twin.home import Home
from twin.node import certs
from twin.node.case import CaseInitiator, FabricInfo
from twin.node.exchange import Deliver, MessageLayer, Send
from twin.node.message import ProtocolId, SecureChannelOpcode
from twin.node.pairing import parse_manual_code, parse_qr_code
from twin.node.pase import PaseInitiator
from twin.node.runtime import HANDSHAKE_TIMEOUT_MS, NodeCore, Pairing, home_pairings
from twin.node.status_report import GeneralCode, SecureChannelStatus, StatusReport

NODE, CTRL = ("fd99::1", 5540), ("fd99::2", 40000)


# --- pairing codes ------------------------------------------------------------------------------

def test_pairings_are_seeded_per_device_and_round_trip_through_both_codes():
    home = Home.default(seed=0)
    first, again = home_pairings(home), home_pairings(Home.default(seed=0))
    assert first == again and list(first) == list(home.devices)
    other_seed = home_pairings(home, seed=1)
    assert all(first[d].passcode != other_seed[d].passcode for d in first)
    assert len({p.discriminator for p in first.values()}) == len(first)  # QR codes find one node each
    for device_id, p in first.items():
        assert (p.vendor_id, p.product_id) == (0xFFF1, home.devices[device_id].type.product_id)
        qr, manual = parse_qr_code(p.qr_code), parse_manual_code(p.manual_code)
        assert (qr.passcode, qr.discriminator, qr.vendor_id, qr.product_id) == \
            (p.passcode, p.discriminator, p.vendor_id, p.product_id)
        assert (manual.passcode, manual.discriminator) == (p.passcode, p.discriminator & 0xF00)


def test_a_device_keeps_its_codes_when_others_come_and_go():
    home = Home.default(seed=3)
    before = home_pairings(home)
    home.add_device("zz_extra_light", "on_off_light", "kitchen")
    after = home_pairings(home)
    assert {d: after[d] for d in before} == before
    assert after["zz_extra_light"].discriminator not in {p.discriminator for p in before.values()}


# --- NodeCore over a simulated wire ----------------------------------------------------------------

class Window:
    """The commissioning side NodeCore talks to: open/closed, PASE outcomes, the fabric list."""

    def __init__(self, open_=True, fabrics=()):
        self.open = open_
        self.fabrics = list(fabrics)
        self.failures = 0
        self.established = []

    def window_open(self):
        return self.open

    def fabric_infos(self):
        return self.fabrics

    def pase_established(self, session, now_ms):
        self.established.append(session)
        return []

    def pase_failed(self, now_ms):
        self.failures += 1
        return []

    def on_timer(self, now_ms):
        return []

    def next_timer(self):
        return None


class EchoIM:
    """Answers every IM message with its payload reversed, on the same exchange."""

    def __init__(self):
        self.seen = []

    def handle(self, session, exchange, opcode, payload, now_ms):
        self.seen.append((session, opcode, payload))
        return exchange.send(opcode + 1, payload[::-1], now_ms) + exchange.close(now_ms)

    def on_timer(self, now_ms):
        return []

    def next_timer(self):
        return None


PAIRING = Pairing("light", passcode=20202021, discriminator=3840, vendor_id=0xFFF1, product_id=0x8001,
                  salt=b"SPAKE2P Key Salt-twin")


def make_core(window=None, seed=1):
    window = window or Window()
    return NodeCore(PAIRING, window, EchoIM(), random.Random(seed), wall_clock=lambda: 800_000_000), window


class Wire:
    """Controller layer <-> NodeCore; the controller's Deliver events go to `on_deliver`."""

    def __init__(self, core, on_deliver):
        self.core, self.ctrl = core, MessageLayer(random.Random(99))
        self.on_deliver = on_deliver
        self.now = 0.0
        self.queue = []

    def feed(self, actions, to):
        for action in actions:
            if isinstance(action, Send):
                self.queue.append((to, action.data))
            elif isinstance(action, Deliver):
                self.feed(self.on_deliver(action, self.now), "node")

    def run(self):
        while self.queue:
            to, data = self.queue.pop(0)
            self.now += 1
            if to == "node":
                self.feed(self.core.receive(data, CTRL, self.now), "ctrl")
            else:
                self.feed(self.ctrl.receive(data, NODE, self.now), "node")


def handshake(wire, initiator, protocol_replies):
    """Start `initiator` on a fresh unsecured session; returns the status reports it got."""
    unsecured = wire.ctrl.open_unsecured(NODE, wire.now)
    exchange = wire.ctrl.new_exchange(unsecured, ProtocolId.SECURE_CHANNEL)
    (opcode, payload), = initiator.start()
    wire.feed(wire.ctrl.send(exchange, opcode, payload, wire.now), "node")
    return exchange


def controller_side(initiators, reports):
    def on_deliver(event, now):
        initiator = initiators[event.exchange]
        if event.opcode == SecureChannelOpcode.StatusReport:
            reports.append(StatusReport.decode(event.payload))
        out = []
        for opcode, payload in initiator.handle(event.opcode, event.payload):
            out += event.exchange.send(opcode, payload, now)
        if initiator.finished:
            out += event.exchange.close(now)
        return out
    return on_deliver


def test_pase_establishes_a_session_that_carries_im_traffic():
    core, window = make_core()
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = PaseInitiator(PAIRING.passcode, wire.ctrl.sessions.allocate_id(), rng=random.Random(5))
    initiators[handshake(wire, initiator, reports)] = initiator
    wire.run()
    assert initiator.result is not None and initiator.error is None
    assert core.counts["PASE established"] == 1 and len(window.established) == 1
    node_session = window.established[0]
    assert core.layer.sessions.get(node_session.local_session_id) is node_session
    assert initiator.result.peer_mrp["SESSION_ACTIVE_INTERVAL"] == 300  # the node's MRP parameters

    # The session now carries the Interaction Model to the IM server, and its answers back.
    replies = []
    wire.on_deliver = lambda event, now: replies.append((event.opcode, event.payload)) or event.exchange.close(now)
    secure = wire.ctrl.add_secure_session(initiator.result, NODE, wire.now)
    im = wire.ctrl.new_exchange(secure, ProtocolId.INTERACTION_MODEL)
    wire.feed(wire.ctrl.send(im, 0x02, b"read", wire.now), "node")
    wire.run()
    assert replies == [(0x03, b"daer")]
    assert core.im.seen[0][0] is node_session
    assert core.next_timer() is None  # everything acked, nothing pending


def test_wrong_passcode_ends_with_a_status_report_and_is_counted():
    core, window = make_core()
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = PaseInitiator(PAIRING.passcode + 1, wire.ctrl.sessions.allocate_id(), rng=random.Random(5))
    initiators[handshake(wire, initiator, reports)] = initiator
    wire.run()
    # The commissioner sees the mismatch at Pake2 (cB) and ends the handshake with its StatusReport.
    assert initiator.result is None and initiator.error == SecureChannelStatus.INVALID_PARAMETER
    assert reports == []
    assert window.failures == 1 and core.counts["PASE failed"] == 1
    assert len(core.layer.sessions) == 0 and core.next_timer() is None

    # The node is not stuck: the right passcode works next.
    right = PaseInitiator(PAIRING.passcode, wire.ctrl.sessions.allocate_id(), rng=random.Random(6))
    initiators[handshake(wire, right, reports)] = right
    wire.run()
    assert right.result is not None and core.counts["PASE established"] == 1


def test_closed_window_refuses_pase():
    core, window = make_core(Window(open_=False))
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = PaseInitiator(PAIRING.passcode, wire.ctrl.sessions.allocate_id(), rng=random.Random(5))
    initiators[handshake(wire, initiator, reports)] = initiator
    wire.run()
    assert initiator.error is not None and initiator.result is None
    assert reports[-1].general_code == GeneralCode.FAILURE
    assert window.failures == 0 and core.counts["PASE failed"] == 0 and len(core.layer.sessions) == 0


def test_second_pase_while_one_runs_is_busy_until_the_first_is_abandoned():
    core, window = make_core()
    initiators, reports = {}, []
    stalled = PaseInitiator(PAIRING.passcode, 0x101, rng=random.Random(5))
    wire = Wire(core, lambda event, now: event.exchange.close(now))  # never answers: stalls after step 1
    handshake(wire, stalled, reports)
    wire.run()
    assert core.next_timer() == pytest.approx(1 + HANDSHAKE_TIMEOUT_MS)

    wire.on_deliver = controller_side(initiators, reports)
    second = PaseInitiator(PAIRING.passcode, 0x102, rng=random.Random(6))
    initiators[handshake(wire, second, reports)] = second
    wire.run()
    busy = reports[-1]
    assert (busy.general_code, busy.protocol_code) == (GeneralCode.BUSY, SecureChannelStatus.BUSY)
    assert int.from_bytes(busy.protocol_data, "little") > 0  # minimum wait, ms
    assert second.error == SecureChannelStatus.BUSY

    wire.now += HANDSHAKE_TIMEOUT_MS
    wire.feed(core.on_timer(wire.now), "ctrl")
    wire.run()
    third = PaseInitiator(PAIRING.passcode, 0x103, rng=random.Random(7))
    initiators[handshake(wire, third, reports)] = third
    wire.run()
    assert third.result is not None
    assert window.failures == 0  # abandoned and BUSY are not failed attempts


def make_fabric():
    rng = random.Random(4)
    root, root_key = certs.mint_root(1, 0x1234, rng=rng)
    node_noc, node_key = certs.mint_noc(root, root_key, 0x55, 0x1234, rng=rng)
    ctrl_noc, ctrl_key = certs.mint_noc(root, root_key, 0x1, 0x1234, rng=rng, cats=[0x00010001])
    epoch = bytes(range(16))
    node = FabricInfo.from_certificates(1, root.to_tlv(), node_noc.to_tlv(), None, node_key, epoch)
    ctrl = FabricInfo.from_certificates(1, root.to_tlv(), ctrl_noc.to_tlv(), None, ctrl_key, epoch)
    return node, ctrl


def test_case_uses_the_fabric_table_and_installs_an_operational_session():
    node_fabric, ctrl_fabric = make_fabric()
    core, window = make_core(Window(open_=False, fabrics=[node_fabric]))
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = CaseInitiator(ctrl_fabric, 0x55, wire.ctrl.sessions.allocate_id(), rng=random.Random(8))
    initiators[handshake(wire, initiator, reports)] = initiator
    wire.run()
    assert initiator.result is not None
    (session,) = list(core.layer.sessions.secure_sessions())
    assert (session.peer_node_id, session.local_node_id, session.fabric_index) == (0x1, 0x55, 1)
    assert session.peer_cats == (0x00010001,)
    assert core.counts["CASE established"] == 1


def test_case_without_a_matching_fabric_fails_with_no_shared_trust_roots():
    _, ctrl_fabric = make_fabric()
    core, window = make_core(Window(open_=True, fabrics=[]))
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = CaseInitiator(ctrl_fabric, 0x55, wire.ctrl.sessions.allocate_id(), rng=random.Random(8))
    initiators[handshake(wire, initiator, reports)] = initiator
    wire.run()
    assert initiator.error == SecureChannelStatus.NO_SHARED_TRUST_ROOTS
    assert core.counts["CASE failed"] == 1 and window.failures == 0 and len(core.layer.sessions) == 0


def test_garbage_and_handler_bugs_never_escape():
    core, window = make_core()
    for junk in (b"", b"\x00", bytes(range(40)), b"\xff" * 300):
        assert all(not isinstance(a, Send) for a in core.receive(junk, CTRL, 1.0))

    def broken(*args):
        raise RuntimeError("bug")
    core.im.handle = broken
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = PaseInitiator(PAIRING.passcode, wire.ctrl.sessions.allocate_id(), rng=random.Random(5))
    initiators[handshake(wire, initiator, reports)] = initiator
    wire.run()
    secure = wire.ctrl.add_secure_session(initiator.result, NODE, wire.now)
    im = wire.ctrl.new_exchange(secure, ProtocolId.INTERACTION_MODEL)
    wire.on_deliver = lambda event, now: []
    wire.feed(wire.ctrl.send(im, 0x02, b"read", wire.now), "node")
    wire.run()  # the node acked and closed the exchange instead of raising
    assert core.next_timer() is None
