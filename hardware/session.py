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

import dataclasses
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bridge.backend import ToolError
from bridge.config import LoadedConfig, parse_config
from bridge.matter_values import attribute_name, cluster_name, decode
from bridge.mixed import MixedBackend, TwinHome
from bridge.tools import Session, call_tool, normalize_args
from clusters.values import from_json, to_json
from hardware.controller import ManagedController
from hardware.labfile import Lab, RealDevice
from hardware.network import network_conditions
from hardware.recording import Recorder
from twin.home import Home
from twin.schema import UserFileError

#: Attributes the twin derives from its room (or that describe the node, not its state):
#: never overwritten by a real device's reports.
NOT_COUPLED = frozenset({"MeasuredValue", "MinMeasuredValue", "MaxMeasuredValue", "Tolerance",
                         "LocalTemperature", "OutdoorTemperature", "RemainingTime"})
NOT_COUPLED_CLUSTERS = frozenset({"Descriptor", "BasicInformation", "Identify", "Groups",
                                  "ScenesManagement", "FixedLabel", "UserLabel"})
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


def dig(value: Any, path: str) -> Any:
    """`a.b.0.c` inside a JSON result; KeyError when absent."""
    for part in path.split("."):
        if isinstance(value, list):
            value = value[int(part)]
        elif isinstance(value, dict) and part in value:
            value = value[part]
        else:
            raise KeyError(path)
    return value


def values_differ(a: Any, b: Any, tolerance: float) -> bool:
    if isinstance(a, bool) or isinstance(b, bool) or not isinstance(a, (int, float)) \
            or not isinstance(b, (int, float)):
        return a != b
    return abs(a - b) > tolerance


