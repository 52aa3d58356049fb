"""Acceptance, end to end: python-matter-server (the CHIP SDK controller Home Assistant uses)
commissions and controls `twin run`'s nodes, inside a network namespace this test creates.

- one device is commissioned by its manual code, another by its QR code;
- BasicInformation and OnOff are read; OnOff.Toggle on a light changes the twin's state and
  the room's illuminance (checked through the twin's HTTP tool API);
- the twin side turns the light back through the tool API and the controller's subscription
  reports it;
- the twin process restarts on the same storage and the light is controlled again, by CASE,
  without re-commissioning;
- a wrong passcode fails cleanly: the controller reports the failure, the twin carries on.

Needs python-matter-server 7.0.1, chip-core's libnl and /data: `scripts/install-test-deps.sh`
installs them (CI runs it before pytest). Missing pieces fail this test loudly; it never skips.
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from netns import REPO, Netns, wait_for_line

pytestmark = pytest.mark.e2e   # a namespace, python-matter-server or matter.js

SERVER_PORT = 5580
HTTP_PORT = 8088
BASE_PORT = 5540
LIGHT = "kitchen_light"          # an On/Off light in the kitchen (daylight 400 lux)
WS_URL = f"ws://127.0.0.1:{SERVER_PORT}/ws"
HTTP_URL = f"http://127.0.0.1:{HTTP_PORT}"


# --- processes inside the namespace -------------------------------------------------------------

def require_controller() -> str:
    """The matter-server executable; a clear failure (never a skip) when it is missing."""
    exe = shutil.which("matter-server")
    problems = []
    if exe is None:
        problems.append("the `matter-server` command (python-matter-server[server]==7.0.1)")
    if not os.path.isdir("/data"):
        problems.append("a writable /data for chip-core's ini files")
    if problems:
        raise AssertionError("missing " + " and ".join(problems) + ": run scripts/install-test-deps.sh")
    return exe


def start_server(ns: Netns, workdir: Path, sdk_log: str = "progress") -> subprocess.Popen:
    """python-matter-server in the namespace; `sdk_log` is its CHIP SDK log level (the tests keep
    "progress" for their failure reports; its own default, "error", costs far less per message)."""
    from twin.node.credentials import write_paa_trust_store
    exe = require_controller()
    paa = workdir / "paa"
    write_paa_trust_store(paa)  # with the .version stamp, so python-matter-server keeps it
    log = open(workdir / "server.log", "w")
    return ns.popen([exe, "--storage-path", str(workdir / "server"), "--paa-root-cert-dir", str(paa),
                     "--listen-address", "127.0.0.1", "--port", str(SERVER_PORT),
                     "--log-level", "info", "--log-level-sdk", sdk_log],
                    stdout=log, stderr=subprocess.STDOUT, cwd=str(workdir))


def start_twin(ns: Netns, workdir: Path, log_name: str, *extra: str) -> subprocess.Popen:
    """`twin run` on the default home with its nodes and HTTP API; waits until both are up."""
    log_path = workdir / log_name
    log = open(log_path, "w")
    env = dict(os.environ, PYTHONPATH=str(REPO), PYTHONUNBUFFERED="1")
    proc = ns.popen([sys.executable, "-m", "matter_twin.cli", "run", "--speed", "1", "--matter",
                     "--storage", str(workdir / "twin-storage"), "--base-port", str(BASE_PORT),
                     "--http", str(HTTP_PORT), *extra],
                    stdout=log, stderr=subprocess.STDOUT, cwd=str(workdir), env=env)
    try:
        wait_for_line(log_path, lambda line: line.startswith("http: "), 60)
        wait_for_line(log_path, lambda line: line.startswith("matter: "), 5)
    except TimeoutError:
        stop(proc)
        raise AssertionError(f"twin run did not come up:\n{log_path.read_text()[-4000:]}") from None
    return proc


def stop(proc: subprocess.Popen, sig: int = signal.SIGTERM) -> int:
    """Stop a process started with `ip netns exec` (exec keeps the pid) and wait for it."""
    if proc.poll() is None:
        proc.send_signal(sig)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    return proc.returncode


def tail(path: Path, chars: int = 6000) -> str:
    return path.read_text(errors="replace")[-chars:] if path.exists() else "(no log)"


# --- the controller side: runs inside the namespace via Netns.call ------------------------------

def controller(phase: str, state: dict[str, Any]) -> dict[str, Any]:
    """Run one phase against python-matter-server's WebSocket API and the twin's tool API."""
    return asyncio.run(_controller(phase, state))


async def _controller(phase: str, state: dict[str, Any]) -> dict[str, Any]:
    return await controller_session(PHASES[phase], state)


async def controller_session(func: Any, state: Any) -> Any:
    """Connect a python-matter-server client (retrying while the server starts), listen for
    its events, and run `func(client, twin, state)`."""
    import aiohttp
    from matter_server.client.client import MatterClient

    async with aiohttp.ClientSession() as http:
        client = MatterClient(WS_URL, http)
        deadline = time.monotonic() + 60
        while True:  # the server takes ~10 s to start
            try:
                await client.connect()
                break
            except Exception:
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.5)
        ready = asyncio.Event()
        listening = asyncio.create_task(client.start_listening(ready))
        await asyncio.wait_for(ready.wait(), 30)
        try:
            return await func(client, Twin(http), state)
        finally:
            await client.disconnect()
            listening.cancel()


class Twin:
    """The twin's HTTP tool API."""

    def __init__(self, http: Any):
        self.http = http

    async def get(self, path: str) -> Any:
        async with self.http.get(HTTP_URL + path) as response:
            return await response.json()

    async def tool(self, name: str, args: dict[str, Any]) -> dict[str, Any]:
        async with self.http.post(f"{HTTP_URL}/tools/{name}", json=args) as response:
            result = await response.json()
        assert result["ok"], f"{name} {args}: {result}"
        return result

    async def on_off(self, device: str) -> bool:
        result = await self.tool("get_attribute", {"device.id": device, "endpoint.id": 1,
                                                   "cluster.id": "OnOff", "attribute.id": "OnOff"})
        return result["value"]

    async def toggle_reported(self, client: Any, node_id: int, device: str, path: str) -> tuple[bool, list[Any]]:
        """Toggle `device`'s OnOff through the tool API (the simulation side); its state before,
        and the values python-matter-server's subscription delivered at `path` (waits up to
        30 s for the first)."""
        from matter_server.common.models import EventType
        reports: list[Any] = []
        got = asyncio.Event()

        def on_update(event: Any, value: Any) -> None:
            reports.append(value)
            got.set()
        unsubscribe = client.subscribe_events(on_update, EventType.ATTRIBUTE_UPDATED, node_filter=node_id,
                                              attr_path_filter=path)
        try:
            before = await self.on_off(device)
            await self.tool("execute_command", {"device.id": device, "endpoint.id": 1, "cluster.id": "OnOff",
                                                "command.id": "Off" if before else "On", "args": {}})
            try:
                await asyncio.wait_for(got.wait(), 30)
            except TimeoutError:
                pass   # the caller's assertion on the reports says what is missing
        finally:
            unsubscribe()
        return before, reports

    async def illuminance(self, room: str) -> float:
        return (await self.tool("get_room_states", {"room.id": room}))["illuminance"]


