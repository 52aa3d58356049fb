"""Sensor cluster servers: BooleanState (+Configuration), OccupancySensing, SmokeCoAlarm,
PressureMeasurement and FlowMeasurement.

They hold what the sensor currently detects; the home decides it (twin/sensors.py: a
contact sensor follows the door or covering it is mounted on, occupancy follows residents,
smoke follows the room's PM10, leak/freeze/rain follow scenario events and the weather).
Each change is a discrete `set` that emits the cluster's event, so stepping and
fast-forwarding see the same changes at the same ticks.
"""
from __future__ import annotations

from typing import Any

from clusters.base import TICKS_PER_SECOND, Clusters, ClusterServer, MatterError, Status, check_range
from clusters.measurement import MeasurementServer

BS = Clusters.BooleanState
BSC = Clusters.BooleanStateConfiguration
OCC = Clusters.OccupancySensing
SCO = Clusters.SmokeCoAlarm
AlarmState = SCO.Enums.AlarmStateEnum
Expressed = SCO.Enums.ExpressedStateEnum


class BooleanStateServer(ClusterServer):
    """StateValue: the sensor's one bit (contact: TRUE = closed; leak, freeze, rain: TRUE = detected)."""
    cluster = BS
    revision = 1
    attributes = ("StateValue",)
    #: Set by the home on a contact sensor mounted on a lock's door (twin/sensors.py).
    on_door = False

    def __init__(self, **initial: Any):
        super().__init__(**initial)
        #: A scenario's (or a hand's) detection holds StateValue until cleared, whatever the room
        #: reads (a freeze detector otherwise follows its room's temperature).
        self.held = False

    def defaults(self) -> dict[str, Any]:
        return {"StateValue": False}

    def private_state(self) -> dict[str, Any]:
        return {"held": self.held}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self.held = state.get("held", False)

    def set_state(self, value: bool) -> None:
        """The sensed state changed: StateValue and the StateChange event."""
        value = bool(value)
        if self._values["StateValue"] == value:
            return
        self.set("StateValue", value)
        self.emit_event(BS.Events.StateChange(stateValue=value))
        config = self.sibling(BSC)
        if isinstance(config, BooleanStateConfigurationServer):
            config.state_changed(value)


class BooleanStateConfigurationServer(ClusterServer):
    """Visual and audible alarms raised while the sibling BooleanState detects (a leak, a
    freeze, rain), each enabled or disabled by EnableDisableAlarm and silenced by SuppressAlarm;
    three sensitivity levels."""
    cluster = BSC
    revision = 1
    attributes = ("CurrentSensitivityLevel", "SupportedSensitivityLevels", "DefaultSensitivityLevel",
                  "AlarmsActive", "AlarmsSuppressed", "AlarmsEnabled", "AlarmsSupported", "SensorFault")
    writable = frozenset({"CurrentSensitivityLevel"})
    commands = ("SuppressAlarm", "EnableDisableAlarm")
    ALARMS = int(BSC.Bitmaps.AlarmModeBitmap.kVisual | BSC.Bitmaps.AlarmModeBitmap.kAudible)

    def __init__(self, **initial: Any):
        Feature = BSC.Bitmaps.Feature
        super().__init__(feature_map=int(Feature.kVisual | Feature.kAudible | Feature.kAlarmSuppress
                                         | Feature.kSensitivityLevel), **initial)

    def defaults(self) -> dict[str, Any]:
        return {"CurrentSensitivityLevel": 1, "SupportedSensitivityLevels": 3, "DefaultSensitivityLevel": 1,
                "AlarmsActive": 0, "AlarmsSuppressed": 0, "AlarmsEnabled": self.ALARMS,
                "AlarmsSupported": self.ALARMS, "SensorFault": 0}

    def validate_write(self, name: str, value: Any) -> None:
        if name == "CurrentSensitivityLevel":
            check_range("BooleanStateConfiguration.CurrentSensitivityLevel", value, 0,
                        self._values["SupportedSensitivityLevels"] - 1)

    def _alarms(self, active: int, suppressed: int) -> None:
        if (active, suppressed) == (self._values["AlarmsActive"], self._values["AlarmsSuppressed"]):
            return
        self.set("AlarmsActive", active)
        self.set("AlarmsSuppressed", suppressed)
        self.emit_event(BSC.Events.AlarmsStateChanged(alarmsActive=active, alarmsSuppressed=suppressed))

    def state_changed(self, detected: bool) -> None:
        """The sibling BooleanState changed: enabled alarms sound while it detects."""
        self._alarms(self._values["AlarmsEnabled"] if detected else 0, 0)

    def _bits(self, what: str, bits: int) -> int:
        if bits & ~self._values["AlarmsSupported"]:
            raise MatterError(Status.CONSTRAINT_ERROR, f"{what}={bits}: supported alarm bits are "
                              f"{self._values['AlarmsSupported']} (1 visual, 2 audible)")
        return int(bits)

    def EnableDisableAlarm(self, request: Any) -> None:
        enabled = self._bits("alarmsToEnableDisable", request.alarmsToEnableDisable)
        self.set("AlarmsEnabled", enabled)
        active = self._values["AlarmsActive"] & enabled          # a disabled alarm stops now
        self._alarms(active, self._values["AlarmsSuppressed"] & active)

    def SuppressAlarm(self, request: Any) -> None:
        bits = self._bits("alarmsToSuppress", request.alarmsToSuppress)
        if bits & ~self._values["AlarmsActive"]:
            raise MatterError(Status.INVALID_IN_STATE, f"alarmsToSuppress={bits}: only active alarms "
                              f"({self._values['AlarmsActive']}) can be suppressed")
        self._alarms(self._values["AlarmsActive"], self._values["AlarmsSuppressed"] | bits)


