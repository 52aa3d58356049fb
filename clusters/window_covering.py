"""WindowCovering cluster server (Matter 1.3, revision 5). Features: Lift, PositionAwareLift.

Positions are percent100ths: 0 is fully open, 10000 fully closed. The motor covers the
full travel in FULL_TRAVEL_TICKS (20 s) at constant speed. A movement is one anchor
(start tick, start position, target, end tick): the current position is derived in
`get()`; arrival is the discrete event (OperationalStatus back to stopped,
NumberOfActuationsLift + 1).
"""
from __future__ import annotations

from typing import Any

from chip.clusters.Types import NullValue

from clusters.base import Clusters, ClusterServer, MatterError, Status, check_range

WC = Clusters.WindowCovering
Feature = WC.Bitmaps.Feature
Config = WC.Bitmaps.ConfigStatus
ModeBits = WC.Bitmaps.Mode

FULL_TRAVEL_TICKS = 200  # 20 s from fully open to fully closed
OPEN, CLOSED = 0, 10000
STOPPED, OPENING, CLOSING = 0, 1, 2  # MovementStatus values in OperationalStatus' 2-bit fields
ALL_MODE_BITS = int(ModeBits.kMotorDirectionReversed | ModeBits.kCalibrationMode
                    | ModeBits.kMaintenanceMode | ModeBits.kLedFeedback)


def _operational_status(movement: int) -> int:
    """Global (bits 0-1) and Lift (bits 2-3) fields; Tilt is unsupported so stays 0."""
    return movement | (movement << 2)


