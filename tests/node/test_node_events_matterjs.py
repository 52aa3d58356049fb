"""Our EventReports against matter.js (an independent implementation): matter.js encodes the
Read and Subscribe requests with event paths and filters, decodes our DataReports with its
message schemas, and decodes each event's fields with the schema it derives from its own Matter
data model (wire types, struct fields, constraints)."""
from __future__ import annotations

import pytest
import test_node_im_matterjs as base
from test_node_im_matterjs import MATTERJS, MatterJs, ask
from test_node_im_server import Link

from matter_protocol.interaction import Opcode, SubscribeResponse
from twin.home import Home

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

CHECK_EVENTS = r"""
// Every event report: its envelope, and its fields decoded with matter.js's model schema.
function checkEvents(reports) {
    return reports.map(r => {
        if (r.eventStatus !== undefined) return { status: r.eventStatus.status.status };
        const d = r.eventData;
        const { endpointId, clusterId, eventId } = d.path;
        const model = Matter.clusters(clusterId)?.events(eventId);
        if (model === undefined) return { ok: false, error: "event unknown to matter.js" };
        try {
            const schema = TlvOfModel(model);
            const value = schema.decodeTlv(d.data);
            schema.validate(value);
            return { ok: true, path: `${endpointId}/${clusterId}/${eventId}`, number: Number(d.eventNumber),
                     priority: d.priority, system: d.systemTimestamp === undefined ? null : Number(d.systemTimestamp),
                     epoch: d.epochTimestamp === undefined ? null : Number(d.epochTimestamp), value };
        } catch (e) {
            return { ok: false, error: String(e.message || e) };
        }
    });
}
"""


@pytest.fixture(scope="module")
def js(tmp_path_factory):
    assert (MATTERJS / "@matter" / "protocol").is_dir(), \
        f"matter.js is not installed in {MATTERJS}: run scripts/install-test-deps.sh"
    d = tmp_path_factory.mktemp("matterjs_events")
    (d / "node_modules").symlink_to(MATTERJS)
    script = base.PEER_JS.replace("const context = { ...types,",
                                  CHECK_EVENTS + "const context = { ...types, checkEvents,")
    assert "checkEvents," in script
    (d / "peer.mjs").write_text(script)
    peer = MatterJs(d / "peer.mjs")
    yield peer
    peer.close()


def events_of(js, payloads):
    entries = " , ".join(f'...(TlvDataReport.decode(hex("{p}")).eventReports ?? [])' for p in payloads)
    return js(f"checkEvents([{entries}])")


def dishwasher_link():
    home = Home(seed=3)
    home.add_room("kitchen")
    device = home.add_device("dw", "dishwasher", "kitchen")
    device.invoke("OnOff", "On")
    return home, device, Link(device, access_check=None)


def test_matterjs_reads_start_up_and_operation_completion(js):
    home, device, link = dishwasher_link()
    device.invoke("OperationalState", "Start")
    home.advance(7)
    device.invoke("OperationalState", "Stop")
    request = js("TlvReadRequest.encode({eventRequests: [{}], eventFilters: [{eventMin: 0}], "
                 "isFabricFiltered: true, interactionModelRevision: 12})")
    messages, payloads = ask(link, request, Opcode.ReadRequest)
    got = events_of(js, payloads)
    assert all(e["ok"] for e in got), got
    assert [(e["path"], e["number"], e["priority"]) for e in got] == [("0/40/0", 0, 2), ("1/96/1", 1, 1)]
    assert got[0]["value"]["softwareVersion"] == device.read("BasicInformation", "SoftwareVersion")
    completion = got[1]["value"]
    assert (completion["completionErrorCode"], completion["totalOperationalTime"], completion["pausedTime"]) == \
        (0, 7, 0)
    assert got[1]["system"] == home.clock.tick * 100 and got[1]["epoch"] is None
    # EventMin from matter.js's filter encoding.
    request = js("TlvReadRequest.encode({eventRequests: [{endpointId: 1}], eventFilters: [{eventMin: 1}], "
                 "isFabricFiltered: true, interactionModelRevision: 12})")
    _, payloads = ask(link, request, Opcode.ReadRequest)
    assert [e["number"] for e in events_of(js, payloads)] == [1]


def test_matterjs_subscription_gets_an_urgent_error_event(js):
    home, device, link = dishwasher_link()
    request = js("TlvSubscribeRequest.encode({keepSubscriptions: true, minIntervalFloorSeconds: 20, "
                 "maxIntervalCeilingSeconds: 60, eventRequests: [{endpointId: 1, clusterId: 0x60, isUrgent: true}], "
                 "isFabricFiltered: true, interactionModelRevision: 12})")
    messages, payloads = ask(link, request, Opcode.SubscribeRequest)
    assert isinstance(messages[-1], SubscribeResponse)
    assert events_of(js, payloads[:-1]) == []
    device.invoke("OperationalState", "Start")
    opstate = device.endpoint(1).server("OperationalState")
    opstate.set_error(opstate.cluster.Enums.ErrorStateEnum.kUnableToCompleteOperation)
    start = len(link.payloads)
    link.advance(100)   # urgent: well inside the 20 s floor
    got = events_of(js, [p.hex() for p in link.payloads[start:]])
    assert [(e["path"], e["priority"]) for e in got] == [("1/96/0", 2)]
    assert got[0]["value"]["errorState"]["errorStateId"] == 2