class LabSession:
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

    # ---- setup -----------------------------------------------------------------------
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

    # ---- reports ---------------------------------------------------------------------
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

    def _subscribe(self, client: Any) -> None:
        """On the connection's loop: every attribute of each real device's node reports here."""
        from matter_server.common.models import EventType
        for device_id, node_id in self.node_ids.items():
            endpoint = self.real[device_id].endpoint
            try:
                paths = list(client.get_node(node_id).node_data.attributes)
            except Exception:  # noqa: BLE001 - a node the server lost: recorded, not fatal
                self._event("node_unavailable", device_id, {"node_id": node_id, "why": "unknown to the server"})
                continue
            for path in paths:
                ep = int(path.split("/")[0])
                if ep == 0 or (endpoint is not None and ep != endpoint):
                    continue
                client.subscribe_events(self._reporter(device_id, path), EventType.ATTRIBUTE_UPDATED,
                                        node_id, path)
            client.subscribe_events(self._node_watcher(device_id), EventType.NODE_UPDATED, node_id)
            client.subscribe_events(self._node_watcher(device_id), EventType.NODE_REMOVED, node_id)
            client.subscribe_events(self._matter_event(device_id), EventType.NODE_EVENT, node_id)

    def _reporter(self, device_id: str, path: str) -> Callable[[Any, Any], None]:
        ep, cid, aid = (int(p) for p in path.split("/"))
        cluster, attribute = cluster_name(cid), attribute_name(cid, aid)

        def on_report(event: Any, raw: Any) -> None:
            try:
                value = decode(cid, aid, raw, path, strict=False)
                self.last_real.setdefault(device_id, {})[f"{cluster}.{attribute}"] = value
                if self.recorder is not None:
                    self.recorder.report(time.time(), self._tick(), "real", device_id, ep, cluster,
                                         attribute, value)
                self._publish("lab.real", {"device": device_id, "endpoint": ep, "key": f"{cluster}.{attribute}",
                                           "value": value})
                if self.mode(device_id) == "couple":
                    self._couple(device_id, cluster, attribute, value)
            except Exception as err:  # noqa: BLE001 - a report we cannot use is recorded
                self._event("coupling_error", device_id, {"path": path, "message": str(err)})
        return on_report

    def _node_watcher(self, device_id: str) -> Callable[[Any, Any], None]:
        def on_node(event: Any, node: Any) -> None:
            available = bool(getattr(node, "available", False))
            if available != self.available.get(device_id):
                self.available[device_id] = available
                kind = "node_available" if available else "node_unavailable"
                self.log(f"{device_id}: {'back' if available else 'gone (unavailable)'}")
                self._event(kind, device_id, {"node_id": self.node_ids[device_id], "event": str(event)})
        return on_node

    def _matter_event(self, device_id: str) -> Callable[[Any, Any], None]:
        def on_event(event: Any, data: Any) -> None:
            # python-matter-server's MatterNodeEvent is a dataclass of JSON-ready fields.
            detail = dataclasses.asdict(data) if dataclasses.is_dataclass(data) else data
            self._event("matter_event", device_id, detail, source="real")
        return on_event

    def _couple(self, device_id: str, cluster: str, attribute: str, value: Any) -> None:
        """Store a real device's reported value into its twin device's cluster server."""
        if attribute in NOT_COUPLED or cluster in NOT_COUPLED_CLUSTERS or self.twin is None:
            return
        device = self.twin.home.devices[device_id]
        for endpoint in device.endpoints.values():
            server = next((s for s in endpoint.servers.values() if s.name == cluster), None)
            if server is None or attribute not in server.attribute_names():
                continue
            try:
                typed = from_json(server.attribute_class(attribute).attribute_type.Type, value,
                                  f"{cluster}.{attribute}")
            except Exception as err:  # noqa: BLE001 - recorded, the rest still couples
                self._event("coupling_error", device_id, {"attribute": f"{cluster}.{attribute}",
                                                          "value": value, "message": str(err)})
                return
            with self.twin.lock:
                self.twin.catch_up()
                server.set(attribute, typed)
            return

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

    # ---- calls -----------------------------------------------------------------------
    def call(self, tool: str, args: dict[str, Any], source: str = "script") -> dict[str, Any]:
        assert self.backend is not None and self.twin is not None and self.recorder is not None
        self._step += 1
        step = self._step
        wall = time.time()
        if self._touches_real(tool, args):
            # No lock: reports arriving during the Matter call must reach the twin.
            with self.twin.lock:
                self.twin.catch_up()
                tick = self.twin.home.clock.tick
            result = call_tool(self.backend, tool, args, self.tool_session)
        else:
            # The twin alone: hold its clock still, so a replay at `tick` sees the same state.
            with self.twin.lock:
                self.twin.catch_up()
                result = call_tool(self.backend, tool, args, self.tool_session)
                tick = self.twin.home.clock.tick
        self._record_call(step, wall, tick, source, tool, args, result)
        self._note_reachability(tool, args, result)
        if tool in COMMANDS:
            self._shadow(step, tool, args, result)
        return result

    def _note_reachability(self, tool: str, args: dict[str, Any], result: dict[str, Any]) -> None:
        """A real device that stops (or starts again) answering is an event, whatever the
        controller's own availability reports say (they may come much later)."""
        try:
            device_id = normalize_args(tool, args).get("device.id")
        except Exception:  # noqa: BLE001 - refused before reaching any device
            return
        if device_id not in self.node_ids:
            return
        gone = not result.get("ok") and result["error"]["code"] in ("UNAVAILABLE", "TIMEOUT")
        if gone == self.available.get(device_id, True):
            self.available[device_id] = not gone
            self.log(f"{device_id}: {'not answering' if gone else 'answering again'}")
            self._event("node_unavailable" if gone else "node_available", device_id,
                        {"node_id": self.node_ids[device_id], "via": tool,
                         "error": result.get("error")})

    def _touches_real(self, tool: str, args: dict[str, Any]) -> bool:
        try:
            norm = normalize_args(tool, args)
        except Exception:  # noqa: BLE001 - refused before reaching any device
            return False
        if norm.get("device.id") in self.real:
            return True
        room = norm.get("room.id")
        return room is not None and (room in self._real_rooms or tool == "get_room_devices")

    def _shadow(self, step: int, tool: str, args: dict[str, Any], real: dict[str, Any]) -> None:
        try:
            device_id = normalize_args(tool, args).get("device.id")
        except Exception:  # noqa: BLE001 - a malformed call was already answered and recorded
            return
        if self.mode(device_id) != "shadow":
            return
        assert self.twin is not None
        with self.twin.lock:
            self.twin.catch_up()
            twin = call_tool(self.twin.backend, tool, args)
        if real.get("ok") != twin.get("ok") or (not real.get("ok") and real["error"]["code"] != twin["error"]["code"]):
            self._diverged(step, device_id, "(status)", _status(real), _status(twin), 0.0)
        cluster = (real.get("cluster") or twin.get("cluster") or args.get("cluster.id") or args.get("cluster_id"))
        delay = self.lab.spec.shadow.compare_after
        timer = threading.Timer(delay, self._compare, (step, device_id, str(cluster), delay))
        timer.daemon = True
        timer.start()

    def _compare(self, step: int, device_id: str, cluster: str, delay: float) -> None:
        """Real vs twin, every attribute of `cluster` both have."""
        assert self.backend is not None and self.twin is not None
        try:
            real = self.backend.read_all_attributes(device_id)
        except ToolError as err:
            self._event("error", device_id, {"shadow_step": step, "message": err.message})
            return
        with self.twin.lock:
            self.twin.catch_up()
            twin = self.twin.backend.read_all_attributes(device_id)

        def by_name(values: dict[str, Any]) -> dict[str, Any]:
            return {k.split(".", 1)[1]: v for k, v in values.items() if k.split(".")[1] == cluster}
        real_values, twin_values = by_name(real), by_name(twin)
        tolerance = self.lab.spec.shadow.tolerance
        for name in sorted(real_values.keys() & twin_values.keys()):
            if name.split(".")[1] in NOT_COUPLED:
                continue
            if values_differ(real_values[name], twin_values[name], tolerance):
                self._diverged(step, device_id, name, real_values[name], twin_values[name], delay)

    def _diverged(self, step: int, device_id: str, what: str, real: Any, twin: Any, after: float) -> None:
        entry = {"step": step, "device": device_id, "attribute": what, "real": real, "twin": twin,
                 "after_s": after}
        self.divergences.append(entry)
        self.log(f"DIVERGENCE step {step} {device_id} {what}: real {real!r} twin {twin!r} after {after:g} s")
        self._event("divergence", device_id, entry)

    # ---- scripts ---------------------------------------------------------------------
    def run_script(self, on_step: Callable[[int, int, str], None] | None = None) -> dict[str, Any]:
        steps = self.lab.spec.session.script
        calls = 0
        for i, step in enumerate(steps):
            if on_step is not None:
                on_step(i, len(steps), f"wait {step.wait:g} s" if step.wait is not None else str(step.tool))
            if step.wait is not None:
                self._stop.wait(step.wait)
                continue
            assert step.tool is not None
            result = self.call(step.tool, dict(step.args))
            calls += 1
            for path, expected in (step.expect or {}).items():
                try:
                    got = dig(result, path)
                except (KeyError, IndexError, ValueError):
                    got = "(absent)"
                if got != expected:
                    failure = {"script_step": i, "tool": step.tool, "path": path, "expected": expected, "got": got}
                    self.expectation_failures.append(failure)
                    self.log(f"expectation failed at step {i}: {path} is {got!r}, expected {expected!r}")
                    self._event("expectation_failed", None, failure)
        if self.lab.spec.shadow and any(self.mode(d) == "shadow" for d in self.real):
            self._stop.wait(self.lab.spec.shadow.compare_after + 0.5)  # the last comparisons
        return {"calls": calls, "expectation_failures": len(self.expectation_failures),
                "divergences": len(self.divergences)}

    def run_agent(self) -> dict[str, Any]:
        """Drive the lab file's agent through the tools against the mixed home; every call it
        makes is recorded (source "agent"); the goals are read back through the same tools."""
        from scenarios.runner import make_agent
        spec = self.lab.spec.session.agent
        assert spec is not None
        session, _, error = self._drive(make_agent(spec.agent, base_url=spec.base_url), spec.query,
                                        spec.max_steps)
        failures = []
        for goal in spec.goals:
            args = {"device.id": goal.device, "cluster.id": goal.cluster, "attribute.id": goal.attribute}
            if goal.endpoint is not None:
                args["endpoint.id"] = goal.endpoint
            got = self.call("get_attribute", args, source="score")
            value = got.get("value") if got.get("ok") else got.get("error", {}).get("code")
            if value != goal.equals:
                failures.append({"goal": goal.model_dump(), "got": value})
        score = {"agent": spec.agent, "query": spec.query, "steps": len(session.history),
                 "answer": session.answer, "success": not failures and error is None,
                 "failures": failures, "agent_error": error}
        self._event("score", None, score)
        self.log(f"agent {spec.agent}: {'success' if score['success'] else 'failed'} "
                 f"in {score['steps']} steps" + (f"; {failures}" if failures else ""))
        return {"calls": len(session.history), "expectation_failures": len(failures),
                "divergences": len(self.divergences), "score": score}

    def _drive(self, agent: Any, query: str, max_steps: int) -> tuple[Session, Any, str | None]:
        """Run `agent` on `query` through the tools against the mixed home, every call
        recorded (source "agent"): (its tool session, its output or None, its error)."""
        from scenarios.simuhome.evaluate import agent_session
        assert self.backend is not None
        backend = _Timed(self.backend, self._tick)
        session = agent_session()
        session.history = _RecordedHistory(self, backend)
        try:
            out = agent.run(query, backend, session, max_steps)
            return session, out, out.error
        except Exception as err:  # noqa: BLE001 - an agent crash is a failed run, recorded
            return session, None, f"{type(err).__name__}: {err}"

    def run_episode(self, episode: Any, agent: Any, judge: Any, max_steps: int = 30,
                    settle: float = 1.0) -> dict[str, Any]:
        """One benchmark episode on this session's home (built from the episode): its setup
        calls that reach hardware are made on the real devices (source "setup"), the agent
        runs, and the benchmark's evaluator scores what the mixed home then holds (a coupled
        device's twin holds its product's reported state). The result line is recorded
        (event "episode_score") and returned."""
        from scenarios.simuhome.evaluate import score
        assert self.twin is not None
        setup = [c for c in episode.initial.setup if self._touches_real(c.tool, c.args)]
        for call in setup:
            self.call(call.tool, dict(call.args), source="setup")
        if setup:
            self._stop.wait(settle)
        with self.twin.lock:
            self.twin.catch_up()
            start = self.twin.home.fork()
            start.own_devices()   # the live home keeps changing in the reporting threads
        self._event("episode_start", None, {"episode_id": episode.id, "category": episode.category,
                                            "query": episode.query, "agent": agent.name})
        session, out, error = self._drive(agent, episode.query, max_steps)
        self._stop.wait(settle)  # the products' last reports reach their twins
        with self.twin.lock:
            self.twin.catch_up()
            acted = self.twin.home.fork()
            acted.own_devices()
        answer = session.answer if session.answer is not None else getattr(out, "answer", None)
        record = {"episode_id": episode.id, "category": episode.category, "agent": agent.name,
                  **score(episode, start, acted, session, judge, answer), "agent_error": error}
        self._event("episode_score", None, record)
        self.log(f"{episode.id}: {'success' if record['success'] else 'failed'} in {record['steps']} steps"
                 + (f"; {'; '.join(record['failures'])}" if record["failures"] else ""))
        return record

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

    # ---- teardown --------------------------------------------------------------------
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


