"""The fault engine: seeded faults on the home's devices, scheduled in virtual time.

A fault has a kind, a target device (a home device, or a room-sensor node `sensors@<room>`),
and a schedule: onset `at` (virtual seconds after it was loaded or injected), `duration`
(None: until cleared), an abrupt or gradual transition (`ramp` seconds up at onset and down
at recovery), a `severity`, and regime revisits (`repeat: {every, times}`). Its level at a
tick is a pure function of the schedule, so stepping and fast-forwarding agree, and the same
file, seed and calls give byte-identical snapshots and traces.

Kinds and what `severity` means:

| kind | effect | severity |
|---|---|---|
| offline | the node stops answering; tools answer UNAVAILABLE | - |
| latency | every datagram of the node waits this long | ms (default 200) |
| loss | each datagram is dropped with this probability | 0..1 (default 0.2) |
| command_failure | a command or write fails with `status` | probability 0..1 (default 1) |
| stuck | commands and writes succeed but change nothing | - |
| sensor_bias | measured values are offset | quantity units (default 1) |
| sensor_drift | the offset grows from onset | units per hour (default 1) |
| sensor_noise | Gaussian noise on each measurement | standard deviation (default 0.2) |
| sensor_stale | measurements freeze at their onset value | - |
| reboot | ShutDown (graceful), down `duration` s (default 2), StartUp; sessions, subscriptions gone | - |
| jammed | a door lock's bolt jams: LockState NotFullyLocked, DoorLockAlarm LockJammed, lock and unlock fail | - |
| commissioning_slow | PASE messages wait this long | ms (default 2000) |
| commissioning_failure | PASE messages are dropped: commissioning fails | - |

Where the effects live: what the simulation itself sees (commands, writes, measurements,
reboots) is here, through the device's `interceptor` (every tool, workflow step and Matter
invoke goes through `Device.invoke/write`) and the sensors' source; the network effects
(offline, latency, loss, commissioning) are read by the node's transport (twin/node/faults.py);
the tools' UNAVAILABLE is in bridge/twin_backend.py. Each onset and recovery is recorded in
`home.events` (`FaultStarted` / `FaultEnded`), so a failure can be attributed.

Randomness never touches `home.rng`: each draw comes from `random.Random` seeded with the
home seed, the fault id and a counter or the tick, so a fault never shifts any other draw.
"""
from __future__ import annotations

import math
import random
from pathlib import Path
from typing import Annotated, Any, Literal

from chip.clusters import Objects as Clusters
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from clusters.lazy_objects import CLUSTER_ID
from clusters.status import MatterError, Status
from twin import physics
from twin.clock import TICKS_PER_SECOND
from twin.schema import UserFileError, first_problem, read_user_file

__all__ = ["FAULT_KINDS", "FaultSpec", "FaultFile", "FaultEngine", "load_fault_file", "parse_fault"]

SENSOR_KINDS = ("sensor_bias", "sensor_drift", "sensor_noise", "sensor_stale")
NETWORK_KINDS = ("offline", "latency", "loss", "commissioning_slow", "commissioning_failure")
DEVICE_KINDS = ("command_failure", "stuck", "reboot")
LOCK_KINDS = ("jammed",)
#: Kinds added later go at the end: a kind's index is part of its TestEventTrigger code (twin/node/faults.py).
FAULT_KINDS = NETWORK_KINDS + DEVICE_KINDS + SENSOR_KINDS + LOCK_KINDS
#: Kinds that are on or off: a gradual transition means nothing for them.
BINARY_KINDS = frozenset({"offline", "stuck", "sensor_stale", "reboot", "commissioning_failure", "jammed"})
DEFAULT_SEVERITY = {"latency": 200.0, "loss": 0.2, "command_failure": 1.0, "sensor_bias": 1.0,
                    "sensor_drift": 1.0, "sensor_noise": 0.2, "commissioning_slow": 2000.0}
PROBABILITY_KINDS = frozenset({"loss", "command_failure"})
DEFAULT_REBOOT_S = 2.0
QUANTITIES = ("temperature", "humidity", "illuminance", "pm10")

Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Repeat(BaseModel):
    """Regime revisits: the fault comes back `every` seconds after each onset, `times` in all."""
    model_config = ConfigDict(extra="forbid")
    every: Annotated[float, Field(gt=0, allow_inf_nan=False)]
    times: Annotated[int, Field(ge=1, le=10_000)] = 2


