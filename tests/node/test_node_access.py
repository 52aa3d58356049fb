"""Access control in the Interaction Model server: a real node (NodeCommissioning's fabric table
and AccessControl server) with two fabrics, admins and non-admin subjects, CATs, targets, PASE's
implicit Administer, ACL changes taking effect at once, and the privilege table."""
from __future__ import annotations

import collections
import random

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue
from test_node_im_server import CTRL, IM, KEYS, NODE, Link, values

from clusters.devices import create_device
from clusters.status import Status
from clusters.value_types import list_item_type
from matter_protocol import certs
from matter_protocol.exchange import MessageLayer
from matter_protocol.interaction import (
    AttributeData,
    AttributePath,
    CommandData,
    CommandPath,
    EventPath,
    InvokeRequest,
    ReadRequest,
    ReportData,
    SubscribeRequest,
    WriteRequest,
)
from matter_protocol.session_types import EstablishedSession
from matter_protocol.tlv import Struct, decode_tlv
from twin.node.access import ADMINISTER, MANAGE, OPERATE, VIEW, required_privilege, subject_matches
from twin.node.commissioning import NodeCommissioning
from twin.node.fabrics import Fabric
from twin.node.values import decode_typed, encode_value

AC = C.AccessControl
Entry, Target = AC.Structs.AccessControlEntryStruct, AC.Structs.AccessControlTargetStruct
CASE = AC.Enums.AccessControlEntryAuthModeEnum.kCase
ON_OFF, BASIC = C.OnOff.id, C.BasicInformation.id
ADMIN_A, USER_A, ADMIN_B = 0x11, 0x12, 0x21
CAT_OPERATORS = 0xFFFFFFFD_0007_0002   # CAT id 7, version 2


class Peer(Link):
    """Link with a chosen CASE peer (node id, fabric, CATs) or a PASE session."""

    def __init__(self, device, peer=None, fabric=None, cats=()):
        super().__init__(device, access_check="acl")
        self.a, self.b = MessageLayer(random.Random(1)), MessageLayer(random.Random(101))
        self.sa = self.a.add_secure_session(EstablishedSession(10, 20, KEYS, True, 0x99, fabric, None),
                                            NODE, 0, local_node_id=peer or 0)
        self.sb = self.b.add_secure_session(EstablishedSession(20, 10, KEYS, False, peer, fabric, None),
                                            CTRL, 0, local_node_id=0x99)
        self.sb.peer_cats = tuple(cats)   # as the runtime sets it after CASE
        self.b.register(IM, handler="interaction model")
        self.a.register(IM, handler="controller")


def fabric(index, root_id):
    rng = random.Random(index)
    root, root_key = certs.mint_root(root_id, 0x1000 + index, rng=rng)
    noc, key = certs.mint_noc(root, root_key, 0x99, 0x1000 + index, rng=rng)
    return Fabric.build(index, root.to_tlv(), None, noc.to_tlv(), key, bytes(range(16)), vendor_id=0xFFF1)


@pytest.fixture
def node(tmp_path):
    device = create_device("light", "dimmable_light")
    commissioning = NodeCommissioning(tmp_path / "light", device, None, 20202021, 3840, random.Random(7),
                                      now_ms=lambda: 0)
    for index, root_id, admin in ((1, 1, ADMIN_A), (2, 2, ADMIN_B)):
        f = fabric(index, root_id)
        f.acl = [Entry(privilege=ADMINISTER, authMode=CASE, subjects=[admin], targets=NullValue, fabricIndex=index)]
        commissioning.table.add_pending(f)
        commissioning.table.commit()
    return device, commissioning


def on_off(link):
    return values(link.request(ReadRequest(attribute_requests=[AttributePath(1, ON_OFF, 0)])))


def statuses(messages):
    return [r.attribute_status.status.status for m in messages if isinstance(m, ReportData)
            for r in m.attribute_reports or () if r.attribute_status]


def toggle(link, endpoint=1):
    (response,) = link.request(InvokeRequest([CommandData(CommandPath(endpoint, ON_OFF, 2), Struct())]))
    return response.invoke_responses[0].status.status.status


def write_acl(link, entries):
    path = AttributePath(0, AC.id, AC.Attributes.Acl.attribute_id)
    data = decode_tlv(encode_value(AC.Attributes.Acl.attribute_type.Type, entries))
    (response,) = link.request(WriteRequest([AttributeData(path, data)]))
    return response.write_responses[0].status.status


