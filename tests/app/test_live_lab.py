"""The live page of a lab session (matter_twin/live_lab.py): the JSON the page consumes. A
twin-only session (no hardware needed) gets the page's view, its calls and events on the
home's change stream as `message` changes beside the twin's own attribute changes, and a
real device's report (the subscription callback python-matter-server calls) with its value
beside the twin's."""
from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from hardware.labfile import parse_lab
from hardware.session import LabSession
from matter_twin.live_lab import lab_page

LIGHT = {"device.id": "kitchen_light", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {}}


@pytest.fixture
def page(tmp_path: Path):
    lab = parse_lab({"name": "bench", "controller": {"url": "ws://127.0.0.1:5580/ws"},
                     "session": {"sample_interval": 60}}, str(tmp_path / "bench.yaml"), tmp_path)
    session = LabSession(lab, tmp_path / "s.sqlite")
    session.open()
    app = lab_page(session)
    with TestClient(app) as client:
        yield session, app, client
    session.close()


def messages(batch) -> list[dict]:
    return [c.to_json() for c in batch.changes if c.key[0] == "message"]


def test_calls_events_and_real_reports_reach_the_stream_as_messages(page):
    session, app, client = page
    stream, twin = app.state.change_stream, session.twin
    with twin.lock:
        sub = stream.subscribe(1.0)
        sub.take(0.0)
    # A call through the page goes through the session: recorded, source "page".
    answer = client.post("/tools/execute_command", json=LIGHT)
    assert answer.status_code == 200 and answer.json()["ok"]
    with twin.lock:
        batch = sub.take(0.5)
    changes = [c.to_json() for c in batch.changes]
    assert {"kind": "attribute", "device": "kitchen_light", "endpoint": 1, "cluster": "OnOff",
            "attribute": "OnOff", "value": True} in changes
    (call,) = [m["value"] for m in messages(batch) if m["topic"] == "lab.call"]
    assert call["source"] == "page" and call["tool"] == "execute_command" and call["ok"] and call["step"] == 1
    # A divergence and a real report, as the session flags and receives them.
    session._diverged(1, "kitchen_light", "OnOff.OnOff", False, True, 1.0)
    session._reporter("kitchen_light", "1/6/0")(None, False)
    with twin.lock:
        batch = sub.take(1.0)
    got = {m["topic"]: m["value"] for m in messages(batch)}
    assert got["lab.event"]["kind"] == "divergence" and got["lab.event"]["detail"]["attribute"] == "OnOff.OnOff"
    assert got["lab.real"] == {"device": "kitchen_light", "endpoint": 1, "key": "OnOff.OnOff", "value": False}
    # The page's start view: the same session state, the twin's values from the home view.
    view = client.get("/live/lab").json()
    assert view["ok"] and view["name"] == "bench" and view["real"] == {"kitchen_light": {"OnOff.OnOff": False}}
    assert [d["attribute"] for d in view["divergences"]] == ["OnOff.OnOff"]
    assert client.get("/live/home").json()["devices"]["kitchen_light"]["attributes"]["1/OnOff/OnOff"] is True
    with twin.lock:
        sub.close()


def test_bad_tool_calls_through_the_page_are_answered_and_recorded(page):
    session, _, client = page
    unknown = client.post("/tools/fly", json={})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "UNKNOWN_TOOL"
    assert client.post("/tools/get_rooms", content=b"{not json").status_code == 400
    bad = client.post("/tools/execute_command", json={**LIGHT, "device.id": "nope"})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "NOT_FOUND"
    assert session._step == 1   # only the call that reached the tools is a step of the session
