"""TC_CADMIN (multiple administrators) and TC_SC_4_x (discovery): a commissioned node opens an
enhanced commissioning window at its administrator's request, advertises it on DNS-SD, is
commissioned into a second fabric by another administrator, and leaves that fabric again.

The plans' steps that wait for a window to time out (180 s at the least) run against the node's
commissioning state in virtual time (tests/node/test_node_commissioning.py,
tests/node/test_node_windows.py); over the network each window is closed by RevokeCommissioning."""
from __future__ import annotations

from typing import Any

import pytest
from chip.clusters import Objects as C
from conftest import all_duts, over_network
from dut import Dut, DutStatusError
from network import ControllerError

from clusters.status import Status
from matter_protocol.spake2p import make_verifier

AC = C.AdministratorCommissioning
NOT_APPLICABLE = {
    "TC_SC_4_2": "commissioner discovery: the nodes are commissionees, not commissioners",
    "TC_SC_4_6": "commissioner discovery with the DUT as commissioner: the nodes are not commissioners",
    "TC_SC_4_7": "commissioner discovery (user directed commissioning): not supported by the nodes",
    "TC_CADMIN_1_2": "administrator behaviour using BCM with the DUT as commissioner (PICS CADMIN.C, "
                     "CADMIN.C.C01.Tx): the nodes are commissionees; BCM as commissionee is TC_CADMIN_1_4",
    "TC_CADMIN_1_17": "removing fabrics and fabric index enumeration with the DUT as commissioner "
                      "(PICS CADMIN.C, CADMIN.C.C00.Tx): the nodes are commissionees",
    "TC_CADMIN_1_1": "administrator behaviour using ECM with the DUT as commissioner (PICS CADMIN.C, "
                     "CADMIN.C.C00.Tx): the nodes are commissionees; ECM as commissionee is TC_CADMIN_1_3 "
                     "(and test_second_administrator_by_ecm, on every node kind)",
}
NOT_COVERED = {
}
NODES = [p for p in over_network(all_duts()) if p.values[0][1] in ("dimmable_light", "bridge")]
LIGHT = [p for p in NODES if p.values[0][1] == "dimmable_light"]
OC, BI = C.OperationalCredentials, C.BasicInformation
WindowStatus = AC.Enums.CommissioningWindowStatusEnum
AdminStatus = AC.Enums.StatusCode


def discriminator_of(dut: Dut, low: int) -> int:
    """A window discriminator whose short form (its top 4 bits) is this dut's alone: the SDK's
    commissioner also matches on the short discriminator, and remembers nodes it has seen."""
    return (dut.node_id % 16) << 8 | low                  # type: ignore[attr-defined]


def window(dut: Dut, discriminator: int) -> dict:
    return dut.call("open_window", discriminator, timeout=60)      # type: ignore[attr-defined]