class OccupancySensingServer(ClusterServer):
    """A PIR occupancy sensor: occupied as soon as someone is in the room, unoccupied HoldTime
    seconds after the last person left (the spec's hold time)."""
    cluster = OCC
    revision = 5
    attributes = ("Occupancy", "OccupancySensorType", "OccupancySensorTypeBitmap", "HoldTime", "HoldTimeLimits")
    writable = frozenset({"HoldTime"})
    notes = ("Occupancy follows the residents in the room; it clears HoldTime seconds after the room empties.",)

    def __init__(self, **initial: Any):
        super().__init__(feature_map=int(OCC.Bitmaps.Feature.kPassiveInfrared), **initial)
        self._clear_at: int | None = None     # tick at which an emptied room reads unoccupied

    def defaults(self) -> dict[str, Any]:
        return {"Occupancy": 0, "OccupancySensorType": OCC.Enums.OccupancySensorTypeEnum.kPir,
                "OccupancySensorTypeBitmap": int(OCC.Bitmaps.OccupancySensorTypeBitmap.kPir), "HoldTime": 60,
                "HoldTimeLimits": OCC.Structs.HoldTimeLimitsStruct(holdTimeMin=1, holdTimeMax=3600,
                                                                  holdTimeDefault=60)}

    def validate_write(self, name: str, value: Any) -> None:
        if name == "HoldTime":
            limits = self._values["HoldTimeLimits"]
            check_range("OccupancySensing.HoldTime", value, limits.holdTimeMin, limits.holdTimeMax)

    def _occupancy(self, occupied: bool) -> None:
        value = int(OCC.Bitmaps.OccupancyBitmap.kOccupied) if occupied else 0
        if self._values["Occupancy"] != value:
            self.set("Occupancy", value)
            self.emit_event(OCC.Events.OccupancyChanged(occupancy=value))

    def set_present(self, present: bool) -> None:
        """Someone is (True) or no one is (False) in the sensor's view."""
        self.changing()
        if present:
            self._clear_at = None
            self._occupancy(True)
        elif self._values["Occupancy"] and self._clear_at is None:
            self._clear_at = self.now + self._values["HoldTime"] * TICKS_PER_SECOND

    def next_event_tick(self) -> int | None:
        return self._clear_at

    def advance_to(self, tick: int) -> None:
        if self._clear_at is not None and tick >= self._clear_at:
            self._clear_at = None
            self._occupancy(False)

    def private_state(self) -> dict[str, Any]:
        return {"clear_at": self._clear_at}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._clear_at = state.get("clear_at")

    def stop_motion(self) -> None:
        self._clear_at = None


#: ExpressedState priority (spec 2.11.5.1: the most severe condition is expressed).
_PRIORITY = (("SmokeState", Expressed.kSmokeAlarm), ("COState", Expressed.kCOAlarm),
             ("HardwareFaultAlert", Expressed.kHardwareFault), ("BatteryAlert", Expressed.kBatteryAlert),
             ("EndOfServiceAlert", Expressed.kEndOfService))
SELF_TEST_TICKS = 5 * TICKS_PER_SECOND


