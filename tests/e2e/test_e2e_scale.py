"""Acceptance, scale: a generated 135-device home (plus its 12 room-sensor nodes) runs as 147
Matter nodes in one `twin run` process, inside a namespace this test creates; one
python-matter-server commissions every node and holds a subscription to each at the same time
(the server marks a node available while its subscription lives). Idle figures (RSS, CPU) are
measured by bench/bench_scale.py, not asserted here."""
from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from netns import REPO, Netns

sys.path.insert(0, str(REPO / "bench"))
import bench_scale  # noqa: E402
from test_e2e_matter_server import HTTP_URL, WS_URL, start_server, stop, tail  # noqa: E402

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

DEVICES, ROOMS = 135, 12


def subscriptions_held(node_count: int) -> dict[str, Any]:
    """Inside the namespace: how many nodes the server holds and has available (subscribed)."""
    return asyncio.run(_held(node_count))


async def _held(node_count: int) -> dict[str, Any]:
    import aiohttp
    from matter_server.client.client import MatterClient
    async with aiohttp.ClientSession() as http:
        client = MatterClient(WS_URL, http)
        await client.connect()
        ready = asyncio.Event()
        listening = asyncio.create_task(client.start_listening(ready))
        await asyncio.wait_for(ready.wait(), 30)
        try:
            deadline = time.monotonic() + 60
            while sum(n.available for n in client.get_nodes()) < node_count and time.monotonic() < deadline:
                await asyncio.sleep(1)
            async with http.get(HTTP_URL + "/codes") as response:
                codes = (await response.json())["codes"]
            return {"nodes": len(client.get_nodes()), "available": sum(n.available for n in client.get_nodes()),
                    "codes": len(codes)}
        finally:
            await client.disconnect()
            listening.cancel()


def test_every_node_of_a_135_device_home_is_commissioned_and_subscribed(netns: Netns, tmp_path: Path):
    import subprocess
    home = tmp_path / "home.yaml"
    subprocess.run([sys.executable, "-m", "matter_twin.cli", "home", "generate", "--seed", "1", "--rooms", str(ROOMS),
                    "--devices", str(DEVICES), "-o", str(home)], check=True, cwd=str(REPO), capture_output=True)
    server = start_server(netns, tmp_path)
    twin = None
    try:
        twin = bench_scale.start_twin(netns, tmp_path, home)
        try:
            result = netns.call(bench_scale.commission, -1, str(tmp_path / "progress"), timeout=1200)
            held = netns.call(subscriptions_held, DEVICES + ROOMS, timeout=120)
        except Exception as err:
            raise AssertionError(f"{err}\n--- twin:\n{tail(tmp_path / 'twin.log')}\n--- server:\n"
                                 f"{tail(tmp_path / 'server.log')}") from None
        assert result["failed"] == [] and result["commissioned"] == DEVICES + ROOMS, result["failed"]
        assert held == {"nodes": DEVICES + ROOMS, "available": DEVICES + ROOMS, "codes": DEVICES + ROOMS}, held
        assert twin.poll() is None, tail(tmp_path / "twin.log")     # still running
    finally:
        if twin is not None:
            stop(twin)
        stop(server)