class FaultSpec(BaseModel):
    """One fault as a file or an injection gives it."""
    model_config = ConfigDict(extra="forbid")
    id: Annotated[str, Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9_.@\-]*$", max_length=80)] | None = None
    device: str
    kind: Literal[FAULT_KINDS]  # type: ignore[valid-type]
    at: Seconds = 0.0
    duration: Seconds | None = None
    transition: Literal["abrupt", "gradual"] = "abrupt"
    ramp: Seconds = 0.0
    severity: Annotated[float, Field(allow_inf_nan=False)] | None = None
    repeat: Repeat | None = None
    #: command_failure: the Matter status a failing call answers.
    status: str = "FAILURE"
    #: sensor_*: only this quantity (default: every one the device measures).
    quantity: Literal[QUANTITIES] | None = None  # type: ignore[valid-type]
    #: reboot: log ShutDown first, as a software reset does (false: a power cut).
    graceful: bool = True

    @field_validator("status")
    @classmethod
    def _status(cls, value: str) -> str:
        if value not in Status.__members__ or value == "SUCCESS":
            raise ValueError(f"status {value!r} is not a Matter failure status; accepted e.g. FAILURE, BUSY, "
                             "TIMEOUT, INVALID_IN_STATE, CONSTRAINT_ERROR")
        return value

    @model_validator(mode="after")
    def _consistent(self) -> FaultSpec:
        if self.kind in BINARY_KINDS and self.transition == "gradual":
            raise ValueError(f"transition: {self.kind} is on or off; accepted: abrupt")
        if self.transition == "gradual" and self.ramp <= 0:
            raise ValueError("ramp: a gradual transition needs ramp > 0 seconds")
        if self.transition == "abrupt" and self.ramp:
            raise ValueError("ramp: only a gradual transition has a ramp")
        if self.kind == "reboot" and self.duration is None:
            self.duration = DEFAULT_REBOOT_S
        if self.kind == "reboot" and not self.duration:
            raise ValueError("duration: a reboot is down for at least 0.1 s")
        if self.severity is None:
            self.severity = DEFAULT_SEVERITY.get(self.kind, 1.0)
        if self.kind in PROBABILITY_KINDS and not 0 <= self.severity <= 1:
            raise ValueError(f"severity: {self.kind} takes a probability 0..1, got {self.severity}")
        if self.kind in ("latency", "commissioning_slow") and self.severity < 0:
            raise ValueError(f"severity: {self.kind} takes milliseconds >= 0, got {self.severity}")
        if self.repeat is not None and self.duration is None:
            raise ValueError("repeat: a fault without a duration never ends, so it cannot come back")
        if self.repeat is not None and self.repeat.every < self.duration + 2 * self.ramp:
            raise ValueError(f"repeat.every: {self.repeat.every} s is shorter than one occurrence "
                             f"({self.duration + 2 * self.ramp} s)")
        return self


class FaultFile(BaseModel):
    """`twin run --faults FILE`: the faults, and the TestEventTrigger enable key."""
    model_config = ConfigDict(extra="forbid")
    faults: list[FaultSpec] = []
    #: GeneralDiagnostics TestEventTrigger enable key (32 hex digits); none: triggers disabled.
    test_event_key: Annotated[str, Field(pattern=r"^[0-9A-Fa-f]{32}$")] | None = None


def _one_line(source: str, exc: ValidationError, default: str) -> UserFileError:
    return UserFileError(source, *first_problem(exc, default))


def load_fault_file(path: str | Path) -> FaultFile:
    """A faults file (YAML or JSON); every problem is one `UserFileError` line."""
    source = str(path)
    data = read_user_file(path)   # JSON is YAML too, but a .json name gets JSON's line numbers
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise UserFileError(source, "(top level)", f"expected a mapping with `faults:`; got {type(data).__name__}")
    try:
        return FaultFile.model_validate(data)
    except ValidationError as exc:
        raise _one_line(source, exc, "(faults)") from None


