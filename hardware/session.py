"""A lab session: real Matter devices and the twin home, one set of tools, one recording.

The lab file becomes a bridge config for the mixed backend (bridge/mixed.py): every twin
device stays where it is, a **bound** real device takes its twin's id (tools reach the real
device), an **added** one joins a twin room, sensor bindings become the rooms' sensors. The
twin home runs on the wall clock (bridge.mixed.TwinHome).

- **Coupling** (bound, mode `couple`): each attribute report of the real device, from
  python-matter-server's subscription, is stored into the twin device's cluster server, so the
  twin's physics sees what the twin device would have done (a light's OnOff and level feed the
  room's illuminance; a thermostat's mode and setpoints drive its temperature). Measured
  attributes (MeasuredValue, LocalTemperature) stay the twin's own: its room supplies them.
- **Shadow** (bound, mode `shadow`): the twin device keeps its own model; every command or
  write sent to the real device is also sent to it, and `shadow.compare_after` seconds later
  the cluster's attributes are compared. Differences are `divergence` events (and live rows).
- **Recording**: every call, report (real and twin), room sample and event (hardware/recording.py).
- **Failures are data**: a pairing code that fails or an unreachable controller stop the
  session before it starts (`LabError`, one line); a node that disappears mid-session is
  recorded (`node_unavailable`) and its calls answer UNAVAILABLE/TIMEOUT, never a crash.
"""
from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bridge.backend import ToolError
from bridge.config import LoadedConfig, parse_config
from bridge.mixed import MixedBackend, TwinHome
from bridge.tools import Session, call_tool
from clusters.values import to_json
from hardware.controller import ManagedController
from hardware.coupling import Coupling
from hardware.lab_runs import LabRuns
from hardware.labfile import Lab, RealDevice
from hardware.network import network_conditions
from hardware.recording import Recorder
from hardware.shadow import Shadowing, dig, values_differ
from twin.home import Home
from twin.schema import UserFileError
from twin.tool_arguments import Arguments

COMMANDS = ("execute_command", "write_attribute")


class LabError(Exception):
    """The session cannot start (one line: controller, pairing, lab file)."""


def bridge_config(lab: Lab, url: str, home: Home) -> LoadedConfig:
    """The lab file as a bridge config for the mixed backend."""
    spec = lab.spec
    bound = {d.bind: d for d in spec.devices if d.bind is not None}
    for i, device in enumerate(spec.devices):
        if device.bind is not None and device.bind not in home.devices:
            raise lab.error(f"devices[{i}].bind", f"the twin home has no device {device.bind!r}; "
                            "devices: " + ", ".join(sorted(home.devices)))
        if device.room is not None and device.room not in home.rooms:
            raise lab.error(f"devices[{i}].room", f"the twin home has no room {device.room!r}; "
                            "rooms: " + ", ".join(home.rooms))
        if device.room is not None and device.id in home.devices:
            raise lab.error(f"devices[{i}].id", f"{device.id!r} is a twin device's id: bind it, "
                            "or give the added device another id")
    for i, sensor in enumerate(spec.sensors):
        if sensor.room not in home.rooms:
            raise lab.error(f"sensors[{i}].room", f"the twin home has no room {sensor.room!r}; "
                            "rooms: " + ", ".join(home.rooms))

    def matter(d: RealDevice) -> dict[str, Any]:
        ref: dict[str, Any] = {"node_id": d.node_id} if d.node_id else {"pairing_code": d.pairing_code}
        if d.endpoint is not None:
            ref["endpoint"] = d.endpoint
        return ref

    rooms = []
    for room_id, room in home.rooms.items():
        sensors = {}
        for s in spec.sensors:
            if s.room == room_id:
                ref: dict[str, Any] = ({"device": bound[s.device].bind if s.device in bound else s.device}
                                       if s.device else {"node_id": s.node_id} if s.node_id
                                       else {"pairing_code": s.pairing_code})
                if s.endpoint is not None:
                    ref["endpoint"] = s.endpoint
                sensors[s.state] = ref
        rooms.append({"id": room_id, "name": room.name, "twin": {"home": lab.home_path, "room": room_id},
                      "sensors": sensors})
    devices = []
    for device_id, info in ((d, home.device_info(d)) for d in home.devices):
        entry: dict[str, Any] = {"id": device_id, "room": info["room"], "name": info["label"]}
        if device_id in bound:
            entry["matter"] = matter(bound[device_id])
        else:
            entry["twin"] = {"home": lab.home_path, "device": device_id}
        devices.append(entry)
    for d in spec.devices:
        if d.room is not None:
            devices.append({"id": d.id, "room": d.room, "name": d.name or d.id, "matter": matter(d)})
    data = {"name": spec.name, "server": url, "timeout": spec.timeout,
            "commission_timeout": spec.commission_timeout, "rooms": rooms, "devices": devices}
    try:
        return parse_config(data, lab.source, lab.base_dir)
    except UserFileError as err:
        raise lab.error("(lab)", err.problem) from None


