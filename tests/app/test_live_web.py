"""The live page's server side over real HTTP (uvicorn on 127.0.0.1, a free port): the page and
its files (nothing from outside), the stream, the clock's pace, QR images, runs and edit mode."""
import io
import json
import re
import shutil
import socket
import threading
import time
from pathlib import Path

import httpx
import pytest
import uvicorn
import zxingcpp
from PIL import Image

import twin
from matter_twin.http import create_app
from matter_twin.live_web import WEB_DIR
from twin.clock import Pace
from twin.home import Home


@pytest.fixture(scope="module")
def live(tmp_path_factory):
    runs = tmp_path_factory.mktemp("runs")
    (runs / "ref").mkdir()
    (runs / "ref" / "results.jsonl").write_text(
        json.dumps({"episode_id": "e1", "category": "QT1-F", "success": True, "history": []}) + "\n"
        + json.dumps({"episode_id": "e2", "category": "QT2-F", "success": False, "history": []}) + "\n{cut")
    home_file = tmp_path_factory.mktemp("homes") / "home.yaml"
    shutil.copy(Path(twin.__file__).parent / "default_home.yaml", home_file)
    home = Home.load(home_file, seed=0)
    pace = Pace(1.0, paused=True)
    app = create_app(home, pace=pace, runs_dir=runs, home_file=home_file)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = uvicorn.Server(uvicorn.Config(app, log_level="warning", timeout_graceful_shutdown=1))
    threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True).start()
    deadline = time.monotonic() + 10
    while not srv.started:
        assert time.monotonic() < deadline
        time.sleep(0.02)
    with httpx.Client(base_url=f"http://127.0.0.1:{sock.getsockname()[1]}", timeout=10) as client:
        yield client, home, pace, home_file
    app.state.live_closing = True
    srv.should_exit = True


def test_the_page_and_its_files_are_served_and_name_nothing_outside(live):
    client, *_ = live
    page = client.get("/")
    assert page.status_code == 200 and "/live/static/app.js" in page.text
    for path in sorted(WEB_DIR.iterdir()):
        assert client.get(f"/live/static/{path.name}").status_code == 200
        # No CDN, no web font: the only URL in the files is the SVG namespace.
        urls = set(re.findall(r"https?://[^\s\"'`)]+", path.read_text()))
        assert urls <= {"http://www.w3.org/2000/svg"}, (path.name, urls)


def test_live_home_lists_every_room_and_device_with_attributes(live):
    client, home, *_ = live
    view = client.get("/live/home").json()
    assert [r["id"] for r in view["rooms"]] == list(home.rooms)
    assert set(view["devices"]) == set(home.devices)
    assert view["devices"]["kitchen_light"]["attributes"]["1/OnOff/OnOff"] is False
    assert view["pace"] == {"speed": 1.0, "paused": True}


def test_the_stream_starts_with_the_home_then_carries_a_tool_call_change(live):
    client, *_ = live
    with client.stream("GET", "/live/stream", params={"sample": 1}) as response:
        lines = response.iter_lines()
        assert next(lines) == "event: home"
        assert json.loads(next(lines)[len("data: "):])["devices"]
        answer = client.post("/tools/execute_command", json={
            "device.id": "kitchen_light", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {}})
        assert answer.json()["ok"]
        for line in lines:
            if line.startswith("data: "):
                changes = json.loads(line[len("data: "):])["changes"]
                if any(c.get("device") == "kitchen_light" and c.get("attribute") == "OnOff" and c["value"] is True
                       for c in changes):
                    break
    assert client.get("/live/stream", params={"sample": 0}).json()["error"]["code"] == "INVALID_ARGUMENT"


def test_pace_is_set_checked_and_refused_whole(live):
    client, _, pace, _ = live
    assert client.post("/clock/pace", json={"speed": 60, "paused": False}).json() == {
        "ok": True, "speed": 60.0, "paused": False}
    bad = client.post("/clock/pace", json={"speed": -1, "paused": True})
    assert bad.status_code == 400 and "positive" in bad.json()["error"]["message"]
    assert (pace.speed, pace.paused) == (60.0, False)     # nothing half-applied
    assert client.post("/clock/pace", json={"sped": 2}).json()["error"]["accepted"] == ["speed", "paused"]
    client.post("/clock/pace", json={"paused": True, "speed": 1})