def test_admins_of_each_fabric_may_do_everything_and_strangers_nothing(node):
    device, _ = node
    for peer, index in ((ADMIN_A, 1), (ADMIN_B, 2)):
        link = Peer(device, peer, index)
        assert (1, ON_OFF, 0) in on_off(link)
        assert toggle(link) == Status.SUCCESS
    # Admin of fabric 1 on fabric 2's session is nobody there; an unknown node on fabric 1 neither.
    for peer, index in ((ADMIN_A, 2), (0x77, 1), (ADMIN_A, 9)):
        link = Peer(device, peer, index)
        assert statuses(link.request(ReadRequest(attribute_requests=[AttributePath(1, ON_OFF, 0)]))) == [
            Status.UNSUPPORTED_ACCESS]
        assert toggle(link) == Status.UNSUPPORTED_ACCESS
        # Wildcards silently skip what may not be read.
        assert values(link.request(ReadRequest(attribute_requests=[AttributePath()]))) == {}


def test_pase_has_implicit_administer(node):
    device, _ = node
    link = Peer(device)   # no peer node id: PASE
    assert toggle(link) == Status.SUCCESS
    assert (0, AC.id, 0) in values(link.request(ReadRequest(attribute_requests=[AttributePath(0, AC.id, 0)])))


def test_an_admin_grants_operate_and_the_entry_takes_effect_at_once(node):
    device, commissioning = node
    admin, user = Peer(device, ADMIN_A, 1), Peer(device, USER_A, 1)
    assert toggle(user) == Status.UNSUPPORTED_ACCESS
    entries = [Entry(privilege=ADMINISTER, authMode=CASE, subjects=[ADMIN_A], targets=NullValue, fabricIndex=1),
               Entry(privilege=OPERATE, authMode=CASE, subjects=[USER_A],
                     targets=[Target(cluster=ON_OFF, endpoint=NullValue, deviceType=NullValue)], fabricIndex=1)]
    assert write_acl(admin, entries) == Status.SUCCESS
    assert toggle(user) == Status.SUCCESS
    # Operate on OnOff only: not the level, not the ACL, and not Manage-level writes.
    got = values(user.request(ReadRequest(attribute_requests=[AttributePath(endpoint=1)])))
    assert {k[1] for k in got} == {ON_OFF}
    assert write_acl(user, entries[:1]) == Status.UNSUPPORTED_ACCESS
    assert statuses(user.request(ReadRequest(attribute_requests=[AttributePath(0, AC.id, 0)]))) == [
        Status.UNSUPPORTED_ACCESS]
    # Fabric 2's admin is unaffected by fabric 1's ACL; fabric 2's ACL still holds its admin.
    assert toggle(Peer(device, ADMIN_B, 2)) == Status.SUCCESS
    assert [e.subjects for e in commissioning.table.get(2).acl] == [[ADMIN_B]]
    # The admin takes the grant back: denied again at once.
    assert write_acl(admin, entries[:1]) == Status.SUCCESS
    assert toggle(user) == Status.UNSUPPORTED_ACCESS


def test_view_allows_reads_and_subscriptions_but_no_commands_or_writes(node):
    device, commissioning = node
    commissioning.table.get(1).acl.append(
        Entry(privilege=VIEW, authMode=CASE, subjects=NullValue, targets=NullValue, fabricIndex=1))   # anyone
    viewer = Peer(device, 0x5555, 1)
    assert (1, ON_OFF, 0) in on_off(viewer)
    assert toggle(viewer) == Status.UNSUPPORTED_ACCESS
    label = AttributePath(0, BASIC, C.BasicInformation.Attributes.NodeLabel.attribute_id)
    (response,) = viewer.request(WriteRequest([AttributeData(label, "x")]))
    assert response.write_responses[0].status.status == Status.UNSUPPORTED_ACCESS
    primed = viewer.request(SubscribeRequest(0, 10, attribute_requests=[AttributePath(1, ON_OFF, 0)]))
    assert (1, ON_OFF, 0) in values(primed)
    device.invoke("OnOff", "Toggle")
    assert values(viewer.advance(1000)) == {(1, ON_OFF, 0): device.read("OnOff", "OnOff")}


