"""Events end to end: python-matter-server (the CHIP SDK controller) commissions the twin's
dishwasher node inside a test-created network namespace, subscribes to it (it asks for every
event, urgent), and receives OperationCompletion when the twin's tool API runs and stops a cycle;
the event's fields and envelope are the CHIP SDK's decoding of what our IM sent."""
from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest
from e2e_twin import twin_lab

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

DISHWASHER = "kitchen_dishwasher"


async def scenario(client: Any, twin: Any, state: Any) -> dict[str, Any]:
    from chip.clusters import Objects as Clusters
    from matter_server.common.models import EventType

    codes = {row["device"]: row for row in (await twin.get("/codes"))["codes"]}
    node = await client.commission_with_code(codes[DISHWASHER]["qr_code"], network_only=True)
    events: list[Any] = []
    client.subscribe_events(lambda _, e: events.append(e), EventType.NODE_EVENT, node_filter=node.node_id)

    for cluster, command in (("OnOff", "On"), ("OperationalState", "Start")):
        await twin.tool("execute_command", {"device.id": DISHWASHER, "endpoint.id": 1, "cluster.id": cluster,
                                            "command.id": command, "args": {}})
    await asyncio.sleep(2)
    await twin.tool("execute_command", {"device.id": DISHWASHER, "endpoint.id": 1, "cluster.id": "OperationalState",
                                        "command.id": "Stop", "args": {}})
    opstate = Clusters.OperationalState
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and not any(
            e.cluster_id == opstate.id and e.event_id == opstate.Events.OperationCompletion.event_id for e in events):
        await asyncio.sleep(0.2)
    return {"events": [{"endpoint": e.endpoint_id, "cluster": e.cluster_id, "event": e.event_id,
                        "number": e.event_number, "priority": e.priority, "timestamp_type": e.timestamp_type,
                        "timestamp": e.timestamp, "data": e.data} for e in events]}


def test_python_matter_server_receives_operation_completion(tmp_path: Path):
    with twin_lab(tmp_path, "i4bev") as lab:
        got = lab.call("test_node_events_matter_server", "scenario", timeout=240)["events"]
    print(got)
    completions = [e for e in got if (e["cluster"], e["event"]) == (0x60, 0x01)]
    assert len(completions) == 1, got
    (event,) = completions
    assert event["endpoint"] == 1 and event["priority"] == 1   # Info
    assert event["timestamp_type"] == 0                         # system time (the twin's virtual ms)
    data = event["data"]
    assert data["completionErrorCode"] == 0 and data["totalOperationalTime"] >= 1, data
    # Event numbers only go up.
    numbers = [e["number"] for e in got]
    assert numbers == sorted(numbers)