class SmokeCoAlarmServer(ClusterServer):
    """A smoke (and optionally CO) alarm. The home sets the sensed levels (`sense_smoke`,
    `sense_co`); ExpressedState shows the most severe condition; SelfTestRequest runs a 5 s test."""
    cluster = SCO
    revision = 1
    writable = frozenset({"SmokeSensitivityLevel"})
    commands = ("SelfTestRequest",)
    notes = ("SmokeState follows the room's PM10 (Warning above the warning level, Critical above the "
             "critical level; levels scale with SmokeSensitivityLevel).",
             "SelfTestRequest: TestInProgress for 5 s, then SelfTestComplete; BUSY while an alarm sounds.")

    def __init__(self, co: bool = False, expiry: bool = True, **initial: Any):
        """`expiry`: whether the optional ExpiryDate is there (products without one exist)."""
        Feature = SCO.Bitmaps.Feature
        self.attributes = ("ExpressedState", "SmokeState", *(("COState",) if co else ()), "BatteryAlert",
                           "DeviceMuted", "TestInProgress", "HardwareFaultAlert", "EndOfServiceAlert",
                           "InterconnectSmokeAlarm", *(("InterconnectCOAlarm",) if co else ()),
                           "ContaminationState", "SmokeSensitivityLevel", *(("ExpiryDate",) if expiry else ()))
        super().__init__(feature_map=int(Feature.kSmokeAlarm | (Feature.kCoAlarm if co else 0)), **initial)
        self._test_until: int | None = None
        #: A scenario's smoke incident holds SmokeState until cleared, whatever the room's PM10.
        self.incident = False

    def defaults(self) -> dict[str, Any]:
        E = SCO.Enums
        return {"ExpressedState": Expressed.kNormal, "SmokeState": AlarmState.kNormal, "COState": AlarmState.kNormal,
                "BatteryAlert": AlarmState.kNormal, "DeviceMuted": E.MuteStateEnum.kNotMuted, "TestInProgress": False,
                "HardwareFaultAlert": False, "EndOfServiceAlert": E.EndOfServiceEnum.kNormal,
                "InterconnectSmokeAlarm": AlarmState.kNormal, "InterconnectCOAlarm": AlarmState.kNormal,
                "ContaminationState": E.ContaminationStateEnum.kNormal,
                "SmokeSensitivityLevel": E.SensitivityEnum.kStandard,
                "ExpiryDate": 1_078_099_200}   # 2034-03-01 in epoch-s (since 2000-01-01): a ten-year sensor

    def _express(self) -> None:
        if self._values["TestInProgress"]:
            state = Expressed.kTesting
        else:
            state = next((e for name, e in _PRIORITY if name in self._values and self._values[name]),
                         Expressed.kNormal)
        if self._values["ExpressedState"] != state:
            self.set("ExpressedState", state)
            if state == Expressed.kNormal:
                self.emit_event(SCO.Events.AllClear())

    def _level(self, name: str, level: Any, event: Any) -> None:
        self.changing()
        level = AlarmState(int(level))
        if self._values[name] == level:
            return
        self.set(name, level)
        if level != AlarmState.kNormal:
            self.emit_event(event(alarmSeverityLevel=level))
        self._express()

    def sense_smoke(self, level: Any) -> None:
        self._level("SmokeState", level, SCO.Events.SmokeAlarm)

    def sense_co(self, level: Any) -> None:
        if "COState" not in self._values:
            raise ValueError("this alarm has no CO sensor")
        self._level("COState", level, SCO.Events.COAlarm)

    def battery(self, level: Any) -> None:
        """The sibling PowerSource's charge level (Ok/Warning/Critical) as BatteryAlert."""
        self._level("BatteryAlert", level, SCO.Events.LowBattery)

    def set_hardware_fault(self, fault: bool) -> None:
        self.changing()
        if self._values["HardwareFaultAlert"] != bool(fault):
            self.set("HardwareFaultAlert", bool(fault))
            if fault:
                self.emit_event(SCO.Events.HardwareFault())
            self._express()

    def SelfTestRequest(self, request: Any) -> None:
        if self._values["SmokeState"] or self._values.get("COState"):
            raise MatterError(Status.BUSY, "SmokeCoAlarm: an alarm is sounding; self-test refused")
        if self._test_until is None:
            self._test_until = self.now + SELF_TEST_TICKS
            self.set("TestInProgress", True)
            self._express()

    def next_event_tick(self) -> int | None:
        return self._test_until

    def advance_to(self, tick: int) -> None:
        if self._test_until is not None and tick >= self._test_until:
            self._test_until = None
            self.set("TestInProgress", False)
            self.emit_event(SCO.Events.SelfTestComplete())
            self._express()

    def private_state(self) -> dict[str, Any]:
        return {"test_until": self._test_until, "incident": self.incident}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._test_until = state.get("test_until")
        self.incident = state.get("incident", False)

    def stop_motion(self) -> None:
        self._test_until = None
        self._values["TestInProgress"] = False


class PressureMeasurementServer(MeasurementServer):
    """MeasuredValue in 0.1 kPa (int16): the weather's barometric pressure when the home feeds it."""
    cluster = Clusters.PressureMeasurement
    revision = 3
    value_range = (-32767, 32767)

    def to_matter(self, natural: float) -> int:
        return round(natural * 10)     # natural unit: kPa


class FlowMeasurementServer(MeasurementServer):
    """MeasuredValue in 0.1 m³/h (uint16): water flowing through the meter (scenario events)."""
    cluster = Clusters.FlowMeasurement
    revision = 3
    value_range = (0, 65533)

    def to_matter(self, natural: float) -> int:
        return round(natural * 10)     # natural unit: m³/h
