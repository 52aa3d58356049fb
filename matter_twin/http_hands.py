"""A resident's hand on the twin's devices over HTTP (Home.hand), mounted by `create_app` on a
twin home: press a switch, plug a car into the charger, draw hot water.

- `POST /hand`   body: `{"device": id, "action": "press" | "toggle" | ... | "plug_in" |
                 "unplug" | "draw_water", ...its arguments}` (GET /hand lists the actions).

A bad request is 400 with one line naming what was wrong, and nothing happens.
"""
from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from bridge.backend import INVALID_ARGUMENT, ToolError
from clusters.status import MatterError
from twin.schema import UnknownIdError

__all__ = ["mount_hands"]


def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"ok": False, "error": ToolError(code, message).to_json()}, status_code=status)


def mount_hands(app: FastAPI, home: Any, locked: Callable[..., Any], json_body: Callable[[Request], Any]) -> None:
    @app.get("/hand", tags=["home"], summary="The actions a hand can take on devices, and their arguments")
    async def actions() -> JSONResponse:
        return JSONResponse({"ok": True, "actions": {k: list(v) for k, v in home.HAND_ACTIONS.items()}})

    @app.post("/hand", tags=["home"], summary="A hand on a device: press a switch, plug in a car, draw hot water")
    async def hand(request: Request) -> JSONResponse:
        try:
            body = await json_body(request)
            if not isinstance(body, dict) or not isinstance(body.get("device"), str) \
                    or not isinstance(body.get("action"), str):
                raise ValueError('body must be {"device": id, "action": name, ...arguments}')
            args = {k: v for k, v in body.items() if k not in ("device", "action")}
            result = await run_in_threadpool(locked, functools.partial(home.hand, body["device"], body["action"],
                                                                       **args))
        except (ValueError, TypeError, UnknownIdError) as err:
            return _error(getattr(err, "status", 400), INVALID_ARGUMENT, " ".join(str(err).split()))
        except MatterError as err:
            return _error(409, err.status.name, err.message)
        return JSONResponse({"ok": True, **result})