def revoke(dut: Dut) -> None:
    dut.invoke(0, AC.Commands.RevokeCommissioning(), timed_ms=5000)


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_SC_4_1(dut: Dut):
    """Commissionable node discovery: with an enhanced window open, the node answers DNS-SD by
    its long discriminator with its vendor and product ids, commissioning mode 2 (an
    administrator's window) and its device type; RevokeCommissioning closes the window. (The
    SDK controller's discovery list keeps the nodes it has seen, so the advertisement's
    withdrawal is checked by tests/node/test_node_mdns*.py with a plain DNS-SD browser.)"""
    discriminator = discriminator_of(dut, 0xA5)
    window(dut, discriminator)
    try:
        found = dut.lab.controller.call("discover", discriminator, 4)   # type: ignore[attr-defined]
        # One instance (seen once per interface of the namespace's veth pair).
        assert len({n["instanceName"] for n in found}) == 1, found
        node = found[0]
        assert node["longDiscriminator"] == discriminator and node["commissioningMode"] == 2
        assert node["vendorId"] == dut.read(0, C.BasicInformation.Attributes.VendorID)
        assert node["productId"] == dut.read(0, C.BasicInformation.Attributes.ProductID)
        assert len(node["instanceName"]) == 16 and int(node["instanceName"], 16) >= 0
        first = dut.endpoints()[1]
        if node["deviceType"]:
            assert node["deviceType"] in [t.deviceType for t in dut.read(first, C.Descriptor.Attributes.DeviceTypeList)]
        assert node["port"] and node["addresses"]
    finally:
        revoke(dut)
    assert dut.read(0, AC.Attributes.WindowStatus) == AC.Enums.CommissioningWindowStatusEnum.kWindowNotOpen


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_SC_4_3(dut: Dut):
    """Operational discovery: with its sessions gone, the controller finds the node again on
    DNS-SD (_matter._tcp, by compressed fabric and node id) and reaches it by CASE."""
    address, port = dut.call("resolve")                  # type: ignore[attr-defined]
    assert address.startswith(("fd99:", "fe80:", "10.99.")) and port > 0
    assert dut.read(0, C.BasicInformation.Attributes.VendorID) == 0xFFF1


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_second_administrator_by_ecm(dut: Dut):
    """The commissionee's side of TC_CADMIN_1_1 (whose DUT is the commissioner), on the light and
    the bridge: the administrator opens an enhanced window (WindowStatus, admin fabric and vendor
    show it), a second administrator commissions the node into its own fabric with the window's
    passcode, both fabrics are listed, the window is closed again, and the second administrator
    removes its fabric."""
    node = dut.node_id                                   # type: ignore[attr-defined]
    address, port = dut.call("resolve")                  # type: ignore[attr-defined]
    opened = window(dut, discriminator_of(dut, 0x5A))
    own_index = dut.read(0, C.OperationalCredentials.Attributes.CurrentFabricIndex)
    assert dut.read(0, AC.Attributes.WindowStatus) == AC.Enums.CommissioningWindowStatusEnum.kEnhancedWindowOpen
    assert dut.read(0, AC.Attributes.AdminFabricIndex) == own_index
    assert dut.read(0, AC.Attributes.AdminVendorId) == 0xFFF1
    try:
        commission_second_admin(dut, node, (address, port), opened["passcode"], own_index)
    finally:
        end_second_admin(dut, None, f"beta-{node}")


def end_second_admin(dut: Dut, th2_index: int | None, *controllers: str) -> None:
    """A test's cleanup: no window left open for later tests, the second administrator's fabric
    (if it joined) removed, its controllers dropped."""
    if dut.read(0, AC.Attributes.WindowStatus) != AC.Enums.CommissioningWindowStatusEnum.kWindowNotOpen:
        revoke(dut)
    if th2_index is not None:
        removed = dut.invoke(0, OC.Commands.RemoveFabric(fabricIndex=th2_index))
        assert removed.statusCode == OC.Enums.NodeOperationalCertStatusEnum.kOk
    for name in controllers:
        dut.lab.controller.call("drop_controller", name)                      # type: ignore[attr-defined]


def commission_second_admin(dut: Dut, node: int, where: tuple[str, int], passcode: int, own_index: int) -> None:
    lab = dut.lab                                        # type: ignore[attr-defined]
    other_node = node + 0x1000
    # A second administrator of its own per dut (a fresh controller: the SDK's commissioner
    # keeps the state of its last commissioning).
    beta, fabric = f"beta-{node}", 2 + node % 100
    lab.controller.call("commission_other_fabric", beta, fabric, other_node, *where, passcode, timeout=120)
    assert dut.read(0, AC.Attributes.WindowStatus) == AC.Enums.CommissioningWindowStatusEnum.kWindowNotOpen
    assert dut.read(0, C.OperationalCredentials.Attributes.CommissionedFabrics) == 2
    beta_index = lab.controller.call("as", beta, "read", other_node, 0,
                                     C.OperationalCredentials.Attributes.CurrentFabricIndex)
    assert beta_index != own_index
    assert lab.controller.call("as", beta, "read", other_node, 0, C.BasicInformation.Attributes.VendorID) == 0xFFF1
    removed = lab.controller.call("as", beta, "invoke", other_node, 0,
                                  C.OperationalCredentials.Commands.RemoveFabric(fabricIndex=beta_index))
    assert removed.statusCode == C.OperationalCredentials.Enums.NodeOperationalCertStatusEnum.kOk
    assert dut.read(0, C.OperationalCredentials.Attributes.CommissionedFabrics) == 1


