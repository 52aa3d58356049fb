"""Acceptance: `twin run --aggregator` (alias `--as-bridge`) serves the whole home as ONE Matter Bridge node, and
python-matter-server (inside a namespace this module creates) commissions it once:

- `GET /codes` lists one node; one commissioning brings every device and room sensor;
- the interview shows the Aggregator, and every bridged device's endpoints (at the ids the
  twin saved in its storage) with BridgedDeviceBasicInformation, their attribute values
  equal to the twin's own (read through its HTTP tool API);
- every light is toggled through its bridged endpoint and the twin follows; a change made
  by the twin's tools reaches the controller's subscription at the bridged path.
"""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any

import pytest
from e2e_twin import only_the_readers_entry, per_reader, server_value_json, twin_lab

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

MODULE = "test_e2e_aggregator"
LIGHTS = ("living_room_light", "kitchen_light", "bedroom_light", "bathroom_light", "utility_room_light")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    with twin_lab(tmp_path_factory.mktemp("bridge-mode"), "bm", "--aggregator") as the_lab:
        yield the_lab


async def twin_attributes(twin: Any, devices: list[str]) -> dict[str, dict[str, Any]]:
    return {d: (await twin.tool("get_all_attributes", {"device.id": d}))["attributes"] for d in devices}


async def commission_and_compare(client: Any, twin: Any, allocation: dict[str, Any]) -> dict[str, Any]:
    from chip.clusters import Objects as Clusters
    codes = (await twin.get("/codes"))["codes"]
    out: dict[str, Any] = {"codes": [row["device"] for row in codes]}
    devices = [d for d in allocation["endpoints"] if not d.startswith("sensors@")]
    before = await twin_attributes(twin, devices)
    node = await client.commission_with_code(codes[0]["qr_code"], network_only=True)
    after = await twin_attributes(twin, devices)
    node = client.get_node(node.node_id)
    out["node_id"] = node.node_id
    out["endpoints"] = sorted(node.endpoints)
    out["aggregator parts"] = server_value_json(node, 1, "Descriptor", "PartsList")[1]
    out["aggregator types"] = server_value_json(node, 1, "Descriptor", "DeviceTypeList")[1]
    out["bdbi"] = {d: server_value_json(node, ids[0], "BridgedDeviceBasicInformation", "NodeLabel")
                   for d, ids in allocation["endpoints"].items()}
    # Every application attribute of every device, at its bridged endpoint, as the twin has it.
    # Values that moved while the interview ran (physics) are only required to be present.
    compared, moved, wrong = 0, 0, []
    for device in devices:
        app_endpoints = sorted({int(key.split(".")[0]) for key in after[device]} - {0})
        bridged = dict(zip(app_endpoints, allocation["endpoints"][device]))
        for key, value in after[device].items():
            ep, cluster, attribute = key.split(".")
            if ep == "0" or cluster == "Descriptor":
                continue    # root and Descriptor belong to the bridge, not the device
            present, got = server_value_json(node, bridged[int(ep)], cluster, attribute)
            if not present:
                wrong.append((device, key, "missing"))
            elif per_reader(cluster, attribute):   # the controller reads as fabric 1, the tool API as none
                out.setdefault("per reader", []).append((got, value))
            elif before[device].get(key) != value:
                moved += 1
            elif got != value:
                wrong.append((device, key, got, value))
            else:
                compared += 1
    out.update(compared=compared, moved=moved, wrong=wrong)
    out["sensor clusters"] = {
        d: sorted(c for c in node.endpoints[ids[0]].clusters) for d, ids in allocation["endpoints"].items()
        if d.startswith("sensors@")}
    out["temperature cluster"] = Clusters.TemperatureMeasurement.id
    return out


async def control(client: Any, twin: Any, state: dict[str, Any]) -> dict[str, Any]:
    from chip.clusters import Objects as Clusters
    node_id, allocation = state["node_id"], state["allocation"]
    out: dict[str, Any] = {"toggled": {}}
    for light in LIGHTS:
        before = await twin.on_off(light)
        await client.send_device_command(node_id, allocation["endpoints"][light][0], Clusters.OnOff.Commands.Toggle())
        out["toggled"][light] = (before, await twin.on_off(light))
    # The controller's subscription brings the toggled values in (changes within its min
    # interval coalesce, so wait for these before the next change).
    def cached(light: str) -> Any:
        return client.get_node(node_id).get_attribute_value(allocation["endpoints"][light][0], Clusters.OnOff.id,
                                                            Clusters.OnOff.Attributes.OnOff)
    deadline = time.monotonic() + 30
    while any(cached(light) != after for light, (_, after) in out["toggled"].items()) \
            and time.monotonic() < deadline:
        await asyncio.sleep(0.2)
    out["cached after toggles"] = {light: cached(light) for light in LIGHTS}
    # A tool call on the twin side reaches the subscription at the bridged path.
    ep = allocation["endpoints"]["kitchen_light"][0]
    path = f"{ep}/{Clusters.OnOff.id}/{Clusters.OnOff.Attributes.OnOff.attribute_id}"
    now, out["reports"] = await twin.toggle_reported(client, node_id, "kitchen_light", path)
    out["cached"] = cached("kitchen_light")
    out["expected report"] = not now
    return out


def test_one_commissioning_brings_every_bridged_device(lab):
    allocation = json.loads((lab.workdir / "twin-storage" / "@bridge" / "bridge.json").read_text())
    first = lab.call(MODULE, "commission_and_compare", allocation)
    print(json.dumps({k: v for k, v in first.items() if k != "bdbi"}, indent=1, default=str))
    assert first["codes"] == ["@bridge"]
    all_ids = sorted(i for ids in allocation["endpoints"].values() for i in ids)
    assert first["endpoints"] == [0, 1, *all_ids]
    assert first["aggregator types"] == [{"deviceType": 0x000E, "revision": 1}]
    assert sorted(first["aggregator parts"]) == all_ids
    assert len(allocation["endpoints"]) == 23 + 5          # the default home and its 5 rooms
    assert all(present for present, _ in first["bdbi"].values()), first["bdbi"]
    assert first["bdbi"]["kitchen_light"][1] == "Kitchen Light"
    assert first["wrong"] == [] and first["compared"] > 300, (first["wrong"], first["compared"])
    assert first["per reader"] and all(only_the_readers_entry(got, local)
                                       for got, local in first["per reader"]), first["per reader"]
    assert all(first["temperature cluster"] in c for c in first["sensor clusters"].values())

    second = lab.call(MODULE, "control", {"node_id": first["node_id"], "allocation": allocation})
    print(json.dumps(second, indent=1, default=str))
    for light, (before, after) in second["toggled"].items():
        assert after == (not before), light
        assert second["cached after toggles"][light] == after, light
    assert second["reports"] and second["reports"][-1] == second["expected report"], second["reports"]
    assert second["cached"] == second["expected report"]
