"""Acceptance, end to end (issue #13 item 2): `twin run` restarts on the same --storage and
python-matter-server 7.0.1 (the CHIP SDK controller) follows within seconds, with no command
first, inside a network namespace this test creates.

- the light's state is kept across the restart (device state in the node's storage);
- the node resumes the controller's subscription: it opens CASE to the controller itself and
  sends a priming report under the same subscription id, so a change made through the twin's
  tool API right after the restart reaches the controller within 15 s;
- the controller keeps the node available and a command right after the restart works (a node
  that resumes its subscriptions does not log ShutDown: python-matter-server 7.0.1 would mark
  it unavailable until it re-subscribed itself, which the resumed subscription postpones).
"""
from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest
from netns import Netns
from test_e2e_matter_server import LIGHT, controller_session, start_server, start_twin, stop, tail

pytestmark = pytest.mark.e2e

FOLLOW_LIMIT = 15.0


def run(phase: str, state: dict[str, Any]) -> dict[str, Any]:
    return asyncio.run(controller_session(PHASES[phase], state))


async def _wait_value(client: Any, node_id: int, value: bool, timeout: float) -> float | None:
    """Seconds until the controller's copy of the light's OnOff is `value` (None: never)."""
    from chip.clusters import Objects as Clusters
    started = time.monotonic()
    while time.monotonic() - started < timeout:
        node = client.get_node(node_id)
        if node.get_attribute_value(1, Clusters.OnOff.id, Clusters.OnOff.Attributes.OnOff) == value:
            return time.monotonic() - started
        await asyncio.sleep(0.1)
    return None


async def phase_commission(client: Any, twin: Any, state: dict[str, Any]) -> dict[str, Any]:
    codes = {row["device"]: row for row in (await twin.get("/codes"))["codes"]}
    node = await client.commission_with_code(codes[LIGHT]["qr_code"], network_only=True)
    await twin.tool("execute_command", {"device.id": LIGHT, "endpoint.id": 1, "cluster.id": "OnOff",
                                        "command.id": "On", "args": {}})
    seconds = await _wait_value(client, node.node_id, True, 30)
    await asyncio.sleep(1.5)   # the twin saves device state at most once a second
    return {"node_id": node.node_id, "on reported": seconds}


async def phase_after_restart(client: Any, twin: Any, state: dict[str, Any]) -> dict[str, Any]:
    from chip.clusters import Objects as Clusters
    node_id = state["node_id"]
    out: dict[str, Any] = {"twin on_off at restart": await twin.on_off(LIGHT)}
    started = time.monotonic()
    await twin.tool("execute_command", {"device.id": LIGHT, "endpoint.id": 1, "cluster.id": "OnOff",
                                        "command.id": "Off", "args": {}})
    out["off reported seconds"] = await _wait_value(client, node_id, False, FOLLOW_LIMIT + 15)
    started = time.monotonic()
    while not client.get_node(node_id).available and time.monotonic() - started < 30:
        await asyncio.sleep(0.1)
    out["available seconds"] = time.monotonic() - started
    started = time.monotonic()
    try:
        await asyncio.wait_for(client.send_device_command(node_id, 1, Clusters.OnOff.Commands.On()), 30)
        out["command seconds"] = time.monotonic() - started
    except Exception as err:
        out["command error"] = f"{type(err).__name__}: {err} after {time.monotonic() - started:.1f} s"
    out["twin on_off after command"] = await twin.on_off(LIGHT)
    return out


PHASES = {"commission": phase_commission, "after restart": phase_after_restart}


def test_controller_follows_a_twin_restart_within_15_s(netns: Netns, tmp_path: Path):
    server = start_server(netns, tmp_path)
    twin = None
    try:
        twin = start_twin(netns, tmp_path, "twin-1.log")
        first = netns.call(run, "commission", {}, timeout=240)
        print(json.dumps(first))
        assert first["on reported"] is not None, tail(tmp_path / "twin-1.log")
        assert stop(twin) == 0
        stored = json.loads((tmp_path / "twin-storage" / LIGHT / "subscriptions.json").read_text())
        assert len(stored["subscriptions"]) == 1, stored   # the controller's subscription, kept at stop
        twin = start_twin(netns, tmp_path, "twin-2.log")
        try:
            second = netns.call(run, "after restart", first, timeout=240)
        except Exception as err:
            raise AssertionError(f"{err}\n--- twin:\n{tail(tmp_path / 'twin-2.log')}\n--- server:\n"
                                 f"{tail(tmp_path / 'server.log', 12000)}") from None
        print("restart:", json.dumps(second))
        log = (tmp_path / "twin-2.log").read_text()
        assert second["twin on_off at restart"] is True, log          # state kept
        assert f"{LIGHT}: resuming subscription" in log, log
        seconds = second["off reported seconds"]
        assert seconds is not None and seconds <= FOLLOW_LIMIT, (second, tail(tmp_path / "server.log", 12000))
        assert second["available seconds"] <= FOLLOW_LIMIT, second
        assert "command seconds" in second and second["twin on_off after command"] is True, second
        assert "PASE session" not in log
    finally:
        if twin is not None:
            stop(twin)
        stop(server)
