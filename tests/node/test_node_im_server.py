"""The Interaction Model server over two real MessageLayers (controller and node) in memory:
reads (concrete, wildcard, chunked, DataVersion filters), invokes, writes, timed requests,
subscriptions on a fake clock, and bad input."""
from __future__ import annotations

import random
from typing import Any

import pytest
from chip.clusters import Objects as C
from chip.clusters.Types import NullValue

from clusters.base import AccessContext, ClusterServer, current_access
from clusters.device import DEVICE_TYPES
from clusters.devices import create_device
from clusters.status import Status
from matter_protocol.exchange import Deliver, MessageLayer, Send, SessionClosed
from matter_protocol.interaction import (
    AttributeData,
    AttributePath,
    ClusterPath,
    CommandData,
    CommandPath,
    DataVersionFilter,
    InvokeRequest,
    InvokeResponse,
    Message,
    Opcode,
    ReadRequest,
    ReportData,
    StatusResponse,
    SubscribeRequest,
    SubscribeResponse,
    TimedRequest,
    WriteRequest,
    WriteResponse,
    decode_message,
)
from matter_protocol.message import ProtocolId
from matter_protocol.session_types import EstablishedSession, SessionKeys
from matter_protocol.tlv import Struct, decode_tlv, encode_tlv
from twin.node.im import GRANTED_MAX_INTERVAL_S, InteractionModelServer
from twin.node.values import decode_typed, encode_value

IM = ProtocolId.INTERACTION_MODEL
KEYS = SessionKeys(i2r_key=bytes(range(16)), r2i_key=bytes(range(16, 32)), attestation_challenge=bytes(16))
CTRL, NODE = ("fd00::1", 5540, 0, 0), ("fd00::2", 5540, 0, 0)
ON_OFF, LEVEL = C.OnOff.id, C.LevelControl.id


class Link:
    """Controller layer `a` talks to node layer `b`, whose IM server is `im`.

    Everything the controller receives is kept in `inbox` as (exchange, message). With
    `auto_ack`, the controller answers each ReportData that asks for it with StatusResponse(ack_status).
    """

    def __init__(self, device, case=True, seed=1, **im_options):
        self.a, self.b = MessageLayer(random.Random(seed)), MessageLayer(random.Random(seed + 100))
        node_a, node_b = (0x1111, 0x2222) if case else (None, None)
        fabric = 1 if case else None
        self.sa = self.a.add_secure_session(EstablishedSession(10, 20, KEYS, True, node_b, fabric, None),
                                            NODE, 0, local_node_id=node_a or 0)
        self.sb = self.b.add_secure_session(EstablishedSession(20, 10, KEYS, False, node_a, fabric, None),
                                            CTRL, 0, local_node_id=node_b or 0)
        self.b.register(IM, handler="interaction model")
        self.a.register(IM, handler="controller")   # subscription reports open exchanges towards us
        self.device = device
        self.im = InteractionModelServer(device, random.Random(seed + 7), **im_options)
        self.now = 0.0
        self.inbox: list[tuple[Any, Message]] = []
        self.payloads: list[bytes] = []   # the bytes of each inbox message, as the node sent them
        self.auto_ack = True
        self.ack_status = Status.SUCCESS
        self.exchange = None   # the controller's exchange of the last request

    def _node(self, actions):
        out = []
        for action in actions:
            if isinstance(action, Deliver):
                out += self._node(self.im.handle(action.session, action.exchange, action.opcode,
                                                 action.payload, self.now))
            elif isinstance(action, SessionClosed):
                out += self._node(self.im.session_closed(action.session, self.now))
            elif isinstance(action, Send):
                out.append(action)
        return out

    def _pump(self, to_node, to_ctrl=()):
        queue = [("b", s.data) for s in to_node if isinstance(s, Send)]
        queue += [("a", s.data) for s in to_ctrl if isinstance(s, Send)]
        while queue:
            side, data = queue.pop(0)
            if side == "b":
                queue += [("a", s.data) for s in self._node(self.b.receive(data, CTRL, self.now))]
                continue
            for action in self.a.receive(data, NODE, self.now):
                if isinstance(action, Send):
                    queue.append(("b", action.data))
                if not isinstance(action, Deliver):
                    continue
                message = decode_message(action.opcode, action.payload)
                self.inbox.append((action.exchange, message))
                self.payloads.append(action.payload)
                if self.auto_ack and isinstance(message, ReportData) and not message.suppress_response:
                    sent = self.a.send(action.exchange, Opcode.StatusResponse,
                                       StatusResponse(self.ack_status).encode(), self.now)
                    queue += [("b", s.data) for s in sent if isinstance(s, Send)]
                    if not action.exchange.is_initiator and not message.more_chunked:
                        # A subscription's report answered: its exchange is done (else they would
                        # pile up to our own cap of exchanges the peer opens, and reports drop).
                        queue += [("b", s.data) for s in self.a.close_exchange(action.exchange, self.now)
                                  if isinstance(s, Send)]

    def request(self, message: Message, exchange=None) -> list[Message]:
        """Send a request (on a new exchange unless given); the messages it brought back."""
        return self.raw(message.opcode, message.encode(), exchange)

    def raw(self, opcode: int, payload: bytes, exchange=None) -> list[Message]:
        start = len(self.inbox)
        if exchange is None:
            # A new interaction: done with the last one, as a controller is (closing flushes the ack
            # of the node's last message, which the node's exchange waits for; never acked, those
            # exchanges would fill the node's per-session share and new requests would be dropped).
            if self.exchange is not None and not self.exchange.closed:
                self._pump(self.a.close_exchange(self.exchange, self.now))
            exchange = self.a.new_exchange(self.sa, IM)
        self.exchange = exchange
        self._pump(self.a.send(self.exchange, opcode, payload, self.now))
        return [m for _, m in self.inbox[start:]]

    def advance(self, ms: float) -> list[Message]:
        """Move the fake clock, firing every timer due on the way; what arrived meanwhile."""
        start = len(self.inbox)
        target = self.now + ms
        while True:
            due = [t for t in (self.im.next_timer(), self.a.next_timer(), self.b.next_timer()) if t is not None]
            step = min([t for t in due if t <= target], default=None)
            self.now = step if step is not None and step > self.now else (target if step is None else self.now)
            self._pump(self.a.on_timer(self.now),
                       self._node(self.b.on_timer(self.now) + self.im.on_timer(self.now)))
            if step is None:
                return [m for _, m in self.inbox[start:]]


