"""The home's outside world over HTTP (twin/weather.py, twin/sensors.py), mounted by `create_app`
on a twin home: what scenarios and people do that is not a Matter command.

- `GET  /weather`               the outdoor weather now (404 without weather)
- `POST /weather`               body `{"temperature": 35, "raining": true, "humidity": null, ...}`:
                                hold quantities from now on (null releases one)
- `POST /presence`              body `{"person": "ann", "room": "kitchen"}` (room null: away)

Scenario events on devices (a door opened, a PIN at the keypad, a leak, smoke) are hand actions:
`POST /hand` (matter_twin/http_hands.py, `Home.hand`).

A bad request is 400 with one line saying what was wrong, and nothing changes.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, ToolError
from twin.schema import UnknownIdError

__all__ = ["mount_home_events"]


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error": ToolError(code, message).to_json()}, status_code=status)


def mount_home_events(app: FastAPI, home: Any, locked: Callable[..., Any],
                      json_body: Callable[[Request], Any]) -> None:

    async def call(fn: Callable[..., Any], *args: Any) -> JSONResponse:
        try:
            result = await run_in_threadpool(locked, fn, *args)
        except UnknownIdError as err:
            return _error(404, NOT_FOUND, str(err))
        except ValueError as err:
            return _error(400, INVALID_ARGUMENT, " ".join(str(err).split()))
        return JSONResponse({"ok": True, **(result or {})})

    async def body_of(request: Request, keys: set[str]) -> dict[str, Any] | JSONResponse:
        try:
            body = await json_body(request)
        except ValueError as err:
            return _error(400, INVALID_ARGUMENT, f"request body is not JSON: {err}")
        if not isinstance(body, dict) or not set(body) <= keys:
            return _error(400, INVALID_ARGUMENT, f"body must be an object with {', '.join(sorted(keys))}")
        return body

    @app.get("/weather", tags=["home"], summary="The outdoor weather now")
    async def weather() -> JSONResponse:
        if home.weather is None:
            return _error(404, NOT_FOUND, "this home has no weather (home file `weather:`)")
        return await call(lambda: {"weather": home.weather.at(home.clock.now)})

    @app.post("/weather", tags=["home"], summary="Hold weather quantities from now on (null releases)")
    async def pin(request: Request) -> JSONResponse:
        body = await body_of(request, {"temperature", "humidity", "raining", "daylight", "pressure"})
        if isinstance(body, JSONResponse):
            return body
        return await call(lambda: {"weather": home.pin_weather(body)})

    @app.post("/presence", tags=["home"], summary="Where a resident is now (room null: away)")
    async def presence(request: Request) -> JSONResponse:
        body = await body_of(request, {"person", "room"})
        if isinstance(body, JSONResponse):
            return body
        if "person" not in body:
            return _error(400, INVALID_ARGUMENT, "body must name the person: {\"person\": ..., \"room\": ...}")
        return await call(lambda: home.set_presence(body["person"], body.get("room")) or
                          {"presence": dict(sorted(home.presence.items()))})
