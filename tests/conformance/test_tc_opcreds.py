"""TC_OPCREDS: the Operational Credentials cluster on the network node's root endpoint.

The NOC flows are driven one command at a time: the node's CSRRequest answers, the NOC chains
other administrators' CAs issue for it (admin_ops.py, in the controller process), AddNOC /
UpdateNOC over CASE or over PASE with another administrator, and CommissioningComplete from the
new fabric over CASE."""
from __future__ import annotations

import os
from typing import Any

import pytest
from chip.clusters import Objects as C
from conftest import all_duts, over_network
from dut import Dut, DutStatusError
from test_tc_cadmin import discriminator_of, revoke, window

from clusters.status import Status

OC = C.OperationalCredentials
NOT_APPLICABLE = {
    "TC_OPCREDS_3_9": "PQC device attestation is not in Matter 1.3",
}
NOT_COVERED: dict[str, str] = {}
NODES = [p for p in over_network(all_duts()) if p.values[0][1] in ("dimmable_light", "bridge")]
#: The NOC flows run on one node: they exercise endpoint 0, the same server in every node.
LIGHT = [p for p in NODES if p.values[0][1] == "dimmable_light"]
GC = C.GeneralCommissioning
NocStatus = OC.Enums.NodeOperationalCertStatusEnum
CommissioningError = GC.Enums.CommissioningErrorEnum


def arm(dut: Dut, seconds: int, via: tuple[str, int] | None = None) -> None:
    """ArmFailSafe (0 disarms and rolls back) by our controller, or by (controller name, node id)."""
    response = invoke(dut, GC.Commands.ArmFailSafe(expiryLengthSeconds=seconds, breadcrumb=0), via)
    assert response.errorCode == CommissioningError.kOk, response


def invoke(dut: Dut, command: Any, via: tuple[str, int] | None = None) -> Any:
    """A command to endpoint 0, by our controller or as another one (its name, its node id)."""
    if via is None:
        return dut.invoke(0, command)
    name, node = via
    return dut.lab.controller.call("as", name, "invoke", node, 0, command)        # type: ignore[attr-defined]


def status_of(dut: Dut, command: Any, via: tuple[str, int] | None = None) -> int:
    """The Interaction Model status a command is refused with."""
    with pytest.raises(DutStatusError) as err:
        invoke(dut, command, via)
    return err.value.status


def csr(dut: Dut, for_update: bool = False, via: tuple[str, int] | None = None) -> Any:
    return invoke(dut, OC.Commands.CSRRequest(CSRNonce=os.urandom(32), isForUpdateNOC=for_update), via)