def light(key="dimmable_light"):
    return create_device("lamp", key)


def reports(messages):
    return [r for m in messages if isinstance(m, ReportData) for r in (m.attribute_reports or [])]


def values(messages):
    """{(endpoint, cluster, attribute): generic decoded value} from report messages (last wins)."""
    return {(r.attribute_data.path.endpoint, r.attribute_data.path.cluster, r.attribute_data.path.attribute):
            r.attribute_data.data for r in reports(messages) if r.attribute_data}


def read(link, *paths, **options):
    return link.request(ReadRequest(attribute_requests=list(paths), **options))


def invoke_status(messages):
    (response,) = messages
    assert isinstance(response, InvokeResponse)
    (ib,) = response.invoke_responses
    return ib


# ---- reads ----------------------------------------------------------------------------------
def test_concrete_read_reports_value_type_and_data_version():
    device = light()
    device.invoke("OnOff", "On")
    link = Link(device)
    (report,) = read(link, AttributePath(1, ON_OFF, 0), AttributePath(1, LEVEL, 0))
    assert report.suppress_response and not report.more_chunked and report.subscription_id is None
    onoff, level = report.attribute_reports
    assert onoff.attribute_data.data is True
    assert onoff.attribute_data.data_version == device.locate("OnOff").data_version
    assert level.attribute_data.path == AttributePath(1, LEVEL, 0)
    assert level.attribute_data.data == device.read("LevelControl", "CurrentLevel")
    assert link.exchange.closed is False  # the node closed its side; our exchange waits for us
    assert link.im._pending == {}


@pytest.mark.parametrize("path, status", [
    (AttributePath(9, ON_OFF, 0), Status.UNSUPPORTED_ENDPOINT),
    (AttributePath(1, C.Thermostat.id, 0), Status.UNSUPPORTED_CLUSTER),
    (AttributePath(1, ON_OFF, 0x1234), Status.UNSUPPORTED_ATTRIBUTE),
    (AttributePath(1, ON_OFF, 0, list_index=NullValue), Status.INVALID_ACTION),
])
def test_concrete_read_errors_are_attribute_statuses(path, status):
    (report,) = read(Link(light()), path, AttributePath(1, ON_OFF, 0))
    bad, good = report.attribute_reports
    assert bad.attribute_status.status.status == status and bad.attribute_status.path.endpoint == path.endpoint
    assert good.attribute_data.data is False


def test_wildcards_expand_to_what_exists_without_errors():
    device = light()
    link = Link(device)
    got = values(read(link, AttributePath(cluster=ON_OFF, attribute=0)))
    assert got == {(1, ON_OFF, 0): False}
    got = values(read(link, AttributePath(endpoint=1, cluster=ON_OFF)))
    assert set(got) == {(1, ON_OFF, a) for a in device.read("OnOff", "AttributeList")}
    assert got[(1, ON_OFF, 0xFFFC)] == device.locate("OnOff").feature_map
    got = values(read(link, AttributePath(endpoint=1, cluster=ON_OFF, wildcard_flags=0x02)))
    assert set(got) == {(1, ON_OFF, a) for a in (0, 0x4000, 0x4001, 0x4002, 0x4003)}
    got = values(read(link, AttributePath(attribute=0xFFFD, wildcard_flags=0x01)))   # skip root node
    assert {k[0] for k in got} == {1}
    assert not any(r.attribute_status for r in reports(read(link, AttributePath(endpoint=7))))


@pytest.mark.parametrize("key", sorted(DEVICE_TYPES))
def test_whole_node_wildcard_read_is_chunked_and_complete(key):
    device = create_device("x", key)
    link = Link(device)
    messages = read(link, AttributePath())
    assert len(messages) >= 2  # more than one 1280-byte message for every device type
    assert [m.more_chunked for m in messages] == [True] * (len(messages) - 1) + [False]
    assert [m.suppress_response for m in messages] == [False] * (len(messages) - 1) + [True]
    assert all(len(m.encode()) <= link.im.max_payload for m in messages)
    assert not [r for r in reports(messages) if r.attribute_status]
    got = values(messages)
    expected = {(ep.id, s.id, s.attribute_class(n).attribute_id): (s, n)
                for ep in device.endpoints.values() for s in ep.servers.values() for n in s.attribute_names()}
    assert set(got) == set(expected)
    # As the link's CASE peer sees them (FabricSceneInfo has the reader's fabric's entry).
    token = current_access.set(AccessContext("case", 1, 0x1111))
    try:
        for key_, (server, name) in expected.items():
            typ = server.attribute_class(name).attribute_type.Type
            assert decode_typed(typ, got[key_]) == device.read(server.id, name, key_[0]), (server.name, name)
    finally:
        current_access.reset(token)


def test_long_list_is_split_into_list_items_across_chunks():
    class Labels(ClusterServer):
        cluster = C.UserLabel
        attributes = ("LabelList",)
        writable = frozenset({"LabelList"})

        def defaults(self):
            return {"LabelList": []}

    device = light()
    labels = device.endpoint(1).add(Labels())
    many = [C.UserLabel.Structs.LabelStruct(label=f"label{i:02d}", value="v" * 40) for i in range(40)]
    labels.set("LabelList", many)
    messages = read(Link(device), AttributePath(1, C.UserLabel.id, 0))
    items = [r.attribute_data for r in reports(messages)]
    assert len(messages) >= 2
    assert items[0].path.list_index is None and items[0].data == []
    assert all(i.path.list_index is NullValue for i in items[1:]) and len(items) == 41
    typ = C.UserLabel.Structs.LabelStruct
    assert [decode_typed(typ, i.data) for i in items[1:]] == many


