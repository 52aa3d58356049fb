"""Calibration: fit the twin's physics coefficients and device timings to a recorded trace.

Trace (CSV, UTF-8, one header line; lines starting with `#` are comments)::

    time,target,quantity,value
    0,living_room,temperature,27.5
    0,living_room_ac,1/OnOff/OnOff,true
    0,living_room_ac,1/FanControl/PercentCurrent,100
    60,living_room,temperature,27.31
    3600,utility_room_washer,1/OperationalState/CurrentPhase,1

- `time`: seconds since the home file's `start_time` (rows need not be sorted);
- `target`: a room id or a device id of the home file;
- `quantity`: for a room, what was measured: `temperature` (°C), `humidity` (%RH), `pm10`
  (µg/m³) or `illuminance` (lux); for a device, an attribute path
  `endpoint/Cluster/Attribute` (spec names or ids) that took `value` at `time`;
- `value`: a number for a room; JSON for a device attribute (`true`, `42`, `null`, ...).

Device rows are the inputs (what the devices did); room rows are the observations. Rows at
the same time apply device changes first.

Physics: the home is replayed with the trace's device states at their times, from the rooms'
first observed values, and the coefficients of `twin.physics.COEFFICIENTS` the trace
exercises (each room variable's ambient k, and the k of each kind of device that acted on a
measured variable; lights' lux) are fitted by Levenberg-Marquardt least squares on the
observations (in log space, so they stay positive). Coefficients the trace never exercises
keep their values and are reported as such.

Timings: each appliance's cycle phases (OperationalState.CurrentPhase changes while
running) give the seconds each phase lasted; each window covering's full-travel time comes
from its recorded target and current lift positions; each light's own transition time (its
LevelControl OnOffTransitionTime, the fade it uses when a command gives none) is how long its
transitions took, from the RemainingTime it announced to the level's arrival (RemainingTime
0). A calibration run therefore sends lights commands without a TransitionTime (On/Off with
an OnLevel, MoveToLevel with a null one): the trace has the reports, not the commands.

`record(home, actions, duration, every)` makes such a trace from the twin itself, which is
how the tests check that known coefficients come back.
"""
from __future__ import annotations

import csv
import io
import json
import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from clusters.values import to_json
from hardware.recording import Recording, RecordingError
from twin.clock import TICKS_PER_SECOND
from twin.home import Home
from twin.physics import COEFFICIENTS, LIGHT_TYPES, VARIABLES, air_role, measures_room, with_overrides
from twin.schema import HomeSpec, UserFileError

ROOM_QUANTITIES = (*VARIABLES, "illuminance")
HEADER = ["time", "target", "quantity", "value"]


class TraceError(ValueError):
    """A bad trace; the message is one line naming the file and line."""


@dataclass(frozen=True)
class Row:
    time: float
    target: str
    quantity: str
    value: Any
    line: int = 0

    @property
    def is_room(self) -> bool:
        return self.quantity in ROOM_QUANTITIES


@dataclass
class Trace:
    rows: list[Row]
    source: str = "<trace>"

    def observations(self) -> list[Row]:
        return [r for r in self.rows if r.is_room]

    def inputs(self) -> list[Row]:
        return [r for r in self.rows if not r.is_room]