# --- a second administrator with a root of its own (admin_ops.py in the controller) -------------

def second_admin(dut: Dut, name: str, fabric_id: int, admin_node: int) -> Any:
    return dut.lab.controller.call("admin_ops:new_admin", name, fabric_id, admin_node, True)  # type: ignore[attr-defined]


def commission_as(dut: Dut, name: str, where: tuple[str, int], passcode: int, new_node: int) -> None:
    """Administrator `name` commissions the node (whose window is open) as `new_node`: PASE at its
    address, then the commissioning steps."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    lab.controller.call("as", name, "admin_ops:pase", *where, passcode, new_node)
    lab.controller.call("as", name, "admin_ops:commission_after_pase", new_node, timeout=120)


def read_as(dut: Dut, name: str, node: int, attribute: Any) -> Any:
    return dut.lab.controller.call("as", name, "read", node, 0, attribute)        # type: ignore[attr-defined]


def node_label_round_trip(dut: Dut, name: str | None, node: int, label: str) -> None:
    """Write and read back NodeLabel, by our controller (name None) or administrator `name`."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    if name is None:
        dut.write(0, BI.Attributes.NodeLabel, label)
        assert dut.read(0, BI.Attributes.NodeLabel) == label
        return
    assert lab.controller.call("as", name, "write", node, 0, BI.Attributes.NodeLabel(label)) == 0
    assert read_as(dut, name, node, BI.Attributes.NodeLabel) == label


def root_keys(dut: Dut) -> set[bytes]:
    from chip.tlv import TLVReader
    return {TLVReader(r).get()["Any"][9] for r in dut.read(0, OC.Attributes.TrustedRootCertificates)}


def cluster_status(dut: Dut, command: Any) -> tuple[int, int | None]:
    """The (status, cluster status) a timed AdministratorCommissioning command is refused with."""
    with pytest.raises(DutStatusError) as err:
        dut.invoke(0, command, timed_ms=5000)
    return err.value.status, err.value.cluster_status


def open_with(dut: Dut, iterations: int = 1000, salt: bytes = b"SPAKE2P Key Salt", discriminator: int = 3045,
              timeout: int = 180) -> Any:
    """OpenCommissioningWindow with our own verifier (passcode 20202021); out-of-range PBKDF
    parameters go in the command as given (the verifier is made with valid ones)."""
    valid_salt = salt if 16 <= len(salt) <= 32 else b"SPAKE2P Key Salt"
    verifier = make_verifier(20202021, valid_salt, min(max(iterations, 1000), 100000))
    return AC.Commands.OpenCommissioningWindow(commissioningTimeout=timeout, PAKEPasscodeVerifier=verifier,
                                               discriminator=discriminator, iterations=iterations, salt=salt)


def check_two_admins(dut: Dut, name: str, other_node: int, roots_before: set[bytes]) -> int:
    """Each administrator's fabric-filtered Fabrics names its own root and the node id it gave;
    the second administrator's fabric index."""
    node = dut.node_id                                                             # type: ignore[attr-defined]
    [ours] = dut.read(0, OC.Attributes.Fabrics)
    assert ours.rootPublicKey in roots_before and ours.nodeID == node
    [theirs] = read_as(dut, name, other_node, OC.Attributes.Fabrics)
    assert theirs.nodeID == other_node and theirs.rootPublicKey in root_keys(dut) - roots_before
    assert theirs.fabricIndex != ours.fabricIndex
    return theirs.fabricIndex


