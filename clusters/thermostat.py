"""Thermostat cluster server (Matter 1.4, revision 8). Features: Heating, Cooling, AutoMode,
optionally Presets. Revision 8 as real products report it: the revision-7 ranges (MinSetpointDeadBand
0..127, LocalTemperatureCalibration the whole int8), Presets with atomic writes, and
SetpointHoldExpiryTimestamp beside the timed setpoint hold.

Temperatures are int16 in 0.01 °C; MinSetpointDeadBand and LocalTemperatureCalibration are
int8 in 0.1 °C. LocalTemperature is never stored while a room feeds it: `sensor_source`
returns the room temperature in °C and `get()` converts it and adds the calibration. With no
source, the stored value is used. ThermostatRunningState is derived too: heating while the
local temperature is below the heating setpoint in a heating mode, cooling while above the
cooling setpoint in a cooling mode (the same rule the room physics applies), the fan with
either, or in FanOnly; nothing while the device's OnOff is off.

Every setpoint change records SetpointChangeSource (External: a client or tool; Manual is the
device's own panel, not modelled), SetpointChangeAmount and SetpointChangeSourceTimestamp
(epoch seconds since 2000-01-01 of the simulated clock). TemperatureSetpointHold with a
TemperatureSetpointHoldDuration (minutes) ends on its own after that time; while a hold is on,
presets do not move the setpoints. Presets start as the built-in Comfort, Away and Sleep;
SetActivePresetRequest applies one. A client changes the Presets list only inside an atomic write
(AtomicRequest BeginWrite, writes of Presets, CommitWrite or RollbackWrite; spec 4.3.11): the
writes go to a pending list only that client sees, CommitWrite checks it as a whole (built-in
presets kept, handles unique, scenarios and counts within PresetTypes and NumberOfPresets,
setpoints within limits) and applies it or leaves Presets as they were; an atomic write not
committed within its timeout is rolled back.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import (
    TICKS_PER_SECOND,
    Clusters,
    ClusterServer,
    MatterError,
    Status,
    check_range,
    current_access,
    epoch_seconds,
)

TS = Clusters.Thermostat
Feature = TS.Bitmaps.Feature
SystemMode = TS.Enums.SystemModeEnum
Sequence = TS.Enums.ControlSequenceOfOperationEnum
RaiseLower = TS.Enums.SetpointRaiseLowerModeEnum

MIN_TEMPERATURE, MAX_TEMPERATURE = -27315, 32767  # int16 temperature, 0x8000 is null
COOLING_SEQUENCES = (Sequence.kCoolingOnly, Sequence.kCoolingWithReheat)
HEATING_SEQUENCES = (Sequence.kHeatingOnly, Sequence.kHeatingWithReheat)

HEAT_ATTRIBUTES = ("OccupiedHeatingSetpoint", "AbsMinHeatSetpointLimit", "AbsMaxHeatSetpointLimit",
                   "MinHeatSetpointLimit", "MaxHeatSetpointLimit")
COOL_ATTRIBUTES = ("OccupiedCoolingSetpoint", "AbsMinCoolSetpointLimit", "AbsMaxCoolSetpointLimit",
                   "MinCoolSetpointLimit", "MaxCoolSetpointLimit")
#: Attributes real thermostats carry beyond the mandatory ones.
PRODUCT_ATTRIBUTES = ("LocalTemperatureCalibration", "ThermostatRunningState", "TemperatureSetpointHold",
                      "TemperatureSetpointHoldDuration", "SetpointChangeSource", "SetpointChangeAmount",
                      "SetpointChangeSourceTimestamp", "SetpointHoldExpiryTimestamp")
#: Revision 7 widened these (0.1 °C units): the deadband to 0..127, the calibration to all of int8.
DEADBAND_RANGE, CALIBRATION_RANGE = (0, 127), (-128, 127)
PRESET_ATTRIBUTES = ("PresetTypes", "NumberOfPresets", "ActivePresetHandle", "Presets")
Relay = TS.Bitmaps.RelayStateBitmap
Scenario = TS.Enums.PresetScenarioEnum
Hold = TS.Enums.TemperatureSetpointHoldEnum
#: Built-in presets: (handle, scenario, name, heating setpoint, cooling setpoint).
BUILT_IN_PRESETS = ((b"\x01", Scenario.kOccupied, "Comfort", 2100, 2400),
                    (b"\x02", Scenario.kUnoccupied, "Away", 1600, 2900),
                    (b"\x03", Scenario.kSleep, "Sleep", 1800, 2700))
Atomic = Clusters.Globals.Enums.AtomicRequestTypeEnum
#: An atomic write's timeout when the client asks for none or for more (ms; spec: server's choice).
ATOMIC_TIMEOUT_MS = 9000
MAX_PRESET_HANDLE = 16
HEAT_MODES = (SystemMode.kHeat, SystemMode.kEmergencyHeat, SystemMode.kAuto)
COOL_MODES = (SystemMode.kCool, SystemMode.kPrecooling, SystemMode.kAuto)


def _client() -> tuple[int, int] | None:
    """Who is asking: (fabric index, peer node id) over Matter; None for in-process callers."""
    access = current_access.get()
    return (access.fabric_index, access.peer_node_id) if access is not None else None


def celsius_to_matter(celsius: float) -> int:
    """°C to the Matter temperature type (int16, 0.01 °C), clamped to its range."""
    return min(max(round(celsius * 100), MIN_TEMPERATURE), MAX_TEMPERATURE)


class ThermostatServer(ClusterServer):
    cluster = TS
    revision = 8
    notes = ("Setpoints are in 0.01 °C (2600 = 26.0 °C) and must lie within the Min/Max "
             "setpoint limits, which lie within the Abs limits.",
             "With AutoMode, OccupiedHeatingSetpoint must stay at least MinSetpointDeadBand "
             "(0.1 °C units) below OccupiedCoolingSetpoint; writes that break it fail; "
             "SetpointRaiseLower pushes the other setpoint instead.",
             "SystemMode must suit ControlSequenceOfOperation: no Heat/EmergencyHeat when "
             "cooling only, no Cool/Precooling when heating only, Auto only with AutoMode.",
             "SetpointRaiseLower amount is in 0.1 °C steps; results are clamped to the limits.",
             "LocalTemperatureCalibration (0.1 °C, -128..127) is added to the measured LocalTemperature.",
             "SetActivePresetRequest applies a preset's setpoints (Presets lists them; null clears the "
             "active preset); TemperatureSetpointHold On keeps the setpoints where they are, for "
             "TemperatureSetpointHoldDuration minutes when that is not null (SetpointHoldExpiryTimestamp "
             "says when, in epoch seconds).")

    def __init__(self, heating: bool = True, cooling: bool = True, auto: bool = False,
                 presets: bool = False, **initial: Any):
        if not (heating or cooling):
            raise MatterError(Status.CONSTRAINT_ERROR, "a Thermostat needs Heating, Cooling or both")
        if auto and not (heating and cooling):
            raise MatterError(Status.CONSTRAINT_ERROR, "Thermostat AutoMode needs both Heating and Cooling")
        self.attributes = (("LocalTemperature",) + (HEAT_ATTRIBUTES if heating else ())
                           + (COOL_ATTRIBUTES if cooling else ())
                           + (("MinSetpointDeadBand",) if auto else ())
                           + ("ControlSequenceOfOperation", "SystemMode") + PRODUCT_ATTRIBUTES
                           + (PRESET_ATTRIBUTES if presets else ()))
        self.commands = ("SetpointRaiseLower",) + (("SetActivePresetRequest", "AtomicRequest") if presets else ())
        self.writable = frozenset(
            {"ControlSequenceOfOperation", "SystemMode", "LocalTemperatureCalibration",
             "TemperatureSetpointHold", "TemperatureSetpointHoldDuration"}
            | ({"OccupiedHeatingSetpoint", "MinHeatSetpointLimit", "MaxHeatSetpointLimit"} if heating else set())
            | ({"OccupiedCoolingSetpoint", "MinCoolSetpointLimit", "MaxCoolSetpointLimit"} if cooling else set())
            | ({"MinSetpointDeadBand"} if auto else set())
            | ({"Presets"} if presets else set()))
        features = ((int(Feature.kHeating) if heating else 0) | (int(Feature.kCooling) if cooling else 0)
                    | (int(Feature.kAutoMode) if auto else 0) | (int(Feature.kPresets) if presets else 0))
        #: Returns the room temperature in °C; set by the home. None: use the stored value.
        self.sensor_source: Callable[[], float] | None = None
        self._hold_until: int | None = None   # tick at which a timed setpoint hold ends
        #: The open atomic write of Presets: its owner (fabric, node), pending list, end tick.
        self._atomic: dict[str, Any] | None = None
        super().__init__(feature_map=features, **initial)
        self._check_limits()
        for name in self.attributes:  # an impossible configuration is a build error
            if name in self.writable and not name.endswith("SetpointLimit") and name != "Presets":
                self.validate_write(name, self._values[name])

    @property
    def heating(self) -> bool:
        return bool(self.feature_map & Feature.kHeating)

    @property
    def cooling(self) -> bool:
        return bool(self.feature_map & Feature.kCooling)

    @property
    def auto(self) -> bool:
        return bool(self.feature_map & Feature.kAutoMode)

    def defaults(self) -> dict[str, Any]:
        heating, cooling = self.heating, self.cooling
        sequence = (Sequence.kCoolingAndHeating if heating and cooling
                    else Sequence.kCoolingOnly if cooling else Sequence.kHeatingOnly)
        mode = (SystemMode.kAuto if self.auto else SystemMode.kCool if cooling else SystemMode.kHeat)
        return {"LocalTemperature": NullValue,
                "OccupiedHeatingSetpoint": 2000, "OccupiedCoolingSetpoint": 2600,
                "AbsMinHeatSetpointLimit": 700, "AbsMaxHeatSetpointLimit": 3000,
                "AbsMinCoolSetpointLimit": 1600, "AbsMaxCoolSetpointLimit": 3200,
                "MinHeatSetpointLimit": 700, "MaxHeatSetpointLimit": 3000,
                "MinCoolSetpointLimit": 1600, "MaxCoolSetpointLimit": 3200,
                "MinSetpointDeadBand": 25, "ControlSequenceOfOperation": sequence, "SystemMode": mode,
                "LocalTemperatureCalibration": 0, "ThermostatRunningState": 0,
                "TemperatureSetpointHold": Hold.kSetpointHoldOff, "TemperatureSetpointHoldDuration": NullValue,
                "SetpointChangeSource": TS.Enums.SetpointChangeSourceEnum.kManual,
                "SetpointChangeAmount": NullValue, "SetpointChangeSourceTimestamp": 0,
                "SetpointHoldExpiryTimestamp": NullValue,
                "PresetTypes": [TS.Structs.PresetTypeStruct(
                    presetScenario=scenario, numberOfPresets=1,
                    presetTypeFeatures=int(TS.Bitmaps.PresetTypeFeaturesBitmap.kAutomatic))
                    for _, scenario, *_ in BUILT_IN_PRESETS],
                "NumberOfPresets": len(BUILT_IN_PRESETS), "ActivePresetHandle": NullValue,
                "Presets": [TS.Structs.PresetStruct(
                    presetHandle=handle, presetScenario=scenario, name=name,
                    heatingSetpoint=heat if heating else None, coolingSetpoint=cool if cooling else None,
                    builtIn=True) for handle, scenario, name, heat, cool in BUILT_IN_PRESETS]}

    def _check_limits(self) -> None:
        """AbsMin <= Min <= Max <= AbsMax for each supported kind. (The spec defaults put
        MaxHeat 3000 within a 2.5 °C deadband of MaxCool 3200, so the limit-vs-limit
        deadband rule is enforced on writes only.)"""
        for kind in ("Heat", "Cool"):
            names = [f"AbsMin{kind}SetpointLimit", f"Min{kind}SetpointLimit",
                     f"Max{kind}SetpointLimit", f"AbsMax{kind}SetpointLimit"]
            if names[0] not in self._values:
                continue
            values = [self._values[n] for n in names]
            if values != sorted(values) or values[0] < MIN_TEMPERATURE:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  "Thermostat limits must satisfy " + " <= ".join(names) + ": got "
                                  + ", ".join(map(str, values)))

    # ---- attributes --------------------------------------------------------------
    derived = frozenset({"LocalTemperature", "ThermostatRunningState"})

    def get(self, name: str) -> Any:
        if name == "LocalTemperature" and self.sensor_source is not None:
            calibration = self._values.get("LocalTemperatureCalibration", 0) * 10
            return celsius_to_matter(self.sensor_source() + calibration / 100)
        if name == "ThermostatRunningState":
            return self._running_state()
        if name == "Presets" and self._atomic is not None and self._atomic["owner"] == _client():
            return self._atomic["pending"]   # the writer sees its pending list (list appends build on it)
        return super().get(name)

    def _running_state(self) -> int:
        local, mode = self.get("LocalTemperature"), self.get("SystemMode")
        onoff = self.sibling(Clusters.OnOff)
        if onoff is not None and not onoff.get("OnOff"):
            return 0
        state = 0
        if local is not NullValue:
            if self.heating and mode in HEAT_MODES and local < self.get("OccupiedHeatingSetpoint"):
                state |= int(Relay.kHeat)
            if self.cooling and mode in COOL_MODES and local > self.get("OccupiedCoolingSetpoint"):
                state |= int(Relay.kCool)
        fan = self.sibling(Clusters.FanControl)
        if mode == SystemMode.kFanOnly or (state and (fan is None or fan.get("PercentCurrent"))):
            state |= int(Relay.kFan)
        return state

    @property
    def deadband(self) -> int:
        """MinSetpointDeadBand in setpoint units (0.01 °C); 0 without AutoMode."""
        return self.get("MinSetpointDeadBand") * 10 if self.auto else 0

    def _limits(self, kind: str) -> tuple[int, int]:
        return self.get(f"Min{kind}SetpointLimit"), self.get(f"Max{kind}SetpointLimit")

    def validate_write(self, name: str, value: Any) -> None:
        what = f"Thermostat.{name}"
        db = self.deadband
        if name == "OccupiedHeatingSetpoint":
            check_range(what, value, *self._limits("Heat"))
            if self.auto and value > self.get("OccupiedCoolingSetpoint") - db:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{what}={value} must be at least MinSetpointDeadBand ({db}) below "
                                  f"OccupiedCoolingSetpoint ({self.get('OccupiedCoolingSetpoint')})")
        elif name == "OccupiedCoolingSetpoint":
            check_range(what, value, *self._limits("Cool"))
            if self.auto and value < self.get("OccupiedHeatingSetpoint") + db:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{what}={value} must be at least MinSetpointDeadBand ({db}) above "
                                  f"OccupiedHeatingSetpoint ({self.get('OccupiedHeatingSetpoint')})")
        elif name == "MinHeatSetpointLimit":
            check_range(what, value, self.get("AbsMinHeatSetpointLimit"), self.get("MaxHeatSetpointLimit"))
            if self.auto:
                check_range(what, value, None, self.get("MinCoolSetpointLimit") - db)
        elif name == "MaxHeatSetpointLimit":
            check_range(what, value, self.get("MinHeatSetpointLimit"), self.get("AbsMaxHeatSetpointLimit"))
            if self.auto:
                check_range(what, value, None, self.get("MaxCoolSetpointLimit") - db)
        elif name == "MinCoolSetpointLimit":
            check_range(what, value, self.get("AbsMinCoolSetpointLimit"), self.get("MaxCoolSetpointLimit"))
            if self.auto:
                check_range(what, value, self.get("MinHeatSetpointLimit") + db, None)
        elif name == "MaxCoolSetpointLimit":
            check_range(what, value, self.get("MinCoolSetpointLimit"), self.get("AbsMaxCoolSetpointLimit"))
            if self.auto:
                check_range(what, value, self.get("MaxHeatSetpointLimit") + db, None)
        elif name == "MinSetpointDeadBand":
            check_range(what, value, *DEADBAND_RANGE)
            if self.get("OccupiedCoolingSetpoint") - self.get("OccupiedHeatingSetpoint") < value * 10:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{what}={value} (0.1 °C) is wider than the gap between the "
                                  "occupied heating and cooling setpoints")
        elif name == "LocalTemperatureCalibration":
            check_range(what, value, *CALIBRATION_RANGE)
        elif name == "TemperatureSetpointHoldDuration" and value is not NullValue:
            check_range(what, value, 0, 1440)
        elif name == "ControlSequenceOfOperation":
            needs_cool = value not in HEATING_SEQUENCES
            needs_heat = value not in COOLING_SEQUENCES
            if (needs_cool and not self.cooling) or (needs_heat and not self.heating):
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{what}={int(value)} does not suit this thermostat; accepted: "
                                  + ", ".join(f"{int(s)} ({s.name[1:]})" for s in self._sequences()))
        elif name == "SystemMode":
            allowed = self.allowed_system_modes()
            if value not in allowed:
                raise MatterError(Status.CONSTRAINT_ERROR,
                                  f"{what}={int(value)} ({value.name[1:]}) is not possible with "
                                  f"ControlSequenceOfOperation {self.get('ControlSequenceOfOperation').name[1:]}; "
                                  "accepted: " + ", ".join(f"{int(m)} ({m.name[1:]})" for m in allowed))

    def _sequences(self) -> list[Sequence]:
        out = []
        if self.cooling:
            out += COOLING_SEQUENCES
        if self.heating:
            out += HEATING_SEQUENCES
        if self.cooling and self.heating:
            out += [Sequence.kCoolingAndHeating, Sequence.kCoolingAndHeatingWithReheat]
        return out

    def allowed_system_modes(self) -> list[SystemMode]:
        sequence = self.get("ControlSequenceOfOperation")
        can_cool = self.cooling and sequence not in HEATING_SEQUENCES
        can_heat = self.heating and sequence not in COOLING_SEQUENCES
        return ([SystemMode.kOff] + ([SystemMode.kAuto] if self.auto and can_cool and can_heat else [])
                + ([SystemMode.kCool] if can_cool else [])
                + ([SystemMode.kHeat, SystemMode.kEmergencyHeat] if can_heat else [])
                + ([SystemMode.kPrecooling] if can_cool else [])
                + [SystemMode.kFanOnly, SystemMode.kDry, SystemMode.kSleep])

    def after_write(self, name: str, value: Any) -> None:
        if name in ("TemperatureSetpointHold", "TemperatureSetpointHoldDuration"):
            self._arm_hold()
        elif name == "ControlSequenceOfOperation" and self.get("SystemMode") not in self.allowed_system_modes():
            self.set("SystemMode", SystemMode.kOff)  # the old mode is no longer possible
        elif name.endswith("SetpointLimit"):
            # keep the occupied setpoint inside its (new) limits
            kind = "Heat" if "Heat" in name else "Cool"
            setpoint = "OccupiedHeatingSetpoint" if kind == "Heat" else "OccupiedCoolingSetpoint"
            low, high = self._limits(kind)
            self._store_setpoints(**{kind.lower(): min(max(self.get(setpoint), low), high)})

    # ---- setpoint changes, hold and presets -----------------------------------------
    def write(self, attribute: str | int, data: Any) -> None:
        self.changing()
        name = self.resolve_attribute(attribute)
        if name == "Presets":
            self._write_pending(self._coerce(name, data))
            return
        before = self._values.get(name)
        super().write(name, data)
        if name in ("OccupiedHeatingSetpoint", "OccupiedCoolingSetpoint") and before is not None:
            self._note_change(name, self._values[name] - before)

    def _note_change(self, name: str, amount: int) -> None:
        """Record who changed a setpoint, by how much, and when (the SetpointChange* attributes)."""
        if "SetpointChangeSource" not in self._values:
            return
        self.set("SetpointChangeSource", TS.Enums.SetpointChangeSourceEnum.kExternal)
        self.set("SetpointChangeAmount", amount)
        self.set("SetpointChangeSourceTimestamp", epoch_seconds(self.clock))

    def _arm_hold(self) -> None:
        duration = self.get("TemperatureSetpointHoldDuration")
        on = self.get("TemperatureSetpointHold") == Hold.kSetpointHoldOn
        timed = on and duration not in (None, NullValue)
        self._hold_until = self.now + duration * 60 * TICKS_PER_SECOND if timed else None
        # epoch-s of the hold's end; null without a timed hold or without a date to count from
        epoch = epoch_seconds(self.clock)
        self.set("SetpointHoldExpiryTimestamp", epoch + duration * 60 if timed and epoch else NullValue)

    def next_event_tick(self) -> int | None:
        ends = [t for t in (self._hold_until, self._atomic and self._atomic["until"]) if t is not None]
        return min(ends) if ends else None

    def advance_to(self, tick: int) -> None:
        if self._hold_until is not None and tick >= self._hold_until:
            self._hold_until = None
            self.set("TemperatureSetpointHold", Hold.kSetpointHoldOff)
            self.set("SetpointHoldExpiryTimestamp", NullValue)
        if self._atomic is not None and tick >= self._atomic["until"]:
            self._atomic = None   # not committed in time: rolled back

    def private_state(self) -> dict[str, Any]:
        return {"hold_until": self._hold_until}   # an open atomic write does not outlive a restart

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._hold_until = state.get("hold_until")
        self._atomic = None

    # ---- atomic writes of Presets (spec 4.3.11, Atomic Writes in Core 7.15) -------------------
    def AtomicRequest(self, request: Any) -> Any:
        presets_id = TS.Attributes.Presets.attribute_id
        if list(request.attributeRequests) != [presets_id]:
            raise MatterError(Status.INVALID_COMMAND, "AtomicRequest: Presets (0x0050) is the only attribute "
                              f"written atomically here; got {list(request.attributeRequests)}")
        kind = request.requestType
        if kind == Atomic.kBeginWrite:
            if self._atomic is not None:
                return self._atomic_response(Status.FAILURE, Status.BUSY)
            timeout = request.timeout if request.timeout not in (None, NullValue) else ATOMIC_TIMEOUT_MS
            timeout = min(int(timeout), ATOMIC_TIMEOUT_MS)
            self._atomic = {"owner": _client(), "pending": list(self._values["Presets"]),
                            "until": self.now + -(-timeout // 100)}
            return self._atomic_response(Status.SUCCESS, Status.SUCCESS, timeout)
        if self._atomic is None or self._atomic["owner"] != _client():
            raise MatterError(Status.INVALID_IN_STATE, "no atomic write of Presets is open for this client")
        pending, self._atomic = self._atomic["pending"], None
        if kind == Atomic.kRollbackWrite:
            return self._atomic_response(Status.SUCCESS, Status.SUCCESS)
        try:
            presets = self._checked_presets(pending)
        except MatterError as error:
            return self._atomic_response(Status.FAILURE, error.status)
        self.set("Presets", presets)
        return self._atomic_response(Status.SUCCESS, Status.SUCCESS)

    def _atomic_response(self, status: Status, presets_status: Status, timeout: int | None = None) -> Any:
        return TS.Commands.AtomicResponse(
            statusCode=int(status), timeout=timeout,
            attributeStatus=[Clusters.Globals.Structs.AtomicAttributeStatusStruct(
                attributeID=TS.Attributes.Presets.attribute_id, statusCode=int(presets_status))])

    def _write_pending(self, presets: list[Any]) -> None:
        if self._atomic is None or self._atomic["owner"] != _client():
            raise MatterError(Status.INVALID_IN_STATE,
                              "Presets change only inside an atomic write (AtomicRequest BeginWrite first)")
        for preset in presets:   # each entry's own constraints now; the list as a whole at commit
            if preset.presetHandle not in (None, NullValue) and len(preset.presetHandle) > MAX_PRESET_HANDLE:
                raise MatterError(Status.CONSTRAINT_ERROR, f"preset handles are at most {MAX_PRESET_HANDLE} bytes")
            if preset.name not in (None, NullValue) and len(preset.name) > 64:
                raise MatterError(Status.CONSTRAINT_ERROR, "preset names are at most 64 characters")
        self._atomic["pending"] = list(presets)

    def _checked_presets(self, pending: list[Any]) -> list[Any]:
        """The pending list as Presets: new entries get handles; CONSTRAINT_ERROR if it is not a valid list."""
        current = {bytes(p.presetHandle): p for p in self._values["Presets"]}
        types = {t.presetScenario: t for t in self._values["PresetTypes"]}
        handles = [bytes(p.presetHandle) for p in pending if p.presetHandle not in (None, NullValue)]
        if len(set(handles)) != len(handles):
            raise MatterError(Status.CONSTRAINT_ERROR, "preset handles repeat")
        if len(pending) > self._values["NumberOfPresets"]:
            raise MatterError(Status.RESOURCE_EXHAUSTED, f"at most {self._values['NumberOfPresets']} presets")
        kept = set(handles)
        if any(p.builtIn and h not in kept for h, p in current.items()):
            raise MatterError(Status.CONSTRAINT_ERROR, "built-in presets cannot be removed")
        active = self._values["ActivePresetHandle"]
        if active is not NullValue and bytes(active) not in kept:
            raise MatterError(Status.INVALID_IN_STATE, "the active preset cannot be removed")
        used = {bytes(h) for h in current} | kept
        out = []
        for preset in pending:
            handle = preset.presetHandle
            if handle in (None, NullValue):
                if preset.builtIn:
                    raise MatterError(Status.CONSTRAINT_ERROR, "a new preset cannot be built in")
                handle = next(bytes([i]) for i in range(1, 256) if bytes([i]) not in used)
                used.add(handle)
            elif bytes(handle) not in current:
                raise MatterError(Status.NOT_FOUND, f"no preset with handle {bytes(handle).hex()}")
            elif bool(preset.builtIn) != bool(current[bytes(handle)].builtIn) and preset.builtIn is not None:
                raise MatterError(Status.CONSTRAINT_ERROR, "BuiltIn cannot change")
            elif current[bytes(handle)].builtIn and preset.presetScenario != current[bytes(handle)].presetScenario:
                raise MatterError(Status.CONSTRAINT_ERROR, "a built-in preset keeps its scenario")
            kind = types.get(preset.presetScenario)
            if kind is None:
                raise MatterError(Status.CONSTRAINT_ERROR, f"no preset type for scenario {preset.presetScenario}")
            if sum(p.presetScenario == preset.presetScenario for p in pending) > kind.numberOfPresets:
                raise MatterError(Status.RESOURCE_EXHAUSTED, f"too many presets of scenario {preset.presetScenario}")
            for setpoint, kind_name, served in ((preset.heatingSetpoint, "Heat", self.heating),
                                               (preset.coolingSetpoint, "Cool", self.cooling)):
                if setpoint not in (None, NullValue):
                    low, high = self._limits(kind_name) if served else (MIN_TEMPERATURE, MAX_TEMPERATURE)
                    if not served or not low <= setpoint <= high:
                        raise MatterError(Status.CONSTRAINT_ERROR, f"{kind_name.lower()}ing setpoint {setpoint} "
                                          f"outside {low}..{high}")
            built_in = current[bytes(handle)].builtIn if bytes(handle) in current else False
            out.append(TS.Structs.PresetStruct(presetHandle=bytes(handle), presetScenario=preset.presetScenario,
                                               name=preset.name, heatingSetpoint=preset.heatingSetpoint,
                                               coolingSetpoint=preset.coolingSetpoint, builtIn=built_in))
        return out

    def stop_motion(self) -> None:
        self._hold_until = None   # a timed hold does not outlive a power cut
        self._values["SetpointHoldExpiryTimestamp"] = NullValue

    def SetActivePresetRequest(self, request: Any) -> None:
        handle = request.presetHandle
        if handle is NullValue or handle is None:
            self.set("ActivePresetHandle", NullValue)
            return
        preset = next((p for p in self.get("Presets") if p.presetHandle == handle), None)
        if preset is None:
            raise MatterError(Status.NOT_FOUND, f"no preset with handle {bytes(handle).hex()}; presets: "
                              + ", ".join(f"{bytes(p.presetHandle).hex()} ({p.name})" for p in self.get("Presets")))
        self.set("ActivePresetHandle", bytes(handle))
        if self.get("TemperatureSetpointHold") == Hold.kSetpointHoldOn:
            return   # held: the preset is active but the setpoints stay
        old_heat, old_cool = self._values.get("OccupiedHeatingSetpoint"), self._values.get("OccupiedCoolingSetpoint")
        heat = cool = None
        if self.heating and preset.heatingSetpoint is not None:
            heat = min(max(preset.heatingSetpoint, self._limits("Heat")[0]), self._limits("Heat")[1])
        if self.cooling and preset.coolingSetpoint is not None:
            cool = min(max(preset.coolingSetpoint, self._limits("Cool")[0]), self._limits("Cool")[1])
        self._store_setpoints(heat=heat, cool=cool)
        if heat is not None and old_heat is not None:
            self._note_change("OccupiedHeatingSetpoint", self._values["OccupiedHeatingSetpoint"] - old_heat)
        if cool is not None and old_cool is not None:
            self._note_change("OccupiedCoolingSetpoint", self._values["OccupiedCoolingSetpoint"] - old_cool)

    # ---- setpoints ---------------------------------------------------------------
    def _store_setpoints(self, heat: int | None = None, cool: int | None = None) -> None:
        """Store new setpoints; in AutoMode the one that moved pushes the other to keep the
        deadband, and if that one is at its limit the mover is held back instead."""
        if self.auto:
            db = self.deadband
            h = self.get("OccupiedHeatingSetpoint") if heat is None else heat
            c = self.get("OccupiedCoolingSetpoint") if cool is None else cool
            if c - h < db:
                if heat is not None:
                    c = min(h + db, self._limits("Cool")[1])
                    h = c - db
                else:
                    h = max(c - db, self._limits("Heat")[0])
                    c = h + db
            heat, cool = h, c
        if heat is not None:
            self.set("OccupiedHeatingSetpoint", heat)
        if cool is not None:
            self.set("OccupiedCoolingSetpoint", cool)

    def SetpointRaiseLower(self, request: Any) -> None:
        check_range("SetpointRaiseLower.amount", request.amount, -128, 127)
        mode = request.mode
        if mode == RaiseLower.kHeat and not self.heating:
            raise MatterError(Status.INVALID_COMMAND, "SetpointRaiseLower mode Heat (0) needs a heating "
                              "thermostat; this one only cools: use mode Cool (1) or Both (2)")
        if mode == RaiseLower.kCool and not self.cooling:
            raise MatterError(Status.INVALID_COMMAND, "SetpointRaiseLower mode Cool (1) needs a cooling "
                              "thermostat; this one only heats: use mode Heat (0) or Both (2)")
        delta = request.amount * 10  # 0.1 °C steps to 0.01 °C units
        heat = cool = None
        if self.heating and mode in (RaiseLower.kHeat, RaiseLower.kBoth):
            low, high = self._limits("Heat")
            heat = min(max(self.get("OccupiedHeatingSetpoint") + delta, low), high)
        if self.cooling and mode in (RaiseLower.kCool, RaiseLower.kBoth):
            low, high = self._limits("Cool")
            cool = min(max(self.get("OccupiedCoolingSetpoint") + delta, low), high)
        # Both moving keeps the deadband: the limits themselves sit a deadband apart.
        self._store_setpoints(heat=heat, cool=cool)
        self._note_change("SetpointRaiseLower", delta)


class ThermostatUserInterfaceConfigurationServer(ClusterServer):
    """How the thermostat's own panel shows and accepts things (Matter 1.3, 4.5, revision 2).

    The values are settings a client writes and the panel honours; the twin has no panel, so
    they only hold what was written (enums checked: an unknown value is CONSTRAINT_ERROR)."""
    cluster = Clusters.ThermostatUserInterfaceConfiguration
    revision = 2
    attributes = ("TemperatureDisplayMode", "KeypadLockout", "ScheduleProgrammingVisibility")
    writable = frozenset(attributes)
    notes = ("TemperatureDisplayMode 0 Celsius / 1 Fahrenheit; KeypadLockout 0 (none) .. 5 (most locked);"
             " ScheduleProgrammingVisibility 0 permitted / 1 denied.",)

    def defaults(self) -> dict[str, Any]:
        E = self.cluster.Enums
        return {"TemperatureDisplayMode": E.TemperatureDisplayModeEnum.kCelsius,
                "KeypadLockout": E.KeypadLockoutEnum.kNoLockout,
                "ScheduleProgrammingVisibility": E.ScheduleProgrammingVisibilityEnum.kScheduleProgrammingPermitted}