async def _toggle_until_it_works(client: Any, node_id: int, timeout: float) -> int:
    """Invoke OnOff.Toggle, retrying while the controller re-finds the node; returns attempts."""
    from chip.clusters import Objects as Clusters
    deadline = time.monotonic() + timeout
    attempts = 0
    while True:
        attempts += 1
        try:
            await client.send_device_command(node_id, 1, Clusters.OnOff.Commands.Toggle())
            return attempts
        except Exception:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(2)


async def phase_commission(client: Any, twin: Twin, state: dict[str, Any]) -> dict[str, Any]:
    from chip.clusters import Objects as Clusters
    from matter_server.common.models import EventType

    codes = {row["device"]: row for row in (await twin.get("/codes"))["codes"]}
    assert LIGHT in codes, sorted(codes)
    # The manual code carries only 4 bits of discriminator: take a device no other shares it with.
    shorts = [row["discriminator"] >> 8 for row in codes.values()]
    manual_device, wrong_device = [d for d, row in codes.items()
                                   if d != LIGHT and shorts.count(row["discriminator"] >> 8) == 1][:2]
    out: dict[str, Any] = {"manual_device": manual_device, "wrong_device": wrong_device}

    started = time.monotonic()
    by_manual = await client.commission_with_code(codes[manual_device]["manual_code"], network_only=True)
    out["manual_seconds"] = time.monotonic() - started
    started = time.monotonic()
    light = await client.commission_with_code(codes[LIGHT]["qr_code"], network_only=True)
    out["qr_seconds"] = time.monotonic() - started
    out["node_ids"] = {manual_device: by_manual.node_id, LIGHT: light.node_id}

    basic = Clusters.BasicInformation.Attributes
    paths = {name: f"0/{Clusters.BasicInformation.id}/{getattr(basic, name).attribute_id}"
             for name in ("VendorName", "VendorID", "ProductName", "ProductID", "NodeLabel")}
    for device, node_id in out["node_ids"].items():
        values = await client.read_attribute(node_id, list(paths.values()))
        out[f"basic {device}"] = {name: values.get(path) for name, path in paths.items()}
    on_off_path = f"1/{Clusters.OnOff.id}/{Clusters.OnOff.Attributes.OnOff.attribute_id}"
    out["read on_off"] = (await client.read_attribute(light.node_id, on_off_path)).get(on_off_path)
    out["twin on_off before"] = await twin.on_off(LIGHT)
    out["lux before"] = await twin.illuminance("kitchen")

    # The controller subscribed to the node after commissioning: every change must be reported.
    reports: list[Any] = []
    arrived = asyncio.Condition()

    def on_update(event: Any, value: Any) -> None:
        reports.append(value)
        asyncio.get_running_loop().create_task(_notify(arrived))
    unsubscribe = client.subscribe_events(on_update, EventType.ATTRIBUTE_UPDATED, node_filter=light.node_id,
                                          attr_path_filter=on_off_path)

    async def report_of(value: bool) -> bool:
        async with arrived:
            try:
                await asyncio.wait_for(arrived.wait_for(lambda: value in reports), 30)
                return True
            except TimeoutError:
                return False

    await client.send_device_command(light.node_id, 1, Clusters.OnOff.Commands.Toggle())
    out["twin on_off after toggle"] = await twin.on_off(LIGHT)
    out["lux after toggle"] = await twin.illuminance("kitchen")
    out["toggle reported"] = await report_of(out["twin on_off after toggle"])

    # The twin side turns the light back through the tool API; the report must arrive.
    command = "Off" if out["twin on_off after toggle"] else "On"
    reports.clear()
    started = time.monotonic()
    await twin.tool("execute_command", {"device.id": LIGHT, "endpoint.id": 1, "cluster.id": "OnOff",
                                        "command.id": command, "args": {}})
    out["tool reported"] = await report_of(not out["twin on_off after toggle"])
    unsubscribe()
    out["report seconds"] = time.monotonic() - started
    out["reports"] = reports
    out["twin on_off after tool"] = await twin.on_off(LIGHT)
    out["server on_off"] = client.get_node(light.node_id).get_attribute_value(1, Clusters.OnOff.id,
                                                                              Clusters.OnOff.Attributes.OnOff)

    return out