# ---- CSV ------------------------------------------------------------------------------------
def read_csv(path: str | Path) -> Trace:
    source = str(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise TraceError(f"{source}: cannot read: {getattr(exc, 'strerror', None) or exc}") from None
    return parse_csv(text, source)


def read_recording(path: str | Path, run: int | None = None) -> Trace:
    """A trace from a lab session's SQLite recording (hardware/recording.py), its last run
    unless `run` names one: `reports` are the device inputs (the real devices' where there
    are any, else the twin's), `samples` the room observations; time is the twin's tick."""
    source = str(path)
    try:
        recording = Recording(path)
        try:
            the_run = recording.run(run)
            reports = recording.rows("reports", the_run["run"])
            samples = recording.rows("samples", the_run["run"])
        finally:
            recording.close()
    except (RecordingError, OSError) as exc:
        raise TraceError(str(exc)) from None
    except Exception as exc:   # noqa: BLE001 - sqlite3 says what is wrong with the file
        raise TraceError(f"{source}: not a lab recording ({exc})") from None
    real = [r for r in reports if r.get("source") == "real"]
    rows = [Row(r["tick"] / TICKS_PER_SECOND, r["device"], f"{r['endpoint']}/{r['cluster']}/{r['attribute']}",
                r["value"], i) for i, r in enumerate(real or reports) if r.get("tick") is not None]
    for i, r in enumerate(samples):
        for quantity in ROOM_QUANTITIES:
            if r.get(quantity) is not None and r.get("tick") is not None:
                rows.append(Row(r["tick"] / TICKS_PER_SECOND, r["room"], quantity, float(r[quantity]), i))
    rows.sort(key=lambda row: (row.time, row.is_room))
    return Trace(rows, source)


def read_trace(path: str | Path) -> Trace:
    """A CSV trace, or a lab SQLite recording (by its first bytes)."""
    try:
        with open(path, "rb") as f:
            head = f.read(16)
    except OSError as exc:
        raise TraceError(f"{path}: cannot read: {exc.strerror}") from None
    return read_recording(path) if head.startswith(b"SQLite format 3") else read_csv(path)


def parse_csv(text: str, source: str = "<trace>") -> Trace:
    lines = [(i + 1, line) for i, line in enumerate(text.splitlines()) if line.strip() and not line.startswith("#")]
    if not lines:
        raise TraceError(f"{source}: empty trace; expected the header {','.join(HEADER)}")
    header_line, header = lines[0]
    if [h.strip() for h in next(csv.reader([header]))] != HEADER:
        raise TraceError(f"{source}:{header_line}: header must be {','.join(HEADER)}")
    rows = []
    for number, line in lines[1:]:
        fields = next(csv.reader([line]))
        if len(fields) != 4:
            raise TraceError(f"{source}:{number}: expected 4 fields ({','.join(HEADER)}), got {len(fields)}")
        time_text, target, quantity, value_text = (f.strip() for f in fields)
        try:
            time = float(time_text)
        except ValueError:
            raise TraceError(f"{source}:{number}: time {time_text!r} is not a number of seconds") from None
        if not math.isfinite(time) or time < 0:
            raise TraceError(f"{source}:{number}: time {time_text!r} must be >= 0")
        if quantity in ROOM_QUANTITIES:
            try:
                value: Any = float(value_text)
            except ValueError:
                raise TraceError(f"{source}:{number}: {quantity} {value_text!r} is not a number") from None
            if not math.isfinite(value):
                raise TraceError(f"{source}:{number}: {quantity} {value_text!r} is not finite")
        else:
            if len(quantity.split("/")) != 3:
                raise TraceError(f"{source}:{number}: quantity {quantity!r} is neither a room quantity "
                                 f"({', '.join(ROOM_QUANTITIES)}) nor endpoint/Cluster/Attribute")
            try:
                value = json.loads(value_text)
            except json.JSONDecodeError:
                raise TraceError(f"{source}:{number}: value {value_text!r} is not JSON") from None
        rows.append(Row(time, target, quantity, value, number))
    rows.sort(key=lambda r: (r.time, r.is_room))
    return Trace(rows, source)


def write_csv(trace: Trace) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(HEADER)
    for r in trace.rows:
        value = repr(r.value) if r.is_room else json.dumps(r.value)
        writer.writerow([f"{r.time:g}" if r.time == int(r.time) else repr(r.time), r.target, r.quantity, value])
    return out.getvalue()


# ---- recording the twin ---------------------------------------------------------------------
def record(home: Home, actions: Iterable[tuple[float, Callable[[Home], Any]]], duration: float,
           every: float = 60.0) -> Trace:
    """Run `home` for `duration` virtual seconds, doing each action at its time, and record
    every device attribute change and every room's quantities each `every` seconds."""
    rows: list[Row] = []
    start = home.clock.tick

    def now() -> float:
        return (home.clock.tick - start) / TICKS_PER_SECOND

    def on_change(server: Any, name: str) -> None:
        device = server.endpoint.device
        rows.append(Row(now(), device.id, f"{server.endpoint.id}/{server.name}/{name}", to_json(server.get(name))))

    servers = [s for d in home.devices.values() for ep in d.endpoints.values() if ep.id != 0
               for s in ep.servers.values()]
    for server in servers:   # the starting state, then every change
        server.listeners.append(on_change)
        for name in server.attributes:
            rows.append(Row(0.0, server.endpoint.device.id, f"{server.endpoint.id}/{server.name}/{name}",
                            to_json(server.get(name))))
    pending = sorted(actions, key=lambda a: a[0])
    samples = [i * every for i in range(int(duration // every) + 1)]
    try:
        for t in sorted(set(samples) | {a[0] for a in pending}):
            home.advance(t - now())
            while pending and pending[0][0] <= t:
                pending.pop(0)[1](home)
            if t in samples:
                for room in home.rooms.values():
                    for quantity, value in room.state().items():
                        rows.append(Row(t, room.id, quantity, value))
    finally:
        for server in servers:
            server.listeners.remove(on_change)
    rows.sort(key=lambda r: (r.time, r.is_room))
    return Trace(rows)


# ---- replay ---------------------------------------------------------------------------------
def _initial_spec(spec: HomeSpec, trace: Trace) -> HomeSpec:
    """The home file with each room starting at its first observation at time 0."""
    data = spec.model_dump()
    rooms = {r["id"]: r for r in data["rooms"]}
    for row in trace.observations():
        if row.time > 0:
            break
        if row.target in rooms and row.quantity in VARIABLES:
            rooms[row.target][row.quantity] = row.value
    return HomeSpec.model_validate(data, context={"products": list(spec.products)})


def check_targets(spec: HomeSpec, trace: Trace) -> None:
    rooms = {r.id for r in spec.rooms}
    devices = {d.id for r in spec.rooms for d in r.devices}
    for row in trace.rows:
        known = rooms if row.is_room else devices
        if row.target not in known:
            kind = "room" if row.is_room else "device"
            raise TraceError(f"{trace.source}:{row.line}: no {kind} {row.target!r} in the home; "
                             f"{kind}s: {', '.join(sorted(known))}")


def replay(spec: HomeSpec, trace: Trace, overrides: dict[str, Any], source: str = "<home>") -> list[float]:
    """The home's value of every observation of the trace, under these coefficients."""
    data = spec.model_copy(update={"physics": overrides})
    home = Home.from_spec(data, source=source)
    out = []
    for row in trace.rows:
        target_tick = round(row.time * TICKS_PER_SECOND)
        if target_tick > home.clock.tick:
            home.advance((target_tick - home.clock.tick) / TICKS_PER_SECOND)
        if row.is_room:
            out.append(getattr(home.rooms[row.target], row.quantity))
        else:
            _apply(home, row, trace.source)
    return out


def _apply(home: Home, row: Row, source: str) -> None:
    ep, cluster, attribute = row.quantity.split("/")
    device = home.device(row.target)
    try:
        server = device.endpoint(int(ep)).server(cluster)
        name = server.resolve_attribute(attribute)
        value = server._coerce(name, row.value)
    except Exception as exc:   # noqa: BLE001 - any bad path or value is the trace's problem
        raise TraceError(f"{source}:{row.line}: {row.target} {row.quantity}: {exc}") from None
    server.set(name, value)


# ---- fitting --------------------------------------------------------------------------------
#: Coefficient paths, the room quantity they move, and the device kinds that exercise them.
def _candidates(spec: HomeSpec, trace: Trace) -> list[tuple[str, ...]]:
    observed = {r.quantity for r in trace.observations()}
    home = Home.from_spec(spec)
    out: list[tuple[str, ...]] = [("ambient_k", v) for v in VARIABLES if v in observed]
    kinds = set()   # what acts on rooms, found as the physics finds it (clones included)
    for device in home.devices.values():
        for ep in device.endpoints.values():
            if 0x0201 in ep.servers and measures_room(device):
                kinds.add("ac" if 0x0202 in ep.servers else "heat_pump")
            role = air_role(device, ep)
            if role is not None:
                kinds.add(role)
            onoff = ep.servers.get(0x0006)
            kinds.update(LIGHT_TYPES[t] for t, _ in ep.device_types if t in LIGHT_TYPES and onoff is not None)
    if "temperature" in observed:
        out += [(k,) for k, kind in (("ac_k_full_fan", "ac"), ("heat_pump_k", "heat_pump")) if kind in kinds]
    for kind, var in (("humidifier", "humidity"), ("dehumidifier", "humidity"), ("air_purifier", "pm10")):
        if kind in kinds and var in observed:
            out.append((kind, "k_full_fan"))
    if "illuminance" in observed:
        out += [("light_lux", kind) for kind in COEFFICIENTS["light_lux"] if kind in kinds]
    return out


def _get(table: dict[str, Any], path: tuple[str, ...]) -> float:
    value: Any = table
    for part in path:
        value = value[part]
    return float(value)


def _overrides(base: dict[str, Any], paths: list[tuple[str, ...]], values: list[float]) -> dict[str, Any]:
    out = json.loads(json.dumps(base))
    for path, value in zip(paths, values):
        if len(path) == 1:
            out[path[0]] = value
        else:
            out.setdefault(path[0], {})[path[1]] = value
    return out


@dataclass
class Fit:
    coefficients: dict[str, float]             # "ac_k_full_fan", "ambient_k.temperature" -> fitted
    previous: dict[str, float]
    unexercised: list[str]
    rms_before: dict[str, float]
    rms_after: dict[str, float]
    observations: dict[str, int]
    timings: dict[str, Any] = field(default_factory=dict)
    travel: dict[str, Any] = field(default_factory=dict)
    #: device -> {"<ep>/LevelControl/OnOffTransitionTime": tenths of a second}
    transitions: dict[str, Any] = field(default_factory=dict)
    overrides: dict[str, Any] = field(default_factory=dict)


def _rms(predicted: list[float], observed: list[Row]) -> tuple[dict[str, float], dict[str, int]]:
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    for p, row in zip(predicted, observed):
        sums[row.quantity] = sums.get(row.quantity, 0.0) + (p - row.value) ** 2
        counts[row.quantity] = counts.get(row.quantity, 0) + 1
    return {q: math.sqrt(sums[q] / counts[q]) for q in sums}, counts


def check_trace(spec: HomeSpec, trace: Trace, source: str = "<home>") -> None:
    """Raise TraceError (one line) for anything in the trace the home cannot replay."""
    check_targets(spec, trace)
    if not trace.observations():
        raise TraceError(f"{trace.source}: no room observations ({', '.join(ROOM_QUANTITIES)}) to fit")
    replay(_initial_spec(spec, trace), trace, dict(spec.physics), source)


def fit(spec: HomeSpec, trace: Trace, source: str = "<home>", iterations: int = 30,
        progress: Callable[[int, float], None] | None = None) -> Fit:
    """Fit the exercised coefficients to the trace's observations (see the module docstring)."""
    check_targets(spec, trace)
    if not trace.observations():
        raise TraceError(f"{trace.source}: no room observations ({', '.join(ROOM_QUANTITIES)}) to fit")
    spec = _initial_spec(spec, trace)
    observed = trace.observations()
    base = dict(spec.physics)
    table = with_overrides(base)
    paths = _candidates(spec, trace)
    start = [_get(table, p) for p in paths]
    scale = {}
    for q in {r.quantity for r in observed}:
        values = [r.value for r in observed if r.quantity == q]
        spread = max(values) - min(values)
        scale[q] = spread if spread > 0 else max(1.0, abs(values[0]))

    def residuals(logs: list[float]) -> list[float]:
        predicted = replay(spec, trace, _overrides(base, paths, [math.exp(v) for v in logs]), source)
        return [(p - r.value) / scale[r.quantity] for p, r in zip(predicted, observed)]

    before, counts = _rms(replay(spec, trace, base, source), observed)
    logs = [math.log(v) if v > 0 else math.log(1e-9) for v in start]
    # Coefficients whose change moves no observation are not exercised by this trace.
    r0 = residuals(logs)
    columns = _jacobian(residuals, logs, r0)
    keep = [i for i, col in enumerate(columns) if math.sqrt(sum(c * c for c in col)) > 1e-9]
    unexercised = [".".join(paths[i]) for i in range(len(paths)) if i not in keep]
    if keep:
        def sub(ls: list[float]) -> list[float]:
            full = list(logs)
            for i, v in zip(keep, ls):
                full[i] = v
            return residuals(full)
        for i, v in zip(keep, _levenberg_marquardt(sub, [logs[i] for i in keep], iterations, progress)):
            logs[i] = v
    paths = [paths[i] for i in keep]
    logs = [logs[i] for i in keep]
    fitted = {".".join(p): math.exp(v) for p, v in zip(paths, logs)}
    overrides = _overrides(base, paths, [math.exp(v) for v in logs])
    after, _ = _rms(replay(spec, trace, overrides, source), observed)
    return Fit(fitted, {".".join(p): _get(table, p) for p in paths}, unexercised, before, after, counts,
               timings=fit_timings(trace), travel=fit_travel(trace), transitions=fit_transitions(trace),
               overrides=overrides)


def _jacobian(fn: Callable[[list[float]], list[float]], x: list[float], r0: list[float],
              step: float = 1e-4) -> list[list[float]]:
    columns = []
    for i in range(len(x)):
        shifted = list(x)
        shifted[i] += step
        r = fn(shifted)
        columns.append([(a - b) / step for a, b in zip(r, r0)])
    return columns


def _solve(a: list[list[float]], b: list[float]) -> list[float]:
    """Gaussian elimination with partial pivoting (the systems here are a few unknowns)."""
    n = len(b)
    m = [row[:] + [b[i]] for i, row in enumerate(a)]
    for col in range(n):
        pivot = max(range(col, n), key=lambda r: abs(m[r][col]))
        m[col], m[pivot] = m[pivot], m[col]
        if abs(m[col][col]) < 1e-300:
            raise ZeroDivisionError("singular")
        for r in range(col + 1, n):
            f = m[r][col] / m[col][col]
            for c in range(col, n + 1):
                m[r][c] -= f * m[col][c]
    x = [0.0] * n
    for r in range(n - 1, -1, -1):
        x[r] = (m[r][n] - sum(m[r][c] * x[c] for c in range(r + 1, n))) / m[r][r]
    return x


def _levenberg_marquardt(fn: Callable[[list[float]], list[float]], x: list[float], iterations: int,
                         progress: Callable[[int, float], None] | None) -> list[float]:
    r = fn(x)
    cost = sum(v * v for v in r)
    damping = 1e-3
    for it in range(iterations):
        columns = _jacobian(fn, x, r)
        jtj = [[sum(a * b for a, b in zip(ci, cj)) for cj in columns] for ci in columns]
        jtr = [sum(a * b for a, b in zip(ci, r)) for ci in columns]
        improved = False
        for _ in range(10):
            a = [[jtj[i][j] * (1 + damping if i == j else 1) for j in range(len(x))] for i in range(len(x))]
            try:
                delta = _solve(a, [-v for v in jtr])
            except ZeroDivisionError:
                damping *= 10
                continue
            candidate = [xi + di for xi, di in zip(x, delta)]
            r_new = fn(candidate)
            cost_new = sum(v * v for v in r_new)
            if cost_new < cost:
                step = max(abs(d) for d in delta) if delta else 0.0
                x, r, cost = candidate, r_new, cost_new
                damping = max(damping / 10, 1e-12)
                improved = True
                break
            damping *= 10
        if progress is not None:
            progress(it + 1, cost)
        if not improved or step < 1e-10:
            break
    return x


# ---- timings --------------------------------------------------------------------------------
#: Device types whose builders take `cycles` (mode label -> [[phase, seconds], ...]).
CYCLE_TYPES = ("dishwasher", "laundry_washer", "laundry_dryer")


def fit_timings(trace: Trace) -> dict[str, dict[str, list[list[Any]]]]:
    """Per appliance, per mode: the seconds each cycle phase lasted (the median over the
    trace's runs), from OperationalState.CurrentPhase changes while running. A phase cut
    short by a pause, a stop or an error is not counted."""
    by_device: dict[str, list[Row]] = {}
    for row in trace.inputs():
        by_device.setdefault(row.target, []).append(row)
    out: dict[str, dict[str, list[list[Any]]]] = {}
    for device, rows in by_device.items():
        cycles = _cycles(rows)
        if cycles:
            out[device] = cycles
    return out


def fit_travel(trace: Trace) -> dict[str, dict[str, float]]:
    """Per window covering: seconds a full lift / tilt travel takes (`lift_travel_s`,
    `tilt_travel_s`), the median over movements that arrived (a stopped one does not count)."""
    out: dict[str, dict[str, float]] = {}
    by_device: dict[str, list[Row]] = {}
    for row in trace.inputs():
        if "/WindowCovering/" in row.quantity:
            by_device.setdefault(row.target, []).append(row)
    for device, rows in by_device.items():
        for axis in ("Lift", "Tilt"):
            moving: tuple[float, int, int] | None = None     # (start time, start, target)
            position: int | None = None
            speeds = []
            for row in rows:
                name = row.quantity.rsplit("/", 1)[-1]
                if name == f"CurrentPosition{axis}Percent100ths" and isinstance(row.value, int):
                    if moving is not None and row.value == moving[2] and row.time > moving[0]:
                        speeds.append((row.time - moving[0]) * 10000 / abs(moving[2] - moving[1]))
                        moving = None
                    position = row.value
                elif name == f"TargetPosition{axis}Percent100ths" and isinstance(row.value, int):
                    moving = (row.time, position, row.value) if position is not None and row.value != position \
                        else None
            if speeds:
                out.setdefault(device, {})[f"{axis.lower()}_travel_s"] = round(_median(speeds), 1)
    return out


def fit_transitions(trace: Trace) -> dict[str, dict[str, int]]:
    """Per light (any device whose LevelControl reports RemainingTime): its transition time in
    tenths of a second, the median over transitions that arrived, as the attribute that sets
    it (`<endpoint>/LevelControl/OnOffTransitionTime`). A transition runs from a RemainingTime
    report above 0 to the next report of 0; one a new command restarted (RemainingTime grew
    past what was left) is not counted."""
    by_light: dict[tuple[str, str], list[Row]] = {}
    for row in trace.inputs():
        endpoint, _, rest = row.quantity.partition("/")
        if rest in ("LevelControl/RemainingTime", "8/1"):   # by name or by ids
            by_light.setdefault((row.target, endpoint), []).append(row)
    out: dict[str, dict[str, int]] = {}
    for (device, endpoint), rows in by_light.items():
        durations = []
        started: tuple[float, int] | None = None     # (time, tenths announced then)
        for row in rows:
            remaining = row.value
            if not isinstance(remaining, int) or isinstance(remaining, bool):
                continue
            if remaining == 0:
                if started is not None and row.time > started[0]:
                    durations.append(row.time - started[0])
                started = None
            elif started is None or remaining > started[1] - (row.time - started[0]) * TICKS_PER_SECOND + 1:
                started = (row.time, remaining)    # a transition begins (or a new one replaces it)
        if durations:
            tenths = round(_median(durations) * TICKS_PER_SECOND)
            out[device] = {f"{endpoint}/LevelControl/OnOffTransitionTime": tenths}
    return out


def _cycles(rows: list[Row]) -> dict[str, list[list[Any]]]:
    labels: dict[int, str] = {}
    phase_names: list[str] = []
    mode: int | None = None
    durations: dict[tuple[int | None, str], list[float]] = {}
    order: dict[int | None, list[str]] = {}
    current: tuple[int, float] | None = None
    state: Any = None          # OperationalState as last reported
    phase: Any = None          # CurrentPhase as last reported (an idle device may show 0 too)

    def close(until: float) -> None:
        if current is not None and 0 <= current[0] < len(phase_names):
            name = phase_names[current[0]]
            durations.setdefault((mode, name), []).append(until - current[1])
            names = order.setdefault(mode, [])
            if name not in names:
                names.append(name)

    for row in rows:
        attribute = row.quantity.rsplit("/", 1)[-1]
        if attribute == "SupportedModes" and isinstance(row.value, list):
            labels = {m.get("mode"): m.get("label") for m in row.value if isinstance(m, dict)}
        elif attribute == "CurrentMode" and isinstance(row.value, int) and "Mode/" in row.quantity:
            mode = row.value
        elif attribute == "PhaseList":
            phase_names = [str(p) for p in row.value] if isinstance(row.value, list) else []
        elif attribute == "OperationalState":
            if row.value == 1:
                if state not in (1, 2, 3):   # a run starts (not a resume): its phase counts from now
                    current = (phase, row.time) if isinstance(phase, int) else None
            else:
                # Stopped (0) ends a completed run's last phase; paused or error cut it short.
                if row.value == 0:
                    close(row.time)
                current = None
            state = row.value
        elif attribute == "CurrentPhase":
            if state == 1:   # phases count only while running
                close(row.time)
                current = (row.value, row.time) if isinstance(row.value, int) else None
            phase = row.value
    out: dict[str, list[list[Any]]] = {}
    for m, names in order.items():
        label = labels.get(m, str(m))
        out[label] = [[name, int(round(_median(durations[(m, name)])))] for name in names]
    return out


def _median(values: list[float]) -> float:
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


# ---- the home file --------------------------------------------------------------------------
def write_home(home_path: str | Path, overrides: dict[str, Any], cycles: dict[str, Any] | None = None,
               output: str | Path | None = None, travel: dict[str, Any] | None = None,
               transitions: dict[str, Any] | None = None) -> Path:
    """Write `physics:`, each appliance's `options.cycles`, each window covering's
    `options.lift_travel_s` / `tilt_travel_s` and each light's OnOffTransitionTime (under
    its `attributes`) into the home file (YAML or JSON), keeping everything else as written
    (YAML comments are not kept)."""
    import yaml  # noqa: PLC0415
    source = Path(home_path)
    text = source.read_text(encoding="utf-8")
    is_json = source.suffix.lower() == ".json"
    data = json.loads(text) if is_json else yaml.safe_load(text)
    if not isinstance(data, dict):
        raise UserFileError(str(source), "(top level)", "not a home file")
    data["physics"] = overrides
    for room in data.get("rooms") or []:
        for device in room.get("devices") or []:
            if device.get("id") in (transitions or {}):
                attributes = device.get("attributes") or {}
                attributes.update(transitions[device["id"]])  # type: ignore[index]
                device["attributes"] = attributes
            if device.get("id") in (travel or {}) and device.get("type") == "window_covering":
                device.setdefault("options", {}).update(travel[device["id"]])  # type: ignore[index]
            if device.get("id") in (cycles or {}) and device.get("type") in CYCLE_TYPES:
                options = device.setdefault("options", {})
                merged = dict(options.get("cycles") or {})
                merged.update(cycles[device["id"]])  # type: ignore[index]
                options["cycles"] = merged
    target = Path(output) if output is not None else source
    body = json.dumps(data, indent=2, default=str) + "\n" if is_json else \
        yaml.safe_dump(data, sort_keys=False, allow_unicode=True, width=100)
    target.write_text(body, encoding="utf-8")
    return target
