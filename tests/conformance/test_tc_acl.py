"""TC_ACL and TC_ACE: the Access Control cluster on the network node's root endpoint, its events,
its entries on two fabrics and across a reboot, and its enforcement: privileges, subjects (node
ids and CASE Authenticated Tags), targets (endpoint, cluster, device type) and fabrics, seen by
second controllers of the same fabric and by a second administrator on a fabric of its own."""
from __future__ import annotations

import itertools
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from conftest import all_duts, over_network
from dut import Dut, DutStatusError

from clusters.status import Status

A = C.AccessControl
E = A.Enums
OC = C.OperationalCredentials
ENTRY_CHANGED = A.Events.AccessControlEntryChanged
Change = E.ChangeTypeEnum
P = E.AccessControlEntryPrivilegeEnum
VIEW, OPERATE, MANAGE, ADMINISTER = P.kView, P.kOperate, P.kManage, P.kAdminister
GROUP = E.AccessControlEntryAuthModeEnum.kGroup
NOT_APPLICABLE = {
    "TC_ACL_2_3": "the Extension attribute is optional and not served",
    "TC_ACL_2_5": ("AccessControlExtensionChanged events on Extension writes: PICS ACL.S.A0001 (the optional "
                   "Extension attribute, feature EXTS), which is not served"),
    "TC_ACL_2_7": ("Extension entries on two fabrics: every step is PICS ACL.S.A0001 or ACL.S.E01 (the "
                   "optional Extension attribute and its event, feature EXTS), which are not served"),
    "TC_ACL_2_11": "Managed Device feature (MNGD, access restrictions) is not supported",
    "TC_ACE_1_6": "group-addressed messages (group multicast) are not modelled",
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


# ---- shared steps ---------------------------------------------------------------------------------

def target(endpoint: Any = NullValue, cluster: Any = NullValue, device_type: Any = NullValue) -> Any:
    return A.Structs.AccessControlTargetStruct(cluster=cluster, endpoint=endpoint, deviceType=device_type)


def cat_subject(cat: int) -> int:
    """The ACL subject of a CASE Authenticated Tag (identifier << 16 | version)."""
    return 0xFFFFFFFD_00000000 | cat


#: The admin's entry while a test case narrows the ACL: Administer on the ACL alone, so it can
#: always write the ACL back.
ACL_ADMIN = entry(ADMINISTER, [ADMIN_NODE], [target(0, A.id)])


def controller_call(dut: Dut, *args: Any, **kwargs: Any) -> Any:
    return dut.lab.controller.call(*args, **kwargs)       # type: ignore[attr-defined]


def acl_events(dut: Dut, event_min: int = 0, who: str | None = None, node: int | None = None) -> list[tuple[int, Any]]:
    """(event number, data) of the AccessControlEntryChanged events the controller (ours, or `who`
    reaching the node as `node`) may read, from number `event_min`."""
    if who is None:
        records = dut.run("acl_controller:read_events", ENTRY_CHANGED, event_min)   # type: ignore[attr-defined]
    else:
        records = controller_call(dut, "as", who, "acl_controller:read_events", node, ENTRY_CHANGED, event_min)
    assert all(status == Status.SUCCESS for _, status, _ in records), records
    return [(number, data) for number, status, data in records]


def reads(dut: Dut, endpoint: int, attribute: Any, who: str | None = None, node: int | None = None) -> bool:
    """Whether a read succeeds (True) or is refused with UNSUPPORTED_ACCESS (False)."""
    try:
        if who is None:
            dut.read(endpoint, attribute)
        else:
            controller_call(dut, "as", who, "read", node, endpoint, attribute)
        return True
    except DutStatusError as err:
        assert err.status == Status.UNSUPPORTED_ACCESS, err
        return False


def refused(call: Any, *args: Any) -> int:
    """The status a write or invoke was refused with (0 if it succeeded)."""
    try:
        call(*args)
        return 0
    except DutStatusError as err:
        return err.status


@contextmanager
def narrowed(dut: Dut) -> Iterator[None]:
    """Whatever the test case writes to the ACL, the admin's full entry is back afterwards."""
    try:
        yield
    finally:
        dut.write(0, A.Attributes.Acl, [ADMIN])


@dataclass
class SecondAdmin:
    """An administrator on a fabric of its own (TH2 of the plans), commissioned by TC_CADMIN_1_1's way."""
    name: str            # its controller in the controller process
    subject: int         # its own node id, the subject of its admin entry
    node: int            # the dut's node id on its fabric
    fabric_index: int    # the dut's index of that fabric

    def call(self, dut: Dut, op: str, *args: Any) -> Any:
        return controller_call(dut, "as", self.name, op, self.node, *args)

    def write(self, dut: Dut, attribute: Any, value: Any) -> None:
        status = self.call(dut, "write", 0, attribute(value))
        if status:
            raise DutStatusError(status, f"write {attribute.__qualname__} as {self.name}")


_second_fabrics = itertools.count(0x300)
#: dut node id -> its second administrator, shared by the test cases that need one: each new
#: controller takes a fabric of the SDK's own (small) fabric table in the one controller process.
_second_admins: dict[int, tuple[Dut, SecondAdmin]] = {}


def second_admin(dut: Dut) -> SecondAdmin:
    """The dut's second administrator (TH2 of the plans): the one already on it, or a new one that
    commissions the dut into a fabric of its own (an enhanced window opened by our admin, then
    PASE at the node's address and the commissioning steps, TC_CADMIN_1_1's way)."""
    node = dut.node_id                                                     # type: ignore[attr-defined]
    if node in _second_admins:
        return _second_admins[node][1]
    fabric_id = next(_second_fabrics)
    name, other_node = f"acl-{node}-{fabric_id}", node + 0x2000
    address, port = dut.call("resolve")                                    # type: ignore[attr-defined]
    opened = dut.call("open_window", (node % 16) << 8 | 0x3C, timeout=60)  # type: ignore[attr-defined]
    admin = SecondAdmin(name, ADMIN_NODE + fabric_id, other_node, 0)
    _second_admins[node] = (dut, admin)
    controller_call(dut, "commission_other_fabric", name, fabric_id, other_node, address, port,
                    opened["passcode"], timeout=120)
    admin.fabric_index = controller_call(dut, "as", name, "read", other_node, 0, OC.Attributes.CurrentFabricIndex)
    return admin


def retire_second_admin(dut: Dut) -> None:
    """Our admin (its ACL restored) removes the second administrator's fabric, unless the test
    case did, and its controller is shut; the window is closed if a commissioning failed."""
    _, admin = _second_admins.pop(dut.node_id)                             # type: ignore[attr-defined]
    dut.write(0, A.Attributes.Acl, [ADMIN])
    window = C.AdministratorCommissioning.Attributes.WindowStatus
    if dut.read(0, window) != C.AdministratorCommissioning.Enums.CommissioningWindowStatusEnum.kWindowNotOpen:
        dut.invoke(0, C.AdministratorCommissioning.Commands.RevokeCommissioning(), timed_ms=5000)
    if admin.fabric_index and dut.read(0, OC.Attributes.CommissionedFabrics) > 1:
        dut.invoke(0, OC.Commands.RemoveFabric(fabricIndex=admin.fabric_index))
    controller_call(dut, "drop_controller", admin.name)
    assert dut.read(0, OC.Attributes.CommissionedFabrics) == 1, "the second fabric was left on the node"


#: name -> (lab, node id) of TC_ACE_1_3's controllers, made once for both duts.
_cat_controllers: dict[str, tuple[Any, int]] = {}


@pytest.fixture(scope="module", autouse=True)
def _leave_no_controllers() -> Iterator[None]:
    """At the end of the module: second administrators and extra controllers are gone."""
    yield
    for dut, _ in list(_second_admins.values()):
        retire_second_admin(dut)
    for name, (lab, _) in list(_cat_controllers.items()):
        lab.controller.call("drop_controller", name)
        del _cat_controllers[name]


# ---- TC_ACL -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACL_2_2(dut: Dut):
    """Cluster endpoint: Access Control is in endpoint 0's ServerList and no other endpoint's."""
    servers = dut.call("read_paths", [(C.Descriptor.Attributes.ServerList)])   # type: ignore[attr-defined]
    assert A.id in servers[0]["Descriptor"]["ServerList"]
    others = {ep: values["Descriptor"]["ServerList"] for ep, values in servers.items() if ep != 0}
    assert others and not [ep for ep, ids in others.items() if A.id in ids]


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACL_2_6(dut: Dut):
    """AccessControlEntryChanged: the commissioning's Added event (by PASE: passcode id 0, no admin
    node) is held; an ACL write of two entries adds events naming the admin, the view entry
    Added; a write refused for an invalid entry (group id 0) logs no event of that entry. The
    admin entry written again is Changed (the plan, one AttributeDataIB) or Removed then Added
    (the plan's legacy list encoding, which this SDK controller sends)."""
    f1 = dut.read(0, OC.Attributes.CurrentFabricIndex)
    events = acl_events(dut)
    assert all(e.fabricIndex == f1 for _, e in events)
    commissioning = [e for _, e in events if e.changeType == Change.kAdded and e.adminPasscodeID == 0]
    assert commissioning, events
    first = commissioning[0]
    assert first.adminNodeID == NullValue and first.latestValue.privilege == ADMINISTER
    assert first.latestValue.authMode == E.AccessControlEntryAuthModeEnum.kCase
    assert ADMIN_NODE in first.latestValue.subjects and first.latestValue.targets == NullValue
    assert first.latestValue.fabricIndex == f1
    last = max(number for number, _ in events)
    view = entry(VIEW, [ADMIN_NODE])
    with narrowed(dut):
        dut.write(0, A.Attributes.Acl, [ADMIN, view])
        new = [e for _, e in acl_events(dut, last + 1)]
        assert new and all(e.adminNodeID == ADMIN_NODE and e.adminPasscodeID == NullValue and e.fabricIndex == f1
                           for e in new), new
        added = new[-1]
        assert added.changeType == Change.kAdded and added.latestValue.privilege == VIEW
        assert added.latestValue.subjects == [ADMIN_NODE] and added.latestValue.fabricIndex == f1
        admin = [(e.changeType, e.latestValue.privilege) for e in new[:-1]]
        one_piece = [(Change.kChanged, ADMINISTER)]
        legacy = [(Change.kRemoved, ADMINISTER), (Change.kAdded, ADMINISTER)]
        assert admin in (one_piece, legacy), new
        last = max(number for number, _ in acl_events(dut, last + 1))
        group_zero = A.Structs.AccessControlEntryStruct(privilege=VIEW, authMode=GROUP, subjects=[0], targets=NullValue)
        assert refused(dut.write, 0, A.Attributes.Acl, [ADMIN, group_zero]) == Status.CONSTRAINT_ERROR
        assert not [e for _, e in acl_events(dut, last + 1) if 0 in (e.latestValue.subjects or [])]


# ---- TC_ACE -----------------------------------------------------------------------------------------

@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACE_1_1(dut: Dut):
    """Privileges: with Administer on the ACL alone plus Administer, Manage, Operate, View or
    nothing on the rest of endpoint 0, the admin may read NOCs, write Location and invoke
    UpdateFabricLabel (Administer), write NodeLabel and invoke TestEventTrigger (Manage; a zero
    key is CONSTRAINT_ERROR), and read VendorID (View), exactly as far as its privilege goes."""
    label = dut.read(0, C.BasicInformation.Attributes.NodeLabel)
    own = dut.read(0, OC.Attributes.CurrentFabricIndex)
    fabric_label = next(f.label for f in dut.read(0, OC.Attributes.Fabrics) if f.fabricIndex == own)
    trigger = C.GeneralDiagnostics.Commands.TestEventTrigger(enableKey=bytes(16), eventTrigger=0)
    denied = Status.UNSUPPORTED_ACCESS
    with narrowed(dut):
        for privilege in (ADMINISTER, MANAGE, OPERATE, VIEW, None):
            rest = [] if privilege is None else [entry(privilege, [ADMIN_NODE], [target(0)])]
            acl = [entry(ADMINISTER, [ADMIN_NODE], [target(0)])] if privilege == ADMINISTER else [ACL_ADMIN, *rest]
            dut.write(0, A.Attributes.Acl, acl)
            administer = privilege == ADMINISTER
            manage = privilege in (ADMINISTER, MANAGE)
            assert reads(dut, 0, OC.Attributes.NOCs) == administer, privilege
            assert refused(dut.write, 0, C.BasicInformation.Attributes.Location, "XX") == (0 if administer else denied)
            assert refused(dut.invoke, 0, OC.Commands.UpdateFabricLabel(label="TestFabric")) == \
                (0 if administer else denied)
            node_label = C.BasicInformation.Attributes.NodeLabel
            assert refused(dut.write, 0, node_label, "TestNode") == (0 if manage else denied)
            assert refused(dut.invoke, 0, trigger) == (Status.CONSTRAINT_ERROR if manage else denied)
            assert reads(dut, 0, C.BasicInformation.Attributes.VendorID) == (privilege is not None), privilege
    dut.write(0, C.BasicInformation.Attributes.NodeLabel, label)
    dut.invoke(0, OC.Commands.UpdateFabricLabel(label=fabric_label))


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACE_1_3(dut: Dut):
    """Subjects: three more controllers of our fabric, TH1 with CAT 1 v3, TH2 with CAT 1 v2 and
    CAT 2 v1, TH3 with CAT 1 v1 and CAT 2 v2; a View entry on endpoint 0 for every subject, for
    each node id and pair of them, and for each CAT version lets exactly those read the
    Descriptor (a CAT subject is held at its version or a later one)."""
    cat1, cat2 = 0x1111_0000, 0x2222_0000
    ths = {1: [cat1 | 3], 2: [cat1 | 2, cat2 | 1], 3: [cat1 | 1, cat2 | 2]}
    node_ids = {th: ADMIN_NODE + th for th in ths}
    names = {th: f"ace13-th{th}" for th in ths}
    node = dut.node_id                                                     # type: ignore[attr-defined]
    for th, cats in ths.items():
        controller_call(dut, "acl_controller:make_cat_controller", names[th], node_ids[th], cats)
        _cat_controllers[names[th]] = (dut.lab, node_ids[th])                  # type: ignore[attr-defined]
    cases: list[tuple[list[int], set[int]]] = [([], {1, 2, 3})]
    for group in ([1], [2], [3], [1, 2], [1, 3], [2, 3], [1, 2, 3]):
        cases.append(([node_ids[th] for th in group], set(group)))
    for cat, version, holders in ((cat1, 1, {1, 2, 3}), (cat1, 2, {1, 2}), (cat1, 3, {1}),
                                  (cat2, 1, {2, 3}), (cat2, 2, {3}), (cat2, 3, set())):
        cases.append(([cat_subject(cat | version)], holders))
    with narrowed(dut):
        for subjects, readers in cases:
            dut.write(0, A.Attributes.Acl, [ACL_ADMIN, entry(VIEW, subjects, [target(0)])])
            got = {th for th in ths if reads(dut, 0, C.Descriptor.Attributes.DeviceTypeList, names[th], node)}
            assert got == readers, (subjects, got)


def app_endpoint(dut: Dut) -> tuple[int, int]:
    """PIXIT.ACE.APPENDPOINT and APPDEVTYPEID: the first endpoint with an On/Off server, and its
    device type (not Bridged Node)."""
    for endpoint in dut.endpoints()[1:]:
        if C.OnOff.id in dut.read(endpoint, C.Descriptor.Attributes.ServerList):
            types = [t.deviceType for t in dut.read(endpoint, C.Descriptor.Attributes.DeviceTypeList)]
            return endpoint, next(t for t in types if t != 0x0013)
    raise AssertionError(f"{dut.name} has no On/Off endpoint")


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACE_1_4(dut: Dut):
    """Targets: View entries by cluster, endpoint, endpoint and cluster, device type (root node,
    the application's), device type and cluster, and two targets at once, let the admin read
    endpoint 0's Descriptor, the application endpoint's Descriptor and its On/Off exactly where
    a target covers them; wildcard reads leave out what is not covered."""
    ep, devtype = app_endpoint(dut)
    descriptor, app = C.Descriptor.Attributes.DeviceTypeList, C.OnOff.Attributes.OnOff
    every = A.Structs.AccessControlEntryStruct(privilege=ADMINISTER, authMode=E.AccessControlEntryAuthModeEnum.kCase,
                                               subjects=[], targets=[target(0, A.id)])
    cases = [   # targets -> (ep0 Descriptor, app Descriptor, app On/Off) readable
        ([], (True, True, True)),
        ([target(cluster=C.Descriptor.id)], (True, True, False)),
        ([target(cluster=C.OnOff.id)], (False, False, True)),
        ([target(ep, C.Descriptor.id)], (False, True, False)),
        ([target(ep, C.OnOff.id)], (False, False, True)),
        ([target(ep)], (False, True, True)),
        ([target(device_type=0x0016)], (True, False, False)),
        ([target(device_type=devtype)], (False, True, True)),
        ([target(cluster=C.Descriptor.id, device_type=devtype)], (False, True, False)),
        ([target(cluster=C.OnOff.id, device_type=devtype)], (False, False, True)),
        ([target(0, C.Descriptor.id), target(ep, C.OnOff.id)], (True, False, True)),
    ]
    with narrowed(dut):
        for targets, expected in cases:
            dut.write(0, A.Attributes.Acl, [every, entry(VIEW, [], targets)])
            got = (reads(dut, 0, descriptor), reads(dut, ep, descriptor), reads(dut, ep, app))
            assert got == expected, (targets, got)
        wildcard = dut.call("read_paths", [descriptor])                        # type: ignore[attr-defined]
        assert 0 in wildcard and ep not in wildcard
        wildcard = dut.call("read_paths", [app])                               # type: ignore[attr-defined]
        assert ep in wildcard and 0 not in wildcard


# ---- test cases with a second administrator: 2_8 and ACE_1_5 share one per dut, 2_10 removes
# ---- its fabric as the plan does, and 2_9 (which cuts its administrator off) has its own.

@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACL_2_8(dut: Dut):
    """ACL multi-fabric: each administrator writes its fabric's ACL (one Administer entry with two
    subjects); each reads back its own entry only, and the AccessControlEntryChanged events each
    reads are its fabric's: its commissioning's Added and its own write's."""
    f1 = dut.read(0, OC.Attributes.CurrentFabricIndex)
    th2 = second_admin(dut)
    f2 = th2.fabric_index
    assert f2 != f1
    mine, theirs = entry(ADMINISTER, [ADMIN_NODE, 1111]), entry(ADMINISTER, [th2.subject, 2222])
    with narrowed(dut):
        dut.write(0, A.Attributes.Acl, [mine])
        th2.write(dut, A.Attributes.Acl, [theirs])
        for acl, written, fabric in ((dut.read(0, A.Attributes.Acl), mine, f1),
                                     (th2.call(dut, "read", 0, A.Attributes.Acl), theirs, f2)):
            assert [(e.privilege, e.authMode, e.subjects, e.targets, e.fabricIndex) for e in acl] == [
                (written.privilege, written.authMode, written.subjects, NullValue, fabric)]
        for events, fabric, admin, subjects in (
                (acl_events(dut), f1, ADMIN_NODE, [ADMIN_NODE, 1111]),
                (acl_events(dut, who=th2.name, node=th2.node), f2, th2.subject, [th2.subject, 2222])):
            assert all(e.fabricIndex == fabric and e.latestValue.fabricIndex == fabric for _, e in events), events
            assert [e for _, e in events if e.changeType == Change.kAdded and e.adminPasscodeID == 0
                    and e.adminNodeID == NullValue and e.latestValue.privilege == ADMINISTER]
            wrote = [e for _, e in events if e.adminNodeID == admin and e.latestValue.subjects == subjects]
            assert wrote and wrote[-1].changeType in (Change.kAdded, Change.kChanged), events


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACE_1_5(dut: Dut):
    """Multi-fabric: our fabric's ACL lets every subject view endpoint 0's Descriptor, the second
    fabric's its Basic Information; each administrator reads what its own fabric's entries
    grant and is refused the other's."""
    th2 = second_admin(dut)
    types, vendor = C.Descriptor.Attributes.DeviceTypeList, C.BasicInformation.Attributes.VendorID
    with narrowed(dut):
        dut.write(0, A.Attributes.Acl, [ACL_ADMIN, entry(VIEW, [], [target(0, C.Descriptor.id)])])
        th2.write(dut, A.Attributes.Acl, [entry(ADMINISTER, [th2.subject], [target(0, A.id)]),
                                          entry(VIEW, [], [target(0, C.BasicInformation.id)])])
        assert reads(dut, 0, types) and not reads(dut, 0, vendor)
        assert not reads(dut, 0, types, th2.name, th2.node) and reads(dut, 0, vendor, th2.name, th2.node)


def unfiltered(dut: Dut, attribute: Any, admin: SecondAdmin | None = None) -> list[Any]:
    """Endpoint 0's `attribute` (a fabric-scoped list) read without fabric filtering, by our
    administrator or by `admin`."""
    paths = [(0, attribute)]
    if admin is None:
        got = dut.call("read_paths", paths, fabric_filtered=False)         # type: ignore[attr-defined]
    else:
        got = controller_call(dut, "as", admin.name, "read_paths", admin.node, paths, fabric_filtered=False)
    cluster = next(c for c in (A, OC, C.GroupKeyManagement) if c.id == attribute.cluster_id)
    return got[0][cluster.__name__][attribute.__name__]


def check_masked(entries: list[Any], own: int) -> int:
    """Entries of fabrics other than `own` carry their FabricIndex and nothing fabric-sensitive
    (the controller fills the fields the node left out with their defaults); their count."""
    others = [e for e in entries if e.fabricIndex != own]
    for e in others:
        assert e == type(e)(fabricIndex=e.fabricIndex), f"fabric-sensitive fields of fabric {e.fabricIndex} shown: {e}"
    return len(others)


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_IDM_8_1(dut: Dut):
    """Fabric-scoped data across two fabrics (TC_IDM_8_1, here for the second administrator): an
    unfiltered read of the ACL shows both administrators every fabric's entries, the other
    fabric's without its fabric-sensitive fields; a write on one fabric leaves the other's
    filtered read as it was; UpdateFabricLabel on one fabric changes only its label in both
    unfiltered Fabrics reads; the other fabric-scoped lists (NOCs, GroupKeyMap) read filtered
    show the reader's entries only and unfiltered mask the other's. (Its subscription and event
    steps are TC_IDM_4_x / TC_ACL_2_8's.)"""
    f1 = dut.read(0, OC.Attributes.CurrentFabricIndex)
    th2 = second_admin(dut)
    f2 = th2.fabric_index
    th2.write(dut, A.Attributes.Acl, [entry(ADMINISTER, [th2.subject])])   # TC_ACE_1_5 narrowed it
    # Step 1: the ACL, unfiltered.
    acl1, acl2 = unfiltered(dut, A.Attributes.Acl), unfiltered(dut, A.Attributes.Acl, th2)
    assert len(acl1) == len(acl2) and {e.fabricIndex for e in acl1} == {f1, f2}
    assert check_masked(acl1, f1) > 0 and check_masked(acl2, f2) > 0
    assert [e for e in acl1 if e.fabricIndex == f1] == dut.read(0, A.Attributes.Acl)
    # Step 2: a write on our fabric, filtered reads before and after.
    before1, before2 = dut.read(0, A.Attributes.Acl), th2.call(dut, "read", 0, A.Attributes.Acl)
    viewer = entry(VIEW, [VIEWER_NODE])
    with narrowed(dut):
        dut.write(0, A.Attributes.Acl, [*before1, viewer])
        after1 = dut.read(0, A.Attributes.Acl)
        assert len(after1) == len(before1) + 1 and after1[-1].subjects == [VIEWER_NODE]
        assert th2.call(dut, "read", 0, A.Attributes.Acl) == before2
    # Step 3: UpdateFabricLabel on our fabric, seen by both in unfiltered Fabrics reads.
    label1 = next(f.label for f in unfiltered(dut, OC.Attributes.Fabrics) if f.fabricIndex == f1)
    label2 = next(f.label for f in unfiltered(dut, OC.Attributes.Fabrics, th2) if f.fabricIndex == f2)
    try:
        dut.invoke(0, OC.Commands.UpdateFabricLabel(label="TC-IDM-8.1 F1"))
        for reader in (None, th2):
            labels = {f.fabricIndex: f.label for f in unfiltered(dut, OC.Attributes.Fabrics, reader)}
            assert labels == {f1: "TC-IDM-8.1 F1", f2: label2}, labels
    finally:
        dut.invoke(0, OC.Commands.UpdateFabricLabel(label=label1))
    # Step 4: the other fabric-scoped lists, filtered and not.
    for attribute in (OC.Attributes.NOCs, C.GroupKeyManagement.Attributes.GroupKeyMap):
        for reader, own in ((None, f1), (th2, f2)):
            filtered = dut.read(0, attribute) if reader is None else th2.call(dut, "read", 0, attribute)
            assert all(e.fabricIndex == own for e in filtered), (attribute, filtered)
            check_masked(unfiltered(dut, attribute, reader), own)
    nocs = unfiltered(dut, OC.Attributes.NOCs)
    assert sorted(n.fabricIndex for n in nocs) == sorted([f1, f2]) and check_masked(nocs, f1) == 1
    assert [n.noc for n in nocs if n.fabricIndex == f1] == [n.noc for n in dut.read(0, OC.Attributes.NOCs)]


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACL_2_10(dut: Dut):
    """Persistence: two administrators each write two entries (Administer for two subjects,
    Operate for a group); the node reboots (its `twin run` process stops and starts again on
    the same storage); each reads back its own two entries only; after our admin removes the
    second fabric, ours are still there. (Steps 7, 8, 11, 13 and 16, on the Extension
    attribute, are PICS ACL.S.A0001: not served.)"""
    f1 = dut.read(0, OC.Attributes.CurrentFabricIndex)

    def group_entry(subject: int) -> Any:
        return A.Structs.AccessControlEntryStruct(privilege=OPERATE, authMode=GROUP, subjects=[subject],
                                                  targets=NullValue)

    def summary(acl: list[Any]) -> list[tuple]:
        return [(e.privilege, e.authMode, e.subjects, e.fabricIndex) for e in acl]

    th2 = second_admin(dut)
    mine = [entry(ADMINISTER, [ADMIN_NODE, 1111]), group_entry(3333)]
    theirs = [entry(ADMINISTER, [th2.subject, 2222]), group_entry(4444)]
    try:
        with narrowed(dut):
            dut.write(0, A.Attributes.Acl, mine)
            th2.write(dut, A.Attributes.Acl, theirs)
            expected_mine = [(e.privilege, e.authMode, e.subjects, f1) for e in mine]
            expected_theirs = [(e.privilege, e.authMode, e.subjects, th2.fabric_index) for e in theirs]
            dut.lab.restart(dut.mode)   # type: ignore[attr-defined]
            th2.call(dut, "expire_sessions")
            assert summary(dut.read(0, A.Attributes.Acl)) == expected_mine
            assert summary(th2.call(dut, "read", 0, A.Attributes.Acl)) == expected_theirs
            dut.invoke(0, OC.Commands.RemoveFabric(fabricIndex=th2.fabric_index))
            assert summary(dut.read(0, A.Attributes.Acl)) == expected_mine
    finally:
        retire_second_admin(dut)


@pytest.mark.parametrize("dut", NODES, indirect=True)
def test_TC_ACL_2_9(dut: Dut):
    """Cluster access: an administrator (TH1 of the plan: here a second fabric's, so our own keeps
    its node) writes its ACL down to Manage; then reading or writing the ACL and reading
    AccessControlEntryChanged are UNSUPPORTED_ACCESS, and the limits still read (View), at
    their minima. (Steps 5, 6 and 11, on the Extension attribute and its event, are PICS
    ACL.S.A0001 / ACL.S.E01: not served.)"""
    th1 = second_admin(dut)
    try:
        th1.write(dut, A.Attributes.Acl, [entry(MANAGE, [th1.subject])])
        with pytest.raises(DutStatusError) as err:
            th1.call(dut, "read", 0, A.Attributes.Acl)
        assert err.value.status == Status.UNSUPPORTED_ACCESS
        assert th1.call(dut, "write", 0, A.Attributes.Acl([entry(ADMINISTER, [th1.subject])])) == \
            Status.UNSUPPORTED_ACCESS
        for attribute, minimum in ((A.Attributes.SubjectsPerAccessControlEntry, 4),
                                   (A.Attributes.TargetsPerAccessControlEntry, 3),
                                   (A.Attributes.AccessControlEntriesPerFabric, 4)):
            assert th1.call(dut, "read", 0, attribute) >= minimum
        records = th1.call(dut, "acl_controller:read_events", ENTRY_CHANGED)
        assert [(number, status) for number, status, _ in records] == [(None, Status.UNSUPPORTED_ACCESS)], records
    finally:
        retire_second_admin(dut)