def load_twin_home(lab: Lab) -> Home:
    try:
        return Home.default() if lab.home_path == "default" else Home.load(lab.home_path)
    except UserFileError as err:
        raise lab.error("home", str(err)) from None
    except (OSError, ValueError) as err:
        raise lab.error("home", f"cannot load home {lab.home_path}: {err}") from None


class LabSession(Coupling, Shadowing, LabRuns):
    """Open with `open()`, drive with `call()` / `run_script()`, end with `close()`."""

    def __init__(self, lab: Lab, recording: Path | None = None, shadow_all: bool = False,
                 log: Callable[[str], None] | None = None, home: Home | None = None,
                 controller_url: str | None = None):
        """`home` replaces the lab file's twin home (a benchmark episode's), `controller_url`
        its controller (one the caller already runs for several sessions)."""
        self.lab = lab
        self.home = home
        self.controller_url = controller_url
        self.recording_path = Path(recording) if recording else lab.default_recording()
        self.shadow_all = shadow_all
        self.log = log or (lambda message: None)
        self.controller: ManagedController | None = None
        self.backend: MixedBackend | None = None
        self.twin: TwinHome | None = None
        self.recorder: Recorder | None = None
        self.network: Any = None   # hardware.network conditions, while applied
        self.tool_session = Session()
        self.real: dict[str, RealDevice] = {d.id: d for d in lab.spec.devices}
        self.node_ids: dict[str, int] = {}
        self.last_real: dict[str, dict[str, Any]] = {}      # device -> "Cluster.Attribute" -> value
        self.divergences: list[dict[str, Any]] = []
        self.expectation_failures: list[dict[str, Any]] = []
        self.available: dict[str, bool] = {}
        self._step = 0
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._events_seen = 0
        self._real_rooms = {s.room for s in lab.spec.sensors} | {d.room for d in lab.spec.devices if d.room}
        #: Told (topic, JSON value) of every call ("lab.call"), real report ("lab.real") and
        #: recorded event ("lab.event") as it happens: the live page (matter_twin/live_lab.py).
        self.observers: list[Callable[[str, Any], None]] = []

    def mode(self, device_id: str) -> str:
        device = self.real.get(device_id)
        if device is None:
            return "twin"
        if device.bind is None:
            return "added"
        return "shadow" if self.shadow_all or device.mode == "shadow" else "couple"

    def open(self) -> None:
        spec = self.lab.spec
        home = self.home if self.home is not None else load_twin_home(self.lab)
        url = self.controller_url or spec.controller.url
        if url is None and spec.controller.start is not None:
            start = spec.controller.start
            self.controller = ManagedController(self.lab.path(start.storage), start.port, start.listen)
            self.log(f"starting python-matter-server on port {start.port} (storage {self.controller.folder})")
            url = self.controller.start()
        try:
            loaded = bridge_config(self.lab, url, home)
            self.backend = MixedBackend(loaded, homes={self.lab.home_path: home})
            self.twin = self.backend.twin_home(self.lab.home_path)
            self._connect_real(url)
            self._start_recording()
        except BaseException:
            self.close()
            raise

    def _connect_real(self, url: str) -> None:
        assert self.backend is not None
        if not self.lab.spec.devices and not self.lab.spec.sensors:
            return  # a twin-only session: nothing to reach
        conn = self.backend.connection(url)
        try:
            conn.nodes()
        except ToolError as err:
            raise LabError(f"{self.lab.source}: controller: {err.message}") from None
        for i, device in enumerate(self.lab.spec.devices):
            how = f"pairing code {device.pairing_code}" if device.pairing_code else f"node {device.node_id}"
            self.log(f"{device.id}: connecting ({how})")
            try:
                self.node_ids[device.id] = self.backend.node_id(device.id)
                self.backend.device_structure(device.id)  # the node answers, the endpoint exists
            except ToolError as err:
                raise LabError(f"{self.lab.source}: devices[{i}] ({device.id}): {err.message}") from None
            self.available[device.id] = True
        if self.node_ids:
            conn.on_client(self._subscribe)
        for device_id in self.node_ids:
            if self.mode(device_id) in ("couple", "shadow"):
                self._initial_sync(device_id)  # a shadow twin, too, starts where the real one is

    def _initial_sync(self, device_id: str) -> None:
        """The twin device starts in the real device's state."""
        assert self.backend is not None
        try:
            values = self.backend.read_all_attributes(device_id)
        except ToolError as err:
            self._event("coupling_error", device_id, {"message": err.message})
            return
        for key, value in values.items():
            _, cluster, attribute = key.split(".", 2)
            self._couple(device_id, cluster, attribute, value)

    def _start_recording(self) -> None:
        assert self.twin is not None
        self.recorder = Recorder(self.recording_path)
        home = self.twin.home
        with self.twin.lock:
            self.twin.catch_up()
            snapshot = home.snapshot()
            tick, now = home.clock.tick, home.clock.format()
        devices = {d: {"kind": self.mode(d) if d in self.real else "twin"} for d in home.devices}
        for device_id, real in self.real.items():
            devices[device_id] = {"kind": "bound" if real.bind else "added", "mode": self.mode(device_id),
                                  "node_id": self.node_ids.get(device_id), "room": real.room}
        network = self.lab.spec.network
        run = self.recorder.start_run(wall=time.time(), tick=tick, time_text=now,
                                      lab=self.lab.spec.model_dump(mode="json"), source=self.lab.source,
                                      snapshot=snapshot, devices=devices,
                                      network=network.model_dump(mode="json") if network else None)
        self.log(f"recording run {run} to {self.recording_path}")
        self._events_seen = len(home.events)
        for device in home.devices.values():
            for server in device.servers():
                server.listeners.append(self._twin_changed)
        self._event("session_start", None, {"run": run, "devices": devices})
        if network is not None:
            self.network = network_conditions(network, lambda kind, detail: self._event(kind, None, detail))
            self.network.start()
        thread = threading.Thread(target=self._sampler, daemon=True, name="lab-sampler")
        thread.start()
        self._threads.append(thread)

    def _tick(self) -> int:
        assert self.twin is not None
        return self.twin.home.clock.tick

    def _event(self, kind: str, device: str | None, detail: Any, source: str = "lab") -> None:
        if self.recorder is not None:
            self.recorder.event(time.time(), self._tick(), source, kind, device, detail)
        self._publish("lab.event", {"kind": kind, "device": device, "source": source, "detail": detail})

    def _publish(self, topic: str, value: Any) -> None:
        for observer in list(self.observers):
            try:
                observer(topic, value)
            except Exception:  # noqa: BLE001 - a view's trouble never stops the session
                pass

    def _record_call(self, step: int, wall: float, tick: int, source: str, tool: str, args: dict[str, Any],
                     result: dict[str, Any]) -> None:
        end = time.time()
        if self.recorder is not None:
            self.recorder.call(step, wall, end, tick, source, tool, args, result)
        self._publish("lab.call", {"step": step, "wall": wall, "wall_end": end, "tick": tick, "source": source,
                                   "tool": tool, "args": args, "ok": bool(result.get("ok")), "result": result})

    def live_view(self) -> dict[str, Any]:
        """What the live page starts from: the devices and their roles, the real devices'
        last reported values, the divergences so far (the twin's values are the home's)."""
        devices = {d: {"mode": self.mode(d), "node_id": self.node_ids.get(d), "available": self.available.get(d)}
                   for d in self.real}
        return {"name": self.lab.spec.name, "source": self.lab.source, "recording": str(self.recording_path),
                "devices": devices, "real": {d: dict(v) for d, v in self.last_real.items()},
                "divergences": list(self.divergences)}

    def note(self, kind: str, detail: Any, device: str | None = None) -> None:
        """Record an event of the caller's (source "lab") in the current run."""
        self._event(kind, device, detail)

    def _twin_changed(self, server: Any, name: str) -> None:
        if self.recorder is None:
            return
        self.recorder.report(time.time(), self._tick(), "twin", server.endpoint.device.id,
                             server.endpoint.id, server.name, name, to_json(server.get(name)))

    def _sampler(self) -> None:
        assert self.backend is not None and self.twin is not None and self.recorder is not None
        interval = self.lab.spec.session.sample_interval
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(interval)

    def sample(self) -> None:
        """Record every room's state (and twin events since the last sample)."""
        assert self.backend is not None and self.twin is not None and self.recorder is not None
        for room in self.twin.home.rooms:
            try:
                state = self.backend.room_states(room)
            except ToolError as err:
                self._event("error", None, {"room": room, "message": err.message})
                continue
            self.recorder.sample(time.time(), self._tick(), room, state)
        events = self.twin.home.events
        with self.twin.lock:
            new, self._events_seen = events[self._events_seen:], len(events)
        for event in new:
            self._event("twin_event", event["device"], event, source="twin")

    def call(self, tool: str, args: dict[str, Any], source: str = "script") -> dict[str, Any]:
        assert self.backend is not None and self.twin is not None and self.recorder is not None
        self._step += 1
        step = self._step
        wall = time.time()
        target = self._target(tool, args)   # routing, reachability and shadowing share it
        if self._touches_real(tool, target):
            # No lock: reports arriving during the Matter call must reach the twin.
            with self.twin.lock:
                self.twin.catch_up()
                tick = self.twin.home.clock.tick
            result = call_tool(self.backend, tool, args, self.tool_session, parsed=target)
        else:
            # The twin alone: hold its clock still, so a replay at `tick` sees the same state.
            with self.twin.lock:
                self.twin.catch_up()
                result = call_tool(self.backend, tool, args, self.tool_session, parsed=target)
                tick = self.twin.home.clock.tick
        self._record_call(step, wall, tick, source, tool, args, result)
        self._note_reachability(tool, target, result)
        if tool in COMMANDS:
            self._shadow(step, tool, args, target, result)
        return result

    def _note_reachability(self, tool: str, target: Arguments | None, result: dict[str, Any]) -> None:
        """A real device that stops (or starts again) answering is an event, whatever the
        controller's own availability reports say (they may come much later)."""
        device_id = getattr(target, "device_id", None)
        if device_id not in self.node_ids:
            return
        gone = not result.get("ok") and result["error"]["code"] in ("UNAVAILABLE", "TIMEOUT")
        if gone == self.available.get(device_id, True):
            self.available[device_id] = not gone
            self.log(f"{device_id}: {'not answering' if gone else 'answering again'}")
            self._event("node_unavailable" if gone else "node_available", device_id,
                        {"node_id": self.node_ids[device_id], "via": tool,
                         "error": result.get("error")})

    def live_rows(self) -> list[tuple[str, str, str, str]]:
        """(device, attribute, real, twin) for the bound devices' last reported values."""
        rows = []
        if self.twin is None:
            return rows
        for device_id, values in sorted(self.last_real.items()):
            if device_id not in self.twin.home.devices:
                continue
            device = self.twin.home.devices[device_id]
            for key, value in sorted(values.items()):
                cluster, attribute = key.split(".", 1)
                if cluster not in ("OnOff", "LevelControl", "Thermostat", "FanControl"):
                    continue
                try:
                    twin_value = to_json(device.read(cluster, attribute))
                except Exception:  # noqa: BLE001 - the twin lacks it
                    continue
                rows.append((device_id, key, repr(value), repr(twin_value)))
        return rows

    def close(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(5)
        if self.network is not None:
            self.network.stop()
        if self.recorder is not None:
            if self.twin is not None:
                self.sample()
            self._event("session_end", None, {"divergences": len(self.divergences),
                                              "expectation_failures": len(self.expectation_failures)})
            self.recorder.close(time.time())
            self.recorder = None
        if self.backend is not None:
            self.backend.close()
            self.backend = None
        if self.controller is not None:
            self.controller.stop()
            self.controller = None

    def __enter__(self) -> LabSession:
        self.open()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


__all__ = ["LabError", "LabSession", "bridge_config", "dig", "load_twin_home", "values_differ"]