async def _notify(condition: asyncio.Condition) -> None:
    async with condition:
        condition.notify_all()


async def _wrong_passcode(client: Any, code: str) -> dict[str, Any]:
    """Commission with `code` but a wrong passcode; chip-core tries every address the node
    advertises (each fails at Pake2) until it gives up."""
    from matter_protocol.pairing import SetupPayload, parse_manual_code
    right = parse_manual_code(code)
    wrong_passcode = right.passcode + 1 if right.passcode < 99999990 else right.passcode - 1
    wrong = SetupPayload(passcode=wrong_passcode, discriminator=right.discriminator,
                         short_discriminator_only=True).manual_code()
    started = time.monotonic()
    try:
        await client.commission_with_code(wrong, network_only=True)
        outcome = "accepted"
    except Exception as err:  # the server answers with NodeCommissionFailed
        outcome = f"{type(err).__name__}: {err}"
    return {"wrong passcode": outcome, "wrong passcode seconds": time.monotonic() - started}


async def phase_after_restart(client: Any, twin: Twin, state: dict[str, Any]) -> dict[str, Any]:
    node_id = state["node_ids"][LIGHT]
    out: dict[str, Any] = {"known nodes": sorted(n.node_id for n in client.get_nodes())}
    codes = {row["device"]: row for row in (await twin.get("/codes"))["codes"]}
    # The wrong passcode runs while the controller finds the restarted light again (it waits for
    # chip-core's discovery timeout, so doing both at once saves half a minute).
    wrong = asyncio.create_task(_wrong_passcode(client, codes[state["wrong_device"]]["manual_code"]))
    out["twin on_off before"] = await twin.on_off(LIGHT)
    started = time.monotonic()
    out["attempts"] = await _toggle_until_it_works(client, node_id, 90)
    out["seconds"] = time.monotonic() - started
    out["twin on_off after"] = await twin.on_off(LIGHT)
    out.update(await wrong)
    # The twin answers as before: a read of the light works after the failed attempt.
    path = "1/6/0"
    out["read after wrong passcode"] = (await client.read_attribute(node_id, path)).get(path)
    return out


