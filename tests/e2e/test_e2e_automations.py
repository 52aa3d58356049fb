"""Acceptance, end to end (issue #28): an automation rule fires when python-matter-server (the
CHIP SDK controller) changes a device over Matter, in a namespace this module creates. The rule
lives in the home file (`automations:`); it watches the kitchen light's OnOff through the cluster
servers' listeners, the same ones the node reports from, and switches the living-room fan on."""
from __future__ import annotations

import asyncio
import importlib.resources
import time
from typing import Any

import pytest
import yaml
from e2e_twin import twin_lab

pytestmark = pytest.mark.e2e   # a namespace and python-matter-server

LIGHT, FAN = "kitchen_light", "living_room_fan"
MODULE = "test_e2e_automations"


def home_with_rule() -> str:
    home = yaml.safe_load((importlib.resources.files("twin") / "default_home.yaml").read_text())
    home["automations"] = [{"name": "fan follows the kitchen light", "trigger": {
        "type": "device", "device_id": LIGHT, "cluster_id": "OnOff", "attribute_id": "OnOff", "op": "==",
        "value": True}, "steps": [{"tool": "execute_command", "args": {
            "device_id": FAN, "endpoint_id": 1, "cluster_id": "OnOff", "command_id": "On", "args": {}}}]}]
    return yaml.safe_dump(home, sort_keys=False)


async def switch_on_over_matter(client: Any, twin: Any, state: Any) -> dict[str, Any]:
    from chip.clusters import Objects as Clusters
    codes = {row["device"]: row for row in (await twin.get("/codes"))["codes"]}
    node = await client.commission_with_code(codes[LIGHT]["qr_code"], network_only=True)
    out: dict[str, Any] = {"light before": await twin.on_off(LIGHT), "fan before": await twin.on_off(FAN)}
    await client.send_device_command(node.node_id, 1, Clusters.OnOff.Commands.On())
    out["light after"] = await twin.on_off(LIGHT)
    started = time.monotonic()
    while time.monotonic() - started < 10 and not await twin.on_off(FAN):
        await asyncio.sleep(0.1)
    out["fan after"] = await twin.on_off(FAN)
    return out


def test_a_change_over_matter_fires_the_home_s_automation(tmp_path: Any):
    home = tmp_path / "home.yaml"
    home.write_text(home_with_rule())
    with twin_lab(tmp_path, "aut", "--home", str(home)) as lab:
        got = lab.call(MODULE, "switch_on_over_matter", timeout=240)
    assert got == {"light before": False, "fan before": False, "light after": True, "fan after": True}, got