def test_data_version_filter_skips_clusters_the_client_has():
    device = light()
    link = Link(device)
    onoff = device.locate("OnOff")
    current = DataVersionFilter(ClusterPath(1, ON_OFF), onoff.data_version)
    stale = DataVersionFilter(ClusterPath(1, LEVEL), device.locate("LevelControl").data_version + 5)
    got = values(read(link, AttributePath(endpoint=1), data_version_filters=[current, stale]))
    assert not any(k[1] == ON_OFF for k in got) and any(k[1] == LEVEL for k in got)
    device.invoke("OnOff", "Toggle")   # the version moves on: the filter no longer matches
    got = values(read(link, AttributePath(endpoint=1), data_version_filters=[current]))
    assert got[(1, ON_OFF, 0)] is True


def test_the_getter_hears_whether_a_read_is_fabric_filtered():
    """A fabric-scoped list without fabric-sensitive fields (OperationalCredentials.Fabrics) shows
    every fabric to a read that is not fabric-filtered: the IM tells the getter which read it is."""
    class Fabrics(ClusterServer):
        cluster = C.OperationalCredentials
        attributes = ("Fabrics",)

        def defaults(self):
            return {"Fabrics": []}

        def get(self, name):
            access = current_access.get()
            shown = [access.fabric_index] if access.fabric_filtered else [1, 2]
            return [C.OperationalCredentials.Structs.FabricDescriptorStruct(
                rootPublicKey=bytes(65), vendorID=0xFFF1, fabricID=i, nodeID=i, label="", fabricIndex=i)
                for i in shown]

    device = light()
    device.endpoint(0).add(Fabrics())
    link = Link(device)
    path = AttributePath(0, C.OperationalCredentials.id, 1)
    assert [e[0xFE] for e in values(read(link, path, fabric_filtered=True))[(0, path.cluster, 1)]] == [1]
    assert [e[0xFE] for e in values(read(link, path, fabric_filtered=False))[(0, path.cluster, 1)]] == [1, 2]


def test_unfiltered_read_omits_other_fabrics_sensitive_fields():
    """A read that is not fabric-filtered shows every fabric's ACL and NOCs entries; those of other
    fabrics carry only their FabricIndex (their other fields are fabric-sensitive)."""
    class Both(ClusterServer):
        cluster = C.AccessControl
        attributes = ("Acl",)

        def defaults(self):
            return {"Acl": []}

    class Nocs(ClusterServer):
        cluster = C.OperationalCredentials
        attributes = ("NOCs",)

        def defaults(self):
            return {"NOCs": []}

    device = light()
    entry = C.AccessControl.Structs.AccessControlEntryStruct
    device.endpoint(0).add(Both()).set("Acl", [
        entry(privilege=5, authMode=2, subjects=[f], targets=NullValue, fabricIndex=f) for f in (1, 2)])
    noc = C.OperationalCredentials.Structs.NOCStruct
    device.endpoint(0).add(Nocs()).set("NOCs", [
        noc(noc=bytes([f]) * 8, icac=NullValue, fabricIndex=f) for f in (1, 2)])
    link = Link(device)
    acl = values(read(link, AttributePath(0, C.AccessControl.id, 0), fabric_filtered=False))
    assert acl[(0, C.AccessControl.id, 0)] == [
        {1: 5, 2: 2, 3: [1], 4: None, 0xFE: 1},   # the reader's fabric: whole
        {0xFE: 2}]                                # another fabric's: FabricIndex only
    nocs = values(read(link, AttributePath(0, C.OperationalCredentials.id, 0), fabric_filtered=False))
    assert nocs[(0, C.OperationalCredentials.id, 0)] == [{1: bytes([1]) * 8, 2: None, 0xFE: 1}, {0xFE: 2}]
    # Fabric-filtered: the reader's entry alone, whole.
    acl = values(read(link, AttributePath(0, C.AccessControl.id, 0), fabric_filtered=True))
    assert acl[(0, C.AccessControl.id, 0)] == [{1: 5, 2: 2, 3: [1], 4: None, 0xFE: 1}]


def test_fabric_filtered_read_keeps_only_the_accessing_fabric():
    class Acl(ClusterServer):
        cluster = C.AccessControl
        attributes = ("Acl",)
        writable = frozenset({"Acl"})

        def defaults(self):
            return {"Acl": []}

    device = light()
    acl = device.endpoint(0).add(Acl())
    entry = C.AccessControl.Structs.AccessControlEntryStruct
    acl.set("Acl", [entry(privilege=5, authMode=2, subjects=[7], targets=NullValue, fabricIndex=f) for f in (1, 2)])
    link = Link(device)
    path = AttributePath(0, C.AccessControl.id, 0)
    assert [e[0xFE] for e in values(read(link, path, fabric_filtered=True))[(0, C.AccessControl.id, 0)]] == [1]
    assert [e[0xFE] for e in values(read(link, path))[(0, C.AccessControl.id, 0)]] == [1, 2]
    # A written entry belongs to the writer's fabric, whatever FabricIndex it carried.
    written = encode_value(C.AccessControl.Attributes.Acl.attribute_type.Type,
                           [entry(privilege=3, authMode=2, subjects=[9], targets=NullValue, fabricIndex=2)])
    (response,) = link.request(WriteRequest([AttributeData(path, decode_tlv(written))]))
    assert response.write_responses[0].status.status == Status.SUCCESS
    assert [(e.privilege, e.fabricIndex) for e in acl.get("Acl")] == [(3, 1)]


# ---- invokes --------------------------------------------------------------------------------
def test_invoke_toggle_changes_the_device_and_answers_success():
    device = light()
    link = Link(device)
    ib = invoke_status(link.request(InvokeRequest([CommandData(CommandPath(1, ON_OFF, 2))])))
    assert ib.status.status.status == Status.SUCCESS and ib.status.path == CommandPath(1, ON_OFF, 2)
    assert device.read("OnOff", "OnOff") is True
    invoke_status(link.request(InvokeRequest([CommandData(CommandPath(1, ON_OFF, 2), Struct())])))
    assert device.read("OnOff", "OnOff") is False


