"""Acceptance: an independent controller implementation, matter.js (`@matter/main`, driven
through tests/matterjs/controller.mjs), commissions a twin node inside a namespace this test
creates, reads it, invokes a command, and receives a subscription report of a change made on
the twin side (through its HTTP tool API)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from mjs_controller import MatterJsController
from netns import REPO, Netns, wait_for_line
from test_e2e_matter_server import stop, tail

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

HOME = """\
name: matter.js controller test
seed: 11
rooms:
  - id: kitchen
    devices:
      - {id: lamp, type: dimmable_light, name: Kitchen Lamp}
"""
HTTP_PORT = 8089


def start_twin(ns: Netns, workdir: Path) -> subprocess.Popen:
    (workdir / "home.yaml").write_text(HOME)
    log = workdir / "twin.log"
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    proc = ns.popen([sys.executable, "-m", "matter_twin.cli", "run", "--home", str(workdir / "home.yaml"),
                     "--speed", "1",
                     "--matter", "--storage", str(workdir / "twin-storage"), "--http", str(HTTP_PORT)],
                    stdout=open(log, "w"), stderr=subprocess.STDOUT, cwd=str(workdir), env=env)
    try:
        wait_for_line(log, lambda line: line.startswith("http: "), 60)
    except TimeoutError:
        stop(proc)
        raise AssertionError(f"twin run did not come up:\n{tail(log)}") from None
    return proc


def http(ns: Netns, path: str, body: dict | None = None) -> dict:
    """The twin's HTTP API, from inside the namespace (it listens on the namespace's loopback)."""
    args = ["curl", "-sS", f"http://127.0.0.1:{HTTP_PORT}{path}"]
    if body is not None:
        args += ["-H", "Content-Type: application/json", "-d", json.dumps(body)]
    return json.loads(ns.run(args).stdout)


def test_matterjs_controller_commissions_reads_invokes_and_gets_reports(netns: Netns, tmp_path: Path):
    twin = start_twin(netns, tmp_path)
    controller = None
    try:
        (code,) = [row for row in http(netns, "/codes")["codes"] if row["device"] == "lamp"]
        controller = MatterJsController(netns, tmp_path)
        node = controller.request("commission", passcode=code["passcode"], discriminator=code["discriminator"])
        assert node["vendorName"] == "matter-twin" and node["endpoints"] == [1], node

        def twin_attr(cluster: str, attribute: str):
            return http(netns, "/tools/get_attribute", {"device.id": "lamp", "endpoint.id": 1, "cluster.id": cluster,
                                                       "attribute.id": attribute})["value"]

        # A real Read of OnOff and CurrentLevel equals the twin's values.
        assert controller.request("read", endpoint=1, cluster="OnOff", attribute="onOff") == \
            [{"value": twin_attr("OnOff", "OnOff")}]
        assert controller.request("read", endpoint=1, cluster="LevelControl", attribute="currentLevel") == \
            [{"value": twin_attr("LevelControl", "CurrentLevel")}]

        # Invoke: Toggle, then MoveToLevel; the twin follows.
        before = twin_attr("OnOff", "OnOff")
        controller.request("invoke", endpoint=1, cluster="OnOff", command="toggle")
        assert twin_attr("OnOff", "OnOff") == (not before)
        controller.request("invoke", endpoint=1, cluster="LevelControl", command="moveToLevel",
                           fields={"level": 200, "transitionTime": 0, "optionsMask": {}, "optionsOverride": {}})
        assert twin_attr("LevelControl", "CurrentLevel") == 200

        # The subscription matter.js holds reports a change made on the twin side.
        now = controller.request("watch", endpoint=1, cluster="OnOff", attribute="onOff")
        http(netns, "/tools/execute_command", {"device.id": "lamp", "endpoint.id": 1, "cluster.id": "OnOff",
                                                "command.id": "Off" if now else "On", "args": {}})
        report = controller.wait_report(lambda r: r["attribute"] == "onOff" and r["value"] == (not now))
        assert report is not None, (controller.reports, controller.log())
        log = (tmp_path / "twin.log").read_text()
        assert "lamp: PASE session" in log and "lamp: CASE session" in log
    finally:
        if controller is not None:
            controller.close()
        stop(twin)