def test_node_label_needs_manage_and_operate_is_not_enough(node):
    device, commissioning = node
    entry = Entry(privilege=OPERATE, authMode=CASE, subjects=[USER_A], targets=NullValue, fabricIndex=1)
    commissioning.table.get(1).acl.append(entry)
    user = Peer(device, USER_A, 1)
    label = AttributePath(0, BASIC, C.BasicInformation.Attributes.NodeLabel.attribute_id)
    (response,) = user.request(WriteRequest([AttributeData(label, "kitchen")]))
    assert response.write_responses[0].status.status == Status.UNSUPPORTED_ACCESS
    commissioning.table.get(1).acl[-1] = Entry(privilege=MANAGE, authMode=CASE, subjects=[USER_A],
                                               targets=NullValue, fabricIndex=1)
    (response,) = user.request(WriteRequest([AttributeData(label, "kitchen")]))
    assert response.write_responses[0].status.status == Status.SUCCESS
    assert device.read("BasicInformation", "NodeLabel") == "kitchen"


def test_cat_subjects_and_endpoint_and_device_type_targets(node):
    device, commissioning = node
    commissioning.table.get(1).acl.append(Entry(
        privilege=OPERATE, authMode=CASE, subjects=[CAT_OPERATORS],
        targets=[Target(cluster=NullValue, endpoint=NullValue, deviceType=0x0101)], fabricIndex=1))
    assert toggle(Peer(device, 0x4444, 1, cats=[0x0007_0003])) == Status.SUCCESS    # newer version: holds it
    assert toggle(Peer(device, 0x4444, 1, cats=[0x0007_0001])) == Status.UNSUPPORTED_ACCESS   # too old
    assert toggle(Peer(device, 0x4444, 1, cats=[0x0008_0002])) == Status.UNSUPPORTED_ACCESS   # other CAT
    # The device type target covers endpoint 1 (a dimmable light), not the root node.
    peer = Peer(device, 0x4444, 1, cats=[0x0007_0002])
    assert statuses(peer.request(ReadRequest(attribute_requests=[AttributePath(0, BASIC, 0)]))) == [
        Status.UNSUPPORTED_ACCESS]


def test_events_need_read_access(node):
    device, _ = node
    assert Peer(device, ADMIN_A, 1).request(ReadRequest(event_requests=[EventPath()]))[0].event_reports
    assert not Peer(device, 0x77, 1).request(ReadRequest(event_requests=[EventPath()]))[0].event_reports


def test_privilege_table():
    assert required_privilege("read", ON_OFF, 0) == VIEW
    assert required_privilege("invoke", ON_OFF, 2) == OPERATE
    assert required_privilege("read", AC.id, AC.Attributes.Acl.attribute_id) == ADMINISTER
    assert required_privilege("read", AC.id, AC.Attributes.SubjectsPerAccessControlEntry.attribute_id) == VIEW
    assert required_privilege("invoke", C.OperationalCredentials.id, 0x06) == ADMINISTER
    assert required_privilege("invoke", C.AdministratorCommissioning.id, 0x00) == ADMINISTER
    assert required_privilege("write", BASIC, C.BasicInformation.Attributes.NodeLabel.attribute_id) == MANAGE
    # The spec's exceptions within a cluster (TC_ACE_1_1): Location is "RW VA", NOCs "R F A".
    assert required_privilege("write", BASIC, C.BasicInformation.Attributes.Location.attribute_id) == ADMINISTER
    assert required_privilege("read", C.OperationalCredentials.id,
                              C.OperationalCredentials.Attributes.NOCs.attribute_id) == ADMINISTER
    assert subject_matches(0x42, 0x42, ()) and not subject_matches(0x42, 0x43, ())
    with pytest.raises(ValueError):
        required_privilege("delete", ON_OFF, 0)


def test_acl_change_events_go_to_their_own_fabric_only(node):
    device, commissioning = node
    admin_a, admin_b = Peer(device, ADMIN_A, 1), Peer(device, ADMIN_B, 2)
    entries = [Entry(privilege=ADMINISTER, authMode=CASE, subjects=[ADMIN_A, 0x99], targets=NullValue, fabricIndex=1)]
    assert write_acl(admin_a, entries) == Status.SUCCESS
    changed = (AC.id, AC.Events.AccessControlEntryChanged.event_id)

    def acl_events(link):
        (message,) = link.request(ReadRequest(event_requests=[EventPath(0, AC.id)]))
        return [(r.event_data.path.cluster, r.event_data.path.event) for r in message.event_reports or ()
                if r.event_data]
    assert acl_events(admin_a) == [changed]   # the one entry changed
    assert acl_events(admin_b) == []