def test_invoke_with_fields_and_a_response_command():
    device = create_device("dw", "dishwasher")
    link = Link(device)
    mode = device.locate("DishwasherMode")
    target = [m.mode for m in mode.get("SupportedModes") if m.mode != mode.get("CurrentMode")][0]
    path = CommandPath(1, C.DishwasherMode.id, C.DishwasherMode.Commands.ChangeToMode.command_id)
    ib = invoke_status(link.request(InvokeRequest([CommandData(path, Struct({0: target}))])))
    assert ib.command.path == CommandPath(1, C.DishwasherMode.id,
                                          C.DishwasherMode.Commands.ChangeToModeResponse.command_id)
    response = decode_typed(C.DishwasherMode.Commands.ChangeToModeResponse, ib.command.fields)
    assert response.status == 0 and mode.get("CurrentMode") == target


@pytest.mark.parametrize("path, fields, status", [
    (CommandPath(1, ON_OFF, 0x77), None, Status.UNSUPPORTED_COMMAND),
    (CommandPath(5, ON_OFF, 2), None, Status.UNSUPPORTED_ENDPOINT),
    (CommandPath(1, C.Thermostat.id, 0), None, Status.UNSUPPORTED_CLUSTER),
    (CommandPath(1, LEVEL, 0), Struct({0: "high"}), Status.INVALID_COMMAND),          # Level: a string
    (CommandPath(1, LEVEL, 0), Struct({1: 0}), Status.INVALID_COMMAND),               # Level missing
    (CommandPath(1, ON_OFF, 0x40), Struct({0: 9, 1: 0}), Status.CONSTRAINT_ERROR),    # undefined enum value
])
def test_invoke_errors_are_command_statuses(path, fields, status):
    device = light()
    ib = invoke_status(Link(device).request(InvokeRequest([CommandData(path, fields, ref=None)])))
    assert ib.status.status.status == status and ib.status.path == path
    assert device.read("OnOff", "OnOff") is False


def test_cross_cluster_rule_answers_its_status_over_matter():
    device = create_device("f", "fan")   # off: its fan speed may not change
    link = Link(device)
    path = AttributePath(1, C.FanControl.id, C.FanControl.Attributes.PercentSetting.attribute_id)
    (response,) = link.request(WriteRequest([AttributeData(path, 50)]))
    assert response.write_responses[0].status.status == Status.INVALID_IN_STATE


def test_invoke_request_shape_errors_and_suppressed_response():
    device = light()
    link = Link(device)
    two = [CommandData(CommandPath(1, ON_OFF, 1), ref=1), CommandData(CommandPath(1, ON_OFF, 0), ref=2)]
    assert link.request(InvokeRequest(two)) == [StatusResponse(Status.INVALID_ACTION)]  # MaxPathsPerInvoke 1
    assert link.request(InvokeRequest([CommandData(CommandPath(None, ON_OFF, 1))])) == [
        StatusResponse(Status.INVALID_ACTION)]
    assert link.request(InvokeRequest([CommandData(CommandPath(1, ON_OFF, 1))], suppress_response=True)) == []
    assert device.read("OnOff", "OnOff") is True


def test_command_handlers_see_who_is_asking():
    seen = []

    class Probe(ClusterServer):
        cluster = C.Identify
        attributes = ("IdentifyTime", "IdentifyType")
        commands = ("Identify",)

        def defaults(self):
            return {"IdentifyTime": 0, "IdentifyType": C.Identify.Enums.IdentifyTypeEnum.kNone}

        def Identify(self, request):
            seen.append((current_access.get(), request.identifyTime))

    device = light()
    device.endpoint(1).add(Probe())
    link = Link(device)
    invoke_status(link.request(InvokeRequest([CommandData(CommandPath(1, C.Identify.id, 0), Struct({0: 5}))])))
    ((access, seconds),) = seen
    assert (access.auth_mode, access.fabric_index, access.peer_node_id, access.session) == ("case", 1, 0x1111, link.sb)
    assert seconds == 5 and current_access.get() is None


def test_access_check_hook_denies_with_unsupported_access():
    calls = []

    def check(kind, access, endpoint, cluster, item):
        calls.append(kind)
        return cluster != ON_OFF

    device = light()
    link = Link(device, access_check=check)
    ib = invoke_status(link.request(InvokeRequest([CommandData(CommandPath(1, ON_OFF, 1))])))
    assert ib.status.status.status == Status.UNSUPPORTED_ACCESS and device.read("OnOff", "OnOff") is False
    (report,) = read(link, AttributePath(1, ON_OFF, 0))
    assert report.attribute_reports[0].attribute_status.status.status == Status.UNSUPPORTED_ACCESS
    assert not any(k[1] == ON_OFF for k in values(read(link, AttributePath(endpoint=1))))  # wildcard: skipped
    assert {"invoke", "read"} <= set(calls)


# ---- writes ---------------------------------------------------------------------------------
ON_LEVEL = AttributePath(1, LEVEL, C.LevelControl.Attributes.OnLevel.attribute_id)


@pytest.mark.parametrize("path, data, status", [
    (ON_LEVEL, 200, Status.SUCCESS),
    (ON_LEVEL, None, Status.SUCCESS),                                   # OnLevel is nullable
    (ON_LEVEL, "200", Status.INVALID_DATA_TYPE),
    (ON_LEVEL, -3, Status.INVALID_DATA_TYPE),
    (AttributePath(1, LEVEL, 0), 10, Status.UNSUPPORTED_WRITE),        # CurrentLevel is read-only
    (AttributePath(1, LEVEL, 0xFFFD), 1, Status.UNSUPPORTED_WRITE),    # ClusterRevision
    (AttributePath(1, LEVEL, 0x7777), 1, Status.UNSUPPORTED_ATTRIBUTE),
    (AttributePath(3, LEVEL, 0x11), 1, Status.UNSUPPORTED_ENDPOINT),
    (AttributePath(1, ON_OFF, C.OnOff.Attributes.StartUpOnOff.attribute_id), 7, Status.CONSTRAINT_ERROR),
    (AttributePath(None, LEVEL, 0x11), 1, Status.INVALID_ACTION),
])
def test_write_statuses(path, data, status):
    device = light()
    link = Link(device)
    before = device.read("LevelControl", "OnLevel")
    (response,) = link.request(WriteRequest([AttributeData(path, data)]))
    assert isinstance(response, WriteResponse)
    (result,) = response.write_responses
    assert result.status.status == status
    assert (result.path.endpoint, result.path.cluster, result.path.attribute) == (path.endpoint, path.cluster,
                                                                                 path.attribute)
    expected = (NullValue if data is None else data) if status == Status.SUCCESS else before
    assert device.read("LevelControl", "OnLevel") == expected


