"""TC_ACL and TC_ACE: the Access Control cluster on the network node's root endpoint, and its
enforcement on a second controller of the same fabric that holds only View privilege."""
from __future__ import annotations

from typing import Any

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import all_duts, over_network
from dut import Dut, DutStatusError

from clusters.status import Status

A = C.AccessControl
E = A.Enums
NOT_APPLICABLE = {
    "TC_ACL_2_3": "the Extension attribute is optional and not served",
    "TC_ACL_2_11": "Managed Device feature (MNGD, access restrictions) is not supported",
    "TC_ACE_1_6": "group-addressed messages (group multicast) are not modelled",
}
NOT_COVERED = {
    "TC_ACL_2_2": "the cluster on endpoint 0 only: read on every endpoint (next)",
    "TC_ACL_2_5": "AccessControlExtensionChanged events: the Extension attribute is not served, so "
                  "this is likely not applicable; to confirm against the plan",
    "TC_ACL_2_6": "AccessControlEntryChanged events on ACL writes",
    "TC_ACL_2_7": "ACL entries on two fabrics (needs the second administrator of TC_CADMIN_1_1)",
    "TC_ACL_2_8": "ACL access across fabrics",
    "TC_ACL_2_9": "access denied after removing the admin entry (would cut off the session's controller)",
    "TC_ACL_2_10": "ACL persistence across a reboot",
    "TC_ACE_1_1": "privilege levels per cluster (Operate/Manage/Administer), beyond TC_ACE_1_2's View",
    "TC_ACE_1_3": "subjects by CASE Authenticated Tags",
    "TC_ACE_1_4": "targets by endpoint, cluster and device type",
    "TC_ACE_1_5": "access across two fabrics",
}
NODES = [p for p in over_network(all_duts()) if p.values[0][1] in ("dimmable_light", "bridge")]
ADMIN_NODE, VIEWER_NODE = 112233, 0x2000


def entry(privilege: int, subjects: list[int], targets: Any = NullValue) -> A.Structs.AccessControlEntryStruct:
    return A.Structs.AccessControlEntryStruct(privilege=privilege, authMode=E.AccessControlEntryAuthModeEnum.kCase,
                                              subjects=subjects, targets=targets)


ADMIN = entry(E.AccessControlEntryPrivilegeEnum.kAdminister, [ADMIN_NODE])


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACL_1_1(dut: Dut):
    a = dut.read_cluster(0, A)
    assert {0, 2, 3, 4} <= set(a["AttributeList"]) and a["AcceptedCommandList"] == []


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACL_2_1(dut: Dut):
    """Attributes: the commissioner's Administer entry (CASE, our node id) and the minima."""
    a = dut.read_cluster(0, A)
    assert a["SubjectsPerAccessControlEntry"] >= 4 and a["TargetsPerAccessControlEntry"] >= 3
    assert a["AccessControlEntriesPerFabric"] >= 4
    admins = [e for e in a["Acl"] if e.privilege == E.AccessControlEntryPrivilegeEnum.kAdminister]
    assert admins and admins[0].authMode == E.AccessControlEntryAuthModeEnum.kCase
    assert ADMIN_NODE in admins[0].subjects


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACL_2_4(dut: Dut):
    """Writing the ACL: a valid list is kept as written; invalid entries (a PASE entry, a group
    subject with Administer, a target that names nothing) are refused with CONSTRAINT_ERROR.
    A list goes out in chunks (replace with the first entry, append the rest), so what stays is
    the valid entry before the bad one."""
    acl = [ADMIN, entry(E.AccessControlEntryPrivilegeEnum.kView, [VIEWER_NODE])]
    dut.write(0, A.Attributes.Acl, acl)
    got = dut.read(0, A.Attributes.Acl)
    assert [(e.privilege, e.authMode, e.subjects) for e in got] == [(e.privilege, e.authMode, e.subjects) for e in acl]
    pase = A.Structs.AccessControlEntryStruct(privilege=E.AccessControlEntryPrivilegeEnum.kView,
                                              authMode=E.AccessControlEntryAuthModeEnum.kPase, subjects=NullValue,
                                              targets=NullValue)
    group_admin = A.Structs.AccessControlEntryStruct(privilege=E.AccessControlEntryPrivilegeEnum.kAdminister,
                                                     authMode=E.AccessControlEntryAuthModeEnum.kGroup, subjects=[1],
                                                     targets=NullValue)
    empty_target = entry(E.AccessControlEntryPrivilegeEnum.kView, [VIEWER_NODE],
                         [A.Structs.AccessControlTargetStruct(cluster=NullValue, endpoint=NullValue,
                                                              deviceType=NullValue)])
    for bad in (pase, group_admin, empty_target):
        with pytest.raises(DutStatusError) as err:
            dut.write(0, A.Attributes.Acl, [ADMIN, bad])
        assert err.value.status == Status.CONSTRAINT_ERROR, bad
        assert [(e.privilege, e.subjects) for e in dut.read(0, A.Attributes.Acl)] == [(ADMIN.privilege, [ADMIN_NODE])]
    dut.write(0, A.Attributes.Acl, [ADMIN])


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACE_1_2(dut: Dut):
    """Enforcement: a controller with View privilege reads, but its writes and invokes are
    refused with UNSUPPORTED_ACCESS; without any entry it cannot even read; the admin can."""
    lab, node = dut.lab, dut.node_id                      # type: ignore[attr-defined]
    lab.controller.call("make_controller", "viewer", 1, VIEWER_NODE)

    def as_viewer(op: str, *args):
        return lab.controller.call("as", "viewer", op, node, *args)

    dut.write(0, A.Attributes.Acl, [ADMIN, entry(E.AccessControlEntryPrivilegeEnum.kView, [VIEWER_NODE])])
    try:
        label = as_viewer("read", 0, C.BasicInformation.Attributes.NodeLabel)
        assert label == dut.read(0, C.BasicInformation.Attributes.NodeLabel)
        assert as_viewer("write", 0, C.BasicInformation.Attributes.NodeLabel("denied")) == Status.UNSUPPORTED_ACCESS
        with pytest.raises(DutStatusError) as err:
            as_viewer("invoke", 0, C.GeneralCommissioning.Commands.ArmFailSafe(expiryLengthSeconds=0, breadcrumb=0))
        assert err.value.status == Status.UNSUPPORTED_ACCESS
        dut.write(0, A.Attributes.Acl, [ADMIN])
        lab.controller.call("as", "viewer", "expire_sessions", node)
        with pytest.raises(DutStatusError) as err:
            as_viewer("read", 0, C.BasicInformation.Attributes.NodeLabel)
        assert err.value.status == Status.UNSUPPORTED_ACCESS
    finally:
        dut.write(0, A.Attributes.Acl, [ADMIN])
        lab.controller.call("drop_controller", "viewer")
    assert dut.read(0, C.BasicInformation.Attributes.NodeLabel) == label