def acl_change_events(link):
    """(ChangeType, subjects, adminNodeID) of every AccessControlEntryChanged the peer may read."""
    path = EventPath(0, AC.id, AC.Events.AccessControlEntryChanged.event_id)
    (message,) = link.request(ReadRequest(event_requests=[path]))
    out = []
    for report in message.event_reports or ():
        event = decode_typed(AC.Events.AccessControlEntryChanged, report.event_data.data, "event")
        out.append((event.changeType, event.latestValue.subjects, event.adminNodeID))
    return out


def test_acl_change_events_entry_by_entry(node):
    """TC_ACL_2_6 / 2_8: one event per entry, naming the admin: the SDK's chunked write (replace
    with [], then one append per entry) is Removed, then one Added per entry; a list written in
    one piece is Changed at each index both lists have (written again unchanged too, as the plan
    expects), Added or Removed past the end; a refused write is no event."""
    device, commissioning = node
    admin = Peer(device, ADMIN_A, 1)
    typ = AC.Attributes.Acl.attribute_type.Type
    item = list_item_type(typ)
    path = AttributePath(0, AC.id, AC.Attributes.Acl.attribute_id)
    append = AttributePath(0, AC.id, AC.Attributes.Acl.attribute_id, list_index=NullValue)
    admin_entry = Entry(privilege=ADMINISTER, authMode=CASE, subjects=[ADMIN_A], targets=NullValue, fabricIndex=1)
    view_entry = Entry(privilege=VIEW, authMode=CASE, subjects=[USER_A], targets=NullValue, fabricIndex=1)
    (response,) = admin.request(WriteRequest([
        AttributeData(path, decode_tlv(encode_value(typ, []))),
        AttributeData(append, decode_tlv(encode_value(item, admin_entry))),
        AttributeData(append, decode_tlv(encode_value(item, view_entry)))]))
    assert [r.status.status for r in response.write_responses] == [Status.SUCCESS] * 3
    Change = AC.Enums.ChangeTypeEnum
    assert acl_change_events(admin) == [(Change.kRemoved, [ADMIN_A], ADMIN_A), (Change.kAdded, [ADMIN_A], ADMIN_A),
                                        (Change.kAdded, [USER_A], ADMIN_A)]
    # One list in one AttributeDataIB.
    operate = Entry(privilege=OPERATE, authMode=CASE, subjects=[USER_A], targets=NullValue, fabricIndex=1)
    assert write_acl(admin, [admin_entry, operate]) == Status.SUCCESS
    assert acl_change_events(admin)[3:] == [(Change.kChanged, [ADMIN_A], ADMIN_A),
                                            (Change.kChanged, [USER_A], ADMIN_A)]
    assert write_acl(admin, [admin_entry]) == Status.SUCCESS
    assert acl_change_events(admin)[5:] == [(Change.kChanged, [ADMIN_A], ADMIN_A),
                                            (Change.kRemoved, [USER_A], ADMIN_A)]
    bad = Entry(privilege=VIEW, authMode=AC.Enums.AccessControlEntryAuthModeEnum.kGroup, subjects=[0],
                targets=NullValue, fabricIndex=1)
    assert write_acl(admin, [admin_entry, bad]) == Status.CONSTRAINT_ERROR
    assert len(acl_change_events(admin)) == 7


def test_a_subscription_to_nothing_the_peer_may_read_is_refused(node):
    """Issue #12 item 9: a peer with no ACL entry could subscribe although it may read nothing."""
    device, commissioning = node
    stranger = Peer(device, 0x77, 1)
    for request in (SubscribeRequest(0, 10, attribute_requests=[AttributePath(1, ON_OFF, 0)]),
                    SubscribeRequest(0, 10, attribute_requests=[AttributePath()]),
                    SubscribeRequest(0, 10, event_requests=[EventPath()])):
        (answer,) = stranger.request(request)
        assert answer.status == Status.INVALID_ACTION
    im = stranger.im
    assert not im.subscriptions
    # Viewing one cluster is enough to subscribe to a path that covers it.
    commissioning.table.get(1).acl.append(Entry(
        privilege=VIEW, authMode=CASE, subjects=[0x77],
        targets=[Target(cluster=ON_OFF, endpoint=NullValue, deviceType=NullValue)], fabricIndex=1))
    primed = stranger.request(SubscribeRequest(0, 10, attribute_requests=[AttributePath()]))
    assert {k[1] for k in values(primed)} == {ON_OFF}
    assert len(im.subscriptions) == 1


