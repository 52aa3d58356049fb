"""CLI pieces for the bridge: `twin bridge init`, and the `--backend CONFIG` variants of
`twin tool`, `twin serve` and `twin mcp` (wired into matter_twin/cli.py).

Bad input (a config that does not validate, a server that cannot be reached) is a CliError:
one line, exit code 2.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import typer
import yaml

from bridge.backend import ToolError
from bridge.config import load_config, parse_config
from bridge.matter_connection import MatterConnection
from bridge.mixed import load_backend
from bridge.tools import Session, call_tool
from matter_twin.console import CliError
from matter_twin.extras import require
from matter_twin.http import create_app
from matter_twin.http_edge import run_server
from matter_twin.mcp_server import run_http, run_stdio
from twin.schema import UserFileError

bridge_app = typer.Typer(name="bridge", no_args_is_help=True, rich_markup_mode="markdown",
                         help="Bridge configs: homes made of twin devices and Matter nodes.\n\n"
                              "Examples:\n\n"
                              "    twin bridge init --server ws://127.0.0.1:5580/ws -o lab.yaml\n\n"
                              "    twin tool --backend lab.yaml get_rooms '{}'\n\n"
                              "    twin serve --backend lab.yaml --port 8080")


def open_backend(config_path: Path) -> Any:
    """The backend a bridge config describes; config problems become one-line CliErrors."""
    if not config_path.exists():
        raise CliError(f"{config_path}: no such file")
    try:
        config = load_config(config_path).config
        # a sensor's node lives on a server unless it names a configured device
        if any(d.matter is not None for d in config.devices) or \
                any(s.device is None for r in config.rooms for s in r.sensors.values()):
            require("matter-server", f"{config_path}: its Matter nodes")
        return load_backend(config_path)
    except UserFileError as err:
        raise CliError(str(err)) from None


def close_backend(backend: Any) -> None:
    close = getattr(backend, "close", None)
    if close is not None:
        close()


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "device"


def config_from_server(url: str, timeout: float = 10.0) -> tuple[dict[str, Any], list[str]]:
    """A starting config from the nodes a python-matter-server knows: every node in one room
    "unassigned". Returns the config data and one comment line per node."""
    conn = MatterConnection(url, timeout)
    try:
        nodes = conn.nodes()
    except ToolError as err:
        raise CliError(f"{url}: {err.message}") from None
    finally:
        conn.close()
    devices, notes, used = [], [], set()
    for node_id in sorted(nodes):
        node = nodes[node_id]
        info = node.device_info if node.available or node.endpoints else None
        label = (getattr(info, "nodeLabel", None) or getattr(info, "productName", None)
                 or f"node {node_id}") if info is not None else f"node {node_id}"
        apps = {ep: ep_obj for ep, ep_obj in node.endpoints.items() if ep != 0}
        kinds = {ep: sorted(dt.__name__ for dt in ep_obj.device_types) for ep, ep_obj in apps.items()}
        notes.append(f"node {node_id} ({label}): " + ("; ".join(
            f"endpoint {ep} {', '.join(k) or '?'}" for ep, k in sorted(kinds.items())) or "no endpoints known yet"))
        device_id = f"{_slug(label)}_{node_id}"
        while device_id in used:
            device_id += "_"
        used.add(device_id)
        matter: dict[str, Any] = {"node_id": node_id}
        if len(apps) == 1:
            matter["endpoint"] = next(iter(apps))
        devices.append({"id": device_id, "room": "unassigned", "name": label, "matter": matter})
    data = {"name": "bridge", "server": url,
            "rooms": [{"id": "unassigned", "name": "Unassigned"}], "devices": devices}
    return data, notes


@bridge_app.command("init")
def init(server: str = typer.Option("ws://127.0.0.1:5580/ws", "--server",
                                    help="python-matter-server WebSocket URL."),
         output: Path | None = typer.Option(None, "-o", "--output",
                                               help="Write the config here (default: stdout)."),
         force: bool = typer.Option(False, "--force", help="Overwrite an existing file.")) -> None:
    """Write a starting bridge config from the nodes a python-matter-server already has.

    Every node goes into one room, "unassigned", with its node id (and its endpoint when it
    has one application endpoint). A comment lists each node's endpoints and device types.
    Then move devices into rooms, give them names, add sensors and twin devices.

    Examples:

        twin bridge init --server ws://127.0.0.1:5580/ws -o bridge.yaml

        twin tool --backend bridge.yaml get_rooms '{}'
    """
    require("matter-server", "twin bridge init")
    if output is not None and output.exists() and not force:
        raise CliError(f"{output} exists; use --force to overwrite it")
    data, notes = config_from_server(server)
    try:
        parse_config(data, "(generated)")
    except UserFileError as err:  # a node label that makes an invalid id, say
        raise CliError(str(err)) from None
    text = ("# Bridge config written by `twin bridge init` from " + server + "\n"
            + "".join(f"#   {n}\n" for n in notes)
            + yaml.safe_dump(data, sort_keys=False, allow_unicode=True))
    if output is None:
        sys.stdout.write(text)
        return
    if output.exists() and not force:
        raise CliError(f"{output} exists; use --force to overwrite it")
    try:
        output.write_text(text)
    except OSError as err:
        raise CliError(f"{output}: {err.strerror or err}") from None
    print(f"wrote {output}: {len(data['devices'])} device(s) from {server}", file=sys.stderr)


def run_tool(config_path: Path, name: str, args: dict[str, Any]) -> dict[str, Any]:
    """`twin tool --backend CONFIG NAME ARGS`: one tool call against the config's backend."""
    backend = open_backend(config_path)
    try:
        return call_tool(backend, name, args, Session())
    finally:
        close_backend(backend)


def serve(config_path: Path, host: str, port: int) -> None:
    """`twin serve --backend CONFIG`: the HTTP tool API over the config's backend."""
    backend = open_backend(config_path)
    try:
        run_server(create_app(backend), host, port, log_level="info")
    finally:
        close_backend(backend)


def mcp(backend: Any, http_port: int | None, host: str = "127.0.0.1", session: Any = None) -> None:
    """`twin mcp`: the MCP server over `backend`, on stdio or streamable HTTP."""
    try:
        if http_port is None:
            run_stdio(backend, session)
        else:
            print(f"MCP over streamable HTTP at http://{host}:{http_port}/mcp", file=sys.stderr)
            run_http(backend, http_port, host, session)
    finally:
        close_backend(backend)


__all__ = ["bridge_app", "config_from_server", "mcp", "open_backend", "run_tool", "serve"]