def chain(dut: Dut, issuer: str | None, csr_response: Any, node_id: int) -> dict[str, Any]:
    """The NOC chain administrator `issuer` (None: ours) issues for the node's CSR."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    if issuer is None:
        return lab.controller.call("admin_ops:issue_chain", csr_response, node_id)
    return lab.controller.call("as", issuer, "admin_ops:issue_chain", csr_response, node_id)


def add_noc(issued: dict[str, Any], subject: int, vendor: int = 0xFFF1) -> Any:
    return OC.Commands.AddNOC(NOCValue=issued["noc"], ICACValue=issued["icac"], IPKValue=issued["ipk"],
                              caseAdminSubject=subject, adminVendorId=vendor)


def fabrics_unfiltered(dut: Dut, via: tuple[str, int] | None = None) -> list[Any]:
    paths = [(0, OC.Attributes.Fabrics)]
    if via is None:
        got = dut.call("read_paths", paths, fabric_filtered=False)              # type: ignore[attr-defined]
    else:
        got = dut.lab.controller.call("as", via[0], "read_paths", via[1], paths,  # type: ignore[attr-defined]
                                      fabric_filtered=False)
    return got[0]["OperationalCredentials"]["Fabrics"]


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_OPCREDS_1_1(dut: Dut):
    """Global attributes: the six attributes, the commands and responses of a commissionee."""
    o = dut.read_cluster(0, OC)
    assert set(range(6)) <= set(o["AttributeList"])
    assert {0x00, 0x02, 0x04, 0x06, 0x07, 0x09, 0x0A, 0x0B} <= set(o["AcceptedCommandList"])
    assert {0x01, 0x03, 0x05, 0x08} <= set(o["GeneratedCommandList"])


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_OPCREDS_2_1(dut: Dut):
    """Attributes: our fabric in Fabrics and NOCs (fabric-filtered: just ours), counts in range,
    the trusted roots, CurrentFabricIndex naming our entry."""
    o = dut.read_cluster(0, OC)
    index = o["CurrentFabricIndex"]
    assert 1 <= index <= 254
    assert 5 <= o["SupportedFabrics"] <= 254 and 1 <= o["CommissionedFabrics"] <= o["SupportedFabrics"]
    [fabric] = o["Fabrics"]
    assert fabric.fabricIndex == index and fabric.vendorID == 0xFFF1 and fabric.fabricID == 1
    assert len(fabric.rootPublicKey) == 65 and fabric.nodeID == dut.node_id   # type: ignore[attr-defined]
    assert len(fabric.label) <= 32
    [noc] = o["NOCs"]
    assert noc.fabricIndex == index and 0 < len(noc.noc) <= 400
    assert o["TrustedRootCertificates"] and all(0 < len(r) <= 400 for r in o["TrustedRootCertificates"])


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_OPCREDS_3_5(dut: Dut):
    """UpdateFabricLabel: a label up to 32 characters is taken (NOCResponse Ok) and shows in
    Fabrics; a longer one is refused with CONSTRAINT_ERROR."""
    response = dut.invoke(0, OC.Commands.UpdateFabricLabel(label="conformance"))
    assert response.statusCode == OC.Enums.NodeOperationalCertStatusEnum.kOk
    assert dut.read(0, OC.Attributes.Fabrics)[0].label == "conformance"
    with pytest.raises(DutStatusError) as err:
        dut.invoke(0, OC.Commands.UpdateFabricLabel(label="x" * 33))
    assert err.value.status == Status.CONSTRAINT_ERROR
    dut.invoke(0, OC.Commands.UpdateFabricLabel(label=""))


def _bytes_or_none(value: Any) -> bytes | None:
    return value if isinstance(value, bytes) and value else None


@pytest.mark.parametrize("dut", LIGHT, indirect=True)
def test_TC_OPCREDS_3_4(dut: Dut):
    """UpdateNOC error conditions over CASE: FAILSAFE_REQUIRED without a fail-safe, MissingCsr
    without a CSR, CONSTRAINT_ERROR after a CSR for AddNOC (also with a new root added),
    InvalidPublicKey for a NOC not on the CSR's key, InvalidNOC for a chain to another root;
    a CSRRequest for UpdateNOC over PASE is INVALID_COMMAND. The node's NOC stays as it was."""
    node = dut.node_id                                                             # type: ignore[attr-defined]
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    [original] = dut.read(0, OC.Attributes.NOCs)
    noc, icac = original.noc, _bytes_or_none(original.icac)
    assert len(dut.read(0, OC.Attributes.TrustedRootCertificates)) == 1
    assert status_of(dut, OC.Commands.UpdateNOC(NOCValue=noc, ICACValue=icac)) == Status.FAILSAFE_REQUIRED
    other = f"other-root-{node}"
    lab.controller.call("admin_ops:new_admin", other, 1, 0x3000 + node % 0x100, True)
    try:
        arm(dut, 900)
        response = dut.invoke(0, OC.Commands.UpdateNOC(NOCValue=noc, ICACValue=icac))
        assert response.statusCode == NocStatus.kMissingCsr
        for_add = csr(dut, for_update=False)
        ours = chain(dut, None, for_add, node)
        assert status_of(dut, OC.Commands.UpdateNOC(NOCValue=ours["noc"], ICACValue=ours["icac"])) \
            == Status.CONSTRAINT_ERROR
        arm(dut, 0)
        arm(dut, 900)
        for_update = csr(dut, for_update=True)
        response = dut.invoke(0, OC.Commands.UpdateNOC(NOCValue=noc, ICACValue=icac))
        assert response.statusCode == NocStatus.kInvalidPublicKey
        foreign = chain(dut, other, for_update, node)
        response = dut.invoke(0, OC.Commands.UpdateNOC(NOCValue=foreign["noc"], ICACValue=foreign["icac"]))
        assert response.statusCode == NocStatus.kInvalidNOC
        if icac is not None:   # a NOC of the other root under our ICAC: the chain does not verify
            response = dut.invoke(0, OC.Commands.UpdateNOC(NOCValue=foreign["noc"], ICACValue=icac))
            assert response.statusCode == NocStatus.kInvalidNOC
        arm(dut, 0)
        arm(dut, 900)
        csr(dut, for_update=False)
        dut.invoke(0, OC.Commands.AddTrustedRootCertificate(rootCACertificate=foreign["rcac"]))
        assert status_of(dut, OC.Commands.UpdateNOC(NOCValue=foreign["noc"], ICACValue=foreign["icac"])) \
            == Status.CONSTRAINT_ERROR
        arm(dut, 0)
        # Over PASE: a CSR for UpdateNOC must come over CASE.
        address, port = dut.call("resolve")                                        # type: ignore[attr-defined]
        opened = window(dut, discriminator_of(dut, 0x34))
        pase_node = node + 0x2000
        try:
            lab.controller.call("as", other, "admin_ops:pase", address, port, opened["passcode"], pase_node)
            arm(dut, 900, via=(other, pase_node))
            assert status_of(dut, OC.Commands.CSRRequest(CSRNonce=os.urandom(32), isForUpdateNOC=True),
                             via=(other, pase_node)) == Status.INVALID_COMMAND
        finally:
            revoke(dut)
        assert dut.read(0, C.AdministratorCommissioning.Attributes.WindowStatus) == 0
    finally:
        try:
            arm(dut, 0)
        finally:
            lab.controller.call("drop_controller", other)
    [after] = dut.read(0, OC.Attributes.NOCs)
    assert after.noc == noc and len(dut.read(0, OC.Attributes.TrustedRootCertificates)) == 1


