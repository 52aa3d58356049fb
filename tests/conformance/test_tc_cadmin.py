"""TC_CADMIN (multiple administrators) and TC_SC_4_x (discovery): a commissioned node opens an
enhanced commissioning window at its administrator's request, advertises it on DNS-SD, is
commissioned into a second fabric by another administrator, and leaves that fabric again."""
from __future__ import annotations

import pytest
from chip.clusters import Objects as C
from conftest import all_duts, over_network
from dut import Dut

AC = C.AdministratorCommissioning
NOT_APPLICABLE = {
    "TC_SC_4_2": "commissioner discovery: the nodes are commissionees, not commissioners",
    "TC_SC_4_6": "commissioner discovery with the DUT as commissioner: the nodes are not commissioners",
    "TC_SC_4_7": "commissioner discovery (user directed commissioning): not supported by the nodes",
    "TC_CADMIN_1_2": "administrator behaviour using BCM with the DUT as commissioner (PICS CADMIN.C, "
                     "CADMIN.C.C01.Tx): the nodes are commissionees; BCM as commissionee is TC_CADMIN_1_4",
    "TC_CADMIN_1_17": "removing fabrics and fabric index enumeration with the DUT as commissioner "
                      "(PICS CADMIN.C, CADMIN.C.C00.Tx): the nodes are commissionees",
}
NOT_COVERED = {
    "TC_CADMIN_1_3": "ECM with NodeLabel across fabrics and a third admin",
    "TC_CADMIN_1_5": "ECM negative cases (wrong passcode, window timeout)",
    "TC_SC_3_1": "CASE session establishment checked message by message (covered in tests/protocol)",
}
NODES = [p for p in over_network(all_duts()) if p.values[0][1] in ("dimmable_light", "bridge")]


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
def test_TC_CADMIN_1_1(dut: Dut):
    """Enhanced commissioning method: the administrator opens a window (WindowStatus, admin fabric
    and vendor show it), a second administrator commissions the node into its own fabric with
    the window's passcode, both fabrics are listed, the window is closed again, and the second
    administrator removes its fabric."""
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
        if dut.read(0, AC.Attributes.WindowStatus) != AC.Enums.CommissioningWindowStatusEnum.kWindowNotOpen:
            revoke(dut)      # a failed attempt must not leave the window open for later tests
        dut.lab.controller.call("drop_controller", f"beta-{node}")   # type: ignore[attr-defined]


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