def test_write_data_version_and_suppress_response():
    device = light()
    link = Link(device)
    version = device.locate("LevelControl").data_version
    (response,) = link.request(WriteRequest([AttributeData(ON_LEVEL, 10, data_version=version + 1)]))
    assert response.write_responses[0].status.status == Status.DATA_VERSION_MISMATCH
    (response,) = link.request(WriteRequest([AttributeData(ON_LEVEL, 10, data_version=version)]))
    assert response.write_responses[0].status.status == Status.SUCCESS
    assert link.request(WriteRequest([AttributeData(ON_LEVEL, 20)], suppress_response=True)) == []
    assert device.read("LevelControl", "OnLevel") == 20


def test_chunked_list_write_replaces_then_appends():
    class Labels(ClusterServer):
        cluster = C.UserLabel
        attributes = ("LabelList",)
        writable = frozenset({"LabelList"})

        def defaults(self):
            return {"LabelList": []}

    device = light()
    labels = device.endpoint(1).add(Labels())
    link = Link(device)
    path = AttributePath(1, C.UserLabel.id, 0)
    append = AttributePath(1, C.UserLabel.id, 0, list_index=NullValue)
    first = link.request(WriteRequest([AttributeData(path, []), AttributeData(append, Struct({0: "a", 1: "1"}))],
                                      more_chunked=True))
    assert [s.status.status for s in first[0].write_responses] == [Status.SUCCESS] * 2
    second = link.request(WriteRequest([AttributeData(append, Struct({0: "b", 1: "2"}))]), exchange=link.exchange)
    assert [s.status.status for s in second[0].write_responses] == [Status.SUCCESS]
    assert [(x.label, x.value) for x in labels.get("LabelList")] == [("a", "1"), ("b", "2")]
    (bad,) = link.request(WriteRequest([AttributeData(AttributePath(1, LEVEL, 0x11, list_index=NullValue), 3)]))
    assert bad.write_responses[0].status.status == Status.INVALID_ACTION
    # A chunked write whose next chunk never comes is given up, its exchange closed.
    link.request(WriteRequest([AttributeData(path, [])], more_chunked=True))
    assert link.im.next_timer() is not None and labels.get("LabelList") == []
    link.advance(60_000)
    assert link.im._writes == {} and link.im.next_timer() is None


# ---- timed interactions ---------------------------------------------------------------------
class Admin(ClusterServer):
    """A command that the spec marks as needing a timed invoke."""
    cluster = C.AdministratorCommissioning
    attributes = ("WindowStatus", "AdminFabricIndex", "AdminVendorId")
    commands = ("RevokeCommissioning",)
    revoked = 0

    def defaults(self):
        return {"WindowStatus": 0, "AdminFabricIndex": NullValue, "AdminVendorId": NullValue}

    def RevokeCommissioning(self, request):
        self.revoked += 1


REVOKE = CommandPath(0, C.AdministratorCommissioning.id,
                     C.AdministratorCommissioning.Commands.RevokeCommissioning.command_id)


def test_timed_invoke():
    device = light()
    admin = device.endpoint(0).add(Admin())
    link = Link(device)
    ib = invoke_status(link.request(InvokeRequest([CommandData(REVOKE)])))
    assert ib.status.status.status == Status.NEEDS_TIMED_INTERACTION and admin.revoked == 0
    # TimedRequest first, then the action on the same exchange within the window.
    assert link.request(TimedRequest(500)) == [StatusResponse(Status.SUCCESS)]
    link.advance(100)
    ib = invoke_status(link.request(InvokeRequest([CommandData(REVOKE)], timed_request=True), exchange=link.exchange))
    assert ib.status.status.status == Status.SUCCESS and admin.revoked == 1
    # Too late: TIMEOUT.
    link.request(TimedRequest(500))
    link.now += 501
    assert link.request(InvokeRequest([CommandData(REVOKE)], timed_request=True), exchange=link.exchange) == [
        StatusResponse(Status.TIMEOUT)]
    # The timed flag without a TimedRequest, or a TimedRequest followed by an untimed action: mismatch.
    assert link.request(InvokeRequest([CommandData(REVOKE)], timed_request=True)) == [
        StatusResponse(Status.TIMED_REQUEST_MISMATCH)]
    link.request(TimedRequest(500))
    assert link.request(WriteRequest([AttributeData(ON_LEVEL, 5)]), exchange=link.exchange) == [
        StatusResponse(Status.TIMED_REQUEST_MISMATCH)]
    assert admin.revoked == 1 and device.read("LevelControl", "OnLevel") is NullValue
    assert link.im._timed == {}


def test_an_unanswered_timed_request_expires():
    link = Link(light())
    link.request(TimedRequest(200))
    assert link.im.next_timer() is not None
    link.advance(60_000)
    assert link.im._timed == {} and link.im.next_timer() is None


# ---- subscriptions ------------------------------------------------------------------------------
def subscribe(link, *paths, floor=2, ceiling=10, **options):
    return link.request(SubscribeRequest(floor, ceiling, attribute_requests=list(paths), **options))