def add_fabric_over_case(dut: Dut, admin: str, admin_node: int, fabric_id: int, new_node: int,
                         vendor: int = 0xFFF1) -> Any:
    """Our controller adds a fabric for administrator `admin` (a root of its own) over its CASE
    session: fail-safe, CSR, `admin`'s root and NOC; the NOCResponse (the fail-safe stays armed
    when it is not Ok)."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    lab.controller.call("admin_ops:new_admin", admin, fabric_id, admin_node, True, vendor)
    arm(dut, 60)
    issued = chain(dut, admin, csr(dut), new_node)
    dut.invoke(0, OC.Commands.AddTrustedRootCertificate(rootCACertificate=issued["rcac"]))
    return dut.invoke(0, add_noc(issued, admin_node, vendor))


def complete_as(dut: Dut, admin: str, new_node: int) -> int:
    """`admin` finds the node on its new fabric (DNS-SD), opens CASE and sends CommissioningComplete;
    its fabric index on the node."""
    response = invoke(dut, GC.Commands.CommissioningComplete(), via=(admin, new_node))
    assert response.errorCode == CommissioningError.kOk, response
    return invoke_read(dut, admin, new_node, OC.Attributes.CurrentFabricIndex)


def invoke_read(dut: Dut, admin: str, node: int, attribute: Any) -> Any:
    return dut.lab.controller.call("as", admin, "read", node, 0, attribute)       # type: ignore[attr-defined]


@pytest.mark.parametrize("dut", LIGHT, indirect=True)
def test_TC_OPCREDS_3_7(dut: Dut):
    """Add a second fabric over CASE: our administrator arms the fail-safe, gets a CSR, installs a
    second administrator's root and NOC (AddNOC Ok); that administrator reaches the node on its
    fabric by CASE and completes commissioning; both see both fabrics. Then the table is filled up
    to SupportedFabrics the same way, the next AddNOC is refused with TableFull, and every added
    fabric is removed again."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    node = dut.node_id                                                             # type: ignore[attr-defined]
    own_index = dut.read(0, OC.Attributes.CurrentFabricIndex)
    assert [(f.fabricIndex, f.label) for f in fabrics_unfiltered(dut)] == [(own_index, "")]
    added: dict[str, int] = {}   # administrator name -> its fabric index on the node
    try:
        second, second_node = f"second-{node}", 0x4321_0000 + node
        response = add_fabric_over_case(dut, second, 0x4000, 0x30, second_node)
        assert response.statusCode == NocStatus.kOk
        added[second] = complete_as(dut, second, second_node)
        assert added[second] != own_index
        expected = sorted([own_index, added[second]])
        assert sorted(f.fabricIndex for f in fabrics_unfiltered(dut)) == expected
        assert sorted(f.fabricIndex for f in fabrics_unfiltered(dut, via=(second, second_node))) == expected

        supported = dut.read(0, OC.Attributes.SupportedFabrics)
        for k in range(dut.read(0, OC.Attributes.CommissionedFabrics), supported):
            name = f"filler-{node}-{k}"
            response = add_fabric_over_case(dut, name, 0x4100 + k, 0x40 + k, second_node + k)
            assert response.statusCode == NocStatus.kOk, (k, response)
            added[name] = complete_as(dut, name, second_node + k)
            # The SDK's own fabric table is as small as the node's: each administrator goes
            # once it has its fabric (our controller removes the fabrics by index at the end).
            lab.controller.call("drop_controller", name)
        assert dut.read(0, OC.Attributes.CommissionedFabrics) == supported
        response = add_fabric_over_case(dut, f"one-too-many-{node}", 0x4200, 0x60, second_node + supported)
        assert response.statusCode == NocStatus.kTableFull
        arm(dut, 0)
    finally:
        for index in added.values():
            removed = dut.invoke(0, OC.Commands.RemoveFabric(fabricIndex=index))
            assert removed.statusCode == NocStatus.kOk
        for name in [*added, f"one-too-many-{node}"]:
            lab.controller.call("drop_controller", name)
    assert dut.read(0, OC.Attributes.CommissionedFabrics) == 1


