"""The live page of a lab session (`twin lab run|shadow --http PORT`).

The same page as `twin run --http` (matter_twin/live_web.py), on the session's twin home and
under its lock, plus the session: its bound and added real devices, each real device's
reported values beside its twin's, divergences as they are flagged, and the call log. The
session's observers put its news on the home's change stream (`ChangeStream.publish`:
"lab.call", "lab.real", "lab.event"), so the page hears them through its one event stream
with the twin's own changes; nothing is polled and nothing is kept here.

- `POST /tools/{name}`   through the session (`LabSession.call`, source "page"): real devices
                         are reached, the call is recorded, the same rules and errors apply
- `GET  /live/lab`       the session's view (devices, real values, divergences)
- `GET  /`, `/live/...`  the page (see matter_twin/live_web.py)
"""
from __future__ import annotations

from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from bridge.backend import INVALID_ARGUMENT, UNKNOWN_TOOL, ToolError
from bridge.tools import TOOL_NAMES
from hardware.session import LabSession
from matter_twin.http import _json_body
from matter_twin.http_edge import BadBody, server_config
from matter_twin.live_web import mount_live

__all__ = ["PageServer", "lab_page"]


def lab_page(session: LabSession) -> FastAPI:
    """The app serving an open session's page; its news reach every open page."""
    twin = session.twin
    assert twin is not None, "open the session first"
    app = FastAPI(title="matter-twin lab session", docs_url=None, redoc_url=None)
    mount_live(app, twin.home, twin.lock, None, lab_view=session.live_view)
    stream = app.state.change_stream

    def publish(topic: str, value: Any) -> None:
        with twin.lock:
            stream.publish(topic, value)
    session.observers.append(publish)

    @app.post("/tools/{name}", tags=["tools"], summary="A tool call through the lab session (recorded)")
    async def tool(name: str, request: Request) -> JSONResponse:
        if name not in TOOL_NAMES:
            error = ToolError(UNKNOWN_TOOL, f"there is no tool {name!r}", list(TOOL_NAMES))
            return JSONResponse({"ok": False, "error": error.to_json()}, status_code=404)
        try:
            args = await _json_body(request)
        except ValueError as err:   # not JSON, or nested too deeply
            message = str(err) if isinstance(err, BadBody) else f"request body is not JSON: {err}"
            error = ToolError(INVALID_ARGUMENT, message)
            return JSONResponse({"ok": False, "error": error.to_json()}, status_code=getattr(err, "status", 400))
        result = await run_in_threadpool(session.call, name, args, "page")
        return JSONResponse(result, status_code=200 if result.get("ok") else 400)

    return app


class PageServer:
    """The page served on a thread (uvicorn) while the session runs."""

    def __init__(self, session: LabSession, port: int, host: str = "127.0.0.1"):
        import threading

        import uvicorn
        self.app = lab_page(session)
        self.url = f"http://{host}:{port}/"
        self.server = uvicorn.Server(server_config(self.app, host, port))
        self.thread = threading.Thread(target=self.server.run, daemon=True, name="lab-page")

    def start(self, timeout: float = 10.0) -> None:
        import time
        self.thread.start()
        deadline = time.monotonic() + timeout
        while not self.server.started:
            if not self.thread.is_alive() or time.monotonic() > deadline:
                raise OSError(f"the page could not listen on {self.url} (port taken?)")
            time.sleep(0.05)

    def stop(self) -> None:
        self.app.state.live_closing = True   # open pages' streams end
        self.server.should_exit = True
        self.thread.join(10)