@pytest.mark.parametrize("dut", LIGHT, indirect=True)
def test_TC_CADMIN_1_3(dut: Dut):
    """Commissioning with ECM: a window as long as MaxCumulativeFailsafeSeconds, advertised with
    CM=2; NodeLabel written and read by either administrator; a second administrator (its own
    root) commissions the node, and each sees its own fabric; that administrator's window names
    it (AdminFabricIndex, AdminVendorId); commissioning again into the first fabric fails at AddNOC
    (FabricConflict), RevokeCommissioning cleans up; the first administrator removes the second."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    node = dut.node_id                                                             # type: ignore[attr-defined]
    where = dut.call("resolve")                                                    # type: ignore[attr-defined]
    longest = dut.read(0, C.GeneralCommissioning.Attributes.BasicCommissioningInfo).maxCumulativeFailsafeSeconds
    discriminator = discriminator_of(dut, 0x13)
    opened = lab.controller.call("open_window", node, discriminator, True, longest)
    beta, beta_node, again = f"cr2-{node}", node + 0x6000, f"cr1-again-{node}"
    roots_before = root_keys(dut)
    th2_index = None
    try:
        found = lab.controller.call("discover", discriminator, 4)
        assert found and all(n["commissioningMode"] == 2 for n in found)
        node_label_round_trip(dut, None, node, "cadmin 1.3")
        second_admin(dut, beta, 0x13, 0x6001)
        commission_as(dut, beta, where, opened["passcode"], beta_node)
        th2_index = check_two_admins(dut, beta, beta_node, roots_before)
        node_label_round_trip(dut, None, node, "written by CR1")
        assert read_as(dut, beta, beta_node, BI.Attributes.NodeLabel) == "written by CR1"
        node_label_round_trip(dut, beta, beta_node, "written by CR2")

        # The second administrator's window names it; then the first administrator, commissioning
        # again into its own fabric, is refused at AddNOC.
        reopened = lab.controller.call("as", beta, "open_window", beta_node, discriminator_of(dut, 0x31), True, longest)
        assert dut.read(0, AC.Attributes.WindowStatus) == WindowStatus.kEnhancedWindowOpen
        assert dut.read(0, AC.Attributes.AdminFabricIndex) == th2_index
        assert dut.read(0, AC.Attributes.AdminVendorId) == 0xFFF1
        lab.controller.call("make_controller", again, 1, 0x6002)
        with pytest.raises(ControllerError) as err:
            commission_as(dut, again, where, reopened["passcode"], node + 0x6003)
        assert "7E" in str(err.value).upper() or "conflict" in str(err.value).lower(), err.value
        assert dut.read(0, OC.Attributes.CommissionedFabrics) == 2
        revoke(dut)
        assert dut.read(0, AC.Attributes.WindowStatus) == WindowStatus.kWindowNotOpen
    finally:
        end_second_admin(dut, th2_index, beta, again)
        dut.write(0, BI.Attributes.NodeLabel, "")
    assert dut.read(0, OC.Attributes.CommissionedFabrics) == 1


@pytest.mark.parametrize("dut", LIGHT, indirect=True)
def test_TC_CADMIN_1_4(dut: Dut):
    """Commissioning with BCM: OpenBasicCommissioningWindow (timed) opens a basic window
    (WindowStatus, AdminFabricIndex), advertised with CM=1 and the node's own discriminator; a
    second administrator commissions the node with the node's own passcode; each sees its own
    fabric; the first administrator removes the second."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    node = dut.node_id                                                             # type: ignore[attr-defined]
    where = dut.call("resolve")                                                    # type: ignore[attr-defined]
    twin = lab.twin("home")
    [code] = [row for row in lab.controller.call("http_json", f"http://127.0.0.1:{twin.http}/codes")["codes"]
              if row["device"] == dut.name]
    dut.invoke(0, AC.Commands.OpenBasicCommissioningWindow(commissioningTimeout=180), timed_ms=5000)
    beta, beta_node = f"bcm-{node}", node + 0x7000
    roots_before = root_keys(dut)
    th2_index = None
    try:
        assert dut.read(0, AC.Attributes.WindowStatus) == WindowStatus.kBasicWindowOpen
        assert dut.read(0, AC.Attributes.AdminFabricIndex) == dut.read(0, OC.Attributes.CurrentFabricIndex)
        found = lab.controller.call("discover", code["discriminator"], 4)
        assert found and {n["commissioningMode"] for n in found} == {1}
        node_label_round_trip(dut, None, node, "cadmin 1.4")
        second_admin(dut, beta, 0x14, 0x7001)
        commission_as(dut, beta, where, code["passcode"], beta_node)
        assert dut.read(0, AC.Attributes.WindowStatus) == WindowStatus.kWindowNotOpen
        th2_index = check_two_admins(dut, beta, beta_node, roots_before)
        assert read_as(dut, beta, beta_node, BI.Attributes.NodeLabel) == "cadmin 1.4"
        node_label_round_trip(dut, beta, beta_node, "written by CR2")
    finally:
        end_second_admin(dut, th2_index, beta)
        dut.write(0, BI.Attributes.NodeLabel, "")
    assert dut.read(0, OC.Attributes.CommissionedFabrics) == 1


