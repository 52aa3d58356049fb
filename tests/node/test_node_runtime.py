"""The node runtime without sockets: pairing codes from the home seed, and `NodeCore` wiring the
PASE/CASE responders to a MessageLayer (window gating, BUSY, wrong passcode, abandoned
handshakes, CASE with the fabric table's FabricInfo, established sessions carrying IM traffic)."""
from __future__ import annotations

import random

import pytest
from chip.clusters import Objects as Clusters
from chip.clusters.Types import NullValue

from clusters.devices import create_device
from matter_protocol import certs
from matter_protocol.case import CaseInitiator, FabricInfo
from matter_protocol.exchange import Deliver, MessageLayer, Send, SessionClosed
from matter_protocol.interaction import AttributePath, Opcode, ReadRequest, decode_message
from matter_protocol.message import ProtocolId, SecureChannelOpcode
from matter_protocol.pairing import parse_manual_code, parse_qr_code
from matter_protocol.pase import PaseInitiator
from matter_protocol.status_report import GeneralCode, SecureChannelStatus, StatusReport
from twin.home import Home
from twin.node.commissioning import NodeCommissioning
from twin.node.core import HANDSHAKE_STEP_TIMEOUT_MS, MAX_PASE_HANDSHAKES, NodeCore
from twin.node.fabrics import Fabric
from twin.node.im import InteractionModelServer
from twin.node.pairing import Pairing, home_pairings, served_devices

AC = Clusters.AccessControl

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

PAIRING = Pairing("light", passcode=20202021, discriminator=3840, vendor_id=0xFFF1, product_id=0x8001)


class Clock:
    def __init__(self):
        self.ms = 0

    def __call__(self):
        return int(self.ms)


def make_core(tmp_path, seed=1):
    """A real node: a dimmable light's cluster servers, NodeCommissioning, the IM server."""
    device = create_device("light", "dimmable_light")
    clock = Clock()
    rng = random.Random(seed)
    commissioning = NodeCommissioning(tmp_path / "light", device, None, PAIRING.passcode, PAIRING.discriminator,
                                      rng, now_ms=clock)
    core = NodeCore(PAIRING, commissioning, InteractionModelServer(device, rng), rng,
                    wall_clock=lambda: 800_000_000)
    core.clock = clock
    return core, commissioning


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
            self.core.clock.ms = self.now
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


def pase(wire, passcode, initiators, reports, seed=5):
    initiator = PaseInitiator(passcode, wire.ctrl.sessions.allocate_id(), rng=random.Random(seed))
    initiators[handshake(wire, initiator, reports)] = initiator
    wire.run()
    return initiator


def read(wire, secure, *paths):
    """A ReadRequest over `secure`; returns {(endpoint, cluster, attribute): value}."""
    reports = []
    wire.on_deliver = lambda event, now: reports.append(decode_message(event.opcode, event.payload)) or \
        event.exchange.close(now)
    exchange = wire.ctrl.new_exchange(secure, ProtocolId.INTERACTION_MODEL)
    request = ReadRequest(attribute_requests=[AttributePath(endpoint=e, cluster=c, attribute=a) for e, c, a in paths])
    wire.feed(wire.ctrl.send(exchange, Opcode.ReadRequest, request.encode(), wire.now), "node")
    wire.run()
    (report,) = reports
    return {(r.attribute_data.path.endpoint, r.attribute_data.path.cluster, r.attribute_data.path.attribute):
            r.attribute_data.data for r in report.attribute_reports}


BASIC, ONOFF = Clusters.BasicInformation, Clusters.OnOff


def test_pase_arms_the_failsafe_and_carries_reads_of_the_live_cluster_servers(tmp_path):
    core, commissioning = make_core(tmp_path)
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = pase(wire, PAIRING.passcode, initiators, reports)
    assert initiator.result is not None and initiator.error is None
    assert initiator.result.peer_mrp["SESSION_ACTIVE_INTERVAL"] == 300  # the node's MRP parameters
    (node_session,) = list(core.layer.sessions.secure_sessions())
    assert core.counts["PASE established"] == 1 and commissioning.failsafe.armed
    assert node_session.keys.attestation_challenge == initiator.result.keys.attestation_challenge

    device = commissioning.device
    device.invoke("OnOff", "On", endpoint_id=1)  # the simulation side changes state; the node reads the same server
    secure = wire.ctrl.add_secure_session(initiator.result, NODE, wire.now)
    values = read(wire, secure, (0, BASIC.id, BASIC.Attributes.VendorName.attribute_id),
                  (1, ONOFF.id, ONOFF.Attributes.OnOff.attribute_id))
    assert values == {(0, BASIC.id, BASIC.Attributes.VendorName.attribute_id): "matter-twin",
                      (1, ONOFF.id, ONOFF.Attributes.OnOff.attribute_id): True}
    device.invoke("OnOff", "Off", endpoint_id=1)
    assert read(wire, secure, (1, ONOFF.id, ONOFF.Attributes.OnOff.attribute_id)) == \
        {(1, ONOFF.id, ONOFF.Attributes.OnOff.attribute_id): False}