def test_subscribe_primes_then_answers_with_the_negotiated_max_interval():
    device = light()
    link = Link(device)
    messages = subscribe(link, AttributePath(1, ON_OFF, 0), AttributePath(endpoint=1, cluster=LEVEL))
    *priming, response = messages
    # The ceiling (10 s) is more than the node grants: a restart is noticed within its interval.
    assert isinstance(response, SubscribeResponse) and response.max_interval == GRANTED_MAX_INTERVAL_S
    sub_id = response.subscription_id
    assert all(m.subscription_id == sub_id and not m.suppress_response for m in priming)
    got = values(priming)
    assert got[(1, ON_OFF, 0)] is False and (1, LEVEL, 0) in got
    assert list(link.im.subscriptions) == [sub_id]
    # A ceiling of 0 is raised so that keepalives do not flood; a floor above the ceiling is refused.
    *_, zero = subscribe(link, AttributePath(1, ON_OFF, 0), floor=0, ceiling=0, keep_subscriptions=True)
    assert zero.max_interval >= 1
    assert subscribe(link, AttributePath(1, ON_OFF, 0), floor=20, ceiling=10) == [StatusResponse(Status.INVALID_ACTION)]
    # A shorter ceiling is kept; a floor above what the node grants wins (max >= floor, always).
    *_, short = subscribe(link, AttributePath(1, ON_OFF, 0), floor=0, ceiling=2, keep_subscriptions=True)
    assert short.max_interval == 2
    *_, slow = subscribe(link, AttributePath(1, ON_OFF, 0), floor=20, ceiling=30, keep_subscriptions=True)
    assert slow.max_interval == 20


def test_many_changes_within_min_interval_coalesce_into_one_report_with_the_latest_value():
    device = light()
    link = Link(device)
    *_, response = subscribe(link, AttributePath(1, ON_OFF, 0), floor=2, ceiling=30)
    link.advance(500)
    for _ in range(5):
        device.invoke("OnOff", "Toggle")   # the simulation side: ends On
    assert link.im.next_timer() == 2000  # not before the min interval
    assert link.advance(1400) == []
    got = link.advance(200)
    assert len(got) == 1 and got[0].subscription_id == response.subscription_id
    assert values(got) == {(1, ON_OFF, 0): True}
    device.invoke("OnOff", "Toggle")
    device.invoke("OnOff", "Toggle")   # back to what was sent, but it changed: reported again
    assert values(link.advance(2000)) == {(1, ON_OFF, 0): True}


def test_keepalive_is_an_empty_report_at_the_max_interval():
    link = Link(light())
    *_, response = subscribe(link, AttributePath(1, ON_OFF, 0), floor=1, ceiling=5)
    assert link.advance(4999) == []
    (keepalive,) = link.advance(1)
    assert keepalive.subscription_id == response.subscription_id and keepalive.attribute_reports is None
    assert len(link.advance(5000)) == 1


def test_changes_to_unsubscribed_attributes_send_nothing():
    device = light()
    link = Link(device, granted_max_interval_s=60)
    subscribe(link, AttributePath(1, ON_OFF, 0), floor=0, ceiling=60)
    device.write("LevelControl", "OnLevel", 50)
    assert link.advance(30_000) == []


def test_derived_values_are_polled_and_reported_no_faster_than_min_interval():
    device = light()
    clock = type("Clock", (), {"tick": 0})()
    for server in device.servers():
        server.clock = clock
    link = Link(device, sample_ms=1000)
    device.invoke("LevelControl", "MoveToLevelWithOnOff", {"level": 4, "transitionTime": 100,
                                                            "optionsMask": 0, "optionsOverride": 0})  # 10 s ramp
    start = device.read("LevelControl", "CurrentLevel")
    *_, response = subscribe(link, AttributePath(1, LEVEL, 0), floor=3, ceiling=60)
    seen = []
    for second in range(1, 10):
        clock.tick = second * 10   # the simulation moves on; no listener fires for CurrentLevel
        seen += [(link.now, values([m])[(1, LEVEL, 0)]) for m in link.advance(1000)]
    times = [t for t, _ in seen]
    assert len(seen) == 3 and all(b - a >= 3000 for a, b in zip(times, times[1:]))
    levels = [v for _, v in seen]
    assert start > levels[0] > levels[1] > levels[2] > 4
    assert levels[-1] == device.read("LevelControl", "CurrentLevel")   # the latest value


def test_every_derived_attribute_is_declared():
    """What a `get()` override computes must be in `derived`, or subscribers never hear of it.
    Two overrides fire listeners themselves: the Descriptor (composition, through `changed()`)
    and BridgedDeviceBasicInformation (mirrors its source's listeners)."""
    import twin.node.commissioning
    import twin.node.servers.base
    from clusters.base import ClusterServer, import_every_server
    from clusters.bridged import BridgedDeviceBasicInformationServer
    from clusters.device import DescriptorServer
    import_every_server()

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    listener_backed = {DescriptorServer, BridgedDeviceBasicInformationServer}
    checked = 0
    for cls in set(subclasses(ClusterServer)):
        if not hasattr(cls, "cluster"):
            continue   # an abstract shared base
        assert all(hasattr(cls.cluster.Attributes, n) for n in cls.derived), cls.__name__
        overrides_get = any("get" in vars(k) for k in cls.__mro__[:cls.__mro__.index(ClusterServer)])
        touches = issubclass(cls, twin.node.servers.base.NodeServer)   # see test_node_servers_...
        if overrides_get and cls not in listener_backed and not touches:
            assert cls.derived, f"{cls.__name__} derives values in get() but declares none in `derived`"
            checked += 1
    assert checked >= 12