class _Timed:
    """The backend as the agent sees it, noting when (wall, tick) each tool call first touches it."""

    def __init__(self, backend: Any, tick: Callable[[], int]):
        self._backend = backend
        self._tick = tick
        self.started: tuple[float, int] | None = None

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._backend, name)
        if not callable(attr):
            return attr

        def timed(*args: Any, **kwargs: Any) -> Any:
            if self.started is None:
                self.started = (time.time(), self._tick())
            return attr(*args, **kwargs)
        return timed


class _RecordedHistory(list):
    """The agent's tool-call history; each entry is recorded as it is appended."""

    def __init__(self, lab: LabSession, backend: _Timed):
        super().__init__()
        self._lab = lab
        self._backend = backend

    def append(self, entry: dict[str, Any]) -> None:
        super().append(entry)
        lab = self._lab
        now = time.time()
        wall, tick = self._backend.started or (now, lab._tick())
        self._backend.started = None
        lab._step += 1
        lab._record_call(lab._step, wall, tick, "agent", entry["tool"], entry["args"], entry["result"])


def _status(result: dict[str, Any]) -> str:
    return "SUCCESS" if result.get("ok") else result["error"]["code"]


__all__ = ["LabError", "LabSession", "bridge_config", "dig", "load_twin_home", "values_differ"]
