"""Our IM server against matter.js's own encoders and decoders (an independent implementation).

matter.js (installed by scripts/install-test-deps.sh into .cache/matterjs) encodes the requests
(ReadRequest, InvokeRequest with fields, WriteRequest, SubscribeRequest) and decodes every answer
with its message schemas; attribute values are decoded with the schema matter.js derives from its
own Matter data model, which checks wire types (unsigned vs signed, float vs double, nullability,
struct fields) and constraints. So every byte each way is checked by a second implementation.
"""
from __future__ import annotations

import json
import pathlib
import subprocess

import pytest
from chip.clusters import Objects as C
from test_node_im_server import Link

from clusters.device import DEVICE_TYPES
from clusters.devices import create_device
from matter_protocol.interaction import InvokeResponse, Opcode, ReportData, SubscribeResponse, WriteResponse
from twin.node.im import GRANTED_MAX_INTERVAL_S

pytestmark = pytest.mark.e2e   # matter.js

MATTERJS = pathlib.Path(__file__).resolve().parents[2] / ".cache" / "matterjs" / "node_modules"

PEER_JS = r"""
import { createInterface } from "node:readline";
import { Bytes } from "@matter/general";
import { Matter } from "@matter/model";
import * as types from "@matter/types";
import { decodeAttributeValueWithSchema } from "@matter/protocol";

const { TlvOfModel } = types;
const json = v => JSON.stringify(v, (k, x) =>
    typeof x === "bigint" ? x.toString() : x instanceof Uint8Array ? Bytes.toHex(x) : x);
const out = obj => process.stdout.write("@@" + json(obj) + "\n");
const hex = h => Bytes.fromHex(h);

// Decode report entries (from all chunks) attribute by attribute with matter.js's model schemas.
function checkReports(reports) {
    const groups = new Map();
    const statuses = [];
    for (const r of reports) {
        if (r.attributeStatus !== undefined) { statuses.push(r.attributeStatus); continue; }
        const { endpointId, clusterId, attributeId } = r.attributeData.path;
        const key = `${endpointId}/${clusterId}/${attributeId}`;
        if (!groups.has(key)) groups.set(key, []);
        groups.get(key).push(r.attributeData);
    }
    const result = {};
    for (const [key, values] of groups) {
        const { clusterId, attributeId } = values[0].path;
        const model = Matter.clusters(clusterId)?.attributes(attributeId) ?? Matter.attributes(attributeId);
        try {
            if (model === undefined) throw new Error("attribute unknown to matter.js");
            const schema = TlvOfModel(model);
            const value = decodeAttributeValueWithSchema(schema, values);
            schema.validate(value);
            result[key] = { ok: true, value };
        } catch (e) {
            result[key] = { ok: false, error: String(e.message || e) };
        }
    }
    return { attributes: result, statuses };
}
const command = (cluster, id) => TlvOfModel(Matter.clusters(cluster).commands(id));
const attribute = (cluster, id) => TlvOfModel(Matter.clusters(cluster).attributes(id));
const context = { ...types, Bytes, hex, checkReports, command, attribute };

for await (const line of createInterface({ input: process.stdin })) {
    try {
        const fn = new Function(...Object.keys(context), "return (" + line + ");");
        let value = fn(...Object.values(context));
        if (value instanceof Uint8Array) value = Bytes.toHex(value);
        out({ ok: true, value });
    } catch (e) {
        out({ ok: false, error: String((e && e.stack) || e) });
    }
}
"""