def test_an_admin_rewrites_its_acl_the_sdk_way_in_one_write(node):
    """Issue #12 item 7: the CHIP SDK writes the ACL as [] then one append per entry in one
    WriteRequest; access is decided once per path for the whole interaction, so the admin
    who empties the list may still append (and does not lock itself out)."""
    device, commissioning = node
    admin = Peer(device, ADMIN_A, 1)
    typ = AC.Attributes.Acl.attribute_type.Type
    path = AttributePath(0, AC.id, AC.Attributes.Acl.attribute_id)
    append = AttributePath(0, AC.id, AC.Attributes.Acl.attribute_id, list_index=NullValue)
    admin_entry = Entry(privilege=ADMINISTER, authMode=CASE, subjects=[ADMIN_A], targets=NullValue, fabricIndex=1)
    user_entry = Entry(privilege=OPERATE, authMode=CASE, subjects=[USER_A], targets=NullValue, fabricIndex=1)
    item = list_item_type(typ)
    (response,) = admin.request(WriteRequest([
        AttributeData(path, decode_tlv(encode_value(typ, []))),
        AttributeData(append, decode_tlv(encode_value(item, admin_entry))),
        AttributeData(append, decode_tlv(encode_value(item, user_entry)))]))
    assert [r.status.status for r in response.write_responses] == [Status.SUCCESS] * 3
    assert [e.subjects for e in commissioning.table.get(1).acl] == [[ADMIN_A], [USER_A]]
    assert toggle(Peer(device, USER_A, 1)) == Status.SUCCESS
    # A later interaction decides afresh: the same admin may still administer.
    assert write_acl(admin, [admin_entry]) == Status.SUCCESS
    # ... and one who lost Administer in an earlier interaction may not append.
    user = Peer(device, USER_A, 1)
    (response,) = user.request(WriteRequest([AttributeData(append, decode_tlv(encode_value(item, user_entry)))]))
    assert response.write_responses[0].status.status == Status.UNSUPPORTED_ACCESS


def test_another_fabric_cannot_take_every_subscription_slot(node):
    """Issue #12 item 8: a View-only peer of fabric 2 held all 64 subscription slots and fabric
    1's admin got RESOURCE_EXHAUSTED. Each fabric now has a fair share; a fabric under its
    share evicts from the one furthest over its own."""
    from twin.node.im import MAX_SUBSCRIPTIONS
    device, commissioning = node
    commissioning.table.get(2).acl.append(
        Entry(privilege=VIEW, authMode=CASE, subjects=[0x5555], targets=NullValue, fabricIndex=2))
    hog, admin = Peer(device, 0x5555, 2), Peer(device, ADMIN_A, 1)
    admin.im = hog.im   # one node: both sessions reach the same IM server
    im = hog.im

    def subscribe(link, paths=1):
        messages = link.request(SubscribeRequest(0, 60, keep_subscriptions=True,
                                                 attribute_requests=[AttributePath(1, ON_OFF, 0)] * paths))
        return messages[-1]

    hog_subs = [subscribe(hog, paths=2 if i == 5 else 1) for i in range(MAX_SUBSCRIPTIONS)]
    assert all(getattr(m, "subscription_id", None) is not None for m in hog_subs)
    assert len(im.subscriptions) == MAX_SUBSCRIPTIONS
    # The admin gets a slot: the hog's subscription with the most paths goes.
    answer = subscribe(admin)
    assert getattr(answer, "subscription_id", None) is not None, answer
    assert hog_subs[5].subscription_id not in im.subscriptions
    assert len(im.subscriptions) == MAX_SUBSCRIPTIONS
    # The hog, over its share (32 of 64 with two fabrics), cannot evict anyone back.
    assert subscribe(hog).status == Status.RESOURCE_EXHAUSTED
    # The admin may go on up to its share, each time at the expense of the hog's oldest.
    for _ in range(MAX_SUBSCRIPTIONS // 2 - 1):
        assert getattr(subscribe(admin), "subscription_id", None) is not None
    assert hog_subs[0].subscription_id not in im.subscriptions
    assert subscribe(admin).status == Status.RESOURCE_EXHAUSTED
    fabrics = collections.Counter(s.session.fabric_index for s in im.subscriptions.values())
    assert fabrics == {1: MAX_SUBSCRIPTIONS // 2, 2: MAX_SUBSCRIPTIONS // 2}