def test_qr_image_decodes_to_the_nodes_payload(live):
    client, *_ = live
    rows = client.get("/codes").json()["codes"]
    for row in (rows[0], rows[-1]):                # a device and a room-sensor node
        image = client.get(f"/live/qr/{row['device']}.png")
        assert image.headers["content-type"] == "image/png"
        decoded = zxingcpp.read_barcodes(Image.open(io.BytesIO(image.content)))
        assert [d.text for d in decoded] == [row["qr_code"]]
    assert client.get("/live/qr/nobody.png").json()["error"]["code"] == "NOT_FOUND"


def test_runs_are_read_from_result_files(live):
    client, *_ = live
    assert client.get("/live/runs").json()["runs"] == [{"name": "ref", "episodes": 2, "solved": 1}]
    detail = client.get("/live/runs/ref").json()
    assert [r["episode_id"] for r in detail["results"]] == ["e1", "e2"]
    assert client.get("/live/runs/nope").json()["error"]["accepted"] == ["ref"]


def test_edit_mode_saves_a_valid_home_file_and_refuses_a_bad_one(live):
    client, _, _, home_file = live
    start = client.get("/live/homefile").json()
    assert start["path"] == "home-edited.yaml" and start["dir"] == str(home_file.parent.resolve())
    spec = start["home"]
    spec["rooms"].append({"id": "study", "name": "Study", "devices": [{"id": "study_lamp", "type": "on_off_light"}]})
    moved = spec["rooms"][0]["devices"].pop()
    spec["rooms"][1]["devices"].append(moved)
    saved = client.post("/live/homefile", json={"home": spec, "path": "edited.yaml"}).json()
    assert saved["ok"], saved
    again = Home.load(home_file.parent / "edited.yaml")
    assert "study" in again.rooms and again.room_of(moved["id"]) == spec["rooms"][1]["id"]
    # An existing file is replaced only when asked; a file name never names a place.
    assert client.post("/live/homefile", json={"home": spec, "path": "edited.yaml"}).status_code == 409
    assert client.post("/live/homefile", json={"home": spec, "path": "edited.yaml", "overwrite": True}).json()["ok"]
    for bad_name in ("../escape.yaml", "/tmp/x.yaml", "notes.txt", ".hidden.yaml"):
        answer = client.post("/live/homefile", json={"home": spec, "path": bad_name})
        assert answer.status_code == 400 and "file name" in answer.json()["error"]["message"], bad_name
    spec["rooms"][-1]["devices"][0]["type"] = "toaster"
    bad = client.post("/live/homefile", json={"home": spec, "path": "bad.yaml"})
    assert bad.status_code == 400 and "toaster" in bad.json()["error"]["message"]
    assert "\n" not in bad.json()["error"]["message"]
    assert not (home_file.parent / "bad.yaml").exists()


def test_the_page_names_operational_states_from_the_data_model():
    """A docked robot vacuum (RvcOperationalState 0x42) reads "Docked", not "state ?": the names
    come with the home view, from chip.clusters.Objects."""
    from chip.clusters import Objects as Clusters

    from matter_twin.live_web import enum_names
    names = enum_names()
    assert names["RvcOperationalState"][int(Clusters.RvcOperationalState.Enums.OperationalStateEnum.kDocked)] == \
        "Docked"
    assert names["RvcOperationalState"][0x41] == "Charging" and names["OperationalState"][1] == "Running"
    home = Home.default()
    vacuum = home.device("utility_room_vacuum").read("RvcOperationalState", "OperationalState", 1)
    assert vacuum in names["RvcOperationalState"]
    script = (WEB_DIR / "devices.js").read_text()
    assert "setEnums" in script and '"Stopped", "Running"' not in script   # no names retyped in the page
