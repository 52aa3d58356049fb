"""The MCP surface: an `mcp` client session lists the tools with their schemas and calls them,
over stdio against the in-process twin (`twin mcp`) and over streamable HTTP against the
Matter backend (`twin mcp --backend CONFIG --http PORT`, matter.js devices behind
python-matter-server in a network namespace)."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from typing import Any

import anyio
import pytest
from matterjs.lab import SERVER_URL, lab
from netns import REPO

from bridge.tools import TOOL_SCHEMAS

MCP_PORT = 8765


async def _session_calls(session: Any, calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    await session.initialize()
    listed = await session.list_tools()
    results = []
    for name, args in calls:
        result = await session.call_tool(name, args)
        assert json.loads(result.content[0].text) == result.structured_content
        results.append({"is_error": result.is_error, "result": result.structured_content})
    return {"tools": {t.name: t.input_schema for t in listed.tools},
            "descriptions": {t.name: t.description for t in listed.tools}, "results": results}


def check_listing(out: dict[str, Any]) -> None:
    assert out["tools"] == {s["function"]["name"]: s["function"]["parameters"] for s in TOOL_SCHEMAS}
    assert out["descriptions"]["get_room_states"] == next(
        s["function"]["description"] for s in TOOL_SCHEMAS if s["function"]["name"] == "get_room_states")


def test_stdio_mcp_session_against_the_twin_in_process():
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client
    params = StdioServerParameters(command=sys.executable, args=["-m", "matter_twin.cli", "mcp"], cwd=str(REPO),
                                   env={**os.environ, "PYTHONPATH": str(REPO)})
    on = {"device.id": "kitchen_light", "endpoint.id": 1, "cluster.id": "OnOff", "command.id": "Off", "args": {}}
    calls = [("get_rooms", {}),
             ("get_room_devices", {"room.id": "kitchen"}),
             ("execute_command", on),
             ("get_attribute", {"device.id": "kitchen_light", "cluster.id": "OnOff", "attribute.id": "OnOff"}),
             ("get_room_states", {"room.id": "kitchen"}),
             ("write_attribute", {"device.id": "kitchen_light", "cluster.id": "OnOff", "attribute.id": "OnOff",
                                  "value": True}),
             ("get_attribute", {"device.id": "kitchen_light"})]

    async def main() -> dict[str, Any]:
        # The server's stderr goes to the real stderr: stdio_client's default is whatever sys.stderr was
        # when mcp.client.stdio was first imported, which may be a capsys buffer with no file descriptor.
        async with stdio_client(params, errlog=sys.__stderr__) as (read, write):
            async with ClientSession(read, write) as session:
                return await _session_calls(session, calls)
    out = anyio.run(main)
    check_listing(out)
    rooms, devices, off, state, states, write, missing = out["results"]
    assert not rooms["is_error"] and rooms["result"]["rooms"][1] == {"room_id": "kitchen", "name": "Kitchen"}
    assert "kitchen_light" in [d["device_id"] for d in devices["result"]["devices"]]
    assert off["result"]["ok"] and state["result"]["value"] is False
    assert states["result"]["temperature"] == 2500
    assert write["is_error"] and write["result"]["error"]["code"] == "UNSUPPORTED_WRITE"
    assert missing["is_error"] and missing["result"]["error"]["code"] == "INVALID_ARGUMENT"


@pytest.fixture(scope="module")
def the_lab(tmp_path_factory):
    with lab(tmp_path_factory.mktemp("mcp-lab")) as the_lab:
        yield the_lab


def http_scenario(config: str) -> dict[str, Any]:
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    server = subprocess.Popen([sys.executable, "-m", "matter_twin.cli", "mcp", "--backend", config,
                               "--http", str(MCP_PORT)],
                              cwd=str(REPO), env={**os.environ, "PYTHONPATH": str(REPO)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", MCP_PORT), 1).close()
                break
            except OSError:
                assert server.poll() is None, server.stdout.read()
                assert time.monotonic() < deadline, "twin mcp --http did not start"
                time.sleep(0.2)
        light = {"device.id": "light", "endpoint.id": 1, "cluster.id": "OnOff"}
        calls = [("get_rooms", {}),
                 ("get_room_devices", {"room.id": "living"}),  # commissions the light on first use
                 ("execute_command", {**light, "command.id": "On", "args": {}}),
                 ("get_attribute", {"device.id": "light", "cluster.id": "OnOff", "attribute.id": "OnOff"}),
                 ("execute_command", {**light, "command.id": "Toggle", "args": {}}),
                 ("get_attribute", {"device.id": "light", "cluster.id": "OnOff", "attribute.id": "OnOff"}),
                 ("execute_command", {**light, "cluster.id": "LevelControl", "command.id": "MoveToLevel",
                                      "args": {"level": 255, "transitionTime": 0, "optionsMask": 0,
                                               "optionsOverride": 0}})]

        async def main() -> dict[str, Any]:
            async with streamable_http_client(f"http://127.0.0.1:{MCP_PORT}/mcp") as streams:
                async with ClientSession(streams[0], streams[1]) as session:
                    return await _session_calls(session, calls)
        return anyio.run(main)
    finally:
        server.terminate()
        server.wait(20)


@pytest.mark.e2e
def test_streamable_http_mcp_session_against_the_matter_backend(the_lab):
    cfg = the_lab.write_config("mcp.yaml", {
        "server": SERVER_URL, "rooms": [{"id": "living", "name": "Living Room"}],
        "devices": [{"id": "light", "room": "living", "name": "Ceiling light",
                     "matter": {"pairing_code": the_lab.codes["light"], "endpoint": 1}}]})
    try:
        out = the_lab.ns.call(http_scenario, str(cfg), timeout=240)
    except Exception as err:
        raise AssertionError(f"{err}\n--- matter-server log ---\n{the_lab.log('server', 3000)}") from None
    check_listing(out)
    rooms, devices, on, state, toggle, toggled, too_bright = out["results"]
    assert rooms["result"]["rooms"] == [{"room_id": "living", "name": "Living Room"}]
    assert devices["result"]["devices"] == [{"device_id": "light", "name": "Ceiling light",
                                             "device_type": "dimmable_light", "label": "Dimmable Light",
                                             "endpoints": [1]}]
    assert not on["is_error"] and state["result"]["value"] is True
    assert not toggle["is_error"] and toggled["result"]["value"] is False
    assert too_bright["is_error"] and too_bright["result"]["error"]["code"] == "CONSTRAINT_ERROR"
    assert json.loads((the_lab.workdir / "mcp.state.json").read_text())["nodes"]["light"]["node_id"] >= 1


def test_mcp_input_schemas_are_the_argument_models():
    from bridge.tools import TOOL_MODELS
    from matter_twin.mcp_server import mcp_tools
    from twin.tool_arguments import parameters_schema
    listed = {t.name: t for t in mcp_tools()}
    assert list(listed) == list(TOOL_MODELS)
    for name, model in TOOL_MODELS.items():
        assert listed[name].input_schema == parameters_schema(model), name
        assert listed[name].description == " ".join(model.__doc__.split())


def test_mcp_lists_the_tools_its_session_carries():
    from bridge.home_tools import HOME_TOOLS
    from bridge.tools import TOOL_MODELS
    from matter_twin.mcp_server import mcp_tools
    from twin.tool_arguments import parameters_schema
    listed = {t.name: t for t in mcp_tools(HOME_TOOLS)}
    assert list(listed) == [*TOOL_MODELS, *HOME_TOOLS.models]
    assert listed["query_home"].input_schema == parameters_schema(HOME_TOOLS.models["query_home"])
