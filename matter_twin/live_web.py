"""The live web page: the home, its devices, the clock, pairing, workflows and benchmark runs.

Mounted on the HTTP app (`matter_twin/http.py`) when the backend has a twin home. The page is
plain files under `matter_twin/web/` (HTML, one CSS file, JS modules; no build step, no CDN),
fed by one Server-Sent-Events stream per open page, a subscriber of the home's change stream
(`twin/changes.py`), so nothing here polls devices or keeps state. Everything the page changes
goes through the existing routes: `POST /tools/{name}` (the tools' rules and errors),
`POST /clock/advance`, `POST /pair/{device}`.

- `GET  /`                      the page
- `GET  /live/home`             rooms, devices (every attribute), the clock and its pace
- `GET  /live/stream?sample=S`  SSE: `home` first, then `changes` batches (derived values and
                                rooms sampled every S seconds, 0.1..60, default 1)
- `POST /clock/pace`            `{"speed": N, "paused": bool}` (either): the runner's pace
- `GET  /live/qr/{device}.png`  the node's QR code (its `MT:` payload), scannable
- `GET  /live/runs`, `GET /live/runs/{name}`   benchmark runs from `--runs DIR` result files
- `GET  /live/lab`              a lab session's view (`twin lab run --http`): bound devices, real
                                values, divergences; news as `message` changes (lab.call, lab.real,
                                lab.event)
- `GET  /live/homefile`, `POST /live/homefile` edit mode: the home as a home file; validate, and
                                save under a file name next to --home (or in the working directory)
"""
from __future__ import annotations

import asyncio
import io
import json
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import segno
import yaml
from fastapi import FastAPI, Request
from fastapi.responses import FileResponse, JSONResponse, Response, StreamingResponse
from fastapi.staticfiles import StaticFiles
from starlette.concurrency import run_in_threadpool

from bridge.backend import INVALID_ARGUMENT, NOT_FOUND, ToolError
from clusters.devices import DEVICE_TYPES
from matter_twin.console import codes_rows
from matter_twin.http_edge import BadBody, read_json
from scenarios.runner import load_results
from twin.changes import MIN_SAMPLE_S, ROOM_UNITS, ChangeStream, room_value
from twin.clock import Pace
from twin.home import Home
from twin.schema import UserFileError, parse_data, to_yaml

WEB_DIR = Path(__file__).parent / "web"
#: How often an open page's stream takes its batch (wall seconds): changes show within this.
STREAM_PERIOD_S = 0.1
MAX_SAMPLE_S = 60.0


def _error(status: int, code: str, message: str, accepted: list | None = None) -> JSONResponse:
    return JSONResponse({"ok": False, "error": ToolError(code, message, accepted).to_json()}, status_code=status)


#: Clusters whose OperationalState the page names (a robot vacuum's docked and charging states too).
OPSTATE_CLUSTERS = ("OperationalState", "RvcOperationalState", "OvenCavityOperationalState")


def enum_names() -> dict[str, dict[int, str]]:
    """Names of the enum values the page shows, from the data model (chip.clusters.Objects):
    cluster -> value -> "Seeking charger"."""
    from chip.clusters import Objects as Clusters

    def spoken(name: str) -> str:   # kSeekingCharger -> Seeking charger
        words = "".join(f" {c.lower()}" if c.isupper() else c for c in name[1:]).strip()
        return words[:1].upper() + words[1:]
    return {cluster: {int(m): spoken(m.name) for m in getattr(Clusters, cluster).Enums.OperationalStateEnum
                      if m.name != "kUnknownEnumValue"} for cluster in OPSTATE_CLUSTERS}


def home_view(home: Any, stream: ChangeStream, pace: Pace | None) -> dict[str, Any]:
    """Everything the page starts from (read under the home's lock)."""
    devices: dict[str, dict[str, Any]] = {}
    for device_id, device in home.devices.items():
        info = home.device_info(device_id)
        devices[device_id] = {"id": device_id, "type": info["type"], "label": info["label"], "room": info["room"],
                              "endpoints": {str(ep.id): sorted(s.name for s in ep.servers.values() if s.in_snapshot)
                                            for ep in device.endpoints.values()},
                              "attributes": {}}
    for change in stream.attributes():
        _, device_id, endpoint, cluster, name = change.key
        devices[device_id]["attributes"][f"{endpoint}/{cluster}/{name}"] = change.value
    rooms = [{"id": room_id, "name": room.name, "devices": [d.id for d in home.devices_in(room_id)],
              "values": {q: room_value(room, q) for q in ROOM_UNITS}} for room_id, room in home.rooms.items()]
    return {"name": home.name, "tick": home.clock.tick, "time": home.clock.format(), "units": ROOM_UNITS,
            "pace": pace.to_json() if pace is not None else None, "rooms": rooms, "devices": devices,
            "enums": enum_names()}