def parse_fault(data: Any, where: str = "fault") -> FaultSpec:
    """One fault from JSON (live injection); a problem is a ValueError of one line."""
    if not isinstance(data, dict):
        raise ValueError(f"{where}: expected a JSON object with device, kind, ...; got {type(data).__name__}")
    try:
        return FaultSpec.model_validate(data)
    except ValidationError as exc:
        path, problem = first_problem(exc, where)
        raise ValueError(f"{where}: {path}: {problem}" if path != where else f"{where}: {problem}") from None


class _Fault:
    """A scheduled fault: its spec, absolute ticks, and the state its effects keep."""

    def __init__(self, spec: FaultSpec, fault_id: str, onset_tick: int):
        self.spec = spec
        self.id = fault_id
        self.onset = onset_tick
        self.cleared: int | None = None           # tick a live clear ended it
        self.calls = 0                            # command_failure draws so far
        self.stale: dict[str, float] = {}         # sensor_stale: quantity -> frozen value

    def _ticks(self, seconds: float) -> int:
        return round(seconds * TICKS_PER_SECOND)

    def occurrences(self) -> list[tuple[int, int | None]]:
        """(start, end) ticks of each occurrence; end excludes the recovery ramp; None: open."""
        spec = self.spec
        count = spec.repeat.times if spec.repeat is not None else 1
        every = self._ticks(spec.repeat.every) if spec.repeat is not None else 0
        ramp = self._ticks(spec.ramp)
        out: list[tuple[int, int | None]] = []
        for k in range(count):
            start = self.onset + k * every
            end = None if spec.duration is None else start + ramp + self._ticks(spec.duration)
            if self.cleared is not None:
                if start >= self.cleared:
                    break
                end = self.cleared if end is None else min(end, self.cleared)
            out.append((start, end))
        return out

    def transitions(self) -> list[tuple[int, str, int]]:
        """(tick, "FaultStarted"/"FaultEnded", occurrence) in time order."""
        ramp = self._ticks(self.spec.ramp)
        out = []
        for k, (start, end) in enumerate(self.occurrences()):
            out.append((start, "FaultStarted", k))
            if end is not None:
                out.append((end + (0 if end == self.cleared else ramp), "FaultEnded", k))
        return out

    def level(self, tick: int) -> float:
        """0 (off) .. 1 (full severity) at `tick`; ramps are linear (none after a live clear)."""
        ramp = self._ticks(self.spec.ramp)
        best = 0.0
        for start, end in self.occurrences():
            if tick < start:
                break
            if end is not None and tick >= end:
                if ramp and end != self.cleared and tick < end + ramp:
                    best = max(best, 1.0 - (tick - end) / ramp)
            elif ramp and tick < start + ramp:
                best = max(best, (tick - start) / ramp)
            else:
                return 1.0
        return best

    def occurrence_start(self, tick: int) -> int:
        return max((s for s, _ in self.occurrences() if s <= tick), default=self.onset)

    def state(self) -> dict[str, Any]:
        return {"spec": self.spec.model_dump(mode="json"), "id": self.id, "onset": self.onset,
                "cleared": self.cleared, "calls": self.calls, "stale": dict(sorted(self.stale.items()))}

    @classmethod
    def from_state(cls, state: dict[str, Any]) -> _Fault:
        fault = cls(FaultSpec.model_validate(state["spec"]), state["id"], state["onset"])
        fault.cleared, fault.calls, fault.stale = state["cleared"], state["calls"], dict(state["stale"])
        return fault


