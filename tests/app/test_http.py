"""The HTTP surface end to end: a real uvicorn server on 127.0.0.1 (a free port), httpx client."""
import socket
import threading
import time

import httpx
import pytest
import uvicorn

from bridge.tools import Session
from matter_twin.http import create_app
from twin.home import Home


def make_home():
    home = Home("http home", seed=2)
    home.add_room("living_room", "Living Room", daylight_lux=100.0)
    home.add_device("lamp", "on_off_light", "living_room")
    return home


@pytest.fixture(scope="module")
def server():
    home = make_home()
    asked = []
    session = Session(ask_user=lambda q: asked.append(q) or "yes, please")
    app = create_app(home, session)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    thread = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + 10
    while not srv.started:
        assert time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as client:
        yield client, home, session, asked
    srv.should_exit = True
    thread.join(timeout=10)
    sock.close()


def test_health_and_tool_list(server):
    client, *_ = server
    assert client.get("/health").json() == {"status": "ok", "tools": 17}
    tools = client.get("/tools").json()
    assert len(tools) == 17 and {t["function"]["name"] for t in tools} >= {"get_rooms", "finish"}


def test_tools_over_http(server):
    client, home, *_ = server
    r = client.post("/tools/get_rooms")  # empty body = no arguments
    assert r.status_code == 200
    assert r.json() == {"ok": True, "rooms": [{"room_id": "living_room", "name": "Living Room"}]}
    r = client.post("/tools/execute_command", json={
        "device.id": "lamp", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {}})
    assert r.status_code == 200 and r.json()["command"] == "On"
    r = client.post("/tools/get_attribute", json={"device_id": "lamp", "cluster_id": 6, "attribute_id": 0})
    assert r.json()["value"] is True
    assert client.post("/tools/get_room_states", json={"room.id": "living_room"}).json()["illuminance"] == 400
    assert home.devices["lamp"].read("OnOff", "OnOff") is True  # the same home, no copy


def test_errors_over_http(server):
    client, *_ = server
    r = client.post("/tools/get_room_devices", json={"room.id": "attic"})
    assert r.status_code == 400
    assert r.json()["error"] == {"code": "NOT_FOUND", "message": "there is no room 'attic'",
                                 "accepted": ["living_room"]}
    r = client.post("/tools/write_attribute", json={"device.id": "lamp", "cluster.id": "OnOff",
                                                     "attribute.id": "OnTime", "value": 70000})
    assert r.status_code == 400 and r.json()["error"]["code"] == "CONSTRAINT_ERROR"
    r = client.post("/tools/open_the_pod_bay_doors", json={})
    assert r.status_code == 404 and r.json()["error"]["code"] == "UNKNOWN_TOOL"
    assert "get_rooms" in r.json()["error"]["accepted"]
    r = client.post("/tools/get_room_devices", content=b"{room: 1", headers={"content-type": "application/json"})
    assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_ARGUMENT"
    assert "not JSON" in r.json()["error"]["message"]


def test_clock_and_workflows_over_http(server):
    client, home, *_ = server
    start = client.get("/clock").json()
    assert start["ok"] and start["tick"] == home.clock.tick
    when = client.post("/tools/get_current_time").json()["current_time"]
    assert when == start["time"]
    hh, mm = int(when[11:13]), int(when[14:16])
    at = f"{when[:11]}{hh + (mm + 1) // 60:02d}:{(mm + 1) % 60:02d}:00"
    r = client.post("/tools/schedule_workflow", json={"start_time": at, "steps": [
        {"tool": "execute_command", "args": {"device.id": "lamp", "endpoint.id": 1, "cluster.id": "OnOff",
                                             "command.id": "Toggle", "args": {}}}]})
    assert r.status_code == 200, r.json()
    wid = r.json()["workflow_id"]
    before = home.devices["lamp"].read("OnOff", "OnOff")
    r = client.post("/clock/advance", json={"seconds": 120})
    assert r.json()["tick"] == start["tick"] + 1200
    status = client.post("/tools/get_workflow_status", json={"workflow.id": wid}).json()
    assert status["status"] == "completed"
    assert home.devices["lamp"].read("OnOff", "OnOff") is (not before)
    r = client.post("/clock/advance", json={"seconds": -5})
    assert r.status_code == 400 and r.json()["error"]["code"] == "INVALID_ARGUMENT"
    assert client.post("/clock/advance", json={}).status_code == 400


def test_session_history_and_ask_user(server):
    client, _, session, asked = server
    r = client.post("/tools/ask_user", json={"question": "Turn on the lamp?"})
    assert r.json() == {"ok": True, "question": "Turn on the lamp?", "answer": "yes, please"}
    assert asked[-1] == "Turn on the lamp?"
    history = client.get("/history").json()
    assert history[-1]["tool"] == "ask_user" and history == session.history


def test_openapi_documents_each_tools_body(server):
    client, *_ = server
    spec = client.get("/openapi.json").json()
    body = spec["paths"]["/tools/execute_command"]["post"]["requestBody"]["content"]["application/json"]
    assert body["schema"]["required"] == ["device.id", "endpoint.id", "cluster.id", "command.id", "args"]
    assert "/clock/advance" in spec["paths"] and "/tools/get_rooms" in spec["paths"]


def test_openapi_body_of_every_tool_is_its_argument_model(server):
    from bridge.tools import TOOL_MODELS
    from twin.tool_arguments import parameters_schema
    client, *_ = server
    paths = client.get("/openapi.json").json()["paths"]
    for name, model in TOOL_MODELS.items():
        post = paths[f"/tools/{name}"]["post"]
        assert post["requestBody"]["content"]["application/json"]["schema"] == parameters_schema(model), name
        assert post["description"] == " ".join(model.__doc__.split())


def test_a_session_s_extra_tools_are_routed_listed_and_answered():
    from fastapi.testclient import TestClient

    from bridge.home_tools import HOME_TOOLS
    from bridge.tools import TOOL_SCHEMAS

    client = TestClient(create_app(Home.default(), Session(tools=HOME_TOOLS)))
    names = [t["function"]["name"] for t in client.get("/tools").json()]
    assert names[:17] == [t["function"]["name"] for t in TOOL_SCHEMAS] and "create_automation" in names
    made = client.post("/tools/create_automation", json={"trigger": {"type": "time", "at": "09:30"}, "steps": [
        {"tool": "execute_command", "args": {"device.id": "bedroom_light", "endpoint.id": 1, "cluster.id": "OnOff",
                                             "command.id": "On", "args": {}}}]})
    assert made.status_code == 200 and made.json()["automation"]["rule_id"] == "a1"
    bad = client.post("/tools/create_automation", json={"trigger": {"type": "time", "cron": "0 0 30 2 *"},
                                                         "steps": []})
    assert bad.status_code == 400 and bad.json()["error"]["code"] == "INVALID_ARGUMENT"
    assert "query_home" in client.get("/openapi.json").json()["paths"]["/tools/query_home"]["post"]["summary"]
    plain = TestClient(create_app(Home.default()))
    assert len(plain.get("/tools").json()) == 17 and plain.post("/tools/query_home", json={}).status_code == 404