class WindowCoveringServer(ClusterServer):
    cluster = WC
    revision = 5
    attributes = ("Type", "ConfigStatus", "OperationalStatus", "EndProductType", "Mode",
                  "SafetyStatus", "CurrentPositionLiftPercent100ths",
                  "TargetPositionLiftPercent100ths", "NumberOfActuationsLift",
                  "CurrentPositionLiftPercentage")
    writable = frozenset({"Mode"})
    commands = ("UpOrOpen", "DownOrClose", "StopMotion", "GoToLiftPercentage")
    notes = ("Lift positions are in 1/100 %: 0 = fully open, 10000 = fully closed.",
             f"Full travel takes {FULL_TRAVEL_TICKS / 10:g} s at constant speed.",
             "Each movement that ends (arrival or StopMotion) adds one NumberOfActuationsLift.",
             "Mode MaintenanceMode or CalibrationMode makes movement commands answer BUSY.")

    def __init__(self, **initial: Any):
        super().__init__(feature_map=int(Feature.kLift | Feature.kPositionAwareLift), **initial)
        position = self._values["CurrentPositionLiftPercent100ths"]
        if position is not NullValue:
            check_range("WindowCovering.CurrentPositionLiftPercent100ths", position, OPEN, CLOSED)
            self._values["CurrentPositionLiftPercentage"] = position // 100
        self.validate_write("Mode", self._values["Mode"])
        # (start_tick, start_position, target, end_tick) while moving, else None.
        self._motion: list[int] | None = None

    def defaults(self) -> dict[str, Any]:
        return {"Type": WC.Enums.Type.kRollerShade,
                "ConfigStatus": int(Config.kOperational | Config.kOnlineReserved | Config.kLiftPositionAware),
                "OperationalStatus": 0, "EndProductType": WC.Enums.EndProductType.kRollerShade,
                "Mode": 0, "SafetyStatus": 0,
                # spec default is null (unknown); a twin starts calibrated and fully open
                "CurrentPositionLiftPercent100ths": OPEN, "TargetPositionLiftPercent100ths": OPEN,
                "NumberOfActuationsLift": 0, "CurrentPositionLiftPercentage": OPEN // 100}

    # ---- attributes --------------------------------------------------------------
    derived = frozenset({"CurrentPositionLiftPercent100ths", "CurrentPositionLiftPercentage"})

    def get(self, name: str) -> Any:
        m = self._motion
        if m is not None and name in ("CurrentPositionLiftPercent100ths", "CurrentPositionLiftPercentage"):
            start_tick, start, target, end_tick = m
            elapsed = min(max(self.now - start_tick, 0), end_tick - start_tick)
            step = abs(target - start) * elapsed // (end_tick - start_tick)
            position = start + step if target >= start else start - step
            return position if name.endswith("100ths") else position // 100
        return super().get(name)

    def validate_write(self, name: str, value: Any) -> None:
        if name == "Mode" and value & ~ALL_MODE_BITS:
            raise MatterError(Status.CONSTRAINT_ERROR,
                              f"WindowCovering.Mode={value} sets undefined bits; allowed: "
                              "MotorDirectionReversed=0x01, CalibrationMode=0x02, "
                              "MaintenanceMode=0x04, LedFeedback=0x08")

    def after_write(self, name: str, value: Any) -> None:
        if name == "Mode":
            config = self.get("ConfigStatus") & ~int(Config.kOperational | Config.kLiftMovementReversed)
            if value & ModeBits.kMotorDirectionReversed:
                config |= int(Config.kLiftMovementReversed)
            if not value & (ModeBits.kMaintenanceMode | ModeBits.kCalibrationMode):
                config |= int(Config.kOperational)
            else:
                self._halt()  # maintenance freezes all motion
            self.set("ConfigStatus", config)

    # ---- motion ------------------------------------------------------------------
    def _set_position(self, position: int) -> None:
        self.set("CurrentPositionLiftPercent100ths", position)
        self.set("CurrentPositionLiftPercentage", position // 100)

    def _go_to(self, target: int) -> None:
        if not self.get("ConfigStatus") & Config.kOperational:
            raise MatterError(Status.BUSY, "WindowCovering is in maintenance or calibration mode "
                              "(Mode bits 0x02/0x04); clear them to move it")
        current = self.get("CurrentPositionLiftPercent100ths")
        if current is NullValue:
            current = OPEN
        self._motion = None
        self._set_position(current)  # the anchor value; get() derives the rest
        self.set("TargetPositionLiftPercent100ths", target)
        if target == current:
            self.set("OperationalStatus", 0)
            return
        ticks = -(-abs(target - current) * FULL_TRAVEL_TICKS // (CLOSED - OPEN))
        self._motion = [self.now, current, target, self.now + ticks]
        self.set("OperationalStatus", _operational_status(CLOSING if target > current else OPENING))

    def _halt(self) -> None:
        if self._motion is None:
            return
        position = self.get("CurrentPositionLiftPercent100ths")
        self._motion = None
        self._set_position(position)
        self.set("TargetPositionLiftPercent100ths", position)
        self.set("OperationalStatus", 0)
        self.set("NumberOfActuationsLift", (self.get("NumberOfActuationsLift") + 1) & 0xFFFF)

    def next_event_tick(self) -> int | None:
        return self._motion[3] if self._motion else None

    def advance_to(self, tick: int) -> None:
        m = self._motion
        if m is None or tick < m[3]:
            return
        self._motion = None
        self._set_position(m[2])
        self.set("OperationalStatus", 0)
        self.set("NumberOfActuationsLift", (self.get("NumberOfActuationsLift") + 1) & 0xFFFF)

    def private_state(self) -> dict[str, Any]:
        return {"motion": list(self._motion) if self._motion else None}

    def load_private_state(self, state: dict[str, Any]) -> None:
        self._motion = state.get("motion")

    def stop_motion(self) -> None:
        # saved_state sampled the position; a cover that lost power stops there.
        self._motion = None
        position = self._values["CurrentPositionLiftPercent100ths"]
        self._values["TargetPositionLiftPercent100ths"] = position
        if position is not NullValue:
            self._values["CurrentPositionLiftPercentage"] = position // 100
        self._values["OperationalStatus"] = 0

    # ---- commands ----------------------------------------------------------------
    def UpOrOpen(self, request: Any = None) -> None:
        self._go_to(OPEN)

    def DownOrClose(self, request: Any = None) -> None:
        self._go_to(CLOSED)

    def StopMotion(self, request: Any = None) -> None:
        self._halt()

    def GoToLiftPercentage(self, request: Any) -> None:
        check_range("GoToLiftPercentage.liftPercent100thsValue", request.liftPercent100thsValue, OPEN, CLOSED)
        self._go_to(request.liftPercent100thsValue)