def mount_live(app: FastAPI, home: Any, lock: Any, pace: Pace | None, runs_dir: Path | None = None,
               home_file: Path | None = None, lab_view: Callable[[], dict[str, Any]] | None = None) -> None:
    """Add the page and its routes to `app`; `lock` is the app's home lock. `lab_view` (a lab
    session's page, matter_twin/live_lab.py): the session's start view, sent with the home
    (`lab`) and at `GET /live/lab`; its news come as `message` changes of the stream."""
    stream = ChangeStream(home)
    save_dir = home_file.parent if home_file is not None else Path(".")   # where edit mode saves
    app.state.change_stream = stream
    app.state.pace = pace
    app.state.live_closing = False
    app.mount("/live/static", StaticFiles(directory=WEB_DIR), name="live-static")

    def locked(fn: Callable[..., Any], *args: Any) -> Any:
        with lock:
            return fn(*args)

    @app.get("/", include_in_schema=False)
    async def page() -> FileResponse:
        return FileResponse(WEB_DIR / "index.html")

    @app.get("/live/home", tags=["live"], summary="Rooms, devices with every attribute, the clock")
    async def live_home() -> JSONResponse:
        return JSONResponse(await run_in_threadpool(locked, home_view, home, stream, pace))

    @app.get("/live/stream", tags=["live"], summary="Server-Sent Events: the home, then its changes")
    async def live_stream(request: Request, sample: float = 1.0) -> Response:
        if not MIN_SAMPLE_S <= sample <= MAX_SAMPLE_S:
            return _error(400, INVALID_ARGUMENT, f"sample={sample} s is outside {MIN_SAMPLE_S}..{MAX_SAMPLE_S}")
        loop = asyncio.get_running_loop()

        def start() -> tuple[Any, dict[str, Any]]:
            sub = stream.subscribe(sample)
            sub.take(loop.time())   # the first samples are in the view already
            view = home_view(home, stream, pace)
            if lab_view is not None:
                view["lab"] = lab_view()
            return sub, view

        sub, view = await run_in_threadpool(locked, start)

        async def events() -> AsyncIterator[str]:
            try:
                yield f"event: home\ndata: {json.dumps(view)}\n\n"
                pace_seen = pace.version if pace is not None else 0
                idle = 0.0
                while not app.state.live_closing and not await request.is_disconnected():
                    await asyncio.sleep(STREAM_PERIOD_S)
                    paced = None
                    with lock:
                        batch = sub.take(loop.time())
                        if pace is not None and pace.version != pace_seen:
                            pace_seen = pace.version
                            paced = {**pace.to_json(), "tick": home.clock.tick, "time": home.clock.format()}
                    if batch is not None:
                        idle = 0.0
                        payload = {"tick": batch.tick, "time": batch.time,
                                   "changes": [c.to_json() for c in batch.changes]}
                        yield f"event: changes\ndata: {json.dumps(payload)}\n\n"
                    if paced is not None:   # with the time it took effect
                        yield f"event: pace\ndata: {json.dumps(paced)}\n\n"
                    elif batch is None:
                        idle += STREAM_PERIOD_S
                        if idle >= 15:   # a comment keeps proxies from closing an idle stream
                            idle = 0.0
                            yield ": idle\n\n"
            finally:
                with lock:
                    sub.close()

        return StreamingResponse(events(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.post("/clock/pace", tags=["clock"], summary="Pause, resume or change the speed of the running clock",
              openapi_extra={"requestBody": {"required": True, "content": {"application/json": {"schema": {
                  "type": "object", "properties": {"speed": {"type": "number", "exclusiveMinimum": 0},
                                                   "paused": {"type": "boolean"}}}}}}})
    async def clock_pace(request: Request) -> JSONResponse:
        if pace is None:
            return _error(501, "UNSUPPORTED", "this server does not run the clock (start it with `twin run` "
                          "or `twin serve --speed N`)")
        try:
            body = await read_json(request)
        except BadBody as err:
            return _error(err.status, INVALID_ARGUMENT, str(err))
        if not isinstance(body, dict) or not body or set(body) - {"speed", "paused"}:
            return _error(400, INVALID_ARGUMENT, "body must be {\"speed\": N} and/or {\"paused\": true|false}",
                          ["speed", "paused"])
        try:
            with lock:
                pace.set(body.get("speed"), body.get("paused"))
        except ValueError as err:
            return _error(400, INVALID_ARGUMENT, str(err), ["speed", "paused"])
        return JSONResponse({"ok": True, **pace.to_json()})

    @app.get("/live/qr/{device}.png", tags=["matter"], summary="A node's QR code as a PNG image")
    async def qr_image(device: str) -> Response:
        provider = getattr(app.state, "codes", None)
        rows = await run_in_threadpool(locked, provider) if provider is not None else \
            await run_in_threadpool(locked, _codes, home)
        for row in rows:
            if row["device"] == device:
                image = io.BytesIO()
                segno.make(row["qr_code"], error="m", micro=False).save(image, kind="png", scale=6, border=2)
                return Response(image.getvalue(), media_type="image/png")
        return _error(404, NOT_FOUND, f"there is no node {device!r}", [r["device"] for r in rows])

    if lab_view is not None:
        @app.get("/live/lab", tags=["live"], summary="The lab session: devices, real values, divergences")
        async def live_lab() -> JSONResponse:
            return JSONResponse({"ok": True, **await run_in_threadpool(locked, lab_view)})

    @app.get("/live/runs", tags=["live"], summary="Benchmark runs found under --runs")
    async def runs() -> JSONResponse:
        return JSONResponse({"ok": True, "dir": str(runs_dir) if runs_dir else None,
                             "runs": await run_in_threadpool(list_runs, runs_dir)})

    @app.get("/live/runs/{name}", tags=["live"], summary="One benchmark run: episodes, traces, scores")
    async def run_detail(name: str) -> JSONResponse:
        names = await run_in_threadpool(list_runs, runs_dir)
        if name not in [r["name"] for r in names]:
            return _error(404, NOT_FOUND, f"there is no run {name!r}", [r["name"] for r in names])
        assert runs_dir is not None
        return JSONResponse({"ok": True, "name": name, "results": await run_in_threadpool(load_results,
                                                                                          runs_dir / name)})

    @app.get("/live/homefile", tags=["live"], summary="The home as a home file (edit mode's start)")
    async def get_homefile() -> JSONResponse:
        spec = await run_in_threadpool(locked, home_spec, home)
        suggested = f"{home_file.stem}-edited.yaml" if home_file else "home-edited.yaml"
        return JSONResponse({"ok": True, "path": suggested, "dir": str(save_dir.resolve()), "home": spec,
                             "types": sorted(DEVICE_TYPES)})

    @app.post("/live/homefile", tags=["live"], summary="Validate a home file, and save it as `path` if given")
    async def save_homefile(request: Request) -> JSONResponse:
        try:
            body = await read_json(request)
        except BadBody as err:
            return _error(err.status, INVALID_ARGUMENT, str(err))
        if not isinstance(body, dict) or not isinstance(body.get("home"), dict):
            return _error(400, INVALID_ARGUMENT, "body must be {\"home\": {...}, \"path\": \"file.yaml\"}",
                          ["home", "path"])
        name = body.get("path")
        # A page may be served beyond loopback (--host): it names a file, never a place.
        if name is not None and (not isinstance(name, str) or "\x00" in name or Path(name).name != name
                                 or not name.endswith((".yaml", ".yml", ".json")) or name.startswith(".")):
            return _error(400, INVALID_ARGUMENT, f"path {name!r}: a file name ending .yaml, .yml or .json, "
                          f"without directories; it is saved in {save_dir.resolve()}")
        try:
            text = await run_in_threadpool(validate_home, body["home"])
        except UserFileError as err:
            return _error(400, INVALID_ARGUMENT, str(err))
        target = save_dir / name if name else None
        if target is not None:
            if target.exists() and not body.get("overwrite"):
                return _error(409, INVALID_ARGUMENT, f"{target} exists; send \"overwrite\": true to replace it")
            try:
                target.write_text(json.dumps(yaml_to_json(text), indent=2) if name.endswith(".json") else text)
            except OSError as err:
                return _error(400, INVALID_ARGUMENT, f"{target}: {err.strerror or err}")
        return JSONResponse({"ok": True, "path": str(target) if target else None, "yaml": text})


def _codes(home: Any) -> list[dict[str, Any]]:
    return codes_rows(home)   # the same rows `twin codes` prints


# ---- benchmark runs ---------------------------------------------------------------------

def list_runs(runs_dir: Path | None) -> list[dict[str, Any]]:
    """Directories under `runs_dir` holding a `results.jsonl` (what `twin bench run --out` writes)."""
    if runs_dir is None or not runs_dir.is_dir():
        return []
    out = []
    for results in sorted(runs_dir.glob("*/results.jsonl")):
        rows = load_results(results.parent)
        solved = sum(1 for r in rows if r.get("success"))
        out.append({"name": results.parent.name, "episodes": len(rows), "solved": solved})
    return out



# ---- edit mode ------------------------------------------------------------------------------

def home_spec(home: Any) -> dict[str, Any]:
    """The running home as a home file (rooms with their current values, devices and options)."""
    rooms = []
    for room_id, room in home.rooms.items():
        devices = []
        for device in home.devices_in(room_id):
            info = home.device_info(device.id)
            entry: dict[str, Any] = {"id": device.id, "type": info["type"]}
            if info["name"]:
                entry["name"] = info["name"]
            if info["options"]:
                entry["options"] = info["options"]
            devices.append(entry)
        rooms.append({"id": room_id, "name": room.name, "temperature": round(room.temperature, 2),
                      "humidity": round(room.humidity, 2), "pm10": round(room.pm10, 1),
                      "daylight_lux": room.daylight_lux, "devices": devices})
    return {"name": home.name, "seed": home.seed, "start_time": home.clock.start.isoformat(sep=" "),
            "ambient": dict(home.ambient), "rooms": rooms}


def yaml_to_json(text: str) -> Any:
    return json.loads(json.dumps(yaml.safe_load(text), default=str))


def validate_home(data: dict[str, Any], source: str = "home") -> str:
    """The home file's YAML if `data` is a valid home (schema, device types, options and
    attributes); UserFileError, one line naming the field, if not."""
    spec = parse_data(data, source)
    Home.from_spec(spec, source=source)
    return to_yaml(spec)
