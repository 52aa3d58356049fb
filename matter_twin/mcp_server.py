"""An MCP server (the `mcp` package) exposing the SimuHome tools over any backend.

    server = create_server(backend)          # mcp.server.lowlevel.Server
    run_stdio(backend)                       # MCP over stdin/stdout
    run_http(backend, port=8765)             # streamable HTTP at http://127.0.0.1:8765/mcp

Every tool is listed with its JSON schema, derived from the tool's argument model like the
HTTP surface's and the agents' (`TOOL_SCHEMAS`). A call returns the tool's JSON result
twice: as text content (for clients that read text) and as structured content; a failed
tool call sets `isError` and its result carries the error code, message and what is
accepted, so an agent can correct itself.
Calls run one at a time in a worker thread: the twin is single-threaded, and a Matter call
may wait on the network.
"""
from __future__ import annotations

import json
import threading
from typing import Any

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from bridge.backend import Backend
from bridge.tools import NO_TOOLS, TOOL_MODELS, Session, ToolSet, call_tool, tool_model
from twin.tool_arguments import parameters_schema

SERVER_NAME = "matter-twin"


def mcp_tools(extra: ToolSet = NO_TOOLS) -> list[types.Tool]:
    """Every tool (the core ones, then `extra`: a session's own), its input schema taken from its
    argument model (as the OpenAI schemas are)."""
    return [types.Tool(name=name, description=" ".join((tool_model(name, extra).__doc__ or "").split()),
                       input_schema=parameters_schema(tool_model(name, extra)))
            for name in (*TOOL_MODELS, *extra.models)]


def create_server(backend: Backend, session: Session | None = None) -> Server:
    """An MCP server whose tools call `backend`; `session` records the history."""
    session = session if session is not None else Session()
    lock = threading.Lock()

    def run(name: str, args: dict[str, Any]) -> dict[str, Any]:
        with lock:
            return call_tool(backend, name, args, session)

    async def on_list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=mcp_tools(session.tools))

    async def on_call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        result = await anyio.to_thread.run_sync(run, params.name, params.arguments or {})
        return types.CallToolResult(
            content=[types.TextContent(text=json.dumps(result, ensure_ascii=False))],
            structured_content=result, is_error=not result["ok"])

    server = Server(SERVER_NAME, version="0.1.0",
                    instructions="SimuHome smart-home tools over a matter-twin backend (the twin "
                                 "in process, Matter devices, or both). Start with get_rooms.",
                    on_list_tools=on_list_tools, on_call_tool=on_call_tool)
    server.session = session  # type: ignore[attr-defined]  (for callers that want the history)
    return server


def run_stdio(backend: Backend, session: Session | None = None) -> None:
    """Serve MCP on stdin/stdout until the client closes them."""
    from mcp.server.stdio import stdio_server
    server = create_server(backend, session)

    async def main() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
    anyio.run(main)


def http_app(backend: Backend, host: str = "127.0.0.1", session: Session | None = None) -> Any:
    """The streamable-HTTP ASGI app (endpoint /mcp); DNS-rebinding protection for loopback."""
    return create_server(backend, session).streamable_http_app(host=host)


def run_http(backend: Backend, port: int, host: str = "127.0.0.1", session: Session | None = None) -> None:
    """Serve MCP over streamable HTTP at http://HOST:PORT/mcp (loopback by default)."""
    from matter_twin.http_edge import run_server
    run_server(http_app(backend, host, session), host, port)


__all__ = ["create_server", "http_app", "mcp_tools", "run_http", "run_stdio"]