class FaultEngine:
    """The home's faults (`home.faults`). Stepped by the home like its workflows:
    `next_tick()` says when a fault starts or ends, `run_due(tick)` records it and applies
    what happens at that moment (a stale value frozen, a reboot)."""

    def __init__(self, home: Any):
        self.home = home
        self.faults: dict[str, _Fault] = {}
        #: The same faults by device: a node's link holds its device's list (`faults_on`), which
        #: changes in place as faults are added, so a datagram's verdict looks at that node's
        #: faults only, and at nothing when it has none.
        self.on_device: dict[str, list[_Fault]] = {}
        self.done_tick = -1          # every transition at or before this tick is applied
        self.test_event_key: bytes | None = None

    # ---- adding and clearing ---------------------------------------------------------------
    def _check_target(self, spec: FaultSpec) -> None:
        home = self.home
        sensors = {f"sensors@{r}" for r in home.rooms}
        if spec.device not in home.devices and spec.device not in sensors:
            raise ValueError(f"device: no device {spec.device!r}; accepted: a device id or sensors@<room>")
        if spec.device in sensors and spec.kind in DEVICE_KINDS:
            raise ValueError(f"kind: a room-sensor node takes sensor and network faults, not {spec.kind}")
        if spec.kind == "jammed" and self._lock(spec.device) is None:
            raise ValueError(f"kind: {spec.device} has no door lock to jam")
        if spec.kind in SENSOR_KINDS and not self._quantities(spec.device):
            raise ValueError(f"kind: {spec.device} measures nothing of its room, so it has no {spec.kind}")

    def add(self, spec: FaultSpec, now_tick: int | None = None) -> str:
        """Schedule `spec`, onset `spec.at` seconds after `now_tick` (default: now). Returns its id.
        A bad target raises ValueError and schedules nothing."""
        self._check_target(spec)
        now = self.home.clock.tick if now_tick is None else now_tick
        fault_id = spec.id or f"{spec.kind}-{len(self.faults) + 1}"
        if fault_id in self.faults:
            raise ValueError(f"id: a fault {fault_id!r} exists already")
        fault = _Fault(spec, fault_id, now + round(spec.at * TICKS_PER_SECOND))
        self.faults[fault_id] = fault
        self.faults_on(spec.device).append(fault)
        # One starting at a tick already settled (now) applies now; later ones when their tick comes.
        self._apply([(t, name, fault_id, k) for t, name, k in fault.transitions() if t <= self.done_tick])
        self.run_due(self.home.clock.tick)
        return fault_id

    def load(self, faults: FaultFile, source: str = "<faults>") -> list[str]:
        """Schedule every fault of a file; a bad one raises UserFileError and adds none."""
        ids = set(self.faults)
        for i, spec in enumerate(faults.faults):   # every check first: a bad file adds nothing
            try:
                self._check_target(spec)
                if spec.id is not None and spec.id in ids:
                    raise ValueError(f"id: a fault {spec.id!r} exists already")
            except ValueError as exc:
                path, _, problem = str(exc).partition(": ")
                raise UserFileError(source, f"faults[{i}].{path}", problem) from None
            ids.add(spec.id or "")
        added = [self.add(spec) for spec in faults.faults]
        if faults.test_event_key is not None:
            self.test_event_key = bytes.fromhex(faults.test_event_key)
        return added

    def clear(self, fault_id: str) -> None:
        """End a fault now (a live recovery); recorded as FaultEnded."""
        fault = self.faults.get(fault_id)
        if fault is None:
            raise KeyError(f"no fault {fault_id!r}; faults: {', '.join(self.faults) or 'none'}")
        tick = self.home.clock.tick
        self.run_due(tick)   # everything up to now first, so nothing is recorded twice
        if fault.cleared is not None and fault.cleared <= tick:
            return
        active = fault.level(tick) > 0
        fault.cleared = tick
        if active:
            self._record(fault, "FaultEnded", len(fault.occurrences()) - 1, tick)
            if fault.spec.kind == "reboot" and fault.spec.device in self.home.devices:
                self._reboot(fault, starting=False)
            if fault.spec.kind == "jammed":
                self._jam(fault.spec.device, tick)
            self._mark_reachable(fault, tick)

    # ---- time --------------------------------------------------------------------------------
    def next_tick(self) -> int | None:
        due = [t for f in self.faults.values() for t, _, _ in f.transitions() if t > self.done_tick]
        return min(due) if due else None

    def run_due(self, tick: int) -> None:
        happening = sorted((t, name, f.id, k) for f in self.faults.values()
                           for t, name, k in f.transitions() if self.done_tick < t <= tick)
        self.done_tick = max(self.done_tick, tick)
        self._apply(happening)

    def _apply(self, happening: list[tuple[int, str, str, int]]) -> None:
        for t, name, fault_id, k in happening:
            fault = self.faults[fault_id]
            self._record(fault, name, k, t)
            if name == "FaultStarted" and fault.spec.kind == "sensor_stale":
                fault.stale = {q: self._true_value(fault.spec.device, q) for q in self._quantities(fault.spec.device)}
            if fault.spec.kind == "reboot" and fault.spec.device in self.home.devices:
                self._reboot(fault, starting=name == "FaultStarted")
            if fault.spec.kind == "jammed":
                self._jam(fault.spec.device, t)
            self._mark_reachable(fault, t)

    def _mark_reachable(self, fault: _Fault, tick: int) -> None:
        """BasicInformation Reachable follows the device's offline and reboot faults (a bridge
        mirrors it into Bridged Device Basic Information, which emits ReachableChanged)."""
        device_id = fault.spec.device
        if fault.spec.kind not in ("offline", "reboot") or device_id not in self.home.devices:
            return
        basic = self.home.devices[device_id].endpoint(0).servers.get(CLUSTER_ID.BasicInformation)
        if basic is not None:
            basic.set("Reachable", not any(self.active(device_id, kind, tick) for kind in ("offline", "reboot")))

    def _lock(self, device_id: str) -> Any:
        if device_id not in self.home.devices:
            return None
        return next((s for s in self.home.devices[device_id].servers() if s.id == CLUSTER_ID.DoorLock), None)

    def _jam(self, device_id: str, tick: int) -> None:
        """The lock's bolt is jammed while any jammed fault on it is in effect."""
        lock = self._lock(device_id)
        if lock is not None:
            lock.set_jammed(bool(self.active(device_id, "jammed", tick)))

    def _record(self, fault: _Fault, name: str, occurrence: int, tick: int) -> None:
        spec = fault.spec
        self.home.events.append({
            "tick": tick, "time": self.home.clock.format(tick), "device": spec.device,
            "endpoint": None, "cluster": None,
            "event": name, "fields": {"fault": fault.id, "kind": spec.kind, "severity": spec.severity,
                                      "occurrence": occurrence}})

    # ---- what is in effect -------------------------------------------------------------------
    def faults_on(self, device_id: str) -> list[_Fault]:
        """The device's faults, a list kept up to date in place (what its link holds)."""
        return self.on_device.setdefault(device_id, [])

    def active(self, device_id: str, kind: str, tick: int | None = None) -> list[tuple[_Fault, float]]:
        """(fault, level) of every fault of `kind` on `device_id` in effect at `tick` (default now)."""
        mine = self.on_device.get(device_id)
        if not mine:
            return []
        tick = self.home.clock.tick if tick is None else tick
        out = []
        for fault in list(mine):   # a copy: nodes ask from the event loop's thread
            if fault.spec.kind == kind:
                level = fault.level(tick)
                if level > 0:
                    out.append((fault, level))
        return out

    def strength(self, device_id: str, kind: str) -> float:
        """The summed severity × level of `kind` on the device now (0: none)."""
        return sum(f.spec.severity * level for f, level in self.active(device_id, kind))

    def unreachable(self, device_id: str) -> str | None:
        """Why the device cannot be reached now (offline, or down in a reboot); None: it can."""
        for kind in ("offline", "reboot"):
            for fault, _ in self.active(device_id, kind):
                return f"device {device_id} is {'offline' if kind == 'offline' else 'rebooting'} (fault {fault.id})"
        return None

    def boots(self, device_id: str) -> int:
        """How many reboots of the device have started so far (a node compares it with its own)."""
        return sum(1 for f in list(self.on_device.get(device_id, ())) if f.spec.kind == "reboot"
                   for t, name, _ in f.transitions() if name == "FaultStarted" and t <= self.done_tick)

    def graceful_reboot(self, device_id: str) -> bool:
        """Whether the device's latest reboot so far logs ShutDown first (a software reset)."""
        started = [(t, f.spec.graceful) for f in list(self.on_device.get(device_id, ()))
                   if f.spec.kind == "reboot"
                   for t, name, _ in f.transitions() if name == "FaultStarted" and t <= self.done_tick]
        return max(started)[1] if started else False

    # ---- device calls: every tool, workflow step and Matter invoke/write passes here ----------
    def intercept(self, device: Any, kind: str, server: Any, name: str) -> bool:
        """Raise MatterError to fail the call; False: accept it without effect (stuck)."""
        reason = self.unreachable(device.id)
        if reason is not None:
            raise MatterError(Status.FAILURE, reason)
        if server.endpoint is None or server.endpoint.id == 0:
            return True   # the root endpoint (commissioning, diagnostics) keeps working: the actuator fails
        for fault, level in self.active(device.id, "command_failure"):
            fault.calls += 1
            draw = random.Random(f"matter-twin fault|{self.home.seed}|{fault.id}|{fault.calls}").random()
            if draw < fault.spec.severity * level:
                raise MatterError(Status[fault.spec.status],
                                  f"{device.id}: {server.name}.{name} failed (fault {fault.id})")
        return not self.active(device.id, "stuck")

    # ---- sensors ---------------------------------------------------------------------------
    def _quantities(self, device_id: str) -> list[str]:
        if device_id.startswith("sensors@"):
            return list(QUANTITIES)
        device = self.home.devices[device_id]
        found = {physics.sensor_quantity(device, s) for s in device.servers()}
        return [q for q in QUANTITIES if q in found]

    def _true_value(self, device_id: str, quantity: str) -> float:
        room = device_id.split("@", 1)[1] if device_id.startswith("sensors@") else self.home.room_of(device_id)
        return float(getattr(self.home.rooms[room], quantity))

    def sense(self, device_id: str, quantity: str, value: float) -> float:
        """What the device's sensor measures of `quantity` whose true value is `value`."""
        if not self.faults:
            return value
        tick = self.home.clock.tick
        for fault in list(self.faults.values()):
            spec = fault.spec
            if spec.device != device_id or spec.kind not in SENSOR_KINDS or spec.quantity not in (None, quantity):
                continue
            level = fault.level(tick)
            if level <= 0:
                continue
            if spec.kind == "sensor_stale":
                value = fault.stale.get(quantity, value)
            elif spec.kind == "sensor_bias":
                value += spec.severity * level
            elif spec.kind == "sensor_drift":
                hours = (tick - fault.occurrence_start(tick)) / (3600 * TICKS_PER_SECOND)
                value += spec.severity * hours * level
            else:
                rng = random.Random(f"matter-twin noise|{self.home.seed}|{fault.id}|{quantity}|{tick}")
                value += rng.gauss(0.0, spec.severity * level)
        return value if math.isfinite(value) else 0.0

    # ---- reboots ---------------------------------------------------------------------------
    def _reboot(self, fault: _Fault, starting: bool) -> None:
        """In the simulation: ShutDown (graceful) at onset; at the end a power-up (stored values
        return, motion stops, StartUp* attributes apply) and BasicInformation StartUp."""
        device = self.home.devices[fault.spec.device]
        basic = device.endpoint(0).servers.get(CLUSTER_ID.BasicInformation)
        if starting:
            if fault.spec.graceful and basic is not None and basic.event_sink is not None:
                # Into the home's log only: a Matter node logs (and sends) its own ShutDown
                # urgently when it goes down (twin/node/manager.py), as the IM's shutdown() does.
                basic.event_sink(basic, Clusters.BasicInformation.Events.ShutDown())
            return
        for server in device.servers():
            if server.persists and server.in_snapshot:
                server.power_up(server.saved_state())
        self.home.mark_dirty(device.id)
        if basic is not None:
            basic.emit_event(Clusters.BasicInformation.Events.StartUp(
                softwareVersion=int(basic.get("SoftwareVersion"))))

    def status(self) -> list[dict[str, Any]]:
        """Every fault with its schedule and whether it is in effect now (for GET /faults)."""
        tick = self.home.clock.tick
        return [{"id": f.id, **f.spec.model_dump(mode="json"), "onset_tick": f.onset, "cleared_tick": f.cleared,
                 "level": round(f.level(tick), 6), "occurrences": [list(o) for o in f.occurrences()]}
                for f in self.faults.values()]

    # ---- snapshots ---------------------------------------------------------------------------
    def state(self) -> dict[str, Any]:
        return {"faults": [f.state() for f in self.faults.values()], "done_tick": self.done_tick,
                "test_event_key": self.test_event_key.hex() if self.test_event_key is not None else None}

    def load_state(self, state: dict[str, Any]) -> None:
        self.faults = {f["id"]: _Fault.from_state(f) for f in state["faults"]}
        for mine in self.on_device.values():   # in place: links hold these lists
            mine.clear()
        for fault in self.faults.values():
            self.faults_on(fault.spec.device).append(fault)
        self.done_tick = state["done_tick"]
        key = state.get("test_event_key")
        self.test_event_key = bytes.fromhex(key) if key else None