def test_node_servers_tell_subscribers_of_fabric_changes_without_being_sampled(tmp_path):
    from test_node_runtime import make_fabric

    from twin.node.commissioning import NodeCommissioning
    from twin.node.credentials import DeviceCredentials
    device = light()
    credentials = DeviceCredentials.load_or_create(tmp_path / "dac", 0xFFF1, 0x8100, rng=random.Random(3))
    node = NodeCommissioning(tmp_path, device, credentials, 20202021, 3840, random.Random(7), now_ms=lambda: 0)
    link = Link(device, access_check=None)
    oc, acl, admin = C.OperationalCredentials, C.AccessControl, C.AdministratorCommissioning
    subscribe(link, AttributePath(0, oc.id), AttributePath(0, acl.id), AttributePath(0, admin.id),
              floor=0, ceiling=600)
    assert not link.im._watched                       # nothing on the root endpoint is sampled
    fabric, _ = make_fabric()
    node.table.add_pending(fabric)
    node.complete_commissioning(fabric.fabric_index)
    got = values(link.advance(10))
    assert got[(0, oc.id, oc.Attributes.CommissionedFabrics.attribute_id)] == 1
    assert (0, admin.id, admin.Attributes.WindowStatus.attribute_id) in got   # the window closed
    node.remove_fabric(fabric.fabric_index)
    got = values(link.advance(10))
    assert got[(0, oc.id, oc.Attributes.CommissionedFabrics.attribute_id)] == 0
    assert got[(0, acl.id, acl.Attributes.Acl.attribute_id)] == []


def counting_reads(device):
    """Count every get() of every server of `device`, by (cluster name, attribute)."""
    counts = {}
    for server in device.servers():
        def get(name, _get=server.get, _server=server):
            counts[(_server.name, name)] = counts.get((_server.name, name), 0) + 1
            return _get(name)
        server.get = get
    return counts


def test_an_idle_subscription_reads_only_derived_attributes_and_encodes_nothing(monkeypatch):
    from twin.node.im import events, read
    device = light()
    link = Link(device, sample_ms=1000, granted_max_interval_s=20)
    *_, response = subscribe(link, AttributePath(), floor=0, ceiling=20)   # everything
    assert isinstance(response, SubscribeResponse)
    encodes = []
    for module in (read, events):   # where the IM encodes attribute values and events
        monkeypatch.setattr(module, "encode_value", lambda *a: encodes.append(a) or encode_value(*a))
    reads = counting_reads(device)
    got = link.advance(60_000)
    assert len(got) == 3 and not reports(got)                  # keepalives only
    assert encodes == []
    derived = {(s.name, n) for s in device.servers() for n in s.derived}
    assert reads and set(reads) <= derived                     # nothing else is re-read
    assert set(reads.values()) == {60}                         # each once per sample, 1 s apart


def test_a_derived_change_is_sampled_once_for_all_subscribers_and_reported_to_each():
    from clusters.devices import NODE_ONLY_TYPES
    device = create_device("sensor", NODE_ONLY_TYPES["room_sensor"])
    temperature = [21.0]
    server = device.endpoint(1).server(C.TemperatureMeasurement)
    server.sensor_source = lambda: temperature[0]
    link = Link(device, sample_ms=1000)
    path = AttributePath(1, C.TemperatureMeasurement.id, 0)
    first = subscribe(link, path, floor=0, ceiling=60)[-1].subscription_id
    second = subscribe(link, path, floor=0, ceiling=60, keep_subscriptions=True)[-1].subscription_id
    assert values(link.advance(5000)) == {}
    reads = counting_reads(device)
    temperature[0] = 22.5
    got = link.advance(1000)
    assert sorted(m.subscription_id for m in got) == sorted([first, second])
    assert values(got) == {(1, C.TemperatureMeasurement.id, 0): 2250}
    assert reads[("TemperatureMeasurement", "MeasuredValue")] == 1 + 2   # one sample, then each report
    (data,) = [r.attribute_data for r in reports(got[:1])]
    assert data.data_version == link.im._version(1, server)   # the bumped version, reported
    link._pump(link.a.close_session(link.sa, link.now))
    assert link.im.subscriptions == {} and link.im.next_timer() is None   # no subscriber, no sampling


def test_every_device_type_reports_its_moving_values_to_a_wildcard_subscription():
    from twin.home import Home
    from twin.node.pairing import served_devices
    home = Home(seed=2)
    home.add_room("room")
    for key in sorted(DEVICE_TYPES):
        home.add_device(key, key, "room")
    heat_pump = home.device("heat_pump")                    # heating to 30 °C: the room warms
    heat_pump.write("Thermostat", "OccupiedHeatingSetpoint", 3000)
    heat_pump.write("Thermostat", "SystemMode", 4)
    served = served_devices(home)
    links = {device_id: Link(d) for device_id, d in served.items()}
    for link in links.values():
        assert isinstance(subscribe(link, AttributePath(), floor=0, ceiling=60)[-1], SubscribeResponse)
    got = {}
    for _ in range(300):                                    # 30 s, a step of 0.1 s at a time
        home.advance(0.1)
        for device_id, link in links.items():
            got.setdefault(device_id, {}).update(values(link.advance(100)))
    temperature = (1, C.TemperatureMeasurement.id, C.TemperatureMeasurement.Attributes.MeasuredValue.attribute_id)
    assert got["sensors@room"][temperature] == served["sensors@room"].read("TemperatureMeasurement", "MeasuredValue")
    local = (2, C.Thermostat.id, C.Thermostat.Attributes.LocalTemperature.attribute_id)
    assert got["heat_pump"][local] == heat_pump.read("Thermostat", "LocalTemperature") > 2400


def test_a_meters_cumulative_energy_is_sampled_every_ten_seconds():
    from twin.home import Home
    home = Home(seed=2)
    home.add_room("room")
    heat_pump = home.add_device("hp", "heat_pump", "room")
    heat_pump.write("Thermostat", "OccupiedHeatingSetpoint", 3000)
    heat_pump.write("Thermostat", "SystemMode", 4)                  # heating: it draws power
    assert heat_pump.read("ElectricalPowerMeasurement", "ActivePower", 1) > 0
    link = Link(heat_pump)
    subscribe(link, AttributePath(1, C.ElectricalEnergyMeasurement.id), floor=0, ceiling=60)
    reported = []
    for _ in range(300):                                           # 30 s; the energy moves every tick
        home.advance(0.1)
        reported += [link.now for m in link.advance(100) if reports([m])]
    assert reported == [10_000, 20_000, 30_000]