def test_failsafe_expiry_ends_the_pase_session(tmp_path):
    core, commissioning = make_core(tmp_path)
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    pase(wire, PAIRING.passcode, initiators, reports)
    due = core.next_timer()
    assert due == commissioning.failsafe.next_timer()
    core.clock.ms = due
    actions = core.on_timer(due)
    assert any(isinstance(a, SessionClosed) for a in actions)
    assert any(isinstance(a, Send) for a in actions)  # CloseSession told the commissioner
    assert len(core.layer.sessions) == 0 and not commissioning.failsafe.armed


def test_wrong_passcode_ends_with_a_status_report_and_is_counted(tmp_path):
    core, commissioning = make_core(tmp_path)
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = pase(wire, PAIRING.passcode + 1, initiators, reports)
    # The commissioner sees the mismatch at Pake2 (cB) and ends the handshake with its StatusReport.
    assert initiator.result is None and initiator.error == SecureChannelStatus.INVALID_PARAMETER
    assert commissioning.window.failed_attempts == 1 and core.counts["PASE failed"] == 1
    assert len(core.layer.sessions) == 0 and not commissioning.failsafe.armed
    # The node is not stuck: the right passcode works next.
    assert pase(wire, PAIRING.passcode, initiators, reports, seed=6).result is not None


def test_twenty_failed_attempts_close_the_window_and_pase_is_refused(tmp_path):
    core, commissioning = make_core(tmp_path)
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    for attempt in range(20):
        assert commissioning.window.is_open
        assert pase(wire, PAIRING.passcode + 1, initiators, reports, seed=attempt).result is None
    assert not commissioning.window.is_open and commissioning.pase_parameters() is None
    refused = pase(wire, PAIRING.passcode, initiators, reports, seed=99)
    assert refused.result is None and refused.error == SecureChannelStatus.INVALID_PARAMETER
    assert (reports[-1].general_code, reports[-1].protocol_code) == \
        (GeneralCode.FAILURE, SecureChannelStatus.INVALID_PARAMETER)
    assert core.counts["PASE failed"] == 20  # the refusal is not an attempt


def test_a_stalled_pase_holds_nothing_and_busy_comes_only_when_every_slot_made_progress(tmp_path):
    """Issue #32 item 1: a PASE stalled after its first message neither holds the node BUSY nor
    lingers past the step timeout; only PASE handshakes that got as far as Pake1 are kept from a
    new commissioner, and those only up to the step timeout."""
    core, commissioning = make_core(tmp_path)
    initiators, reports = {}, []
    stalled = PaseInitiator(PAIRING.passcode, 0x101, rng=random.Random(5))
    wire = Wire(core, lambda event, now: event.exchange.close(now))  # never answers: stalls after step 1
    handshake(wire, stalled, reports)
    wire.run()
    assert core.next_timer() == pytest.approx(1 + HANDSHAKE_STEP_TIMEOUT_MS)

    wire.on_deliver = controller_side(initiators, reports)
    assert pase(wire, PAIRING.passcode, initiators, reports, seed=6).result is not None
    assert not reports or reports[-1].general_code != GeneralCode.BUSY

    # Commissioners that stall after Pake2 (a passcode tried) fill every PASE slot: now BUSY.
    def stall_after_pake2(event, now):
        if event.opcode == SecureChannelOpcode.PASE_Pake2:
            return []
        return controller_side(initiators, reports)(event, now)
    wire.on_deliver = stall_after_pake2
    for seed in range(MAX_PASE_HANDSHAKES):
        pase(wire, PAIRING.passcode + 1, initiators, reports, seed=10 + seed)
    wire.on_deliver = controller_side(initiators, reports)
    busy_one = pase(wire, PAIRING.passcode, initiators, reports, seed=20)
    busy = reports[-1]
    assert (busy.general_code, busy.protocol_code) == (GeneralCode.BUSY, SecureChannelStatus.BUSY)
    assert int.from_bytes(busy.protocol_data, "little") > 0  # minimum wait, ms
    assert busy_one.error == SecureChannelStatus.BUSY

    wire.now += HANDSHAKE_STEP_TIMEOUT_MS
    core.clock.ms = wire.now
    wire.feed(core.on_timer(wire.now), "ctrl")
    wire.run()
    assert pase(wire, PAIRING.passcode, initiators, reports, seed=7).result is not None
    # The first stalled one was abandoned before any passcode was tried; the four had tried one each.
    assert commissioning.window.failed_attempts == MAX_PASE_HANDSHAKES


