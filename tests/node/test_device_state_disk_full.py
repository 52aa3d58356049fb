"""Issue #32 item 8, a full disk: on a real, small tmpfs (in a private mount namespace this test
creates), saving device state fails with ENOSPC. One warning is logged however often the flush
retries, `can_save` turns False (and the nodes' IM refuses writes and commands with
RESOURCE_EXHAUSTED, so nothing is acknowledged that a restart would lose), and once there is room
again the state is saved and one line says so."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from test_node_im_server import Link, light

from clusters.status import Status
from matter_protocol.interaction import CommandData, CommandPath, InvokeRequest, StatusResponse

REPO = Path(__file__).resolve().parents[2]

INSIDE = r"""
import json, logging, os, sys
sys.path.insert(0, sys.argv[2])
from twin.home import Home
from twin.node.device_state import DeviceStateStore

records = []
logging.basicConfig(level=logging.INFO)
logging.getLogger("twin.node.device_state").addHandler(type("H", (logging.Handler,), {
    "emit": lambda self, r: records.append(r.levelname + " " + r.getMessage())})())
store_dir = sys.argv[1]
home = Home.default()
store = DeviceStateStore(store_dir, dict(home.devices))
store.watch()
out = {"first": store.flush(), "can_save_before": store.can_save()}
filler = os.path.join(store_dir, "filler")
fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
try:   # take every byte left
    while True:
        os.write(fd, b"x" * 4096)
except OSError:
    pass
os.close(fd)
light = home.devices["bedroom_light"].endpoint(1).server("OnOff")
light.set("OnOff", not light.get("OnOff"))
out["written_while_full"] = sum(store.flush() for _ in range(20))   # 20 retries (2 s of polls)
out["can_save_full"] = store.can_save()
out["dirty"] = sorted(store.dirty)
os.unlink(filler)
out["written_after"] = store.flush()
out["can_save_after"] = store.can_save()
out["records"] = records
print(json.dumps(out))
"""


def test_a_full_disk_is_one_warning_and_refuses_changes_until_saved_again(tmp_path):
    assert shutil.which("unshare") and shutil.which("mount"), "needs util-linux unshare and mount"
    store = tmp_path / "store"
    store.mkdir()
    script = tmp_path / "inside.py"
    script.write_text(INSIDE)
    proc = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c",
         f'mount -t tmpfs -o size=1m tmpfs "{store}" && exec "{sys.executable}" "{script}" "{store}" "{REPO}"'],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    assert got["first"] > 0 and got["can_save_before"]
    assert got["written_while_full"] == 0 and not got["can_save_full"] and got["dirty"] == ["bedroom_light"]
    warnings = [r for r in got["records"] if r.startswith("WARNING")]
    assert len(warnings) == 2, got["records"]   # one when it failed, one when it worked again
    assert "cannot be saved" in warnings[0] and "No space left" in warnings[0]
    assert "saved again" in warnings[1]
    assert got["written_after"] == 1 and got["can_save_after"]


def test_the_node_refuses_writes_and_commands_while_its_state_cannot_be_saved():
    device = light()
    link = Link(device)
    link.im.can_change = lambda: False
    toggle = InvokeRequest([CommandData(CommandPath(1, 6, 2))])
    assert link.request(toggle) == [StatusResponse(Status.RESOURCE_EXHAUSTED)]
    assert device.read("OnOff", "OnOff") is False   # nothing applied
    link.im.can_change = lambda: True
    link.request(toggle)
    assert device.read("OnOff", "OnOff") is True


def test_the_tool_api_refuses_changes_while_the_state_cannot_be_saved():
    from fastapi.testclient import TestClient

    from matter_twin.http import create_app
    from twin.home import Home

    home = Home.default()
    app = create_app(home)
    app.state.can_save = lambda: False   # what `twin run` wires to its DeviceStateStore
    client = TestClient(app)
    on = {"device.id": "bedroom_light", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "On", "args": {}}
    answer = client.post("/tools/execute_command", json=on)
    assert answer.status_code == 503 and answer.json()["error"]["code"] == "RESOURCE_EXHAUSTED"
    assert home.devices["bedroom_light"].endpoint(1).server("OnOff").get("OnOff") is False
    assert client.post("/tools/get_rooms", json={}).status_code == 200   # reading goes on
    app.state.can_save = lambda: True
    assert client.post("/tools/execute_command", json=on).json()["ok"]
