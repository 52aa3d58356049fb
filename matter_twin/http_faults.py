"""Live fault injection over HTTP (twin/faults.py), mounted by `create_app` on a twin home.

- `GET    /faults`        every fault (schedule, level now), and with Matter nodes each node's
                          link counters (datagrams, drops, delays, MRP retransmissions)
- `POST   /faults`        body: one fault as in a faults file (`{"device", "kind", "at",
                          "duration", ...}`; `at` is seconds from now). Answers its id.
- `DELETE /faults/{id}`   end a fault now (recorded as FaultEnded)

A bad fault is 400 with one line naming the field, and nothing is scheduled.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, ToolError
from twin.faults import parse_fault

__all__ = ["mount_faults"]


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error": ToolError(code, message).to_json()}, status_code=status)


def mount_faults(app: FastAPI, home: Any, locked: Callable[..., Any],
                 json_body: Callable[[Request], Any]) -> None:
    engine = home.faults

    @app.get("/faults", tags=["faults"], summary="The home's faults, and each node's link counters")
    async def faults() -> JSONResponse:
        links = getattr(app.state, "links", None)   # `twin run --http` with nodes: NodeManager.link_counts
        body: dict[str, Any] = {"ok": True, "faults": await run_in_threadpool(locked, engine.status)}
        if links is not None:
            body["links"] = links()
        return JSONResponse(body)

    @app.post("/faults", tags=["faults"], summary="Inject a fault now (or `at` seconds from now)")
    async def inject(request: Request) -> JSONResponse:
        try:
            body = await json_body(request)
            spec = parse_fault(body)
            fault_id = await run_in_threadpool(locked, engine.add, spec)
        except ValueError as err:   # bad JSON, a bad fault, an unknown device or a taken id
            return _error(getattr(err, "status", 400), INVALID_ARGUMENT, " ".join(str(err).split()))
        return JSONResponse({"ok": True, "id": fault_id})

    @app.delete("/faults/{fault_id}", tags=["faults"], summary="End a fault now")
    async def clear(fault_id: str) -> JSONResponse:
        try:
            await run_in_threadpool(locked, engine.clear, fault_id)
        except KeyError as err:
            return _error(404, NOT_FOUND, str(err.args[0]))
        return JSONResponse({"ok": True, "id": fault_id})