def test_a_failure_status_ends_the_subscription():
    device = light()
    link = Link(device)
    subscribe(link, AttributePath(1, ON_OFF, 0), floor=0, ceiling=60)
    link.ack_status = Status.INVALID_SUBSCRIPTION
    device.invoke("OnOff", "Toggle")
    assert len(link.advance(10)) == 1
    assert link.im.subscriptions == {} and link.im.next_timer() is None
    device.invoke("OnOff", "Toggle")
    assert link.advance(120_000) == []


def test_an_unanswered_report_ends_the_subscription():
    device = light()
    link = Link(device)
    subscribe(link, AttributePath(1, ON_OFF, 0), floor=0, ceiling=60)
    link.auto_ack = False
    device.invoke("OnOff", "Toggle")
    assert len(link.advance(10)) == 1
    link.advance(60_000)
    assert link.im.subscriptions == {} and link.im._pending == {}


def test_priming_refused_by_the_client_creates_no_subscription():
    link = Link(light())
    link.ack_status = Status.FAILURE
    messages = subscribe(link, AttributePath(1, ON_OFF, 0))
    assert [type(m) for m in messages] == [ReportData] and link.im.subscriptions == {}


def test_session_close_and_keep_subscriptions():
    device = light()
    link = Link(device)
    subscribe(link, AttributePath(1, ON_OFF, 0))
    subscribe(link, AttributePath(1, LEVEL, 0), keep_subscriptions=True)
    assert len(link.im.subscriptions) == 2
    subscribe(link, AttributePath(1, LEVEL, 0))   # KeepSubscriptions false: the peer's others go
    assert len(link.im.subscriptions) == 1
    link._pump(link.a.close_session(link.sa, link.now))
    assert link.im.subscriptions == {} and link.im.next_timer() is None


def test_wildcard_subscription_primes_chunked_and_reports_changes():
    device = light()
    link = Link(device)
    messages = subscribe(link, AttributePath(), floor=0, ceiling=60)
    assert len(messages) >= 3 and isinstance(messages[-1], SubscribeResponse)
    assert [m.more_chunked for m in messages[:-1]][-1] is False
    wake = []
    link.im.on_dirty = lambda: wake.append(1)
    device.write("BasicInformation", "NodeLabel", "kitchen")
    assert wake
    got = values(link.advance(10))
    assert got == {(0, C.BasicInformation.id, C.BasicInformation.Attributes.NodeLabel.attribute_id): "kitchen"}


# ---- bad input ------------------------------------------------------------------------------
@pytest.mark.parametrize("opcode, payload", [
    (Opcode.ReadRequest, b"\x15\x36"),                      # truncated
    (Opcode.ReadRequest, encode_tlv([1, 2])),               # not a structure
    (Opcode.InvokeRequest, encode_tlv(Struct({0: False}))), # InvokeRequests missing
    (0x55, encode_tlv(Struct())),                           # unknown opcode
    (Opcode.ReportData, ReportData().encode()),             # a client message, not ours to get
    (Opcode.ReadRequest, ReadRequest().encode()),           # no paths at all
])
def test_bad_requests_get_invalid_action(opcode, payload):
    link = Link(light())
    assert link.raw(opcode, payload) == [StatusResponse(Status.INVALID_ACTION)]
    assert link.im._pending == {} and link.im.subscriptions == {}


def test_unsecured_sessions_get_no_interaction_model():
    from matter_protocol.session import UnsecuredSession
    im = InteractionModelServer(light(), random.Random(1))
    closed = []

    class Ex:
        def close(self, now_ms):
            closed.append(now_ms)
            return []

    session = UnsecuredSession(5, False, CTRL, 0)
    assert im.handle(session, Ex(), Opcode.ReadRequest, ReadRequest([AttributePath()]).encode(), 3) == []
    assert closed == [3]


def test_a_chunked_read_needs_status_responses_between_chunks():
    link = Link(light())
    link.auto_ack = False
    (first,) = read(link, AttributePath())
    assert first.more_chunked and len(link.im._pending) == 1
    # Anything but a StatusResponse on that exchange ends the read.
    assert link.request(ReadRequest([AttributePath(1, ON_OFF, 0)]), exchange=link.exchange) == [
        StatusResponse(Status.INVALID_ACTION)]
    assert link.im._pending == {}
    # Silence ends it too, after the response timeout.
    read(link, AttributePath())
    assert len(link.im._pending) == 1
    assert link.advance(60_000) == [] and link.im._pending == {} and link.im.next_timer() is None


def test_a_command_field_beyond_its_type_is_a_constraint_error_over_matter():
    """Issue #12 item 5: OnWithTimedOff's uint16 fields carried 0xFFFFFFFF into OnTime."""
    device = light()
    path = CommandPath(1, ON_OFF, C.OnOff.Commands.OnWithTimedOff.command_id)
    ib = invoke_status(Link(device).request(InvokeRequest([CommandData(
        path, Struct({0: 0, 1: 0xFFFFFFFF, 2: 0xFFFFFFFF}), ref=None)])))
    assert ib.status.status.status == Status.CONSTRAINT_ERROR
    assert device.read("OnOff", "OnTime") == 0 and device.read("OnOff", "OnOff") is False


def test_a_read_or_subscribe_with_too_many_paths_is_paths_exhausted():
    """Issue #12 item 4 (first part): 600 full wildcards fit one datagram and expanded to the
    whole node 600 times in one receive(). Requests are bounded (the spec's minimum is 9)."""
    from twin.node import im as im_module
    device = light()
    link = Link(device)
    reads = counting_reads(device)
    (answer,) = link.request(ReadRequest(attribute_requests=[AttributePath()] * 600))
    assert isinstance(answer, StatusResponse) and answer.status == Status.PATHS_EXHAUSTED
    (answer,) = link.request(SubscribeRequest(0, 10, attribute_requests=[AttributePath()] * 40))
    assert isinstance(answer, StatusResponse) and answer.status == Status.PATHS_EXHAUSTED
    assert not reads and not link.im.subscriptions
    bound = im_module.MAX_PATHS_PER_REQUEST
    assert bound >= 9
    assert values(link.request(ReadRequest(attribute_requests=[AttributePath(1, ON_OFF, 0)] * bound)))