PHASES = {"commission": phase_commission, "after restart": phase_after_restart}


# --- the test ---------------------------------------------------------------------------------

def test_python_matter_server_commissions_and_controls_the_twin(netns: Netns, tmp_path: Path):
    server = start_server(netns, tmp_path)
    twin = None
    try:
        twin = start_twin(netns, tmp_path, "twin-1.log")
        try:
            first = netns.call(controller, "commission", {}, timeout=240)
        except Exception as err:
            raise AssertionError(f"{err}\n--- twin:\n{tail(tmp_path / 'twin-1.log')}\n--- server:\n"
                                 f"{tail(tmp_path / 'server.log', 12000)}") from None
        print(json.dumps(first, indent=1, default=str))
        manual_device = first["manual_device"]


        # Both commissioned; BasicInformation is the twin's own data.
        assert set(first["node_ids"]) == {manual_device, LIGHT}
        for device in (manual_device, LIGHT):
            basic = first[f"basic {device}"]
            assert basic["VendorID"] == 0xFFF1 and basic["VendorName"] == "matter-twin", basic
            assert basic["ProductID"] >= 0x8001, basic

        # OnOff read over Matter equals the twin's; Toggle flips it and the room gets brighter/darker.
        assert first["read on_off"] == first["twin on_off before"]
        assert first["twin on_off after toggle"] == (not first["twin on_off before"])
        if first["twin on_off after toggle"]:
            assert first["lux after toggle"] > first["lux before"]
        else:
            assert first["lux after toggle"] < first["lux before"]

        # Both changes reached the subscriber: the Matter one, then the tool API's turning it back.
        assert first["toggle reported"]
        assert first["twin on_off after tool"] == first["twin on_off before"]
        assert first["tool reported"] and first["reports"] == [first["twin on_off after tool"]], first["reports"]
        assert first["server on_off"] == first["twin on_off after tool"]

        # Restart the twin on the same storage: the fabric survives, CASE reconnects.
        assert stop(twin) == 0, tail(tmp_path / "twin-1.log")
        twin = start_twin(netns, tmp_path, "twin-2.log")
        try:
            second = netns.call(controller, "after restart", first, timeout=180)
        except Exception as err:
            raise AssertionError(f"{err}\n--- twin:\n{tail(tmp_path / 'twin-2.log')}\n--- server:\n"
                                 f"{tail(tmp_path / 'server.log', 12000)}") from None
        print(json.dumps(second, indent=1, default=str))
        assert sorted(first["node_ids"].values()) == second["known nodes"]
        assert second["twin on_off after"] == (not second["twin on_off before"])

        # A wrong passcode: the controller reports a failure, the node counted the failed PASE
        # attempts, and the twin still answers.
        assert second["wrong passcode"].startswith("NodeCommissionFailed"), second["wrong passcode"]
        assert second["read after wrong passcode"] == second["twin on_off after"]
        log = (tmp_path / "twin-2.log").read_text()
        assert f"pairing: {LIGHT} manual " in log  # `twin run` prints the codes at start
        assert "CASE session" in log and "PASE session" not in log  # reconnected, not re-commissioned
        assert f"{first['wrong_device']}: PASE failed" in log
    finally:
        if twin is not None:
            stop(twin)
        stop(server)
