"""Import SimuHome's released episode files into our episodes (`twin bench import simuhome`).

SimuHome's episodes are the users' own copy (its licence forbids redistributing them); this
module only reads their format: `meta` (query_type qt1..qt4-3, case, seed), `query`,
`initial_home_config` (base_time, rooms with their room `state` and devices, each device a
flat map "<endpoint>.<Cluster>.<Attribute>" -> value), and `eval` (`required_actions` and
`goals`). Where SimuHome and the Matter spec or our twin differ, the mapping is here, once,
and written down in docs/simuhome.md:

- Endpoints. Our compositions follow the device library; SimuHome numbers some endpoints
  otherwise (the heat pump's Thermostat on 4 and its meters on 2 and 3, the fridge/freezer
  cabinet clusters on 1, the humidifier's humidity sensor on 2). `ENDPOINTS` maps its ids
  to ours by device type and cluster; goals and initial values are mapped on import, and
  the tools accept SimuHome's ids for imported episodes (`our_endpoint`).
- Names: SimuHome's `rvc` and `window_covering_controller` types, and `RTCCMode`,
  `RVC...` cluster names, are our `robot_vacuum_cleaner`, `window_covering` and the spec's
  cluster names.
- Initial state: attributes are set as initial values where the cluster allows it; modes
  come from SimuHome's SupportedModes (its mode ids), a running cycle is started by a setup
  call timed so that CountdownTime matches, a paused robot is started and paused, and a
  room's illuminance is its lights plus `indoor_lux` (SimuHome's blinds do not enter it).
  Whatever still differs is reported (`Imported.differences`).
- Goals: QT4 goals keep SimuHome's window (±30 s) and its "still holds at t" goals
  (tolerance 0); QT3-IF goals are the feasible part, which must be done; TemperatureSetpoint
  goals stand (the agent reaches them with SetTemperature, the spec's way; the write
  SimuHome allows answers UNSUPPORTED_WRITE here).
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from clusters.base import TICKS_PER_SECOND
from clusters.device import DEVICE_TYPES
from clusters.devices import create_device
from clusters.modes import ModeBaseServer, RvcCleanModeServer
from clusters.status import MatterError
from clusters.values import to_json
from scenarios.simuhome.actions import ACTUATORS, THERMOSTAT_ENDPOINT, strongest, write
from scenarios.simuhome.evaluate import EpisodeError, replay
from scenarios.simuhome.generate import type_words
from scenarios.simuhome.names import TYPE_KEYS, map_path
from scenarios.simuhome.schema import (
    DeviceGoal,
    Episode,
    Infeasibility,
    InitialState,
    RoomGoal,
    SetupCall,
    TimedGoal,
    ToolCall,
)
from twin.home import Home, InitialAttributeError
from twin.schema import DeviceSpec, HomeSpec, RoomSpec, UserFileError, first_problem

#: Attributes never imported: identity and structure are the twin's own (BasicInformation,
#: Descriptor, global attributes), and values the twin derives from the room or from other
#: attributes (a fan's PercentCurrent follows PercentSetting, a thermostat reads the room).
SKIPPED_CLUSTERS = frozenset({"BasicInformation", "Descriptor"})
SKIPPED_ATTRIBUTES = frozenset({"ClusterRevision", "FeatureMap", "AttributeList", "AcceptedCommandList",
                                "GeneratedCommandList", "LocalTemperature",
                                "CurrentPhase", "CountdownTime", "PhaseList", "OperationalStateList",
                                "OperationalError", "CurrentPositionLiftPercent100ths", "RemainingTime",
                                "MinFrequency", "MaxFrequency"})
#: Meters read our model's power (the heat pump draws 1.8 kW while on); SimuHome's are fixed
#: numbers. Neither set on import nor counted as differences.
METERED = frozenset({"ElectricalPowerMeasurement", "ElectricalEnergyMeasurement", "DeviceEnergyManagement"})
#: Room sensor attributes read from the room (the humidifier's RelativeHumidityMeasurement).
ROOM_MEASURED = frozenset({("RelativeHumidityMeasurement", "MeasuredValue")})
#: SimuHome's AC only cools and its heat pump only heats (its generator's premise: every
#: goal and QT2-IF episode assumes it): imported ones are built so, and the attributes of the
#: side they lack (and the sequence, which follows the features) are not imported.
ONE_WAY = {"air_conditioner": ({"heating": False}, "Heat"), "heat_pump": ({"cooling": False}, "Cool")}
RVC_IDLE_TAG, RVC_CLEANING_TAG = 0x4000, 0x4001  # RvcRunMode ModeTags Idle, Cleaning
QUERY_TYPES = {"qt1": "QT1", "qt2": "QT2", "qt3": "QT3", "qt4-1": "QT4-1", "qt4-2": "QT4-2", "qt4-3": "QT4-3"}
TIME_FORMAT = "%Y-%m-%d %H:%M:%S"


class ImportError_(Exception):
    """One SimuHome file that cannot be imported; str() is one line."""


# ---- SimuHome's file format (only what we read; the rest is ignored) ----------------------
class _Loose(BaseModel):
    model_config = ConfigDict(extra="ignore")


class _Meta(BaseModel):
    model_config = ConfigDict(extra="allow")  # infeasible_family, scenario, ... are read as extras
    seed: int
    query_type: str
    case: str


class _Device(_Loose):
    device_id: str
    device_type: str
    attributes: dict[str, Any] = Field(default_factory=dict)


class _Room(_Loose):
    devices: list[_Device] = Field(default_factory=list)
    state: dict[str, float]


class _Home(_Loose):
    base_time: str
    rooms: dict[str, _Room]


class _Action(_Loose):
    tool: str
    params: dict[str, Any] = Field(default_factory=dict)


class _Eval(_Loose):
    required_actions: list[_Action] = Field(default_factory=list)
    goals: list[dict[str, Any]] = Field(default_factory=list)


class _File(_Loose):
    meta: _Meta
    query: str = Field(min_length=1)
    initial_home_config: _Home
    eval: _Eval
    temporal_conflict: dict[str, Any] | None = None


# ---- the result --------------------------------------------------------------------------
@dataclass
class Imported:
    episode: Episode
    #: Initial values the twin could not take as SimuHome gave them: "device key: theirs -> ours".
    differences: list[str] = field(default_factory=list)


def import_file(path: Path) -> Imported:
    """One SimuHome episode file as our episode; raises ImportError_ with one line."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportError_(f"{path}: cannot read: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ImportError_(f"{path}: line {exc.lineno} column {exc.colno}: JSON syntax error: {exc.msg}") from None
    try:
        src = _File.model_validate(data)
    except ValidationError as exc:
        where, problem = first_problem(exc, "(episode)")
        raise ImportError_(f"{path}: {where}: {problem}") from None
    try:
        return _convert(src, path.stem)
    except (UserFileError, EpisodeError) as exc:
        raise ImportError_(f"{path}: {exc}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ImportError_(f"{path}: {exc}") from None


def _convert(src: _File, stem: str) -> Imported:
    qt = QUERY_TYPES.get(src.meta.query_type.lower())
    if qt is None:
        raise ValueError(f"meta.query_type: {src.meta.query_type!r} is not one of {', '.join(QUERY_TYPES)}")
    if src.meta.case not in ("feasible", "infeasible"):
        raise ValueError(f"meta.case: {src.meta.case!r} is not feasible or infeasible")
    feasible = src.meta.case == "feasible"
    base = datetime.strptime(src.initial_home_config.base_time, TIME_FORMAT)
    types = {d.device_id: TYPE_KEYS.get(d.device_type, d.device_type)
             for r in src.initial_home_config.rooms.values() for d in r.devices}
    renumbered: dict[tuple[str, str], dict[int, int]] = {}
    initial, differences = _initial_state(src.initial_home_config, base, types, renumbered)
    home = replay(initial)
    goals, feasible_part = _goals(src, feasible, types, home, renumbered)
    initial = _long_enough(initial, goals, home)
    episode = Episode(
        id=f"simuhome-{stem}", category=f"{qt}-{'F' if feasible else 'IF'}", query_type=qt,  # type: ignore[arg-type]
        feasible=feasible, query=src.query, initial=initial, source="simuhome",
        goals=goals, feasible_part=feasible_part,
        required_actions=[ToolCall(tool=a.tool, args={k.replace("_", "."): v for k, v in a.params.items()})
                          for a in src.eval.required_actions],
        infeasibility=None if feasible else _infeasibility(src, qt, types),
        # SimuHome reads device goals when the agent finishes and room directions at that tick
        # too; with the twin's clock stopped while an agent works, "a minute later" is ours.
        settle_seconds=60)
    differences += _differences(src.initial_home_config, types, home, renumbered)
    return Imported(episode, differences)


# ---- initial state -------------------------------------------------------------------------
def _initial_state(cfg: _Home, base: datetime, types: dict[str, str],
                   renumbered: dict[tuple[str, str], dict[int, int]]) -> tuple[InitialState, list[str]]:
    rooms: list[RoomSpec] = []
    runs: list[tuple[str, str, int, int]] = []  # (device, cluster, elapsed s, remaining s)
    extra_calls: list[tuple[str, list[dict[str, Any]]]] = []  # (device, calls at start)
    differences: list[str] = []
    for room_id, room in cfg.rooms.items():
        devices = []
        for dev in room.devices:
            type_key = types[dev.device_id]
            attributes, options, run, calls = _device_state(dev, type_key, renumbered)
            spec = _fit(dev.device_id, type_key, options, attributes, differences)
            devices.append(spec)
            if run is not None:
                runs.append((dev.device_id, *run))
            if calls:
                extra_calls.append((dev.device_id, calls))
        state = room.state
        rooms.append(RoomSpec(id=room_id, temperature=state["temperature"] / 100,
                              humidity=state["humidity"] / 100, pm10=state.get("pm10", 0.0),
                              daylight_lux=0.0, devices=devices))
    # Warm-up: every running cycle starts so that its CountdownTime is SimuHome's at base time.
    warmup = max([elapsed for _, _, elapsed, _ in runs] + [1])
    setup: list[SetupCall] = []
    for device_id, cluster, elapsed, _ in sorted(runs, key=lambda r: -r[2]):
        setup.append(SetupCall(tool="execute_command", at_seconds=warmup - elapsed,
                               args={"device.id": device_id, "endpoint.id": 1, "cluster.id": cluster,
                                     "command.id": "Start", "args": {}}))
    for device_id, calls in extra_calls:
        for call in calls:
            setup.append(SetupCall(tool="execute_command", at_seconds=warmup - 1,
                                   args={"device.id": device_id, "endpoint.id": 1, **call}))
    setup.sort(key=lambda c: c.at_seconds)
    spec = HomeSpec(name="simuhome", start_time=base - timedelta(seconds=warmup), rooms=rooms)
    # The warm-up starts cycles in the past; the agent still starts on SimuHome's room values.
    at_start = {room_id: {"temperature": room.state["temperature"] / 100, "humidity": room.state["humidity"] / 100,
                          "pm10": room.state.get("pm10", 0.0)} for room_id, room in cfg.rooms.items()}
    initial = InitialState(home=spec, setup=setup, start_time=base, rooms_at_start=at_start)
    # SimuHome's illuminance is a room baseline plus its lights; blinds do not enter. So no
    # daylight here, and the baseline is light from sources we do not model (indoor_lux).
    probe = replay(initial)
    for spec_room, (room_id, room) in zip(spec.rooms, cfg.rooms.items()):
        lights = probe.rooms[room_id].illuminance
        wanted = room.state.get("illuminance", 0.0)
        spec_room.indoor_lux = max(wanted - lights, 0.0)
        if wanted < lights - 0.5:
            differences.append(f"{room_id} illuminance: {wanted} -> {lights} (our lights alone give more)")
    return InitialState.model_validate(initial.model_dump()), differences


def _device_state(dev: _Device, type_key: str, renumbered: dict[tuple[str, str], dict[int, int]]):
    """(attributes, options, running cycle, calls) for one SimuHome device. Mode ids beyond
    the spec's uint8 are renumbered; `renumbered` gets (device, cluster) -> {theirs: ours}."""
    attributes: dict[str, Any] = {}
    options: dict[str, Any] = {}
    run: tuple[str, int, int] | None = None
    calls: list[dict[str, Any]] = []
    values = dev.attributes
    for key, value in values.items():
        endpoint, cluster, attribute = map_path(type_key, key)
        if attribute == "SupportedModes":
            option = {"RvcRunMode": "run_modes", "RvcCleanMode": "clean_modes"}.get(cluster, "modes")
            modes = [_mode(m) for m in value]
            ids = _renumber([m["mode"] for m in modes])
            if ids:
                renumbered[(dev.device_id, cluster)] = ids
                modes = [{**m, "mode": ids.get(m["mode"], m["mode"])} for m in modes]
            options[option] = modes
    if "1.LevelControl.MinFrequency" in values and type_key in ("dimmable_light", "tv"):
        options["level_frequency"] = [values["1.LevelControl.MinFrequency"], values.get("1.LevelControl.MaxFrequency")]
    if type_key == "laundry_washer" and "1.TemperatureControl.TemperatureSetpoint" in values:
        options["temperature_setpoint"] = True
    if type_key == "tv" and {"1.LevelControl.RemainingTime", "1.LevelControl.StartUpCurrentLevel"} & set(values):
        options["level_startup"] = True
    if type_key in ONE_WAY:
        options.update(ONE_WAY[type_key][0])
    if type_key == "robot_vacuum_cleaner":   # SimuHome's robot cleans as long as its cycle lasts (no battery)
        options["battery_drain"] = 0.0
    for key, value in values.items():
        endpoint, cluster, attribute = map_path(type_key, key)
        if cluster in SKIPPED_CLUSTERS | METERED or attribute in SKIPPED_ATTRIBUTES or endpoint == 0 \
                or (cluster, attribute) in ROOM_MEASURED or attribute == "SupportedModes" \
                or _one_way_lacks(type_key, cluster, attribute):
            continue
        if attribute == "CurrentMode":
            value = renumbered.get((dev.device_id, cluster), {}).get(value, value)
        if attribute == "SpinSpeeds":  # SimuHome lists speed values; the spec, their labels
            value = [str(v) for v in value]
        if attribute == "SpinSpeedCurrent":  # SimuHome: one of those values; the spec: its index
            speeds = values.get(key.replace("SpinSpeedCurrent", "SpinSpeeds")) or []
            value = speeds.index(value) if value in speeds else value
        if attribute == "TargetPositionLiftPercent100ths":
            attributes[f"{endpoint}/{cluster}/CurrentPositionLiftPercent100ths"] = value
        if attribute == "OperationalState":
            run = _run(values, cluster, value, calls)
            if cluster == "RvcOperationalState" and value in (0, 0x42, 0x41):
                attributes[f"{endpoint}/{cluster}/{attribute}"] = value
            continue
        attributes[f"{endpoint}/{cluster}/{attribute}"] = value
    if calls and any(c["cluster.id"] == "RvcRunMode" for c in calls):
        attributes.pop("1/RvcRunMode/CurrentMode", None)  # the setup's ChangeToMode starts the run
    if "clean_modes" in options:
        options["clean_modes"] = _rvc_cycles(options["clean_modes"], values)
    if run is not None:
        modes, cycle = _running_mode(type_key, options, values, run[2])
        if modes is not None:
            options["modes"] = modes
        run = (run[0], sum(seconds for _, seconds in cycle) - run[2], run[2])
    return attributes, options, run, calls


def _one_way_lacks(type_key: str, cluster: str, attribute: str) -> bool:
    return (type_key in ONE_WAY and cluster == "Thermostat"
            and (ONE_WAY[type_key][1] in attribute or attribute == "ControlSequenceOfOperation"))


def _rvc_cycles(modes: list[dict[str, Any]], values: dict[str, Any]) -> list[dict[str, Any]]:
    """SimuHome's cleaning modes with our cycle of the same label (else our first); a robot
    paused mid-clean gets its CountdownTime as the current mode's cycle, so that starting
    and pausing it in the setup leaves it where SimuHome has it."""
    ours = {m.label.lower(): m.cycle for m in RvcCleanModeServer.default_modes}
    fallback = RvcCleanModeServer.default_modes[0].cycle
    current = values.get("1.RVCCleanMode.CurrentMode")
    remaining = values.get("1.RVCOperationalState.CountdownTime")
    paused_cleaning = values.get("1.RVCOperationalState.OperationalState") == 2 and isinstance(remaining, int) \
        and remaining > 0 and values.get("1.RVCOperationalState.CurrentPhase") == 0
    out = []
    for m in modes:
        cycle = [list(p) for p in (ours.get(m["label"].lower()) or fallback or ())]
        if paused_cleaning and m["mode"] == current:
            cycle = [["cleaning", remaining]]
        out.append({**m, "cycle": cycle})
    return out


def _renumber(ids: list[int]) -> dict[int, int]:
    """Mode ids above 255 (SimuHome's RTCC modes use 16384...) -> the lowest free uint8 ids."""
    free = (i for i in range(256) if i not in ids)
    return {i: next(free) for i in ids if not 0 <= i <= 255}


_MODE_CLUSTERS = {"dishwasher": "DishwasherMode", "laundry_washer": "LaundryWasherMode",
                  "laundry_dryer": "LaundryWasherMode"}


def _mode(m: dict[str, Any]) -> dict[str, Any]:
    low = {k.lower(): v for k, v in m.items()}
    return {"label": low.get("label"), "mode": low.get("mode"),
            "tags": [t["value"] if isinstance(t, dict) else t for t in low.get("modetags", [])]}


def _run(values: dict[str, Any], cluster: str, state: int, calls: list[dict[str, Any]]):
    """A running OperationalState: (cluster, 0, remaining seconds) for a Start in the setup; a
    paused robot: the calls that start it and pause it."""
    prefix = "1.RVCOperationalState." if cluster == "RvcOperationalState" else "1.OperationalState."
    remaining = values.get(prefix + "CountdownTime")
    if cluster == "OperationalState" and state in (1, 2):
        if not isinstance(remaining, int) or remaining <= 0:
            raise ValueError(f"{prefix}CountdownTime: a running cycle needs a positive CountdownTime, "
                             f"got {remaining!r}")
        if state == 2:
            calls.append({"cluster.id": "OperationalState", "command.id": "Pause", "args": {}})
        return ("OperationalState", 0, remaining)
    if cluster == "RvcOperationalState" and state in (1, 2, 0x40):
        # SimuHome's run mode is Idle again once the robot heads home; ours stays in the
        # cleaning mode until it docks. Start it in the first cleaning mode.
        modes = [_mode(m) for m in values.get("1.RVCRunMode.SupportedModes") or []]
        cleaning = [m["mode"] for m in modes if RVC_CLEANING_TAG in m["tags"]] or [1]
        calls.append({"cluster.id": "RvcRunMode", "command.id": "ChangeToMode", "args": {"NewMode": cleaning[0]}})
        phases = values.get(prefix + "PhaseList") or []
        phase = values.get(prefix + "CurrentPhase")
        seeking = state == 0x40 or (isinstance(phase, int) and 0 <= phase < len(phases)
                                    and phases[phase] == "SeekingCharger")
        if seeking:
            calls.append({"cluster.id": "RvcOperationalState", "command.id": "GoHome", "args": {}})
        if state == 2:
            calls.append({"cluster.id": "RvcOperationalState", "command.id": "Pause", "args": {}})
    return None


def _running_mode(type_key: str, options: dict[str, Any], values: dict[str, Any], remaining: int):
    """(modes option, current cycle): the current mode's cycle made long enough for
    `remaining` seconds; other modes keep our cycle of the same label (else our first)."""
    cluster = _MODE_CLUSTERS.get(type_key)
    if cluster is None:
        raise ValueError(f"a running {type_key} is not an appliance with a cycle")
    ours = [_default_mode(m) for m in _default_modes(type_key)]
    modes = options.get("modes") or ours
    current = values.get(f"1.{cluster}.CurrentMode", _default_current(type_key, cluster))
    defaults = {m["label"]: m["cycle"] for m in ours}
    fallback = next(c for c in defaults.values() if c)
    out, running = [], None
    for m in modes:
        cycle = [list(p) for p in (m.get("cycle") or defaults.get(m["label"]) or fallback)]
        if m["mode"] == current:
            total = sum(seconds for _, seconds in cycle)
            if total < remaining + 1:
                cycle[-1][1] += remaining + 1 - total
            running = cycle
        out.append({**m, "cycle": cycle})
    if running is None:
        raise ValueError(f"1.{cluster}.CurrentMode {current!r} is not one of its SupportedModes")
    return out, running


def _default_current(type_key: str, cluster: str) -> Any:
    return create_device("probe", type_key).read(cluster, "CurrentMode")


def _default_modes(type_key: str) -> list[Any]:
    """Our modes that carry a cycle (an appliance's mode, a robot's cleaning modes)."""
    device = create_device("probe", type_key)
    return [m for s in device.servers() if isinstance(s, ModeBaseServer) and s.operational is not None
            and any(m.cycle for m in s.modes) for m in s.modes]


def _default_mode(m: Any) -> dict[str, Any]:
    if isinstance(m, dict):
        return m
    return {"label": m.label, "mode": m.mode, "tags": list(m.tags),
            "cycle": [list(p) for p in m.cycle] if m.cycle else None}


def _fit(device_id: str, type_key: str, options: dict[str, Any], attributes: dict[str, Any],
         differences: list[str]) -> DeviceSpec:
    """A DeviceSpec the twin accepts: initial values it refuses are left out and reported."""
    attributes = dict(sorted(attributes.items(), key=lambda kv: _order(kv[0])))
    while True:
        probe = Home("probe", 0)
        probe.add_room("r")
        try:
            probe.add_device(device_id, type_key, "r", options=options, attributes=attributes)
        except InitialAttributeError as exc:
            differences.append(f"{device_id} {exc.key}: {attributes.pop(exc.key)!r} not settable ({exc.message})")
            continue
        except (MatterError, ValueError, TypeError) as exc:
            raise ValueError(f"{device_id} ({type_key}): {exc}") from None
        return DeviceSpec(id=device_id, type=type_key, options=options, attributes=attributes)


def _order(key: str) -> tuple[int, str]:
    # Lists that constrain other values first, OnOff before what it gates.
    name = key.rsplit("/", 1)[-1]
    first = name.startswith("Supported") or name in ("SpinSpeeds", "MinTemperature", "MaxTemperature",
                                                     "MinLevel", "MaxLevel", "OnOff")
    return (0 if first else 1, key)


def _differences(cfg: _Home, types: dict[str, str], home: Home,
                 renumbered: dict[tuple[str, str], dict[int, int]]) -> list[str]:
    """Initial values that still differ after the import (ours as the tools report them)."""
    out = []
    for room in cfg.rooms.values():
        for dev in room.devices:
            type_key = types[dev.device_id]
            device = home.device(dev.device_id)
            for key, value in dev.attributes.items():
                endpoint, cluster, attribute = map_path(type_key, key)
                if cluster in SKIPPED_CLUSTERS | METERED or endpoint == 0 or attribute in (
                        "ClusterRevision", "FeatureMap", "OperationalStateList", "OperationalError",
                        "PhaseList", "CurrentPhase", "LocalTemperature", "SupportedModes") \
                        or (cluster, attribute) in ROOM_MEASURED or _one_way_lacks(type_key, cluster, attribute):
                    continue
                try:
                    ours = to_json(device.read(cluster, attribute, endpoint_id=endpoint))
                except MatterError:
                    out.append(f"{dev.device_id} {key}: {value!r} -> absent")
                    continue
                if attribute == "CurrentMode":
                    value = renumbered.get((dev.device_id, cluster), {}).get(value, value)
                if attribute == "SpinSpeedCurrent":
                    speeds = dev.attributes.get(key.replace("SpinSpeedCurrent", "SpinSpeeds")) or []
                    value = speeds.index(value) if value in speeds else value
                if not _same(value, ours):
                    out.append(f"{dev.device_id} {key}: {value!r} -> {ours!r}")
    return out


def _same(theirs: Any, ours: Any) -> bool:
    if isinstance(theirs, (int, float)) and isinstance(ours, (int, float)) and not isinstance(theirs, bool):
        return abs(theirs - ours) <= 1
    if isinstance(theirs, list) and isinstance(ours, list):
        return len(theirs) == len(ours) and all(_same(a, b) for a, b in zip(theirs, ours))
    if isinstance(theirs, dict) and isinstance(ours, dict):
        low = {k.lower().replace("_", ""): v for k, v in ours.items()}
        return all(_same(v, low.get(k.lower().replace("_", ""))) for k, v in theirs.items())
    return theirs == ours or str(theirs) == str(ours)


# ---- goals ---------------------------------------------------------------------------------
def _long_enough(initial: InitialState, goals: list[Any], home: Home) -> InitialState:
    """A QT4-3 "still holds at t" goal that an appliance or robot the agent starts now is
    still running at t tells that SimuHome's cycle lasts that long; where ours is shorter,
    the device's cycles are lengthened to every goal time naming it, plus a minute."""
    running_goals = {g.device_id for t in goals if isinstance(t, TimedGoal) and t.tolerance_seconds == 0
                     for g in t.goals if g.attribute == "OperationalState" and g.value == 1}
    needed: dict[str, int] = {}
    for t in goals:
        if isinstance(t, TimedGoal):
            for g in t.goals:
                if g.device_id in running_goals:
                    needed[g.device_id] = max(needed.get(g.device_id, 0),
                                              t.at_seconds + (t.tolerance_seconds or 0) + 60)
    if not needed:
        return initial
    spec = initial.home.model_copy(deep=True)
    for room in spec.rooms:
        for device in room.devices:
            seconds = needed.get(device.id)
            ops = home.device(device.id).locate("OperationalState" if device.type != "robot_vacuum_cleaner"
                                                else "RvcOperationalState") if seconds else None
            if ops is None or ops.in_operation:
                continue  # running at the start: its remaining time is SimuHome's already
            option = "clean_modes" if device.type == "robot_vacuum_cleaner" else "modes"
            modes = device.options.get(option) or [_default_mode(m) for m in _default_modes(device.type)]
            device.options[option] = [{**m, "cycle": _at_least(m.get("cycle"), seconds)} for m in modes]
    return InitialState(home=spec, setup=initial.setup, start_time=initial.start_time,
                        rooms_at_start=initial.rooms_at_start)


def _at_least(cycle: list[Any] | None, seconds: int) -> list[list[Any]]:
    phases = [list(p) for p in (cycle or [["cycle", seconds]])]
    total = sum(s for _, s in phases)
    if total < seconds:
        phases[-1][1] += seconds - total
    return phases


def _device_goals(target: dict[str, Any], types: dict[str, str],
                  renumbered: dict[tuple[str, str], dict[int, int]]) -> list[DeviceGoal]:
    device_id = target["device_id"]
    type_key = types.get(device_id, TYPE_KEYS.get(target.get("device_type", ""), ""))
    out = []
    for a in target.get("asserts", []):
        endpoint, cluster, attribute = map_path(type_key, a["attribute"])
        value = a["value"]
        if attribute == "CurrentMode":
            value = renumbered.get((device_id, cluster), {}).get(value, value)
        out.append(DeviceGoal(room_id=target["room_id"], device_id=device_id, endpoint=endpoint,
                              cluster=cluster, attribute=attribute, value=value))
    return out


def _goals(src: _File, feasible: bool, types: dict[str, str], home: Home,
           renumbered: dict[tuple[str, str], dict[int, int]]):
    goals: list[Any] = []
    feasible_part: list[Any] = []
    for g in src.eval.goals:
        if "when" in g:  # QT4: targets due at a tick, within a tolerance
            when = g["when"]
            at = int(when["at_tick"]) // TICKS_PER_SECOND
            targets = [d for t in g["targets"] for d in _device_goals(t, types, renumbered)]
            if at <= 0:
                raise ValueError(f"eval.goals: a goal due at tick {when['at_tick']} is not after the start")
            goals.append(TimedGoal(at_seconds=at, goals=targets,
                                   tolerance_seconds=int(when.get("tolerance_ticks", 0)) // TICKS_PER_SECOND))
        elif "asserts" in g:  # QT3; in QT3-IF the goals on devices that exist are the feasible part
            if feasible:
                goals.extend(_device_goals(g, types, renumbered))
            elif g["device_id"] in home.devices:
                feasible_part.extend(_device_goals(g, types, renumbered))
        elif "direction" in g:  # QT2
            goals.append(RoomGoal(room_id=g["room_id"], state=g["room_state"], direction=g["direction"]))
        elif g.get("variant") == "room_state":  # QT1: the value as our twin reports it
            goals.append(RoomGoal(room_id=g["room_id"], state=g["room_state"],
                                  value=getattr(home.rooms[g["room_id"]], g["room_state"])
                                  if g["room_id"] in home.rooms else g.get("current_value")))
        elif g.get("variant") == "device_attribute":
            device_id = g["device_id"]
            if device_id not in home.devices and not feasible:
                continue  # the missing device itself: the infeasibility, not a value to report
            type_key = types.get(device_id, TYPE_KEYS.get(g.get("device_type", ""), g.get("device_type", "")))
            endpoint, cluster, attribute = map_path(type_key, g["attribute"])
            value = None
            if device_id in home.devices:
                try:
                    value = to_json(home.device(device_id).read(cluster, attribute, endpoint_id=endpoint))
                except MatterError:
                    if feasible:
                        raise ValueError(f"eval.goals: {device_id} has no {g['attribute']} here") from None
            goals.append(DeviceGoal(room_id=g["room_id"], device_id=device_id, endpoint=endpoint,
                                    cluster=cluster, attribute=attribute, value=value))
        else:
            raise ValueError(f"eval.goals: a goal of unknown form (keys {', '.join(sorted(g))})")
    return goals, feasible_part


def _infeasibility(src: _File, qt: str, types: dict[str, str]) -> Infeasibility:
    """What kind of problem the judge looks for, from SimuHome's own labels."""
    meta = src.meta.model_extra or {}
    conflict = src.temporal_conflict or {}
    rooms = sorted({g["room_id"] for g in src.eval.goals if "room_id" in g}
                   | {t["room_id"] for g in src.eval.goals for t in g.get("targets", [])})
    if qt in ("QT1", "QT3"):
        kind, reason = "missing_device", "the device asked for is not in the room"
        rooms = sorted({a.params.get("room_id") for a in src.eval.required_actions if a.params.get("room_id")})
    elif qt == "QT2":
        if meta.get("infeasible_family") == "nonexistence":
            kind, reason = "no_actuator", "no device in the room can make that change"
        else:
            kind, reason = "at_capacity", "the devices that could are already at their limit"
    elif qt == "QT4-1":
        kind, reason = "time_conflict", "the relative and the absolute time disagree"
    elif qt == "QT4-2":
        kind, reason = "completion_conflict", "the appliance does not finish when the request assumes"
    else:
        kind = "deadline" if conflict.get("type") == "impossible_early_end" else "completion_conflict"
        reason = f"SimuHome: {conflict.get('type', 'conflict')}"
    times = [str(conflict[k])[:5] for k in ("expected_time", "anchor_end_time") if k in conflict]
    anchor = next((g["anchor"]["device_id"] for g in src.eval.goals
                   if isinstance(g.get("anchor"), dict) and g["anchor"].get("device_id")), None)
    missing = [TYPE_KEYS.get(g.get("device_type", ""), g.get("device_type", "")) for g in src.eval.goals
               if (g.get("variant") == "device_attribute" or "asserts" in g) and g.get("device_id")
               and g["device_id"] not in types]
    keywords = [type_words(missing[0])] if missing and missing[0] in DEVICE_TYPES else []
    return Infeasibility(kind=kind, reason=reason, room_ids=[r for r in rooms if r], keywords=keywords,
                         times=[t for t in times if re.fullmatch(r"\d\d:\d\d", t)],
                         anchor_device_id=anchor if qt in ("QT4-2", "QT4-3") else None)


def import_dir(directory: Path) -> list[Path]:
    """SimuHome episode files in `directory` (its data/benchmark layout: *.json), sorted."""
    if not directory.is_dir():
        raise ImportError_(f"{directory}: not a directory")
    return sorted(directory.glob("*.json"), key=lambda p: _natural(p.name))


def _natural(name: str) -> list[Any]:
    return [int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name)]


# ---- an oracle that reads the goals, to check imported episodes ---------------------------------
def oracle_plan(episode: Episode) -> list[dict[str, Any]]:
    """Tool calls that meet the episode's goals by reading them (never a fair agent): device
    goals now, timed goals by a workflow at their time, room directions by every actuator in
    the room at its strongest. `bench/simuhome_oracle.py` replays imported episodes with it;
    an episode it fails disagrees with SimuHome, whose goals came from doing the same."""
    plan: list[dict[str, Any]] = [{"tool": a.tool, "args": dict(a.args)} for a in episode.required_actions]
    types = {d.id: d.type for r in episode.initial.home.rooms for d in r.devices}
    run_mode_ids = {d.id: _idle_and_cleaning(d.options["run_modes"]) for r in episode.initial.home.rooms
                    for d in r.devices if d.options.get("run_modes")}
    for goal in episode.goals + episode.feasible_part:
        if isinstance(goal, RoomGoal) and goal.direction is not None:
            for device_id, type_key in types.items():
                room = next(r.id for r in episode.initial.home.rooms if any(d.id == device_id for d in r.devices))
                if room == goal.room_id and type_key in ACTUATORS[(goal.state, goal.direction)]:
                    if goal.state == "temperature" and type_key in ONE_WAY and \
                            ONE_WAY[type_key][1] == ("Cool" if goal.direction == "decrease" else "Heat"):
                        plan.append(write(device_id, "Thermostat", "SystemMode", 0,  # it can only stop
                                          endpoint=THERMOSTAT_ENDPOINT[type_key]))
                        continue
                    plan += [c for c, _ in strongest(device_id, type_key, goal.state, goal.direction)]
        elif isinstance(goal, DeviceGoal):
            plan += _achieve([goal], run_mode_ids)
        elif isinstance(goal, TimedGoal) and goal.tolerance_seconds == 0:
            plan += _achieve(goal.goals, run_mode_ids)  # "still holds at t": done now, must last until t
        elif isinstance(goal, TimedGoal):
            when = (episode.initial.start_time + timedelta(seconds=goal.at_seconds)).strftime(TIME_FORMAT)
            steps = _achieve(goal.goals, run_mode_ids)
            plan.append({"tool": "schedule_workflow", "args": {"start_time": when, "steps": steps}})
    return plan


def _idle_and_cleaning(modes: list[dict[str, Any]]) -> tuple[int, int]:
    idle = next(m["mode"] for m in modes if RVC_IDLE_TAG in m["tags"])
    return idle, next(m["mode"] for m in modes if RVC_CLEANING_TAG in m["tags"])


#: Goal attribute -> how to make it so: ("write",) or (command, argument name) or a table.
_MEDIA = {0: "Play", 1: "Pause", 2: "Stop"}
_OPS = {0: "Stop", 1: "Start", 2: "Pause"}


def _achieve(goals: list[DeviceGoal], run_mode_ids: dict[str, tuple[int, int]]) -> list[dict[str, Any]]:
    """Calls for device goals, per device in a workable order: power on, settings, then run.
    `run_mode_ids`: a robot's (idle, cleaning) RVC Run Mode ids."""
    def rank(g: DeviceGoal) -> int:
        if g.attribute == "OnOff":
            return 0 if g.value else 3
        return 2 if g.attribute == "OperationalState" else 1
    out: list[dict[str, Any]] = []
    channel: dict[str, dict[str, Any]] = {}
    for g in sorted(goals, key=rank):
        def cmd(name: str, args: dict[str, Any] | None = None, cluster: str = g.cluster,
                g: DeviceGoal = g) -> dict[str, Any]:
            return {"tool": "execute_command", "args": {"device.id": g.device_id, "endpoint.id": g.endpoint,
                                                        "cluster.id": cluster, "command.id": name, "args": args or {}}}
        if g.cluster == "OnOff":
            out.append(cmd("On" if g.value else "Off"))
        elif g.attribute == "CurrentLevel":
            out.append(cmd("MoveToLevelWithOnOff" if g.cluster == "LevelControl" else "MoveToLevel",
                           {"level": g.value, "transitionTime": 0, "optionsMask": 0, "optionsOverride": 0}))
        elif g.attribute == "TargetPositionLiftPercent100ths":
            out.append(cmd("GoToLiftPercentage", {"liftPercent100thsValue": g.value}))
        elif g.attribute == "CurrentMode":
            out.append(cmd("ChangeToMode", {"newMode": g.value}))
        elif g.attribute == "TemperatureSetpoint":
            out.append(cmd("SetTemperature", {"targetTemperature": g.value}))
        elif g.cluster == "MediaPlayback" and g.attribute == "CurrentState":
            out += [cmd("On", cluster="OnOff"), cmd(_MEDIA.get(g.value, "Play"))]  # a TV plays once on
        elif g.cluster == "OperationalState" and g.attribute == "OperationalState":
            if g.value == 1:  # an appliance starts once it is on
                out.append(cmd("On", cluster="OnOff"))
            out.append(cmd(_OPS.get(g.value, "Start")))
        elif g.cluster == "RvcOperationalState" and g.attribute == "OperationalState":
            run_modes = run_mode_ids.get(g.device_id, (0, 1))
            out += ([cmd("Resume"), cmd("ChangeToMode", {"newMode": run_modes[1]}, "RvcRunMode")] if g.value == 1
                    else [cmd("ChangeToMode", {"newMode": run_modes[0]}, "RvcRunMode")] if g.value == 0
                    else [cmd("Pause")])
        elif g.attribute.startswith("CurrentChannel."):
            channel.setdefault(g.device_id, {"endpoint": g.endpoint})[g.attribute.split(".")[1]] = g.value
        else:
            out.append({"tool": "write_attribute", "args": {"device.id": g.device_id, "endpoint.id": g.endpoint,
                                                            "cluster.id": g.cluster, "attribute.id": g.attribute,
                                                            "value": g.value}})
    for device_id, c in channel.items():
        out.append({"tool": "execute_command", "args": {
            "device.id": device_id, "endpoint.id": c["endpoint"], "cluster.id": "Channel",
            "command.id": "ChangeChannelByNumber",
            "args": {"majorNumber": c.get("MajorNumber", 0), "minorNumber": c.get("MinorNumber", 0)}}})
    return out


# ---- the oracle's answers for judged episodes ------------------------------------------------------
_UNIT = {"temperature": "°C", "humidity": "%", "illuminance": "lux", "pm10": "µg/m³"}
_STATE_WORD = {"temperature": "temperature", "humidity": "humidity", "illuminance": "brightness",
               "pm10": "PM10 level"}
#: Oracle answers come in these phrasings (times with and without the colon, sentences in
#: another order): a judge must pass each.
PHRASINGS = 3


def oracle_reads(episode: Episode) -> list[dict[str, Any]]:
    """The reads an answer stands on: the required ones, every QT1 device goal's attribute, and
    the anchor appliance's CountdownTime for timing conflicts."""
    calls: list[dict[str, Any]] = [{"tool": a.tool, "args": dict(a.args)} for a in episode.required_actions]
    for g in episode.goals:
        if isinstance(g, DeviceGoal):
            calls.append({"tool": "get_attribute", "args": {"device.id": g.device_id, "endpoint.id": g.endpoint,
                                                            "cluster.id": g.cluster, "attribute.id": g.attribute}})
    inf = episode.infeasibility
    if inf is not None and inf.anchor_device_id:
        types = {d.id: d.type for r in episode.initial.home.rooms for d in r.devices}
        cluster = "RvcOperationalState" if types.get(inf.anchor_device_id) == "robot_vacuum_cleaner" \
            else "OperationalState"
        calls += [{"tool": "get_current_time", "args": {}},
                  {"tool": "get_attribute", "args": {"device.id": inf.anchor_device_id, "endpoint.id": 1,
                                                     "cluster.id": cluster, "attribute.id": "CountdownTime"}}]
    return calls


def _clock(hhmm: str, phrasing: int) -> str:
    hour, minute = int(hhmm[:2]), int(hhmm[3:5])
    twelve = f"{hour % 12 or 12}{':' if phrasing != 1 else ' '}{minute:02d} {'PM' if hour >= 12 else 'AM'}"
    return hhmm if phrasing == 2 else twelve


def _said(value: Any) -> str:
    if value is None:
        return "not set (none)"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, float):
        return f"{value:.2f}"
    if isinstance(value, list):
        return ", ".join(_said(v) for v in value) or "none"
    if isinstance(value, dict):
        return ", ".join(_said(v) for v in value.values() if not isinstance(v, (list, dict)))
    return str(value)


def oracle_answer(episode: Episode, phrasing: int = 0) -> str:
    """An answer built from SimuHome's released ground truth (the goals and the labelled kind of
    infeasibility), in one of PHRASINGS wordings."""
    room_name = {r.id: r.name or r.id.replace("_", " ") for r in episode.initial.home.rooms}
    parts: list[str] = []
    for g in episode.goals:
        if isinstance(g, RoomGoal) and g.value is not None:
            value = f"{g.value:.2f}".rstrip("0").rstrip(".") if phrasing != 2 else f"{g.value:.2f}"
            parts.append(f"The {_STATE_WORD[g.state]} in the {room_name.get(g.room_id, g.room_id)} is "
                         f"{value} {_UNIT[g.state]}." if phrasing != 1 else
                         f"In the {room_name.get(g.room_id, g.room_id)}, the {_STATE_WORD[g.state]} reads "
                         f"{value} {_UNIT[g.state]}.")
        elif isinstance(g, DeviceGoal):
            parts.append(f"{g.device_id} in the {room_name.get(g.room_id, g.room_id)} reports {g.attribute} "
                         f"{_said(g.value)}.")
    inf = episode.infeasibility
    if inf is None:
        return " ".join(parts) or "Nothing to report."
    rooms = " and the ".join(room_name.get(r, r) for r in inf.room_ids) or "room you named"
    what = inf.keywords[0][0] if inf.keywords else "device you asked for"
    numbered = re.search(rf"\b{re.escape(what)}\s+(\d+)", episode.query, re.IGNORECASE)
    if numbered:  # "washer 2": that one is missing, there may well be a washer 1
        what = f"{what} {numbered[1]}"
    where = f" for the {rooms}" if inf.room_ids else ""
    times = [_clock(t, phrasing) for t in inf.times]
    if inf.kind == "missing_device":
        claim = [f"There is no {what} in the {rooms}, so I can't do that for it.",
                 f"I can't help with that one: the {rooms} has no {what}.",
                 f"I looked in the {rooms} and there is no {what} there, so I cannot do it."][phrasing]
        parts = parts + [claim] if phrasing != 1 else [claim] + parts
    elif inf.kind in ("no_actuator", "at_capacity"):
        for g in episode.goals:
            if isinstance(g, RoomGoal) and g.direction is not None:
                verb = "raise" if g.direction == "increase" else "lower"
                room = room_name.get(g.room_id, g.room_id)
                why = (f"there is no device in the {room} that can {verb} its {_STATE_WORD[g.state]}"
                       if inf.kind == "no_actuator" else
                       f"every device in the {room} that could {verb} its {_STATE_WORD[g.state]} is already "
                       f"at its limit")
                parts.append([f"I can't {verb} the {_STATE_WORD[g.state]} in the {room}: {why}.",
                              f"Sorry, {why}, so I cannot {verb} the {_STATE_WORD[g.state]} in the {room}.",
                              f"That isn't possible in the {room}, because {why}."][phrasing])
    elif inf.kind == "time_conflict":
        parts.append(f"The times you gave conflict: counting from now it would be {times[0]}, which is not the "
                     f"clock time you said. I have not scheduled anything{where}; which time do you want?"
                     if phrasing != 1 else
                     f"Counting from now that lands at {times[0]}, not at the clock time you gave, so the two "
                     f"don't match. I haven't set anything up{where} yet: which one should I use?")
    else:
        anchor = inf.anchor_device_id or "the appliance"
        listed = " and ".join(times)
        parts.append(f"That conflicts with what {anchor} is doing: the times that follow from it are {listed}, "
                     f"so I can't do it as asked and have not changed anything{where}. Which time do you want?"
                     if phrasing != 1 else
                     f"I can't do it as asked: going by {anchor}, the times are {listed}, which doesn't match your "
                     f"request. I haven't changed anything{where}; what would you like instead?")
    return " ".join(parts)