def make_fabric():
    rng = random.Random(4)
    root, root_key = certs.mint_root(1, 0x1234, rng=rng)
    node_noc, node_key = certs.mint_noc(root, root_key, 0x55, 0x1234, rng=rng)
    ctrl_noc, ctrl_key = certs.mint_noc(root, root_key, 0x1, 0x1234, rng=rng, cats=[0x00010001])
    epoch = bytes(range(16))
    node = Fabric.build(1, root.to_tlv(), None, node_noc.to_tlv(), node_key, epoch, vendor_id=0xFFF1)
    # The administrator entry AddNOC would have added for the commissioner (node 0x1).
    node.acl.append(AC.Structs.AccessControlEntryStruct(
        privilege=AC.Enums.AccessControlEntryPrivilegeEnum.kAdminister,
        authMode=AC.Enums.AccessControlEntryAuthModeEnum.kCase, subjects=[0x1], targets=NullValue,
        fabricIndex=1))
    ctrl = FabricInfo.from_certificates(1, root.to_tlv(), ctrl_noc.to_tlv(), None, ctrl_key, epoch)
    return node, ctrl


def test_case_uses_the_fabric_table_and_removing_the_fabric_ends_the_session(tmp_path):
    core, commissioning = make_core(tmp_path)
    node_fabric, ctrl_fabric = make_fabric()
    commissioning.table.add_pending(node_fabric)
    commissioning.table.commit()
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

    secure = wire.ctrl.add_secure_session(initiator.result, NODE, wire.now, local_node_id=0x1)
    assert read(wire, secure, (0, BASIC.id, BASIC.Attributes.VendorID.attribute_id)) == \
        {(0, BASIC.id, BASIC.Attributes.VendorID.attribute_id): 0xFFF1}

    commissioning.remove_fabric(1)
    actions = core.on_timer(wire.now)
    assert [a.session for a in actions if isinstance(a, SessionClosed)] == [session]
    assert len(core.layer.sessions) == 0


def test_case_without_a_matching_fabric_fails_with_no_shared_trust_roots(tmp_path):
    core, commissioning = make_core(tmp_path)
    _, ctrl_fabric = make_fabric()
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = CaseInitiator(ctrl_fabric, 0x55, wire.ctrl.sessions.allocate_id(), rng=random.Random(8))
    initiators[handshake(wire, initiator, reports)] = initiator
    wire.run()
    assert initiator.error == SecureChannelStatus.NO_SHARED_TRUST_ROOTS
    assert core.counts["CASE failed"] == 1 and commissioning.window.failed_attempts == 0
    assert len(core.layer.sessions) == 0


def test_garbage_and_handler_bugs_never_escape(tmp_path):
    core, commissioning = make_core(tmp_path)
    for junk in (b"", b"\x00", bytes(range(40)), b"\xff" * 300):
        assert all(not isinstance(a, Send) for a in core.receive(junk, CTRL, 1.0))

    def broken(*args):
        raise RuntimeError("bug")
    core.im.handle = broken
    initiators, reports = {}, []
    wire = Wire(core, controller_side(initiators, reports))
    initiator = pase(wire, PAIRING.passcode, initiators, reports)
    secure = wire.ctrl.add_secure_session(initiator.result, NODE, wire.now)
    im = wire.ctrl.new_exchange(secure, ProtocolId.INTERACTION_MODEL)
    wire.on_deliver = lambda event, now: []
    wire.feed(wire.ctrl.send(im, 0x02, b"read", wire.now), "node")
    wire.run()  # the node acked and closed the exchange instead of raising
    assert core.layer.next_timer() is None and im.mrp.outstanding is None


def test_http_api_serves_the_pairing_codes():
    from fastapi.testclient import TestClient

    from matter_twin.http import create_app
    home = Home.default(seed=2)
    response = TestClient(create_app(home)).get("/codes")
    assert response.status_code == 200
    rows = response.json()["codes"]
    served = served_devices(home)  # the home's devices, then one room-sensor node per room
    assert [r["device"] for r in rows] == list(served)
    assert list(served)[:len(home.devices)] == list(home.devices)
    assert {r["device"]: (r["manual_code"], r["qr_code"]) for r in rows} == \
        {d: (p.manual_code, p.qr_code) for d, p in home_pairings(home, devices=served).items()}