@pytest.mark.parametrize("dut", LIGHT, indirect=True)
def test_TC_CADMIN_1_5(dut: Dut):
    """ECM negative cases: a revoked window takes no PASE; RevokeCommissioning with no window is
    WindowNotOpen; iterations 999 or 100001 and salts of 9 or 33 bytes are PAKEParameterError; a
    second window while one is open is Busy; the open window still commissions a second
    administrator, after which RevokeCommissioning is WindowNotOpen again; the first
    administrator removes the second."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    node = dut.node_id                                                             # type: ignore[attr-defined]
    where = dut.call("resolve")                                                    # type: ignore[attr-defined]
    beta, beta_node = f"neg-{node}", node + 0x8000
    second_admin(dut, beta, 0x15, 0x8001)
    th2_index = None
    try:
        revoked = window(dut, discriminator_of(dut, 0x15))
        found = lab.controller.call("discover", discriminator_of(dut, 0x15), 4)
        assert found and all(n["commissioningMode"] == 2 for n in found)
        revoke(dut)
        with pytest.raises(ControllerError):
            lab.controller.call("as", beta, "admin_ops:pase", *where, revoked["passcode"], beta_node, timeout=60)
        assert cluster_status(dut, AC.Commands.RevokeCommissioning()) == (Status.FAILURE, AdminStatus.kWindowNotOpen)
        for bad in (open_with(dut, iterations=999), open_with(dut, iterations=100001),
                    open_with(dut, salt=b"too_short"), open_with(dut, salt=b"this pake salt very very very long")):
            assert cluster_status(dut, bad) == (Status.FAILURE, AdminStatus.kPAKEParameterError), bad
        assert dut.read(0, AC.Attributes.WindowStatus) == WindowStatus.kWindowNotOpen
        dut.invoke(0, open_with(dut, discriminator=discriminator_of(dut, 0x51)), timed_ms=5000)
        assert cluster_status(dut, open_with(dut, discriminator=discriminator_of(dut, 0x52))) == \
            (Status.FAILURE, AdminStatus.kBusy)
        lab.controller.call("as", beta, "admin_ops:expire", beta_node)
        commission_as(dut, beta, where, 20202021, beta_node)
        th2_index = read_as(dut, beta, beta_node, OC.Attributes.CurrentFabricIndex)
        assert cluster_status(dut, AC.Commands.RevokeCommissioning()) == (Status.FAILURE, AdminStatus.kWindowNotOpen)
    finally:
        end_second_admin(dut, th2_index, beta)
    assert dut.read(0, OC.Attributes.CommissionedFabrics) == 1


def test_TC_SC_3_1(tmp_path):
    """CASE session establishment, message by message, against a node's own message layer (the
    node runtime, in process): Sigma1, Sigma2, Sigma3 and the node's StatusReport
    (SessionEstablishmentSuccess) go in that order on the unsecured session (session id 0,
    unicast, not encrypted, Secure Channel protocol, opcodes 0x30/0x31/0x32/0x40); the
    initiator's messages carry the I flag and the node's do not; Sigma2 holds a 32-byte random,
    the node's session id, a 65-byte ephemeral key, the encrypted part and the node's MRP
    intervals; the new session then carries an encrypted read. (Over the network, every test case
    of the suite reaches its node by CASE established by the CHIP SDK controller, again after its
    sessions are expired in TC_SC_4_3.)"""
    import random

    import test_node_runtime as rt

    from matter_protocol.case import CaseInitiator
    from matter_protocol.exchange import Send
    from matter_protocol.message import MessageHeader, PayloadHeader, SecureChannelOpcode, SessionType
    from matter_protocol.pase import decode_struct
    from matter_protocol.status_report import SecureChannelStatus

    core, commissioning = rt.make_core(tmp_path)
    node_fabric, ctrl_fabric = rt.make_fabric()
    commissioning.table.add_pending(node_fabric)
    commissioning.table.commit()
    seen: list[tuple[str, MessageHeader, PayloadHeader, bytes]] = []

    class Recording(rt.Wire):
        def feed(self, actions: list[Any], to: str) -> None:
            for action in actions:
                if isinstance(action, Send):
                    header, at = MessageHeader.decode(action.data)
                    if header.session_id == 0:          # the handshake's unsecured messages
                        payload_header, start = PayloadHeader.decode(action.data[at:])
                        if not payload_header.is_standalone_ack:
                            seen.append((to, header, payload_header, action.data[at + start:]))
            super().feed(actions, to)

    initiators: dict[Any, Any] = {}
    reports: list[Any] = []
    wire = Recording(core, rt.controller_side(initiators, reports))
    initiator = CaseInitiator(ctrl_fabric, 0x55, wire.ctrl.sessions.allocate_id(), rng=random.Random(8))
    initiators[rt.handshake(wire, initiator, reports)] = initiator
    wire.run()
    assert initiator.result is not None
    Op = SecureChannelOpcode
    assert [(to, p.opcode) for to, _, p, _ in seen] == [
        ("node", Op.CASE_Sigma1), ("ctrl", Op.CASE_Sigma2), ("node", Op.CASE_Sigma3), ("ctrl", Op.StatusReport)]
    for to, header, payload_header, _ in seen:
        assert header.session_type == SessionType.UNICAST and not header.privacy and header.dest_group_id is None
        assert payload_header.protocol_id == 0 and payload_header.vendor_id is None
        assert payload_header.initiator == (to == "node")
    sigma2 = decode_struct(seen[1][3], "Sigma2")
    assert len(sigma2[1]) == 32 and 0 < sigma2[2] <= 0xFFFF and len(sigma2[3]) == 65 and len(sigma2[4]) > 16
    assert sigma2[5][1] > 0 and sigma2[5][2] > 0        # the node's MRP idle and active intervals
    assert [r.protocol_code for r in reports] == [SecureChannelStatus.SESSION_ESTABLISHMENT_SUCCESS]
    secure = wire.ctrl.add_secure_session(initiator.result, rt.NODE, wire.now, local_node_id=0x1)
    vendor = (0, C.BasicInformation.id, C.BasicInformation.Attributes.VendorID.attribute_id)
    assert rt.read(wire, secure, vendor) == {vendor: 0xFFF1}
