"""WindowCovering cluster server (Matter 1.3, revision 5). Features: Lift, PositionAwareLift, and
optionally Tilt, PositionAwareTilt (a venetian blind: the slats turn while the blind moves).

Positions are percent100ths: 0 is fully open, 10000 fully closed. The motor covers the
full travel in FULL_TRAVEL_TICKS (20 s) at constant speed, the slats in TILT_TRAVEL_TICKS. A
movement is one anchor per axis (start tick, start position, target, end tick): the current
position is derived in `get()`; arrival is the discrete event (that axis' OperationalStatus
field back to stopped, NumberOfActuations + 1).
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
TILT_TRAVEL_TICKS = 30   # 3 s to turn the slats from open to closed
OPEN, CLOSED = 0, 10000
STOPPED, OPENING, CLOSING = 0, 1, 2  # MovementStatus values in OperationalStatus' 2-bit fields
ALL_MODE_BITS = int(ModeBits.kMotorDirectionReversed | ModeBits.kCalibrationMode
                    | ModeBits.kMaintenanceMode | ModeBits.kLedFeedback)
AXES = ("Lift", "Tilt")
TRAVEL = {"Lift": FULL_TRAVEL_TICKS, "Tilt": TILT_TRAVEL_TICKS}
STATUS_SHIFT = {"Lift": 2, "Tilt": 4}   # OperationalStatus: Global bits 0-1, Lift 2-3, Tilt 4-5


def _axis_attributes(axis: str) -> tuple[str, ...]:
    return (f"CurrentPosition{axis}Percent100ths", f"TargetPosition{axis}Percent100ths",
            f"NumberOfActuations{axis}", f"CurrentPosition{axis}Percentage")


class WindowCoveringServer(ClusterServer):
    cluster = WC
    revision = 5
    writable = frozenset({"Mode"})
    notes = ("Positions are in 1/100 %: 0 = fully open, 10000 = fully closed (lift and tilt).",
             f"Lift full travel takes {FULL_TRAVEL_TICKS / 10:g} s, tilt {TILT_TRAVEL_TICKS / 10:g} s, "
             "at constant speed; UpOrOpen/DownOrClose move both, StopMotion stops both.",
             "Each movement that ends (arrival or StopMotion) adds one NumberOfActuationsLift/Tilt.",
             "Mode MaintenanceMode or CalibrationMode makes movement commands answer BUSY.")

    def __init__(self, tilt: bool = False, lift_travel_s: float | None = None, tilt_travel_s: float | None = None,
                 **initial: Any):
        """Lift with position awareness; `tilt=True` adds Tilt and PositionAwareTilt (a venetian blind).
        `lift_travel_s` / `tilt_travel_s`: seconds a full travel takes (default 20 s / 3 s;
        `twin calibrate` measures them)."""
        self.axes = AXES if tilt else AXES[:1]
        self.travel = dict(TRAVEL)
        for axis, seconds in (("Lift", lift_travel_s), ("Tilt", tilt_travel_s)):
            if seconds is not None:
                if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not 0 < seconds <= 3600:
                    raise ValueError(f"{axis.lower()}_travel_s: expected seconds in (0, 3600], got {seconds!r}")
                self.travel[axis] = max(1, round(seconds * 10))
        self.attributes = (("Type", "ConfigStatus", "OperationalStatus", "EndProductType", "Mode",
                            "SafetyStatus") + sum((_axis_attributes(a) for a in self.axes), ()))
        self.commands = ("UpOrOpen", "DownOrClose", "StopMotion", "GoToLiftPercentage") \
            + (("GoToTiltPercentage",) if tilt else ())
        features = Feature.kLift | Feature.kPositionAwareLift
        if tilt:
            features |= Feature.kTilt | Feature.kPositionAwareTilt
        super().__init__(feature_map=int(features), **initial)
        for axis in self.axes:
            position = self._values[f"CurrentPosition{axis}Percent100ths"]
            if position is not NullValue:
                check_range(f"WindowCovering.CurrentPosition{axis}Percent100ths", position, OPEN, CLOSED)
                self._values[f"CurrentPosition{axis}Percentage"] = position // 100
        self.validate_write("Mode", self._values["Mode"])
        # per axis while moving: [start_tick, start_position, target, end_tick]
        self._motion: dict[str, list[int]] = {}

    def defaults(self) -> dict[str, Any]:
        tilt = "Tilt" in self.axes
        config = Config.kOperational | Config.kOnlineReserved | Config.kLiftPositionAware
        out = {"Type": WC.Enums.Type.kTiltBlindLiftAndTilt if tilt else WC.Enums.Type.kRollerShade,
               "ConfigStatus": int(config | (Config.kTiltPositionAware if tilt else 0)),
               "OperationalStatus": 0,
               "EndProductType": WC.Enums.EndProductType.kInteriorVenetianBlind if tilt
               else WC.Enums.EndProductType.kRollerShade,
               "Mode": 0, "SafetyStatus": 0}
        for axis in AXES:
            # spec default is null (unknown); a twin starts calibrated and fully open
            out.update({f"CurrentPosition{axis}Percent100ths": OPEN, f"TargetPosition{axis}Percent100ths": OPEN,
                        f"NumberOfActuations{axis}": 0, f"CurrentPosition{axis}Percentage": OPEN // 100})
        return out

    # ---- attributes --------------------------------------------------------------
    derived = frozenset({"CurrentPositionLiftPercent100ths", "CurrentPositionLiftPercentage",
                         "CurrentPositionTiltPercent100ths", "CurrentPositionTiltPercentage"})

    def get(self, name: str) -> Any:
        if name.startswith("CurrentPosition"):
            m = self._motion.get(name[len("CurrentPosition"):][:4])
            if m is not None:
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
    def _set_position(self, axis: str, position: int) -> None:
        self.set(f"CurrentPosition{axis}Percent100ths", position)
        self.set(f"CurrentPosition{axis}Percentage", position // 100)

    def _store_status(self) -> None:
        """OperationalStatus from the axes in motion; Global follows whichever moves (lift first)."""
        status, overall = 0, STOPPED
        for axis, (_, start, target, _) in sorted(self._motion.items()):
            movement = CLOSING if target > start else OPENING
            status |= movement << STATUS_SHIFT[axis]
            overall = overall or movement
        self.set("OperationalStatus", status | overall)

    def _go_to(self, targets: dict[str, int]) -> None:
        if not self.get("ConfigStatus") & Config.kOperational:
            raise MatterError(Status.BUSY, "WindowCovering is in maintenance or calibration mode "
                              "(Mode bits 0x02/0x04); clear them to move it")
        for axis, target in targets.items():
            current = self.get(f"CurrentPosition{axis}Percent100ths")
            if current is NullValue:
                current = OPEN
            self._motion.pop(axis, None)
            self._set_position(axis, current)  # the anchor value; get() derives the rest
            self.set(f"TargetPosition{axis}Percent100ths", target)
            if target != current:
                ticks = -(-abs(target - current) * self.travel[axis] // (CLOSED - OPEN))
                self._motion[axis] = [self.now, current, target, self.now + ticks]
        self._store_status()

    def _halt(self) -> None:
        for axis in list(self._motion):
            position = self.get(f"CurrentPosition{axis}Percent100ths")
            del self._motion[axis]
            self._set_position(axis, position)
            self.set(f"TargetPosition{axis}Percent100ths", position)
            self._count(axis)
        self._store_status()

    def _count(self, axis: str) -> None:
        name = f"NumberOfActuations{axis}"
        self.set(name, (self.get(name) + 1) & 0xFFFF)

    def next_event_tick(self) -> int | None:
        if not self._motion:
            return None
        return min(m[3] for m in self._motion.values())

    def advance_to(self, tick: int) -> None:
        for axis, m in sorted(self._motion.items(), key=lambda item: item[1][3]):
            if tick < m[3]:
                continue
            del self._motion[axis]
            self._set_position(axis, m[2])
            self._count(axis)
            self._store_status()

    def private_state(self) -> dict[str, Any]:
        return {"motion": {a: list(m) for a, m in self._motion.items()}}

    def load_private_state(self, state: dict[str, Any]) -> None:
        motion = state.get("motion") or {}
        # snapshots from before tilt kept the lift's motion as one list
        self._motion = {"Lift": motion} if isinstance(motion, list) else {a: list(m) for a, m in motion.items()}

    def stop_motion(self) -> None:
        # saved_state sampled the positions; a cover that lost power stops there.
        self._motion = {}
        for axis in self.axes:
            position = self._values[f"CurrentPosition{axis}Percent100ths"]
            self._values[f"TargetPosition{axis}Percent100ths"] = position
            if position is not NullValue:
                self._values[f"CurrentPosition{axis}Percentage"] = position // 100
        self._values["OperationalStatus"] = 0

    # ---- commands ----------------------------------------------------------------
    def UpOrOpen(self, request: Any = None) -> None:
        self._go_to({axis: OPEN for axis in self.axes})

    def DownOrClose(self, request: Any = None) -> None:
        self._go_to({axis: CLOSED for axis in self.axes})

    def StopMotion(self, request: Any = None) -> None:
        self._halt()

    def GoToLiftPercentage(self, request: Any) -> None:
        check_range("GoToLiftPercentage.liftPercent100thsValue", request.liftPercent100thsValue, OPEN, CLOSED)
        self._go_to({"Lift": request.liftPercent100thsValue})

    def GoToTiltPercentage(self, request: Any) -> None:
        check_range("GoToTiltPercentage.tiltPercent100thsValue", request.tiltPercent100thsValue, OPEN, CLOSED)
        self._go_to({"Tilt": request.tiltPercent100thsValue})