def root_public_key(rcac: bytes) -> bytes:
    from chip.tlv import TLVReader
    return TLVReader(rcac).get()["Any"][9]      # the certificate's ec-pub-key (tag 9)


@pytest.mark.parametrize("dut", LIGHT, indirect=True)
def test_TC_OPCREDS_3_1(dut: Dut):
    """AddNOC over PASE with its error cases, in a fail-safe: a root whose signature does not
    verify is INVALID_COMMAND, the same root twice is taken once, a second root CONSTRAINT_ERROR;
    TrustedRootCertificates and NOCs are not writable; AddNOC answers InvalidNOC for a chain to
    another root, InvalidAdminSubject for subject 0, Ok (then CONSTRAINT_ERROR once more) for the
    real chain, whose fabric shows as given; ArmFailSafe(0) rolls it all back; then a full
    commissioning by the same administrator leaves its fabric, its root and its Administer ACL
    entry, and KeySetRead(0) answers. Over that fabric's CASE session: the installed root again
    succeeds, AddNOC is MissingCsr without a CSR, InvalidPublicKey for an earlier CSR's key,
    FabricConflict for a second node id on the same fabric; RemoveFabric of an unknown index is
    InvalidFabricIndex."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    node = dut.node_id                                                             # type: ignore[attr-defined]
    address, port = dut.call("resolve")                                            # type: ignore[attr-defined]
    opened = window(dut, discriminator_of(dut, 0x31))
    failsafe_max = dut.read(0, GC.Attributes.BasicCommissioningInfo).maxCumulativeFailsafeSeconds
    th1, th1_node, th1_vendor, th1_fabric = f"th1-{node}", 0x5000 + node % 0x100, 0xFFF2, 0x31
    fake = f"th1-fake-{node}"
    new_node = node + 0x5000
    via = (th1, new_node)
    fabrics_before = len(fabrics_unfiltered(dut))
    th1_index = None
    try:
        lab.controller.call("admin_ops:new_admin", th1, th1_fabric, th1_node, True, th1_vendor)
        lab.controller.call("admin_ops:new_admin", fake, th1_fabric, th1_node, True)
        lab.controller.call("as", th1, "admin_ops:pase", address, port, opened["passcode"], new_node)
        arm(dut, failsafe_max, via)
        request = csr(dut, via=via)
        real, forged = chain(dut, th1, request, new_node), chain(dut, fake, request, new_node)
        malformed = real["rcac"][:-2] + bytes([real["rcac"][-2] ^ 1]) + real["rcac"][-1:]   # signature's last byte

        def roots() -> list[bytes]:
            return lab.controller.call("as", th1, "read", new_node, 0, OC.Attributes.TrustedRootCertificates)
        original_roots = len(roots())
        assert status_of(dut, OC.Commands.AddTrustedRootCertificate(malformed), via) == Status.INVALID_COMMAND
        assert len(roots()) == original_roots
        invoke(dut, OC.Commands.AddTrustedRootCertificate(real["rcac"]), via)
        assert len(roots()) == original_roots + 1
        invoke(dut, OC.Commands.AddTrustedRootCertificate(real["rcac"]), via)      # the same root: no change
        assert len(roots()) == original_roots + 1
        assert status_of(dut, OC.Commands.AddTrustedRootCertificate(forged["rcac"]), via) == Status.CONSTRAINT_ERROR
        assert roots().count(real["rcac"]) == 1 and len(roots()) == original_roots + 1
        write = lab.controller.call("as", th1, "write", new_node, 0,
                                    OC.Attributes.TrustedRootCertificates([*roots(), forged["rcac"]]))
        assert write == Status.UNSUPPORTED_WRITE

        assert invoke(dut, add_noc(forged, th1_node, th1_vendor), via).statusCode == NocStatus.kInvalidNOC
        assert invoke(dut, add_noc(real, 0, th1_vendor), via).statusCode == NocStatus.kInvalidAdminSubject
        added = invoke(dut, add_noc(real, th1_node, th1_vendor), via)
        assert added.statusCode == NocStatus.kOk and 1 <= added.fabricIndex <= 254
        assert status_of(dut, add_noc(real, th1_node, th1_vendor), via) == Status.CONSTRAINT_ERROR
        [noc] = lab.controller.call("as", th1, "read", new_node, 0, OC.Attributes.NOCs)
        assert noc.noc == real["noc"] and _bytes_or_none(noc.icac) == real["icac"]
        write = lab.controller.call("as", th1, "write", new_node, 0, OC.Attributes.NOCs(
            [OC.Structs.NOCStruct(noc=forged["noc"], icac=forged["icac"], fabricIndex=added.fabricIndex)]))
        assert write == Status.UNSUPPORTED_WRITE
        assert invoke(dut, OC.Commands.UpdateFabricLabel(label="Label 1"), via).statusCode == NocStatus.kOk
        [fabric] = lab.controller.call("as", th1, "read", new_node, 0, OC.Attributes.Fabrics)
        assert (fabric.rootPublicKey, fabric.nodeID, fabric.vendorID, fabric.fabricID, fabric.label) == \
            (root_public_key(real["rcac"]), new_node, th1_vendor, th1_fabric, "Label 1")

        arm(dut, 0, via)                       # rolls the root, the NOC and the fabric back
        lab.controller.call("as", th1, "admin_ops:expire", new_node)
        lab.controller.call("as", th1, "admin_ops:pase", address, port, opened["passcode"], new_node)
        assert len(roots()) == original_roots
        assert len(fabrics_unfiltered(dut)) == fabrics_before

        lab.controller.call("as", th1, "admin_ops:commission_after_pase", new_node, timeout=120)
        assert len(roots()) == original_roots + 1
        assert len(fabrics_unfiltered(dut)) == fabrics_before + 1
        th1_index = lab.controller.call("as", th1, "read", new_node, 0, OC.Attributes.CurrentFabricIndex)
        acl = lab.controller.call("as", th1, "read", new_node, 0, C.AccessControl.Attributes.Acl)
        admins = [e for e in acl if e.fabricIndex == th1_index and e.privilege == 5 and e.authMode == 2]
        assert [e.subjects for e in admins] == [[th1_node]]
        key_set = invoke(dut, C.GroupKeyManagement.Commands.KeySetRead(groupKeySetID=0), via)
        assert key_set.groupKeySet.groupKeySetID == 0
        assert invoke(dut, OC.Commands.UpdateFabricLabel(label="Label 1"), via).statusCode == NocStatus.kOk
        assert dut.invoke(0, OC.Commands.UpdateFabricLabel(label="Label 1")).statusCode == NocStatus.kLabelConflict

        # Over TH1's CASE session now: AddNOC without a CSR, for a key of an earlier CSR, and for
        # the fabric TH1 already has on the node (another node id).
        arm(dut, failsafe_max, via)
        invoke(dut, OC.Commands.AddTrustedRootCertificate(real["rcac"]), via)       # installed already
        assert invoke(dut, add_noc(real, th1_node, th1_vendor), via).statusCode == NocStatus.kMissingCsr
        arm(dut, 0, via)
        arm(dut, failsafe_max, via)
        csr(dut, via=via)
        stale = chain(dut, fake, request, new_node)                               # the first CSR's key
        invoke(dut, OC.Commands.AddTrustedRootCertificate(stale["rcac"]), via)
        assert invoke(dut, add_noc(stale, th1_node, th1_vendor), via).statusCode == NocStatus.kInvalidPublicKey
        arm(dut, 0, via)
        arm(dut, failsafe_max, via)
        conflict = chain(dut, th1, csr(dut, via=via), new_node + 1)
        invoke(dut, OC.Commands.AddTrustedRootCertificate(conflict["rcac"]), via)
        assert invoke(dut, add_noc(conflict, th1_node, th1_vendor), via).statusCode == NocStatus.kFabricConflict
        arm(dut, 0, via)
        assert len(roots()) == original_roots + 1
        bogus = dut.invoke(0, OC.Commands.RemoveFabric(fabricIndex=th1_index + 5))
        assert bogus.statusCode == NocStatus.kInvalidFabricIndex
        assert len(fabrics_unfiltered(dut)) == fabrics_before + 1
    finally:
        if dut.read(0, C.AdministratorCommissioning.Attributes.WindowStatus) != 0:
            revoke(dut)
        if th1_index is not None:
            assert dut.invoke(0, OC.Commands.RemoveFabric(fabricIndex=th1_index)).statusCode == NocStatus.kOk
        for name in (th1, fake):
            lab.controller.call("drop_controller", name)
    assert len(fabrics_unfiltered(dut)) == fabrics_before


@pytest.mark.parametrize("dut", LIGHT, indirect=True)
def test_TC_OPCREDS_3_2(dut: Dut):
    """CurrentFabricIndex: two more administrators (roots, vendor ids and fabric ids of their
    own) get fabrics from our controller over CASE; each reads back the FabricIndex its
    NOCResponse gave as CurrentFabricIndex, and a fabric-filtered Fabrics of just its entry with
    its root key, vendor id and fabric id; our controller removes both fabrics."""
    lab = dut.lab                                                                  # type: ignore[attr-defined]
    node = dut.node_id                                                             # type: ignore[attr-defined]
    admins = {f"cr2-{node}": (0xFFF2, 2222, node + 0x9001), f"cr3-{node}": (0xFFF3, 3333, node + 0x9002)}
    indexes: dict[str, int] = {}
    try:
        for k, (name, (vendor, fabric_id, new_node)) in enumerate(admins.items()):
            response = add_fabric_over_case(dut, name, 0x9100 + k, fabric_id, new_node, vendor)
            assert response.statusCode == NocStatus.kOk
            indexes[name] = response.fabricIndex
            done = invoke(dut, GC.Commands.CommissioningComplete(), via=(name, new_node))
            assert done.errorCode == CommissioningError.kOk
        roots = {root_public_key(r) for r in dut.read(0, OC.Attributes.TrustedRootCertificates)}
        [ours] = dut.read(0, OC.Attributes.Fabrics)
        for name, (vendor, fabric_id, new_node) in admins.items():
            assert invoke_read(dut, name, new_node, OC.Attributes.CurrentFabricIndex) == indexes[name]
            [fabric] = invoke_read(dut, name, new_node, OC.Attributes.Fabrics)
            assert (fabric.fabricIndex, fabric.vendorID, fabric.fabricID, fabric.nodeID) == \
                (indexes[name], vendor, fabric_id, new_node)
            assert fabric.rootPublicKey in roots and fabric.rootPublicKey != ours.rootPublicKey
    finally:
        for index in indexes.values():
            assert dut.invoke(0, OC.Commands.RemoveFabric(fabricIndex=index)).statusCode == NocStatus.kOk
        for name in admins:
            lab.controller.call("drop_controller", name)
    assert dut.read(0, OC.Attributes.CommissionedFabrics) == 1