class MatterJs:
    """A node process evaluating one expression per line with matter.js in scope."""

    def __init__(self, script: pathlib.Path):
        self.process = subprocess.Popen(["node", str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        text=True, cwd=script.parent)

    def __call__(self, expression: str):
        self.process.stdin.write(expression.replace("\n", " ") + "\n")
        self.process.stdin.flush()
        for line in self.process.stdout:
            if line.startswith("@@"):
                answer = json.loads(line[2:])
                if not answer["ok"]:
                    raise AssertionError(f"matter.js: {answer['error']}")
                return answer["value"]
        raise AssertionError(f"matter.js ended (exit {self.process.wait()})")

    def close(self):
        self.process.kill()
        self.process.wait()


@pytest.fixture(scope="module")
def js(tmp_path_factory):
    assert (MATTERJS / "@matter" / "protocol").is_dir(), \
        f"matter.js is not installed in {MATTERJS}: run scripts/install-test-deps.sh"
    d = tmp_path_factory.mktemp("matterjs_im")
    (d / "node_modules").symlink_to(MATTERJS)
    (d / "peer.mjs").write_text(PEER_JS)
    peer = MatterJs(d / "peer.mjs")
    yield peer
    peer.close()


def ask(link: Link, request_hex: str, opcode: int):
    """Send matter.js's encoded request; returns (decoded messages, raw payload hex of each)."""
    start = len(link.inbox)
    messages = link.raw(opcode, bytes.fromhex(request_hex))
    return messages, [p.hex() for p in link.payloads[start:]]


def check_reports(js, payloads):
    entries = " , ".join(f'...(TlvDataReport.decode(hex("{p}")).attributeReports ?? [])' for p in payloads)
    return js(f"checkReports([{entries}])")


def test_matterjs_read_request_is_answered_and_its_report_decodes(js):
    device = create_device("lamp", "dimmable_light")
    device.invoke("OnOff", "On")
    link = Link(device)
    request = js("TlvReadRequest.encode({attributeRequests: [{endpointId: 1, clusterId: 6, attributeId: 0}, "
                 "{endpointId: 1, clusterId: 8, attributeId: 0}], isFabricFiltered: true, "
                 "interactionModelRevision: 12})")
    messages, payloads = ask(link, request, Opcode.ReadRequest)
    assert [type(m) for m in messages] == [ReportData]
    decoded = js(f'TlvDataReport.decode(hex("{payloads[0]}"))')
    assert decoded["suppressResponse"] is True and decoded["interactionModelRevision"] == 11
    checked = check_reports(js, payloads)["attributes"]
    assert checked["1/6/0"] == {"ok": True, "value": True}
    assert checked["1/8/0"] == {"ok": True, "value": device.read("LevelControl", "CurrentLevel")}


@pytest.mark.parametrize("key", sorted(DEVICE_TYPES))
def test_every_attribute_of_every_device_type_passes_matterjs_schemas(js, key):
    device = create_device("x", key)
    link = Link(device)
    request = js("TlvReadRequest.encode({attributeRequests: [{}], isFabricFiltered: false, "
                 "interactionModelRevision: 12})")
    messages, payloads = ask(link, request, Opcode.ReadRequest)
    assert len(messages) >= 2 and messages[-1].suppress_response
    result = check_reports(js, payloads)
    assert result["statuses"] == []
    bad = {k: v["error"] for k, v in result["attributes"].items() if not v["ok"]}
    assert bad == {}
    expected = {f"{ep.id}/{s.id}/{s.attribute_class(n).attribute_id}"
                for ep in device.endpoints.values() for s in ep.servers.values() for n in s.attribute_names()}
    assert set(result["attributes"]) == expected


def test_matterjs_invoke_with_fields_moves_the_level(js):
    device = create_device("lamp", "dimmable_light")
    link = Link(device)
    fields = "command(8, 4).encodeTlv({level: 42, transitionTime: 0, optionsMask: {}, optionsOverride: {}})"
    request = js("TlvInvokeRequest.encode({suppressResponse: false, timedRequest: false, invokeRequests: "
                 f"[{{commandPath: {{endpointId: 1, clusterId: 8, commandId: 4}}, commandFields: {fields}}}], "
                 "interactionModelRevision: 12})")
    messages, payloads = ask(link, request, Opcode.InvokeRequest)
    assert [type(m) for m in messages] == [InvokeResponse]
    assert device.read("LevelControl", "CurrentLevel") == 42 and device.read("OnOff", "OnOff") is True
    decoded = js(f'TlvInvokeResponse.decode(hex("{payloads[0]}"))')
    (response,) = decoded["invokeResponses"]
    assert response["status"]["commandPath"] == {"endpointId": 1, "clusterId": 8, "commandId": 4}
    assert response["status"]["status"] == {"status": 0}


def test_matterjs_invoke_gets_a_response_command_it_can_decode(js):
    device = create_device("dw", "dishwasher")
    link = Link(device)
    mode = device.locate("DishwasherMode")
    target = [m.mode for m in mode.get("SupportedModes") if m.mode != mode.get("CurrentMode")][0]
    cluster = C.DishwasherMode.id
    request = js("TlvInvokeRequest.encode({suppressResponse: false, timedRequest: false, invokeRequests: "
                 f"[{{commandPath: {{endpointId: 1, clusterId: {cluster}, commandId: 0}}, "
                 f"commandFields: command({cluster}, 0).encodeTlv({{newMode: {target}}})}}], "
                 "interactionModelRevision: 12})")
    messages, payloads = ask(link, request, Opcode.InvokeRequest)
    fields = js(f'command({cluster}, 1).decodeTlv(TlvInvokeResponse.decode(hex("{payloads[0]}"))'
                ".invokeResponses[0].command.commandFields)")
    assert fields["status"] == 0 and mode.get("CurrentMode") == target


def test_matterjs_write_request_and_write_response(js):
    device = create_device("lamp", "dimmable_light")
    link = Link(device)
    request = js("TlvWriteRequest.encode({suppressResponse: false, timedRequest: false, writeRequests: "
                 "[{path: {endpointId: 1, clusterId: 8, attributeId: 17}, data: attribute(8, 17).encodeTlv(200)}, "
                 " {path: {endpointId: 1, clusterId: 8, attributeId: 0}, data: attribute(8, 0).encodeTlv(3)}], "
                 "interactionModelRevision: 12})")
    messages, payloads = ask(link, request, Opcode.WriteRequest)
    assert [type(m) for m in messages] == [WriteResponse]
    assert device.read("LevelControl", "OnLevel") == 200
    decoded = js(f'TlvWriteResponse.decode(hex("{payloads[0]}")).writeResponses')
    assert [(r["path"]["attributeId"], r["status"]["status"]) for r in decoded] == [(17, 0), (0, 0x88)]


def test_matterjs_subscribe_request_primes_and_is_confirmed(js):
    device = create_device("lamp", "dimmable_light")
    link = Link(device)
    request = js("TlvSubscribeRequest.encode({keepSubscriptions: true, minIntervalFloorSeconds: 1, "
                 "maxIntervalCeilingSeconds: 30, attributeRequests: [{endpointId: 1, clusterId: 6}], "
                 "isFabricFiltered: true, interactionModelRevision: 12})")
    messages, payloads = ask(link, request, Opcode.SubscribeRequest)
    assert isinstance(messages[-1], SubscribeResponse)
    confirmed = js(f'TlvSubscribeResponse.decode(hex("{payloads[-1]}"))')
    assert confirmed["maxInterval"] == min(30, GRANTED_MAX_INTERVAL_S)   # the publisher may grant less
    priming = [js(f'TlvDataReport.decode(hex("{p}"))') for p in payloads[:-1]]
    assert {str(p["subscriptionId"]) for p in priming} == {str(confirmed["subscriptionId"])}
    assert all(v["ok"] for v in check_reports(js, payloads[:-1])["attributes"].values())
    device.invoke("OnOff", "Toggle")
    start = len(link.payloads)
    link.advance(1000)
    (report,) = link.payloads[start:]
    assert check_reports(js, [report.hex()])["attributes"] == {"1/6/0": {"ok": True, "value": True}}
