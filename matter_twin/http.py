"""HTTP surface: every SimuHome tool as `POST /tools/{name}`, plus the clock and health.

    app = create_app(home)      # or any bridge Backend; then: uvicorn.run(app, host="127.0.0.1")

- `GET  /tools`              the OpenAI function schemas of all tools
- `POST /tools/{name}`       body: the tool's JSON arguments (`{}` or empty for none).
                             200 with `{"ok": true, ...}`; 400 with `{"ok": false, "error":
                             {...}}` for a failed call; 404 for an unknown tool.
- `GET  /clock`              `{"tick", "time"}` (backends with a movable clock)
- `POST /clock/advance`      body `{"seconds": N}`: move virtual time forward (twin only)
- `GET  /history`            the session's tool-call history
- `GET  /codes`              Matter pairing codes (manual and QR) of every device
- `POST /pair/{device}`      `twin run --http` only: open the node's commissioning window
                             (body `{"timeout_s": 180..900}`, optional); answers its codes
- `GET  /docs`               Swagger UI, served from the swagger-ui-bundle package (no CDN)
- `GET  /health`             liveness
- `GET|POST /faults`, `DELETE /faults/{id}`  live fault injection (twin homes; matter_twin/http_faults.py)
- `GET|POST /hand`  a hand on a device: press a switch, plug in a car, draw hot water (matter_twin/http_hands.py)
- `GET|POST /weather`, `POST /presence`  the outdoor weather and where residents are (twin homes;
                             matter_twin/http_home.py)
- `GET  /`                   the live page, with `/live/...` and `POST /clock/pace` (twin homes;
                             see matter_twin/live_web.py)

Calls run one at a time in a worker thread: the twin is single-threaded by design, and a
long clock advance must not stall the event loop.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request
from fastapi.openapi.docs import get_swagger_ui_html
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool
from swagger_ui_bundle import swagger_ui_path

from bridge.backend import INVALID_ARGUMENT, UNKNOWN_TOOL, Backend, ClockControl, ToolError
from bridge.tools import TOOL_NAMES, TOOL_SCHEMAS, Session, call_tool, tool_model
from bridge.twin_backend import TwinBackend
from matter_twin.console import codes_rows
from matter_twin.http_edge import BadBody, one_at_a_time, read_json
from matter_twin.http_faults import mount_faults
from matter_twin.http_hands import mount_hands
from matter_twin.http_home import mount_home_events
from matter_twin.live_web import mount_live
from twin.clock import Pace
from twin.home import Home
from twin.tool_arguments import parameters_schema

_RESULT_SCHEMA = {"type": "object", "properties": {
    "ok": {"type": "boolean"},
    "error": {"type": "object", "properties": {
        "code": {"type": "string"}, "message": {"type": "string"}, "accepted": {"type": "array"}}}},
    "required": ["ok"], "additionalProperties": True}


def _error(status: int, code: str, message: str, accepted: list | None = None) -> JSONResponse:
    return JSONResponse({"ok": False, "error": ToolError(code, message, accepted).to_json()},
                        status_code=status)


#: The body reader every route uses (matter_twin/http_edge.py: size limit, read timeout, parsed
#: off the loop, depth/size checked); it raises BadBody, a ValueError carrying the HTTP status.
_json_body = read_json


def _body_error(err: ValueError) -> JSONResponse:
    if isinstance(err, BadBody):
        return _error(err.status, INVALID_ARGUMENT, str(err))
    return _error(400, INVALID_ARGUMENT, f"request body is not JSON: {err}")


#: Tools that change device state, which `twin run` saves for the next start.
CHANGING_TOOLS = frozenset({"execute_command", "write_attribute"})


def refuse_unsaved(tool: str, can_save: Callable[[], bool] | None) -> dict[str, Any] | None:
    """The error answer for a state-changing tool while the nodes' state cannot be saved (a full
    disk: twin/node/device_state.py), so no change is acknowledged that a restart would lose."""
    if tool not in CHANGING_TOOLS or can_save is None or can_save():
        return None
    return {"ok": False, "error": ToolError(
        "RESOURCE_EXHAUSTED", "the device state cannot be saved now (the disk is full or not writable; "
        "see the log): changes are refused until it can").to_json()}


def _offline_docs(app: FastAPI) -> None:
    """/docs with Swagger UI's own files (the swagger-ui-bundle package), not a CDN: it works
    offline and on air-gapped lab machines."""
    app.mount("/docs-assets", StaticFiles(directory=swagger_ui_path), name="docs-assets")

    @app.get("/docs", include_in_schema=False)
    async def docs() -> HTMLResponse:
        return get_swagger_ui_html(openapi_url=app.openapi_url or "/openapi.json", title=f"{app.title} — docs",
                                   swagger_js_url="/docs-assets/swagger-ui-bundle.js",
                                   swagger_css_url="/docs-assets/swagger-ui.css",
                                   swagger_favicon_url="/docs-assets/favicon-32x32.png")


def create_app(serving: Home | Backend, session: Session | None = None, pace: Pace | None = None,
               runs_dir: Path | None = None, home_file: Path | None = None) -> FastAPI:
    """A FastAPI app serving a twin `Home` (tools in process) or any bridge `Backend` (a Matter
    or mixed home). `session` answers ask_user and records history. A twin home also gets the
    live page (`matter_twin/live_web.py`), pairing codes, faults, hands and home events; `pace` is
    the running clock's pace (None: the clock moves only by POST /clock/advance), `runs_dir` where
    benchmark runs are, `home_file` the file edit mode starts from."""
    home = serving if isinstance(serving, Home) else None
    backend: Backend = TwinBackend(home) if home is not None else serving
    session = session if session is not None else Session()
    lock = threading.Lock()
    app = FastAPI(title="matter-twin tools",
                  description="The SimuHome agent tool set over a matter-twin backend. "
                              "Each tool is POST /tools/<name> with its arguments as the JSON body.",
                  version="0.1.0", docs_url=None, redoc_url=None)
    _offline_docs(app)
    app.state.backend = backend
    app.state.session = session
    app.state.lock = lock  # held around every backend call; a clock-driving thread takes it too

    calls = one_at_a_time()
    # The core tools, and those the session carries (a suite's, or the home tools of
    # `twin serve --home-tools`): routed, listed and answered alike.
    extra = session.tools
    names = TOOL_NAMES + tuple(sorted(extra.models))
    schemas = TOOL_SCHEMAS + extra.schemas

    def locked(fn: Callable[..., Any], *args: Any) -> Any:
        with lock:
            return fn(*args)

    async def run_tool(name: str, request: Request) -> JSONResponse:
        try:
            args = await _json_body(request)
        except ValueError as err:
            return _body_error(err)
        unsaved = refuse_unsaved(name, getattr(app.state, "can_save", None))
        if unsaved is not None:
            return JSONResponse(unsaved, status_code=503)
        async with calls:   # one worker thread at a time competes with the nodes for the lock
            result = await run_in_threadpool(locked, call_tool, backend, name, args, session)
        if result["ok"]:
            return JSONResponse(result)
        return JSONResponse(result, status_code=404 if result["error"]["code"] == UNKNOWN_TOOL else 400)

    @app.get("/health", tags=["service"])
    async def health() -> dict[str, Any]:
        return {"status": "ok", "tools": len(schemas)}

    @app.get("/tools", tags=["tools"], summary="The tool schemas (OpenAI function-calling format)")
    async def list_tools() -> list[dict[str, Any]]:
        return schemas

    # One route per tool, so the OpenAPI document carries each tool's own request body,
    # taken from the tool's argument model. The body is documented, not validated by
    # FastAPI: call_tool validates it, so a bad body gets the tools' structured error.
    for name in names:

        def make(tool: str) -> Callable[[Request], Any]:
            async def endpoint(request: Request) -> JSONResponse:
                return await run_tool(tool, request)
            return endpoint

        app.add_api_route(
            f"/tools/{name}", make(name), methods=["POST"], tags=["tools"], summary=name,
            description=" ".join((tool_model(name, extra).__doc__ or "").split()), name=f"tool_{name}",
            responses={200: {"description": "The tool's result",
                             "content": {"application/json": {"schema": _RESULT_SCHEMA}}},
                       400: {"description": "The call failed; `error` says why and what is accepted"}},
            openapi_extra={"requestBody": {"required": False, "content": {
                "application/json": {"schema": parameters_schema(tool_model(name, extra))}}}})

    @app.post("/tools/{name}", tags=["tools"], include_in_schema=False)
    async def unknown_tool(name: str) -> JSONResponse:
        return _error(404, UNKNOWN_TOOL, f"there is no tool {name!r}", list(names))

    @app.get("/history", tags=["service"], summary="Tool calls made through this server, in order")
    async def history() -> list[dict[str, Any]]:
        return session.history

    @app.get("/codes", tags=["matter"], summary="Matter pairing codes (manual code, QR payload) per device")
    async def codes() -> JSONResponse:
        # `twin run --http` sets app.state.codes (with each node's port); otherwise derive them.
        provider = getattr(app.state, "codes", None)
        if provider is None and home is None:
            return _error(501, "UNSUPPORTED", "this backend has no twin home, so no pairing codes")
        if provider is None:
            provider = lambda: codes_rows(home)  # noqa: E731
        return JSONResponse({"ok": True, "codes": await run_in_threadpool(locked, provider)})

    @app.post("/pair/{device}", tags=["matter"], summary="Open a node's commissioning window (`twin pair`)")
    async def pair(device: str, request: Request) -> JSONResponse:
        opener = getattr(app.state, "pair", None)   # set by `twin run --http` with Matter nodes
        if opener is None:
            return _error(501, "UNSUPPORTED", "no Matter nodes here: run `twin run --http PORT` (nodes on)")
        try:
            body = await _json_body(request)
        except ValueError as err:
            return _body_error(err)
        timeout = body.get("timeout_s") if isinstance(body, dict) else None
        if not isinstance(body, dict) or (timeout is not None and (isinstance(timeout, bool)
                                                                   or not isinstance(timeout, int))):
            return _error(400, INVALID_ARGUMENT, "body must be {} or {\"timeout_s\": 180..900}", ["timeout_s"])
        try:
            # NodeManager.open_window takes the node lock itself.
            answer = await run_in_threadpool(opener, device, timeout)
        except ValueError as err:
            return _error(404 if str(err).startswith("no node") else 400, INVALID_ARGUMENT, str(err))
        return JSONResponse({"ok": True, "pairing": answer})

    @app.get("/clock", tags=["clock"], summary="Current tick (0.1 s) and virtual time")
    async def get_clock() -> JSONResponse:
        if not isinstance(backend, ClockControl):
            return JSONResponse({"ok": True, "time": await run_in_threadpool(locked, backend.current_time)})
        return JSONResponse({"ok": True, **await run_in_threadpool(locked, backend.clock)})

    @app.post("/clock/advance", tags=["clock"], summary="Advance virtual time by N seconds",
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {
                  "schema": {"type": "object", "properties": {"seconds": {"type": "number", "minimum": 0}},
                             "required": ["seconds"]}}}}})
    async def advance_clock(request: Request) -> JSONResponse:
        if not isinstance(backend, ClockControl):
            return _error(501, "UNSUPPORTED", "this backend's clock cannot be advanced (real time)")
        try:
            body = await _json_body(request)
        except ValueError as err:
            return _body_error(err)
        if not isinstance(body, dict) or "seconds" not in body:
            return _error(400, INVALID_ARGUMENT, "body must be {\"seconds\": N}", ["seconds"])
        try:
            return JSONResponse({"ok": True, **await run_in_threadpool(locked, backend.advance, body["seconds"])})
        except ToolError as err:
            return _error(400, err.code, err.message, err.accepted)

    if home is not None:
        mount_live(app, home, lock, pace, runs_dir, home_file)
        mount_faults(app, home, locked, _json_body)
        mount_hands(app, home, locked, _json_body)
        mount_home_events(app, home, locked, _json_body)
    return app
